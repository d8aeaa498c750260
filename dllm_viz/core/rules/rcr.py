"""``rcr``: Running Confidence Remasking in counts, dllm-viz's own rule (ours), after MDPO's
(autonomousvision/mdpo, ``src/mdlm_generation_utils.py``, ``diffusion_generate(rcr=True)``; the
original's own loop is ``rcr_shipped``, the ``rcr`` preset).

MDPO unmasks every mask of the block, records each token's confidence in `overtime_confidence`,
then re-masks the lowest-confidence tokens until as many masks are left as the later steps'
quotas. Here: with d decided tokens (scored by the confidence they were decided with) and the
masks (scored by this step's confidence), keep the d + q best of both (q the schedule's quota;
ties to the earlier position); the decided tokens outside are taken back and the masks inside are
confirmed (q + r of them). `remask_score` is the confidence the token was decided with.
Unlike MDPO, which ranks every decided token of the sequence with MaskGIT's split, only the current
block competes, on any schedule (the `rcr_counted` preset: LLaDA's split).

Example (the world model, the `rcr_counted` preset: every trace ends with its block full):

>>> from dllm_viz import DecodeConfig, decode, load_model
>>> (trace,) = decode(load_model("world"), ["Tom Lopez of"], DecodeConfig.preset("rcr_counted", 16))
>>> trace.config.revise, None in trace.canvas_at(len(trace.steps) - 1)
('rcr', False)
"""
from __future__ import annotations

import dataclasses

import torch

from dllm_viz.core.rules.base import Citation, Context, Plan, Revision, select_top


def plan(ctx: Context) -> Plan:
    st = ctx.state
    pool = ctx.decided | ctx.eligible
    score = torch.where(ctx.decided, st.decided_conf, ctx.conf.float())
    kept = select_top(score, pool, ctx.decided.sum(-1) + ctx.quota)
    remasked = ctx.decided & ~kept & ctx.may_remask.unsqueeze(-1)
    return dataclasses.replace(ctx.kept, count=ctx.quota + remasked.sum(-1), remasked=remasked,
                               remask_score=st.decided_conf.masked_fill(~ctx.decided, 0.0))


RULE = Revision(
    name="rcr", order=20, plan=plan, keeps_conf=lambda config: True,
    summary="ours: re-mask the block's tokens decided with the lowest confidence (after MDPO's RCR, in counts)",
    cite=Citation(repo="autonomousvision/mdpo", file="src/mdlm_generation_utils.py",
                  function="diffusion_generate(rcr=True)"),
)
