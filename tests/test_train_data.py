"""train.data: training batches (windows of the stream, some shorter; pairs with their padding and
answers) and the fixed held-out batches."""
from __future__ import annotations

from dataclasses import replace

import torch

from dllm_viz.train.data import batch_sampler, heldout_batches
from dllm_viz.train.pairs import Rows
from tests.train_corpus import TINY


def test_stream_batches_are_windows_some_shorter_drawn_from_the_generator_alone() -> None:
    stream = torch.arange(1000, dtype=torch.int32)  # (T,): a window's tokens count up by one
    cfg = replace(TINY, max_length=32, batch_size=4, short_fraction=0.5)
    draw, gen = batch_sampler(cfg, stream), torch.Generator().manual_seed(0)
    batches = [draw(gen) for _ in range(200)]
    for b in batches:
        assert b.real is None and b.maskable is None and b.x.dtype == torch.long and b.x.shape[0] == 4
        assert (b.x[:, 1:] - b.x[:, :-1] == 1).all()  # contiguous
    lengths = torch.tensor([b.x.shape[1] for b in batches])
    assert 16 <= int(lengths.min()) and int(lengths.max()) == 32
    assert 0.35 < float((lengths < 32).float().mean()) < 0.65  # short_fraction of the steps
    again = batch_sampler(cfg, stream)(torch.Generator().manual_seed(0))
    assert torch.equal(again.x, batches[0].x)  # the same seed, the same first batch


def test_pair_batches_carry_their_padding_and_answers() -> None:
    length = torch.tensor([3, 3, 4, 4, 5, 5, 6, 6], dtype=torch.int32)  # (R,)
    prompt_len = torch.tensor([1, 2, 1, 2, 1, 2, 1, 2], dtype=torch.int32)
    ids = torch.arange(8)[:, None].expand(8, 6) * 10 + torch.arange(6)  # (R, L)
    ids = torch.where(torch.arange(6) < length[:, None], ids, 0).int()
    rows = Rows(ids, prompt_len, length)
    cfg = replace(TINY, pairs=True, batch_size=2)
    draw, gen = batch_sampler(cfg, rows), torch.Generator().manual_seed(0)
    for _ in range(20):
        b = draw(gen)
        n = b.real.sum(1)  # (B,) each row's length
        assert b.x.shape[1] == int(n.max()) and int(n.max() - n.min()) <= 1  # rows of about one length
        assert not (b.maskable & ~b.real).any()  # padding is never an answer
        row = b.x[:, 0] // 10  # (B,) which pair each row is
        assert torch.equal(b.maskable.sum(1), (length - prompt_len)[row].long())


def test_heldout_batches_are_fixed_evenly_spaced_windows() -> None:
    stream = torch.arange(1000, dtype=torch.int32)
    cfg = replace(TINY, max_length=32, eval_windows=40)
    first, second = list(heldout_batches(stream, cfg)), list(heldout_batches(stream, cfg))
    assert [b.x.shape for b in first] == [(16, 32), (16, 32), (8, 32)]
    assert all(torch.equal(a.x, b.x) and a.maskable is None and a.real is None for a, b in zip(first, second))
    windows = torch.cat([b.x for b in first])
    assert int(windows[0, 0]) == 0 and int(windows[-1, -1]) == 999  # from the first token to the last
