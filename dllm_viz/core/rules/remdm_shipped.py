"""``remdm_shipped``: ReMDM's sampler as its code runs it (kuleshov-group/remdm, ``diffusion.py``,
``Diffusion._sample`` and ``_ddpm_caching_update``, samplers ``remdm-loop | remdm-cap | remdm-rescale |
remdm-conf``, ``scripts/remdm-*.sh``).

The original's own loop over the block (the whole generation in the preset: ReMDM has no blocks), step by
step on the same logits (the rule owns the step, `Revision.owns`: the schedule's count and the step's draw
are not used). Step i of S (the schedule's `steps` per block) runs at time ``t_i`` of
``linspace(1, 1e-5, S + 1)`` (float32), ``dt = (1 - 1e-5) / S``, alpha = 1 - t (MDLM's log-linear noise):

  p_x0      the model's distribution at each mask (float32), ReMDM's nucleus (`top_p`: the sorted tokens
            while the cumulative probability, the token's own included, is <= top_p, the first always,
            renormalised); at a decided position the one-hot of its token;
  q         at a mask ``p_x0 (alpha_s - (1 - sigma) alpha_t) / (1 - alpha_t)``, the mask itself
            ``(1 - alpha_s - sigma alpha_t) / (1 - alpha_t)``; at a decided token ``1 - sigma`` for it and
            ``sigma`` for the mask; sigma by the sampler (`remask_sigma`):
              cap      min(eta, (1 - alpha_s) / alpha_t)
              rescale  eta * min(1, (1 - alpha_s) / alpha_t)
              conf     softmax over the positions of each token's -p(token) when it was unmasked (-inf at a
                       mask), times min(1, (1 - alpha_s) / alpha_t); kept in float32: the published
                       ``remdm-conf`` keeps them in bfloat16 and raises on torch 2.13 (writing float32 values
                       into them), so this is the float32 reading (docs/as_shipped.md)
              loop     t > t_on: MDLM with alpha rescaled to reach alpha_on at t_on; t <= t_off: MDLM from
                       alpha_on to 1; between: sigma = eta with alpha held at alpha_on
            (MDLM: a mask becomes token v with ``p_x0(v) (mct - mcs)``, stays with ``mcs``; decided tokens stay);
  the draw  each position's winner of ``q / (1e-10 - log(u + 1e-10))`` (float64 argmax: an exponential
            race) with one float64 uniform per position and vocabulary entry from the request's own
            generator, ``(positions, V)`` per step in position order and nothing else (`core.canvas.Coins`;
            drawn in row chunks, which give the same values). So a seed replays ReMDM's coins:
            ``torch.manual_seed(s)`` and ``torch.Generator().manual_seed(s)`` give the same stream;
  reuse     a step whose canvas comes out unchanged lets the next reuse its p_x0 without a forward
            (`Plan.reuse`; the trace records no forward there, as ReMDM counts);
  the end   one more step, the noise removal: a forward, and every mask left takes the argmax of its
            log-probabilities (decided tokens stay).

Prompt positions are kept out of the coins: the original samples unconditionally, and a prompt is not a
decided token to re-mask. The temperature is ReMDM's own (1): the knob is not read.

Example (the times of a 4-step run):

>>> from dllm_viz.core.rules.remdm_shipped import times
>>> [round(float(t), 6) for t in times(4)]
[1.0, 0.750003, 0.500005, 0.250008, 1e-05]
"""
from __future__ import annotations

import dataclasses
from functools import lru_cache
from typing import Any

import torch

from dllm_viz.core.knobs import Knob
from dllm_viz.core.rules.base import Citation, Context, Plan, Revision
from dllm_viz.core.rules.remdm import SIGMAS

NAME = "remdm_shipped"
EPS = 1e-5  # `_sample(eps=1e-5)`: the last time
COIN_FLOATS = 1 << 22  # the coins of at most this many (position, token) pairs at once (32 MB of float64)


@lru_cache(maxsize=64)
def times(steps: int) -> torch.Tensor:
    """`(steps + 1,)` float32: ``torch.linspace(1, 1e-5, steps + 1)``, ReMDM's times."""
    return torch.linspace(1, EPS, steps + 1)


def nucleus(p: torch.Tensor, top_p: float) -> torch.Tensor:
    """ReMDM's nucleus of `p (m, V)`: the sorted tokens while the cumulative probability (the token's own
    included) is <= top_p, the first always, renormalised."""
    if top_p >= 1:
        return p
    ranked, order = torch.sort(p, descending=True, dim=-1)
    keep = ranked.cumsum(-1) <= top_p
    keep[..., 0] = True
    kept = ranked * keep
    kept /= kept.sum(dim=-1, keepdim=True)
    return torch.zeros_like(p).scatter_(-1, order, kept)


def update(p: torch.Tensor, sampler: str, t: torch.Tensor, dt: float, knobs: dict[str, float],
           conf: torch.Tensor, masked: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """One step's q, as `_ddpm_caching_update` builds it, on the block's `masked (n,)` positions whose nucleus
    distribution is `p (m, V)`: `(q at the masks (m, V), the mask's q there (m,), a decided token's own q
    (n,), the mask's q at a decided position (n,))`, float32; the MDLM phases keep decided tokens (-1 there).
    `t` float32 0-dim; `conf (n,)`: the conf sampler's confidences (-inf at the masks)."""
    n = masked.shape[0]
    if sampler == "loop":
        t_on, t_off, a_on = knobs["t_on"], knobs["t_off"], knobs["alpha_on"]
        time = t.item()
        if time > t_on or time <= t_off:  # MDLM
            if time > t_on:
                mct, mcs = 1 - (1 - t) * a_on / (1 - t_on), 1 - (1 - t + dt) * a_on / (1 - t_on)
            else:
                mct, mcs = t * (1 - a_on) / t_off, (t - dt) * (1 - a_on) / t_off
            keep = torch.full((n,), -1.0, device=p.device)
            return p * (mct - mcs), mcs.expand(p.shape[0]).to(p.device), keep, keep
        a_t = a_s = a_on
        sigma: Any = knobs["eta"]
    else:
        a_t, a_s = (1 - t).item(), (1 - (t - dt)).item()
        sigma_max = min(1, (1 - a_s) / a_t) if a_t > 0 else 1
        if sampler == "cap":
            sigma = min(knobs["eta"], (1 - a_s) / a_t) if a_t > 0 else knobs["eta"]
        elif sampler == "rescale":
            sigma = knobs["eta"] * sigma_max
        else:  # conf: a sigma per position
            eta = conf.softmax(dim=-1)
            eta[masked] = 0
            sigma = eta * sigma_max  # (n,)
    if isinstance(sigma, torch.Tensor):
        at_masks = sigma[masked].unsqueeze(-1)  # (m, 1)
        q = p * ((a_s - (1 - at_masks) * a_t) / (1 - a_t))
        mask_q = ((1 - a_s - sigma * a_t) / (1 - a_t))[masked]
        return q, mask_q, 1 - sigma, sigma
    q = p * ((a_s - (1 - sigma) * a_t) / (1 - a_t))
    f32 = dict(dtype=torch.float32, device=p.device)
    mask_q = torch.full((p.shape[0],), (1 - a_s - sigma * a_t) / (1 - a_t), **f32)
    return q, mask_q, torch.full((n,), 1 - sigma, **f32), torch.full((n,), sigma, **f32)


def race(q: torch.Tensor, mask_q: torch.Tensor, masked: torch.Tensor, tokens: torch.Tensor, keep_q: torch.Tensor,
         remask_q: torch.Tensor, draw: Any, mask_id: int) -> torch.Tensor:
    """`(n,)` long: each position's winner of ``q / (1e-10 - log(u + 1e-10))`` (float64, argmax's first
    maximum), the uniforms `(n, V)` from `draw(count, V)`, in row chunks. At a mask, q is `q`'s row with
    `mask_q` at the mask id; at a decided position only its token (`keep_q`) and the mask (`remask_q`)
    are above 0; where `keep_q` is -1 (MDLM) the token stays."""
    n, V = masked.shape[0], q.shape[-1]
    out = tokens.clone()
    index = masked.long().cumsum(0) - 1  # (n,) each mask's row in q
    step = max(1, COIN_FLOATS // V)
    for lo in range(0, n, step):
        hi = min(n, lo + step)
        e = 1e-10 - (draw(hi - lo, V).to(q.device) + 1e-10).log()  # (c, V) float64
        here = masked[lo:hi]
        if bool(here.any()):
            rows = index[lo:hi][here]
            qs = q[rows].clone()
            qs[:, mask_id] = mask_q[rows]
            out[lo:hi][here] = (qs.double() / e[here]).argmax(-1)
        kept = ~here & (keep_q[lo:hi] >= 0)
        if bool(kept.any()):
            tok = tokens[lo:hi][kept]
            vt = keep_q[lo:hi][kept].double() / e[kept].gather(-1, tok.unsqueeze(-1)).squeeze(-1)
            vm = remask_q[lo:hi][kept].double() / e[kept][:, mask_id]
            mask_wins = (vm > vt) | ((vm == vt) & (mask_id < tok))  # a tie: the first maximum
            out[lo:hi][kept] = torch.where(mask_wins, mask_id, tok)
    return out


def plan(ctx: Context) -> Plan:
    x, k = ctx.x, ctx.knobs
    A, G = ctx.current.shape
    dev, mask_id = ctx.current.device, int(ctx.mask_token_id)
    chosen = torch.zeros(A, G, dtype=torch.bool, device=dev)
    remasked, tokens = chosen.clone(), torch.full_like(ctx.current, -1)
    score, conf_next = torch.zeros(A, G, device=dev), ctx.state.decided_conf.clone()
    hold, reuse = torch.zeros(A, dtype=torch.bool, device=dev), torch.zeros(A, dtype=torch.bool, device=dev)
    packed = ctx.masked.flatten().cumsum(0).sub(1).view(A, G)  # (A, G): each mask's row in x.logits
    host = torch.stack([ctx.block, ctx.block_size, ctx.block_step, ctx.steps_per_block,
                        ctx.valid.sum(-1) if ctx.valid is not None else torch.full_like(ctx.block, G),
                        k.remask_sigma]).tolist()
    floats = torch.stack([k.remask_eta, k.remask_alpha_on, k.remask_t_on, k.remask_t_off]).tolist()  # float64
    for a in ctx.params.rows_of(NAME):
        block, size, i, S, g, sid = (column[a] for column in host)
        lo, hi = block * size, min(g, (block + 1) * size)
        masked, current = ctx.masked[a, lo:hi], ctx.current[a, lo:hi]
        rows = packed[a, lo:hi][masked]
        logits = x.logits[rows, 0]  # (m, V) float32, the mask at -inf
        log_p = logits - torch.logsumexp(logits, dim=-1, keepdim=True)  # ReMDM's subs parameterization
        if i >= S:  # the noise removal: every mask left takes its argmax
            win = current.clone()
            win[masked] = log_p.argmax(-1)
        else:
            sampler = SIGMAS[sid]
            knobs = dict(zip(("eta", "alpha_on", "t_on", "t_off"), (column[a] for column in floats)))
            conf = ctx.state.decided_conf[a, lo:hi].masked_fill(masked, float("-inf"))
            p = nucleus(log_p.exp(), float(x.top_p[rows[0]]) if rows.numel() else 1.0)
            q, mask_q, keep_q, remask_q = update(p, sampler, times(S)[i], (1 - EPS) / S, knobs, conf, masked)
            win = race(q, mask_q, masked, current, keep_q, remask_q, lambda n, V: ctx.coins.draw(a, n, V), mask_id)
            score[a, lo:hi] = remask_q.clamp(min=0)
            if sampler == "conf":  # -p(token) at an unmasking, -inf at a take-back (float32)
                unmasked = masked & (win != mask_id)
                got = p.gather(-1, win[masked].clamp(min=0).unsqueeze(-1)).squeeze(-1)  # (m,)
                new = conf.clone()
                new[unmasked] = -got[unmasked[masked]]
                conf_next[a, lo:hi] = new.masked_fill(~masked & (win == mask_id), float("-inf"))
        chosen[a, lo:hi] = masked & (win != mask_id)
        tokens[a, lo:hi] = torch.where(chosen[a, lo:hi], win, -1)
        remasked[a, lo:hi] = ~masked & (win == mask_id)
        hold[a] = i < S
        reuse[a] = i + 1 < S and not bool(chosen[a].any() or remasked[a].any())
    return dataclasses.replace(ctx.kept, remasked=remasked, remask_score=score.masked_fill(~remasked, 0.0),
                               hold=hold, holds=True, owns=torch.ones(A, dtype=torch.bool, device=dev),
                               chosen=chosen, chosen_tokens=tokens, next_conf=conf_next, reuse=reuse)


RULE = Revision(
    name=NAME, order=15, plan=plan, owns=True, holds=True, counts=True,
    coins=lambda config: True, reuses=lambda config: True, adds_steps=lambda config: True,
    extra_steps=lambda config: 1, keeps_conf=lambda config: True,
    served="ReMDM's sampler flips a coin at every position of the sequence and re-masks across it, with uniforms "
           "per vocabulary entry: SGLang's step draws none of them",
    summary="ReMDM's sampler as shipped: a coin per position by time (MDLM, then the ReMDM loop), then noise removal",
    knobs=(
        "remask_sigma", "remask_eta", "remask_alpha_on",
        Knob(name="remask_t_on", kind="float", default=0.55, lo_open=True, hi=1.0, column="float64",
             slider=(0.05, 0.99, 0.01), help="remdm_shipped loop: the time the ReMDM loop starts (t <= t_on)"),
        Knob(name="remask_t_off", kind="float", default=0.05, lo_open=True, hi=1.0, column="float64",
             slider=(0.01, 0.95, 0.01), help="remdm_shipped loop: the time the loop ends (t > t_off); below t_on"),
    ),
    cite=Citation(repo="kuleshov-group/remdm", file="diffusion.py",
                  function="Diffusion._sample, Diffusion._ddpm_caching_update"),
)
