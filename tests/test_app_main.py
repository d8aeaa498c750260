"""app/main.py: `dllm-viz serve` and `python app.py` read their flags first: --help prints and exits, a flag
becomes its environment variable, and the package's command line has `serve`."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from dllm_viz import cli
from dllm_viz.app import main

ROOT = Path(__file__).resolve().parents[1]


def test_help_prints_every_flag_and_exits_without_serving(capsys):
    with pytest.raises(SystemExit) as done:
        main.main(["--help"])
    assert done.value.code == 0
    text = capsys.readouterr().out
    assert text.startswith("usage: dllm-viz serve")
    for flag, env, _, _ in main.SERVE_FLAGS:
        assert flag in text and env in text, flag


def test_the_flags_given_set_their_variables_and_no_others():
    args = main.build_parser().parse_args(["--port", "7999", "--model", "org/name", "--chat"])
    environ = {"DLLM_VIZ_REVISION": "v1"}
    main.environment_of(args, environ)
    assert environ == {"GRADIO_SERVER_PORT": "7999", "DLLM_VIZ_MODEL": "org/name", "DLLM_VIZ_CHAT": "1",
                       "DLLM_VIZ_REVISION": "v1"}
    with pytest.raises(SystemExit):
        main.build_parser().parse_args(["--port", "http"])  # argparse names the flag and exits 2


def test_the_allocator_is_asked_for_once():
    environ: dict[str, str] = {}
    assert main.system_allocator(environ) and environ == {"PYTHONMALLOC": "malloc", "MALLOC_ARENA_MAX": "2"}
    assert not main.system_allocator(environ)  # the restarted process does not restart again
    assert not main.system_allocator({"PYTHONMALLOC": "pymalloc"})  # the user's choice stands


def test_the_package_command_line_serves():
    args = cli.build_parser().parse_args(["serve", "--host", "0.0.0.0"])
    assert args.func is main.run and args.host == "0.0.0.0" and args.port is None


def test_app_py_help_is_help_not_a_server():
    """The root app.py (what Spaces runs) answers --help with the flags and exits, importing no Gradio."""
    done = subprocess.run([sys.executable, "-X", "importtime", "app.py", "--help"], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.startswith("usage: python app.py") and "--model" in done.stdout
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if "|" in line}
    assert "dllm_viz.app.main" in imported and "gradio" not in imported and "dllm_viz.app.serve" not in imported
