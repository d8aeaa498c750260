"""The world lessons' threshold study: its top-k side gets the threshold's step budget."""
from __future__ import annotations

from dllm_viz.studies.world_lessons import GEN_LENGTH, STUDY_PRESET, matching_topk
from dllm_viz.core.config import DecodeConfig
from dllm_viz.core.schedules import planned_steps


def _steps(k: int, decay: float) -> int:
    return planned_steps(DecodeConfig.preset(STUDY_PRESET, GEN_LENGTH).replace(top_k=k, decay=decay))


def test_matching_topk_meets_every_budget_within_one_step():
    for target in range(4, GEN_LENGTH + 1):
        for budget in (target, target + 0.4):
            k, decay = matching_topk(budget)
            assert abs(_steps(k, decay) - budget) <= 1, (budget, k, decay, _steps(k, decay))
            assert decay < 1  # a decay of 1 is constant k, the parallel study


def test_matching_topk_keeps_the_preset_decay_when_k0_alone_meets_the_budget():
    base = DecodeConfig.preset(STUDY_PRESET, GEN_LENGTH)
    assert matching_topk(planned_steps(base)) == (base.top_k, base.decay)
    # At the preset's decay, k0 = 8 plans 20 steps and k0 = 9 plans 12: a budget of 17 needs another decay.
    k, decay = matching_topk(17)
    assert _steps(k, decay) == 17 and decay != base.decay
