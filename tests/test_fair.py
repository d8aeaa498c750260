"""serve/fair.py: clients take slots in turn and share the forwards by the compute they have had (issue 42).

The policies are pure bookkeeping, tested here on plain records; tests/test_engine.py runs them in
the engine (every request still bit-identical to the request alone).
"""
from __future__ import annotations

from dataclasses import dataclass

import pytest

from dllm_viz.core.budget import Work
from dllm_viz.serve.fair import Fairness, Lanes, QueueFull, Share


@dataclass(eq=False)
class Req:
    client: str
    name: str
    work: Work = Work(10, 10)


def test_lanes_admit_one_client_after_the_other():
    lanes = Lanes(max_queue=100)
    heavy = [Req("a", f"a{i}") for i in range(5)]
    for r in heavy:
        lanes.push(r)
    newcomer = Req("b", "b0")
    lanes.push(newcomer)
    assert lanes.position(newcomer) == 1 and lanes.position(heavy[4]) == 5
    assert [r.name for r in lanes.pop(3)] == ["a0", "b0", "a1"]
    assert [r.name for r in lanes] == ["a2", "a3", "a4"] and lanes.position(newcomer) is None


def test_lanes_bound_each_client_and_the_queue():
    lanes = Lanes(max_queue=4, fairness=Fairness(client_requests=2, client_cells=250, client_slots=1))
    lanes.push(Req("a", "a0"))
    lanes.push(Req("a", "a1"))
    with pytest.raises(QueueFull, match="this client has 2 requests in the engine: at most 2"):
        lanes.push(Req("a", "a2"))
    with pytest.raises(QueueFull, match="ask for 0 positions computed and this one for 300: at most 250"):
        lanes.push(Req("b", "big", Work(30, 10)))
    lanes.push(Req("b", "b0"))
    lanes.push(Req("c", "c0"))
    with pytest.raises(QueueFull, match="max_queue=4"):
        lanes.push(Req("d", "d0"))
    first = lanes.pop(10)
    assert [r.name for r in first] == ["a0", "b0", "c0"]  # a's second waits: a holds its one slot
    assert lanes.pop(10) == []
    lanes.finished(first[0])
    assert [r.name for r in lanes.pop(10)] == ["a1"]
    dropped = lanes.drop(lambda r: False)
    assert dropped == [] and len(lanes) == 0


def test_share_steps_the_least_served_within_the_stretch():
    share = Share(Fairness(stretch=4, min_width=64))
    heavy = [(slot, "api", 245, 0) for slot in range(4)]
    page = (9, "page", 70, 0)
    rounds = []
    for _ in range(30):
        chosen = share.choose([*heavy, page])
        rounds.append(chosen)
        widths = {slot: width for slot, _, width, _ in [*heavy, page]}
        share.charge([("page" if s == 9 else "api", widths[s]) for s in chosen])
    assert all(r == [9] or 9 not in r for r in rounds)  # the page row never shares a forward 3.5x its width
    page_steps = sum(9 in r for r in rounds)
    api_forwards = sum(9 not in r for r in rounds)
    assert page_steps >= 10 * api_forwards // 2  # equal compute: ~14 page steps per 980-wide api forward
    assert all(len(r) == 4 for r in rounds if 9 not in r)  # the api's forward: its four rows, 980 <= 4 x 245


def test_share_without_a_stretch_steps_every_row_and_a_newcomer_starts_level():
    assert Share(Fairness()).choose([(0, "a", 100, 0), (1, "b", 5, 0)]) == [0, 1]
    share = Share(Fairness(stretch=1, min_width=1))
    for _ in range(5):
        chosen = share.choose([(0, "a", 10, 0)])
        share.charge([("a", 10)])
    assert chosen == [0]
    # b arrives: level with a (not at 0, which would let it take every forward until it caught up)
    assert share.choose([(0, "a", 10, 5), (1, "b", 10, 0)]) == [0]
    share.charge([("a", 10)])
    assert share.choose([(0, "a", 10, 6), (1, "b", 10, 0)]) == [1]


def test_share_chooses_a_group_whole_by_its_least_served_client_and_charges_each_row_to_its_own():
    share = Share(Fairness(stretch=2, min_width=1))
    mixed = [(0, "a", 10, 0), (1, "b", 10, 0)]  # a renoising group of two clients' rows: one cache, steps whole
    lone = [(2, "c", 10, 0)]
    assert share.choose_units([mixed, lone]) == [mixed]  # 20 wide: a third row would pass 2 x 10
    share.charge([("a", 10), ("b", 10)])
    assert share.used == {"a": 10, "b": 10, "c": 0}
    assert share.choose_units([mixed, lone]) == [lone]  # c is the least served now
    share.charge([("c", 10)])
    assert share.choose_units([mixed, lone]) == [mixed]  # all level: the one that came first
    assert Share(Fairness()).choose_units([mixed, lone]) == [mixed, lone]  # no stretch: every group steps


@pytest.mark.parametrize("kwargs, name", [({"client_slots": 0}, "client_slots"), ({"stretch": 0.5}, "stretch"),
                                          ({"min_width": True}, "min_width"), ({"stretch": float("inf")}, "stretch")])
def test_fairness_names_a_bad_bound(kwargs, name):
    with pytest.raises(ValueError, match=f"{name}="):
        Fairness(**kwargs)
