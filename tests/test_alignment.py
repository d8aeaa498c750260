"""core.alignment: DELETE and SPLIT applied to a block, the per-step maps, and lineage (issue 37).

Hand-made blocks with the result SGLang's `_apply_edit_operations` docstring prescribes (DELETE removes a
position and the block is padded with a mask; SPLIT expands a position to [mask, old token]; cut to the
block size; the old token keeps its original-mask flag, the new mask is not original); tests/sglang
compares the same function with SGLang's own on thousands of steps.
"""
from __future__ import annotations

import pytest
import torch

from dllm_viz.core.alignment import DELETE, FILL, KEEP, REMASK, REWRITE, EditTokens, apply_edits, lineage

M, D, S = 9, 10, 11  # mask, DELETE, SPLIT
TOKENS = EditTokens(mask=M, delete=D, split=S)


def edit(block, written, *, orig=None, prompt=0, width=None):
    L = len(block)
    b = torch.tensor([block])
    w = torch.tensor([written])
    o = torch.tensor([orig if orig is not None else [t == M for t in block]])
    p = torch.tensor([[j < prompt for j in range(L)]])
    inside = torch.tensor([[j < (width if width is not None else L) for j in range(L)]])
    new, flags, e = apply_edits(b, w, o, p, inside, TOKENS)
    return new[0].tolist(), flags[0].tolist(), e


def test_a_delete_closes_up_and_pads_the_end_with_a_new_mask():
    new, flags, e = edit([1, 2, 3, M], [-1, D, -1, -1])
    assert new == [1, 3, M, M] and flags == [False, False, True, False]  # the original mask moved left
    assert e.op[0].tolist() == [KEEP, DELETE, KEEP, KEEP]
    assert e.target[0].tolist() == [0, -1, 1, 2] and e.source[0].tolist() == [0, 2, 3, -1]
    assert e.operations(0) == [(1, "delete", 2)]


def test_a_split_opens_a_mask_before_the_token_and_cuts_the_last_one():
    new, flags, e = edit([1, 2, 3, 4], [-1, S, -1, -1])
    assert new == [1, M, 2, 3] and flags == [False] * 4
    assert e.target[0].tolist() == [0, 2, 3, -1] and e.source[0].tolist() == [0, -1, 1, 2]
    assert e.operations(0) == [(1, "split", 2), (3, "cut", 4)]


def test_a_split_at_the_last_position_pushes_its_own_token_out():
    new, _, e = edit([1, 2, 3, 4], [-1, -1, -1, S])
    assert new == [1, 2, 3, M] and e.target[0].tolist() == [0, 1, 2, -1]
    assert e.operations(0) == [(3, "split", 4), (3, "cut", 4)]


def test_a_split_of_a_mask_keeps_its_flag_on_the_moved_mask():
    new, flags, e = edit([1, M, M, 4], [-1, S, -1, -1])
    assert new == [1, M, M, M] and flags == [False, False, True, True]
    assert e.source[0].tolist() == [0, -1, 1, 2]


def test_a_delete_of_the_last_position_and_a_split_in_one_step():
    new, flags, e = edit([1, 2, 3, 4, 5], [S, -1, -1, -1, D])
    assert new == [M, 1, 2, 3, 4] and flags == [False] * 5
    assert e.target[0].tolist() == [1, 2, 3, 4, -1]
    assert [op for _, op, _ in e.operations(0)] == ["split", "delete"]


def test_writes_are_classified_and_the_prompt_and_outside_never_move():
    new, _, e = edit([7, M, 2, 3, M, 8], [-1, 4, 5, M, M, -1], prompt=1, width=5)
    assert new == [7, 4, 5, M, M, 8]
    assert e.op[0].tolist() == [KEEP, FILL, REWRITE, REMASK, KEEP, KEEP]  # MASK on a mask changes nothing
    new, _, e = edit([7, D, 2, 3, M, 8], [-1, -1, D, -1, -1, -1], prompt=2, width=5)
    assert new == [7, D, 3, M, M, 8]  # a DELETE id in the prompt is a committed token, the 8 is outside
    assert e.source[0].tolist() == [0, 1, 3, 4, -1, 5]


def test_lineage_follows_final_tokens_back_to_where_they_entered():
    _, _, first = edit([1, 2, 3, 4], [-1, S, -1, -1])  # [1, M, 2, 3]
    _, _, second = edit([1, M, 2, 3], [D, 5, -1, -1])  # [5, 2, 3, M]
    origin, born = lineage([first.source, second.source])
    assert born[0].tolist() == [0, -1, -1, 1]  # the 5 came from the mask step 0 opened; the last mask is step 1's
    assert origin[0].tolist() == [1, 1, 2, 3]
    with pytest.raises(ValueError, match="sources"):
        lineage([])


def test_the_record_is_json_ready():
    _, _, e = edit([1, 2, 3, 4], [-1, S, -1, -1])
    rec = e.record(0)
    assert rec == {"edits": [[1, "split", 2], [3, "cut", 4]], "source": [0, -1, 1, 2]}
    assert e.where_rows(torch.tensor([False])).record(0) == {"edits": [], "source": [0, 1, 2, 3]}
    assert bool(e.moved[0]) and not bool(e.where_rows(torch.tensor([False])).moved[0])
