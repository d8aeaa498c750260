"""Engine: continuous batching gives every request the trace it would get alone, and isolates failures.

The model here computes its logits in integer arithmetic, so padding, batch size and row order
cannot change a bit of them: "identical to `decode` alone" is then a property of the engine's
bookkeeping, checked exactly (records, order, tokens), not of floating-point luck. `Gate` lets a
test hold the worker inside a forward pass, which fixes who shares which step without sleeps.
"""
from __future__ import annotations

import logging
import threading
from concurrent.futures import CancelledError, Future

import pytest
import torch
import torch.nn.functional as F

from dllm_viz import DecodeConfig, Engine, decode
from dllm_viz.core.decoder import DecodeBatch, request_generator
from dllm_viz.serve.engine import EngineClosed, Fairness, QueueFull
from dllm_viz.core.trace import StepRecord, Trace

TIMEOUT = 30  # seconds; a bound against hangs, never a timing assertion


class IntMixer:
    """Bidirectional toy denoiser: `(B, N)` ids -> `(B, N, V)` logits, exact in int64.

    Position i sees the whole real canvas (a table row per token, summed), its two neighbours
    more strongly, and a position term, so what is confirmed first changes what comes next.
    """

    def __init__(self, vocab: int = 32, mask_token_id: int = 0, max_length: int = 64) -> None:
        g = torch.Generator().manual_seed(1234)
        self.table = torch.randint(-6, 7, (vocab, vocab), generator=g)  # (V, V) context weights
        self.near = torch.randint(-6, 7, (vocab, vocab), generator=g)  # (V, V) neighbour weights
        self.pos = torch.randint(-4, 5, (max_length, vocab), generator=g)  # (N, V)
        self.mask_token_id, self.max_length, self.name = mask_token_id, max_length, "int-mixer"

    def __call__(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        B, N = input_ids.shape
        real = torch.ones(B, N, dtype=torch.bool) if attention_mask is None else attention_mask
        real = real.long().unsqueeze(-1)  # (B, N, 1)
        context = (self.table[input_ids] * real).sum(1, keepdim=True)  # (B, 1, V)
        near = self.near[input_ids] * real  # (B, N, V)
        side = F.pad(near[:, 1:], (0, 0, 0, 1)) + F.pad(near[:, :-1], (0, 0, 1, 0))  # (B, N, V)
        return (context + 4 * side + self.pos[:N]).float() / 8


class Gate:
    """Wraps a model: counts forwards, records batch sizes, can hold a forward or fail one."""

    def __init__(self, model: IntMixer) -> None:
        self.model = model
        self.mask_token_id, self.max_length, self.name = model.mask_token_id, model.max_length, model.name
        self.calls = 0
        self.batch_sizes: list[int] = []
        self.padded: list[bool] = []  # per forward: did any row carry padding?
        self.fail_at: int | None = None  # 1-based forward index that raises
        self.entered = threading.Event()  # set when a held forward has started
        self._resume = threading.Event()
        self._resume.set()

    def hold(self) -> None:
        """The next forward blocks (after `entered` is set) until `resume()`."""
        self.entered.clear()
        self._resume.clear()

    def resume(self) -> None:
        self._resume.set()

    def __call__(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        self.calls += 1
        self.batch_sizes.append(input_ids.shape[0])
        self.padded.append(attention_mask is not None and not bool(attention_mask.all()))
        fail = self.calls == self.fail_at
        if not self._resume.is_set():
            self.entered.set()
            assert self._resume.wait(TIMEOUT)
        if fail:
            raise RuntimeError(f"injected model failure at forward {self.calls}")
        return self.model(input_ids, attention_mask)


def prompt(length: int, salt: int) -> list[int]:
    return [1 + (7 * i + 3 * salt) % 31 for i in range(length)]


MIXED = [
    DecodeConfig(gen_length=12, top_k=3, temperature=1.0, seed=1),
    DecodeConfig(gen_length=16, schedule="fixed_steps", steps=8, temperature=0.7, seed=2),
    DecodeConfig(gen_length=10, schedule="threshold", threshold=0.5, temperature=0.0, seed=3),
    DecodeConfig(gen_length=16, schedule="adaptive", top_k=4, block_length=8, confidence="margin", seed=4),
    DecodeConfig(gen_length=8, top_k=1, temperature=1.3, confidence="entropy", top_p=0.8, seed=5),
    DecodeConfig(gen_length=12, top_k=4, temperature_stages=(1.2, 1.0, 0.7), vocab_top_k=5, seed=6),
    DecodeConfig(gen_length=9, top_k=2, confidence="random", temperature=2.0, seed=7),
    DecodeConfig(gen_length=12, top_k=3, temperature=1.5, confidence_from="tempered", seed=8),
    DecodeConfig(gen_length=12, top_k=3, confidence_from="sampled", sample_scope="all", seed=9),
    DecodeConfig(gen_length=16, top_k=8, decay=0.5, block_length=4, block_schedule="restart", seed=10),
]


def assert_same_trace(got: Trace, want: Trace) -> None:
    """Everything but the wall time: ids, order, and every record field by field."""
    assert got.prompt_ids == want.prompt_ids
    assert got.token_ids == want.token_ids
    assert got.order == want.order
    assert len(got.steps) == len(want.steps)
    for a, b in zip(got.steps, want.steps):
        assert a.to_dict() == b.to_dict()
    assert got.config == want.config


@pytest.fixture
def gate() -> Gate:
    return Gate(IntMixer())


def test_concurrent_mixed_requests_match_decode_alone(gate: Gate) -> None:
    """Invariant: a request's trace in the engine is the one decode() gives it alone."""
    jobs = [(prompt(length, salt), MIXED[(salt + t) % len(MIXED)])
            for t in range(4) for salt, length in enumerate((0, 3, 7, 12, 5, 1), start=6 * t)]
    futures: dict[int, Future[Trace]] = {}
    with Engine(gate, max_batch=4, max_queue=len(jobs)) as engine:
        gate.hold()
        blocker = engine.submit(prompt(4, 99), MIXED[0])
        assert gate.entered.wait(TIMEOUT)  # the worker is inside its first forward

        def client(t: int) -> None:
            for i in range(t, len(jobs), 4):
                futures[i] = engine.submit(*jobs[i])

        threads = [threading.Thread(target=client, args=(t,)) for t in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        gate.resume()
        traces = {i: f.result(TIMEOUT) for i, f in futures.items()}
        blocker.result(TIMEOUT)
        stats = engine.stats()
    model = IntMixer()
    for i, (ids, config) in enumerate(jobs):
        assert_same_trace(traces[i], decode(model, [ids], config)[0])
    total_steps = sum(len(t.steps) for t in traces.values()) + len(blocker.result().steps)
    assert stats["completed"] == len(jobs) + 1 and stats["failed"] == stats["cancelled"] == 0
    assert stats["steps_served"] == total_steps
    assert engine.forward_calls == gate.calls < total_steps  # forwards were shared
    # One forward for every active request: rows of different lengths padded together (the model
    # keeps a row's logits independent of the others; this one computes in integers).
    assert max(gate.batch_sizes) == 4 and any(gate.padded)


def test_stream_yields_each_record_then_the_trace(gate: Gate) -> None:
    config = MIXED[3]
    want = decode(IntMixer(), [prompt(5, 1)], config)[0]
    with Engine(gate, max_batch=2) as engine:
        items = list(engine.stream(prompt(5, 1), config))
    assert all(isinstance(r, StepRecord) for r in items[:-1]) and isinstance(items[-1], Trace)
    assert [r.to_dict() for r in items[:-1]] == [r.to_dict() for r in want.steps]
    assert_same_trace(items[-1], want)


def test_on_step_callback_sees_steps_in_order(gate: Gate) -> None:
    seen: list[int] = []
    with Engine(gate) as engine:
        trace = engine.submit(prompt(3, 2), MIXED[0], on_step=lambda r: seen.append(r.step)).result(TIMEOUT)
    assert seen == list(range(len(trace.steps)))


def test_cancel_running_request_leaves_at_next_step_boundary(gate: Gate) -> None:
    config = DecodeConfig(gen_length=20, top_k=1, seed=0)  # 20 steps if left alone
    seen: list[StepRecord] = []
    holder: list[Future[Trace]] = []

    def on_step(record: StepRecord) -> None:
        seen.append(record)
        if len(seen) == 3:
            assert holder[0].cancel()

    with Engine(gate, max_batch=2) as engine:
        future = engine.submit(prompt(4, 0), config, on_step=on_step)
        holder.append(future)
        with pytest.raises(CancelledError):
            future.result(TIMEOUT)
        after = engine.submit(prompt(4, 1), MIXED[0]).result(TIMEOUT)  # the slot is usable again
        stats = engine.stats()
    assert len(seen) == 3  # nothing streamed after the cancel
    assert gate.calls == 3 + len(after.steps)  # no forward ran for it after the boundary
    assert stats["cancelled"] == 1 and stats["completed"] == 1 and stats["active"] == 0


def test_cancel_queued_request_never_runs(gate: Gate) -> None:
    with Engine(gate, max_batch=1) as engine:
        gate.hold()
        first = engine.submit(prompt(3, 0), MIXED[0])
        assert gate.entered.wait(TIMEOUT)
        queued = engine.submit(prompt(3, 1), MIXED[1], on_step=lambda r: pytest.fail("cancelled request ran"))
        assert queued.cancel()
        gate.resume()
        first.result(TIMEOUT)
        engine.close()
        stats = engine.stats()
    assert queued.cancelled() and stats["cancelled"] == 1
    assert gate.calls == len(first.result().steps)


def test_stream_cancel_ends_iteration_with_cancelled_error(gate: Gate) -> None:
    with Engine(gate) as engine:
        stream = engine.stream(prompt(2, 0), DecodeConfig(gen_length=16, top_k=1))
        first = next(stream)
        assert isinstance(first, StepRecord) and stream.cancel()
        with pytest.raises(CancelledError):
            list(stream)
        assert engine.submit(prompt(2, 0), MIXED[0]).result(TIMEOUT).token_ids


def test_full_queue_raises_at_once_and_frees_after_cancel(gate: Gate) -> None:
    with Engine(gate, max_batch=1, max_queue=2) as engine:
        gate.hold()
        running = engine.submit(prompt(3, 0), MIXED[0])
        assert gate.entered.wait(TIMEOUT)
        waiting = [engine.submit(prompt(3, i), MIXED[0]) for i in (1, 2)]
        with pytest.raises(QueueFull, match="max_queue=2"):
            engine.submit(prompt(3, 3), MIXED[0])
        assert isinstance(QueueFull("x"), RuntimeError)
        assert waiting[1].cancel()
        late = engine.submit(prompt(3, 4), MIXED[0])  # the cancelled one's place is free again
        gate.resume()
        for f in (running, waiting[0], late):
            assert f.result(TIMEOUT).token_ids
        stats = engine.stats()
    assert stats["rejected"] == 1 and stats["cancelled"] == 1 and stats["completed"] == 3


@pytest.mark.parametrize(
    ("bad_prompt", "bad_config", "names"),
    [
        ([1, 2], {"gen_length": 8, "temperatur": 1.0}, "temperatur"),
        ([1, 2], {"gen_length": 8, "decay": 1.5}, "decay"),
        ([1, 0, 2], MIXED[0], "prompt_ids"),  # contains the mask token
        ([1] * 60, MIXED[1], "max_length=64"),  # 60 + 16 positions
        ("text", MIXED[0], "tokenizer"),  # the model has none
        (7, MIXED[0], "prompt"),
        ([1, 2], "balanced", "config"),
    ],
)
def test_invalid_request_fails_only_its_own_future(gate: Gate, bad_prompt, bad_config, names: str) -> None:
    with Engine(gate, max_batch=2) as engine:
        gate.hold()
        good = engine.submit(prompt(4, 0), MIXED[2])
        assert gate.entered.wait(TIMEOUT)
        bad = engine.submit(bad_prompt, bad_config)
        assert bad.done()  # failed at once, without a queue place or a slot
        with pytest.raises(ValueError, match=names):
            bad.result()
        gate.resume()
        assert_same_trace(good.result(TIMEOUT), decode(IntMixer(), [prompt(4, 0)], MIXED[2])[0])
        stats = engine.stats()
    assert stats["failed"] == 1 and stats["completed"] == 1 and stats["queued"] == 0


def test_a_failed_forward_is_retried_and_every_request_stays_exact(gate: Gate) -> None:
    """A forward that fails once (no request to blame) is retried in halves: nobody fails."""
    with Engine(gate, max_batch=4) as engine:
        gate.hold()
        a = engine.submit(prompt(3, 0), MIXED[0])
        assert gate.entered.wait(TIMEOUT)  # forward 1 holds request a alone
        b = engine.submit(prompt(5, 1), MIXED[1])
        c = engine.submit(prompt(2, 2), MIXED[2])
        gate.fail_at = 2  # the forward in which b and c join a
        gate.resume()
        traces = [f.result(TIMEOUT) for f in (a, b, c)]
        stats = engine.stats()
    assert gate.batch_sizes[:4] == [1, 3, 1, 2]  # the failed forward, then its halves
    for trace, (ids, config) in zip(traces, [(prompt(3, 0), MIXED[0]), (prompt(5, 1), MIXED[1]),
                                             (prompt(2, 2), MIXED[2])]):
        assert_same_trace(trace, decode(IntMixer(), [ids], config)[0])
    assert stats["failed"] == 0 and stats["completed"] == 3 and stats["active"] == 0


class Poisoned:
    """A model that raises whenever one given prompt is in the batch (a request-specific failure)."""

    def __init__(self, model: IntMixer, poison: list[int]) -> None:
        self.model, self.poison = model, torch.tensor(poison)
        self.mask_token_id, self.max_length, self.name = model.mask_token_id, model.max_length, model.name
        self.calls = 0

    def __call__(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        self.calls += 1
        P = len(self.poison)
        if (input_ids[:, :P] == self.poison).all(-1).any():
            raise IndexError("poisoned request in the batch")
        return self.model(input_ids, attention_mask)


def test_a_request_that_breaks_the_forward_fails_alone() -> None:
    """No valid request fails because of another: the culprit is isolated, the rest stay exact."""
    bad = [9, 9, 9, 9, 9]
    model = Poisoned(IntMixer(), bad)
    # Three share the culprit's canvas length, four do not; all share its forward.
    jobs = [(prompt(5, salt), MIXED[1]) for salt in range(3)]
    jobs += [(prompt(length, salt), MIXED[salt]) for salt, length in ((3, 3), (4, 7), (5, 2), (6, 5))]
    with Engine(model, max_batch=8) as engine:
        gate_model = engine.model
        futures = [engine.submit(ids, config) for ids, config in jobs[:3]]
        culprit = engine.submit(bad, MIXED[1])
        futures += [engine.submit(ids, config) for ids, config in jobs[3:]]
        with pytest.raises(IndexError, match="poisoned"):
            culprit.result(TIMEOUT)
        traces = [f.result(TIMEOUT) for f in futures]
        after = engine.submit(prompt(4, 1), MIXED[0]).result(TIMEOUT)  # the next request succeeds too
        stats = engine.stats()
    assert gate_model is model
    for trace, (ids, config) in zip(traces, jobs):
        assert_same_trace(trace, decode(IntMixer(), [ids], config)[0])
    assert_same_trace(after, decode(IntMixer(), [prompt(4, 1)], MIXED[0])[0])
    assert stats["failed"] == 1 and stats["completed"] == len(jobs) + 1


def test_failing_forward_leaves_batch_state_unchanged() -> None:
    """DecodeBatch.step runs the forward before touching any state: a retry continues exactly."""
    gate = Gate(IntMixer())
    gate.fail_at = 3
    jobs = [(prompt(4, 0), MIXED[0]), (prompt(6, 1), MIXED[5])]
    batch = DecodeBatch(gate, capacity=2, max_length=gate.max_length)
    for i, (ids, config) in enumerate(jobs):
        batch.add(i, ids, config, request_generator(config))
    failures = 0
    while batch.active():
        try:
            batch.step()
        except RuntimeError:
            failures += 1
    assert failures == 1
    for i, (ids, config) in enumerate(jobs):
        assert_same_trace(batch.trace(i), decode(IntMixer(), [ids], config)[0])


def test_step_rows_steps_those_slots_and_leaves_the_others_untouched() -> None:
    """The engine asks the batch to step a subset (`rows=`); it never edits the batch's state itself."""
    model = IntMixer()
    jobs = [(prompt(4, 0), MIXED[0]), (prompt(6, 1), MIXED[1]), (prompt(5, 2), MIXED[6])]
    batch = DecodeBatch(model, capacity=3, max_length=model.max_length)
    for i, (ids, config) in enumerate(jobs):
        batch.add(i, ids, config, request_generator(config))
    waiting = batch.slots[1]
    canvas, rng = batch.canvas[1].clone(), waiting.generator.get_state()
    for _ in range(2):
        assert set(batch.step(rows=[2, 0])) == {0, 2}
    assert torch.equal(batch.canvas[1], canvas) and torch.equal(waiting.generator.get_state(), rng)
    assert (waiting.step, waiting.records, batch.slots[0].step) == (0, [], 2)
    with pytest.raises(ValueError, match=r"^rows=\[1, 5\] is invalid: slot\(s\) \[5\] hold no unfinished request"):
        batch.step(rows=[1, 5])
    while batch.active():
        batch.step(rows=batch.active()[-1:])  # one slot at a time, the last first
    for i, (ids, config) in enumerate(jobs):
        assert_same_trace(batch.trace(i), decode(IntMixer(), [ids], config)[0])


def test_failing_on_step_callback_fails_only_its_request(gate: Gate) -> None:
    def boom(record: StepRecord) -> None:
        raise KeyError("callback bug")

    with Engine(gate, max_batch=2) as engine:
        bad = engine.submit(prompt(3, 0), MIXED[0], on_step=boom)
        good = engine.submit(prompt(3, 1), MIXED[1])
        with pytest.raises(KeyError):
            bad.result(TIMEOUT)
        assert_same_trace(good.result(TIMEOUT), decode(IntMixer(), [prompt(3, 1)], MIXED[1])[0])


def test_shared_rng_alone_matches_decode(gate: Gate) -> None:
    config = DecodeConfig(gen_length=12, top_k=2, rng="shared", seed=11)
    with Engine(gate) as engine:
        got = engine.submit(prompt(4, 0), config).result(TIMEOUT)
    assert_same_trace(got, decode(IntMixer(), [prompt(4, 0)], config)[0])


def test_nothing_to_generate_resolves_without_forward(gate: Gate) -> None:
    with Engine(gate) as engine:
        trace = engine.submit(prompt(4, 0), DecodeConfig(gen_length=0)).result(TIMEOUT)
    assert trace.token_ids == [] and trace.steps == [] and gate.calls == 0


def test_slot_buffers_are_allocated_once_and_recycled(gate: Gate) -> None:
    with Engine(gate, max_batch=2) as engine:
        buffers = {name: getattr(engine._batch, name).data_ptr() for name in ("canvas", "attention", "order", "k")}
        futures = [engine.submit(prompt(1 + i % 5, i), MIXED[i % len(MIXED)]) for i in range(12)]
        traces = [f.result(TIMEOUT) for f in futures]
        after = {name: getattr(engine._batch, name).data_ptr() for name in buffers}
    assert after == buffers
    assert_same_trace(traces[-1], decode(IntMixer(), [prompt(1 + 11 % 5, 11)], MIXED[11 % len(MIXED)])[0])


def test_closed_engine_rejects_submits_and_finishes_accepted_ones(gate: Gate) -> None:
    engine = Engine(gate, max_batch=2)
    accepted = engine.submit(prompt(3, 0), MIXED[0])
    engine.close()
    engine.close()  # idempotent
    assert accepted.result(TIMEOUT).token_ids  # close() finishes what it accepted
    with pytest.raises(EngineClosed):
        engine.submit(prompt(3, 0), MIXED[0])
    assert isinstance(EngineClosed("x"), RuntimeError)
    assert engine.stats()["closed"] and not engine._worker.is_alive()


def test_close_with_cancel_pending_cancels_everything(gate: Gate) -> None:
    engine = Engine(gate, max_batch=1)
    gate.hold()
    running = engine.submit(prompt(3, 0), DecodeConfig(gen_length=16, top_k=1))
    assert gate.entered.wait(TIMEOUT)
    queued = engine.submit(prompt(3, 1), MIXED[0])
    engine.close(wait=False, cancel_pending=True)
    gate.resume()
    engine.close()  # joins the worker
    assert running.cancelled() and queued.cancelled()
    assert not engine._worker.is_alive() and gate.calls == 1
    assert engine.stats()["cancelled"] == 2


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [({"max_batch": 0}, "max_batch"), ({"max_queue": -1}, "max_queue"), ({"max_length": 65}, "max_length"),
     ({"max_batch": True}, "max_batch")],
)
def test_invalid_engine_arguments(kwargs: dict, name: str) -> None:
    with pytest.raises(ValueError, match=name):
        Engine(IntMixer(), **kwargs)


def test_max_length_required_when_model_states_none() -> None:
    model = IntMixer()
    del model.max_length
    with pytest.raises(ValueError, match="max_length"):
        Engine(model)
    with Engine(model, max_length=32) as engine:
        assert engine.submit(prompt(2, 0), MIXED[0]).result(TIMEOUT).token_ids


def test_each_failed_request_is_logged_once_on_one_line(caplog: pytest.LogCaptureFixture) -> None:
    bad = [9, 9, 9, 9, 9]
    with caplog.at_level(logging.WARNING, logger="dllm_viz.serve.engine"):
        with Engine(Poisoned(IntMixer(), bad), max_batch=4) as engine:
            good = engine.submit(prompt(5, 0), MIXED[1])
            culprit = engine.submit(bad, MIXED[1])
            refused = engine.submit([1, 2], {"gen_length": 8, "decay": 1.5})
            good.result(TIMEOUT)
            for future in (culprit, refused):
                with pytest.raises((IndexError, ValueError)):
                    future.result(TIMEOUT)
    lines = [r.getMessage() for r in caplog.records if r.name == "dllm_viz.serve.engine"]
    assert len(lines) == 2 and all("\n" not in line for line in lines), lines
    (failed,) = [line for line in lines if "IndexError" in line]
    assert "5 prompt ids" in failed and f"gen_length={MIXED[1].gen_length}" in failed
    assert failed.endswith("IndexError: poisoned request in the batch")
    (at_submit,) = [line for line in lines if "decay=1.5" in line]
    assert at_submit.startswith("request refused at submit: ValueError")


def test_exact_is_deprecated_and_changes_nothing(gate: Gate) -> None:
    """Batch invariance is the model's (docs/engine.md): `exact` no longer splits the step by length."""
    jobs = [(prompt(3, 0), MIXED[0]), (prompt(7, 1), MIXED[1])]
    with pytest.warns(DeprecationWarning, match=r"Engine\(exact=\.\.\.\) is deprecated"):
        engine = Engine(gate, max_batch=2, exact=True)
    with engine:
        gate.hold()
        futures = [engine.submit(*jobs[0])]
        assert gate.entered.wait(TIMEOUT)
        futures.append(engine.submit(*jobs[1]))
        gate.resume()
        traces = [f.result(TIMEOUT) for f in futures]
    assert 2 in gate.batch_sizes  # the two canvas lengths shared a forward
    for trace, (ids, config) in zip(traces, jobs):
        assert_same_trace(trace, decode(IntMixer(), [ids], config)[0])
    with pytest.raises(ValueError, match="^exact='yes' is invalid"):
        Engine(gate, exact="yes")


# ----- clients (serve/fair.py) ---------------------------------------------------------------------
def test_clients_share_the_forwards_and_every_request_stays_exact(gate: Gate) -> None:
    """With a stretch, forwards hold the least-served clients' rows only: fewer rows than are running,
    and still every request bit-identical to the request alone (issue 42)."""
    jobs = [(prompt(2 + i % 5, i), MIXED[i % len(MIXED)], "heavy" if i < 6 else f"light{i}") for i in range(9)]
    with Engine(gate, max_batch=9, fairness=Fairness(stretch=2, min_width=1)) as engine:
        gate.hold()
        futures = [engine.submit(ids, config, client=client) for ids, config, client in jobs]
        assert gate.entered.wait(TIMEOUT)
        gate.resume()
        traces = [f.result(TIMEOUT) for f in futures]
    for trace, (ids, config, _) in zip(traces, jobs):
        assert_same_trace(trace, decode(IntMixer(), [ids], config)[0])
    assert max(gate.batch_sizes) < 9  # nobody ran a forward of all nine: the stretch kept them narrow


def test_a_newcomer_waits_behind_one_request_of_each_client(gate: Gate) -> None:
    with Engine(gate, max_batch=1, fairness=Fairness(client_requests=8)) as engine:
        gate.hold()
        heavy = [engine.submit(prompt(3, i), MIXED[0], client="heavy") for i in range(6)]
        assert gate.entered.wait(TIMEOUT)  # heavy[0] holds the slot
        newcomer = engine.submit(prompt(3, 9), MIXED[1], client="new")
        assert engine.waiting(newcomer)[0] == 0 and engine.waiting(heavy[5])[0] == 5
        assert engine.waiting(heavy[0]) is None  # running
        with pytest.raises(QueueFull, match="at most 8 at once"):
            for i in range(3):
                engine.submit(prompt(3, i), MIXED[0], client="heavy")
        assert engine.stats()["rejected"] == 1 and engine.stats()["clients"] == 2
        gate.resume()
        done_order = []
        for f in [*heavy, newcomer]:
            f.add_done_callback(lambda f: done_order.append(f))
        newcomer.result(TIMEOUT)
        assert done_order.index(newcomer) <= 2  # the second to run, not the seventh
        for f in heavy:
            f.result(TIMEOUT)
