"""``linear_time``: Dream's rule (Dream-org/Dream, ``generation_utils.py``, ``DreamGenerationMixin._sample``).

With s steps per block and times ``t_0 > ... > t_s`` on ``linspace(1, eps, s + 1)`` (float32,
eps = 1e-3), step i confirms ``floor(m * (1 - t_{i+1} / t_i))`` of the m masks left, and the last step
all of them. The share is what a linear noise schedule unmasks in expectation between t_i and
t_{i+1}; early steps may confirm none (their forwards are spent anyway, as in Dream).

Example (16 masks over 4 steps):

>>> from dllm_viz import DecodeConfig
>>> from dllm_viz.core.schedules import planned_quotas
>>> planned_quotas(DecodeConfig(gen_length=16, schedule="linear_time", steps=4))
(3, 4, 4, 5)
"""
from __future__ import annotations

from functools import lru_cache

import torch

from dllm_viz.core.rules.base import Citation, QuotaInputs, Schedule

LINEAR_TIME_EPS = 1e-3  # Dream's default `eps`: the last time of the reverse process


@lru_cache(maxsize=256)
def linear_times(steps: int) -> torch.Tensor:
    """`(steps + 1,)` float32 times from 1 down to LINEAR_TIME_EPS, as Dream's sampler makes them."""
    return torch.linspace(1, LINEAR_TIME_EPS, steps + 1)


def quota(q: QuotaInputs) -> torch.Tensor:
    steps = q.steps_per_block.tolist()
    width = max(steps) + 1
    # (B, width) table of each row's times, padded with 1 (never read past a row's own steps).
    table = torch.stack([torch.cat([linear_times(n), torch.ones(width - n - 1)]) for n in steps]).to(q.eligible.device)
    i = q.block_step.clamp(max=q.steps_per_block - 1).unsqueeze(-1)  # (B, 1)
    t, s = table.gather(1, i).squeeze(-1), table.gather(1, i + 1).squeeze(-1)
    share = torch.floor(q.eligible.float() * (1 - s / t)).long()  # float32, as Dream computes it
    return torch.where(q.block_step >= q.steps_per_block - 1, q.eligible, share)


RULE = Schedule(
    name="linear_time", order=50, quota=quota,
    summary="Dream's linear noise schedule: step i confirms m * (1 - t_{i+1} / t_i) of m masks",
    knobs=("steps",),
    cite=Citation(repo="Dream-org/Dream", file="generation_utils.py", function="DreamGenerationMixin._sample"),
)
