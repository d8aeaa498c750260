"""wiring.py: `wire` checks a handler's names against the page when the page is built, and answers
with the components' values in the order of its outputs."""
from __future__ import annotations

import gradio as gr
import pytest

from dllm_viz import DecodeConfig
from dllm_viz.app import ui
from dllm_viz.app.handlers.outputs import KSteps
from dllm_viz.app.wiring import wire
from tests.ui_model import CountingRunner


@pytest.fixture()
def page(tmp_path):
    runner = CountingRunner()
    ex = runner(["hi "], [DecodeConfig.preset("balanced", 16, seed=1)])[0]
    return ui.build_demo(runner, examples=[("ex", ex)], export_dir=tmp_path).page


def test_wire_rejects_a_name_the_handler_does_not_take(page):
    with gr.Blocks():
        with pytest.raises(TypeError, match="takes no"):
            wire(page, page.run.click, lambda *, prompt: None, ins=(page.prompt, page.lang), out=KSteps)


def test_a_user_error_is_shown_in_the_handlers_language_and_can_stay(page):
    def handler(*, lang: str) -> KSteps:
        raise ValueError("config B: temperature='hot' is invalid: expected 0 (argmax) or a number in "
                         "[0.0001, 3.40282e+38]")

    with gr.Blocks():
        event = wire(page, page.run.click, handler, ins=(page.lang,), out=KSteps, error_seconds=None)
    blocks_fn = event.fn  # what the server calls, with the inputs' values
    with pytest.raises(gr.Error) as zh:
        blocks_fn("zh")
    assert zh.value.message.startswith("配置 B：temperature='hot' 无效") and zh.value.duration is None
    with pytest.raises(gr.Error) as en:
        blocks_fn("en")
    assert en.value.message.startswith("config B: temperature='hot' is invalid")


def test_an_event_without_progress_runs_no_status_tracker(tmp_path):
    """Gradio's page runs a status tracker (a timer in an animation-frame loop) on each of an event's progress
    targets while it is pending, hidden or not: an event that shows no progress names none, so its dozens of
    outputs run none; one that shows progress keeps its own targets (the sweep's bar: every output)."""
    runner = CountingRunner()
    ex = runner(["hi "], [DecodeConfig.preset("balanced", 16, seed=1)])[0]
    deps = ui.build_demo(runner, examples=[("ex", ex)], export_dir=tmp_path).config["dependencies"]
    hidden = [d for d in deps if d["show_progress"] == "hidden" and d["outputs"] and d["targets"]]  # not the API's
    shown = [d for d in deps if d["show_progress"] != "hidden"]
    assert len(hidden) >= 10 and shown
    assert all(d["show_progress_on"] == [] for d in hidden)
    assert any(len(d["outputs"]) >= 20 for d in hidden)  # the decode event's outputs run no tracker
    assert all(d["show_progress_on"] is None or d["show_progress_on"] for d in shown)
