"""Command line: `python -m dllm_viz generate ...` decodes a prompt; `export-policy` writes an SGLang policy.

Flags mirror DecodeConfig field by field (generated from the dataclass, so they cannot drift);
a flag given overrides the preset.
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
import typing
from typing import Any, Callable, Sequence

from dllm_viz.config import PRESETS, DecodeConfig


def _field_parser(name: str, hint: str) -> Callable[[str], Any]:
    if name == "temperature_stages":
        return lambda s: tuple(float(x) for x in s.split(","))
    if "int" in hint:
        return int
    if "float" in hint:
        return float
    return str


def add_config_flags(parser: argparse.ArgumentParser) -> None:
    """One `--field` flag per DecodeConfig field (default: not given, the preset's value stands)."""
    hints = typing.get_type_hints(DecodeConfig)
    for f in dataclasses.fields(DecodeConfig):
        if not f.init or f.name == "gen_length":
            continue
        hint = str(hints[f.name])
        extra = " (three comma-separated values: early,middle,late)" if f.name == "temperature_stages" else ""
        parser.add_argument(f"--{f.name.replace('_', '-')}", dest=f.name, type=_field_parser(f.name, hint),
                            default=None, help=f"DecodeConfig.{f.name}{extra}")


def config_from_args(args: argparse.Namespace) -> DecodeConfig:
    overrides = {f: getattr(args, f) for f in DecodeConfig.field_names() if f != "gen_length" and getattr(args, f, None) is not None}
    return DecodeConfig.preset(args.preset, args.gen_length, **overrides)


def _generate(args: argparse.Namespace) -> int:
    from dllm_viz import decode
    from dllm_viz.models import load_model

    config = config_from_args(args)  # validate before the (slower) model load
    model = load_model(args.model, device=args.device, dtype=args.dtype, trust_remote_code=args.trust_remote_code,
                       chat=args.chat)
    (trace,) = decode(model, [args.prompt], config, progress=not args.quiet and config.gen_length >= 64)
    print(trace.text if trace.text is not None else " ".join(map(str, trace.token_ids)))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            fh.write(trace.to_json())
    if not args.quiet:
        facts = ", ".join(f"{k}={v}" for k, v in trace.metrics.items())
        print(f"[{trace.model}] {facts}", file=sys.stderr)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m dllm_viz", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    gen = sub.add_parser("generate", help="decode one prompt and print the text")
    gen.add_argument("--prompt", required=True, help="prompt text")
    gen.add_argument("--model", default=None, help="local checkpoint directory (default: the embedded model)")
    gen.add_argument("--device", default=None, help="cpu | cuda | cuda:N (default: CUDA when available)")
    gen.add_argument("--dtype", default=None, help="fp32 | bf16 | fp16 (default: bf16 on CUDA for checkpoints)")
    gen.add_argument("--trust-remote-code", action="store_true", help="run modeling code shipped in the checkpoint")
    gen.add_argument("--chat", action="store_true", help="wrap the prompt in the checkpoint's chat template")
    gen.add_argument("--preset", default="balanced", choices=list(PRESETS), help="starting point from the article's table")
    gen.add_argument("--gen-length", dest="gen_length", type=int, default=64, help="DecodeConfig.gen_length")
    gen.add_argument("--json", default=None, help="write the trace JSON to this file")
    gen.add_argument("--quiet", action="store_true", help="no progress bar, no metrics line")
    add_config_flags(gen)
    gen.set_defaults(func=_generate)
    from dllm_viz.policy import add_cli as add_export_policy

    add_export_policy(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
