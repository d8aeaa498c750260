"""Approximate key-value caches for the embedded models: Fast-dLLM's prefix and dual cache.

A masked-diffusion model re-reads the whole canvas at every step. Fast-dLLM (Wu et al. 2025,
arXiv:2505.22618; NVlabs/Fast-dLLM, ``llada/generate.py``: ``generate_with_prefix_cache``,
``generate_with_dual_cache``) runs one full forward when a block starts, keeps every layer's keys and
values, and in the block's later steps computes a window of positions only:

- prefix cache: the current block and everything after it; the prompt and the finished blocks are
  read from the cache;
- dual cache: the current block alone; the blocks after it are read from the cache too.

The window's queries attend to keys in canvas order: the cached ones before it, its own fresh
ones, the cached ones after it (Fast-dLLM's ``past_key_values`` cut at the block start, or written
over at ``replace_position``). A cached key is stale: it was computed when the canvas held what it
held at the refresh, so the window's logits differ from an exact forward's. That is the
approximation; `dllm_viz.core.batch` records it (the forward's kind, the positions it computed, and
on request the drift against the exact forward).

The embedded blocks mix each position with its ``conv_kernel // 2`` neighbours on each side before
attention (a depthwise Conv1d), so a window's edge positions also read the mixing's input outside
the window. Besides each layer's rotated keys and values the cache keeps that input
(``norm_mix(x)``, channels first as the convolution reads it) at every position, as the refresh
computed it; past the canvas's ends it is zero, the convolution's own padding.

`prefill` is the forward `EmbeddedDenoiser.logits_at` runs on a row (`Block.packed`: products in
fixed row tiles, `models.tiles`), operation for operation, so its hidden states, and the logits of a
refresh step, are bit for bit those of an uncached step; it also returns the cache. `window`
computes positions ``[start, start + W)`` against it, with plain products (a cached row runs alone,
so its window's products have one shape whatever the batch; tiles would only pad a small window).
The blocks' submodules are used as they are: nothing here changes the model.

Shapes: one canvas row at a time, N positions, H heads of size Dh, D = H * Dh, a window of W positions;
hidden states are `(positions, D)`, as `Block.packed` lays a row out.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

from dllm_viz.models.base import NEVER_LOGIT, check_inputs
from dllm_viz.models.rotary import apply_rotary
from dllm_viz.models.tiles import dense, tiled_linear

CACHE_MODES = ("prefix", "dual")  # the caches a model with `logits_cached` runs (core.config.CACHES, less "none")


@dataclass(frozen=True)
class LayerCache:
    """What one block computed at the refresh, at every position of the canvas."""

    keys: torch.Tensor  # (1, H, N, Dh) rotated keys
    values: torch.Tensor  # (1, H, N, Dh)
    mix_in: torch.Tensor  # (1, D, N) the local mixing's input, norm_mix(x), channels first


@dataclass(frozen=True)
class KVCache:
    """Every block's `LayerCache` of one canvas row, as the last full forward (the refresh) left them."""

    layers: tuple[LayerCache, ...]

    @property
    def length(self) -> int:
        """N: the canvas positions the cache holds."""
        return int(self.layers[0].keys.shape[2]) if self.layers else 0

    def truncated(self, n: int) -> KVCache:
        """The cache of positions ``[0, n)`` only (Fast-dLLM's prefix cache keeps the keys before the block)."""
        return KVCache(tuple(LayerCache(c.keys[:, :, :n], c.values[:, :, :n], c.mix_in[..., :n]) for c in self.layers))


def _attend_over(cached: torch.Tensor, fresh: torch.Tensor, start: int) -> torch.Tensor:
    """Keys (or values) in canvas order for a window: `cached (1, H, N, Dh)` with the positions
    ``[start, start + W)`` taken from `fresh (1, H, W, Dh)`, ``max(N, start + W)`` positions.

    When the cache spans the window, `fresh` is written over it in place (as Fast-dLLM's dual cache
    does at ``replace_position``): a window always recomputes its own positions, so what the cache
    held there is never read, and the whole cache is not copied at every step.
    """
    end = start + fresh.shape[2]
    if cached.shape[2] >= end:
        cached[:, :, start:end] = fresh
        return cached
    return torch.cat([cached[:, :, :start], fresh], dim=2)  # a prefix cache: the window runs to the canvas's end


def _local_mix(h: torch.Tensor, cached: torch.Tensor, start: int, weight: torch.Tensor, bias: torch.Tensor | None
               ) -> torch.Tensor:
    """The depthwise convolution of the window's mixing input `h (1, D, W)`, its context on each side
    read from `cached (1, D, N)` (zeros past the canvas, the convolution's own padding): `(1, D, W)`.

    Written as K shifted multiply-adds: on a window of a few dozen positions the convolution
    routine's set-up costs more than the arithmetic."""
    W, K = h.shape[-1], weight.shape[-1]
    reach = K // 2
    end = start + W
    left = cached[..., max(0, start - reach) : start]  # (1, D, <= reach)
    right = cached[..., end : end + reach]  # (1, D, <= reach)
    x = torch.cat([F.pad(left, (reach - left.shape[-1], 0)), h, F.pad(right, (0, reach - right.shape[-1]))], dim=-1)
    out = x[..., 0:W] * weight[:, :, 0]  # (1, D, W); weight (D, 1, K)
    for k in range(1, K):
        out = out.addcmul(x[..., k : k + W], weight[:, :, k])
    return out if bias is None else out + bias[:, None]


def _layer(block: Any, x: torch.Tensor, start: int, past: LayerCache | None, cos: torch.Tensor,
           sin: torch.Tensor, rows: torch.Tensor | None = None) -> tuple[torch.Tensor, LayerCache]:
    """One embedded `Block` on `x (W, D)`, the positions ``[start, start + W)`` of a row.

    `past` None: the window is the whole row, and this is `Block.packed` on that one row, operation
    for operation (products in row tiles; rotating queries and keys in one call is the same
    elementwise arithmetic). Otherwise the local mixing reads its context, and attention its other
    keys and values, from `past`, and the products are plain. `rows (R,)`: the output is wanted at
    those positions of the window only (the last layer needs every position's keys and values, but
    queries, and the MLP, at the scored ones alone). Returns the new `x` (`(W, D)`, or `(R, D)`)
    and the window's own `LayerCache`.
    """
    W, D = x.shape
    H = block.n_heads
    linear = tiled_linear if past is None else _plain_linear
    h = _norm(block.norm_mix, x).t().unsqueeze(0)  # (1, D, W)
    if past is None:
        mixed = block.mix(h)  # the module's own zero padding at the row's ends
    else:
        mixed = _local_mix(h, past.mix_in, start, block.mix.weight, block.mix.bias)
    x = x + mixed[0].t()  # (W, D)
    qkv = linear(_norm(block.norm_attn, x), block.qkv.weight).view(W, 3, H, D // H)  # (W, 3, H, Dh)
    q, k, v = qkv.permute(1, 2, 0, 3).contiguous()  # (H, W, Dh) each, as `Block.packed` lays a row out
    qk = apply_rotary(torch.stack([q, k]), cos, sin)  # (2, H, W, Dh)
    q, k, v = qk[0], qk[1].unsqueeze(0), v.unsqueeze(0)  # k, v (1, H, W, Dh)
    keys, values = (k, v) if past is None else (_attend_over(past.keys, k, start), _attend_over(past.values, v, start))
    if rows is not None:
        q, x = q[:, rows], x[rows]  # (H, R, Dh), (R, D)
    att = F.scaled_dot_product_attention(q.unsqueeze(0), keys, values)[0]  # (H, R, Dh), bidirectional: no mask
    x = x + linear(att.transpose(0, 1).reshape(x.shape[0], D), block.proj.weight)
    gate, up = linear(_norm(block.norm_mlp, x), block.up.weight).chunk(2, dim=-1)  # (R, d_ff) each
    return x + linear(F.silu(gate) * up, block.down.weight), LayerCache(k, v, h)


# The blocks' submodules called as the functions they are (the same operations, without the module
# call's hooks machinery, which costs more than the arithmetic on a window of a few positions).
def _norm(norm: Any, x: torch.Tensor) -> torch.Tensor:
    return F.rms_norm(x, norm.normalized_shape, norm.weight, norm.eps)


def _plain_linear(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    return dense(x, weight)


def prefill(model: Any, input_ids: torch.Tensor) -> tuple[torch.Tensor, KVCache]:
    """The full forward of one row `input_ids (1, N)`: hidden states `(N, D)` (those `logits_at`
    computes for the row, `EmbeddedDenoiser.packed_features`) and the cache of every layer."""
    check_inputs(input_ids, None, max_length=model.max_length)
    if input_ids.shape[0] != 1:
        raise ValueError(f"input_ids with shape {tuple(input_ids.shape)} is invalid: expected one row (1, N)")
    N = input_ids.shape[1]
    x = model.embed(input_ids[0])  # (N, D)
    cos, sin = model.rope_cos[:N], model.rope_sin[:N]  # (N, Dh/2)
    layers = []
    for block in model.blocks:
        x, cache = _layer(block, x, 0, None, cos, sin)
        layers.append(cache)
    return x, KVCache(tuple(layers))


def window(model: Any, input_ids: torch.Tensor, start: int, cache: KVCache, rows: torch.Tensor | None = None
           ) -> torch.Tensor:
    """Hidden states `(W, D)` of the positions ``[start, start + W)`` that `input_ids (1, W)` holds,
    every other position read from `cache` (which must hold the positions before `start`); with
    `rows (R,)` (positions of the window), those rows only, `(R, D)`."""
    check_inputs(input_ids, None, max_length=model.max_length)
    W = input_ids.shape[1]
    if input_ids.shape[0] != 1:
        raise ValueError(f"input_ids with shape {tuple(input_ids.shape)} is invalid: expected one row (1, W)")
    if not isinstance(start, int) or not 0 <= start <= cache.length or start + W > model.max_length:
        raise ValueError(f"start={start!r} is invalid: expected an integer in [0, {cache.length}] (the positions "
                         f"the cache holds) with start + {W} <= max_length={model.max_length}")
    if len(cache.layers) != len(model.blocks):
        raise ValueError(f"cache with {len(cache.layers)} layers is invalid: expected {len(model.blocks)}")
    x = model.embed(input_ids[0])  # (W, D)
    cos, sin = model.rope_cos[start : start + W], model.rope_sin[start : start + W]  # (W, Dh/2)
    last = len(model.blocks) - 1
    for i, (block, past) in enumerate(zip(model.blocks, cache.layers)):
        x, _ = _layer(block, x, start, past, cos, sin, rows if i == last else None)
    return x


def logits_cached(model: Any, input_ids: torch.Tensor, cache: KVCache | None, *, start: int, cols: torch.Tensor
                  ) -> tuple[torch.Tensor, KVCache]:
    """The logits `(M, V)` at the canvas positions `cols (M,)`, and the cache to keep.

    `cache` None: `input_ids (1, N)` is the whole row, computed in full (a refresh); the logits equal
    `model.logits_at` there bit for bit, and the cache returned is new. Otherwise `input_ids (1, W)`
    holds the positions ``[start, start + W)`` only (the window), `cols` lie inside it, and the
    cache is returned as it was.
    """
    if (not isinstance(cols, torch.Tensor) or cols.dim() != 1 or cols.dtype.is_floating_point
            or cols.dtype == torch.bool):
        raise ValueError("cols is invalid: expected a 1-D integer tensor of positions")
    if cache is None and start != 0:
        raise ValueError(f"start={start!r} is invalid without a cache: expected 0 (a full forward)")
    W = input_ids.shape[-1]
    if cols.numel() and not (start <= int(cols.min()) and int(cols.max()) < start + W):
        raise ValueError(f"cols is invalid: expected positions in [{start}, {start + W}), the computed window")
    if cache is None:  # the head as `logits_at` runs it: in row tiles
        hidden, cache = prefill(model, input_ids)
        logits = tiled_linear(model.norm_out(hidden[cols]), model.embed.weight)  # (M, V)
    else:
        logits = model.head(window(model, input_ids, start, cache, rows=cols - start))  # (M, V)
    return logits.index_fill_(-1, model.special_ids, NEVER_LOGIT), cache
