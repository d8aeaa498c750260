"""app/views/task.py and what the playground draws for a task prompt: checker marks, grids on the canvas,
the run fact, the fitted config, and the curve view with its threshold marker (exact oracle, no weights)."""
from __future__ import annotations

import pytest


from dllm_viz import DecodeConfig, decode
from dllm_viz.app.views import render, task as task_view, wire
from dllm_viz.studies.curves import refused
from dllm_viz.tasks import TaskOracle, parse
from dllm_viz.tasks.families import EXAMPLE_PROMPTS, FAMILIES

LATIN = "latin : _ _ _ 1 _ _ _ _ 1 _ _ _ _ _ _ 3 ="


@pytest.fixture(scope="module")
def oracle():
    return TaskOracle()


def _trace(oracle, prompt, **cfg):
    config = task_view.fit_config(prompt, DecodeConfig(gen_length=64, **cfg))
    return decode(oracle, [prompt], config)[0]


def test_example_prompts_are_one_per_family_and_fit_their_answers():
    assert [parse(p).family for p in EXAMPLE_PROMPTS] == list(FAMILIES)
    cfg = task_view.fit_config("insert 3 k : b e a d =", DecodeConfig(gen_length=64, block_length=32,
                                                                     schedule="fixed_steps", steps=32))
    assert (cfg.gen_length, cfg.block_length, cfg.steps, cfg.schedule) == (5, None, 5, "fixed_steps")
    plain = DecodeConfig(gen_length=64)
    assert task_view.fit_config("It was a dark night", plain) is plain and task_view.fit_config([1, 2], plain) is plain


def test_a_wrong_grid_is_marked_cell_by_cell_and_a_right_one_not_at_all(oracle):
    right = _trace(oracle, LATIN, schedule="topk_decay", top_k=1, decay=1.0)
    wrong = _trace(oracle, LATIN, schedule="topk_decay", top_k=16, decay=1.0, seed=3)
    assert task_view.answer_fact(right) == "✓" and task_view.token_rules(right) == [""] * 16
    verdict = task_view.verdict(wrong)
    assert not verdict.ok and task_view.answer_fact(wrong) == f"✗ {verdict.rule}"
    marks = task_view.token_rules(wrong)
    assert {i for i, m in enumerate(marks) if m} == set(verdict.cells) and verdict.rule in marks
    assert "checker" in task_view.inspector_lines(wrong, verdict.cells[0])
    assert task_view.inspector_lines(right, 0) == ""
    assert task_view.grid_cells(wrong) == parse(LATIN).cells
    data = wire.done(wrong)  # what the page draws the two grids and the marks from
    assert data["grid"] == list(parse(LATIN).cells) and sum(bool(b) for b in data["bad"]) == len(verdict.cells)
    assert all(data["rules"][cell][0][0] == verdict.rule for cell in verdict.cells)
    assert ("f_answer", f"✗ {verdict.rule}") in render.run_facts(wrong)


def test_other_traces_get_no_marks_no_grid_and_no_fact(oracle):
    listed = _trace(oracle, "copy : b e a d =")
    assert task_view.grid_cells(listed) is None and task_view.answer_fact(listed) == "✓"
    assert wire.done(listed)["grid"] is None and wire.done(listed)["task"]["family"] == "copy"
    longer = decode(oracle, ["copy : b e a d ="], DecodeConfig(gen_length=6))[0]  # not the answer's length
    assert task_view.task_of(longer) is None and task_view.token_rules(longer) == [""] * 6
    assert all(key != "f_answer" for key, _ in render.run_facts(longer))


def test_the_marker_follows_the_threshold_along_each_curve():
    pts = [{"value": v, "tpf": x, "rate": r} for v, x, r in ((0.9, 1.0, 0.9), (0.5, 2.0, 0.5), (0.1, 4.0, 0.1))]
    assert task_view.on_curve(pts, 0.9) == (1.0, 90.0)
    assert task_view.on_curve(pts, 0.7) == pytest.approx((1.5, 70.0))
    assert task_view.on_curve(pts, 0.05) == (4.0, 10.0) and task_view.on_curve(pts, 1.0) == (1.0, 90.0)


def test_the_page_gets_a_task_familys_measured_curves_and_nothing_else():
    # The page draws the task curve (web/figures.js, tests/test_figures_js.py) from these.
    fam = task_view.curves()["families"]["shuffle"]
    data = task_view.curve_data("shuffle")
    assert [p["tpf"] for p in data["model"]] == [p["tpf"] for p in fam["model"]["threshold"]]
    assert set(data["model"][0]) == {"value", "tpf", "rate", "lo", "hi"}
    assert data["aup"] == [None, None]  # d3LLM's get_aup refuses both curves of shuffle (dllm_viz.studies.curves)
    assert all(refused(fam["aup"][d]["threshold"]) for d in ("model", "oracle"))
    copy = task_view.curves()["families"]["copy"]["aup"]
    assert task_view.curve_data("copy")["aup"] == [copy["model"]["threshold"], copy["oracle"]["threshold"]]
    assert set(data["revision"]["model"]) == set(fam["revision"]["model"])
    assert task_view.curve_data("no such family") is None


def test_the_curve_lesson_is_shown_in_both_languages_with_its_revision_paragraph():
    from dllm_viz.studies.claims import quoted
    from dllm_viz.studies.curve_lessons import load_curve_lessons, load_curves

    lesson, families = load_curve_lessons()["why_parallel_breaks"], load_curves()["families"]
    wino = quoted(families, "latin.revision.model.threshold_wino(0.1).rate:.0%")
    one_step = quoted(families, "shuffle.oracle.constant_k(16).rate:.0%")
    for lang in ("en", "zh"):
        md = task_view.curve_lesson_md(lang)
        assert md.startswith(f"**{lesson['title'][lang]}**")
        assert lesson["text"][lang] in md and lesson["revision"]["text"][lang] in md
        assert wino in md and one_step in md
    assert task_view.curve_lesson_md("en") != task_view.curve_lesson_md("zh")
