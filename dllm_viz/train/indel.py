"""The length-editing stream: training rows whose DELETE and SPLIT targets teach a model to edit lengths
(docs/indel.md).

LLaDA 2.2's decoder (SGLang's ``JointThresholdInDel``, ``core.indel``) reads two edit tokens where the model
predicts at a position: DELETE removes the position, SPLIT inserts a mask before the token there (which moves
one place right). Their training recipe is not published (LLaDA 2.2's report and SGLang PR #31773 describe
the decoding only; the weights are released, the training code and data are not), so the targets here are
the decoder's operations read backwards, beside LLaDA 2.1's two streams (``train.train``: masks to predict,
visible tokens replaced at random to restore):

  - an extra token (inserted into the clean text) has the target DELETE: deleting it restores the text;
  - the token after a removed one has the target SPLIT: splitting it opens the gap where the missing word
    goes, and the mask that opens is then filled like any mask;
  - every other position keeps the target of LLaDA 2.1's objective (the original token).

An inserted token is a copy of the token before it in half the cases (a duplicated word, the error parallel
decoding makes when two neighbouring positions draw the same word), a uniformly drawn ordinary token in the
rest; of two equal neighbours the second is the extra one, a fixed convention a model can learn. Insertions
and deletions are never adjacent to each other (a gap with an extra token in it is a replacement, which the
editing stream covers) and the first token of a window is never removed. The rate scales with ``1 - t`` as
the replacement stream's does: a canvas with few visible tokens gets few wrong ones. Masks and replacements
fall only on positions whose target is their own original token; DELETE and SPLIT positions stay visible
(the length error is seen, not guessed).

Shapes: B rows, N positions of the corrupted window, S = N + N // 4 source positions read from the stream.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

# Kind of each position of a corrupted window.
PLAIN, EXTRA, AFTER_GAP = 0, 1, 2


@dataclass(frozen=True)
class Corrupted:
    """One batch of the length-editing stream."""

    tokens: torch.Tensor  # (B, N) long: the corrupted window (extra tokens in, removed ones out)
    target: torch.Tensor  # (B, N) long: the original token, DELETE at an extra one, SPLIT after a gap
    kind: torch.Tensor  # (B, N) long: PLAIN, EXTRA or AFTER_GAP


def corrupt_lengths(source: torch.Tensor, n: int, fraction: float, rate: torch.Tensor, ordinary: torch.Tensor,
                    delete_id: int, split_id: int, generator: torch.Generator) -> Corrupted:
    """Insert and remove tokens in a ``fraction`` of the rows of ``source (B, S)``, cut to ``n`` positions.

    In those rows each source token (but the first) is removed with probability ``rate / 2`` and gets an
    extra token inserted before it with probability ``rate / 2`` (``rate`` a float or one per row, ``(B,)``),
    never two operations side by side; ``S`` must leave room for the removals (``S >= n + n // 4`` is ample
    at the rates used). Returns the window, its targets and kinds (``Corrupted``)."""
    B, S = source.shape
    rows = torch.rand(B, generator=generator) < fraction  # (B,)
    per_row = torch.as_tensor(rate, dtype=torch.float32).reshape(-1, 1)  # (B, 1) or (1, 1)
    u = torch.rand(B, S, generator=generator)  # (B, S): one draw picks none, remove or insert
    removed = rows[:, None] & (u < per_row / 2)
    inserted = rows[:, None] & (u >= per_row / 2) & (u < per_row)
    removed[:, 0] = False
    inserted[:, 0] = False
    # No two operations side by side: an operation whose left neighbour has one is dropped (left to right).
    busy = torch.zeros(B, dtype=torch.bool)
    for i in range(1, S):  # S steps over (B,) vectors: a scan, not a loop over rows
        clash = busy & (removed[:, i] | inserted[:, i])
        removed[:, i] &= ~clash
        inserted[:, i] &= ~clash
        busy = removed[:, i] | inserted[:, i]
    copy = torch.rand(B, S, generator=generator) < 0.5  # (B, S): the extra token repeats its left neighbour
    shift = torch.randint(1, ordinary.numel(), (B, S), generator=generator)
    index = torch.searchsorted(ordinary, source.clamp(min=int(ordinary[0])))
    random_other = ordinary[(index + shift) % ordinary.numel()]  # (B, S): never the token itself
    left = torch.cat([source[:, :1], source[:, :-1]], dim=1)  # (B, S): the token before each one
    extra = torch.where(copy, left, random_other)  # (B, S): what is inserted before token i
    count = (~removed).long() + inserted.long()  # (B, S): output positions of source i
    start = torch.cumsum(count, dim=1) - count  # (B, S): the first of them
    sink = 2 * S  # writes past the window land here and are dropped
    tokens = torch.zeros(B, sink + 1, dtype=torch.long)
    target = torch.zeros(B, sink + 1, dtype=torch.long)
    kind = torch.full((B, sink + 1), PLAIN, dtype=torch.long)
    at_extra = torch.where(inserted, start, sink)
    tokens.scatter_(1, at_extra, extra)
    target.scatter_(1, at_extra, torch.full_like(source, delete_id))
    kind.scatter_(1, at_extra, torch.full_like(source, EXTRA))
    after_gap = torch.cat([torch.zeros(B, 1, dtype=torch.bool), removed[:, :-1]], dim=1) & ~removed  # (B, S)
    at_token = torch.where(removed, sink, start + inserted.long())
    tokens.scatter_(1, at_token, source)
    target.scatter_(1, at_token, torch.where(after_gap, split_id, source))
    kind.scatter_(1, at_token, torch.where(after_gap, AFTER_GAP, PLAIN))
    if bool((count.sum(1) < n).any()):
        raise ValueError(f"source of {S} tokens is too short for n={n} at this rate: give S >= n + n // 4")
    return Corrupted(tokens=tokens[:, :n], target=target[:, :n], kind=kind[:, :n])

