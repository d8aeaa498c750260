"""The `wino` preset against WINO's `decoding_wino` (issue 40).

WINO (Feng-Hong/WINO-DLLM) has no licence, so `tests/wino/wino.py` is a clean re-implementation of
`decoding_wino` at temperature 0 (checked against the original function, every forward's inputs
included, by bench/crosscheck_originals.py: docs/as_shipped.md). Both run on `AttentionTiny`, a
one-layer attention model that takes LLaDA's inputs (a 4-D boolean attention mask, position ids),
so WINO's shadow block means here what it means on LLaDA.

WINO verifies in the step's one forward: the canvas is followed by a shadow block of masks at the
current block's position ids; shadow row i sees every canvas position but the block's position i,
and every shadow row. Its probability of the token at i is the verify score. The `wino` preset does
the same (`verify_pass="shadow"`, `models.base.logits_shadow`): the shadow forward (the inputs pinned
below), one forward per step counted, the same canvas after every step. Our per-position canvases
(`models.base.logits_hidden`) stay as the `wino_canvases` preset.

`AttentionTiny` offers the shadow forward as LLaDA does (`model(ids, attention_mask=(1, 1, N, N),
position_ids=(N,))`): `models.base.shadow_kind` finds `position_ids` in its forward, and
`test_wino_preset_gives_the_model_wino_s_shadow_forward` looks for those calls.
"""
from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from dllm_viz import DecodeConfig, decode
from tests.as_shipped import AttentionTiny, canvases, first_difference
from tests.wino.wino import wino_generate

PROMPTS = [[5, 6, 7], [1, 2, 3, 4, 5, 6], [9]]
MODELS = {"attn-3": dict(seed=0, scale=3.0), "attn-5": dict(seed=1, scale=5.0)}
SHAPES = {"one-block": (32, 32), "two-blocks": (64, 32)}  # (gen_length, block_length)
KNOBS = {"shipped": {}, "0.5-0.8": {"threshold": 0.5, "threshold_back": 0.8}}  # decoding_wino's knobs


class LLaDAConvention:
    """`AttentionTiny` as WINO calls LLaDA: `model(ids, attention_mask=, position_ids=).logits`."""

    def __init__(self, model: AttentionTiny) -> None:
        self.model, self.inputs = model, []

    def __call__(self, x, attention_mask=None, position_ids=None):
        self.inputs.append((x.clone(), attention_mask, position_ids))
        return SimpleNamespace(logits=self.model(x, attention_mask, position_ids))


def original(model_key: str, prompt: list[int], shape: str, knobs: str):
    gen, block = SHAPES[shape]
    model = AttentionTiny(**MODELS[model_key])
    tokens, run = wino_generate(LLaDAConvention(model), prompt, gen_length=gen, block_length=block, mask_id=0,
                                **KNOBS[knobs])
    return model, tokens, run


def ours(model: AttentionTiny, prompt: list[int], shape: str, knobs: str):
    gen, block = SHAPES[shape]
    k = KNOBS[knobs]
    overrides = {"threshold": k["threshold"], "verify_threshold": k["threshold_back"]} if k else {}
    model.calls.clear()
    (trace,) = decode(model, [prompt], DecodeConfig.preset("wino", gen, block_length=None if block == gen else block,
                                                           **overrides))
    return trace


CASES = [pytest.param(m, p, s, k, id=f"{m}-prompt{len(p)}-{s}-{k}")
         for m in MODELS for p in PROMPTS for s in SHAPES for k in KNOBS]


FAST = [CASES[0], CASES[-1]]  # one block at the shipped knobs, two blocks at others; the rest in the slow tier


def check_step_by_step(model_key, prompt, shape, knobs) -> None:
    model, tokens, run = original(model_key, prompt, shape, knobs)
    trace = ours(model, prompt, shape, knobs)
    theirs = [row[len(prompt):] for row in run.rows]
    mine = canvases(trace)
    assert mine == theirs, first_difference(mine, theirs, [0] * SHAPES[shape][0], 0)
    assert trace.token_ids == tokens


@pytest.mark.parametrize("model_key,prompt,shape,knobs", FAST)
def test_wino_preset_is_wino_step_by_step(model_key, prompt, shape, knobs):
    check_step_by_step(model_key, prompt, shape, knobs)


@pytest.mark.parametrize("model_key,prompt,shape,knobs", [c for c in CASES if c not in FAST])
def test_wino_preset_is_wino_step_by_step_over_the_grid(model_key, prompt, shape, knobs):
    check_step_by_step(model_key, prompt, shape, knobs)


@pytest.mark.parametrize("model_key,prompt,shape,knobs", CASES[5::9])
def test_wino_preset_counts_wino_s_forwards(model_key, prompt, shape, knobs):
    model, _, run = original(model_key, prompt, shape, knobs)
    trace = ours(model, prompt, shape, knobs)
    assert trace.nfe == len(trace.steps) == run.steps


@pytest.mark.parametrize("model_key,prompt,shape,knobs", CASES[7:8])
def test_wino_preset_gives_the_model_wino_s_shadow_forward(model_key, prompt, shape, knobs):
    """One call per step whose input is the canvas and a shadow block (the mask 4-D, the position ids
    given), and, all told, no more canvas rows computed than twice the forwards counted (the issue's floor)."""
    model, _, run = original(model_key, prompt, shape, knobs)
    trace = ours(model, prompt, shape, knobs)
    shadow = [c for c in model.calls if c["mask"] == "4d" and c["positions"]]
    assert len(shadow) == len(trace.steps)
    assert all(c["shape"][1] == len(prompt) + SHAPES[shape][0] + SHAPES[shape][1] for c in shadow)
    assert sum(c["shape"][0] for c in model.calls) <= 2 * trace.nfe


# ----- the original, pinned: what its forward looks like and what it computes ---------------------
def test_wino_s_one_forward_carries_the_canvas_and_a_shadow_block():
    prompt, gen, block = [5, 6, 7], 64, 32
    model = LLaDAConvention(AttentionTiny(**MODELS["attn-3"]))
    _, run = wino_generate(model, prompt, gen_length=gen, block_length=block, mask_id=0)
    P, N = len(prompt), len(prompt) + gen
    assert len(model.inputs) == run.steps  # one forward per WINO step
    blocks = set()
    for x, allowed, positions in model.inputs:
        lo = int(positions[N])  # the shadow block's position ids are the current block's
        hi = lo + block
        blocks.add(lo)
        assert x.shape == (1, N + block) and (x[0, N:] == 0).all()  # the shadow block: masks only
        assert torch.equal(positions, torch.cat([torch.arange(N), torch.arange(lo, hi)]))
        a = allowed[0, 0]
        assert a.shape == (N + block, N + block)
        assert a[:N, :N].all() and not a[:N, N:].any()  # canvas rows: the canvas only
        assert a[N:, N:].all()  # shadow rows see every shadow row, their own included
        assert torch.equal(a[N:, lo:hi], ~torch.eye(block, dtype=torch.bool))  # ... the block but their position
        assert a[N:, :lo].all() and a[N:, hi:N].all()  # ... and the rest of the canvas, later blocks' masks too
    assert blocks == {P, P + block}


def test_a_shadow_row_is_not_the_canvas_with_its_position_masked():
    """The named difference, measured: WINO's verify probabilities against dllm-viz's per-position
    canvases (`models.base.logits_hidden`'s rule) on the same canvases."""
    prompt, gen = [5, 6, 7], 32
    model = AttentionTiny(**MODELS["attn-3"])
    wrapped = LLaDAConvention(model)
    _, run = wino_generate(wrapped, prompt, gen_length=gen, block_length=gen, mask_id=0)
    gaps = []
    for (x, allowed, positions), verify in zip(wrapped.inputs, run.verify):
        canvas = x[:, :len(prompt) + gen]
        for pos, p_shadow in verify.items():
            hidden = canvas.clone()
            hidden[0, pos] = 0
            with torch.no_grad():
                p_canvas = torch.softmax(model(hidden)[0, pos].double(), -1)[canvas[0, pos]]
            gaps.append(abs(float(p_canvas) - p_shadow))
    assert len(gaps) > 20 and max(gaps) > 0.05


@pytest.mark.parametrize("model_key,prompt,shape,knobs", CASES[2::7])
def test_wino_ends_each_block_within_its_masks_steps(model_key, prompt, shape, knobs):
    """WINO's take-back loop has no step cap, and needs none: a step takes back at most one fewer than the
    step before drafted, so after T steps at least T positions are written, and a block of M masks ends
    within M steps (the mask token never being the argmax). dllm-viz's guard (block size + 30) is never met."""
    _, _, run = original(model_key, prompt, shape, knobs)
    gen, block = SHAPES[shape]
    assert run.steps <= gen
    for prev, back in zip(run.drafted, run.taken_back[1:]):
        assert len(back) <= max(0, len(prev) - 1)
    assert sum(len(b) for b in run.taken_back) > 0  # the verify took tokens back
