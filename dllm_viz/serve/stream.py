"""`Engine.stream`: one request of the engine as an iterator of its records, then its trace."""
from __future__ import annotations

import queue
from collections.abc import Iterator
from concurrent.futures import Future
from typing import Any

from dllm_viz.core.trace import StepRecord, Trace


class Stream:
    """Iterator over one request: its `StepRecord`s as the steps happen, then its `Trace`.

    Iterating raises what `future.result()` raises: the request's error, or `CancelledError`
    after `cancel()`. Leaving a `with` block early cancels the request (a closed browser tab
    stops costing forward passes at the next step boundary).
    """

    _DONE = object()

    def __init__(self) -> None:
        self._items: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._finished = False
        self.future: Future[Trace] = Future()  # replaced by `Engine.stream`

    def _push(self, record: StepRecord) -> None:
        self._items.put(record)

    def _attach(self, future: Future[Trace]) -> None:
        self.future = future
        # Done callbacks run after the last record was pushed (same worker thread), or at once in
        # the cancelling thread; either way the iterator sees the end after every record it gets.
        future.add_done_callback(lambda _: self._items.put(self._DONE))

    def __iter__(self) -> Iterator[StepRecord | Trace]:
        return self

    def __next__(self) -> StepRecord | Trace:
        if self._finished:
            raise StopIteration
        item = self._items.get()
        if item is self._DONE:
            self._finished = True
            return self.future.result()
        return item

    def cancel(self) -> bool:
        """Ask the engine to drop the request at the next step boundary; False if already done."""
        return self.future.cancel()

    def __enter__(self) -> Stream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.cancel()
