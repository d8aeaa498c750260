from __future__ import annotations

import torch

from dllm_viz.core.config import SCHEDULES
from dllm_viz.core.rules.base import Columns, Positions
from dllm_viz.core.schedules import SCHEDULE_IDS, QuotaInputs, next_k, quota, select_top

G = 16


def batch(*, k, top_k, min_k, block_step, block_size, steps_per_block, eligible, above, entropy=None):
    """QuotaInputs of rows (lists, one value per row): `above` of each row's `eligible` masks clear the
    threshold 0.5; `entropy` (one list per row) the raw entropy of its positions (0.1 each by default)."""
    n = len(k)
    long = lambda v: torch.tensor(v)  # noqa: E731
    where = torch.arange(G).unsqueeze(0) < long(eligible).unsqueeze(-1)  # (n, G)
    conf = (torch.arange(G).unsqueeze(0) < long(above).unsqueeze(-1)).float()  # (n, G): 1 above, 0 below
    h = torch.full((n, G), 0.1) if entropy is None else torch.tensor([e + [0.0] * (G - len(e)) for e in entropy])
    knobs = Columns({"min_k": long(min_k), "threshold": torch.full((n,), 0.5, dtype=torch.float64),
                     "threshold_strict": torch.zeros(n, dtype=torch.bool), "decay": torch.full((n,), 0.9),
                     "gamma": torch.full((n,), 0.15)}, {})
    return QuotaInputs(k=long(k), top_k=long(top_k), block_step=long(block_step), block_size=long(block_size),
                       steps_per_block=long(steps_per_block), eligible=long(eligible), knobs=knobs,
                       positions=Positions(eligible=where, conf=conf, entropy_of=lambda: h))


def inputs(**kw):
    base = dict(k=4, top_k=8, min_k=1, block_step=0, block_size=16, steps_per_block=5, eligible=16, above=0)
    base.update(kw)
    return batch(**{k: [v] for k, v in base.items()})


def q(name, **kw):
    return int(quota(inputs(**kw), torch.tensor([SCHEDULE_IDS[name]])))


def test_fixed_steps_follows_llada_rule():
    # 16 masks over 5 steps: 16 // 5 = 3 each, remainder 1 to the first step
    assert [q("fixed_steps", block_step=s) for s in range(5)] == [4, 3, 3, 3, 3]
    assert sum(q("fixed_steps", block_step=s, steps_per_block=7) for s in range(7)) == 16


def test_fixed_steps_makes_its_split_once_per_set_of_rows():
    # The split of a block (masks per step, steps that take one more) depends on the rows' parameters only:
    # made at the first step, read by the next ones while the same parameter tensors come back.
    from dataclasses import replace

    from dllm_viz.core.rules import fixed_steps

    made = []
    split = fixed_steps._split
    fixed_steps._split = lambda *a: made.append(a) or split(*a)
    try:
        first = batch(k=[4, 4], top_k=[8, 8], min_k=[1, 1], block_step=[0, 0], block_size=[16, 8],
                      steps_per_block=[5, 3], eligible=[16, 8], above=[0, 0])
        counts = [fixed_steps.quota(replace(first, block_step=torch.tensor([s, s]))).tolist() for s in range(5)]
        assert counts == [[4, 3], [3, 3], [3, 2], [3, 2], [3, 2]] and len(made) == 1
        fixed_steps.quota(replace(first, block_size=torch.tensor([16, 9])))  # other rows' parameters: made again
        assert len(made) == 2 and made[1][0].tolist() == [16, 9]
    finally:
        fixed_steps._split = split


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
    k, seq = torch.tensor([16]), []
    for _ in range(8):
        seq.append(int(k))
        k = next_k(k, torch.tensor([0.9], dtype=torch.float64), torch.tensor([2]))
    assert seq == [16, 14, 12, 10, 9, 8, 7, 6]
    # floor in float64, as Python computes it
    assert int(next_k(torch.tensor([20]), torch.tensor([0.95], dtype=torch.float64),
                      torch.tensor([1]))) == int(20 * 0.95)


def test_mixed_schedules_in_one_batch():
    n = len(SCHEDULES)
    qi = batch(k=[4] * n, top_k=[8] * n, min_k=[1] * n, block_step=[0] * n, block_size=[16] * n,
               steps_per_block=[5] * n, eligible=[16] * n, above=[2] * n)
    ids = torch.tensor([SCHEDULE_IDS[name] for name in SCHEDULES])
    # linear_time: int(16 * (1 - t1 / t0)) with t = linspace(1, 1e-3, 6): 16 * 0.1998 -> 3
    expected = {"topk_decay": 4, "fixed_steps": 4, "threshold": 2, "adaptive": 8, "linear_time": 3}
    got = dict(zip(SCHEDULES, quota(qi, ids).tolist()))
    assert {name: got[name] for name in expected} == expected


def test_a_batch_of_one_schedule_counts_as_the_mixed_pick_does():
    n = len(SCHEDULES)
    qi = batch(k=[4] * n, top_k=[8] * n, min_k=[1] * n, block_step=[0, 1, 2, 3, 4, 0][:n], block_size=[16] * n,
               steps_per_block=[5] * n, eligible=[16, 3, 9, 1, 12, 7][:n], above=[2] * n)
    for name in SCHEDULES:  # every row under `name`: the one-schedule shortcut, and the per-row pick among all
        ids = torch.full((n,), SCHEDULE_IDS[name])
        one, mixed = quota(qi, ids, {name}), quota(qi, ids, set(SCHEDULES))
        assert one.dtype == mixed.dtype and one.tolist() == mixed.tolist(), name


def test_select_top_rank_mask():
    conf = torch.tensor([[0.1, 0.9, 0.5, 0.9, 0.3], [0.2, 0.1, 0.8, 0.7, 0.6]])
    eligible = torch.tensor([[True, True, True, False, True], [True, True, True, True, True]])
    sel = select_top(conf, eligible, torch.tensor([2, 3]))
    assert sel.tolist() == [[False, True, True, False, False], [False, False, True, True, True]]
    ties = select_top(torch.zeros(1, 4), torch.ones(1, 4, dtype=torch.bool), torch.tensor([2]))
    assert ties.tolist() == [[True, True, False, False]]  # ties go to the earlier position
    assert not select_top(conf, torch.zeros_like(eligible), torch.tensor([2, 2])).any()


def test_select_top_is_the_rank_mask_of_a_stable_sort():
    """`select_top` places each rank by one scatter; the rank mask written out (position p is chosen when its
    place in the stable descending order of the eligible confidences is below the count) gives the same masks,
    ties and ineligible -inf positions included."""
    g = torch.Generator().manual_seed(0)
    for _ in range(50):
        conf = torch.randint(0, 4, (5, 12), generator=g).float() / 4  # many ties
        conf[torch.rand(5, 12, generator=g) < 0.1] = float("-inf")
        eligible = torch.rand(5, 12, generator=g) < 0.7
        count = torch.randint(0, 13, (5,), generator=g)
        order = torch.sort(conf.masked_fill(~eligible, float("-inf")), dim=-1, descending=True, stable=True).indices
        rank = torch.empty_like(order).scatter_(-1, order, torch.arange(12).expand_as(order))
        assert torch.equal(select_top(conf, eligible, count), (rank < count.unsqueeze(-1)) & eligible)
