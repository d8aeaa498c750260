from __future__ import annotations

import torch

from dllm_viz.core.config import SCHEDULES
from dllm_viz.core.schedules import SCHEDULE_IDS, QuotaInputs, next_k, quota, select_top


def inputs(**kw):
    base = dict(k=4, top_k=8, min_k=1, block_step=0, block_size=16, steps_per_block=5, eligible=16, above=0)
    base.update(kw)
    return QuotaInputs(**{k: torch.tensor([v]) for k, v in base.items()})


def q(name, **kw):
    return int(quota(inputs(**kw), torch.tensor([SCHEDULE_IDS[name]])))


def test_fixed_steps_follows_llada_rule():
    # 16 masks over 5 steps: 16 // 5 = 3 each, remainder 1 to the first step
    assert [q("fixed_steps", block_step=s) for s in range(5)] == [4, 3, 3, 3, 3]
    assert sum(q("fixed_steps", block_step=s, steps_per_block=7) for s in range(7)) == 16


def test_threshold_takes_at_least_min_k_and_at_most_eligible():
    assert q("threshold", above=0, min_k=2) == 2
    assert q("threshold", above=9) == 9
    assert q("threshold", above=9, eligible=3) == 3


def test_adaptive_confirms_a_share_of_what_is_left():
    assert q("adaptive", top_k=8, eligible=16) == 8
    assert q("adaptive", top_k=8, eligible=5) == 3  # ceil(8 * 5 / 16)
    assert q("adaptive", top_k=8, eligible=1, min_k=2) == 1  # never above eligible


def test_topk_decay_and_next_k():
    assert q("topk_decay", k=5) == 5 and q("topk_decay", k=50, eligible=7) == 7
    k = torch.tensor([16]); seq = []
    for _ in range(8):
        seq.append(int(k)); k = next_k(k, torch.tensor([0.9], dtype=torch.float64), torch.tensor([2]))
    assert seq == [16, 14, 12, 10, 9, 8, 7, 6]
    # floor in float64, as Python computes it
    assert int(next_k(torch.tensor([20]), torch.tensor([0.95], dtype=torch.float64), torch.tensor([1]))) == int(20 * 0.95)


def test_mixed_schedules_in_one_batch():
    qi = QuotaInputs(**{k: torch.tensor(v) for k, v in dict(
        k=[4] * 5, top_k=[8] * 5, min_k=[1] * 5, block_step=[0] * 5,
        block_size=[16] * 5, steps_per_block=[5] * 5, eligible=[16] * 5, above=[2] * 5).items()})
    ids = torch.tensor([SCHEDULE_IDS[n] for n in SCHEDULES])
    # linear_time: int(16 * (1 - t1 / t0)) with t = linspace(1, 1e-3, 6): 16 * 0.1998 -> 3
    assert quota(qi, ids).tolist() == [4, 4, 2, 8, 3]


def test_select_top_rank_mask():
    conf = torch.tensor([[0.1, 0.9, 0.5, 0.9, 0.3], [0.2, 0.1, 0.8, 0.7, 0.6]])
    eligible = torch.tensor([[True, True, True, False, True], [True, True, True, True, True]])
    sel = select_top(conf, eligible, torch.tensor([2, 3]))
    assert sel.tolist() == [[False, True, True, False, False], [False, False, True, True, True]]
    ties = select_top(torch.zeros(1, 4), torch.ones(1, 4, dtype=torch.bool), torch.tensor([2]))
    assert ties.tolist() == [[True, True, False, False]]  # ties go to the earlier position
    assert not select_top(conf, torch.zeros_like(eligible), torch.tensor([2, 2])).any()
