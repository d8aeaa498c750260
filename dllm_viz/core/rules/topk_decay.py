"""``topk_decay``: confirm k masks per step, k decaying after each step (the source article, 3.3 and 4.2).

A block starts with k = top_k (None: a quarter of gen_length); after each step
``k = max(min_k, floor(k * decay))`` (`core.schedules.next_k`, in float64 to match Python exactly), and
with ``block_schedule="restart"`` k starts again at top_k in every block. The article's tuning table
(`core.config.PRESETS`) is this schedule at four settings.

Example (k = 4 decaying by 0.5 over a 12-mask block: 4, 2, 1, ...):

>>> from dllm_viz import DecodeConfig
>>> from dllm_viz.core.schedules import planned_quotas
>>> planned_quotas(DecodeConfig(gen_length=12, top_k=4, decay=0.5))
(4, 2, 1, 1, 1, 1, 1, 1)
"""
from __future__ import annotations

import torch

from dllm_viz.core.knobs import Knob
from dllm_viz.core.rules.base import Citation, QuotaInputs, Schedule


def quota(q: QuotaInputs) -> torch.Tensor:
    return q.k


RULE = Schedule(
    name="topk_decay", order=10, quota=quota,
    summary="confirm k per step; after each step k = max(min_k, floor(k * decay))",
    knobs=(
        Knob(name="top_k", kind="int", default=None, optional=True, lo=1, slider=(1, 128, 1),
             help="initial k for topk_decay / adaptive; None = max(1, gen_length // 4)"),
        Knob(name="decay", kind="float", default=0.9, lo_open=True, hi=1.0, column="float64", slider=(0.5, 1.0, 0.01),
             help="topk_decay: after each step k = max(min_k, floor(k * decay)); in (0, 1]"),
        Knob(name="min_k", kind="int", default=1, lo=1, column="long", slider=(1, 16, 1),
             help="floor on confirmations per step (topk_decay, threshold, adaptive)"),
    ),
    cite=Citation(repo="the source article", file="sections 3.3 and 4.2", function="top-k decay"),
)
