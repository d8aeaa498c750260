"""AUP as d3LLM's `get_aup` computes it, on every stored curve (issue 40, item 4).

d3LLM (hao-ai-lab/d3LLM) has no licence, so `tests/d3llm/aup.py` is a clean re-implementation of
`AUP_leaderboard/aup_utils.py`'s `get_aup` (identical to the original on 2,096 curves, the stored
ones included: bench/crosscheck_originals.py, docs/as_shipped.md). It refuses a curve whose
accuracy at the highest parallelism is more than `y_min_offset` (5 points) below the accuracy at
the lowest (an `assert`), and keeps points of equal parallelism apart, in order.

dllm-viz stores and shows a refused curve as refused with the reason, not a score
(`dllm_viz/assets/tasks/curves.json`, `bench/parallel_tasks.py`, `studies.curves.aup` raising
`Refused`), and scores the others as get_aup does, points of equal parallelism kept apart.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from dllm_viz.studies.curves import aup, refused
from tests.d3llm.aup import Refused, get_aup

CURVES = json.loads((Path(__file__).resolve().parents[1] / "dllm_viz" / "assets" / "tasks" / "curves.json").read_text())


def stored_curves():
    """(family, decoder, knob, points, stored AUP, y_max) of every stored curve, as bench/parallel_tasks.py
    scores them: the schedule knobs with the family's best accuracy, the revision knobs with it raised to
    the best revision accuracy where one beats it."""
    for family, data in CURVES["families"].items():
        best_revision = max(100 * p["rate"] for d in data["revision"].values() for pts in d.values() for p in pts)
        for decoder in ("model", "oracle"):
            for group, table, y_max in ((data[decoder], data["aup"][decoder], data["y_max"]),
                                        (data["revision"][decoder], data["aup_revision"][decoder],
                                         max(data["y_max"], best_revision))):
                for knob, pts in group.items():
                    points = [(p["tpf"], 100 * p["rate"]) for p in pts if p["forwards"]]
                    yield family, decoder, knob, points, table[knob], y_max


def verdict(points, y_max):
    try:
        return get_aup([r for r, _ in points], [y for _, y in points], y_max)
    except Refused:
        return None


def cases():
    return [pytest.param(points, stored, y_max, verdict(points, y_max), id=f"{family}-{decoder}-{knob}")
            for family, decoder, knob, points, stored, y_max in stored_curves()]


def test_get_aup_refuses_by_the_last_point_and_drops_the_middle_ones_silently():
    assert verdict([(1.0, 90.0), (2.0, 80.0), (3.0, 88.0)], 90.0) == pytest.approx(
        1.0 * 90 + 0.5 * (3.0 - 1.0) * (88 * min(2.718281828459045 ** (-3 * (1 - 88 / 90)), 1) + 90))
    assert verdict([(1.0, 90.0), (2.0, 88.0), (3.0, 84.0)], 90.0) is None  # 6 points down at the end
    assert verdict([(3.0, 84.0), (1.0, 90.0)], 90.0) is None  # sorted by parallelism first
    # equal parallelism: kept apart, in order; the first term is the first of them
    assert verdict([(1.0, 80.0), (1.0, 84.0), (2.0, 84.0)], 100.0) != verdict([(1.0, 82.0), (2.0, 84.0)], 100.0)


def test_d3llm_refuses_fifteen_of_the_forty_eight_schedule_curves_and_thirteen_revision_curves():
    refused = [(f, d, k) for f, d, k, points, _, y_max in stored_curves() if verdict(points, y_max) is None]
    schedule = [r for r in refused if r[2] in CURVES["knobs"]]
    assert (len(schedule), len(refused) - len(schedule)) == (15, 13)
    assert {f for f, _, _ in refused} == {"shuffle", "latin", "sudoku"}


@pytest.mark.parametrize("points,stored,y_max,score", cases())
def test_stored_aup_is_d3llm_s(points, stored, y_max, score):
    if score is None:  # refused: stored as refused, with its reason, never as a number
        assert not isinstance(stored, (int, float)), stored
        assert "y_min_offset=5" in refused(stored)
    else:
        assert stored == round(score, 2)


REFUSED_CURVE = [(1.0, 96.9), (1.78, 56.2), (3.01, 20.3), (4.38, 12.5)]  # the shape of shuffle's constant-k curve


def test_aup_refuses_what_d3llm_refuses():
    assert verdict(REFUSED_CURVE, 100.0) is None
    try:
        out = aup(REFUSED_CURVE, 100.0)
    except ValueError as err:  # refused, with the reason
        assert "5" in str(err)
        return
    assert not isinstance(out, float), out


def test_aup_keeps_equal_parallelism_apart_as_d3llm():
    curve = [(1.0, 90.0), (1.0, 86.0), (2.0, 88.0), (2.0, 87.0)]
    assert aup(curve, 90.0) == pytest.approx(verdict(curve, 90.0), abs=1e-9)
