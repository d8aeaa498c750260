"""`dllm-viz serve` (and the root `app.py`, which Hugging Face Spaces runs): serve the playground.

The flags come first, so `--help` prints and exits before anything heavy is imported; then the
process restarts itself under the system allocator (`system_allocator`); then `app.serve` loads the
model and serves until interrupted. Every flag stands for an environment variable of the same
meaning (`SERVE_FLAGS`), which is what a Space sets; a flag given wins over its variable. The
server's bounds (connections, sessions, memory) are read from their own variables by
`guards.ServerLimits.from_env`. Only the standard library is imported here.
"""
from __future__ import annotations

import argparse
import os
import sys
from collections.abc import MutableMapping, Sequence

DESCRIPTION = "Serve the dllm-viz playground (Gradio) on the embedded model or a checkpoint."
# (flag, environment variable, what a flag without a value sets it to (None: the flag takes a value), help)
SERVE_FLAGS: tuple[tuple[str, str, str | None, str], ...] = (
    ("--host", "GRADIO_SERVER_NAME", None, "address to serve on (default 127.0.0.1)"),
    ("--port", "GRADIO_SERVER_PORT", None, "port to serve on (default 7860)"),
    ("--model", "DLLM_VIZ_MODEL", None,
     "local checkpoint directory or Hugging Face Hub id org/name (default: the embedded model); only a Hub id "
     "named here is fetched, into the Hugging Face cache"),
    ("--revision", "DLLM_VIZ_REVISION", None, "with a Hub id: branch, tag or commit (default: main)"),
    ("--trust-remote-code", "DLLM_VIZ_TRUST_REMOTE_CODE", "1",
     "run the modeling code a checkpoint ships (LLaDA, Dream)"),
    ("--chat", "DLLM_VIZ_CHAT", "1", "wrap each prompt in the checkpoint's chat template (instruction-tuned models)"),
    ("--threads", "DLLM_VIZ_THREADS", None,
     "torch threads for the decodes (default 1: a core stays free for the server)"),
)
INTEGER_FLAGS = {"--port": int, "--threads": int}
EPILOG = ("Each flag sets the environment variable named in its help; the server's bounds come from "
          "DLLM_VIZ_MAX_CONNECTIONS, DLLM_VIZ_HEADER_TIMEOUT, DLLM_VIZ_KEEP_ALIVE, DLLM_VIZ_MAX_SESSIONS, "
          "DLLM_VIZ_SESSION_IDLE and DLLM_VIZ_RELEASE_EVERY (dllm_viz/app/guards.py).")


def add_serve_flags(parser: argparse.ArgumentParser) -> None:
    """The flags of `SERVE_FLAGS` on `parser`, none given by default (the environment then stands)."""
    for flag, env, switch, text in SERVE_FLAGS:
        if switch is None:
            parser.add_argument(flag, type=INTEGER_FLAGS.get(flag, str), default=None, help=f"{text} [{env}]")
        else:
            parser.add_argument(flag, action="store_const", const=switch, default=None, help=f"{text} [{env}={switch}]")
    parser.set_defaults(func=run)


def build_parser(prog: str = "dllm-viz serve") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description=DESCRIPTION, epilog=EPILOG)
    add_serve_flags(parser)
    return parser


def add_serve_command(subparsers: argparse._SubParsersAction) -> None:
    """Register `serve` on the package's command line (`dllm_viz.cli`)."""
    add_serve_flags(subparsers.add_parser("serve", help="serve the playground", description=DESCRIPTION, epilog=EPILOG))


def environment_of(args: argparse.Namespace, environ: MutableMapping[str, str]) -> None:
    """Write the flags given in `args` into `environ`, under their variables' names."""
    for flag, env, _, _ in SERVE_FLAGS:
        value = getattr(args, flag.lstrip("-").replace("-", "_"))
        if value is not None:
            environ[env] = str(value)


def system_allocator(environ: MutableMapping[str, str] = os.environ) -> bool:
    """Ask for the system allocator unless the environment names one; True if it was asked for.

    CPython's own allocator keeps a 1 MiB arena while any object in it lives, so the memory of a
    dropped session's trace (10^5 small objects) mostly stays with the process; glibc's malloc
    with `malloc_trim` hands it back (`dllm_viz.app.guards`). Read at interpreter start, hence the
    re-execution in `run`; two arenas instead of eight per core for the worker threads.
    """
    if "PYTHONMALLOC" in environ:
        return False
    environ["PYTHONMALLOC"] = "malloc"
    environ.setdefault("MALLOC_ARENA_MAX", "2")
    return True


def run(args: argparse.Namespace) -> int:
    """Serve with the flags of `args` until interrupted."""
    environment_of(args, os.environ)
    if system_allocator(os.environ):
        os.execv(sys.executable, sys.orig_argv)  # the same command, now under the system allocator
    from dllm_viz.app.serve import serve

    serve()
    return 0


def main(argv: Sequence[str] | None = None, prog: str = "dllm-viz serve") -> int:
    args = build_parser(prog).parse_args(argv)
    try:
        return run(args)
    except ValueError as err:  # a bad flag value (a port that is not a number, a model that does not exist)
        print(f"error: {err}", file=sys.stderr)
        return 2
