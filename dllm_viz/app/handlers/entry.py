"""One trace's chunks as a page reads them (`Entry`): growing while its decode runs, waited on by the reads.

A decode's thread adds each step (`add`), then the finished trace (`finish`) or why it ended without one
(`end`); a read waits for a chunk past where it is (`wait`), and a stream of reads holds the steps that follow
its first for a pace (`hold`, `traces.PACE_SECONDS`). `settle` is what a decode's last answer waits for: the page
has read the entries and drawn them. The store of every session's entries, by handle, is `traces.TraceStore`.
"""
from __future__ import annotations

import asyncio
import math
import threading
from collections.abc import Callable
from typing import Any

from dllm_viz.app.handlers.asking import Waiting
from dllm_viz.app.views import wire
from dllm_viz.core.schedules import planned_steps
from dllm_viz.core.trace import StepRecord, Trace, collector_paused

STATES = ("live", "done", "stopped", "failed")


class Entry:
    """One trace's chunks (JSON texts), growing while its decode runs; `state` says whether more come."""

    def __init__(self, encoder: wire.Encoder) -> None:
        self.encoder: wire.Encoder | None = encoder  # None once finished
        self.config = encoder.config  # what it decodes (a page that starts a decode fits its widgets against it)
        self.planned = planned_steps(encoder.config)  # its steps, where the schedule says (None: the model decides)
        self.chunks: list[str] = []
        self.first_step: int | None = None  # the index of the chunk that brought its first step
        self.chars = 0
        self.state = "live"
        self.read = threading.Event()  # a page reads this entry
        self.delivered = threading.Event()  # ... and has read it to its end
        self.drawn = threading.Event()  # ... and has drawn every view of it (`TraceStore.drawn`)
        self.counter: Any = None  # the store's count of characters held, while it holds this entry
        self.waiting: list[Any] | None = None  # where it waits for a slot, as last sent (`queue`)
        self._lock = threading.Lock()
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []  # reads awaiting a chunk
        self._holds: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []  # ... its last step, its end

    def _push(self, chunk: dict[str, Any] | None, state: str | None = None, *, step: bool = False) -> None:
        text = wire.dumps([chunk])[1:-1] if chunk is not None else None
        with self._lock:
            if self.state != "live":
                return
            if text is not None:
                if step and self.first_step is None:
                    self.first_step = len(self.chunks)
                self.chunks.append(text)
            if state is not None:
                self.state = state
            waiters, self._waiters = self._waiters, []
            if self.state != "live" or self.at_last_step():  # a held read goes now (not woken by every step)
                waiters, self._holds = waiters + self._holds, []
            counter = self.counter
        if text is not None:
            (counter or Entry._grow)(self, len(text))
        for loop, future in waiters:
            loop.call_soon_threadsafe(resolve, future)

    def _grow(self, chars: int) -> None:
        self.chars += chars

    def add(self, record: StepRecord) -> None:
        """One more step of the decode (its thread calls this)."""
        encoder = self.encoder
        if encoder is not None:
            self._push(encoder.chunk([record]), step=True)

    def finish(self, trace: Trace) -> None:
        """The decode's trace: the steps not sent yet and what only the finished trace says. The entry
        then holds its chunks only (the encoder's token text would keep the trace alive)."""
        encoder = self.encoder
        if encoder is not None:
            self.config = trace.config  # as decoded (a runner may fit the config asked: `serve.fit_to_tasks`)
            with collector_paused():  # a stored trace's chunks: as many new lists and numbers as its parse made
                self._push(encoder.chunk(trace.steps[encoder.sent:], done=wire.done(trace)), "done")
            self.encoder = None

    def queue(self, waiting: Waiting | None) -> None:
        """Where the decode waits for a slot of the shared engine (`asking.Ticket.waiting`: requests
        ahead, an estimate in seconds; None: it runs), whenever that changes, before its first step."""
        shown = None if waiting is None else [waiting[0], None if waiting[1] is None else math.ceil(waiting[1])]
        if shown != self.waiting:
            self.waiting = shown
            self._push({"v": wire.VERSION, "queue": shown})

    def stop_key(self, key: str) -> None:
        """The key the decode's Stop must send (`PlayHandlers.stopped`), for the page that reads it (a
        session's own entry: no other page reads it)."""
        if key:
            self._push({"v": wire.VERSION, "key": key})

    def end(self, state: str) -> None:
        """The decode ended without a trace ("stopped" by the visitor, or "failed")."""
        self._push(None, state)
        self.encoder = None

    def at_last_step(self) -> bool:
        """Whether the decode has sent the steps its schedule plans and not its end yet (which follows at once)."""
        encoder, planned = self.encoder, self.planned
        return self.state == "live" and encoder is not None and planned is not None and encoder.sent >= planned

    async def hold(self, start: int, until: float) -> None:
        """Keep the steps past `start` back until the loop's time `until`, unless the decode reaches its last
        planned step or ends before (a reader that has its first step already: `PACE_SECONDS`). The steps made
        meanwhile do not wake it: that is the point (each wake costs the decode's thread the interpreter)."""
        if self.first_step is None or start <= self.first_step:
            return
        loop = asyncio.get_running_loop()
        await self._park("_holds", lambda: self.state != "live" or self.at_last_step(), until - loop.time())

    def since(self, start: int) -> tuple[list[str], str]:
        with self._lock:
            return self.chunks[start:], self.state

    async def wait(self, start: int, timeout: float) -> None:
        """Until there is a chunk past `start` or the decode has ended (or `timeout` seconds)."""
        await self._park("_waiters", lambda: len(self.chunks) > start or self.state != "live", timeout)

    async def _park(self, where: str, ready: Callable[[], bool], timeout: float) -> None:
        """Until `_push` wakes the reads of the list `where` names (or `timeout` seconds), unless `ready()` already
        (the list is looked up under the lock: `_push` swaps it for a new one as it wakes them)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        with self._lock:
            if ready() or timeout <= 0:
                return
            getattr(self, where).append((loop, future))
        try:
            await asyncio.wait_for(future, timeout)
        except asyncio.TimeoutError:
            pass
        finally:  # timed out or cancelled (`read_together`): nothing wakes it any more (its loop may be gone)
            with self._lock:
                setattr(self, where, [w for w in getattr(self, where) if w[1] is not future])


def resolve(future: asyncio.Future[None]) -> None:
    """Wake a read waiting on `future` (from the loop it waits in: `call_soon_threadsafe`)."""
    if not future.done():
        future.set_result(None)


# How long a decode's last answer (facts, banner, a compare's summary) waits for the page to have read the
# finished traces (the page draws their canvases and heatmaps first, Gradio's update of the text after them),
# and then for it to have drawn them (it says so: `TraceStore.drawn`).
DELIVERED_SECONDS = 0.25
DRAWN_SECONDS = 0.5


def settle(entries: Any, delivered: float = DELIVERED_SECONDS, drawn: float = DRAWN_SECONDS) -> None:
    """Wait until a page that reads `entries` has read them to their ends (at most `delivered` seconds)
    and drawn them (at most `drawn` seconds more): a decode's last answer (its facts and banner, which
    Gradio's page applies in one long task) then never takes the page's time from drawing the views.
    Entries no page reads are not waited for."""
    read = [entry for entry in entries if entry.read.is_set()]
    for entry in read:
        entry.delivered.wait(delivered)
    for entry in read:
        entry.drawn.wait(drawn)


def finish_later(entry: Entry, trace: Trace) -> None:
    """`entry.finish(trace)`, or the entry failed (a page reading it stops waiting)."""
    try:
        entry.finish(trace)
    except Exception:  # noqa: BLE001 - the page is told; the app goes on
        entry.end("failed")
        raise


def finished(trace: Trace) -> Entry:
    """The entry of a stored trace: all its chunks, done."""
    entry = Entry(wire.encoder_for(trace))
    entry.finish(trace)
    return entry
