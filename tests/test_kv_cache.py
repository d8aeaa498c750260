"""The embedded models' approximate key-value cache (`dllm_viz.models.kv_cache`, issue 31).

A refresh is the uncached forward bit for bit; a window computed against the cache of the same
canvas is that forward again (within float rounding: the window's products have other shapes); a
window reads everything outside it from the cache (keys, values, and the local mixing's input at
its edges), so a cache of another canvas changes it.
"""
from __future__ import annotations

import pytest
import torch

from dllm_viz.models import kv_cache
from dllm_viz.models.base import cache_modes, check_cache
from dllm_viz.models.embedded import EmbeddedConfig, EmbeddedDenoiser, load_embedded
from tests.tiny import TinyDenoiser

TOL = 1e-5  # float32 products of other shapes (a window against the whole row) round their last bits differently


@pytest.fixture(scope="module")
def model() -> EmbeddedDenoiser:
    cfg = EmbeddedConfig(vocab_size=50, mask_token_id=2, pad_token_id=0, eos_token_id=1, d_model=32, n_layers=3,
                         n_heads=2, d_ff=64, max_length=40)
    return EmbeddedDenoiser(cfg, generator=torch.Generator().manual_seed(3)).eval().requires_grad_(False)


def _row(model, n: int, seed: int = 0, masked_from: int | None = None) -> torch.Tensor:
    ids = torch.randint(3, model.vocab_size, (1, n), generator=torch.Generator().manual_seed(seed))
    if masked_from is not None:
        ids[0, masked_from:] = model.mask_token_id
    return ids


def full(model, ids: torch.Tensor) -> torch.Tensor:
    """The uncached forward of one row `(1, N)` as `logits_at` runs it: `(N, D)`."""
    return model.packed_features(ids[0], [(0, ids.shape[1])])


def test_prefill_is_the_uncached_forward_bit_for_bit(model):
    for n in (1, 7, 33, 40):  # 33: more than one row tile
        ids = _row(model, n, seed=n)
        hidden, cache = kv_cache.prefill(model, ids)
        assert torch.equal(hidden, full(model, ids))
        torch.testing.assert_close(hidden, model.features(ids)[0], rtol=0, atol=TOL)  # the (B, N, D) path
        assert cache.length == n and len(cache.layers) == 3
        assert cache.layers[0].keys.shape == (1, 2, n, 16) and cache.layers[0].mix_in.shape == (1, 32, n)


def test_a_refresh_gives_logits_at_bit_for_bit(model):
    ids = _row(model, 30, masked_from=12)
    cols = torch.tensor([12, 13, 20, 29])
    logits, cache = model.logits_cached(ids, None, start=0, cols=cols)
    assert torch.equal(logits, model.logits_at(ids, None, torch.zeros(4, dtype=torch.long), cols))
    assert isinstance(cache, kv_cache.KVCache) and cache.length == 30


@pytest.mark.parametrize("start,end", [(12, 20), (12, 30), (0, 30), (0, 5), (1, 3), (28, 30), (29, 30), (10, 11)])
def test_a_window_against_the_cache_of_its_own_canvas_is_the_full_forward(model, start, end):
    ids = _row(model, 30, seed=5, masked_from=12)
    exact = full(model, ids)  # (30, D)
    _, cache = kv_cache.prefill(model, ids)
    hidden = kv_cache.window(model, ids[:, start:end], start, cache)
    torch.testing.assert_close(hidden, exact[start:end], rtol=0, atol=TOL)
    # Asked for some rows only (the last layer's queries and MLP at those alone), the same rows.
    rows = torch.arange(0, end - start, 2)
    torch.testing.assert_close(kv_cache.window(model, ids[:, start:end], start, cache, rows=rows), hidden[rows],
                               rtol=0, atol=TOL)
    # The prefix cache keeps only what precedes the window: a window reaching the canvas's end reads the same.
    if end == 30:
        torch.testing.assert_close(kv_cache.window(model, ids[:, start:], start, cache.truncated(start)),
                                   exact[start:], rtol=0, atol=TOL)


def test_a_window_reads_its_surroundings_from_the_cache_only(model):
    old = _row(model, 30, seed=7, masked_from=10)
    new = old.clone()
    new[0, 10:14] = torch.tensor([5, 6, 7, 8])  # the current block [10, 20) got four tokens since the refresh
    _, stale = kv_cache.prefill(model, old)
    hidden = kv_cache.window(model, new[:, 10:20], 10, stale)
    exact = full(model, new)[10:20]
    assert (hidden - exact).abs().max() > 1e-3  # stale keys after the block: an approximation, visibly
    # ... and exactly the window against the refresh of a canvas that differs from `new` only outside it.
    mixed = old.clone()
    mixed[0, 10:20] = new[0, 10:20]
    _, cache = kv_cache.prefill(model, old)
    assert torch.equal(hidden, kv_cache.window(model, mixed[:, 10:20], 10, cache))


@pytest.mark.parametrize("where", [8, 9, 20, 21, 3, 27])
def test_a_token_outside_the_window_reaches_it_through_the_cache(model, where):
    # Next to the window it reaches it through the local mixing's context too; further off, through keys.
    ids = _row(model, 30, seed=9, masked_from=10)
    other = ids.clone()
    other[0, where] = 4 if int(ids[0, where]) != 4 else 5
    _, cache = kv_cache.prefill(model, ids)
    _, cache_other = kv_cache.prefill(model, other)
    a = kv_cache.window(model, ids[:, 10:20], 10, cache)
    b = kv_cache.window(model, ids[:, 10:20], 10, cache_other)
    assert (a - b).abs().max() > 1e-4
    torch.testing.assert_close(b, full(model, other)[10:20], rtol=0, atol=TOL)


def test_the_local_mixing_context_is_needed_at_the_window_edges(model):
    # Zeroing the cached mixing input next to the window changes its edge positions: the context is read.
    ids = _row(model, 30, seed=11, masked_from=10)
    _, cache = kv_cache.prefill(model, ids)
    layers = tuple(kv_cache.LayerCache(c.keys, c.values, torch.zeros_like(c.mix_in)) for c in cache.layers)
    blind = kv_cache.window(model, ids[:, 10:20], 10, kv_cache.KVCache(layers))
    exact = full(model, ids)[10:20]
    assert (blind[0] - exact[0]).abs().max() > 1e-3 and (blind[-1] - exact[-1]).abs().max() > 1e-3


def test_bad_calls_are_named_value_errors(model):
    ids = _row(model, 30)
    _, cache = kv_cache.prefill(model, ids)
    with pytest.raises(ValueError, match="start=12"):
        kv_cache.window(model, ids[:, 12:20], 12, cache.truncated(10))  # the cache must hold what precedes it
    with pytest.raises(ValueError, match=r"start=35"):
        kv_cache.window(model, ids[:, :10], 35, cache)
    with pytest.raises(ValueError, match="one row"):
        kv_cache.prefill(model, ids.repeat(2, 1))
    with pytest.raises(ValueError, match="cols is invalid"):
        model.logits_cached(ids[:, 10:20], cache, start=10, cols=torch.tensor([25]))
    with pytest.raises(ValueError, match="start=3 is invalid without a cache"):
        model.logits_cached(ids, None, start=3, cols=torch.tensor([5]))
    with pytest.raises(ValueError, match="layers"):
        kv_cache.window(model, ids[:, 10:20], 10, kv_cache.KVCache(cache.layers[:2]))


def test_models_declare_the_caches_they_run():
    assert cache_modes(load_embedded("cpu")) == ("prefix", "dual")
    check_cache(load_embedded("cpu"), "dual")
    tiny = TinyDenoiser()
    assert cache_modes(tiny) == ()
    check_cache(tiny, "none")
    with pytest.raises(ValueError, match=r"cache='prefix' is invalid for 'tiny'.*expected none"):
        check_cache(tiny, "prefix")


def test_the_shipped_model_caches_exactly_at_a_refresh():
    model = load_embedded("cpu")
    ids = _row(model, 96, seed=2, masked_from=40)
    hidden, cache = kv_cache.prefill(model, ids)
    assert torch.equal(hidden, full(model, ids))
    torch.testing.assert_close(kv_cache.window(model, ids[:, 40:72], 40, cache), hidden[40:72], rtol=0, atol=1e-4)
    cols = torch.arange(40, 96)
    logits, _ = model.logits_cached(ids, None, start=0, cols=cols)
    assert torch.equal(logits, model.logits_at(ids, None, torch.zeros_like(cols), cols))
