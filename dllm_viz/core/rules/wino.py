"""``wino``: draft and verify (Feng-Hong/WINO-DLLM, ``LLaDA/decoding.py``, ``decoding_wino``).

Draft: the schedule's masks (WINO: every mask above `threshold`, at least one), at most
min(max(int(0.7 m), 5), 20) of them (m masks in the block). Verify: WINO appends a shadow copy
of the block whose position i attends to everything but the token at i, so one forward also
gives each decided token's probability without seeing itself; here that is the verify pass
(`models.base.logits_hidden`, a forward that counts in NFE), read as `seen.p_token`. When the
step drafts more than one token, the decided tokens whose verify probability < verify_threshold
are taken back; if they are at least as many as the previous step's drafts (30 before the
block's first step), only that count minus one, the least supported first. `remask_score` is
the verify probability. Not served: SGLang's step is given one forward's logits, and the verify
pass is a second forward.

Example (WINO's draft cap for m masks in the block):

>>> import torch
>>> from dllm_viz.core.rules.wino import draft_cap
>>> draft_cap(40, torch.device("cpu"))[[1, 8, 10, 40]].tolist()
[5, 5, 7, 20]
"""
from __future__ import annotations

import dataclasses
from functools import lru_cache

import torch

from dllm_viz.core.knobs import Knob
from dllm_viz.core.rules.base import Citation, Context, Plan, Revision, select_top

# WINO's draft width: at most min(max(int(0.7 * masks of the block), 5), 20) drafts per step, and the
# count of the previous step's drafts (30 before a block's first step) bounds what a verify takes back.
WINO_SHARE, WINO_MIN_ACCEPT, WINO_MAX_ACCEPT, WINO_FIRST_LAST_ACCEPT = 0.7, 5, 20, 30


@lru_cache(maxsize=64)
def draft_cap(G: int, device: torch.device) -> torch.Tensor:
    """`(G + 1,)` long: WINO's draft cap min(max(int(0.7 m), 5), 20) for m masks (shared: nothing writes it)."""
    m = torch.arange(G + 1, device=device)
    return torch.floor(m.double() * WINO_SHARE).long().clamp(min=WINO_MIN_ACCEPT, max=WINO_MAX_ACCEPT)


def plan(ctx: Context) -> Plan:
    assert ctx.seen is not None  # the step refuses wino rows without verify logits
    m = ctx.eligible.sum(-1)
    accept = torch.minimum(ctx.quota, draft_cap(ctx.decided.shape[1], ctx.decided.device)[m])  # (A,)
    last = torch.where(ctx.block_step == 0, WINO_FIRST_LAST_ACCEPT, ctx.state.counter)
    checked = ((accept > 1) & ctx.may_remask).unsqueeze(-1)  # (A, 1): WINO verifies when it drafted several
    p_token = ctx.seen.p_token  # (A, G): 0 outside the positions read, which are decided ones
    weak = ctx.decided & (p_token < ctx.knobs.verify_threshold.unsqueeze(-1)) & checked
    n = weak.sum(-1)
    over = n >= last
    remasked = weak  # every weak one, where they are fewer than `last` (what select_top would keep)
    if bool(over.any()):  # too many to take back: last - 1 of them, the least supported first
        if bool((over & (last > 2)).any()):
            remasked = select_top(-p_token, weak, torch.where(over, last - 1, n))
        else:  # one at most in each row over (last <= 2): select_top's first pick, without its sort
            one = _first_least(p_token, weak) & (last > 1).unsqueeze(-1)  # (A, G)
            remasked = torch.where(over.unsqueeze(-1), weak & one, weak)
    return dataclasses.replace(ctx.kept, count=accept, remasked=remasked, remask_score=p_token, counter=accept)


def _first_least(score: torch.Tensor, pool: torch.Tensor) -> torch.Tensor:
    """`(A, G)` bool: the first position of each row's smallest `score` within `pool` (a position of
    a row with an empty pool, which the caller masks by `pool`). The same as `select_top(-score, pool, 1)`:
    its stable sort ranks first the earliest of the ties, and `min` returns the first minimal index.
    `score` must be finite in `pool` (+inf marks the positions outside it)."""
    least = score.masked_fill(~pool, float("inf")).min(-1).indices  # (A,)
    return torch.arange(score.shape[-1], device=score.device) == least.unsqueeze(-1)


RULE = Revision(
    name="wino", order=30, plan=plan, reads="hidden",
    served="WINO's verify pass is a second forward, which SGLang's DllmAlgorithm.step (given one forward's "
           "logits) cannot run",
    summary="WINO: draft, then a verify pass takes back what it no longer supports",
    knobs=(
        Knob(name="verify_threshold", kind="float", default=0.9, lo_open=True, hi=1.0, column="float32",
             slider=(0.05, 1.0, 0.01),
             help="wino: take back a decided token whose verify probability < this; in (0, 1]"),
    ),
    extra_steps=lambda config: WINO_FIRST_LAST_ACCEPT, adds_steps=lambda config: True,
    cite=Citation(repo="Feng-Hong/WINO-DLLM", file="LLaDA/decoding.py", function="decoding_wino"),
)
