"""Batch-invariant matrix products: every row's result is the one it gets in a tile of exactly `tile` rows.

A row's result in a matrix product `x @ w.T` depends on how the library blocks the product, and
the library chooses that by the product's shape: on an x86 CPU with MKL, one thread, a product of
1 to 3 rows gives other last bits than the same row inside a product of 600 (measured for each of
the embedded model's weights), and on other libraries and devices the threshold or the rule differs.
The row count of a product is the one thing that changes when a request shares a forward pass with
others. So `tiled_linear` never lets it vary: the rows are cut into tiles of `tile` rows, the last one
zero-padded, and each tile is its own `(tile, D) x (D, D')` product. Every product then has the same
shape whatever the batch, and a row's result depends on its own values only (a product's row i is
the dot products of row i with w's rows; neither the other rows' values nor the row's place in its
tile enter it; `tests/test_tiles.py` checks both on this machine).

The tiles are the definition; a product of other row counts is only a faster way to the same bits,
taken where it is proven so (`one_shot_floor`): for each weight shape, dtype and device, products of
every row count of `ONE_SHOT_ROWS` (from 4 to 1,024) are compared bit for bit with the tiles on random
values, once per process. Where all agree from some count up (oneDNN on this CPU from 2 rows, MKL on x86
CPUs from 4), the rows go through in products of up to `ONE_SHOT_MAX` rows with no
padding but up to that count (a lone request's 66 positions cost 66 rows, not 96); where any differs,
the tiles run. Either way every row gets the tiles' bits, so a request's trace is the same alone and
in any batch.

Every product here, tile or one-shot, is `product`: oneDNN's matrix product for float32 on a CPU where
this PyTorch has it, else `torch.mm`. oneDNN picks its kernels by the CPU's instruction sets alone; MKL
(behind `torch.mm`) also by the CPU's vendor, and on an AVX-512 AMD CPU (Zen 5 here) runs its AVX2 kernels:
oneDNN is about twice as fast there at one thread (1.8 against 4.2 us a row for the qkv weight), and its
cost a row falls with the row count (2.6 us at 40 rows), so a batch's products pay where MKL's did not.
The model's plain forward (`dense`) uses it too, so `forward` and `logits_at` round their products alike.

This is the idea of batch-invariant kernels (Horace He and Thinking Machines Lab, "Defeating
Nondeterminism in LLM Inference", 2025: fix the reduction strategy whatever the batch size),
applied at the level of PyTorch calls rather than inside the kernels.
"""
from __future__ import annotations

from functools import lru_cache

import torch
import torch.nn.functional as F

ROW_TILE = 32  # rows of every product of the embedded model's batched path (docs/engine.md: why 32)
# The row counts a one-shot product is checked at, against the tiles (a dense run, then around the powers of 2).
ONE_SHOT_ROWS = (*range(4, 41), 63, 64, 65, 127, 128, 129, 255, 256, 257, 511, 512, 513, 1023, 1024)
ONE_SHOT_MAX = 1024  # rows of one product at most; more go in pieces of this many
PROBE_MAX_OUT = 4096  # weights with more output columns (an output head): no probe of every count (it costs seconds)
WIDE_MAX = 256  # ... but each count up to this many rows is checked the first time a product of that count is asked


def tiled_linear(x: torch.Tensor, weight: torch.Tensor, tile: int | None = None) -> torch.Tensor:
    """`x @ weight.T` for `x (R, D)` and `weight (D', D)`: `(R, D')`, each row as in a product of `tile` rows
    (default `ROW_TILE`, read at each call so that `bench/tile_bench.py` can compare sizes): by the tiles, or,
    at the default tile, by fewer, larger products proven to give the same bits (`one_shot_floor`).

    Row r of the result is bit for bit the same whatever the other rows of `x` are and however
    many there are (for R >= 1, on one device, with one intra-op thread).
    """
    if tile is not None and tile < 1:
        raise ValueError(f"tile={tile!r} is invalid: expected an integer >= 1")
    if tile is None:
        tile = ROW_TILE
        floor = one_shot_floor(weight.shape[0], weight.shape[1], weight.dtype, str(weight.device)) \
            if tile == 32 else None  # (proven against 32-row tiles)
        if floor is not None:
            return _pieces(x, weight, floor)
        if tile == 32 and weight.shape[0] > PROBE_MAX_OUT:  # (checked against 32-row tiles)
            return _checked(x, weight)
    return _tiles(x, weight, tile)


def product(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """`x @ weight.T` for `x (R, D)` and `weight (D', D)`: `(R, D')`, one product, by oneDNN where `_onednn` says
    it runs (float32 on a CPU), else `torch.mm`. The one kernel every product of this module goes through."""
    if _onednn(x, weight):
        return torch.ops.mkldnn._linear_pointwise(x, weight, None, "none", [], "")
    return torch.mm(x, weight.t())


def dense(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """`F.linear(x, weight)` for `x (..., D)`, by `product` where no gradient is asked for (the model's plain
    forward in inference then rounds as `logits_at` does), by `F.linear` where one is (training) or where autocast
    is on (it picks the product's dtype)."""
    if (torch.is_grad_enabled() and (x.requires_grad or weight.requires_grad)) or torch.is_autocast_enabled(
            x.device.type):
        return F.linear(x, weight)
    return product(x.reshape(-1, x.shape[-1]), weight).view(*x.shape[:-1], weight.shape[0])


def _onednn(x: torch.Tensor, weight: torch.Tensor) -> bool:
    return (x.dtype == weight.dtype == torch.float32 and x.device.type == weight.device.type == "cpu"
            and _has_onednn())


@lru_cache(maxsize=None)
def _has_onednn() -> bool:
    """Whether this PyTorch has oneDNN's linear operator (x86 and ARM wheels do), it is not switched off
    (`torch.backends.mkldnn.enabled`, read once: the probes' verdicts hold for one kernel), and it runs here."""
    if not (torch.backends.mkldnn.is_available() and torch.backends.mkldnn.enabled) \
            or not hasattr(torch.ops.mkldnn, "_linear_pointwise"):
        return False
    try:
        torch.ops.mkldnn._linear_pointwise(torch.ones(4, 8), torch.ones(2, 8), None, "none", [], "")
    except RuntimeError:
        return False
    return True


def _tiles(x: torch.Tensor, weight: torch.Tensor, tile: int) -> torch.Tensor:
    R, D = x.shape
    full = R - R % tile  # rows in whole tiles
    out = x.new_empty(-(-R // tile) * tile, weight.shape[0])  # (whole tiles * tile, D')
    for i in range(0, full, tile):
        out[i : i + tile] = product(x[i : i + tile], weight)
    if full < R:  # the last tile, zero-padded
        last = x.new_zeros(tile, D)
        last[: R - full] = x[full:]
        out[full:] = product(last, weight)
    return out[:R]


def _pieces(x: torch.Tensor, weight: torch.Tensor, floor: int) -> torch.Tensor:
    """The rows in products of up to ONE_SHOT_MAX rows, a piece below `floor` rows zero-padded to it."""
    R, D = x.shape
    if floor <= R <= ONE_SHOT_MAX:
        return product(x, weight)
    out = x.new_empty(R, weight.shape[0])
    for i in range(0, R, ONE_SHOT_MAX):
        piece = x[i : i + ONE_SHOT_MAX]
        if piece.shape[0] >= floor:
            out[i : i + piece.shape[0]] = product(piece, weight)
        else:
            padded = x.new_zeros(floor, D)
            padded[: piece.shape[0]] = piece
            out[i : i + piece.shape[0]] = product(padded, weight)[: piece.shape[0]]
    return out


def _checked(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """A wide weight's product (an output head: `one_shot_floor` probes no such weight): the rows in pieces of up
    to `WIDE_MAX` rows, each piece one product where a product of that many rows was checked to give the tiles'
    bits (`one_shot_at`), else its tiles. A decode step asks for the head at its masked positions only, a count
    that changes every step: checked once per count, the check costs about two products of that count."""
    R = x.shape[0]
    if R <= WIDE_MAX:
        return product(x, weight) if one_shot_at(R, weight) else _tiles(x, weight, 32)
    return torch.cat([_checked(x[i : i + WIDE_MAX], weight) for i in range(0, R, WIDE_MAX)])


_ONE_SHOT: dict[tuple, bool] = {}  # (rows, weight shape, dtype, device) -> one product has the tiles' bits


def one_shot_at(rows: int, weight: torch.Tensor) -> bool:
    """Whether one product of `rows` rows gives every row the bits of 32-row tiles, for a weight of this shape,
    dtype and device: checked on random rows against `weight`, the first time the count is asked (per process)."""
    key = (rows, tuple(weight.shape), weight.dtype, str(weight.device))
    if key not in _ONE_SHOT:
        g = torch.Generator().manual_seed(rows)
        x = torch.randn(rows, weight.shape[1], generator=g).to(dtype=weight.dtype, device=weight.device)
        _ONE_SHOT[key] = bool(torch.equal(product(x, weight), _tiles(x, weight, 32)))
    return _ONE_SHOT[key]


@lru_cache(maxsize=None)
def one_shot_floor(out_features: int, in_features: int, dtype: torch.dtype, device: str) -> int | None:
    """The fewest rows (4, 8, 16 or 32) from which one product gives every row the bits of 32-row tiles, for a
    weight of this shape, dtype and device: checked at every count of `ONE_SHOT_ROWS` from it up, on random
    values, once per process; None where none does (then the tiles run), and for weights wider than
    `PROBE_MAX_OUT` (not probed)."""
    if out_features > PROBE_MAX_OUT:
        return None
    g = torch.Generator().manual_seed(0)
    w = torch.randn(out_features, in_features, generator=g).to(dtype=dtype, device=device)
    x = torch.randn(ONE_SHOT_MAX, in_features, generator=g).to(dtype=dtype, device=device)
    reference = _tiles(x, w, 32)
    same = {m: torch.equal(product(x[:m], w), reference[:m]) for m in ONE_SHOT_ROWS}
    return next((floor for floor in (4, 8, 16, 32) if all(ok for m, ok in same.items() if m >= floor)), None)
