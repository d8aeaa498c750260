"""Whose request goes next when many clients share one engine: admission and stepping.

The engine asks two small policies between its steps, and neither changes what a request gets,
only when: a request's trace does not depend on who shares its forward (docs/engine.md).

- **Admission** (`Lanes`): requests wait in one lane per client; a free slot goes to the lane of
  the client that holds the fewest slots, so a client with a hundred queued requests delays a
  newcomer by one request at most, not a hundred. Bounds per client (`Fairness`): how many requests, and how much work
  (`core.budget.Work.cells`: steps x positions at most) it may have in the engine at once, and how
  many slots it may hold; beyond the first two `submit` refuses (`QueueFull`), as beyond `max_queue`.
- **Stepping** (`Share`): each forward takes the rows of the clients that have had the least
  compute so far (positions computed), and stops before it is `stretch` times as wide as its
  narrowest row. On a CPU a forward of the embedded model costs about its width, so a short page
  decode beside one client's sixteen 240-position requests steps at a few times its speed alone,
  not at a sixteenth of it; the long requests get their share in forwards of their own. A client
  that arrives starts level with the least served one present, so idle time cannot be banked.
  Rows left out of a forward keep their state in their slots. A renoising model's requests step in
  groups whose rows share one cache (`core.renoise_batch`): a group is chosen whole, by its least
  served client, and each of its rows is charged to its own client, as a masked row is. Without
  `stretch` every running row steps every time (one forward for all: what a GPU, whose forward
  costs little more for more rows, wants).
"""
from __future__ import annotations

import itertools
import math
from collections import OrderedDict, deque
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any


class QueueFull(RuntimeError):
    """`submit` was refused: `max_queue` requests already wait, or the client is at its bound (back-pressure)."""


@dataclass(frozen=True, kw_only=True)
class Fairness:
    """Per-client bounds and the stepping rule of an engine shared by clients; None: no bound."""

    client_requests: int | None = None  # requests of one client in the engine at once (waiting or running)
    client_cells: int | None = None  # their work at most (steps x positions, `core.budget.Work.cells`)
    client_slots: int | None = None  # slots one client holds at once
    stretch: float | None = None  # a forward at most this many times as wide as its narrowest row
    min_width: int = 256  # ... but it may always be this wide (positions)

    def __post_init__(self) -> None:
        for name in ("client_requests", "client_cells", "client_slots", "min_width"):
            value = getattr(self, name)
            if (value is not None or name == "min_width") and (
                    not isinstance(value, int) or isinstance(value, bool) or value < 1):
                raise ValueError(f"{name}={value!r} is invalid: expected an integer >= 1")
        if self.stretch is not None and not (isinstance(self.stretch, (int, float)) and 1 <= self.stretch < math.inf):
            raise ValueError(f"stretch={self.stretch!r} is invalid: expected None or a finite number >= 1")


@dataclass
class _Held:
    """What one client has in the engine."""

    requests: int = 0
    cells: int = 0
    running: int = 0


@dataclass
class Lanes:
    """The requests waiting for a slot, one lane per client, served round robin (the engine holds its lock)."""

    max_queue: int
    fairness: Fairness = field(default_factory=Fairness)
    _lanes: OrderedDict[Hashable, deque[Any]] = field(default_factory=OrderedDict)
    _held: dict[Hashable, _Held] = field(default_factory=dict)

    def __len__(self) -> int:
        return sum(len(lane) for lane in self._lanes.values())

    def __iter__(self):
        return itertools.chain.from_iterable(self._lanes.values())

    def push(self, request: Any) -> None:
        """Queue `request` (with `.client` and `.work`) in its client's lane, or raise QueueFull."""
        f, held = self.fairness, self._held.get(request.client, _Held())
        if len(self) >= self.max_queue:
            raise QueueFull(f"engine queue is full: {len(self)} requests wait (max_queue={self.max_queue}); "
                            "retry after one of your requests finishes")
        if f.client_requests is not None and held.requests >= f.client_requests:
            raise QueueFull(f"this client has {held.requests} requests in the engine: at most {f.client_requests} "
                            "at once; retry after one of them finishes")
        if f.client_cells is not None and held.cells + request.work.cells > f.client_cells:
            raise QueueFull(f"this client's requests in the engine ask for {held.cells} positions computed and this "
                            f"one for {request.work.cells}: at most {f.client_cells} at once per client; retry after "
                            "one of them finishes")
        held.requests += 1
        held.cells += request.work.cells
        self._held[request.client] = held
        self._lanes.setdefault(request.client, deque()).append(request)

    def pop(self, free: int) -> list[Any]:
        """Up to `free` requests to admit: each from the lane whose client holds the fewest slots
        (the longest-waiting lane among equals), each client within its slots."""
        cap, out = self.fairness.client_slots, []
        running = {c: self._held[c].running for c in self._lanes}
        while len(out) < free:
            ready = [c for c, q in self._lanes.items() if q and (cap is None or running[c] < cap)]
            if not ready:
                break
            lane = min(ready, key=running.__getitem__)  # the first of the fewest: lanes keep their turn order
            out.append(self._lanes[lane].popleft())
            self._held[lane].running += 1
            running[lane] += 1
            self._lanes.move_to_end(lane)
            if not self._lanes[lane]:
                del self._lanes[lane]
        return out

    def drop(self, keep: Any) -> list[Any]:
        """Remove the waiting requests for which `keep(request)` is False; returns them (finished here)."""
        dropped = []
        for client in list(self._lanes):
            lane = self._lanes[client]
            kept = deque(r for r in lane if keep(r))
            dropped += [r for r in lane if not keep(r)]
            if kept:
                self._lanes[client] = kept
            else:
                del self._lanes[client]
        for request in dropped:
            self.finished(request, running=False)
        return dropped

    def finished(self, request: Any, *, running: bool = True) -> None:
        """`request` left the engine (done, failed or cancelled; `running`: it held a slot)."""
        held = self._held.get(request.client)
        if held is None:
            return
        held.requests -= 1
        held.cells -= request.work.cells
        held.running -= running
        if held.requests <= 0:
            del self._held[request.client]

    def position(self, request: Any) -> int | None:
        """How many waiting requests take a slot before `request` as `pop` goes (slot caps aside);
        None when it is not waiting."""
        lanes = OrderedDict((c, deque(q)) for c, q in self._lanes.items())
        running = {c: self._held[c].running for c in lanes}
        ahead = 0
        while lanes:
            lane = min(lanes, key=running.__getitem__)
            if lanes[lane].popleft() is request:
                return ahead
            ahead, running[lane] = ahead + 1, running[lane] + 1
            lanes.move_to_end(lane)
            if not lanes[lane]:
                del lanes[lane]
        return None


Row = tuple[int, Hashable, int, int]  # a running request: (slot, client, width of its forward, steps taken)


class Share:
    """Which running rows step in the next forward (see the module docstring)."""

    def __init__(self, fairness: Fairness) -> None:
        self.stretch, self.min_width = fairness.stretch, fairness.min_width
        self.used: dict[Hashable, float] = {}  # positions computed for each client present
        self._seen = itertools.count()
        self._order: dict[Hashable, int] = {}  # who came first, for ties

    def choose(self, rows: Sequence[Row]) -> list[int]:
        """`rows`: (slot, client, width, steps taken) of every running row; the slots to step now."""
        return [slot for unit in self.choose_units([[row] for row in rows]) for slot, *_ in unit]

    def choose_units(self, units: Sequence[Sequence[Row]]) -> list[Sequence[Row]]:
        """`units`: the rows of each unit that steps whole (a renoising group, whose rows share one cache; a
        masked row alone); the units to step now, those of the least served clients first (a unit goes by its
        least served client), until the next would make the step `stretch` times as wide as its narrowest row."""
        if self.stretch is None:
            return list(units)
        clients = dict.fromkeys(client for unit in units for _, client, _, _ in unit)  # in the order they come
        level = min((self.used[c] for c in clients if c in self.used), default=0.0)
        for client in list(self.used):
            if client not in clients:
                del self.used[client], self._order[client]
        for client in clients:
            if client not in self.used:
                self.used[client], self._order[client] = level, next(self._seen)

        def turn(unit: Sequence[Row]) -> tuple[float, int, int, int]:  # its least served client's; its fewest steps
            return min((self.used[c], self._order[c], steps, slot) for slot, c, _, steps in unit)

        chosen: list[Sequence[Row]] = []
        total, narrowest = 0, math.inf
        for unit in sorted(units, key=turn):
            width, narrow = sum(w for _, _, w, _ in unit), min([narrowest, *(w for _, _, w, _ in unit)])
            if chosen and total + width > max(self.stretch * narrow, self.min_width):
                return chosen
            chosen.append(unit)
            total, narrowest = total + width, narrow
        return chosen

    def charge(self, stepped: Iterable[tuple[Hashable, int]]) -> None:
        """The rows just stepped, as (client, width): their clients have had that much more."""
        for client, width in stepped:
            if client in self.used:
                self.used[client] += width
