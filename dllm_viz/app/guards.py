"""Bounds of the served playground that neither Gradio nor uvicorn provides: connections, memory, the log.

An attack run against `python app.py` found four ways to stop the page for everyone (issues 30 and
33). Where Gradio or uvicorn has a bound of its own, `app.serve` sets it: sessions expire through
`gr.State(time_to_live=...)` (`ui.build_demo(session_ttl=...)`) and at most `state_session_capacity`
are kept (least recently used dropped first); idle keep-alive connections close after uvicorn's
`timeout_keep_alive`. What is left is here, installed by `app.serve` on the server Gradio starts:

- **Silent sockets.** Uvicorn times a connection out only between requests (keep-alive), never
  before its first one, so 19,990 idle sockets held the process at its file-descriptor limit and
  nothing answered. `guard_connections` wraps the server's HTTP protocol: a connection must send
  its request line and headers within `header_timeout` seconds of opening (or of its previous
  response), and at most `max_connections` stay open; a newcomer beyond that closes the oldest
  connection that is only waiting (none is busy with a request), or is closed itself when every
  one is busy (uvicorn's own `limit_concurrency` answers 503 to new requests and closes nothing).
  A request in progress is never timed out (the queue's event stream lasts as long as its
  decode); uploads are bounded by Gradio's `max_file_size`. Tested against the uvicorn range that
  pyproject.toml allows (`UVICORN_HOOKS`, tests/test_guards.py).
- **Memory that stays.** A trace is some 10^5 small Python objects; once freed, the allocator
  keeps the memory: CPython's pymalloc frees a 1 MiB arena only when all of it is free, and a few
  long-lived objects allocated amid a trace pin most of them (measured: +90 MB of 200 MB stayed
  after every session was dropped). `dllm-viz serve` therefore runs under the system allocator
  (`PYTHONMALLOC=malloc`, `MALLOC_ARENA_MAX=2`, see `app.main.system_allocator`), and `MemoryRelease`
  hands freed pages back with glibc's `malloc_trim(0)` every `release_every` seconds: then 10-20 MB
  stay.
- **The log.** At the descriptor limit asyncio logs a traceback for every accept attempt (464 MB in
  a minute); uvicorn logs a line per malformed request. `rate_limit_connection_log` lets one line
  a second through (no traceback), with the count of those it held back.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import dataclasses
import gc
import logging
import re
import resource
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import gradio as gr

ENV = {  # environment variable of each limit (`app.serve` reads them once at start)
    "max_connections": "DLLM_VIZ_MAX_CONNECTIONS", "header_timeout": "DLLM_VIZ_HEADER_TIMEOUT",
    "keep_alive": "DLLM_VIZ_KEEP_ALIVE", "max_sessions": "DLLM_VIZ_MAX_SESSIONS",
    "session_idle": "DLLM_VIZ_SESSION_IDLE", "release_every": "DLLM_VIZ_RELEASE_EVERY",
}
# What `guard_connections` uses of uvicorn's HTTP protocol classes (H11Protocol, HttpToolsProtocol):
# checked when it is installed, and against the range pyproject.toml allows by tests/test_guards.py.
UVICORN_HOOKS = ("connection_made", "data_received", "on_response_complete", "connection_lost")


@dataclass(frozen=True, kw_only=True)
class ServerLimits:
    """The served app's bounds; `from_env` reads the ENV variables over these defaults."""

    max_connections: int = 512  # open HTTP connections (also at most half the descriptor limit)
    header_timeout: float = 10.0  # seconds an open connection may take to send its request line and headers
    keep_alive: float = 5.0  # seconds an idle keep-alive connection is kept between requests (uvicorn's)
    max_sessions: int = 64  # Gradio sessions kept (`state_session_capacity`: least recently used dropped first)
    session_idle: float = 900.0  # seconds a session's state is kept after it was last set (`gr.State(time_to_live)`)
    release_every: float = 5.0  # seconds between returns of freed memory to the system

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            integral = f.type == "int"
            number = isinstance(value, int) if integral else isinstance(value, (int, float))
            ok = number and not isinstance(value, bool)
            if not ok or not 0 < value < 10**9:
                kind = "an integer" if integral else "a number of seconds"
                raise ValueError(f"{ENV[f.name]}={value!r} is invalid: expected {kind} in (0, 1e9)")

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> ServerLimits:
        values: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            text = environ.get(ENV[f.name])
            if text is None or not text.strip():
                continue
            try:
                values[f.name] = int(text) if f.type == "int" else float(text)
            except ValueError:
                raise ValueError(f"{ENV[f.name]}={text[:40]!r} is invalid: expected a number") from None
        limits = cls(**values)
        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        if soft != resource.RLIM_INFINITY and limits.max_connections > soft // 2:  # leave descriptors for files
            limits = dataclasses.replace(limits, max_connections=max(1, soft // 2))
        return limits


# ----- connections -----------------------------------------------------------------------------
class _ConnectionGuard:
    """Mixed into the server's HTTP protocol class (uvicorn's H11Protocol or HttpToolsProtocol).

    Subclasses made by `guarded_protocol` carry `limits`, `waiting` (the connections waiting for a
    request, oldest first) and `stats` as class attributes shared by every connection of one server.
    """

    limits: ServerLimits
    waiting: OrderedDict
    stats: dict[str, int]
    _deadline: Any = None

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)  # type: ignore[misc]
        self.stats["opened"] += 1
        if len(self.connections) > self.limits.max_connections:  # type: ignore[attr-defined]
            victim = next(iter(self.waiting), None)
            if victim is None:  # every other connection is busy with a request: refuse this one
                self.stats["refused"] += 1
                transport.close()
                return
            self.stats["evicted"] += 1
            victim._close_waiting()
        self._wait_for_request()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)  # type: ignore[misc]
        if self._busy():
            self._stop_waiting()

    def on_response_complete(self) -> None:
        super().on_response_complete()  # type: ignore[misc]
        if not self.transport.is_closing() and not self._busy():  # type: ignore[attr-defined]
            self._wait_for_request()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_waiting()
        super().connection_lost(exc)  # type: ignore[misc]

    def _busy(self) -> bool:
        cycle = self.cycle  # type: ignore[attr-defined]
        return cycle is not None and not cycle.response_complete

    def _wait_for_request(self) -> None:
        self._stop_waiting()
        self.waiting[self] = None
        self._deadline = self.loop.call_later(self.limits.header_timeout, self._timed_out)  # type: ignore[attr-defined]

    def _stop_waiting(self) -> None:
        self.waiting.pop(self, None)
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _timed_out(self) -> None:
        self._deadline = None
        if self in self.waiting:
            self.stats["timed_out"] += 1
            self._close_waiting()

    def _close_waiting(self) -> None:
        self._stop_waiting()
        self.transport.close()  # type: ignore[attr-defined]


def guarded_protocol(base: type, limits: ServerLimits) -> type:
    """`base` (a uvicorn HTTP protocol class) with the connection bounds of `limits`."""
    return type(f"Guarded{base.__name__}", (_ConnectionGuard, base), {
        "limits": limits, "waiting": OrderedDict(),
        "stats": {"opened": 0, "evicted": 0, "refused": 0, "timed_out": 0},
    })


def guard_connections(server: Any, limits: ServerLimits) -> type:
    """Bound the connections of a running uvicorn `server` (Gradio's `demo.server`); returns the class.

    Uvicorn builds each connection's protocol from `config.http_protocol_class` when it accepts it,
    so replacing that class bounds every connection accepted from now on; `timeout_keep_alive`
    (uvicorn's own bound) is read by each new connection too. Raises RuntimeError, naming the
    version, on a uvicorn whose protocol lacks one of `UVICORN_HOOKS`.
    """
    config = server.config
    base = config.http_protocol_class
    while issubclass(base, _ConnectionGuard):  # installed twice: wrap the original, not the wrapper
        base = base.__mro__[2]
    missing = [name for name in UVICORN_HOOKS if not callable(getattr(base, name, None))]
    if missing:
        import uvicorn

        raise RuntimeError(f"uvicorn {uvicorn.__version__}: {base.__name__} has no {', '.join(missing)}; the "
                           "connection guard supports the uvicorn range in pyproject.toml")
    config.http_protocol_class = guarded_protocol(base, limits)
    config.timeout_keep_alive = limits.keep_alive
    return config.http_protocol_class


# ----- memory ----------------------------------------------------------------------------------------
_LIBC = None


def trim() -> None:
    """Hand the allocator's free pages back to the system (glibc's `malloc_trim`; elsewhere nothing)."""
    global _LIBC
    if _LIBC is None:
        name = ctypes.util.find_library("c")
        _LIBC = ctypes.CDLL(name) if name else False
    if _LIBC and hasattr(_LIBC, "malloc_trim"):
        _LIBC.malloc_trim(0)


class MemoryRelease:
    """Returns freed memory to the system every `limits.release_every` seconds, in a daemon thread.

    Gradio drops a session's traces when they expire or when the capacity evicts the session; the
    objects are freed at once (a trace holds no reference cycles), and `malloc_trim` hands their
    pages back. A garbage collection runs first only when Gradio reported a state deleted
    (`deleted`, the `gr.State` delete callback), since a full collection pauses every thread."""

    def __init__(self, limits: ServerLimits) -> None:
        self.limits = limits
        self.releases = 0
        self._deleted = threading.Event()
        self._stop = threading.Event()

    def deleted(self, value: Any = None) -> None:
        """A session state was deleted (Gradio's `delete_callback`)."""
        self._deleted.set()

    def release(self) -> None:
        if self._deleted.is_set():
            self._deleted.clear()
            gc.collect()
        trim()
        self.releases += 1

    def start(self) -> MemoryRelease:
        def loop() -> None:
            while not self._stop.wait(self.limits.release_every):
                self.release()

        threading.Thread(target=loop, name="dllm-viz-memory-release", daemon=True).start()
        return self

    def stop(self) -> None:
        self._stop.set()


# ----- the log -----------------------------------------------------------------------------------
CONNECTION_MESSAGES = re.compile(r"socket\.accept\(\) out of system resource|Invalid HTTP request|"
                                 r"Exceeded concurrency limit|Too many open files")


class RateLimit(logging.Filter):
    """At most one connection-failure record per `every` seconds, on one line (no traceback).

    The record let through says how many it held back since the last one. Other records pass.
    """

    def __init__(self, every: float = 1.0, clock: Any = time.monotonic) -> None:
        super().__init__()
        self.every, self.clock = every, clock
        self.last = -float("inf")
        self.held = 0
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            text += " " + str(record.exc_info[1])
        if not CONNECTION_MESSAGES.search(text):
            return True
        with self._lock:
            now = self.clock()
            if now - self.last < self.every:
                self.held += 1
                return False
            held, self.held, self.last = self.held, 0, now
        cause = f" ({record.exc_info[1]})" if record.exc_info and record.exc_info[1] is not None else ""
        text = " ".join(f"{record.getMessage()}{cause}".split())  # asyncio's message spans two lines: fold it
        record.msg = text + (f" [and {held} more like it, held back]" if held else "")
        record.args, record.exc_info, record.exc_text, record.stack_info = None, None, None, None
        return True


LOGGERS = ("asyncio", "uvicorn.error")  # where accept failures and malformed requests are logged


def rate_limit_connection_log(every: float = 1.0) -> RateLimit:
    """Install one `RateLimit` on the loggers of LOGGERS (once); returns it."""
    for name in LOGGERS:
        for f in logging.getLogger(name).filters:
            if isinstance(f, RateLimit):
                return f
    limiter = RateLimit(every)
    for name in LOGGERS:
        logging.getLogger(name).addFilter(limiter)
    return limiter


def install(demo: Any, limits: ServerLimits) -> MemoryRelease:
    """The bounds of this module on a launched Gradio `demo`: connections, memory, the log."""
    guard_connections(demo.server, limits)
    rate_limit_connection_log()
    release = MemoryRelease(limits).start()
    for state in demo.blocks.values():  # a deleted session state is the cue for a collection
        if isinstance(state, gr.State):
            state.delete_callback = release.deleted
    demo.memory_release = release
    return release
