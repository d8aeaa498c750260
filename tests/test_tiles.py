"""Fixed row tiles (`dllm_viz.models.tiles`): a row's product does not depend on the other rows.

Checked at the embedded model's own shapes, bit for bit: whatever the other rows hold, however
many there are and wherever the row lands in its tile. The same row in one plain product of a
different row count is allowed to differ (that is why the tiles exist); it is compared with a
tolerance only.
"""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from dllm_viz.models import tiles
from dllm_viz.models.tiles import tiled_linear

SHAPES = [(256, 768), (256, 256), (256, 1408), (704, 256), (256, 16384)]  # qkv, proj, up, down, head


@pytest.mark.parametrize("d_in, d_out", SHAPES)
def test_a_row_is_the_same_in_any_batch_and_at_any_place(d_in: int, d_out: int) -> None:
    g = torch.Generator().manual_seed(d_out)
    weight = torch.randn(d_out, d_in, generator=g) * 0.05
    rows = torch.randn(5, d_in, generator=g)  # the rows we follow
    T = tiles.ROW_TILE
    alone = torch.cat([tiled_linear(rows[i : i + 1], weight) for i in range(5)])  # (5, d_out), each alone
    for before in (0, 1, T - 2, T + 3):  # other rows ahead: the followed ones land elsewhere in their tiles
        for after in (0, 7, 2 * T):
            x = torch.cat([torch.randn(before, d_in, generator=g), rows, torch.randn(after, d_in, generator=g)])
            out = tiled_linear(x, weight)
            assert out.shape == (before + 5 + after, d_out)
            assert torch.equal(out[before : before + 5], alone), (before, after)
    torch.testing.assert_close(alone, F.linear(rows, weight), rtol=1e-5, atol=1e-5)


def test_tile_size_is_validated_and_read_at_each_call(monkeypatch: pytest.MonkeyPatch) -> None:
    x, w = torch.ones(3, 4), torch.ones(2, 4)
    with pytest.raises(ValueError, match="^tile=0 is invalid"):
        tiled_linear(x, w, tile=0)
    monkeypatch.setattr(tiles, "ROW_TILE", 2)
    assert tiled_linear(x, w).tolist() == [[4.0, 4.0]] * 3
    assert tiled_linear(x[:0], w).shape == (0, 2)


@pytest.mark.parametrize("d_in, d_out", SHAPES)
def test_the_default_path_gives_the_tiles_bits_whatever_the_probe_decided(d_in: int, d_out: int) -> None:
    """`tiled_linear` runs fewer, larger products only where `one_shot_floor` proved them equal to the
    32-row tiles on this machine; either way every row has the tiles' bits, at every row count."""
    g = torch.Generator().manual_seed(d_in + d_out)
    weight = torch.randn(d_out, d_in, generator=g) * 0.05
    x = torch.randn(1100, d_in, generator=g)
    for rows in (1, 2, 3, 5, 17, 31, 33, 66, 96, 130, 1024, 1100):
        assert torch.equal(tiled_linear(x[:rows], weight), tiled_linear(x[:rows], weight, tile=32)), rows
    floor = tiles.one_shot_floor(d_out, d_in, torch.float32, "cpu")
    assert floor in (None, 4, 8, 16, 32) and (floor is None) == (d_out > tiles.PROBE_MAX_OUT or floor is None)


def test_a_wide_weight_runs_one_product_only_at_counts_checked_against_the_tiles() -> None:
    """An output head (wider than PROBE_MAX_OUT) is not probed at every count up front; each count it is asked
    at is checked once (`one_shot_at`), and every row has the tiles' bits whichever way it went."""
    g = torch.Generator().manual_seed(7)
    weight = torch.randn(tiles.PROBE_MAX_OUT + 100, 48, generator=g) * 0.05
    x = torch.randn(tiles.WIDE_MAX + 40, 48, generator=g)
    for rows in (1, 3, 4, 9, 32, 33, 70, tiles.WIDE_MAX, tiles.WIDE_MAX + 40):
        assert torch.equal(tiled_linear(x[:rows], weight), tiled_linear(x[:rows], weight, tile=32)), rows
    checked = {key[0] for key in tiles._ONE_SHOT if key[1] == tuple(weight.shape)}
    assert {1, 3, 4, 9, 32, 33, 70, tiles.WIDE_MAX, 40} <= checked  # the last count in pieces: 256 + 40
    assert all(isinstance(tiles.one_shot_at(n, weight), bool) for n in checked)


def test_dense_is_the_tiles_product_in_inference_and_f_linear_under_autograd() -> None:
    """The plain forward's products (`dense`) round as `tiled_linear`'s at any leading shape; where a gradient is
    asked for (training) they are `F.linear`, and the gradient flows."""
    g = torch.Generator().manual_seed(11)
    weight = torch.randn(768, 256, generator=g) * 0.05
    x = torch.randn(3, 22, 256, generator=g)
    out = tiles.dense(x, weight)
    assert out.shape == (3, 22, 768)
    assert torch.equal(out.reshape(66, 768), tiles.product(x.reshape(66, 256), weight))
    floor = tiles.one_shot_floor(768, 256, torch.float32, "cpu")
    if floor is not None and floor <= 66:  # where this CPU's one-shot products are proven, the tiles' bits too
        assert torch.equal(out.reshape(66, 768), tiled_linear(x.reshape(66, 256), weight))
    torch.testing.assert_close(out, F.linear(x, weight), rtol=1e-5, atol=1e-5)
    trained = weight.clone().requires_grad_(True)
    loss = tiles.dense(x, trained).square().sum()
    loss.backward()
    assert trained.grad is not None and trained.grad.shape == weight.shape
    with torch.no_grad():
        assert torch.equal(tiles.dense(x, trained), out)


def test_product_is_the_same_for_a_row_at_every_row_count_from_the_floor() -> None:
    """`product` (oneDNN where this PyTorch has it, else torch.mm) gives a row the same bits in products of every
    row count from the probed floor up, at the embedded model's shapes: what lets batches skip the tiles."""
    g = torch.Generator().manual_seed(12)
    for d_in, d_out in SHAPES[:4]:
        weight = torch.randn(d_out, d_in, generator=g) * 0.05
        x = torch.randn(300, d_in, generator=g)
        floor = tiles.one_shot_floor(d_out, d_in, torch.float32, "cpu")
        if floor is None:
            continue
        reference = tiles.product(x, weight)
        for rows in sorted({floor, floor + 1, 31, 64, 97, 200, 299} - set(range(floor))):  # from the floor up
            assert torch.equal(tiles.product(x[:rows], weight), reference[:rows]), (d_in, d_out, rows)
