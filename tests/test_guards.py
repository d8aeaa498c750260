"""guards.py and Gradio's own bounds: connections, sessions, memory and the log, on a real Gradio server.

The tiny demo is served in this process; connections are real sockets, sessions are opened over raw
HTTP (tests/raw_http.py) as an attacker opens them: no browser, no heartbeat. Sessions are bounded by
Gradio itself (`gr.State(time_to_live)`, `state_session_capacity`); the connection guard is checked
against the uvicorn range pyproject.toml allows.
"""
from __future__ import annotations

import gc
import logging
import re
import resource
import socket
import time
import weakref
from importlib.metadata import version
from pathlib import Path

import httpx
import pytest

from dllm_viz import DecodeConfig, Trace, decode
from dllm_viz.app import guards
from dllm_viz.app.guards import MemoryRelease, RateLimit, ServerLimits
from dllm_viz.app.handlers.traces import Shown
from tests.raw_http import RawSession, event_index
from tests.ui_model import launch_tiny_demo, make_text_model

TIMEOUT = 60  # seconds: a bound against hangs, never a timing assertion


def test_limits_come_from_the_environment_and_name_a_bad_value():
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    assert ServerLimits.from_env({}).max_connections == min(ServerLimits().max_connections, soft // 2)
    limits = ServerLimits.from_env({"DLLM_VIZ_MAX_SESSIONS": "8", "DLLM_VIZ_HEADER_TIMEOUT": "2.5"})
    assert (limits.max_sessions, limits.header_timeout) == (8, 2.5)
    with pytest.raises(ValueError, match="DLLM_VIZ_MAX_CONNECTIONS='many' is invalid"):
        ServerLimits.from_env({"DLLM_VIZ_MAX_CONNECTIONS": "many"})
    with pytest.raises(ValueError, match="DLLM_VIZ_SESSION_IDLE=0.0 is invalid"):
        ServerLimits.from_env({"DLLM_VIZ_SESSION_IDLE": "0"})
    with pytest.raises(ValueError, match="DLLM_VIZ_MAX_SESSIONS=2.5 is invalid"):
        ServerLimits(max_sessions=2.5)


def test_the_connection_log_carries_one_line_a_second():
    now = [100.0]
    limit = RateLimit(every=1.0, clock=lambda: now[0])
    logger = logging.getLogger("tests.guards.ratelimit")
    logger.propagate = False
    seen: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = seen.append
    logger.addHandler(handler)
    logger.addFilter(limit)
    try:
        err = OSError(24, "Too many open files")
        for i in range(1000):  # a thousand failed accepts within half a second, worded as asyncio does (two lines)
            now[0] = 100.0 + i / 2000
            logger.error("socket.accept() out of system resource\nsocket: %s", "<fd=7>", exc_info=(OSError, err, None))
        logger.warning("an unrelated line")
        now[0] = 101.2
        logger.error("socket.accept() out of system resource", exc_info=(OSError, err, None))
        logger.warning("Invalid HTTP request received.")  # within the second after: held back
    finally:
        logger.removeHandler(handler)
    lines = [r.getMessage() for r in seen]
    assert lines == ["socket.accept() out of system resource socket: <fd=7> ([Errno 24] Too many open files)",
                     "an unrelated line",
                     "socket.accept() out of system resource ([Errno 24] Too many open files) "
                     "[and 999 more like it, held back]"]
    assert all(r.exc_info is None for r in seen)  # one line each: no traceback


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    demo, url = launch_tiny_demo(str(tmp_path_factory.mktemp("exports")))
    try:
        yield demo, url
    finally:
        demo.close()


@pytest.fixture(scope="module")
def trace_file(tmp_path_factory):
    trace = decode(make_text_model(), ["the cat "], DecodeConfig.preset("balanced", 32, seed=4))[0]
    path = tmp_path_factory.mktemp("traces") / "trace.json"
    path.write_text(trace.to_json(), encoding="utf-8")
    return path


def held_traces(demo, session: RawSession) -> list[Trace]:
    """The Traces that `session`'s state holds on the server (read from Gradio's state holder; the
    page's trace on show is a `traces.Shown`, its handle and trace)."""
    held = demo.state_holder.session_data.get(session.hash)
    values = [] if held is None else held.state_data.values()
    return [v.trace if isinstance(v, Shown) else v for v in values if isinstance(v, (Trace, Shown))]


def test_sessions_expire_and_are_capped_by_gradio_itself(tmp_path, trace_file):
    """Issue 38 item 7: a session's traces go `session_ttl` seconds after they were set (Gradio's
    `gr.State(time_to_live)`), and beyond `state_session_capacity` the least recently used session
    goes: no guard edits Gradio's state holder."""
    demo, url = launch_tiny_demo(str(tmp_path), session_ttl=8, capacity=2)  # 8 s: three uploads fit on a loaded machine
    try:
        with httpx.Client(timeout=TIMEOUT) as client:
            upload = event_index(url, client, "uploadbutton", "upload")
            sessions = [RawSession(url, client) for _ in range(3)]
            refs = []
            for s in sessions:
                assert s.call(upload, [s.upload(trace_file), "en", ""])["success"]  # "": the server draws the handle
                refs.append(weakref.ref(held_traces(demo, s)[0]))
        gc.collect()
        assert refs[0]() is None and held_traces(demo, sessions[0]) == []  # the capacity: the oldest went
        assert all(r() is not None for r in refs[1:])
        deadline = time.monotonic() + TIMEOUT
        while any(r() is not None for r in refs) and time.monotonic() < deadline:
            time.sleep(0.5)  # Gradio deletes expired state once a second
            gc.collect()
        assert all(r() is None for r in refs)  # expired
    finally:
        demo.close()


def test_memory_is_released_on_a_clock_and_collected_after_a_deletion():
    release = MemoryRelease(ServerLimits(release_every=3600))
    freed = []
    gc.callbacks.append(lambda phase, info: freed.append(phase) if phase == "stop" else None)
    try:
        release.release()
        assert release.releases == 1 and freed == []  # nothing deleted: no collection, only the trim
        release.deleted("a trace")
        release.release()
        assert release.releases == 2 and freed  # a collection ran
    finally:
        gc.callbacks.pop()


def uvicorn_range() -> str:
    """The uvicorn requirement of pyproject.toml's [app] extra."""
    text = (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text(encoding="utf-8")
    found = re.search(r'"(uvicorn[^"]*)"', text)
    assert found, "pyproject.toml allows no uvicorn range, so none is tested"
    return found.group(1)


def test_the_installed_uvicorn_is_the_range_s_floor_and_has_the_hooks_the_guard_uses():
    """The connection guard subclasses uvicorn's HTTP protocols and reads `cycle`, `transport` and
    `loop` of a connection; pyproject.toml allows the uvicorn releases it was run against, and the
    suite runs on the range's lowest (requirements.txt pins it), so the server tests below cover it."""
    from packaging.requirements import Requirement
    from packaging.version import Version
    from uvicorn.protocols.http.h11_impl import H11Protocol

    req = Requirement(uvicorn_range())
    installed = Version(version("uvicorn"))
    assert installed in req.specifier
    floor = min(Version(s.version) for s in req.specifier if s.operator in (">=", "=="))
    assert installed.release[:2] == floor.release[:2], f"test on uvicorn {floor}, the floor of {req}"
    pinned = (Path(__file__).resolve().parents[1] / "requirements.txt").read_text(encoding="utf-8")
    assert f"uvicorn=={installed}" in pinned
    for hook in guards.UVICORN_HOOKS:
        assert callable(getattr(H11Protocol, hook))


def silent(url: str) -> socket.socket:
    host, port = url.removeprefix("http://").rstrip("/").split(":")
    s = socket.create_connection((host, int(port)), timeout=TIMEOUT)
    return s


def closed_by_server(s: socket.socket) -> bool:
    """True once the server closed `s` (reads end); waits at most TIMEOUT for it."""
    try:
        return s.recv(1024) == b""
    except ConnectionResetError:
        return True


def test_silent_and_slow_connections_are_bounded(served):
    demo, url = served
    limits = ServerLimits(max_connections=8, header_timeout=1.0)
    cls = guards.guard_connections(demo.server, limits)
    crowd = [silent(url) for _ in range(40)]
    try:
        r = httpx.get(url, timeout=TIMEOUT)  # the page answers through the crowd
        assert r.status_code == 200
        assert closed_by_server(crowd[0])  # the oldest silent one made room
        slow = silent(url)
        slow.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")  # headers never finished
        assert closed_by_server(slow)  # after header_timeout
        assert closed_by_server(crowd[-1])
        assert cls.stats["evicted"] >= 40 - limits.max_connections and cls.stats["timed_out"] >= 1
        assert httpx.get(url, timeout=TIMEOUT).status_code == 200
    finally:
        for s in crowd:
            s.close()
        guards.guard_connections(demo.server, ServerLimits(max_connections=10**6, header_timeout=10**6))


def test_install_bounds_a_launched_demo(served):
    demo, _ = served
    release = guards.install(demo, ServerLimits(release_every=3600))
    try:
        assert demo.memory_release is release
        assert issubclass(demo.server.config.http_protocol_class, guards._ConnectionGuard)
        assert any(isinstance(f, RateLimit) for f in logging.getLogger("asyncio").filters)
        assert demo.page.trace.delete_callback == release.deleted  # a deleted state is the cue to collect
    finally:
        release.stop()
        guards.guard_connections(demo.server, ServerLimits(max_connections=10**6, header_timeout=10**6))


def test_a_uvicorn_without_the_hooks_is_refused_by_name(served):
    demo, _ = served
    config = demo.server.config
    original = config.http_protocol_class

    class Bare:  # a protocol class that lacks what the guard overrides
        pass

    config.http_protocol_class = Bare
    try:
        with pytest.raises(RuntimeError, match=r"uvicorn .*Bare has no connection_made, data_received"):
            guards.guard_connections(demo.server, ServerLimits())
    finally:
        config.http_protocol_class = original
