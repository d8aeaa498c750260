"""Confirmation schedules: how many positions a step confirms, and which ones.

Each schedule is a plug-in of `core.rules` (`Schedule`: topk_decay, fixed_steps, threshold, adaptive,
linear_time, eb, ...): a pure function from its `QuotaInputs` to a count per row. This module is what
every schedule shares: `quota` evaluates each schedule present in a batch and picks per row by
`schedule_id` (called by `core.step`, the step that the decoder and the SGLang plugin share); `rank`
the score a step picks positions by; the block a step works in (`current_block`); topk_decay's k
update (`next_k`); and the plans known from a config alone (`planned_quotas`, `temperature_at`).
Every function here is pure and batched over requests: the state (current k, steps taken in the
block, masks left) is passed in as `(B,)` tensors, never kept on an object.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any

import torch

from dllm_viz.core import rules
from dllm_viz.core.rules.base import Columns, QuotaInputs, columns, select_top
from dllm_viz.core.rules.linear_time import LINEAR_TIME_EPS, linear_times  # noqa: F401  (importable here)

__all__ = ["QuotaInputs", "SCHEDULE_IDS", "quota", "rank", "next_k", "select_top", "block_of", "current_block",
           "planned_quotas", "planned_states", "planned_steps", "temperature_at", "schedule_knobs"]

SCHEDULES = tuple(rules.SCHEDULES)
SCHEDULE_IDS = {name: i for i, name in enumerate(SCHEDULES)}
_KNOBS = tuple(k for p in rules.SCHEDULES.values() for k in p.owned)


def schedule_knobs(configs: list[Any], *, device: torch.device | str = "cpu") -> Columns:
    """The schedules' knob columns of `configs` (`QuotaInputs.knobs`)."""
    return columns(configs, _KNOBS, rules.reads, device=device)


def quota(q: QuotaInputs, schedule_id: torch.Tensor, present: set[str] | None = None) -> torch.Tensor:
    """Positions to confirm this step, `(B,)`, clamped to the eligible count.

    `schedule_id` `(B,)` indexes SCHEDULES; `present` (names in the batch) skips absent schedules.
    """
    if present is not None and len(present) == 1:  # one schedule: every row's (no per-row pick)
        return torch.minimum(rules.SCHEDULES[next(iter(present))].quota(q), q.eligible)
    out = torch.zeros_like(q.eligible)
    for name, schedule in rules.SCHEDULES.items():
        if present is not None and name not in present:
            continue
        out = torch.where(schedule_id == SCHEDULE_IDS[name], schedule.quota(q), out)
    return torch.minimum(out, q.eligible)


def rank(conf: torch.Tensor, q: QuotaInputs, schedule_id: torch.Tensor, present: set[str]) -> torch.Tensor:
    """`(B, G)`: what each row picks its positions by: the confidence, or its schedule's own score."""
    score = conf
    for name in present:
        own = rules.SCHEDULES[name].rank
        if own is not None:
            score = torch.where((schedule_id == SCHEDULE_IDS[name]).unsqueeze(-1), own(q).to(conf.dtype), score)
    return score


def next_k(k: torch.Tensor, decay: torch.Tensor, min_k: torch.Tensor) -> torch.Tensor:
    """topk_decay's update ``max(min_k, floor(k * decay))``, in float64 to match Python exactly (k >= 0 and
    decay > 0: the product is never negative, so truncation is the floor)."""
    return torch.maximum((k * (decay if decay.dtype == torch.float64 else decay.double())).long(), min_k)


def block_of(positions: torch.Tensor, block_size: torch.Tensor) -> torch.Tensor:
    """Block index of generated-relative `positions` `(L,)` for each row: `(B, L)`."""
    return positions.unsqueeze(0) // block_size.unsqueeze(-1)


def current_block(masked: torch.Tensor, params: Any, state: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """Each row's current block `(A,)` and every position's block `(A, G)` (`params`: `StepParams`,
    `state`: `StepState`).

    The current block is the first one that still holds a mask, unless a revision rule holds the
    previous step's block open (joint_threshold's edit-only steps).
    """
    G = masked.shape[1]
    blocks = params.position_blocks(G)  # (A, G) each position's block
    block = torch.where(masked, blocks, G).amin(-1)  # (A,)
    if state.revision is not None and params.revision is not None and params.revision.holds:
        block = torch.where(state.revision.hold, state.block, block)
    return block, blocks


@lru_cache(maxsize=4096)
def planned_quotas(config: Any) -> tuple[int, ...] | None:
    """Positions each step will confirm, simulated from the schedule's own quota rule; None for a
    schedule that reads the model (threshold, eb).

    None too when a revision rule adds steps of its own (`DecodeConfig.revision_adds_steps`); ReMDM and RCR
    outside a loop keep the plan's count of visible tokens, so its steps are theirs.
    Cached per config (configs are frozen and hashable): `temperature_at` asks every step.
    """
    plan = planned_states(config)
    return None if plan is None else tuple(n for n, *_ in plan)


@lru_cache(maxsize=4096)
def planned_states(config: Any) -> tuple[tuple[int, int, int, int], ...] | None:
    """`planned_quotas` with the schedule state the step leaves behind: per step `(count, block, block_step, k)`,
    the positions it confirms, its block, and the steps taken in that block and topk_decay's k after it (what
    `denoise_step` returns as `block`, `next_block_step` and `next_k` for a row whose every step confirms its
    count in its block: nothing taken back, no early stop). None where `planned_quotas` is."""
    if not rules.SCHEDULES[config.schedule].planned or config.revision_adds_steps:
        return None
    one = lambda v: torch.tensor([v], dtype=torch.long)  # noqa: E731 - tiny local constructor
    bs, top_k = config.block_size, one(config.initial_k)
    knobs = schedule_knobs([config])
    k, out = top_k, []
    for block in range(config.num_blocks if config.gen_length else 0):
        left, block_step = bs, 0
        if config.block_schedule == "restart":
            k = top_k
        while left > 0:
            q = QuotaInputs(k=k, top_k=top_k, block_step=one(block_step), block_size=one(bs),
                            steps_per_block=one(config.total_steps // config.num_blocks), eligible=one(left),
                            knobs=knobs)
            n = int(quota(q, one(SCHEDULE_IDS[config.schedule]), {config.schedule}))
            left -= n
            k = next_k(k, knobs.decay, knobs.min_k)
            block_step += 1
            out.append((n, block, block_step, int(k)))
    return tuple(out)


def planned_steps(config: Any) -> int | None:
    """Number of steps the schedule will take; None when it depends on the model (threshold)."""
    quotas = planned_quotas(config)
    return None if quotas is None else len(quotas)


def temperature_at(config: Any, step: int, confirmed_fraction: float) -> float:
    """Temperature in force at `step` (0-based): constant, or staged by thirds (article 6.4).

    Thirds of the planned steps when the step count is known in advance, else thirds of the
    confirmed fraction of the generation.
    """
    if config.temperature_stages is None:
        return config.temperature
    planned = planned_steps(config)
    if planned:
        stage = min(2, (3 * step) // planned)
    else:
        stage = min(2, int(3 * confirmed_fraction))
    return config.temperature_stages[stage]
