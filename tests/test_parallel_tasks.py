"""bench/parallel_tasks.py: the measurement, AUP table and figure, on the exact oracle (fast, no weights)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import parallel_tasks as bench  # noqa: E402

from dllm_viz.tasks import FAMILIES, TaskOracle  # noqa: E402
from dllm_viz.studies.curves import KNOBS, refused  # noqa: E402


@pytest.fixture(scope="module")
def data():
    """Both 'decoders' are the oracle here: the JSON's shape, not the model's numbers, is under test."""
    oracle, out = TaskOracle(), {"prompts": 8, "temperature": 1.0, "knobs": list(KNOBS), "families": {}}
    for family in FAMILIES:
        points = {d: {k: bench.measure(oracle, family, k, n=8)[0] for k in KNOBS} for d in bench.DECODERS}
        y_max, table = bench.aups(points)
        out["families"][family] = {**points, "y_max": y_max, "aup": table}
    return out


def test_points_cover_every_setting_and_the_bound_is_zero_one_token_per_step(data):
    copy, shuffle = data["families"]["copy"]["oracle"], data["families"]["shuffle"]["oracle"]
    assert [p["value"] for p in copy["constant_k"]] == list(KNOBS["constant_k"].values)
    assert all(p["n"] == 8 for p in copy["threshold"])
    assert shuffle["constant_k"][0]["bound_bits"] == 0.0 and shuffle["constant_k"][0]["tpf"] == 1.0
    assert shuffle["constant_k"][-1]["bound_bits"] > 1.0  # a whole shuffle in one step: n log n - log n! bits
    assert all(p["bound_bits"] == 0.0 and p["rate"] == 1.0 for p in copy["constant_k"])


def test_aup_is_largest_where_parallelism_is_free_and_refused_where_it_breaks(data):
    """Copy keeps its accuracy at 16 tokens a step: a large AUP. A whole shuffle or Latin square in one step
    ends far below where one token a step started, so d3LLM's get_aup refuses those curves (stored with the
    reason, never a number)."""
    fam = data["families"]
    assert fam["copy"]["y_max"] == 100.0
    assert fam["copy"]["aup"]["oracle"]["constant_k"] > 3 * 100.0
    for family in ("shuffle", "latin"):
        assert "y_min_offset=5" in refused(fam[family]["aup"]["oracle"]["constant_k"])


def test_figure_has_a_panel_per_family_and_tables_print(data, capsys):
    fig = bench.figure(data)
    assert len(fig.data) == 2 * len(FAMILIES) and len(fig.layout.annotations) == len(FAMILIES)
    assert fig.data[0].error_y.array is not None
    bench.print_tables(data)
    out = capsys.readouterr().out
    assert "### AUP (d3LLM)" in out and all(f"| {f} |" in out for f in FAMILIES)


def test_revision_curves_count_a_verify_pass_and_leave_the_schedule_aup_alone(data):
    """The threshold knob with each revision rule (issue 32 item 5), on the oracle: WINO's verify pass is a
    forward (fewer tokens per forward than the plain threshold at every setting), and their AUP is computed
    beside the schedule knobs' without moving it."""
    from dllm_viz.studies.curves import REVISION_KNOBS

    oracle = TaskOracle()
    fam = data["families"]["copy"]
    revision = {d: {k: bench.measure(oracle, "copy", k, n=8)[0] for k in REVISION_KNOBS} for d in bench.DECODERS}
    for knob in REVISION_KNOBS:
        assert [p["value"] for p in revision["oracle"][knob]] == list(REVISION_KNOBS[knob].values)
    for plain, wino in zip(fam["oracle"]["threshold"], revision["oracle"]["threshold_wino"]):
        assert wino["forwards"] > plain["forwards"] and wino["tpf"] < plain["tpf"]
    before = bench.aups({d: fam[d] for d in bench.DECODERS})
    rev = bench.revision_aups(before[0], revision)
    assert set(rev["model"]) == set(REVISION_KNOBS) and all(refused(v) or v > 0 for v in rev["oracle"].values())
    assert bench.aups({d: fam[d] for d in bench.DECODERS}) == before
