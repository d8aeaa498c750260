"""Batch-invariant matrix products: every product runs on a tile of exactly `tile` rows.

A row's result in a matrix product `x @ w.T` depends on how the library blocks the product, and
the library chooses that by the product's shape: on an x86 CPU with MKL, one thread, a product of
1 to about 15 rows gives other last bits than the same row inside a product of 600 (measured for
each of the embedded model's weights), and on other libraries and devices the threshold or the
rule differs. The row count of a product is the one thing that changes when a request shares a
forward pass with others. So `tiled_linear` never lets it vary: the rows are cut into tiles of
`tile` rows, the last one zero-padded, and each tile is its own `(tile, D) x (D, D')` product. Every
product then has the same shape whatever the batch, and a row's result depends on its own values
only (a product's row i is the dot products of row i with w's rows; neither the other rows' values
nor the row's place in its tile enter it; `tests/test_tiles.py` checks both on this machine).

This is the idea of batch-invariant kernels (Horace He and Thinking Machines Lab, "Defeating
Nondeterminism in LLM Inference", 2025: fix the reduction strategy whatever the batch size),
applied at the level of PyTorch calls rather than inside the kernels.
"""
from __future__ import annotations

import torch

ROW_TILE = 32  # rows of every product of the embedded model's batched path (docs/engine.md: why 32)


def tiled_linear(x: torch.Tensor, weight: torch.Tensor, tile: int | None = None) -> torch.Tensor:
    """`x @ weight.T` for `x (R, D)` and `weight (D', D)`: `(R, D')`, computed `tile` rows at a time
    (default `ROW_TILE`, read at each call so that `bench/tile_bench.py` can compare sizes).

    Row r of the result is bit for bit the same whatever the other rows of `x` are and however
    many there are (for R >= 1, on one device, with one intra-op thread).
    """
    tile = ROW_TILE if tile is None else tile
    if tile < 1:
        raise ValueError(f"tile={tile!r} is invalid: expected an integer >= 1")
    R, D = x.shape
    full = R - R % tile  # rows in whole tiles
    out = x.new_empty(-(-R // tile) * tile, weight.shape[0])  # (whole tiles * tile, D')
    w = weight.t()  # (D, D')
    for i in range(0, full, tile):
        torch.mm(x[i : i + tile], w, out=out[i : i + tile])
    if full < R:  # the last tile, zero-padded
        last = x.new_zeros(tile, D)
        last[: R - full] = x[full:]
        torch.mm(last, w, out=out[full:])
    return out[:R]

