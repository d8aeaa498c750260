"""The glue around the step (`dllm_viz.core.canvas`), function by function, on hand-made tensors.

End to end, the decoder (tests/test_decoder.py, tests/test_engine.py) and the SGLang adapter
(tests/test_serve_blocks.py) both run it and are checked against `decode` and a reference.
"""
from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from dllm_viz import DecodeConfig
from dllm_viz.core.canvas import (
    PerRows, RowSet, Spans, candidate_logits, commit, constant_temperature, draw_noise, step_temperature,
)
from dllm_viz.core.end_of_text import end_of_text_ids
from dllm_viz.core.schedules import temperature_at


def test_spans_read_and_write_through_the_scratch_column() -> None:
    # Two canvas rows of N = 6 plus the scratch column 6; spans of 3 from 2 and of 1 from 4.
    spans = Spans.at(torch.tensor([2, 4]), torch.tensor([3, 1]), scratch=6)
    assert spans.width == 3
    assert spans.pos.tolist() == [[2, 3, 4], [4, 6, 6]]
    assert spans.valid.tolist() == [[True, True, True], [True, False, False]]
    rows = torch.arange(14).view(2, 7)
    assert spans.read(rows).tolist() == [[2, 3, 4], [11, 13, 13]]
    written = spans.write(rows, torch.tensor([[-1, -2, -3], [-4, -5, -6]]))
    assert written[0].tolist() == [0, 1, -1, -2, -3, 5, 6]
    assert written[1, :6].tolist() == [7, 8, 9, 10, -4, 12]  # past the span: only the scratch column changed
    assert rows[0, 2] == 2  # a new tensor; the input is untouched


def test_candidate_logits_never_propose_the_mask() -> None:
    logits = torch.tensor([[1.0, 9.0, 2.0], [0.5, 0.1, 3.0]], dtype=torch.bfloat16)
    out = candidate_logits(logits, mask_id=1)
    assert out.shape == (2, 1, 3) and out.dtype == torch.float32
    assert out[:, 0, 1].tolist() == [float("-inf")] * 2
    assert out[:, 0, 0].tolist() == [1.0, 0.5] and logits[0, 1] == 9.0  # a bf16 input is converted, not edited


def test_each_row_draws_its_own_uniforms() -> None:
    gens = [torch.Generator().manual_seed(s) for s in (1, 2)]
    noise = draw_noise(gens, [3, 1])
    assert noise.shape == (2, 2, 3)
    assert torch.equal(noise[0], torch.rand(2, 3, generator=torch.Generator().manual_seed(1)))
    assert torch.equal(noise[1, :, :1], torch.rand(2, 1, generator=torch.Generator().manual_seed(2)))
    assert noise[1, :, 1:].eq(0).all()  # padding past the row's span
    assert draw_noise([], []).shape == (0, 2, 0)


def test_one_row_draws_in_one_call_the_uniforms_it_draws_beside_others() -> None:
    """A lone row's (1, 2, G) uniforms come from one `rand` in that shape: the very values, in the same order, that
    `rand(2, G)` gives it beside other rows, for widths on either side of the vectorised generator's blocks."""
    for G in (1, 7, 16, 17, 128):
        alone = draw_noise([torch.Generator().manual_seed(G)], [G])
        beside = draw_noise([torch.Generator().manual_seed(G), torch.Generator().manual_seed(0)], [G, G])
        assert alone.shape == (1, 2, G) and torch.equal(alone[0], beside[0])
    calls = []
    real = torch.rand

    def counted(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)

    torch.rand = counted
    try:
        draw_noise([torch.Generator()], [5])
    finally:
        torch.rand = real
    assert calls == [(1, 2, 5)]  # drawn in its shape: no stack after it


def test_staged_temperature_is_looked_up_only_when_a_row_stages_it() -> None:
    plain = [DecodeConfig(gen_length=8, temperature=0.7), DecodeConfig(gen_length=4, temperature=0.0)]
    assert constant_temperature(plain).tolist() == pytest.approx([0.7, 0.0])
    staged = [plain[0], DecodeConfig(gen_length=9, top_k=3, temperature_stages=(1.2, 1.0, 0.7))]
    assert constant_temperature(staged) is None
    got = step_temperature(staged, steps=[0, 2], left=[8, 3])
    assert got.tolist() == pytest.approx([0.7, temperature_at(staged[1], 2, 1 - 3 / 9)])
    asked = []
    rows = RowSet.build(plain, Spans.at(torch.tensor([0, 0]), torch.tensor([8, 4]), 8), end_of_text_ids=(),
                        device="cpu")
    assert rows.temperature_at(plain, [0, 0], lambda: asked.append(1) or [8, 4]).tolist() == pytest.approx([0.7, 0])
    assert asked == []  # constant: the masks left are not even counted (a device sync in SGLang)


def test_row_sets_are_rebuilt_when_a_member_changes_only() -> None:
    cache: PerRows[str] = PerRows()
    a, b, c = object(), object(), object()
    assert cache.get([a, b], lambda: "ab") == "ab"
    assert cache.get((a, b), lambda: "other") == "ab" and cache.builds == 1
    assert cache.get([a, c], lambda: "ac") == "ac"  # a finished request replaced by a new one
    assert cache.get([a], lambda: "a") == "a" and cache.builds == 3
    cache.clear()
    assert cache.get([a], lambda: "again") == "again"


def test_commit_writes_the_selected_tokens_and_their_step() -> None:
    result = SimpleNamespace(selected=torch.tensor([[True, False, True], [False, False, False]]),
                             tokens=torch.tensor([[7, -1, 9], [-1, -1, -1]]), revision=None)
    span = torch.tensor([[0, 5, 0], [0, 0, 4]])
    order = torch.tensor([[-1, 0, -1], [-1, -1, 1]])
    done = commit(result, span, order=order, step=torch.tensor([3, 2]))
    assert done.span.tolist() == [[7, 5, 9], [0, 0, 4]]
    assert done.order.tolist() == [[3, 0, 3], [-1, -1, 1]]
    assert span.tolist() == [[0, 5, 0], [0, 0, 4]]  # inputs untouched
    assert commit(result, span).order is None
    with pytest.raises(ValueError, match="^step is invalid"):
        commit(result, span, order=order)


@pytest.mark.parametrize("revised", [False, True])
def test_one_step_number_for_every_row_commits_as_the_rows_own(revised) -> None:
    """Issue 40: `decode`'s rows share their step number, given as one int (one fill); span and order are the
    ones each row's own number gives, with a revision rule's rewrites and re-masks too."""
    g = torch.Generator().manual_seed(3)
    selected = torch.rand(3, 6, generator=g) < 0.4
    plan = SimpleNamespace(edited=torch.rand(3, 6, generator=g) < 0.3, edit_tokens=torch.randint(1, 9, (3, 6)),
                           remasked=torch.rand(3, 6, generator=g) < 0.2, rewrites=True) if revised else None
    if plan is not None:  # confirmations touch masked positions, rewrites and re-masks visible ones: disjoint
        plan.edited &= ~selected
        plan.remasked &= ~selected & ~plan.edited
    result = SimpleNamespace(selected=selected, tokens=torch.where(selected, torch.randint(1, 9, (3, 6)), -1),
                             revision=plan)
    span, order = torch.randint(0, 9, (3, 6)), torch.randint(-1, 4, (3, 6))
    one = commit(result, span, order=order, step=5, mask_id=0)
    each = commit(result, span, order=order, step=torch.tensor([5, 5, 5]), mask_id=0)
    assert torch.equal(one.span, each.span) and torch.equal(one.order, each.order)
    assert one.order.dtype == order.dtype and (one.order[selected] == 5).all()


def test_commit_writes_what_a_revision_rule_took_back_and_rewrote() -> None:
    """Issue 28: a confirmation, a rewrite and a re-mask in one step, each in the span and the order."""
    plan = SimpleNamespace(edited=torch.tensor([[False, True, False, False]]),
                           edit_tokens=torch.tensor([[-1, 8, -1, -1]]),
                           remasked=torch.tensor([[False, False, True, False]]), rewrites=True)
    result = SimpleNamespace(selected=torch.tensor([[True, False, False, False]]),
                             tokens=torch.tensor([[6, -1, -1, -1]]),
                             revision=plan)
    span, order = torch.tensor([[0, 5, 4, 3]]), torch.tensor([[-1, 0, 1, 1]])
    done = commit(result, span, order=order, step=torch.tensor([2]), mask_id=0)
    assert done.span.tolist() == [[6, 8, 0, 3]]  # confirmed, rewritten, taken back, kept
    assert done.order.tolist() == [[2, 2, -1, 1]]  # decided now (twice), masked again, as it was
    with pytest.raises(ValueError, match="^mask_id is invalid"):
        commit(result, span)


@pytest.mark.parametrize("source, ids", [
    (SimpleNamespace(end_of_text_ids=(5, 6), eos_token_id=5), (5, 6)),  # LLaDA's adapter: EOS and end of turn
    (SimpleNamespace(eos_token_id=3), (3,)),  # the embedded model
    (SimpleNamespace(eos_token_id=None), ()),
    (SimpleNamespace(), ()),
    (SimpleNamespace(end_of_text_ids=(4, -1, True, None)), (4,)),
])
def test_end_of_text_ids_one_rule_for_models_and_policies(source, ids) -> None:
    assert end_of_text_ids(source) == ids


def test_a_request_that_reads_no_uniform_draws_none_and_decodes_the_same(monkeypatch) -> None:
    """`reads_uniforms`: a greedy request ranked by a measure of the logits draws no uniform (its generator is left
    as seeded, beside a sampled neighbour whose generator moves), and its trace is the one it gets drawing them."""
    from dllm_viz.core import batch as batch_module
    from dllm_viz.core.batch import DecodeBatch
    from dllm_viz.core.canvas import reads_uniforms
    from tests.tiny import TinyDenoiser

    greedy = DecodeConfig(gen_length=12, schedule="fixed_steps", steps=6, temperature=0.0, seed=3)
    assert not reads_uniforms(greedy)
    assert all(reads_uniforms(greedy.replace(**kw)) for kw in (
        {"temperature": 0.7}, {"confidence": "random"}, {"rng": "shared"}, {"revise": "rcr"},
        {"temperature_stages": (0.0, 0.0, 0.5)}))

    def run() -> tuple[list, list[torch.Tensor]]:
        model = TinyDenoiser(vocab=24)
        batch = DecodeBatch(model, capacity=2, max_length=32)
        gens = [torch.Generator().manual_seed(3), torch.Generator().manual_seed(4)]
        batch.add(0, [1, 2, 3], greedy, gens[0])
        batch.add(1, [1, 2, 3], greedy.replace(temperature=0.8, seed=4), gens[1])
        while batch.active():
            batch.step()
        return [batch.trace(i).to_dict()["steps"] for i in (0, 1)], [g.get_state() for g in gens]

    steps, states = run()
    assert torch.equal(states[0], torch.Generator().manual_seed(3).get_state())  # never drawn from
    assert not torch.equal(states[1], torch.Generator().manual_seed(4).get_state())  # the sampled row drew
    monkeypatch.setattr(batch_module, "reads_uniforms", lambda config: True)  # every row draws, as it used to
    drawing, drawn_states = run()
    assert not torch.equal(drawn_states[0], states[0]) and steps == drawing
