"""playground.py called directly (no server): the page-wide handlers (language switch, /generate)."""
from __future__ import annotations

import json

import pytest

from dllm_viz.app.handlers.outputs import KEEP
from dllm_viz.app.handlers.playground import Playground
from dllm_viz.core.trace import Trace
from tests.ui_model import CountingRunner, widgets


@pytest.fixture()
def runner() -> CountingRunner:
    return CountingRunner()


@pytest.fixture()
def pg(runner, tmp_path) -> Playground:
    return Playground(runner, export_dir=tmp_path, new_seed=lambda: 1234)


def test_relabel_renders_every_view_again_without_decoding(pg, runner):
    trace = pg.play.decode(prompt="ab ", lang="en", **widgets()).trace
    runner.calls.clear()
    out = pg.relabel(lang="zh", trace=trace, cmp_traces=None, sweep_state=None, lesson_key="polluted", **widgets())
    # The same trace in 中文: the page sees it is the one on show and keeps its cursor and playback.
    assert out.canvas["lang"] == "zh" and out.canvas["ref"] == trace.handle and out.canvas["selected"] is None
    assert out.compare.cmp_summary is KEEP and "步" in out.facts
    assert runner.calls == []


def test_generate_returns_text_then_trace_json(pg):
    text, trace_json = pg.generate("the ", json.dumps({"gen_length": 16, "temperature": 0.0}))
    trace = Trace.from_json(trace_json)
    assert text == trace.text and len(text) == 16
    with pytest.raises(ValueError, match="top_k=0"):
        pg.generate("the ", '{"top_k": 0}')
