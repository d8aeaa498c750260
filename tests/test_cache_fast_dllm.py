"""dllm-viz's prefix and dual caches against Fast-dLLM's own decoding loops (issue 31, item 2).

`tests/fast_dllm/generate.py` is Fast-dLLM's ``llada/generate.py`` (Apache-2.0, see its NOTICE):
``generate``, ``generate_with_prefix_cache`` and ``generate_with_dual_cache`` run here unmodified,
on dllm-viz's embedded models, through `FastDLLMModel`, a thin adapter that offers the interface
they call (LLaDA's ``model(x, past_key_values=..., use_cache=..., replace_position=...)`` returning
``.logits`` and ``.past_key_values``) and computes with the embedded model's own cached forward
(`models.kv_cache`). At temperature 0, over a grid of block lengths and step counts (LLaDA's
fixed steps, and Fast-dLLM's threshold 0.9), `decode` with the same cache must give the same tokens
in the same number of forward passes: the same forwards at the same steps (a refresh at each
block's first step, a window at the others), the same positions computed, the same choices.

The adapter's logits are NaN except where dllm-viz's step scores (a full forward: every masked
position; a window: the masked positions of the current block). Fast-dLLM reads only the current
block's masked positions (its ``mask_index``); a NaN read anywhere else would wreck its choice, so
equal tokens also show that the two loops read the same positions.
"""
from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from dllm_viz import DecodeConfig, decode, load_model
from dllm_viz.models.kv_cache import KVCache, LayerCache
from tests.fast_dllm.generate import generate, generate_with_dual_cache, generate_with_prefix_cache

LOOPS = {"none": generate, "prefix": generate_with_prefix_cache, "dual": generate_with_dual_cache}


class FastDLLMModel:
    """LLaDAModelLM's calling convention over an embedded dllm-viz model, for one canvas row.

    ``past_key_values`` holds one ``(keys, values, mix_in)`` tuple per layer, each with the canvas
    positions on dimension 2, the layout Fast-dLLM cuts (``[:, :, :start]``); the window of a call
    starts where ``replace_position`` does (dual), else where the cache ends (prefix).
    """

    def __init__(self, model, block_length: int) -> None:
        self.model, self.block_length = model, block_length
        self.device = model.device
        self.mask = model.mask_token_id
        self.calls: list[tuple[str, int, int]] = []  # (kind, start, positions computed)

    def __call__(self, x: torch.Tensor, past_key_values=None, use_cache: bool = False, replace_position=None):
        assert x.shape[0] == 1
        cache = None
        if past_key_values is None:
            start = 0
            cols = (x[0] == self.mask).nonzero()[:, 0]  # a full forward scores every masked position
            if use_cache:
                logits, cache = self.model.logits_cached(x, None, start=0, cols=cols)
            else:
                logits = self.model.logits_at(x, None, torch.zeros_like(cols), cols)
            self.calls.append(("full", 0, x.shape[1]))
        else:
            cache = KVCache(tuple(LayerCache(*layer) for layer in past_key_values))
            if replace_position is not None:
                start = int(replace_position[0].nonzero()[0, 0])
            else:
                start = cache.length
            block = x[0, : self.block_length]  # the current block opens the window
            cols = start + (block == self.mask).nonzero()[:, 0]
            logits, _ = self.model.logits_cached(x, cache, start=start, cols=cols)
            self.calls.append(("dual" if replace_position is not None else "prefix", start, x.shape[1]))
        out = torch.full((1, x.shape[1], logits.shape[-1]), float("nan"))
        out[0, cols - start] = logits
        kv = None if cache is None else [(c.keys, c.values, c.mix_in) for c in cache.layers]
        return SimpleNamespace(logits=out, past_key_values=kv)


@pytest.fixture(scope="module")
def world():
    return load_model("world")


def fast_dllm(model, prompt_ids: list[int], loop: str, *, gen_length: int, block_length: int,
              steps: int | None, threshold: float | None):
    adapter = FastDLLMModel(model, block_length)
    x, nfe = LOOPS[loop](adapter, torch.tensor([prompt_ids]), steps=steps or gen_length, gen_length=gen_length,
                         block_length=block_length, temperature=0.0, remasking="low_confidence",
                         mask_id=model.mask_token_id, threshold=threshold)
    return x[0, len(prompt_ids):].tolist(), nfe, adapter.calls


def ours(model, prompt: str, cache: str, *, gen_length: int, block_length: int, steps: int | None,
         threshold: float | None):
    if threshold is None:  # LLaDA's fixed steps, ranked by the raw probability of the drawn token
        config = DecodeConfig.preset("llada", gen_length, steps=steps, block_length=block_length, cache=cache)
    else:  # Fast-dLLM's threshold rule
        config = DecodeConfig.preset("fast_dllm", gen_length, threshold=threshold, block_length=block_length,
                                     cache=cache)
    (trace,) = decode(model, [prompt], config)
    return trace


# Blocks of 8, 16 and 24 of 48 tokens; one step per block (each block's only step is its refresh),
# 24 steps (two positions per step) and, for blocks of 16, 48 (one per step); and the threshold.
GRID = [(b, s, None) for b in (8, 16, 24) for s in (48 // b, 24)] + [(16, 48, None)] + \
    [(b, None, 0.9) for b in (8, 16, 24)]


@pytest.mark.parametrize("cache", ["prefix", "dual", "none"])
@pytest.mark.parametrize("block_length,steps,threshold", GRID)
def test_world_model_cached_decode_is_fast_dllm_token_for_token(world, cache, block_length, steps, threshold):
    prompt = "Mia Berg of New York has 3 cats and"
    trace = ours(world, prompt, cache, gen_length=48, block_length=block_length, steps=steps, threshold=threshold)
    tokens, nfe, calls = fast_dllm(world, trace.prompt_ids, cache, gen_length=48, block_length=block_length,
                                   steps=steps, threshold=threshold)
    assert trace.token_ids == tokens
    assert trace.nfe == nfe == len(calls)
    if cache != "none":  # the same forward at every step, over the same positions
        assert [(s.forward_kind, s.computed) for s in trace.steps] == [(kind, n) for kind, _, n in calls]
        assert sum(kind == "full" for kind, _, _ in calls) == 48 // block_length  # one refresh per block
    if steps == 48 // block_length:  # one step per block: every forward is a refresh
        assert all(kind == "full" for kind, _, _ in calls)


@pytest.mark.parametrize("cache", ["prefix", "dual"])
def test_austen_model_cached_decode_is_fast_dllm_token_for_token(cache):
    model = load_model()
    prompt = "It is a truth universally acknowledged, that"
    trace = ours(model, prompt, cache, gen_length=32, block_length=16, steps=None, threshold=0.9)
    tokens, nfe, _ = fast_dllm(model, trace.prompt_ids, cache, gen_length=32, block_length=16, steps=None,
                               threshold=0.9)
    assert (trace.token_ids, trace.nfe) == (tokens, nfe)
    exact = ours(model, prompt, "none", gen_length=32, block_length=16, steps=None, threshold=0.9)
    assert exact.token_ids != trace.token_ids  # the cache is an approximation here, and both loops make the same one


def test_the_adapter_reads_only_what_the_step_scores(world):
    # The NaN guard works: a loop that read a logit outside the current block's masks would see NaN.
    adapter = FastDLLMModel(world, 16)
    ids = torch.tensor([world.tokenizer.encode("Tom Lopez of") + [world.mask_token_id] * 48])
    out = adapter(ids, use_cache=True)
    P = ids.shape[1] - 48
    assert torch.isnan(out.logits[0, :P]).all() and torch.isfinite(out.logits[0, P:]).all()
    window = adapter(ids[:, P:], past_key_values=[tuple(t[:, :, :P] for t in layer) for layer in out.past_key_values],
                     use_cache=True)
    assert torch.isfinite(window.logits[0, :16]).all() and torch.isnan(window.logits[0, 16:]).all()
