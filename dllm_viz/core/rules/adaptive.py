"""``adaptive``: k follows the fraction still masked, ``k = max(min_k, ceil(top_k * m / M))`` with m masks
left of the block's M.

Each step confirms a constant share (top_k / M) of what is left, so the count of masks decays
geometrically: many confirmations while the canvas is wide open, and single careful ones at the end,
when each choice fixes the last gaps of an almost-written text. Unlike topk_decay, k is tied to
progress rather than to the step index, so it re-expands by itself in each new block and never hits
the floor while much is still masked.

Example (top_k = 8 of a 16-mask block):

>>> from dllm_viz import DecodeConfig
>>> from dllm_viz.core.schedules import planned_quotas
>>> planned_quotas(DecodeConfig(gen_length=16, schedule="adaptive", top_k=8))
(8, 4, 2, 1, 1)
"""
from __future__ import annotations

import torch

from dllm_viz.core.rules.base import Citation, QuotaInputs, Schedule


def quota(q: QuotaInputs) -> torch.Tensor:
    share = (q.top_k * q.eligible + q.block_size - 1) // q.block_size  # ceil(top_k * m / M), exact integers
    return torch.maximum(share, q.knobs.min_k)


RULE = Schedule(
    name="adaptive", order=40, quota=quota,
    summary="k = ceil(top_k * masks left / block size): a constant share of what is left",
    knobs=("top_k", "min_k"),
    cite=Citation(repo="dllm-viz", file="dllm_viz/core/rules/adaptive.py", function="quota"),
)
