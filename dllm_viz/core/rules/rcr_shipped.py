"""``rcr_shipped``: Running Confidence Remasking as MDPO's code runs it (autonomousvision/mdpo,
``src/mdlm_generation_utils.py``, ``diffusion_generate(rcr=True)``; ``src/llada/generate.py``,
``get_num_transfer_tokens_maskgit`` with ``gamma_func`` "linear").

The original's own loop, step by step on the same logits (the step's schedule and draw are not used;
the rule owns the step, `Revision.owns`):

  quotas    a block of M masks (counted at its first step) over S steps (`DecodeConfig.total_steps` /
            blocks) shows ``M - floor(M r_t)`` tokens after step t, r_t = clip(1 - (t + 1) / S, 1e-6, 1)
            in float64 (MaskGIT's linear schedule: 64 masks in 24 steps go 3, 3, 2, 3, 3, 2, ...);
  fill      the confidence is the maximum of softmax(logits) after MDPO's nucleus (`top_p`: a token is
            dropped once the mass of the tokens before it exceeds top_p, its logit set to the dtype's
            minimum; the preset's 0.95 is `test_llada.py`'s default), -inf outside the masks of the row
            up to the current block's end; the top ``M - shown(t - 1)`` of the canvas row (prompt
            included, `torch.topk`, its own order among ties) get the argmax and record that confidence
            in one running confidence over the whole row;
  take back except at the block's last step, the ``M - shown(t)`` positions of the row with the lowest
            running confidence (0, never decided, read as 1.0; `torch.topk(largest=False)`) go back to
            the mask: earlier blocks' tokens too, refilled at a later step.

Each block takes exactly S steps (it is held open while its masks are filled early). At T > 0 the token is
drawn from that distribution (MDPO's ``Categorical``) with the step's own uniform (inverse CDF): the same
distribution, not MDPO's random stream.

The one divergence, by design: MDPO reads the prompt's running confidence as 1.0 too, so when fewer
positions than the take-back's count sit below 1.0 (a saturated float32 softmax, or with the nucleus every
position whose top token has probability above top_p), ``topk(largest=False)`` may pick prompt positions
and MDPO masks and refills them (its output, the generated part, does not show it). Here the prompt stays
as given: a prompt position picked at a tie is left alone, and the step takes back one fewer.

Example (MaskGIT's linear split of 64 masks in 24 steps):

>>> from dllm_viz.core.rules.rcr_shipped import maskgit_shown
>>> shown = [maskgit_shown(64, 24, t) for t in range(-1, 6)]
>>> [b - a for a, b in zip(shown, shown[1:])]
[3, 3, 2, 3, 3, 2]
"""
from __future__ import annotations

import dataclasses
import math

import torch

from dllm_viz.core.rules.base import Citation, Context, Plan, Revision

NAME = "rcr_shipped"


def maskgit_shown(masks: int, steps: int, t: int) -> int:
    """Tokens of a block of `masks` masks shown after step `t` (0-based; -1: before the first) of `steps`,
    MaskGIT's linear schedule as MDPO computes it (float64)."""
    if t < 0:
        return 0
    ratio = min(max(1.0 - (t + 1) / steps, 1e-6), 1.0)
    return masks - math.floor(masks * ratio)


def nucleus(logits: torch.Tensor, top_p: torch.Tensor) -> torch.Tensor:
    """MDPO's ``top_p_logits`` on the rows of `logits (M, V)` whose `top_p (M,)` is below 1: sorted
    descending, a token is dropped once the softmax mass before it exceeds top_p (the first always kept),
    its logit set to the dtype's minimum. Rows at 1 are left as they are (MDPO skips the call)."""
    rows = top_p < 1
    if not bool(rows.any()):
        return logits
    part = logits[rows]  # (m, V)
    ranked, order = torch.sort(part, descending=True)
    drop = torch.softmax(ranked, dim=-1).cumsum(-1) > top_p[rows].unsqueeze(-1)
    drop[..., 1:] = drop[..., :-1].clone()
    drop[..., 0] = False
    out = logits.clone()
    out[rows] = part.masked_fill(torch.zeros_like(drop).scatter(-1, order, drop), torch.finfo(part.dtype).min)
    return out


def predict(x) -> tuple[torch.Tensor, torch.Tensor]:
    """`(conf, pred)`, `(A, G)` each, at the step's masked positions (`x`: `core.packed.Packed`): MDPO's
    confidence and token (the logits over T when T > 0, the nucleus, the softmax's maximum, or a draw)."""
    logits = x.logits[:, 0]  # (M, V) float32
    hot = x.temperature > 0
    if bool(hot.any()):
        logits = torch.where(hot.unsqueeze(-1), logits / x.temperature.clamp(min=1e-4).unsqueeze(-1), logits)
    p = torch.softmax(nucleus(logits, x.top_p), dim=-1)  # (M, V)
    conf, pred = p.max(dim=-1)
    if bool(hot.any()):  # Categorical(p) by inverse CDF on the position's own uniform
        drawn = torch.searchsorted(p.cumsum(-1), x.noise[0].unsqueeze(-1).to(p.dtype)).squeeze(-1)
        drawn = drawn.clamp(max=p.shape[-1] - 1)
        pred = torch.where(hot, drawn, pred)
        conf = torch.where(hot, p.gather(-1, drawn.unsqueeze(-1)).squeeze(-1), conf)
    return x.unpack(conf.unsqueeze(-1)).squeeze(-1), x.unpack(pred.unsqueeze(-1), -1).squeeze(-1)


def plan(ctx: Context) -> Plan:
    conf, pred = predict(ctx.x)  # (A, G) each
    running = ctx.state.decided_conf  # (A, G) float32: 0 where never decided
    A, G = ctx.current.shape
    chosen = torch.zeros(A, G, dtype=torch.bool, device=conf.device)
    remasked, next_conf = chosen.clone(), running.clone()
    counter, hold = ctx.state.counter.clone(), torch.zeros(A, dtype=torch.bool, device=conf.device)
    host = torch.stack([ctx.params.prompt_length, ctx.block, ctx.block_size, ctx.block_step, ctx.steps_per_block,
                        ctx.valid.sum(-1) if ctx.valid is not None else torch.full_like(ctx.block, G),
                        counter]).tolist()
    for a in ctx.params.rows_of(NAME):
        P, block, size, t, S, g, masks = (column[a] for column in host)
        end = min(g, (block + 1) * size)  # the current block's end, in generated positions
        masked = ctx.masked[a, :g]
        if t == 0:  # the block's masks at its first step: its MaskGIT quotas
            masks = int(masked[block * size:end].sum())
            counter[a] = masks
        row = torch.full((P + g,), float("-inf"), dtype=conf.dtype, device=conf.device)
        row[P:P + end] = torch.where(masked[:end], conf[a, :end], float("-inf"))
        fill = torch.topk(row, k=maskgit_shown(masks, S, S - 1) - maskgit_shown(masks, S, t - 1)).indices
        fill = fill[fill >= P] - P  # a prompt position picked at -inf: the prompt stays as given
        filled = torch.zeros(g, dtype=torch.bool, device=conf.device)
        filled[fill] = True
        run = torch.where(filled, row[P:], running[a, :g])  # the running confidence after the fill
        back = torch.zeros_like(filled)
        if t != S - 1:
            score = torch.cat([torch.ones(P, dtype=run.dtype, device=run.device), torch.where(run == 0, 1.0, run)])
            picked = torch.topk(score, k=maskgit_shown(masks, S, S - 1) - maskgit_shown(masks, S, t),
                                largest=False).indices
            back[picked[picked >= P] - P] = True  # (a prompt position picked at a tie: left as given)
        chosen[a, :g] = masked & filled & ~back
        remasked[a, :g] = ~masked & back
        next_conf[a, :g] = run
        hold[a] = t < S - 1
    score = running.masked_fill(~remasked, 0.0)
    return dataclasses.replace(
        ctx.kept, remasked=remasked, remask_score=score, counter=counter, hold=hold, holds=True,
        owns=torch.ones(A, dtype=torch.bool, device=conf.device), chosen=chosen,
        chosen_tokens=pred.masked_fill(~chosen, -1), next_conf=next_conf)


RULE = Revision(
    name=NAME, order=25, plan=plan, owns=True, holds=True, counts=True,
    served="MDPO's running confidence takes back tokens of earlier blocks, which SGLang has committed by then",
    summary="MDPO's RCR as shipped: MaskGIT's split, one running confidence over the whole sequence",
    cite=Citation(repo="autonomousvision/mdpo", file="src/mdlm_generation_utils.py",
                  function="diffusion_generate(rcr=True)"),
)
