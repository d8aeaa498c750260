"""A step's records (`core.record`): made step by step (`step_records`), or at the end for a caller that reads
none as it goes (`Later`, `DecodeBatch.step(records=False)`): the same records either way; their candidates left
packed until read (`core.step_record.Unread`)."""
from __future__ import annotations

import copy

import pytest
import torch

from dllm_viz import DecodeConfig, decode, load_model
from dllm_viz.core.batch import DecodeBatch
from dllm_viz.core.decoder import request_generator
from dllm_viz.core.step_record import Unread, candidate_ids, quantize, quantize_many, rounded
from tests.tiny import TinyDenoiser

CONFIGS = [
    DecodeConfig(gen_length=12, schedule="fixed_steps", steps=6, temperature=0.0),
    DecodeConfig(gen_length=12, schedule="threshold", threshold=0.5, min_k=1, temperature=0.8, seed=3),
    DecodeConfig(gen_length=9, top_k=3, block_length=3, confidence="margin", temperature=0.5, seed=1),
    DecodeConfig.preset("llada", 12, steps=6),  # its confidence is another source: raw_confidence recorded
]


@pytest.fixture(scope="module")
def model():
    return TinyDenoiser()


def _dicts(traces):
    return [[rec.to_dict() for rec in t.steps] for t in traces]


@pytest.mark.parametrize("candidates", [0, 3])
def test_records_made_at_the_end_are_the_records_made_step_by_step(model, candidates: int) -> None:
    """Rows of different lengths and configs leave the batch at different steps; each trace's records are
    the same whether `decode` makes them as it goes (a reader: `on_step`) or all at the end (none)."""
    prompts = [[5, 6, 7], [8, 9], [10, 11, 12, 13], [14]]
    seen: list[int] = []
    eager = decode(model, prompts, CONFIGS, record_candidates=candidates, on_step=lambda i, rec: seen.append(i))
    later = decode(model, prompts, CONFIGS, record_candidates=candidates)
    assert len(seen) == sum(len(t.steps) for t in eager)
    assert _dicts(later) == _dicts(eager)
    assert [t.token_ids for t in later] == [t.token_ids for t in eager]
    assert any(rec.raw_confidence is not None for rec in later[3].steps)
    assert (later[0].steps[0].candidates is None) == (candidates == 0)


def test_a_step_without_a_reader_returns_no_record_and_the_trace_has_them_all(model) -> None:
    config = CONFIGS[0]
    batch = DecodeBatch(model, capacity=1, max_length=16, record_candidates=2)
    slot = batch.add(0, [5, 6], config, request_generator(config))
    assert batch.step(records=False) == {} and slot.records == [] and slot.step == 1
    assert set(batch.step()) == {0} and [r.step for r in slot.records] == [0, 1]  # a reader: the kept one first
    while batch.active():
        batch.step(records=False)
    trace = batch.trace(0)
    assert [r.step for r in trace.steps] == list(range(config.steps))
    assert _dicts([trace]) == _dicts(decode(model, [[5, 6]], config, record_candidates=2))  # (dicts: NaN is None)


def test_floats_rounded_by_tensor_ops_are_pythons_round() -> None:
    g = torch.Generator().manual_seed(0)
    x = torch.cat([torch.rand(20000, dtype=torch.float64, generator=g) * 40 - 20,
                   (torch.randint(-10**7, 10**7, (5000,), generator=g).double() + 0.5) / 1e6,  # half-way cases
                   torch.tensor([float("nan"), float("inf"), -float("inf"), -0.0, 1e-9, -1e-9, 2.5e-6, 1234.5678905],
                                dtype=torch.float64)])
    want = quantize(x.tolist())
    got = rounded(x).tolist()
    assert [str(v) for v in got] == [str(v) for v in want]  # (str: NaN equal to NaN, -0.0 apart from 0.0)
    a, b = x[:6].view(2, 3), x[6:10].float()
    assert quantize_many([a, b]) == [quantize(a.double()), quantize(b.double())]


def _unread(rec) -> bool:
    return isinstance(rec.__dict__.get("candidates"), Unread)


def test_candidates_stay_packed_until_read_and_read_as_lists(model) -> None:
    """`decode` leaves each record's candidates packed (`Unread`); the first read of either field gives both as
    lists: `[]` where the position was visible, the argmax first where masked, probabilities rounded, falling."""
    traces = decode(model, [[5, 6, 7], [8, 9]], CONFIGS[:2], record_candidates=3)
    records = [rec for t in traces for rec in t.steps]
    assert all(_unread(rec) for rec in records)
    ids_unread = [candidate_ids(t.steps) for t in traces]  # read from the packs, no lists made
    assert all(_unread(rec) for rec in records)
    for rec in records:
        probs = rec.candidate_probs  # either field first: both made
        assert not _unread(rec) and isinstance(rec.__dict__["candidates"], list)
        assert len(rec.candidates) == len(probs) == len(rec.argmax)
        for m, cands, ps in zip(rec.argmax, rec.candidates, probs):
            assert (cands == [] and ps == []) if m < 0 else (len(cands) == len(ps) == 3 and cands[0] == m)
            assert ps == quantize(ps) and ps == sorted(ps, reverse=True)
    for t, seen in zip(traces, ids_unread):
        assert seen == {i for rec in t.steps for cands in rec.candidates for i in cands} == candidate_ids(t.steps)


def test_a_trace_names_the_text_of_every_candidate_it_left_packed() -> None:
    trace = decode(load_model(), ["The cat"], DecodeConfig(gen_length=12, steps=6), record_candidates=4)[0]
    assert _unread(trace.steps[0])
    ids = {i for rec in trace.steps for cands in rec.candidates for i in cands}
    assert ids and ids <= set(trace.vocab)


def test_a_packed_record_set_or_copied_keeps_its_candidates(model) -> None:
    """Setting one of the two fields keeps the other's packed values; a copy, `to_dict` and `==` read them."""
    trace = decode(model, [[5, 6, 7]], CONFIGS[0], record_candidates=2)[0]
    first, second = trace.steps[0], trace.steps[1]
    copied = copy.deepcopy(second)
    assert copied.to_dict() == second.to_dict() and not _unread(second)
    probs = copy.deepcopy(first).candidate_probs
    first.candidates = None
    assert first.candidates is None and first.candidate_probs == probs
