"""``joint_threshold``: LLaDA 2.1's mask-to-token + token-to-token step (SGLang 0.5.23,
``python/sglang/srt/dllm/algorithm/joint_threshold.py``, ``JointThreshold._step_per_row`` and
``joint_threshold_update_step_vectorized``).

Mask to token is the schedule's (the `llada21` preset: masks whose softmax probability >
threshold, at least the most probable one). Token to token: every decided token of the block
whose raw argmax x differs from it and has probability p(x) > edit_threshold is rewritten to x,
in the same step, from the same forward (the model must predict at visible positions: it edits).
Once the block has no mask, it stays open: each further step counts one edit-only step and edits
again; it closes at the step that changes nothing or whose count exceeds max_post_edit_steps (that
step edits nothing; its forward already saw the block's final tokens). `penalty_lambda` is
subtracted from each position's logit of the token the previous position of its block holds
(`adjust`, before the step ranks and draws).

Example (the repetition penalty on a row whose positions hold tokens 3, 3):

>>> import torch
>>> from dllm_viz.core.rules.joint_threshold import previous_tokens
>>> previous_tokens(torch.tensor([[3, 3, 5, 7]]), torch.tensor([2])).tolist()
[[-1, 3, -1, 5]]
"""
from __future__ import annotations

import dataclasses

import torch

from dllm_viz.core.knobs import MAX_BUDGET, Knob
from dllm_viz.core.rules.base import Citation, Columns, Context, Plan, Revision


def plan(ctx: Context) -> Plan:
    assert ctx.seen is not None  # the step refuses joint_threshold rows without logits at decided positions
    k, st, seen = ctx.knobs, ctx.state, ctx.seen
    m = ctx.eligible.sum(-1)  # (A,)
    edit_only = m == 0  # (A,) the block has no mask: its edit-only phase
    counter = st.counter + edit_only.long()
    exceeded = edit_only & (counter > k.max_post_edit_steps)
    hold = m == ctx.quota  # (A,) no mask left after the step
    if seen.p_argmax_k is None:  # no argmax differs from its token: nothing to rewrite
        return dataclasses.replace(ctx.kept, counter=counter, hold=hold & ~edit_only, holds=True)
    # p_argmax > 0 only at the positions read (decided ones) whose argmax differs from the token, and
    # edit_threshold >= 0: the test below needs neither condition again.
    edited = (seen.p_argmax > k.edit_threshold.unsqueeze(-1)) & ~exceeded.unsqueeze(-1)  # (A, G)
    closed = edit_only & (exceeded | ~edited.any(-1))
    return dataclasses.replace(ctx.kept, edited=edited, edit_tokens=torch.where(edited, seen.argmax, -1),
                               edit_prob=seen.p_argmax.masked_fill(~edited, 0.0),
                               edit_old_prob=seen.p_token.masked_fill(~edited, 0.0), counter=counter,
                               hold=hold & ~closed, rewrites=True, holds=True)


def previous_tokens(current: torch.Tensor, block_size: torch.Tensor) -> torch.Tensor:
    """`(A, G)`: the token at the previous position of the same block, -1 at a block's first position."""
    A, G = current.shape
    prev = torch.cat([torch.full((A, 1), -1, dtype=current.dtype, device=current.device), current[:, :-1]], dim=1)
    first = torch.arange(G, device=current.device).unsqueeze(0) % block_size.unsqueeze(-1) == 0  # (A, G)
    return prev.masked_fill(first, -1)


def penalize(logits: torch.Tensor, where: torch.Tensor, prev: torch.Tensor, penalty: torch.Tensor) -> torch.Tensor:
    """JointThreshold's repetition penalty: `penalty` of the row subtracted from each position's logit
    of the token the previous position of its block holds (SGLang adds -penalty_lambda there before the
    argmax). `logits (K, 1, V)` at the True entries of `where (A, G)`; returns a new tensor."""
    rows = where.nonzero(as_tuple=True)[0]  # (K,)
    ids = prev[where]  # (K,)
    amount = torch.where(ids >= 0, penalty[rows], 0.0).to(logits.dtype)  # (K,)
    out = logits.clone()
    out[torch.arange(len(ids), device=logits.device), 0, ids.clamp(min=0)] -= amount
    return out


def adjust(sets: list[tuple[torch.Tensor, torch.Tensor]], current: torch.Tensor, block_size: torch.Tensor,
           knobs: Columns) -> list[torch.Tensor]:
    """Each `(logits (K, 1, V), where (A, G))` with the penalty applied (unchanged when no row has one)."""
    if not knobs.any("penalty_lambda"):
        return [logits for logits, _ in sets]
    prev = previous_tokens(current, block_size)
    return [penalize(logits, where, prev, knobs.penalty_lambda) for logits, where in sets]


RULE = Revision(
    name="joint_threshold", order=40, plan=plan, reads="forward", edits=True, holds=True, counts=True,
    adjust=adjust, summary="LLaDA 2.1: rewrite visible tokens (needs a model that can edit)",
    knobs=(
        Knob(name="edit_threshold", kind="float", default=0.0, hi=1.0, column="float32", slider=(0.0, 1.0, 0.01),
             help="joint_threshold: rewrite where p(argmax) > this and argmax != token; in [0, 1]"),
        Knob(name="max_post_edit_steps", kind="int", default=16, hi=MAX_BUDGET, column="long", slider=(0, 64, 1),
             help="joint_threshold: edit-only steps a block may take after its last mask (>= 0)"),
        Knob(name="penalty_lambda", kind="float", default=0.0, column="float32", slider=(0.0, 5.0, 0.1),
             help="joint_threshold: subtracted from the logit of the previous position's token"),
    ),
    extra_steps=lambda config: config.max_post_edit_steps + 1, adds_steps=lambda config: True,
    cite=Citation(repo="sgl-project/sglang 0.5.23", file="python/sglang/srt/dllm/algorithm/joint_threshold.py",
                  function="JointThreshold.step"),
)
