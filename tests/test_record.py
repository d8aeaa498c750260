"""A step's records (`core.record`): made step by step (`step_records`), or at the end for a caller that reads
none as it goes (`Later`, `DecodeBatch.step(records=False)`): the same records either way."""
from __future__ import annotations

import pytest
import torch

from dllm_viz import DecodeConfig, decode
from dllm_viz.core.batch import DecodeBatch
from dllm_viz.core.decoder import request_generator
from dllm_viz.core.step_record import quantize, quantize_many, rounded
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
