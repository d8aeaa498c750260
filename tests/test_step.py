"""core/step.py: `denoise_step` on hand-made logits, no model and no decoder around it.

Named invariants of one step: the schedule sees raw confidence whatever the temperature;
positions are confirmed only where masked and in the current block, as many as the quota; tokens
are drawn only there; the logits are not edited; at T = 0 the token is the raw argmax; a row's
result does not depend on the other rows.
"""
from __future__ import annotations

import dataclasses

import pytest
import torch

from dllm_viz import DecodeConfig
from dllm_viz.core.canvas import commit
from dllm_viz.core.step import StepParams, StepState, denoise_step


def _inputs(configs: list[DecodeConfig], masked: torch.Tensor, *, V: int = 9, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    A, G = masked.shape
    logits = (torch.randn(int(masked.sum()), 1, V, generator=g) * 3).float()  # (M, 1, V)
    logits[..., 0] = float("-inf")  # id 0 plays the mask token
    noise = torch.rand(A, 2, G, generator=g)
    params = StepParams.from_configs(configs)
    temps = torch.tensor([c.temperature for c in configs], dtype=torch.float32)
    return logits, params, StepState.initial(params, temps), noise


def _step(configs, masked, **kw):
    logits, params, state, noise = _inputs(configs, masked, **kw)
    return logits, denoise_step(logits, masked, params, state, noise, top=3)


def test_the_schedule_ranks_by_raw_confidence_at_any_temperature():
    masked = torch.ones(1, 8, dtype=torch.bool)
    results = [_step([DecodeConfig(gen_length=8, top_k=3, temperature=t)], masked)[1] for t in (0.0, 0.5, 1.0, 3.0)]
    for r in results[1:]:
        assert torch.equal(r.confidence, results[0].confidence) and torch.equal(r.selected, results[0].selected)


def test_confirms_the_quota_only_where_masked_and_in_the_current_block():
    masked = torch.tensor([[False, True, True, False, True, True, True, True]])
    cfg = DecodeConfig(gen_length=8, block_length=4, top_k=3, decay=1.0)
    _, r = _step([cfg], masked)
    # block 0 holds positions 0-3, of which 1 and 2 are masked: the quota (3) is capped at those two
    assert r.selected.nonzero()[:, 1].tolist() == [1, 2] and r.count.tolist() == [2]
    assert not (r.selected & ~masked).any()


def test_tokens_are_drawn_only_at_confirmed_positions_and_the_logits_are_untouched():
    masked = torch.ones(2, 6, dtype=torch.bool)
    configs = [DecodeConfig(gen_length=6, top_k=2, temperature=1.3, seed=1), DecodeConfig(gen_length=6, top_k=4)]
    logits, params, state, noise = _inputs(configs, masked)
    before = logits.clone()
    r = denoise_step(logits, masked, params, state, noise, top=3)
    assert torch.equal(logits, before)
    assert ((r.tokens >= 0) == r.selected).all() and r.count.tolist() == [2, 4]
    assert not (r.tokens[r.selected] == 0).any()  # the mask token is never drawn


def test_at_temperature_zero_the_token_is_the_raw_argmax():
    masked = torch.ones(1, 8, dtype=torch.bool)
    _, r = _step([DecodeConfig(gen_length=8, top_k=8, temperature=0.0)], masked)
    assert torch.equal(r.tokens[r.selected], r.argmax[r.selected])


def test_a_rows_result_does_not_depend_on_its_neighbours():
    cfg = DecodeConfig(gen_length=6, top_k=2, temperature=1.0)
    masked_one = torch.ones(1, 6, dtype=torch.bool)
    logits, params, state, noise = _inputs([cfg], masked_one, seed=3)
    alone = denoise_step(logits, masked_one, params, state, noise)
    other = DecodeConfig(gen_length=6, schedule="threshold", threshold=0.5, confidence="margin", temperature=2.0)
    masked_two = torch.ones(2, 6, dtype=torch.bool)
    o_logits, _, _, o_noise = _inputs([other], masked_one, seed=4)
    params2 = StepParams.from_configs([cfg, other])
    state2 = StepState.initial(params2, torch.tensor([1.0, 2.0]))
    both = denoise_step(torch.cat([logits, o_logits]), masked_two, params2, state2, torch.cat([noise, o_noise]))
    assert torch.equal(both.selected[0], alone.selected[0]) and torch.equal(both.tokens[0], alone.tokens[0])
    assert torch.equal(both.confidence[0], alone.confidence[0])


def test_polluted_confidence_is_what_the_schedule_sees_and_the_raw_one_is_kept():
    masked = torch.ones(1, 8, dtype=torch.bool)
    _, raw = _step([DecodeConfig(gen_length=8, top_k=3, temperature=3.0)], masked)
    _, polluted = _step([DecodeConfig(gen_length=8, top_k=3, temperature=3.0, confidence_from="tempered")], masked)
    assert torch.equal(polluted.raw_confidence, raw.confidence)
    spread = lambda c: float(c.max() - c.min())  # noqa: E731
    assert spread(polluted.confidence) < spread(raw.confidence)  # T = 3 flattens what the schedule sees


def test_a_strict_threshold_leaves_a_confidence_equal_to_it():
    """SGLang confirms p > threshold; Fast-dLLM p >= threshold (threshold_strict picks)."""
    masked = torch.ones(1, 3, dtype=torch.bool)
    logits = torch.full((3, 1, 5), float("-inf"))
    logits[0, 0, 1:3] = 2.0  # two tokens tie: softmax gives exactly 0.5
    logits[1, 0, 1:3] = -1.0
    logits[2, 0, 1], logits[2, 0, 2] = 4.0, 0.0  # p ~ 0.98
    picks = {}
    for strict in (False, True):
        cfg = DecodeConfig(gen_length=3, schedule="threshold", threshold=0.5, min_k=1, temperature=0.0,
                           confidence_from="softmax", threshold_strict=strict)
        params = StepParams.from_configs([cfg])
        r = denoise_step(logits, masked, params, StepState.initial(params, torch.zeros(1)), torch.zeros(1, 2, 3))
        assert r.confidence[0, 0] == 0.5 and r.confidence[0, 1] == 0.5
        picks[strict] = r.selected[0].nonzero().flatten().tolist()
    assert picks == {False: [0, 1, 2], True: [2]}


def test_a_revising_row_needs_the_tokens_and_the_logits_its_rule_reads():
    masked = torch.tensor([[True, False, True, False]])
    cfg = DecodeConfig(gen_length=4, top_k=1, revise="joint_threshold")
    logits, params, state, noise = _inputs([cfg], masked)
    with pytest.raises(ValueError, match="current=None is invalid"):
        denoise_step(logits, masked, params, state, noise)
    current = torch.tensor([[0, 3, 0, 4]])
    with pytest.raises(ValueError, match="seen with shape None is invalid.*2 decided positions"):
        denoise_step(logits, masked, params, state, noise, current=current)
    seen = torch.randn(2, 1, 9)
    seen[..., 0] = float("-inf")
    before = seen.clone()
    r = denoise_step(logits, masked, params, state, noise, current=current, seen=seen)
    assert torch.equal(seen, before)  # nothing edits its inputs
    assert r.revision is not None and not (r.revision.edited & masked).any()  # only visible positions are rewritten
    assert torch.equal(commit(r, current, mask_id=0).span[r.selected], r.tokens[r.selected])


def test_a_row_the_early_stop_finishes_takes_nothing_back():
    """RCR would take back the two weak decided tokens for the sure end-of-text masks; the early stop
    fills every mask with end-of-text in the same step, so the row ends instead."""
    from dllm_viz.core.revision import RevisionState

    masked = torch.tensor([[False, False, True, True]])
    cfg = DecodeConfig(gen_length=4, schedule="fixed_steps", steps=4, revise="rcr", early_stop=True)
    logits = torch.full((2, 1, 9), -5.0)
    logits[..., 5] = 5.0  # end-of-text, p ~ 0.99
    logits[..., 0] = float("-inf")
    state = StepState.initial(params := StepParams.from_configs([cfg], end_of_text_ids=(5,)), torch.ones(1))
    state = dataclasses.replace(state, block_step=torch.tensor([2]), revision=RevisionState(
        counter=torch.zeros(1, dtype=torch.long), hold=torch.zeros(1, dtype=torch.bool),
        decided_conf=torch.tensor([[0.1, 0.1, 0.0, 0.0]])))
    current = torch.tensor([[3, 4, 0, 0]])
    r = denoise_step(logits, masked, params, state, torch.zeros(1, 2, 4), current=current)
    assert r.stopped.tolist() == [True] and not r.revision.remasked.any() and r.finished.tolist() == [True]
    assert commit(r, current, mask_id=0).span.tolist() == [[3, 4, 5, 5]]
    without = dataclasses.replace(params, any_early_stop=False)  # the same step without the early stop
    r = denoise_step(logits, masked, without, state, torch.zeros(1, 2, 4), current=current)
    assert r.revision.remasked.any()  # ... takes the weak tokens back


def test_the_step_takes_the_mask_out_of_the_candidates_but_where_a_reference_keeps_it():
    """With `mask_token_id`, the step masks the mask token itself; a row computed as LLaDA's code
    (sampled_raw, no revision rule) keeps it in its softmax and argmax, and a picked mask places
    nothing (LLaDA writes the mask back); the logits may come in the model's dtype (bf16 here)."""
    masked = torch.ones(2, 4, dtype=torch.bool)
    logits = torch.zeros(8, 1, 9)
    logits[..., 3] = 1.0
    logits[..., 0] = 4.0  # the mask token (id 0) is every position's argmax
    configs = [DecodeConfig(gen_length=4, top_k=2, temperature=0.0, seed=1),
               DecodeConfig.preset("llada", 4, steps=2, seed=1)]
    params = StepParams.from_configs(configs, mask_token_id=0, prompt_lengths=[3, 3])
    state = StepState.initial(params, torch.zeros(2))
    noise = torch.rand(2, 2, 4, generator=torch.Generator().manual_seed(0))
    r = denoise_step(logits.to(torch.bfloat16), masked, params, state, noise)
    assert r.selected[0].sum() == 2 and set(r.tokens[0][r.selected[0]].tolist()) == {3}  # never the mask
    assert r.argmax[1].tolist() == [0, 0, 0, 0]  # LLaDA's argmax is the mask ...
    assert not r.selected[1].any() and int(r.count[1]) == 0 and int(r.remaining[1]) == 4  # ... and nothing is placed


def test_at_temperature_zero_the_drawn_log_probability_is_the_top_candidates_even_under_ties():
    """A greedy step places an argmax of the logits, whose log-probability is the largest (the log-softmax is
    monotone): `greedy_logp` is the top candidate's, equal at every placed position to the log-probability of the
    drawn id gathered, with ties in the logits (bfloat16-like); None at T > 0."""
    masked = torch.ones(3, 8, dtype=torch.bool)
    configs = [DecodeConfig(gen_length=8, top_k=3, temperature=0.0, seed=s) for s in range(3)]
    logits, params, state, noise = _inputs(configs, masked, V=16)
    logits = (logits * 2).round() / 2  # many ties, the maximum's among them
    r = denoise_step(logits.clone(), masked, params, state, noise, top=4)
    assert r.greedy_logp is not None and r.greedy_logp.shape == (24, 1, 1)
    drawn = r.raw.logp.gather(-1, r.tokens[masked].clamp(min=0).view(-1, 1, 1))  # (M, 1, 1)
    placed = r.selected[masked]
    assert placed.sum() == 9 and torch.equal(r.greedy_logp[placed], drawn[placed])
    assert torch.equal(r.logprobs[r.selected], r.greedy_logp[placed].view(-1))
    sampled = [c.replace(temperature=0.5) for c in configs]
    logits2, params2, state2, noise2 = _inputs(sampled, masked, V=16)
    assert denoise_step(logits2, masked, params2, state2, noise2).greedy_logp is None


# ----- the plain step's shortcuts: the same traces as the general step -------------------------------------
def _general(monkeypatch):
    """Make every row set take the general step: k picked per row (`any_restart`), the block test at every width
    (`least_block`), the canvas rows copied out and back (`in_place`), every packed draw through its mask (no
    `where=None`), each row's step number its own (no shared int), as if no shortcut applied."""
    from dllm_viz.core import batch, step
    from dllm_viz.core.batch import DecodeBatch
    from dllm_viz.core.packed import Packed
    from dllm_viz.core.scoring import Distribution

    build, rows, draw = StepParams.from_configs.__func__, DecodeBatch._rows, Packed.draw

    def general(cls, configs, **kw):
        return dataclasses.replace(build(cls, configs, **kw), any_restart=True, least_block=1)

    def copied(self, idx_list, slots):
        return dataclasses.replace(rows(self, idx_list, slots), in_place=False)

    def masked_draw(self, where, **kw):
        every = torch.ones(self.logits.shape[0], dtype=torch.bool, device=self.logits.device)
        return draw(self, every if where is None else where, **kw)

    monkeypatch.setattr(StepParams, "from_configs", classmethod(general))
    monkeypatch.setattr(DecodeBatch, "_rows", copied)
    monkeypatch.setattr(Packed, "draw", masked_draw)
    monkeypatch.setattr(batch, "_step_numbers", lambda slots, device: torch.tensor([s.step for s in slots]))
    monkeypatch.setattr(step, "_greedy_logp", lambda *args: None)  # the record gathers the drawn ids' log-probs
    monkeypatch.setattr(Distribution, "first_max", property(lambda self: None))  # a greedy step draws its argmaxes
    monkeypatch.setattr(batch, "reads_uniforms", lambda config: True)  # every row draws its uniforms


_GRID = {
    "fixed_steps": DecodeConfig(gen_length=16, schedule="fixed_steps", steps=8),
    "fixed_steps, blocks": DecodeConfig(gen_length=16, schedule="fixed_steps", steps=8, block_length=8),
    "topk_decay": DecodeConfig(gen_length=16, top_k=4, decay=0.7, min_k=2),
    "topk_decay, restart": DecodeConfig(gen_length=16, top_k=4, decay=0.7, block_length=8, block_schedule="restart"),
    "threshold": DecodeConfig(gen_length=16, schedule="threshold", threshold=0.3),
    "margin": DecodeConfig(gen_length=16, schedule="fixed_steps", steps=8, confidence="margin"),
    "random": DecodeConfig(gen_length=16, schedule="fixed_steps", steps=8, confidence="random"),
    "llada": DecodeConfig.preset("llada", 16),
    "fast_dllm": DecodeConfig.preset("fast_dllm", 16),
}


def _probe(model, config):
    """The row set of one request in slot 0 of a fresh `DecodeBatch`."""
    from dllm_viz.core.batch import DecodeBatch

    batch = DecodeBatch(model, capacity=1, max_length=32)
    batch.add(0, [1, 2, 3], config, torch.Generator())
    return batch._rows([0], [batch.slots[0]])


@pytest.mark.parametrize("name", list(_GRID))
def test_the_plain_shortcuts_give_the_general_steps_traces(monkeypatch, name):
    """Issue 40: a plain step skips what cannot change its result (the block test when the step is no wider than
    a block, the per-row restart of k when no row restarts, the packed uniforms when nothing reads them, the copy
    of the canvas rows when they are the buffer's first and the indexing of its rows (views made once), the copy of
    the logits when every position draws, one step number for rows that share it, the argmax read off a strict top
    candidate, no uniforms drawn for a row that reads none). Over temperatures, batch sizes (rows of other lengths
    too) and seeds, the tokens and every step record equal the general step's."""
    from dllm_viz import decode
    from tests.tiny import TinyDenoiser

    model = TinyDenoiser(vocab=24)
    runs = []
    for T in (0.0, 0.8):
        for B in (1, 3):
            for seed in (0, 1):
                configs = [_GRID[name].replace(temperature=T, seed=seed + b) for b in range(B)]
                if B == 3 and _GRID[name].block_length is None and _GRID[name].schedule != "fixed_steps":
                    configs[1] = configs[1].replace(gen_length=8)  # a shorter row: spans of two widths
                runs.append(([[1 + b, 2, 3] for b in range(B)], configs))
    shortcut = [[t.to_dict() for t in decode(model, p, c)] for p, c in runs]
    streamed = [[t.to_dict() for t in decode(model, p, c, on_step=lambda i, r: None)] for p, c in runs]
    probe = _probe(model, runs[0][1][0])
    assert probe.in_place and probe.views is not None  # the shortcut's rows step in the canvas buffer (views) itself
    _general(monkeypatch)
    assert StepParams.from_configs(list(runs[0][1])).least_block == 1  # the general step, indeed
    assert not _probe(model, runs[0][1][0]).in_place  # the copied canvas rows, indeed
    general = [[t.to_dict() for t in decode(model, p, c)] for p, c in runs]
    for got, streamed_got, want in zip(shortcut, streamed, general):
        for a, b, s in zip(got, want, streamed_got):
            for d in (a, b, s):
                d.pop("wall_time", None)
                d.get("metrics", {}).pop("tokens_per_second", None)
            assert a["token_ids"] == b["token_ids"] and a["steps"] == b["steps"] and a == b
            assert s["steps"] == b["steps"]
