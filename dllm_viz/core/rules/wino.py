"""``wino``: draft and verify (Feng-Hong/WINO-DLLM, ``LLaDA/decoding.py``, ``decoding_wino``).

Draft: the schedule's masks (WINO: every mask above `threshold`, at least one), at most
min(max(int(0.7 m), 5), 20) of them (m masks in the block). Verify: each decided token's probability
with itself hidden, read as `seen.p_token`. When the step drafts more than one token, the decided tokens
whose verify probability < verify_threshold are taken back; if they are at least as many as the previous
step's drafts (30 before the block's first step), only that count minus one, the least supported first.
`remask_score` is the verify probability.

Where the verify probabilities come from (`verify_pass`):
  shadow    WINO's: the step's one forward carries a shadow block, a copy of the current block whose
            row i sees everything but the token at i and the block's other shadow rows
            (`models.base.logits_shadow`; docs/as_shipped.md says what it means for the embedded models).
            One forward per step, counted as WINO counts it. With the threshold schedule and LLaDA's raw
            probability (the ``wino`` preset) the drafts and the verify are WINO's float64 and its ties
            (`core.references.wino`). A model that takes no shadow block gets per-position canvases
            instead (the run facts say so; two forwards counted).
  canvases  ours (the ``wino_canvases`` preset): a verify pass of its own, one canvas per decided
            position with that position masked (`models.base.logits_hidden`), float32, two forwards
            counted per step.
Not served: SGLang's step is given one forward's logits over the block, without a shadow block.

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
from dllm_viz.core.references.wino import verify_pick
from dllm_viz.core.rules.base import Citation, Context, Plan, Revision, select_top

# WINO's draft width: at most min(max(int(0.7 * masks of the block), 5), 20) drafts per step, and the
# count of the previous step's drafts (30 before a block's first step) bounds what a verify takes back.
WINO_SHARE, WINO_MIN_ACCEPT, WINO_MAX_ACCEPT, WINO_FIRST_LAST_ACCEPT = 0.7, 5, 20, 30
VERIFY_PASSES = ("shadow", "canvases")  # where the verify probabilities come from (module docstring)


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
    threshold = ctx.knobs.verify_threshold.unsqueeze(-1)  # (A, 1) float64
    wide = ctx.params.wide_reads if ctx.params.any_wide else None  # (A,): rows reading WINO's float64
    below = p_token.float() < threshold.float()  # float32, as torch compares a float32 tensor with 0.9
    if wide is not None:
        below = torch.where(wide.unsqueeze(-1), p_token.double() < threshold, below)
    weak = ctx.decided & below & checked
    n = weak.sum(-1)
    over = n >= last
    remasked = weak  # every weak one, where they are fewer than `last` (what select_top would keep)
    if bool(over.any()):  # too many to take back: last - 1 of them, the least supported first
        if bool((over & (last > 2)).any()):
            remasked = select_top(-p_token.float(), weak, torch.where(over, last - 1, n))
        else:  # one at most in each row over (last <= 2): select_top's first pick, without its sort
            one = _first_least(p_token.float(), weak) & (last > 1).unsqueeze(-1)  # (A, G)
            remasked = torch.where(over.unsqueeze(-1), weak & one, weak)
        if wide is not None and bool((over & wide).any()):  # WINO's own torch.topk over its row
            rows = (over & wide).nonzero().flatten().tolist()
            gen = ctx.valid.sum(-1) if ctx.valid is not None else torch.full_like(last, p_token.shape[1])
            picked = verify_pick(p_token, ctx.decided, last - 1, rows, ctx.params.prompt_length, gen,
                                 ctx.block_size, ctx.block)
            remasked = torch.where((over & wide).unsqueeze(-1), picked, remasked)
    return dataclasses.replace(ctx.kept, count=accept, remasked=remasked, remask_score=p_token.float(),
                               counter=accept)


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
        Knob(name="verify_threshold", kind="float", default=0.9, lo_open=True, hi=1.0, column="float64",
             slider=(0.05, 1.0, 0.01),
             help="wino: take back a decided token whose verify probability < this; in (0, 1]"),
        Knob(name="verify_pass", kind="choice", default="shadow", choices=VERIFY_PASSES, column="long",
             policy=False,
             help="wino: where the verify probabilities come from: shadow (WINO's shadow block in the step's "
                  "forward) | canvases (ours: one canvas per decided position, a second forward)"),
    ),
    extra_steps=lambda config: WINO_FIRST_LAST_ACCEPT, adds_steps=lambda config: True,
    reads_wide=lambda config: config.verify_pass == "shadow", shadow=lambda config: config.verify_pass == "shadow",
    cite=Citation(repo="Feng-Hong/WINO-DLLM", file="LLaDA/decoding.py", function="decoding_wino"),
)
