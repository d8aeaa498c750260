"""Decodes the page starts itself, before the event that asks for them reaches the server.

A slider release costs Gradio's page a long task before its event leaves (it gathers the inputs and
updates every loading status), and the event then waits in Gradio's queue: the decode started 50-150 ms
after the release. The page therefore also asks for the decode itself, at once, with the event's own
inputs and the handle it drew for it (`page_server`: `dv_start`); the decode runs under that handle
(the page reads its steps as for any other), and the event, when it comes, ADOPTS it: it waits on that
decode instead of starting another (one decode per event). What the event's inputs ask is checked again
when it comes: a decode that is not what the event asks (another prompt, other settings) is stopped, and
the event decodes its own.

`Starts` keeps the decodes started this way until their event adopts them, by (session, handle): a handle
is the page's 128 random bits, so no other page adopts it. Bounded by the seats of the page's decode group
(`seats`: one budget with the events of Gradio's queue, sweeps included; a start takes a free seat or is
refused, within its session's share); one no event adopts within `adopt_seconds` is stopped (its event
never came: a request Gradio dropped, a page that left), and its seat freed. A handle is claimed once: an
event that came first decodes under it itself, and a late start of the page then does nothing.
"""
from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, Protocol

from dllm_viz.app.handlers.seats import Seat, Seats

ADOPT_SECONDS = 5.0  # how long a started decode waits for its event; then it is stopped
CLAIMS_KEPT = 4096  # handles remembered as claimed (an event, or a start, took them), oldest forgotten first
START_WAIT_SECONDS = 2.0  # how long an event waits for a start of its page that is still being made


class Decoding(Protocol):
    """A decode in progress (`play.Decoding`): what it decodes, and how to stop it."""

    asked: Hashable

    def close(self, state: str | None = None) -> None: ...


class _Slot:
    """One claimed handle: the decode started under it (once made), or why none was."""

    def __init__(self, session: str, handle: str, by_page: bool) -> None:
        self.session, self.handle, self.by_page = session, handle, by_page
        self.made = threading.Event()  # the start has run (`decoding` set, or `error`)
        self.decoding: Decoding | None = None
        self.error: str | None = None
        self.adopted = False
        self.born = time.monotonic()


class Starts:
    """The decodes pages started and their events have not adopted yet (see the module's docstring)."""

    def __init__(self, seats: Seats | None = None, *, adopt_seconds: float = ADOPT_SECONDS) -> None:
        self.seats = seats if seats is not None else Seats()  # the page's decode group: events and starts
        self.adopt_seconds = adopt_seconds
        self._claims: OrderedDict[tuple[str, str], _Slot] = OrderedDict()
        self._waiting: dict[tuple[str, str], _Slot] = {}  # started by a page, not adopted yet
        self._lock = threading.Lock()

    def pending(self, session: str | None = None) -> int:
        """Started decodes no event has adopted yet (of `session`, or of every page)."""
        with self._lock:
            return sum(1 for s in self._waiting.values() if session is None or s.session == session)

    def start(self, session: str | None, handle: Any, make: Callable[[Seat], Decoding]) -> str | None:
        """A page asks for the decode its event will ask for, under `handle`: `make(seat)` starts it in
        `seat` (its place among the page's decodes, freed when it closes; raising ValueError for what the
        event will report). Returns None once started, else why not (no seat: "busy", "too many"; a handle
        already claimed; the error); nothing is shown for it: the event reports its own error."""
        if not session or not isinstance(handle, str):
            return "no session"
        key = (session, handle)
        with self._lock:
            if key in self._claims:
                return "claimed"
            seat = self.seats.try_take(session)
            if isinstance(seat, str):
                return seat  # the event decodes itself when it comes, or waits in Gradio's queue
            slot = self._claim(key, by_page=True)
            self._waiting[key] = slot
        try:
            slot.decoding = make(seat)
        except ValueError as err:
            slot.error = str(err)
            with self._lock:
                self._waiting.pop(key, None)
        finally:
            if slot.decoding is None:
                seat.release()
            slot.made.set()
        if slot.decoding is None:
            return slot.error or "failed"
        timer = threading.Timer(self.adopt_seconds, self._orphan, (key, slot))
        timer.daemon = True
        timer.start()
        return None

    def adopt(self, session: str | None, handle: Any, asked: Hashable) -> tuple[Decoding | None, bool]:
        """The event of `handle` has come and asks for `asked`: the decode its page started for it, if it
        decodes just that (another one is stopped here), and whether the event may decode under `handle`
        itself (a handle no start of the page took, or one whose decode ended here, it may not: the page
        has read that one's end)."""
        if not session or not isinstance(handle, str):
            return None, True
        key = (session, handle)
        with self._lock:
            slot = self._claims.get(key)
            if slot is None:
                self._claim(key, by_page=False)  # a later start of the page for it does nothing
                return None, True
        slot.made.wait(START_WAIT_SECONDS)
        with self._lock:
            if self._waiting.get(key) is not slot or slot.decoding is None:
                return None, slot.decoding is None and slot.error is not None  # never started: the handle is free
            del self._waiting[key]
            slot.adopted = True
        if slot.decoding.asked == asked:
            return slot.decoding, False
        _close_later(slot.decoding)  # not what the event asks: the event decodes its own, under another handle
        return None, False

    def _claim(self, key: tuple[str, str], *, by_page: bool) -> _Slot:
        """Remember `key` as taken (the lock is held)."""
        slot = self._claims[key] = _Slot(*key, by_page)
        if not by_page:
            slot.made.set()  # the event decodes under it itself: nothing to wait for
        while len(self._claims) > CLAIMS_KEPT:
            self._claims.popitem(last=False)
        return slot

    def _orphan(self, key: tuple[str, str], slot: _Slot) -> None:
        """No event adopted the decode started under `key` in time: it stops."""
        with self._lock:
            if self._waiting.get(key) is not slot:
                return
            del self._waiting[key]
        if slot.decoding is not None:
            slot.decoding.close("stopped")


def _close_later(decoding: Decoding) -> None:
    """Stop `decoding` without waiting for its step in progress."""
    threading.Thread(target=decoding.close, args=("stopped",), name="dllm-viz-stop", daemon=True).start()
