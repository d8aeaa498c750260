"""train.indel: the length-editing stream's targets (issue 37); the objective that trains on them is
tests/test_train_lengths.py's."""
from __future__ import annotations

import torch

from dllm_viz.train.indel import AFTER_GAP, EXTRA, PLAIN, corrupt_lengths

D, S = 998, 999
HOLE = -7


def _undo(tokens: list[int], target: list[int]) -> list[int]:
    """The decoder's operations read forward: DELETE drops the token, SPLIT opens a hole before it."""
    out: list[int] = []
    for t, z in zip(tokens, target):
        if z == D:
            continue
        out += [HOLE, t] if z == S else [t]
    return out


def test_the_targets_undo_the_corruption():
    g = torch.Generator().manual_seed(0)
    source = torch.arange(10, 70).repeat(64, 1)  # (B, S): distinct tokens, so every operation is visible
    c = corrupt_lengths(source, 48, 0.5, 0.3, torch.arange(3, 200), D, S, g)
    edited = 0
    for row in range(64):
        tokens, target, kind = c.tokens[row].tolist(), c.target[row].tolist(), c.kind[row].tolist()
        assert all((k == EXTRA) == (z == D) and (k == AFTER_GAP) == (z == S) for k, z in zip(kind, target))
        assert all(z == t for t, z, k in zip(tokens, target, kind) if k == PLAIN)
        pairs = set(zip(kind, kind[1:]))  # an extra token never stands in a gap or beside another
        assert not pairs & {(EXTRA, AFTER_GAP), (EXTRA, EXTRA)}
        restored = _undo(tokens, target)
        clean = source[row, : len(restored)].tolist()
        assert all(r in (HOLE, s) for r, s in zip(restored, clean)), row  # a hole stands where a token was removed
        edited += any(k != PLAIN for k in kind)
    assert 20 < edited < 44  # about half the rows (fraction 0.5)


def test_a_duplicate_is_deleted_at_its_second_copy():
    g = torch.Generator().manual_seed(3)
    source = torch.arange(10, 70).repeat(256, 1)
    c = corrupt_lengths(source, 48, 1.0, 0.3, torch.arange(3, 200), D, S, g)
    extra = c.kind == EXTRA
    copies = extra[:, 1:] & (c.tokens[:, 1:] == c.tokens[:, :-1])
    assert 0.3 < float(copies.sum()) / float(extra[:, 1:].sum()) < 0.7  # half of the extra tokens are copies
