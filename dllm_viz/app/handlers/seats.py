"""The page's decodes at once: one budget for its decode events and the decodes the page starts before them.

Gradio runs at most `concurrency_limit` events of the page's "decode" group at once (a decode, a link, a
compare, a sweep: `ui.build_demo`); a decode the page starts itself (`starts`, `page_server.dv_start`) runs
before its event reaches that queue. `Seats` counts both against the same limit: every decode of the group
holds one seat from its start to its end (a sweep for as long as it runs), and an event that adopts the
decode its page started keeps that decode's seat (one seat per decode, as one decode per event).

- **An event** always gets its seat: Gradio admitted it within the limit already. While started decodes
  fill the seats it waits for one, at most `wait_seconds` (a started decode is adopted, or stopped, within
  `starts.ADOPT_SECONDS`), then takes one anyway.
- **A start** takes a free seat or none: it is refused ("busy") when the seats are all held, and ("too
  many") when its session already holds `per_session` of them, events included, so that one session's
  page cannot take the seats that other sessions' events would wait for. Refused, nothing is shown: the
  event decodes itself when Gradio runs it, or waits in Gradio's queue, as any event does.

The API (`/generate`) and `/fork` run in concurrency groups of their own and hold no seat: however large
the budgets they ask for, they never refuse a page's start nor hold a page's event (the engine's
per-client bounds share the model between them: `serve.fair`).
"""
from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Hashable

PER_SESSION = 2  # seats one session's decodes may hold before its page starts none itself
WAIT_SECONDS = 10.0  # the longest an event waits for a seat that started decodes hold


class Seat:
    """One decode's place in the budget; `release` (once, idempotent) frees it."""

    def __init__(self, seats: Seats, session: Hashable) -> None:
        self.seats, self.session = seats, session
        self._held = True

    def release(self) -> None:
        with self.seats._cond:
            if not self._held:
                return
            self._held = False
            self.seats._held[self.session] -= 1
            if self.seats._held[self.session] <= 0:
                del self.seats._held[self.session]
            self.seats._cond.notify_all()


class Seats:
    """The seats of the page's decode group (see the module's docstring); `limit` None: unbounded."""

    def __init__(self, limit: int | None = None, *, per_session: int = PER_SESSION,
                 wait_seconds: float = WAIT_SECONDS) -> None:
        self.limit, self.per_session, self.wait_seconds = limit, per_session, wait_seconds
        self._held: Counter[Hashable] = Counter()
        self._cond = threading.Condition()

    def held(self, session: Hashable = ...) -> int:
        """Seats held now (by `session`'s decodes, or by every decode)."""
        with self._cond:
            return sum(self._held.values()) if session is ... else self._held.get(session, 0)

    def _full(self) -> bool:
        return self.limit is not None and sum(self._held.values()) >= self.limit

    def _seat(self, session: Hashable) -> Seat:
        self._held[session] += 1
        return Seat(self, session)

    def take(self, session: Hashable, stop: threading.Event | None = None) -> Seat:
        """An event's seat: waits while started decodes fill the seats, at most `wait_seconds` (or until
        `stop`, its decode's Stop, is set)."""
        deadline = time.monotonic() + self.wait_seconds
        with self._cond:
            while self._full() and (left := deadline - time.monotonic()) > 0 and not (stop and stop.is_set()):
                self._cond.wait(min(left, 0.1))
            return self._seat(session)

    def try_take(self, session: Hashable) -> Seat | str:
        """A started decode's seat, or why there is none for it ("busy", "too many")."""
        with self._cond:
            if self._full():
                return "busy"
            if session is not None and self._held.get(session, 0) >= self.per_session:
                return "too many"
            return self._seat(session)
