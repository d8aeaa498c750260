"""``fixed_steps``: a block of M masks over s steps confirms M // s per step, the remainder M % s one each to
the earliest steps (ML-GSAI/LLaDA, ``generate.py``, ``get_num_transfer_tokens``).

`steps` is the whole decode's budget, a multiple of the number of blocks (None: half of each block's
positions); each block gets steps / blocks of them.

Example (16 masks over 5 steps):

>>> from dllm_viz import DecodeConfig
>>> from dllm_viz.core.schedules import planned_quotas
>>> planned_quotas(DecodeConfig(gen_length=16, schedule="fixed_steps", steps=5))
(4, 3, 3, 3, 3)
"""
from __future__ import annotations

import torch

from dllm_viz.core.knobs import Knob
from dllm_viz.core.rules.base import Citation, QuotaInputs, Schedule


def _per_block(value: int | None, config) -> str | None:
    if value is not None and value % config.num_blocks:
        return f"a multiple of the number of blocks ({config.num_blocks})"
    return None


def quota(q: QuotaInputs) -> torch.Tensor:
    base, remainder = q.knobs.once("fixed_steps", (q.block_size, q.steps_per_block), _split)  # (A,) each
    return base + (q.block_step < remainder)  # (a long plus a bool: long)


def _split(block_size: torch.Tensor, steps_per_block: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """`(A,)` each: the masks every step of a block confirms, and the number of early steps that confirm one more."""
    base = torch.div(block_size, steps_per_block, rounding_mode="floor")  # (the C op: `//` wraps it in Python)
    return base, block_size % steps_per_block


RULE = Schedule(
    name="fixed_steps", order=20, quota=quota,
    summary="s steps per block, the masks split evenly (LLaDA)",
    knobs=(
        Knob(name="steps", kind="int", default=None, optional=True, lo=1, slider=(1, 256, 1),
             hi=lambda config: max(1, config.gen_length), relation=_per_block, policy="steps_per_block",
             help="fixed_steps, linear_time: total steps, a multiple of the block count; None = gen_length // 2"),
    ),
    cite=Citation(repo="ML-GSAI/LLaDA", file="generate.py", function="get_num_transfer_tokens"),
)
