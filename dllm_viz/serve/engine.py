"""Continuous batching: concurrent requests share the forward passes of one batched decoder.

The serving half of the article (sections 3.1, 4.3, 5.3): a request is a canvas plus its own
schedule state (the `Slot`'s step and masks left, temperature, top-k schedule) and its own
generator. One worker thread owns the model and a fixed-capacity `DecodeBatch`; between two steps it
  (1) drops requests whose futures were cancelled,
  (2) admits queued requests into free slots (their buffers are reset, never reallocated),
  (3) runs one step for every occupied slot: `DecodeBatch.step`, one forward pass over all of them,
  (4) streams each new `StepRecord` to its request's callback,
  (5) resolves the requests whose last mask was confirmed and frees their slots.
A request joins at a step boundary and leaves the step its masks left reach 0. Each draws from its own generator
(`decoder`), so its trace is the one `decode(model, [prompt], config)` gives alone, whatever shares the batch, as
far as the model's logits for a row do not depend on the other rows. Freed memory is kept for reuse (`serve.memory`).

Exact under load is the model's to keep (one layer, docs/engine.md): the embedded model's `logits_at` runs every
product in tiles of a fixed row count and attention per row at its real length, so with one intra-op thread a trace
is the same alone and in any batch; Hugging Face adapters may differ in the last bits (`models/hf.py`).

Clients (`submit(client=...)`) take free slots in turn and, with `Fairness`, share the forwards
by the compute they have had, within per-client bounds (`serve.fair`).

Failure isolation: an invalid prompt or config fails only its own future (ValueError, nothing is
queued; prompt ids are checked against the model's vocabulary, the canvas and the work against
`core.budget`); a full queue, or a client at its bound, makes `submit` raise `QueueFull` at once.
A step that raises (the model's forward, say) changes nothing (not even a cache: `DecodeBatch.step`),
so it is retried on halves of the slots (`step(rows=...)`) until the failure is pinned on single
requests. Only those fail; the others go on, still exact (their generators restored).
"""
from __future__ import annotations

import logging
import threading
import time
import warnings
from collections import deque
from collections.abc import Callable, Hashable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

import torch

from dllm_viz.core.budget import Budget, Work
from dllm_viz.core import rules
from dllm_viz.core.config import DecodeConfig, short
from dllm_viz.core.decoder import DecodeBatch, encode_prompt, request_generator
from dllm_viz.core.renoise_batch import RenoiseBatch
from dllm_viz.core.trace import StepRecord, Trace
from dllm_viz.models.base import Denoiser, check_cache, check_denoiser, model_max_length
from dllm_viz.serve.fair import Fairness, Lanes, QueueFull, Share
from dllm_viz.serve.memory import keep_freed_memory
from dllm_viz.serve.stream import Stream

__all__ = ["Engine", "EngineClosed", "Fairness", "QueueFull", "Stream"]

log = logging.getLogger(__name__)

OnStep = Callable[[StepRecord], None]


class EngineClosed(RuntimeError):
    """`submit` was called on an engine that is closed."""


@dataclass(eq=False)
class _Request:
    """A submitted request as the worker sees it."""

    future: Future[Trace]
    prompt_ids: list[int]
    config: DecodeConfig
    prompt_text: str | None
    on_step: OnStep | None
    client: Hashable = None  # who asked (`serve.fair`: clients are served in turn)
    work: Work = Work(0, 0)  # what it asks of the model at most

    def describe(self) -> str:
        """The request in a log line: enough to find it again, not its text."""
        c = self.config
        return f"request ({len(self.prompt_ids)} prompt ids, gen_length={c.gen_length}, seed={c.seed}, {c.schedule})"


def one_line(error: BaseException) -> str:
    """``Type: message`` on one line, for a log record per failure."""
    return " ".join(f"{type(error).__name__}: {error}".split())


class Engine:
    """A shared decoder: `submit` from any thread, one worker batches every running request.

    Args:
        model: a denoiser (`mask_token_id`, `(B, N) -> (B, N, V)` logits). Only the worker calls it.
        max_batch: slots, i.e. the most requests in one forward pass.
        max_queue: the most requests waiting for a slot; beyond it `submit` raises `QueueFull`.
        max_length: longest prompt + gen_length; defaults to `model.max_length` (then required).
        record_candidates: top-N raw candidates kept per masked position in each record.
        exact: deprecated and ignored (batch invariance is the model's: docs/engine.md); passing it warns.
        budget: the most work one request may ask for (`core.budget.Budget.max_cells`; None: any).
        fairness: per-client bounds and the stepping rule (`serve.fair.Fairness`); None: no bound
            per client, every running request in every forward (clients still take slots in turn).

    The futures stay pending until the trace is ready, so `future.cancel()` works while a request
    runs as well as while it waits; `future.running()` is therefore always False.
    """

    def __init__(
        self,
        model: Denoiser,
        *,
        max_batch: int = 8,
        max_queue: int = 64,
        max_length: int | None = None,
        record_candidates: int = 5,
        device: torch.device | str | None = None,
        exact: bool | None = None,
        budget: Budget | None = None,
        fairness: Fairness | None = None,
    ) -> None:
        if exact is not None:
            if not isinstance(exact, bool):
                raise ValueError(f"exact={short(exact)} is invalid: expected True or False (deprecated, ignored)")
            warnings.warn("Engine(exact=...) is deprecated and has no effect: the engine runs one forward over every "
                          "active request, and a row's logits are the model's to keep batch-invariant "
                          "(docs/engine.md)", DeprecationWarning, stacklevel=2)
        for name, value in (("max_batch", max_batch), ("max_queue", max_queue)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name}={value!r} is invalid: expected an integer >= 1")
        renoise = rules.canvas_of(model) == "renoise"  # a renoising model: its own batch (core.renoise_batch)
        if not renoise:
            check_denoiser(model)
        limit = model_max_length(model)
        if max_length is None:
            if limit is None and not renoise:
                raise ValueError("max_length=None is invalid: the model states no max_length, so pass one (>= 1)")
            max_length = limit
        elif not isinstance(max_length, int) or isinstance(max_length, bool) or max_length < 1:
            raise ValueError(f"max_length={max_length!r} is invalid: expected an integer >= 1")
        elif limit is not None and max_length > limit:
            raise ValueError(f"max_length={max_length} is invalid: expected at most the model's max_length={limit}")
        keep_freed_memory()  # a step's big tensors reuse the last step's memory (`serve.memory`)
        self.model = model
        self.max_batch, self.max_queue, self.max_length = max_batch, max_queue, max_length
        self.budget = Budget(max_length=max_length, max_cells=budget.max_cells if budget else None)
        vocab = getattr(model, "vocab_size", None)  # ids at or above it fail inside the forward
        self.vocab_size: int | None = vocab if isinstance(vocab, int) and not isinstance(vocab, bool) else None
        # The fixed per-request state buffers: allocated once here, reset by `add`, never regrown.
        kind = RenoiseBatch if renoise else DecodeBatch  # a renoising model's requests step in groups
        self._batch = kind(model, capacity=max_batch, max_length=max_length, record_candidates=record_candidates,
                           device=device)
        self._cond = threading.Condition()
        self._queue = Lanes(max_queue, fairness or Fairness())  # waiting for a slot; guarded by _cond
        self._share = Share(fairness or Fairness())  # who steps in each forward; worker thread only
        self._running: dict[int, _Request] = {}  # slot index -> request; worker thread only
        self._released: deque[float] = deque(maxlen=16)  # when the last slots were freed (the wait estimate)
        self._step_seconds = 0.0  # how long the last step took
        self._free = list(range(max_batch - 1, -1, -1))  # free slot indices, lowest popped first
        self._shared: torch.Generator | None = None  # the rng="shared" teaching switch's one stream
        self._closed = False
        self._counts = dict.fromkeys(("submitted", "completed", "failed", "cancelled", "rejected", "forward_calls",
                                      "steps_served"), 0)
        self._worker = threading.Thread(target=self._run, name="dllm-viz-engine", daemon=True)
        self._worker.start()

    # ----- client side ----------------------------------------------------------------------
    def submit(
        self, prompt: Sequence[int] | str, config: DecodeConfig | Mapping[str, Any], *, on_step: OnStep | None = None,
        client: Hashable = None,
    ) -> Future[Trace]:
        """Queue one request; returns a future of its `Trace`.

        `prompt` is a list of token ids, or text when the model has a tokenizer; `config` a
        `DecodeConfig` or a mapping of its fields. `on_step(record)` is called in the worker thread
        after each of the request's steps (keep it short: the whole batch waits for it); if it
        raises, the request fails with that exception. `client`: who asks (any hashable; see
        `serve.fair`). An invalid prompt or config gives a future that already holds the ValueError.
        Raises `QueueFull` when `max_queue` requests wait or the client is at its bound, and
        `EngineClosed` after `close()`.
        """
        future: Future[Trace] = Future()
        self._check_open()
        try:
            request = self._prepare(prompt, config, on_step, future)
            request.client = client
        except ValueError as err:
            log.warning("request refused at submit: %s", one_line(err))
            with self._cond:
                self._counts["submitted"] += 1
                self._counts["failed"] += 1
            future.set_running_or_notify_cancel()
            future.set_exception(err)
            return future
        with self._cond:
            self._check_open()
            self._drop_cancelled_queued()
            try:
                self._queue.push(request)
            except QueueFull:
                self._counts["rejected"] += 1
                raise
            self._counts["submitted"] += 1
            self._cond.notify()
        return future

    def waiting(self, future: Future[Trace]) -> tuple[int, float | None] | None:
        """Where the request of `future` waits: (requests that take a slot before it, an estimate of
        the seconds until it does: the step in progress when a slot is free for it, else the pace at
        which slots were freed lately; None before any was), or None once it runs or is done."""
        with self._cond:
            request = next((r for r in self._queue if r.future is future), None)
            ahead = None if request is None else self._queue.position(request)
            released, free = list(self._released), len(self._free)
        if ahead is None:
            return None
        if ahead < free:  # admitted at the next step boundary
            return ahead, round(self._step_seconds, 1)
        if len(released) < 2 or released[-1] == released[0]:
            return ahead, None
        per_slot = (released[-1] - released[0]) / (len(released) - 1)  # seconds between two freed slots
        return ahead, round((ahead - free + 1) * per_slot, 1)

    def stream(self, prompt: Sequence[int] | str, config: DecodeConfig | Mapping[str, Any]) -> Stream:
        """Submit and iterate: yields each `StepRecord` as it happens, then the final `Trace`."""
        stream = Stream()
        stream._attach(self.submit(prompt, config, on_step=stream._push))
        return stream

    @property
    def forward_calls(self) -> int:
        """Batched steps run so far: one model forward each (failed ones included)."""
        return self._counts["forward_calls"]

    def stats(self) -> dict[str, Any]:
        """A snapshot: occupancy now and on average, queue length, steps served, outcomes."""
        with self._cond:
            c = dict(self._counts)
            active, queued = len(self._running), len(self._queue)
            clients = len({r.client for r in self._queue})
        calls = c["forward_calls"]
        return {
            "capacity": self.max_batch,
            "active": active,  # requests in the batch now
            "queued": queued,  # requests waiting for a slot (cancelled ones until purged)
            "clients": clients,  # clients with a request waiting
            "mean_occupancy": round(c["steps_served"] / calls, 3) if calls else 0.0,  # requests per forward
            **c,
            "closed": self._closed,
        }

    def close(self, *, wait: bool = True, cancel_pending: bool = False) -> None:
        """Refuse new requests; finish (or, with `cancel_pending`, cancel) the accepted ones.

        `wait` joins the worker. Calling it again, or from an `on_step` callback, is safe.
        """
        with self._cond:
            self._closed = True
            pending = [*self._queue, *self._running.values()] if cancel_pending else []
            self._cond.notify_all()
        for request in pending:
            request.future.cancel()
        if wait and threading.current_thread() is not self._worker:
            self._worker.join()

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _check_open(self) -> None:
        if self._closed:
            raise EngineClosed("engine is closed: it accepts no new requests")

    def _prepare(self, prompt: Any, config: Any, on_step: Any, future: Future[Trace]) -> _Request:
        """Validate in the caller's thread, so a bad request never takes a queue place or a slot."""
        if isinstance(config, Mapping):
            config = DecodeConfig.from_dict(dict(config))
        if not isinstance(config, DecodeConfig):
            raise ValueError(f"config={short(config)} is invalid: expected a DecodeConfig or a mapping of its fields")
        if not isinstance(prompt, (str, Sequence)) or isinstance(prompt, bytes):
            raise ValueError(f"prompt={short(prompt)} is invalid: expected a list of token ids or a string")
        if on_step is not None and not callable(on_step):
            raise ValueError(f"on_step={short(on_step)} is invalid: expected a callable or None")
        if not isinstance(prompt, str):  # checked here too, so that a huge bad id is echoed clipped
            bad = next((i for i in prompt if isinstance(i, bool) or not isinstance(i, int) or i < 0), None)
            if bad is not None:
                raise ValueError(f"prompt_ids: {short(bad)} is invalid: expected non-negative integer token ids")
        text = prompt if isinstance(prompt, str) else None
        if isinstance(self._batch, RenoiseBatch):  # its settings against the checkpoint's, then its work
            ids, settings = self._batch.prepare(prompt, config)
            work = self.budget.check(settings, len(ids))
            return _Request(future=future, prompt_ids=ids, config=config, prompt_text=text, on_step=on_step, work=work)
        ids = encode_prompt(self.model, prompt)  # ids inside the model's vocabulary, or ValueError
        check_cache(self.model, config.cache)
        work = self.budget.check(config, len(ids))  # the canvas within max_length, the work within the budget
        return _Request(future=future, prompt_ids=ids, config=config, prompt_text=text, on_step=on_step, work=work)

    def _drop_cancelled_queued(self) -> None:
        """Remove cancelled requests from the queue (caller holds `_cond`)."""
        for request in self._queue.drop(lambda r: not r.future.cancelled()):
            request.future.set_running_or_notify_cancel()  # wakes `wait`/`as_completed` waiters
            self._counts["cancelled"] += 1

    # ----- worker side ----------------------------------------------------------------------
    def _run(self) -> None:
        try:
            while self._boundary():
                self._step()
        except BaseException as err:  # a bug in the engine itself: fail everything rather than hang callers
            with self._cond:
                self._closed = True
                stranded = [*self._queue.drop(lambda r: False), *self._running.values()]
            log.exception("engine worker stopped; failing its %d requests", len(stranded))
            for request in stranded:
                self._resolve(request, error=RuntimeError(f"engine worker stopped: {err!r}"))
            raise

    def _boundary(self) -> bool:
        """Between two steps: drop cancelled, admit queued. False when closed and drained."""
        with self._cond:
            while not self._queue and not self._running and not self._closed:
                self._cond.wait()
            if self._closed and not self._queue and not self._running:
                return False
            self._drop_cancelled_queued()
            admitted = self._queue.pop(len(self._free))
        for index, request in list(self._running.items()):
            if request.future.cancelled():
                self._leave(index, cancelled=True)
        for request in admitted:
            self._admit(request)
        return True

    def _admit(self, request: _Request) -> None:
        index = self._free.pop()
        config = request.config
        try:
            if config.rng == "shared" and not any(r.config.rng == "shared" for r in self._running.values()):
                # As in `decode`: the first shared-rng request in the batch seeds the one stream.
                self._shared = request_generator(config)
            self._batch.add(index, request.prompt_ids, config, request_generator(config),
                            request.prompt_text)
        except Exception as err:  # noqa: BLE001 - fail this request only (`add` checks before it writes)
            self._free.append(index)
            with self._cond:
                self._queue.finished(request)
            self._resolve(request, error=err)
            return
        with self._cond:
            self._running[index] = request
        if self._batch.slots[index].done:  # gen_length == 0: nothing to generate, no forward needed
            self._leave(index)

    def _step(self) -> None:
        """One step of the units `Share` picks, least served clients first: a masked batch's rows, one by one, in
        one forward (all of them without a stretch); a renoising batch's groups whole, one forward each (its rows
        share one cache). Each row stepped is charged to its client."""
        start, slots, atomic = time.monotonic(), self._batch.slots, self._batch.atomic
        units = [[(i, self._running[i].client, slots[i].length, slots[i].step) for i in unit]
                 for unit in self._batch.units()]
        chosen = self._share.choose_units(units if atomic else [[row] for unit in units for row in unit])
        forwards = chosen if atomic or not chosen else [[row for unit in chosen for row in unit]]
        for unit in forwards:
            self._step_rows([slot for slot, *_ in unit])
            self._share.charge((client, width) for _, client, width, _ in unit)
        self._step_seconds = time.monotonic() - start

    def _step_rows(self, indices: list[int]) -> None:
        """Step the requests in slots `indices`; on an exception, retry halves until it is pinned
        on single requests, which fail alone (a failed try changes no state: see the docstring)."""
        states = self._generator_states(indices)
        with self._cond:
            self._counts["forward_calls"] += 1
        wanted = any(self._running[i].on_step is not None for i in indices)  # else made at the end, all at once
        try:
            records = self._batch.step(self._shared, rows=indices, records=wanted)
        except Exception as err:  # noqa: BLE001 - isolated below; the engine goes on
            self._restore_generators(states)
            if len(indices) == 1 or self._batch.atomic:  # (a renoising group's rows share one cache: all fail)
                for index in indices:
                    self._leave(index, error=err)
                return
            half = len(indices) // 2
            self._step_rows(indices[:half])
            self._step_rows(indices[half:])
            return
        self._deliver(records, served=len(records) or (0 if wanted else len(indices)))
        for index in indices:  # done without a record: a step whose records come later, or a renoising request whose
            # canvas a neighbour's step ended
            if index in self._running and index not in records and self._batch.slots[index].done:
                self._leave(index)

    def _generator_states(self, indices: list[int]) -> list[tuple[torch.Generator, torch.Tensor]]:
        gens = [self._batch.slots[i].generator for i in indices] + ([self._shared] if self._shared is not None else [])
        return [(g, g.get_state()) for g in gens]

    @staticmethod
    def _restore_generators(states: list[tuple[torch.Generator, torch.Tensor]]) -> None:
        for gen, state in states:
            gen.set_state(state)

    def _deliver(self, records: dict[int, StepRecord], served: int) -> None:
        """Stream each new record to its request; resolve the requests that are done (`served`: rows stepped)."""
        with self._cond:
            self._counts["steps_served"] += served
        for index, record in records.items():
            request = self._running[index]
            if request.future.cancelled():
                continue  # leaves at the next boundary; nothing more is streamed
            if request.on_step is not None:
                try:
                    request.on_step(record)
                except Exception as err:  # noqa: BLE001 - a faulty callback fails its own request
                    self._leave(index, error=err)
                    continue
            if self._batch.slots[index].done:
                self._leave(index)

    def _leave(self, index: int, *, error: BaseException | None = None, cancelled: bool = False) -> None:
        """Resolve the request in slot `index` and free the slot."""
        request = self._running[index]
        trace = None
        if error is None and not cancelled:
            try:
                trace = self._batch.trace(index)
            except Exception as err:  # noqa: BLE001
                error = err
        self._batch.release(index)
        with self._cond:
            del self._running[index]
            self._queue.finished(request)
            self._released.append(time.monotonic())
        self._free.append(index)
        if not any(r.config.rng == "shared" for r in self._running.values()):
            self._shared = None
        self._resolve(request, trace=trace, error=error)

    def _resolve(self, request: _Request, *, trace: Trace | None = None, error: BaseException | None = None) -> None:
        future = request.future
        if not future.set_running_or_notify_cancel():  # cancelled by its owner meanwhile
            outcome = "cancelled"
        elif error is not None:
            log.warning("%s failed: %s", request.describe(), one_line(error))
            future.set_exception(error)
            outcome = "failed"
        else:
            future.set_result(trace)
            outcome = "completed"
        with self._cond:
            self._counts[outcome] += 1
