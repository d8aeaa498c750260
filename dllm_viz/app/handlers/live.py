"""A decode in progress: its steps as they are computed, and Stop.

`stream(run, prompts, configs)` runs one call of a `Runner` in a worker thread and yields the
`StepRecord`s of its first request as the steps happen (the runner's `on_step`), then the traces;
closing the iterator (the visitor pressed Stop, or left) stops the decode at its next step.
`on_record`, when given, also receives each record of every request `(index, record)` in the decode's
own thread, at once, and `on_done` the traces: the page's reader of a decode in progress (`entry.Entry`) sees a
step, and the end, without waiting for the handler.
"""
from __future__ import annotations

import queue
import threading
from concurrent.futures import CancelledError
from collections.abc import Callable, Sequence
from typing import Any

from dllm_viz.app.handlers.asking import Ticket, asking
from dllm_viz.core.config import DecodeConfig
from dllm_viz.core.decoder import Runner
from dllm_viz.core.trace import StepRecord, Trace


class Stopped(Exception):
    """Raised inside the runner's `on_step` when the visitor stopped the decode: the runner ends the
    call with it (`decode` re-raises it; the engine fails the request with it), so no forward pass
    runs after the step in progress."""


def stream(run: Runner, prompts: Sequence[str], configs: Sequence[DecodeConfig], *,
           idle: float | None = None, stop: threading.Event | None = None,
           on_record: Callable[[int, StepRecord], None] | None = None,
           on_done: Callable[[list[Trace]], None] | None = None, ticket: Ticket | None = None) -> Stream:
    """One call of `run`, as it happens: ("step", record) for each StepRecord of request 0, ("idle",
    None) whenever `idle` seconds pass without one, then ("done", the list of traces).

    The call starts at once, in a worker thread (before the iterator is first read: a handler can
    answer with the decode's handle while its first step computes); its error is raised by the
    iterator. The call runs as `ticket`'s (`asking`: who asks, and where the request waits). Setting
    `stop` (the visitor's Stop) or closing the iterator early makes the next `on_step` raise `Stopped`
    and cancels the call's requests (`ticket.cancel`: those still waiting for a slot too); the
    iterator then ends without "done", once the worker has.
    """
    ticket = ticket or Ticket()
    items: queue.SimpleQueue[Any] = queue.SimpleQueue()
    stop = stop or threading.Event()
    closed = threading.Event()  # the iterator was left: nobody reads the steps any more
    done = object()

    def on_step(index: int, record: StepRecord) -> None:
        if stop.is_set() or closed.is_set():
            raise Stopped("the decode was stopped")
        if on_record is not None:
            on_record(index, record)
        if index == 0:
            items.put(record)

    def work() -> None:
        try:
            with asking(ticket):
                traces = run(list(prompts), list(configs), on_step=on_step)
            if on_done is not None:
                on_done(traces)  # in this thread, at once: the page's reader sees the end without a hop
            items.put((done, traces))
        except BaseException as err:  # noqa: BLE001 - handed to the consumer, raised there
            items.put((done, err))

    worker = threading.Thread(target=work, name="dllm-viz-live", daemon=True)
    worker.start()
    return Stream(items, done, worker, stop, closed, idle, ticket)


class Stream:
    """`stream`'s iterator over what its worker puts in `items`; `close()` (or leaving it by an
    error) stops the decode at its next step and waits for the worker, read or not."""

    def __init__(self, items: queue.SimpleQueue[Any], done: object, worker: threading.Thread, stop: threading.Event,
                 closed: threading.Event, idle: float | None, ticket: Ticket) -> None:
        self.items, self.done, self.worker, self.stop, self.closed, self.idle = items, done, worker, stop, closed, idle
        self.ticket = ticket
        self.finished = False  # the worker's call has ended (its traces, its error, or stopped)

    def __iter__(self) -> Stream:
        return self

    def __next__(self) -> tuple[str, Any]:
        try:
            return self._next()
        except BaseException:
            self.close()
            raise

    def _next(self) -> tuple[str, Any]:
        while not self.stop.is_set() and not self.closed.is_set():
            try:
                item = self.items.get(timeout=self.idle)
            except queue.Empty:
                return "idle", None
            if isinstance(item, tuple) and item[0] is self.done:
                self.finished = True
                if isinstance(item[1], (Stopped, CancelledError)):
                    break
                if isinstance(item[1], BaseException):
                    raise item[1]
                self.closed.set()
                return "done", item[1]
            return "step", item
        raise StopIteration

    def close(self) -> None:
        self.closed.set()
        if not self.finished:
            self.ticket.cancel()  # nobody waits for it: out of the queue, or stopped at its next step
        self.worker.join()

    def __del__(self) -> None:
        self.closed.set()  # nobody reads it any more: the decode stops at its next step
        if not self.finished:
            self.ticket.cancel()  # ... or leaves the queue, if it still waits there


class Started:
    """Something started for the page and ended by `close()` (once; whoever ends it: the event that followed
    it, or nobody adopting it): its entries end as `_end` says unless it finished (`traces` set), its
    `steps` stop at the next step (or leave the queue), and `on_close` is called."""

    def __init__(self, asked: Any, steps: Stream, on_close: Callable[[], None]) -> None:
        self.asked, self.steps = asked, steps
        self.traces: list[Trace] | None = None  # once it is done (the event that follows it sets it)
        self._on_close: Callable[[], None] | None = on_close
        self._lock = threading.Lock()

    def _end(self, state: str | None) -> None:
        """End its entries without a trace (`state`: why, else the default of the kind)."""
        raise NotImplementedError

    def close(self, state: str | None = None) -> None:
        with self._lock:
            on_close, self._on_close = self._on_close, None
        if on_close is None:
            return
        try:
            if self.traces is None:
                self._end(state)
            self.steps.close()
        finally:
            on_close()


class Decoding(Started):
    """A decode in progress for the page: what it decodes (`asked`, compared when an event adopts it:
    `starts.Starts`), its handle and the entry its steps go to (`entry.Entry`), its steps (`stream`),
    its Stop signal (`stops.Signal`) and key. `close()` ends the entry as "stopped" or "failed" unless the
    decode finished (`Started`)."""

    def __init__(self, *, asked: Any, handle: str, entry: Any, encoder: Any, steps: Stream, signal: Any, key: str,
                 on_close: Callable[[], None]) -> None:
        super().__init__(asked, steps, on_close)
        self.handle, self.entry, self.encoder = handle, entry, encoder
        self.signal, self.stop, self.key = signal, signal.stop, key

    def _end(self, state: str | None) -> None:
        self.entry.end(state or ("stopped" if self.stop.is_set() else "failed"))
