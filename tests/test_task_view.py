"""app/views/task.py and what the playground draws for a task prompt: checker marks, grids on the canvas,
the run fact, the fitted config, and the curve view with its threshold marker (exact oracle, no weights)."""
from __future__ import annotations

import pytest

from dllm_viz import DecodeConfig, decode
from dllm_viz.app.views import figures, render, task as task_view
from dllm_viz.app.strings import t
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
    data = render.player_data(wrong, lang="en", order_width=8)  # page.js draws the two grids and the marks
    assert data["grid"] == list(parse(LATIN).cells) and sum(bool(b) for b in data["bad"]) == len(verdict.cells)
    assert all(data["rules"][cell][0][0] == verdict.rule for cell in verdict.cells)
    assert ("f_answer", f"✗ {verdict.rule}") in render.run_facts(wrong)


def test_other_traces_get_no_marks_no_grid_and_no_fact(oracle):
    listed = _trace(oracle, "copy : b e a d =")
    assert task_view.grid_cells(listed) is None and task_view.answer_fact(listed) == "✓"
    assert render.player_data(listed, lang="en", order_width=8)["grid"] is None
    longer = decode(oracle, ["copy : b e a d ="], DecodeConfig(gen_length=6))[0]  # not the answer's length
    assert task_view.task_of(longer) is None and task_view.token_rules(longer) == [""] * 6
    assert all(key != "f_answer" for key, _ in render.run_facts(longer))


CURVES = {"families": {"shuffle": {
    "model": {"threshold": [{"value": v, "tpf": x, "rate": r, "lo": r - 0.1, "hi": min(1, r + 0.1)}
                            for v, x, r in ((0.9, 1.0, 0.9), (0.5, 2.0, 0.5), (0.1, 4.0, 0.1))]},
    "oracle": {"threshold": [{"value": v, "tpf": x, "rate": r, "lo": r - 0.1, "hi": min(1, r + 0.1)}
                             for v, x, r in ((0.9, 1.0, 1.0), (0.5, 1.5, 0.6), (0.1, 4.0, 0.2))]},
    "aup": {"model": {"threshold": 90.0}, "oracle": {"threshold": 100.0}}}}}


def test_the_marker_follows_the_threshold_along_each_curve():
    pts = CURVES["families"]["shuffle"]["model"]["threshold"]
    assert task_view.on_curve(pts, 0.9) == (1.0, 90.0)
    assert task_view.on_curve(pts, 0.7) == pytest.approx((1.5, 70.0))
    assert task_view.on_curve(pts, 0.05) == (4.0, 10.0) and task_view.on_curve(pts, 1.0) == (1.0, 90.0)
    fig = figures.task_curve(CURVES, "shuffle", 0.7, lang="zh")
    markers = [d for d in fig.data if d.mode == "markers"]
    assert [(m.x[0], round(m.y[0], 6)) for m in markers] == [(1.5, 70.0), (1.25, 80.0)]
    assert t("fig_task_curve", "zh") in fig.layout.title.text and t("fig_task_aup", "zh", m="90", o="100") in fig.layout.title.text
    empty = figures.task_curve(CURVES, None, 0.9)
    assert not empty.data and t("task_curve_none", "en") == empty.layout.annotations[0].text


def test_revision_curves_sit_beside_the_threshold_curves_and_mark_the_traces_rule():
    """Issue 32 item 5: each revision rule's threshold curve (model shown, oracle a legend click away);
    the markers follow the slider on the curve of the trace's own rule."""
    fam = CURVES["families"]["shuffle"]
    wino = [{"value": v, "tpf": x, "rate": r, "lo": r - 0.1, "hi": min(1, r + 0.1)}
            for v, x, r in ((0.9, 0.5, 0.95), (0.5, 1.0, 0.7), (0.1, 2.0, 0.3))]
    curves = {"families": {"shuffle": {**fam, "revision": {"model": {"threshold_wino": wino},
                                                           "oracle": {"threshold_wino": wino}}}}}
    plain = figures.task_curve(curves, "shuffle", 0.7)
    lines = [d for d in plain.data if d.mode == "lines+markers"]
    assert [d.name for d in lines] == ["tasks model", "exact oracle", "tasks model + WINO", "exact oracle + WINO"]
    assert lines[2].visible is True and lines[3].visible == "legendonly"
    assert list(lines[2].x) == [0.5, 1.0, 2.0] and list(lines[2].y) == [95.0, 70.0, 30.0]
    assert len([d for d in plain.data if d.mode == "markers"]) == 2  # the trace ran no rule: threshold markers only
    own = figures.task_curve(curves, "shuffle", 0.7, rule="wino")
    markers = [(m.x[0], round(m.y[0], 6)) for m in own.data if m.mode == "markers"]
    assert markers[2:] == [pytest.approx((0.75, 82.5)), pytest.approx((0.75, 82.5))]  # halfway from 0.9 to 0.5
    assert [d for d in own.data if d.name == "exact oracle + WINO"][0].visible is True


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
