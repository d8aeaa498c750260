"""studies.curves: the knobs' configs, points from traces, and d3LLM's AUP on curves computed by hand."""
from __future__ import annotations

import math

import pytest

from dllm_viz import decode
from dllm_viz.tasks import TaskOracle, parse, prompts
from dllm_viz.studies.curves import (
    KNOBS, Point, Refused, aup, aup_label, curve_points, point, refused, scored, verdict_of,
)


def test_aup_of_a_flat_curve_is_its_area():
    assert aup([(1.0, 100.0), (2.0, 100.0), (4.0, 100.0)], 100.0) == pytest.approx(400.0)
    assert aup([(3.0, 80.0)], 80.0) == pytest.approx(240.0)  # one point: rho_1 * y_1


def test_aup_weights_lost_accuracy_and_cuts_middle_points_below_five_points_under_the_first():
    # y_min = 100 - 5: the middle point at 90 is left out; 97 is weighted by exp(-3 * (1 - 0.97)).
    expected = 1 * 100 + 0.5 * (3 - 1) * (97 * math.exp(-3 * 0.03) + 100 * 1.0)
    assert aup([(2.0, 90.0), (1.0, 100.0), (3.0, 97.0)], 100.0) == pytest.approx(expected)
    # y_max above every point weights the first point's trapezoid side too, never the rho_1 * y_1 term.
    expected = 1 * 50 + 0.5 * 1 * (50 * math.exp(-3 * 0.5) * 2)
    assert aup([(1.0, 50.0), (2.0, 50.0)], 100.0) == pytest.approx(expected)
    # Points of equal parallelism stay apart, in their order (d3LLM's stable sort): the first is y_1,
    # and a zero-width trapezoid between them.
    assert aup([(2.0, 100.0), (1.0, 100.0), (1.0, 97.0)], 100.0) == pytest.approx(
        100 + 0.5 * (100 + 97 * math.exp(-3 * 0.03)))
    first_worse, first_better = [(1.0, 97.0), (1.0, 100.0), (2.0, 100.0)], [(1.0, 100.0), (1.0, 97.0), (2.0, 100.0)]
    assert aup(first_worse, 100.0) != aup(first_better, 100.0)


def test_aup_refuses_a_curve_whose_last_point_is_more_than_five_points_below_its_first():
    with pytest.raises(Refused, match="y_min_offset=5"):
        aup([(4.0, 90.0), (1.0, 100.0), (2.0, 97.0)], 100.0)
    assert aup([(4.0, 95.0), (1.0, 100.0)], 100.0) > 0  # exactly 5 below: scored
    halved = [(1.0, 100.0), (2.0, 50.0)]
    assert scored(halved, 100.0) == {"refused": refused(scored(halved, 100.0))}
    assert refused(scored([(1.0, 100.0)], 100.0)) is None and aup_label({"refused": "x"}) == "refused"


@pytest.mark.parametrize("curve, y_max, says", [
    ([], 100.0, "at least one"), ([(0.0, 50.0)], 50.0, "tpf > 0"), ([(1.0, 120.0)], 100.0, "accuracy in"),
    ([(1.0, 90.0)], 80.0, "y_max"), ([(1.0, 90.0)], 0.0, "y_max"),
])
def test_aup_refuses_bad_curves(curve, y_max, says):
    with pytest.raises(ValueError, match=says):
        aup(curve, y_max)


def test_knobs_make_configs_for_each_task_from_careful_to_parallel():
    task = parse("insert 2 k : a b c =")
    for knob in KNOBS.values():
        configs = [knob.make(task, v, 3) for v in knob.values]
        assert all(c.gen_length == 4 and c.seed == 3 and c.temperature == 1.0 for c in configs)
    assert [c.threshold for c in (KNOBS["threshold"].make(task, v, 0) for v in KNOBS["threshold"].values)] == [
        0.9, 0.7, 0.5, 0.3, 0.1]
    assert {KNOBS["constant_k"].make(task, 4, 0).decay, KNOBS["topk_decay"].make(task, 4, 0).decay} == {1.0, 0.9}


def test_points_count_right_runs_tokens_and_forwards():
    oracle, tasks = TaskOracle(), prompts("shuffle", 8, 0)
    make = KNOBS["constant_k"].make
    traces = decode(oracle, [t.prompt for t in tasks], [make(t, 2, s) for s, t in enumerate(tasks)],
                    record_candidates=0)
    p = point("constant_k", 2, traces)
    assert p.runs == 8 and p.tokens == sum(len(t.cells) for t in tasks)
    assert p.forwards == sum(math.ceil(len(t.cells) / 2) for t in tasks) and p.tpf == p.tokens / p.forwards
    assert p.right == sum(verdict_of(t).ok for t in traces)
    d = p.to_dict()
    assert d["n"] == 8 and d["k"] == p.right and d["lo"] <= d["rate"] <= d["hi"] and d["tpf"] == round(p.tpf, 4)
    assert curve_points([p, Point("constant_k", 1, 0, 0, 0, 0)]) == [(p.tpf, 100.0 * p.right / 8)]
    with pytest.raises(ValueError, match="knob"):
        point("nope", 1, traces)


def test_bound_bits_hides_again_what_a_revision_rule_took_back():
    """Under re-masking, each step's tokens are drawn from the canvas entering it (Trace.canvas_at of the
    step before), the re-masked tokens hidden again: the bound computed from that replay."""
    from dllm_viz.studies.curves import REVISION_KNOBS, bound_bits
    from dllm_viz.tasks.oracle import total_correlation

    oracle, tasks = TaskOracle(), prompts("shuffle", 8, 0)
    make = REVISION_KNOBS["threshold_remdm"].make
    configs = [make(t, 0.5, s).replace(remask_sigma="rescale", remask_eta=0.9) for s, t in enumerate(tasks)]
    traces = decode(oracle, [t.prompt for t in tasks], configs, record_candidates=0)
    assert any(rec.remasked for tr in traces for rec in tr.steps)
    for tr, task in zip(traces, tasks):
        expected = 0.0
        for rec in tr.steps:
            chosen = [p for p in rec.selected if p < task.answer_length]
            if len(chosen) > 1:
                expected += total_correlation(task, tr.canvas_at(rec.step - 1)[: task.answer_length], chosen)
        assert bound_bits(tr) == pytest.approx(expected, abs=1e-12)
