"""Positions that move (docs/indel.md): a step's DELETE and SPLIT applied to a block, and the alignment it leaves.

Once a decoder can delete and insert, a position is no longer a place on the canvas: the token at
position 12 now may be the one that stood at 11 a step ago. `apply_edits` writes a step's tokens into its
block the way SGLang 0.5.23 does (``python/sglang/srt/dllm/algorithm/joint_threshold_indel.py``,
``JointThresholdInDel._apply_edit_operations``): in the generated part of the block, DELETE drops its
position, SPLIT becomes two, a new mask and then the token that stood there (which keeps its
original-mask flag, the new mask is not original); the result is cut to the block's size or padded with
masks (not original) at its end; the prompt part never changes. Batched: SGLang builds a Python list per
row, here a cumulative sum gives every kept or split position its place in the new block at once.

Each step's record (`StepEdits`) holds, per position of the block that entered the step, what was done
there (`op`: KEEP, FILL a mask, REWRITE a token, REMASK it, DELETE, SPLIT) and where its token went
(`target`, -1 when deleted or cut past the block's end), and per position of the block the step left,
where its token came from (`source`, -1 for a new mask, opened by a split or padded after a delete). The
sources of a run's steps follow every final token back to where it entered the canvas (`lineage`).

Shapes: A rows, L positions of the block tensor; a row's block may be narrower (`inside`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch

KEEP, FILL, REWRITE, REMASK, DELETE, SPLIT = range(6)
OP_NAMES = ("keep", "fill", "rewrite", "remask", "delete", "split")
CUT = "cut"  # a token pushed past the block's end by a split before it (in `operations`, not an `op` code)


@dataclass(frozen=True)
class EditTokens:
    """The model's ids of the tokens the insert/delete rule reads (LLaDA 2.2: SGLang's DllmConfig)."""

    mask: int
    delete: int
    split: int


@dataclass(frozen=True)
class StepEdits:
    """One step's alignment between the block that entered it and the block it left."""

    op: torch.Tensor  # (A, L) int8: KEEP / FILL / REWRITE / REMASK / DELETE / SPLIT at each input position
    old: torch.Tensor  # (A, L) long: the input block (the token each operation found)
    written: torch.Tensor  # (A, L) long: the token the step wrote at each input position, -1 where none
    target: torch.Tensor  # (A, L) long: input position -> output position of its token; -1: deleted or cut
    source: torch.Tensor  # (A, L) long: output position -> input position its token came from; -1: new mask

    @property
    def cut(self) -> torch.Tensor:  # (A, L) bool: tokens pushed past the block's end (not deleted)
        return (self.target < 0) & (self.op != DELETE)

    @property
    def moved(self) -> torch.Tensor:  # (A,) bool: some position of the row moved (a delete, split or cut)
        return (self.source != torch.arange(self.source.shape[1], device=self.source.device)).any(-1)

    def where_rows(self, rows: torch.Tensor) -> StepEdits:
        """These edits on `rows (A,)`, nothing done elsewhere (identity maps, KEEP)."""
        keep = ~rows.unsqueeze(-1)
        ident = torch.arange(self.op.shape[1], device=self.op.device).expand_as(self.target)
        return StepEdits(op=self.op.masked_fill(keep, KEEP), old=self.old, written=self.written.masked_fill(keep, -1),
                         target=torch.where(keep, ident, self.target), source=torch.where(keep, ident, self.source))

    def operations(self, row: int) -> list[tuple[int, str, int]]:
        """The row's operations as `(input position, kind, old token)`, in position order: every op but
        KEEP, and ``"cut"`` for a token a split pushed out of the block (after its own op, if any)."""
        return operations_of(self.op[row].tolist(), self.old[row].tolist(), self.cut[row].tolist())

    def record(self, row: int) -> dict:
        """JSON-ready alignment of one row (the trace's per-step record, docs/indel.md): ``edits``, a list of
        ``[position, kind, old token]``, and ``source``, the map from this step's positions to the last one's
        (-1 for a new mask)."""
        return {"edits": [list(e) for e in self.operations(row)], "source": self.source[row].tolist()}


def operations_of(op: list[int], old: list[int], cut: list[bool]) -> list[tuple[int, str, int]]:
    """`StepEdits.operations` of one row's host-side lists."""
    out = []
    for i, (o, t, c) in enumerate(zip(op, old, cut)):
        if o != KEEP:
            out.append((i, OP_NAMES[o], t))
        if c:
            out.append((i, CUT, t))
    return out


def apply_edits(block: torch.Tensor, written: torch.Tensor, orig: torch.Tensor, prompt: torch.Tensor,
                inside: torch.Tensor, tokens: EditTokens) -> tuple[torch.Tensor, torch.Tensor, StepEdits]:
    """`block (A, L)` with `written (A, L)` (a token, -1 where the step wrote none) applied, DELETE and SPLIT
    included. `orig (A, L)` the original-mask flags, `prompt (A, L)` the block's prompt prefix, `inside (A, L)`
    the row's block positions (a prefix; the rest never changes). Returns `(new block, new orig, StepEdits)`.
    """
    A, L = block.shape
    pos = torch.arange(L, device=block.device).expand(A, L)  # (A, L)
    wrote = written >= 0
    after = torch.where(wrote, written, block)  # SGLang's block_tokens: the writes in place
    generated = inside & ~prompt
    is_delete = generated & (after == tokens.delete)
    is_split = generated & (after == tokens.split)
    count = torch.where(inside, 1 - is_delete.long() + is_split.long(), 0)  # (A, L): output positions of each
    start = torch.cumsum(count, dim=-1) - count  # (A, L): the first of them
    width = inside.sum(-1, keepdim=True)  # (A, 1)
    sink = 2 * L  # writes past the block land here and are dropped
    first = torch.where((count > 0) & (start < width), start, sink)  # a split's mask, or the (written) token
    second = torch.where(is_split & (start + 1 < width), start + 1, sink)  # a split's old token, moved right
    tok = torch.full((A, sink + 1), tokens.mask, dtype=block.dtype, device=block.device)
    flag = torch.zeros(A, sink + 1, dtype=torch.bool, device=block.device)
    src = torch.full((A, sink + 1), -1, dtype=torch.long, device=block.device)
    tok.scatter_(1, first, torch.where(is_split, tokens.mask, after))
    flag.scatter_(1, first, orig & ~is_split)
    src.scatter_(1, first, torch.where(is_split, -1, pos))
    tok.scatter_(1, second, block)
    flag.scatter_(1, second, orig)
    src.scatter_(1, second, pos)
    new_block = torch.where(inside, tok[:, :L], block)
    new_orig = torch.where(inside, flag[:, :L], orig)
    source = torch.where(inside, src[:, :L], pos)
    landed = torch.where(is_split, second, first)  # (A, L): where each input position's token went
    target = torch.where(inside, torch.where(landed < sink, landed, -1), pos)
    return new_block, new_orig, StepEdits(op=_ops(block, written, wrote, is_delete, is_split, tokens.mask),
                                          old=block, written=written, target=target, source=source)


def _ops(block: torch.Tensor, written: torch.Tensor, wrote: torch.Tensor, is_delete: torch.Tensor,
         is_split: torch.Tensor, mask: int) -> torch.Tensor:
    """`(A, L)` int8: the operation at each input position (a write that changes nothing is KEEP)."""
    changed = wrote & (written != block)
    op = torch.where(block == mask, FILL, torch.where(written == mask, REMASK, REWRITE))
    op = torch.where(changed, op, KEEP)
    op = torch.where(wrote & is_delete, DELETE, op)
    return torch.where(wrote & is_split, SPLIT, op).to(torch.int8)


def lineage(sources: Sequence[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """Follow each position of the last block back through the steps' `source (A, L)` maps, last to first.

    Returns `(origin (A, L), born (A, L))`: `born` the step whose output first held the token's position (a
    mask opened by a split or padded then; -1: the position was in the block before the first step), and
    `origin` where that was: its position in that step's output, or in the first step's input."""
    if not sources:
        raise ValueError("sources=[] is invalid: expected the source maps of at least one step")
    A, L = sources[-1].shape
    at = torch.arange(L, device=sources[-1].device).expand(A, L).clone()  # (A, L)
    born = torch.full((A, L), -1, dtype=torch.long, device=at.device)
    alive = torch.ones(A, L, dtype=torch.bool, device=at.device)
    for step in range(len(sources) - 1, -1, -1):
        prev = sources[step].gather(1, at)
        new = alive & (prev < 0)
        born = torch.where(new, step, born)
        alive = alive & ~new
        at = torch.where(alive, prev, at)
    return at, born
