"""models.shadow and models.base.logits_shadow: WINO's shadow block in one forward (issue 40 item 2).

On the embedded models (their own `logits_shadow`, a packed forward), on a Hugging Face LLaDA whose
forward takes a 4-D mask and position ids (the stand-in with `shadow_support`, as WINO's modified
modeling file), and on a model with LLaDA's inputs (`AttentionTiny`).
"""
from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from dllm_viz import DecodeConfig, decode, load_model
from dllm_viz.models.base import logits_at, logits_shadow, shadow_kind
from dllm_viz.models.shadow import shadow_inputs
from tests.as_shipped import AttentionTiny, canvases, first_difference
from tests.checkpoints import make_tokenizer, save_standin
from tests.wino.wino import wino_generate


@pytest.fixture(scope="module")
def world():
    return load_model("world")


def _batch(model, texts: list[str], filled: int, masks: int):
    """Right-padded canvases: each prompt, `filled` decided tokens, then `masks` masks; their lengths."""
    rows = [model.tokenizer.encode(t) + [11 + i] * filled + [model.mask_token_id] * masks for i, t in enumerate(texts)]
    N = max(map(len, rows))
    ids = torch.full((len(rows), N), model.pad_token_id)
    attention = torch.zeros(len(rows), N, dtype=torch.bool)
    for r, row in enumerate(rows):
        ids[r, :len(row)], attention[r, :len(row)] = torch.tensor(row), True
    return ids, attention, [len(row) for row in rows], [len(row) - filled - masks for row in rows]


def test_the_embedded_canvas_rows_are_logits_at_bit_for_bit_and_each_row_its_own(world):
    ids, attention, lengths, starts = _batch(world, ["Tom Lopez of", "Mia Berg of New York has 3 cats and"], 6, 6)
    rows = torch.tensor([0, 0, 1, 1])
    cols = torch.tensor([lengths[0] - 1, lengths[0] - 3, lengths[1] - 1, lengths[1] - 2])
    blocks = torch.tensor([[s, s + 12] for s in starts])
    hidden_rows, hidden_cols = torch.tensor([0, 0, 1]), torch.tensor([starts[0] + 1, starts[0] + 4, starts[1]])
    with torch.inference_mode():
        plain = logits_at(world, ids, attention, rows, cols)
        got, shadow = logits_shadow(world, ids, attention, rows, cols, blocks, hidden_rows, hidden_cols)
        alone, alone_shadow = logits_shadow(world, ids[:1, :lengths[0]], None, rows[:2], cols[:2], blocks[:1],
                                            hidden_rows[:2], hidden_cols[:2])
    assert shadow_kind(world) == "own" and torch.equal(got, plain)
    assert torch.equal(alone, got[:2]) and torch.equal(alone_shadow, shadow[:2])
    assert not torch.allclose(shadow[0], shadow[1])


def test_an_embedded_shadow_row_is_neither_the_canvas_row_nor_the_canvas_with_its_position_masked(world):
    """A shadow row sees its position's token only through the canvas rows, which see the whole canvas (as on
    LLaDA), and the block's other shadow rows beside it: neither the canvas row there (which reads its token
    directly) nor the canvas with that position masked (`logits_hidden`'s per-position canvas)."""
    from dllm_viz.models.base import logits_hidden

    ids, attention, lengths, starts = _batch(world, ["Tom Lopez of"], 6, 6)
    p = starts[0] + 2
    with torch.inference_mode():
        _, shadow = logits_shadow(world, ids, None, torch.tensor([0]), torch.tensor([lengths[0] - 1]),
                                  torch.tensor([[starts[0], starts[0] + 12]]), torch.tensor([0]), torch.tensor([p]))
        canvas = logits_at(world, ids, None, torch.tensor([0]), torch.tensor([p]))
        masked = logits_hidden(world, ids, None, torch.tensor([0]), torch.tensor([p]))
    assert (shadow - canvas).abs().max() > 1e-3 and (shadow - masked).abs().max() > 1e-3


def test_a_model_with_llada_s_inputs_gets_wino_s_call_row_by_row():
    model = AttentionTiny(seed=3)
    assert shadow_kind(model) == "llada" and shadow_kind(lambda ids, attention_mask=None: ids) is None
    ids = torch.tensor([[5, 6, 7, 8, 9, 10], [3, 4, 5, 0, 0, 0]])
    attention = torch.tensor([[True] * 6, [True] * 3 + [False] * 3])
    model.calls.clear()
    logits, shadow = logits_shadow(model, ids, attention, torch.tensor([0, 1]), torch.tensor([5, 2]),
                                   torch.tensor([[2, 5], [0, 0]]), torch.tensor([0]), torch.tensor([3]))
    calls = [c["mask"] for c in model.calls]
    allowed, positions = shadow_inputs(6, 2, 5)
    direct = model(torch.cat([ids[0], torch.zeros(3, dtype=torch.long)]).unsqueeze(0), allowed, positions)[0]
    assert torch.equal(logits[0], direct[5]) and torch.equal(shadow[0], direct[6 + 1])
    assert calls == ["4d", "2d"]  # the row with a block alone, the other as ever


def _hf_llada(path: Path, **fields):
    hf, vocab = make_tokenizer(prefix=None)
    save_standin(path, "llada", vocab_size=len(vocab), mask_token_id=vocab["[MASK]"], **fields)
    hf.save_pretrained(path)
    return load_model(path, device="cpu", trust_remote_code=True), vocab


def test_a_hub_llada_that_takes_the_shadow_block_is_wino_step_by_step(tmp_path: Path):
    """The stand-in with WINO's inputs (a 4-D mask, position ids): `probe_shadow` finds it, and the `wino`
    preset is `decoding_wino` on it, step by step, in one forward per step."""
    model, vocab = _hf_llada(tmp_path, shadow_support=True)
    assert model.can_shadow and shadow_kind(model) == "own"

    def llada(x, attention_mask=None, position_ids=None):  # WINO's call of the same checkpoint
        out = model._clean(model.model(x, attention_mask=attention_mask, position_ids=position_ids).logits.float())
        out[..., model.mask_token_id] = -1e4  # as a trained LLaDA: the mask is never what a position predicts
        return SimpleNamespace(logits=out)

    prompt = [vocab[w] for w in ("the", "cat")] if "the" in vocab else [5, 6]
    for threshold, back in ((0.6, 0.9), (0.3, 0.7)):
        tokens, run = wino_generate(llada, prompt, gen_length=16, block_length=8, mask_id=model.mask_token_id,
                                    threshold=threshold, threshold_back=back)
        (trace,) = decode(model, [prompt], DecodeConfig.preset("wino", 16, block_length=8, threshold=threshold,
                                                               verify_threshold=back))
        theirs = [row[len(prompt):] for row in run.rows]
        assert canvases(trace) == theirs, first_difference(canvases(trace), theirs, [model.mask_token_id] * 16,
                                                           model.mask_token_id)
        assert trace.token_ids == tokens and trace.nfe == run.steps == len(trace.steps)


def test_a_hub_llada_without_it_verifies_by_canvases_and_counts_them(tmp_path: Path):
    model, _ = _hf_llada(tmp_path)  # the released modeling file: no position ids, no 4-D mask
    assert not model.can_shadow and shadow_kind(model) is None
    (trace,) = decode(model, [[5, 6]], DecodeConfig.preset("wino", 16, threshold=0.3))
    verifying = [rec for rec in trace.steps if rec.forwards == 2]
    assert verifying and trace.nfe == len(trace.steps) + len(verifying)
