"""The insert/delete phase in a decoder: the rows whose rule moves positions (`DecodeConfig.indel`, docs/indel.md).

A row with an insert/delete rule (`core.rules`, `InDel`: SGLang's JointThresholdInDel) does not go through
`denoise_step`: its rule decides the whole step of its current block from the logits at every position of
the block (`core.indel.indel_step`), and deletes and splits move positions. Its callers share this glue, so
the playground (`core.batch.DecodeBatch`) and the SGLang plugin (`serve.blocks`) cannot drift apart:

  `RowsState`    what the rows' rule carries within their current blocks (original masks, counters, the
                 anti-loop's blocks), batched while the same rows step together and handed back to each
                 row (`Member.indel`) when the set changes (`Carried`); reset per block (`next_blocks`);
  `block_at`     each row's current block of its span: columns and which are inside the block;
  `block_logits` the logits at every position of the blocks, from a forward's packed masked positions and
                 the visible positions of the blocks;
  `draw_masks`   tokens drawn at the blocks' masks for rows at temperature > 0 (each request's uniforms);
  `commit_span`  the step's block written back into the span, and the confirmation order moved with it.

Shapes: A rows, G span positions (right-padded), W positions of the widest block, V the vocabulary.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Protocol, Sequence

import torch
import torch.nn.functional as F

from dllm_viz.core import rules, sampling
from dllm_viz.core.alignment import FILL, REMASK, REWRITE, EditTokens
from dllm_viz.core.indel import InDelParams, InDelState, InDelStep, check_model


@dataclass(frozen=True)
class BlockMemory:
    """One row's carried state, between two sets of stepping rows: its block and the rule's state there."""

    index: int  # the block of the row's span (0 for a SGLang block)
    state: InDelState  # one row, `(1, ...)`, its own width


class Member(Protocol):
    indel: BlockMemory | None  # what the row carried when it last stepped in another set; None: a fresh block


def edit_tokens(model: Any) -> EditTokens:
    """The model's edit tokens, or the ValueError naming what is missing (`core.indel.check_model`)."""
    return check_model(model)


def declared_edit_ids(model: Any) -> tuple[int, ...]:
    """`(delete, split)`: the edit tokens a model declares (ints), else (): what no plain rule may draw."""
    ids = (getattr(model, "delete_token_id", None), getattr(model, "split_token_id", None))
    return tuple(ids) if all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in ids) else ()


def check_row(config: Any, model: Any, name: str) -> EditTokens | None:
    """For a row whose config chooses an insert/delete rule: the model's edit tokens, else a ValueError naming
    the rule and the model (a model that cannot edit lengths). None for the other rows."""
    if config.indel == "none":
        return None
    try:
        return edit_tokens(model)
    except ValueError as err:
        others = " | ".join(n for n, p in rules.INDELS.items() if p.step is None)
        raise ValueError(f"indel={config.indel!r} is invalid for {name}: the model cannot edit lengths ({err}); "
                         f"expected a model trained to write DELETE and SPLIT (world-indel), or indel in {others}"
                         ) from None


@dataclass
class RowsState:
    """The rows stepping together: their rule's parameters and carried state, batched."""

    members: tuple[Any, ...]  # the rows' holders (a decoder slot, a SGLang block), compared by identity
    params: InDelParams
    state: InDelState  # (A, W): the rule's state in each row's current block
    index: torch.Tensor  # (A,) long: each row's current block
    geometry: Any = None  # what the caller keeps beside them (spans, columns)

    def same(self, members: Sequence[Any]) -> bool:
        return len(members) == len(self.members) and all(a is b for a, b in zip(members, self.members))

    def flush(self) -> None:
        """Hand each row's state back to its holder (`Member.indel`), at its own width."""
        st, widths = self.state, self.params.width.tolist()
        for a, (m, w, i) in enumerate(zip(self.members, widths, self.index.tolist())):
            m.indel = BlockMemory(index=i, state=InDelState(
                prompt=st.prompt[a:a + 1, :w], orig=st.orig[a:a + 1, :w], updates=st.updates[a:a + 1],
                post_edit=st.post_edit[a:a + 1], finished=st.finished[a:a + 1], seen=st.seen[a:a + 1, :, :w],
                history=st.history[a:a + 1, :, :w]))


def stack(memories: Sequence[BlockMemory | None], fresh: InDelState, mask_id: int) -> InDelState:
    """The batched state: each row's carried memory, or `fresh` (the initial state of its block) where None."""
    A, W = fresh.orig.shape
    S = max((m.state.seen.shape[1] for m in memories if m is not None), default=0)
    if S == 0 and all(m is None for m in memories):
        return fresh

    def pad(t: torch.Tensor, width: int, value: int | bool, steps: int | None = None) -> torch.Tensor:
        t = F.pad(t, (0, W - t.shape[-1]), value=value)
        if steps is not None:
            t = F.pad(t, (0, 0, 0, steps - t.shape[1]), value=-1)
        return t

    rows = []
    for a, m in enumerate(memories):
        if m is None:
            one = InDelState(prompt=fresh.prompt[a:a + 1], orig=fresh.orig[a:a + 1], updates=fresh.updates[a:a + 1],
                             post_edit=fresh.post_edit[a:a + 1], finished=fresh.finished[a:a + 1],
                             seen=fresh.seen[a:a + 1], history=fresh.history[a:a + 1])
        else:
            one = m.state
        real = (one.seen >= 0).all(-1, keepdim=True)  # (1, S, 1): an earlier input; a row of -1: none
        seen = torch.where(real, pad(one.seen, W, mask_id), -1)  # outside a block: the mask id, as blocks pad
        rows.append((pad(one.prompt, W, False), pad(one.orig, W, False), one.updates, one.post_edit, one.finished,
                     pad(seen, W, -1, S), pad(one.history, W, -1, S)))
    cols = list(zip(*rows))
    return InDelState(prompt=torch.cat(cols[0]), orig=torch.cat(cols[1]), updates=torch.cat(cols[2]),
                      post_edit=torch.cat(cols[3]), finished=torch.cat(cols[4]), seen=torch.cat(cols[5]),
                      history=torch.cat(cols[6]))


class Carried:
    """The state of the rows that stepped last: kept batched while the same rows step again, flushed to them
    and rebuilt when the set changes (a row joins, finishes or waits)."""

    def __init__(self) -> None:
        self.current: RowsState | None = None
        self.builds = 0

    def get(self, members: Sequence[Any], build: Callable[[], RowsState]) -> RowsState:
        cur = self.current
        if cur is None or not cur.same(members):
            if cur is not None:
                cur.flush()
            self.current = build()
            self.builds += 1
        return self.current

    def clear(self) -> None:
        if self.current is not None:
            self.current.flush()
        self.current = None


# ----- the blocks of a span (the playground's decoder) -------------------------------------------
def block_at(index: torch.Tensor, size: torch.Tensor, G: int) -> tuple[torch.Tensor, torch.Tensor]:
    """`(cols (A, W), inside (A, W))`: the span columns of each row's block `index (A,)` of `size (A,)`
    positions (W the largest size); columns past a row's block point at its last position and are outside."""
    W = int(size.max())
    j = torch.arange(W, device=size.device)
    inside = j < size.unsqueeze(-1)  # (A, W)
    cols = (index * size).unsqueeze(-1) + j
    return torch.where(inside, cols, (index * size + size - 1).unsqueeze(-1)).clamp(max=max(0, G - 1)), inside


def in_blocks(cols: torch.Tensor, inside: torch.Tensor, G: int) -> torch.Tensor:
    """`(A, G)` bool: the span positions of the blocks (the columns outside a block write nowhere)."""
    A = cols.shape[0]
    out = torch.zeros(A, G + 1, dtype=torch.bool, device=cols.device)
    return out.scatter(1, torch.where(inside, cols, G), True)[:, :G]


def block_tokens(span: torch.Tensor, cols: torch.Tensor, inside: torch.Tensor, mask_id: int) -> torch.Tensor:
    """`(A, W)` the blocks' ids; the mask id outside a row's block (as `stack` pads)."""
    return torch.where(inside, span.gather(1, cols), mask_id)


def block_logits(masked_logits: torch.Tensor, masked: torch.Tensor, also_logits: torch.Tensor | None,
                 also: torch.Tensor | None, cols: torch.Tensor, inside: torch.Tensor) -> torch.Tensor:
    """`(A, W, V)` float32 logits at every position of the blocks: `masked_logits (M, V)` at the True entries of
    `masked (A, G)` and `also_logits (F, V)` at those of `also (A, G)`, each packed row-major (a forward's
    output); zeros outside a row's block."""
    A, G = masked.shape
    M, V = masked_logits.shape
    at = torch.full((A, G), -1, dtype=torch.long, device=masked.device)
    at = at.masked_scatter(masked, torch.arange(M, device=masked.device))
    if also is not None and also_logits is not None:
        at = at.masked_scatter(also, M + torch.arange(also_logits.shape[0], device=masked.device))
    here = torch.where(inside, at.gather(1, cols), -1)  # (A, W): the packed row of each block position
    out = torch.zeros(A, cols.shape[1], V, dtype=torch.float32, device=masked_logits.device)
    m = (here >= 0) & (here < M)
    out[m] = masked_logits[here[m]].float()
    if also_logits is not None:
        v = here >= M
        out[v] = also_logits[here[v] - M].float()
    return out


def draw_masks(logits: torch.Tensor, masks: torch.Tensor, u: torch.Tensor, *, temperature: torch.Tensor,
               vocab_top_k: torch.Tensor, top_p: torch.Tensor, mask_id: int) -> torch.Tensor | None:
    """`(A, W)` tokens drawn from softmax(logits / T) after the vocabulary filters at the `masks (A, W)` of the rows
    at temperature > 0, by the inverse CDF of `u (A, W)` (never the mask itself); -1 elsewhere. None when no row
    draws (every row writes the argmax, SGLang's greedy rule)."""
    where = masks & (temperature > 0).unsqueeze(-1)
    if not bool(where.any()):
        return None
    rows = where.nonzero(as_tuple=True)[0]
    here = logits[where].index_fill(-1, torch.tensor([mask_id], device=logits.device), float("-inf"))  # (K, V)
    tok, _ = sampling.draw(here, u[where], temperature=temperature[rows], vocab_top_k=vocab_top_k[rows],
                           top_p=top_p[rows], with_prob=False)
    return torch.full(masks.shape, -1, dtype=torch.long, device=masks.device).masked_scatter(where, tok)


@dataclass(frozen=True)
class SpanStep:
    """One step's result on the rows' spans."""

    span: torch.Tensor  # (A, G) ids after the step
    order: torch.Tensor  # (A, G) long: the step each position was last decided at, moved with its token
    source: torch.Tensor  # (A, G) long: span position -> the position its token held entering the step; -1: new


def commit_span(span: torch.Tensor, order: torch.Tensor, out: InDelStep, cols: torch.Tensor, inside: torch.Tensor,
                step: torch.Tensor) -> SpanStep:
    """The blocks after the step written into `span (A, G)`, and `order (A, G)` moved with the tokens: a token
    decided this step (a mask filled, a token rewritten) gets `step (A,)`, one taken back and a new mask -1."""
    A, G = span.shape
    e = out.edits
    src = torch.where(inside & (e.source >= 0), cols.gather(1, e.source.clamp(min=0)), -1)  # (A, W) span coords
    source = _scatter(torch.arange(G, device=span.device).expand(A, G), cols, inside, src)
    decided_in = (e.op == FILL) | (e.op == REWRITE)  # (A, W) input positions given a token this step
    taken_in = e.op == REMASK
    b_src = e.source.clamp(min=0)
    new = e.source >= 0
    decided = new & decided_in.gather(1, b_src)  # (A, W) output positions
    taken = new & taken_in.gather(1, b_src)
    moved = torch.where(new, order.gather(1, src.clamp(min=0)), -1)
    block_order = torch.where(decided, step.to(order.dtype).unsqueeze(-1), torch.where(taken, -1, moved))
    return SpanStep(span=_scatter(span, cols, inside, out.block.to(span.dtype)),
                    order=_scatter(order, cols, inside, block_order), source=source)


def _scatter(t: torch.Tensor, cols: torch.Tensor, inside: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    """`t (A, G)` with `values (A, W)` written at `cols` where `inside` (a new tensor)."""
    G = t.shape[1]
    wide = F.pad(t, (0, 1))  # one scratch column for the positions outside a block
    return wide.scatter(1, torch.where(inside, cols, G), values.to(t.dtype))[:, :G]


def next_blocks(rs: RowsState, span: torch.Tensor, valid: torch.Tensor, size: torch.Tensor, mask_id: int
                ) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows whose block the rule finished and whose span has masks left start the next block: their state is
    the initial one of that block (`InDelState.initial`), in place in `rs`. `span (A, G)` after the step,
    `valid (A, G)` its real positions. Returns `(masks left (A,), open (A,))`: the span's masks after the
    step, and whether the row's current block is still open."""
    left = ((span == mask_id) & valid).sum(-1)  # (A,)
    turn = rs.state.finished & (left > 0)
    if bool(turn.any()):
        rs.index = rs.index + turn.long()
        cols, inside = block_at(rs.index, size, span.shape[1])
        fresh = InDelState.initial(block_tokens(span, cols, inside, mask_id), rs.state.prompt, mask_id)
        st, t1, t3 = rs.state, turn.unsqueeze(-1), turn.view(-1, 1, 1)
        seen, history = torch.where(t3, -1, st.seen), torch.where(t3, -1, st.history)
        keep = (seen >= 0).all(-1).any(0)  # (S,): drop the earlier inputs no row compares with any more
        rs.state = InDelState(prompt=st.prompt, orig=torch.where(t1, fresh.orig, st.orig),
                              updates=st.updates.masked_fill(turn, 0), post_edit=st.post_edit.masked_fill(turn, 0),
                              finished=st.finished & ~turn, seen=seen[:, keep], history=history[:, keep])
    return left, ~rs.state.finished

