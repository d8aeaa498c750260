"""``remdm``: ReMDM's remasking in counts (kuleshov-group/remdm, ``diffusion.py``,
``Diffusion._ddpm_caching_update``, samplers ``remdm-cap | remdm-rescale | remdm-conf | remdm-loop``; on
LLaDA, guanghanwang/ReMDM-LLaDA, ``eval_llada.py``, ``LLaDAEvalHarness.llada_remdm_sample``).

With d decided tokens and m masks in the block and the schedule's quota q, the plain step leaves
room = m - q masks; ReMDM's sigma_max = min(1, (1 - alpha_s) / alpha_t) is room / d in counts
(the largest re-masking the next unmasking can make up for). Each decided token is re-masked
when its uniform u < sigma, with
  cap      sigma = min(eta, sigma_max)                     (remdm-cap)
  rescale  sigma = eta * sigma_max                         (remdm-rescale)
  conf     sigma_i = softmax_i(-c_i) * sigma_max, c_i the confidence token i was decided with
           (remdm-conf: the less sure a token was, the likelier it goes back)
  loop     sigma = eta, only in a loop of remask_loop_steps steps that starts once the block is
           remask_alpha_on visible; the schedule pauses and each loop step confirms as many
           masks as it took back, so the visible share stays at alpha_on (remdm-loop; on LLaDA,
           ReMDM-LLaDA's llada_remdm_sample loops likewise once 7/8 of a block is written).
Outside the loop the step then confirms q + r masks (r taken back), so the number of visible
tokens follows the schedule exactly: ReMDM's unmasking probability (alpha_s - (1 - sigma) alpha_t)
/ (1 - alpha_t) in counts. At most `room` (outside the loop) or m (in it) are taken back, those
with the smallest u; `remask_score` is sigma. Randomness is the step's second uniform at the decided
positions, which no other rule reads there, so a request's stream is consumed as without revision.

Example (ReMDM as shipped on the world model: its loop re-masks, and confirms as many again):

>>> from dllm_viz import DecodeConfig, decode, load_model
>>> (trace,) = decode(load_model("world"), ["Tom Lopez of"], DecodeConfig.preset("remdm", 16, seed=3))
>>> trace.config.remask_sigma, None in trace.canvas_at(len(trace.steps) - 1)
('loop', False)
"""
from __future__ import annotations

import dataclasses

import torch

from dllm_viz.core.knobs import MAX_BUDGET, Knob
from dllm_viz.core.rules.base import Citation, Context, Plan, Revision, select_top

SIGMAS = ("cap", "rescale", "conf", "loop")  # how sigma_t is set (see above)
SIGMA_IDS = {name: i for i, name in enumerate(SIGMAS)}


def plan(ctx: Context) -> Plan:
    k, st = ctx.knobs, ctx.state
    d, m = ctx.decided.sum(-1), ctx.eligible.sum(-1)  # (A,)
    room = (m - ctx.quota).clamp(min=0)
    sigma_max = torch.where(d > 0, (room.float() / d.clamp(min=1).float()).clamp(max=1.0), 0.0)  # (A,)
    sid, eta, sigmas = k.remask_sigma, k.remask_eta.float(), k.distinct("remask_sigma")  # (float64 columns)
    in_loop = None  # (A,) bool; None: no remdm row loops
    if "loop" in sigmas:
        share = d.float() / (d + m).clamp(min=1).float()
        in_loop = (ctx.may_remask & (sid == SIGMA_IDS["loop"]) & (m > 0) & (share >= k.remask_alpha_on.float())
                   & (st.counter < k.remask_loop_steps))
    # Each row's sigma from its variant; only the variants of the remdm rows are computed.
    variants = {"cap": lambda: torch.minimum(eta, sigma_max), "rescale": lambda: eta * sigma_max,
                "loop": lambda: torch.where(in_loop, eta, torch.zeros_like(eta))}
    present = [name for name in variants if name in sigmas]
    if len(present) == 1 and sigmas == {present[0]}:  # every remdm row uses it
        sigma = variants[present[0]]()  # (A,)
    else:  # the conf rows get 0 here and their weights below
        sigma = torch.zeros_like(eta)
        for name in present:
            sigma = torch.where(sid == SIGMA_IDS[name], variants[name](), sigma)
    sigma = sigma.unsqueeze(-1).expand_as(ctx.conf)  # (A, G)
    if "conf" in sigmas:
        conf_rows = (sid == SIGMA_IDS["conf"]).unsqueeze(-1)  # (A, 1)
        weights = torch.softmax((-st.decided_conf).masked_fill(~ctx.decided, float("-inf")), dim=-1).nan_to_num(0.0)
        sigma = torch.where(conf_rows, weights * sigma_max.unsqueeze(-1), sigma)
    sigma = sigma.masked_fill(~ctx.decided, 0.0)
    hit = ctx.decided & (ctx.uniform < sigma) & ctx.may_remask.unsqueeze(-1)  # (A, G)
    limit = room if in_loop is None else torch.where(in_loop, m, room)
    r = hit.sum(-1)  # (A,)
    if bool((r > limit).any()):  # more hits than room: the smallest uniforms first
        remasked = select_top(-ctx.uniform, hit, limit)
        r = remasked.sum(-1)
    else:  # every hit fits (what select_top would keep)
        remasked = hit
    if in_loop is None:
        return dataclasses.replace(ctx.kept, count=ctx.quota + r, remasked=remasked, remask_score=sigma.float())
    return dataclasses.replace(ctx.kept, count=torch.where(in_loop, r, ctx.quota + r), remasked=remasked,
                               remask_score=sigma.float(), counter=st.counter + in_loop.long(), pause=in_loop)


def _loops(config) -> bool:
    return config.remask_sigma == "loop"


RULE = Revision(
    name="remdm", order=10, plan=plan, counts=True,
    summary="ReMDM: re-mask decided tokens at random, confirm as many more",
    knobs=(
        Knob(name="remask_sigma", kind="choice", default="cap", choices=SIGMAS, column="long",
             choice_key="choice_sigma_",
             help="remdm: how sigma_t is set: cap | rescale | conf | loop"),
        Knob(name="remask_eta", kind="float", default=0.02, lo_open=True, hi=1.0, column="float64",
             slider=(0.01, 1.0, 0.01),
             help="remdm: eta in (0, 1] (cap on sigma, share of sigma_max, or the loop's sigma)"),
        Knob(name="remask_alpha_on", kind="float", default=0.9, lo_open=True, hi=1.0, below="the loop needs masks left",
             column="float64", slider=(0.05, 0.99, 0.01),
             help="remdm loop: visible share of the block at which the loop starts, in (0, 1)"),
        Knob(name="remask_loop_steps", kind="int", default=8, hi=MAX_BUDGET, column="long", slider=(0, 64, 1),
             help="remdm loop: loop steps per block (>= 0)"),
    ),
    extra_steps=lambda config: config.remask_loop_steps if _loops(config) else 0,
    adds_steps=_loops, keeps_conf=lambda config: config.remask_sigma == "conf",
    cite=Citation(repo="kuleshov-group/remdm", file="diffusion.py", function="Diffusion._ddpm_caching_update"),
)
