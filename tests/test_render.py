"""render.py: run facts, the Compare summary and the page's small markup: pure functions of a Trace.
What the page draws of a trace (canvas, inspector, figures) comes from the trace's chunks
(tests/test_wire.py) and the renderer (tests/test_page_js.py, tests/test_figures_js.py)."""
from __future__ import annotations

import copy

import pytest

from dllm_viz import DecodeConfig, decode
from dllm_viz.app.views import render
from dllm_viz.core.analysis import divergence
from dllm_viz.core.trace import Trace
from tests.ui_model import make_text_model

PROMPT = "the cat "


@pytest.fixture(scope="module")
def model():
    return make_text_model()


@pytest.fixture(scope="module")
def trace(model) -> Trace:
    return decode(model, [PROMPT], DecodeConfig.preset("balanced", 24, seed=3))[0]


def test_facts_are_pure_and_survive_the_json_round_trip(trace):
    copy_ = Trace.from_json(trace.to_json())
    assert render.facts_html(copy_) == render.facts_html(trace)
    assert render.facts_html(trace, "zh") != render.facts_html(trace)


def test_run_facts_match_metrics(trace):
    facts = dict(render.run_facts(trace))
    assert facts["f_steps"] == str(len(trace.steps))
    assert facts["f_distinct2"] == f"{trace.metrics['distinct_2']:.2f}"
    assert "f_forked" not in facts  # a decode, not a fork


def test_a_forked_traces_facts_say_where_it_left_its_parent_and_what_changed_there(model, trace):
    from dllm_viz import fork

    pos = next(p for p, tok in enumerate(trace.canvas_at(1)) if tok is None)
    forked = fork(model, fork(model, trace, 2, force={pos: 5}, knobs={"temperature": 0.0}), 4)
    facts = {lang: dict(render.run_facts(forked, lang))["f_forked"] for lang in ("en", "zh")}
    assert facts["en"] == (f"after 2 steps: forced (position=id) {pos}=5; temperature 0.0 (was 1.0) · "
                           "after 4 steps: nothing changed")
    assert facts["zh"].startswith("第 2 步之后：") and "（原为 1.0）" in facts["zh"]
    assert facts["zh"].endswith("第 4 步之后：没有改动")
    shown = render.facts_html(Trace.from_json(forked.to_json()), "zh")  # the page's panel, from a trace file
    assert "从父轨迹分叉而来" in shown and "temperature 0.0（原为 1.0）" in shown


def test_divergence_text_counts_real_steps(model, trace):
    other = decode(model, [PROMPT], trace.config.replace(seed=4, temperature=2.0))[0]
    d = divergence(trace, other)
    text = render.divergence_text(trace, other)
    assert text.startswith(f"Steps: A {len(trace.steps)}, B {len(other.steps)}.")
    assert f"diverge at step {d.first_step + 1}" in text


def test_run_facts_report_the_nfe_the_early_stop_saved(trace):
    assert "f_nfe_saved" not in dict(render.run_facts(trace))
    stopped = copy.deepcopy(trace)
    stopped.config = DecodeConfig(gen_length=trace.config.gen_length, schedule="fixed_steps", steps=12)
    stopped.early_stop_step = len(stopped.steps) - 1
    assert dict(render.run_facts(stopped))["f_nfe_saved"] == str(12 - len(stopped.steps)) == str(stopped.nfe_saved)
    stopped.config = DecodeConfig(gen_length=trace.config.gen_length, schedule="threshold")
    assert dict(render.run_facts(stopped))["f_nfe_saved"] == "–"  # the plan depended on the model


def test_an_inline_script_is_written_whole_or_refused():
    assert render.inline_script_html("let a = 1 < 2;") == "<script>let a = 1 < 2;</script>"
    for bad in ("x = '</script>'", "x = '</SCRIPT >'"):
        with pytest.raises(ValueError, match="code"):
            render.inline_script_html(bad)
