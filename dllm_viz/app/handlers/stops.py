"""Stop: each session's decodes in progress, and the key their page must send to stop them.

A session's decodes in progress share one key (random; the live canvas carries it, so only the page that
started them has it: a session's hash alone is not enough to stop them). `Stops.halt` sets the Stop signal
of every decode of the session and waits for the end of each stream an event follows (so nothing of a
stopped decode arrives after Stop's view). A decode no event follows yet (the page started it, its event
has not come: `starts`) is not waited for: the event that adopts it checks the signal before it answers
anything (`Stops.follow`, under the same lock as `halt`).

Every decode the page streams registers here, whichever tab started it (a Playground decode, a Compare
pair: one decode of one batch each), so one Stop and one key stop them all (`Stops.halt`).
"""
from __future__ import annotations

import dataclasses
import hmac
import secrets
import threading
import time


@dataclasses.dataclass(eq=False)
class Signal:
    """One decode's Stop: `stop` is set to stop it; `ended` once the stream that follows it has ended."""

    stop: threading.Event = dataclasses.field(default_factory=threading.Event)
    ended: threading.Event = dataclasses.field(default_factory=threading.Event)
    followed: bool = False  # an event streams it (its answers could follow Stop's view)


@dataclasses.dataclass
class SessionDecodes:
    """A session's decodes in progress, and the key their live canvases carry."""

    key: str
    running: list[Signal]


class Stops:
    """Every session's decodes in progress (safe from any thread)."""

    def __init__(self) -> None:
        self._sessions: dict[str, SessionDecodes] = {}
        self._lock = threading.Lock()

    def add(self, session: str | None, *, followed: bool) -> tuple[Signal, str]:
        """A decode of `session` starts: its signal, and the key of the session's decodes ("" without a
        session: nobody can stop it but its stream's end)."""
        signal = Signal(followed=followed)
        with self._lock:
            if session is None:
                return signal, ""
            mine = self._sessions.setdefault(session, SessionDecodes(key=secrets.token_urlsafe(16), running=[]))
            mine.running.append(signal)
            return signal, mine.key

    def follow(self, signal: Signal) -> bool:
        """An event streams the decode of `signal` from now on; False if it was stopped already (the event
        then answers nothing of it)."""
        with self._lock:
            signal.followed = True
            return not signal.stop.is_set()

    def done(self, session: str | None, signal: Signal) -> None:
        """The decode of `signal` has ended, and so has the stream that followed it, if any."""
        signal.ended.set()
        with self._lock:
            mine = self._sessions.get(session) if session is not None else None
            if mine is not None and signal in mine.running:
                mine.running.remove(signal)
                if not mine.running:
                    del self._sessions[session]

    def halt(self, session: str | None, key: str, *, wait_seconds: float) -> bool:
        """Stop every decode of `session`, if `key` is theirs, then wait for the streams that followed them to end
        (at most `wait_seconds` in all), so nothing of them follows the caller's view; whether `key` stopped any
        (False: not the session's key, or nothing of it in progress any more)."""
        deadline = time.monotonic() + wait_seconds
        ends = self._stop(session, key)
        for ended in ends or ():
            ended.wait(timeout=max(0.0, deadline - time.monotonic()))
        return ends is not None

    def _stop(self, session: str | None, key: str) -> list[threading.Event] | None:
        """Stop every decode of `session` if `key` is theirs: the ends of the streams to wait for, or None when
        `key` stopped nothing."""
        with self._lock:
            mine = self._sessions.get(session) if session is not None else None
            if mine is None or not key or not hmac.compare_digest(mine.key, str(key)):
                return None
            for signal in mine.running:
                signal.stop.set()
            return [signal.ended for signal in mine.running if signal.followed]
