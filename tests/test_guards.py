"""guards.py: the served page's bounds on connections, sessions and the log, on a real Gradio server.

The tiny demo is served in this process; connections are real sockets, sessions are opened over raw
HTTP (tests/raw_http.py) as an attacker opens them: no browser, no heartbeat.
"""
from __future__ import annotations

import datetime
import gc
import logging
import resource
import socket
import weakref

import httpx
import pytest

from dllm_viz import DecodeConfig, Trace, decode
from dllm_viz.app import guards
from dllm_viz.app.guards import RateLimit, ServerLimits, SessionSweeper
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


def held_trace(demo, session: RawSession) -> Trace:
    """The Trace that `session`'s state holds on the server."""
    (trace,) = [v for v in demo.state_holder.session_data[session.hash].state_data.values() if isinstance(v, Trace)]
    return trace


def test_sessions_are_dropped_when_closed_idle_or_beyond_the_cap(served, trace_file):
    demo, url = served
    limits = ServerLimits(max_sessions=1, session_idle=600)
    sweeper = SessionSweeper(demo.state_holder, limits)
    with httpx.Client(timeout=TIMEOUT) as client:
        upload = event_index(url, client, "uploadbutton", "upload")
        sessions = [RawSession(url, client) for _ in range(3)]
        for s in sessions:
            assert s.call(upload, [s.upload(trace_file), "en"])["success"]
        refs = [weakref.ref(held_trace(demo, s)) for s in sessions]
        # Replaced: a second upload in a session frees the first one's trace.
        assert sessions[0].call(upload, [sessions[0].upload(trace_file), "en"])["success"]
        gc.collect()
        assert refs[0]() is None
        refs[0] = weakref.ref(held_trace(demo, sessions[0]))
    ids = {s.hash for s in sessions}
    assert ids <= set(demo.state_holder.session_data)
    demo.state_holder.session_data[sessions[1].hash].is_closed = True  # what Gradio marks when the page closes
    # Dropped: the closed one, then the least recently used beyond max_sessions=1 (sessions[2]; the
    # second upload made sessions[0] the most recent).
    assert sweeper.sweep() == 2
    gc.collect()
    assert [r() is None for r in refs] == [False, True, True]
    later = datetime.datetime.now() + datetime.timedelta(seconds=limits.session_idle + 1)
    assert sweeper.sweep(now=later) >= 1  # idle too long
    gc.collect()
    assert all(r() is None for r in refs) and not ids & set(demo.state_holder.session_data)


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
    sweeper = guards.install(demo, ServerLimits(max_sessions=5, sweep_every=3600))
    try:
        assert demo.state_holder.capacity == 5 and demo.session_sweeper is sweeper
        assert issubclass(demo.server.config.http_protocol_class, guards._ConnectionGuard)
        assert any(isinstance(f, RateLimit) for f in logging.getLogger("asyncio").filters)
    finally:
        sweeper.stop()
        guards.guard_connections(demo.server, ServerLimits(max_connections=10**6, header_timeout=10**6))
