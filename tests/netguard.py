"""A network audit for child processes: every non-loopback `getaddrinfo` / `connect` is written to a log.

`guarded_env` prepares a child's environment as a user starts it (none of the offline switches
preset) and writes `guard.py`, which installs an audit hook (`sys.addaudithook`) and then runs a
script or `-c` code. The hook is proven live by a control: with GUARD_CONTROL=1 the child first
makes one non-blocking connect to 192.0.2.1 (TEST-NET-1, never routed), which must be in the log.
"""
from __future__ import annotations

import os
from pathlib import Path

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
    """The environment of a child as a user starts it (none of the offline switches preset), and
    the log its audit hook writes; run the child as ``python tmp_path/guard.py SCRIPT | -c CODE``."""
    log = tmp_path / "net.log"
    env = {k: v for k, v in os.environ.items()
           if k not in ("GRADIO_ANALYTICS_ENABLED", "HF_HUB_OFFLINE", "HF_HUB_DISABLE_TELEMETRY",
                        "TRANSFORMERS_OFFLINE", "DLLM_VIZ_MODEL")}
    env.update(NET_LOG=str(log), GUARD_CONTROL="1", PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    (tmp_path / "guard.py").write_text(GUARD)
    return env, log


def outside_connections(log: Path) -> list[str]:
    """The logged non-loopback calls, once the control connection shows the hook was live."""
    lines = log.read_text().splitlines() if log.exists() else []
    assert CONTROL in lines, f"the audit hook did not record its control connection: {lines}"
    return [line for line in lines if line != CONTROL]
