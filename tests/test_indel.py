"""core.indel: the insert/delete step's settings and checks, and its batching (issue 37).

That the step is SGLang's JointThresholdInDel is tests/sglang/test_indel.py's job (the real SGLang, step by
step). Here: the named errors, and that a batch of rows with their own settings and widths gives every row
exactly what it gets alone (the vectorised form never mixes rows).
"""
from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from dllm_viz.core import indel
from dllm_viz.core.alignment import SPLIT
from dllm_viz.core.indel import InDelParams, InDelSettings, InDelState, check_edit_tokens, check_model, indel_step
from tests.sglang.indel_script import DELETE_ID, MASK_ID, SPLIT_ID, VOCAB, Events, row_logits

TOKENS = check_edit_tokens(VOCAB, MASK_ID, DELETE_ID, SPLIT_ID)


@pytest.mark.parametrize("knob, value", [("max_post_edit_steps", -1), ("max_post_edit_steps", 1.5),
                                         ("max_post_edit_steps", True), ("threshold", 1.5), ("edit_threshold", -0.1),
                                         ("block_size", 0)])
def test_bad_settings_are_named_value_errors(knob, value):
    with pytest.raises(ValueError, match=f"{knob}={value!r} is invalid"):
        InDelSettings(**{knob: value})


def test_the_defaults_are_sglang_s():
    assert InDelSettings() == InDelSettings(**indel.SGLANG_DEFAULTS, block_size=32)
    from dllm_viz import DecodeConfig
    from dllm_viz.core.rules import joint_threshold_indel

    c = DecodeConfig.preset("llada22_indel", 64)
    assert (c.threshold, c.edit_threshold, c.max_post_edit_steps, c.indel) == (0.5, 0.0, 16, "joint_threshold_indel")
    assert c.block_length == 32 and DecodeConfig.preset("llada22_indel", 48).block_length is None
    assert "joint_threshold_indel.py" in joint_threshold_indel.SOURCE


@pytest.mark.parametrize("ids, match", [((None, 4), "delete_token_id=None"), ((3, 99), "split_token_id=99"),
                                        ((MASK_ID, 4), "distinct"), ((4, 4), "distinct"),
                                        ((True, 4), "delete_token_id")])
def test_edit_tokens_missing_from_the_vocabulary_are_named(ids, match):
    with pytest.raises(ValueError, match=match):
        check_edit_tokens(VOCAB, MASK_ID, *ids)


def test_a_model_that_cannot_edit_lengths_is_refused():
    plain = SimpleNamespace(name="plain", vocab_size=VOCAB, mask_token_id=MASK_ID)
    with pytest.raises(ValueError, match="delete_token_id=None, split_token_id=None is invalid"):
        check_model(plain)
    able = SimpleNamespace(vocab_size=VOCAB, mask_token_id=MASK_ID, delete_token_id=DELETE_ID, split_token_id=SPLIT_ID)
    assert check_model(able) == TOKENS


def _run(settings: list[InDelSettings], prompts: list[int], events: Events, seed: int, L: int) -> list[list[list[int]]]:
    """Each row's block after every step, all rows in one batch (padded to L)."""
    A = len(settings)
    block = torch.full((A, L), MASK_ID, dtype=torch.long)
    prompt = torch.zeros(A, L, dtype=torch.bool)
    for a, n in enumerate(prompts):
        block[a, :n] = torch.arange(1, n + 1)
        prompt[a, :n] = True
    state = InDelState.initial(block, prompt, MASK_ID)
    params = InDelParams.from_settings(settings, TOKENS)
    seen: list[list[list[int]]] = [[] for _ in range(A)]
    while not bool(state.finished.all()):
        logits = torch.full((A, L, VOCAB), -30.0)
        for a, s in enumerate(settings):
            w = s.block_size
            logits[a, :w] = row_logits(block[a, :w].tolist(), w, prompts[a], events, seed)
        out = indel_step(logits, block, state, params)
        for a, s in enumerate(settings):
            if not bool(state.finished[a]):
                seen[a].append(out.block[a, : s.block_size].tolist())
        block, state = out.block, out.state
        assert len(seen[0]) < 200
    return seen


def test_a_batch_gives_every_row_what_it_gets_alone():
    settings = [InDelSettings(block_size=8), InDelSettings(block_size=5, threshold=0.8, max_post_edit_steps=2),
                InDelSettings(block_size=8, edit_threshold=0.4, max_post_edit_steps=0), InDelSettings(block_size=6)]
    prompts = [0, 2, 1, 0]
    events = Events(delete=0.08, split=0.08, mask=0.05)
    moved = 0
    for seed in range(3):
        together = _run(settings, prompts, events, seed, L=8)
        for a, s in enumerate(settings):
            alone = _run([s], [prompts[a]], events, seed, L=s.block_size)[0]
            assert together[a] == alone, (seed, a)
            moved += sum(MASK_ID in b for b in alone)
    assert moved > 0


def test_a_step_records_where_every_token_went():
    settings = [InDelSettings(block_size=8)] * 3
    block = torch.full((3, 8), MASK_ID, dtype=torch.long)
    state = InDelState.initial(block, torch.zeros(3, 8, dtype=torch.bool), MASK_ID)
    params = InDelParams.from_settings(settings, TOKENS)
    events = Events(delete=0.15, split=0.15)
    while not bool(state.finished.all()):
        logits = torch.stack([row_logits(block[a].tolist(), 8, 0, events, 5) for a in range(3)])
        out = indel_step(logits, block, state, params)
        e = out.edits
        kept = e.target >= 0
        # every surviving token sits where `target` says (a split's old token, else what was written or kept),
        # and `source` points back to it
        moved = torch.where(e.op == SPLIT, block, torch.where(e.written >= 0, e.written, block))
        assert torch.equal(out.block.gather(1, e.target.clamp(min=0))[kept], moved[kept])
        rows, cols = kept.nonzero(as_tuple=True)
        assert torch.equal(e.source[rows, e.target[rows, cols]], cols)
        block, state = out.block, out.state
