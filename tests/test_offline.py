"""Nothing phones home: `python app.py` and `load_model()` open no connection beyond loopback.

Each check runs in a child process under tests/netguard.py's audit hook, which logs every
`socket.getaddrinfo` / `socket.connect` aimed at a non-loopback host, and is proven live by a
control connection. `python app.py` is the server the tests share (tests/conftest.py,
`served_app`), started under that hook.
"""
from __future__ import annotations

import json
import subprocess
import sys

from dllm_viz.core.trace import Trace
from tests.netguard import guarded_env, outside_connections


def test_load_model_and_a_decode_open_no_connection(tmp_path, imports_the_installed_package):
    env, log = guarded_env(tmp_path)
    code = ("from dllm_viz import DecodeConfig, decode, load_model\n"
            "model = load_model()\n"
            "trace = decode(model, ['It is a truth'], DecodeConfig(gen_length=8))[0]\n"
            "assert len(trace.token_ids) == 8 and trace.text\n")
    done = subprocess.run([sys.executable, str(tmp_path / "guard.py"), "-c", code], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert outside_connections(log) == []


def test_app_py_start_and_one_decode_open_no_connection(served_app):
    text, trace_json = served_app.client().predict("It is a truth", json.dumps({"gen_length": 16}),
                                                   api_name="/generate")
    assert Trace.from_json(trace_json).text == text
    assert outside_connections(served_app.net_log) == []
