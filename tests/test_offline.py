"""Nothing phones home: `python app.py` and `load_model()` open no connection beyond loopback.

Each check runs in a child process under an audit hook (`sys.addaudithook`) that writes every
`socket.getaddrinfo` / `socket.connect` aimed at a non-loopback host to a log file. The hook is
proven live by a control: with GUARD_CONTROL=1 the child first makes one non-blocking connect to
192.0.2.1 (TEST-NET-1, never routed), which must be the only line in the log.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


from dllm_viz.core.trace import Trace
from tests.ui_model import free_port, wait_for_client

ROOT = Path(__file__).resolve().parents[1]
CONTROL = "connect ('192.0.2.1', 9)"

GUARD = r'''
import ipaddress, os, runpy, socket, sys

log = open(os.environ["NET_LOG"], "a", buffering=1)

def local(host):
    if host is None:
        return True
    host = host.decode() if isinstance(host, bytes) else str(host)
    if host in ("", "localhost", "0.0.0.0", "::"):
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False  # a host name other than localhost

def hook(event, args):
    if event == "socket.getaddrinfo" and not local(args[0]):
        log.write(f"getaddrinfo {args[0]!r}\n")
    elif event == "socket.connect" and isinstance(args[1], tuple) and not local(args[1][0]):
        log.write(f"connect {args[1]!r}\n")

sys.addaudithook(hook)
if os.environ.get("GUARD_CONTROL") == "1":
    with socket.socket() as s:
        s.setblocking(False)
        s.connect_ex(("192.0.2.1", 9))
target = sys.argv[1]
sys.argv = sys.argv[1:]
if target == "-c":
    exec(compile(sys.argv[1], "<guarded>", "exec"), {"__name__": "__main__"})
else:
    sys.path.insert(0, os.path.dirname(os.path.abspath(target)))
    runpy.run_path(target, run_name="__main__")
'''


def guarded_env(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """The environment of a child as a user starts it: none of the offline switches preset."""
    log = tmp_path / "net.log"
    env = {k: v for k, v in os.environ.items()
           if k not in ("GRADIO_ANALYTICS_ENABLED", "HF_HUB_OFFLINE", "HF_HUB_DISABLE_TELEMETRY", "TRANSFORMERS_OFFLINE",
                        "DLLM_VIZ_MODEL")}
    env.update(NET_LOG=str(log), GUARD_CONTROL="1", PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    (tmp_path / "guard.py").write_text(GUARD)
    return env, log


def outside_connections(log: Path) -> list[str]:
    lines = log.read_text().splitlines() if log.exists() else []
    assert CONTROL in lines, f"the audit hook did not record its control connection: {lines}"
    return [line for line in lines if line != CONTROL]


def test_load_model_and_a_decode_open_no_connection(tmp_path):
    env, log = guarded_env(tmp_path)
    code = ("from dllm_viz import DecodeConfig, decode, load_model\n"
            "model = load_model()\n"
            "trace = decode(model, ['It is a truth'], DecodeConfig(gen_length=8))[0]\n"
            "assert len(trace.token_ids) == 8 and trace.text\n")
    done = subprocess.run([sys.executable, str(tmp_path / "guard.py"), "-c", code], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert outside_connections(log) == []


def test_app_py_start_and_one_decode_open_no_connection(tmp_path):
    env, log = guarded_env(tmp_path)
    port = free_port()
    env["GRADIO_SERVER_PORT"] = str(port)
    proc = subprocess.Popen([sys.executable, str(tmp_path / "guard.py"), "app.py"], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        client = wait_for_client(proc, f"http://127.0.0.1:{port}/")
        text, trace_json = client.predict("It is a truth", json.dumps({"gen_length": 16}), api_name="/generate")
        assert Trace.from_json(trace_json).text == text
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert outside_connections(log) == []
