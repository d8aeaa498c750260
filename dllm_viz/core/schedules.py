"""Confirmation schedules: how many positions a step confirms, and which ones.

Every function here is pure and batched over requests: the state (current k, steps taken in the
block, masks left) is passed in as `(B,)` tensors, never kept on an object. A batch may mix
schedules; `quota` evaluates each schedule present and picks per row by `schedule_id` (called by
`core.step.schedule_quota`, the step that the decoder and the SGLang plugin share).

Rules (article sections 3.3, 4.2, 5.4):
- ``topk_decay``: confirm ``k``; after each step ``k = max(min_k, floor(k * decay))``.
- ``fixed_steps``: a block of M masks and s steps confirms ``M // s`` per step, the remainder
  ``M % s`` going one each to the earliest steps (LLaDA's ``get_num_transfer_tokens``).
- ``threshold``: every eligible position whose confidence >= threshold, and at least ``min_k``.
- ``adaptive``: k follows the fraction still masked: ``k = max(min_k, ceil(top_k * m / M))`` with m
  masks left of the block's M. Each step confirms a constant share (top_k / M) of what is left, so
  the count of masks decays geometrically: many confirmations while the canvas is wide open, and
  single careful ones at the end, when each choice fixes the last gaps of an almost-written text.
  Unlike topk_decay, k is tied to progress rather than to the step index, so it re-expands by
  itself in each new block and never hits the floor while much is still masked.
- ``linear_time``: Dream's rule (``DreamGenerationMixin._sample``): with s steps per block and
  times ``t_0 > ... > t_s`` on ``linspace(1, eps, s + 1)`` (float32, eps = 1e-3), step i confirms
  ``floor(m * (1 - t_{i+1} / t_i))`` of the m masks left, and the last step all of them. The share
  is what a linear noise schedule unmasks in expectation between t_i and t_{i+1}; early steps
  may confirm none (their forwards are spent anyway, as in Dream).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

import torch

from dllm_viz.core.config import SCHEDULES, DecodeConfig


@dataclass(frozen=True)
class QuotaInputs:
    """What a schedule may look at, one row per request (all `(B,)` long tensors)."""

    k: torch.Tensor  # current k of topk_decay (also adaptive's top_k after block restarts)
    top_k: torch.Tensor  # initial k
    min_k: torch.Tensor
    block_step: torch.Tensor  # steps already taken in the current block
    block_size: torch.Tensor  # M: positions per block
    steps_per_block: torch.Tensor  # fixed_steps, linear_time: s
    eligible: torch.Tensor  # masks left in the current block
    above: torch.Tensor  # eligible positions whose confidence >= threshold


def _topk_decay(q: QuotaInputs) -> torch.Tensor:
    return q.k


def _fixed_steps(q: QuotaInputs) -> torch.Tensor:
    base = q.block_size // q.steps_per_block
    remainder = q.block_size % q.steps_per_block
    return base + (q.block_step < remainder).long()


def _threshold(q: QuotaInputs) -> torch.Tensor:
    return torch.maximum(q.above, q.min_k)


def _adaptive(q: QuotaInputs) -> torch.Tensor:
    # ceil(top_k * m / M) in exact integer arithmetic.
    share = (q.top_k * q.eligible + q.block_size - 1) // q.block_size
    return torch.maximum(share, q.min_k)


LINEAR_TIME_EPS = 1e-3  # Dream's default `eps`: the last time of the reverse process


@lru_cache(maxsize=256)
def linear_times(steps: int) -> torch.Tensor:
    """`(steps + 1,)` float32 times from 1 down to LINEAR_TIME_EPS, as Dream's sampler makes them."""
    return torch.linspace(1, LINEAR_TIME_EPS, steps + 1)


def _linear_time(q: QuotaInputs) -> torch.Tensor:
    steps = q.steps_per_block.tolist()
    width = max(steps) + 1
    # (B, width) table of each row's times, padded with 1 (never read past a row's own steps).
    table = torch.stack([torch.cat([linear_times(n), torch.ones(width - n - 1)]) for n in steps]).to(q.eligible.device)
    i = q.block_step.clamp(max=q.steps_per_block - 1).unsqueeze(-1)  # (B, 1)
    t, s = table.gather(1, i).squeeze(-1), table.gather(1, i + 1).squeeze(-1)
    share = torch.floor(q.eligible.float() * (1 - s / t)).long()  # float32, as Dream computes it
    return torch.where(q.block_step >= q.steps_per_block - 1, q.eligible, share)


QUOTAS: dict[str, Callable[[QuotaInputs], torch.Tensor]] = {
    "topk_decay": _topk_decay,
    "fixed_steps": _fixed_steps,
    "threshold": _threshold,
    "adaptive": _adaptive,
    "linear_time": _linear_time,
}
if tuple(QUOTAS) != SCHEDULES:  # the validator and the registry must name the same schedules
    raise ImportError(f"schedule registry {tuple(QUOTAS)} != config.SCHEDULES {SCHEDULES}")

SCHEDULE_IDS = {name: i for i, name in enumerate(SCHEDULES)}


def quota(q: QuotaInputs, schedule_id: torch.Tensor, present: set[str] | None = None) -> torch.Tensor:
    """Positions to confirm this step, `(B,)`, clamped to the eligible count.

    `schedule_id` `(B,)` indexes SCHEDULES; `present` (names in the batch) skips absent schedules.
    """
    out = torch.zeros_like(q.eligible)
    for name, fn in QUOTAS.items():
        if present is not None and name not in present:
            continue
        out = torch.where(schedule_id == SCHEDULE_IDS[name], fn(q), out)
    return torch.minimum(out, q.eligible)


def next_k(k: torch.Tensor, decay: torch.Tensor, min_k: torch.Tensor) -> torch.Tensor:
    """topk_decay's update ``max(min_k, floor(k * decay))``, in float64 to match Python exactly."""
    return torch.maximum(torch.floor(k.double() * decay.double()).long(), min_k)


def select_top(confidence: torch.Tensor, eligible: torch.Tensor, count: torch.Tensor) -> torch.Tensor:
    """The `count` most confident eligible positions of each row, as a `(B, L)` bool mask.

    A rank mask instead of a per-row topk, so rows with different counts stay one batched op.
    Ties go to the earlier position (stable sort), which keeps the choice deterministic.
    """
    score = confidence.masked_fill(~eligible, float("-inf"))  # (B, L)
    order = torch.sort(score, dim=-1, descending=True, stable=True).indices  # (B, L)
    rank = torch.empty_like(order).scatter_(-1, order, torch.arange(order.shape[-1], device=order.device).expand_as(order))
    return (rank < count.unsqueeze(-1)) & eligible


def block_of(positions: torch.Tensor, block_size: torch.Tensor) -> torch.Tensor:
    """Block index of generated-relative `positions` `(L,)` for each row: `(B, L)`."""
    return positions.unsqueeze(0) // block_size.unsqueeze(-1)


@lru_cache(maxsize=4096)
def planned_quotas(config: DecodeConfig) -> tuple[int, ...] | None:
    """Positions each step will confirm, simulated from the schedule's own quota rule; None for threshold.

    Only `threshold` depends on what the model predicts; the others are fixed by the config. None
    too when a revision rule adds steps of its own (`DecodeConfig.revision_adds_steps`); ReMDM and RCR
    outside a loop keep the plan's count of visible tokens, so its steps are theirs.
    Cached per config (configs are frozen and hashable): `temperature_at` asks every step.
    """
    if config.schedule == "threshold" or config.revision_adds_steps:
        return None
    one = lambda v: torch.tensor([v], dtype=torch.long)  # noqa: E731 - tiny local constructor
    bs, min_k, top_k = config.block_size, one(config.min_k), one(config.initial_k)
    decay = torch.tensor([config.decay], dtype=torch.float64)
    k, out = top_k, []
    for _ in range(config.num_blocks if config.gen_length else 0):
        left, block_step = bs, 0
        if config.block_schedule == "restart":
            k = top_k
        while left > 0:
            q = QuotaInputs(
                k=k, top_k=top_k, min_k=min_k, block_step=one(block_step), block_size=one(bs),
                steps_per_block=one(config.total_steps // config.num_blocks), eligible=one(left),
                above=one(0),
            )
            n = int(quota(q, one(SCHEDULE_IDS[config.schedule]), {config.schedule}))
            out.append(n)
            left -= n
            k = next_k(k, decay, min_k)
            block_step += 1
    return tuple(out)


def planned_steps(config: DecodeConfig) -> int | None:
    """Number of steps the schedule will take; None when it depends on the model (threshold)."""
    quotas = planned_quotas(config)
    return None if quotas is None else len(quotas)


def temperature_at(config: DecodeConfig, step: int, confirmed_fraction: float) -> float:
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
