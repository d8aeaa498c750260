"""app/handlers/compare.py called directly (no server): lesson clicks and compares, one batched decode each."""
from __future__ import annotations

import pytest

from dllm_viz.app.handlers.playground import Playground
from dllm_viz.core.analysis import divergence
from tests.ui_model import CountingRunner


@pytest.fixture()
def runner() -> CountingRunner:
    return CountingRunner()


@pytest.fixture()
def pg(runner, tmp_path) -> Playground:
    return Playground(runner, export_dir=tmp_path)


def test_a_lesson_click_decodes_once(pg, runner):
    for key in ("polluted", "rng"):
        runner.calls.clear()
        out = pg.compare.lesson(key, prompt="the ", seed=2, gen_length=24, lang="en", session="s")
        assert len(runner.calls) == 1, key
        assert out.lesson_key == key and out.compare.cmp_traces is not None and out.lesson_text.startswith("### ")
        a, b = out.compare.cmp_traces  # each side by its handle, readable by this session's page only
        assert (out.compare.cmp_canvas_a["ref"], out.compare.cmp_canvas_b["ref"]) == (a.handle, b.handle)
        assert pg.traces.entry("s", a.handle).since(0)[1] == "done" and pg.traces.entry("t", b.handle) is None


def test_compare_decodes_both_sides_in_one_batch(pg, runner):
    out = pg.compare.run(prompt="the ", seed=2, gen_length=24, cmp_a='{"temperature": 1.5}',
                     cmp_b='{"temperature": 1.5, "confidence_from": "tempered"}', neighbours=0, lang="en")
    (prompts, configs), = runner.calls
    assert prompts == ["the ", "the "] and configs[1] == configs[0].replace(confidence_from="tempered")
    assert out.cmp_summary.startswith("Steps: A ")
    assert (out.cmp_canvas_a["side"], out.cmp_canvas_b["side"]) == ("a", "b")
    ta, tb = (shown.trace for shown in out.cmp_traces)
    d = divergence(ta, tb)  # what the page marks: tokens that differ (underlined), where the orders part
    assert out.cmp_canvas_a["diff"] == out.cmp_canvas_b["diff"] == d.token_differs
    assert out.cmp_canvas_a["cmp"] == {"first": d.first_step, "order": d.order_differs}


def test_global_sampling_with_raw_confidence_gives_the_same_trace(pg):
    out = pg.compare.lesson("global", prompt="the ", seed=4, gen_length=24, lang="en")
    ta, tb = (shown.trace for shown in out.compare.cmp_traces)
    assert ta.token_ids == tb.token_ids and ta.order == tb.order
    assert out.compare.cmp_summary.endswith("The two runs confirmed the same positions at every step.")


def test_shared_rng_changes_a_request_when_batched(pg, runner):
    out = pg.compare.lesson("rng", prompt="the ", seed=4, gen_length=24, lang="en")
    assert [len(p) for p, _ in runner.calls] == [8]  # A and B with two neighbours each, and each alone
    assert "A yes, B no" in out.compare.cmp_summary


def test_compare_errors_name_the_field(pg):
    with pytest.raises(ValueError, match="^config B: gen_length=8 is invalid"):
        pg.compare.run(prompt="x", seed=0, gen_length=16, cmp_a="{}", cmp_b='{"gen_length": 8}', neighbours=0,
                       lang="en")


@pytest.mark.parametrize("side", ["A", "B"])
def test_a_compare_error_says_which_config_is_wrong(pg, runner, side):
    # Issue 29 item 5: {"temperature": "hot"} on one side; the error says which, and nothing decodes.
    configs = {"cmp_a": "{}", "cmp_b": "{}", f"cmp_{side.lower()}": '{"temperature": "hot"}'}
    with pytest.raises(ValueError, match=f"^config {side}: temperature='hot' is invalid"):
        pg.compare.run(prompt="x", seed=0, gen_length=16, neighbours=0, lang="en", **configs)
    with pytest.raises(ValueError, match=f"^config {side}: config_json="):
        pg.compare.run(prompt="x", seed=0, gen_length=16, neighbours=0, lang="en",
                       **{**configs, f"cmp_{side.lower()}": "{not json"})
    assert runner.calls == []


def test_a_failed_compare_leaves_no_stale_pair_on_show(pg):
    cleared = pg.compare.cleared()
    assert cleared.compare.cmp_traces is None and cleared.compare.cmp_canvas_a is cleared.compare.cmp_canvas_b is None
    assert cleared.compare.cmp_summary == cleared.compare.cmp_facts_a == ""  # the page empties both sides and figures
