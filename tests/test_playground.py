"""playground.py called directly (no server): the page-wide handlers (language switch, /generate)."""
from __future__ import annotations

import json

import pytest

from dllm_viz.app.handlers.outputs import KEEP
from dllm_viz.app.strings import t
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
    # A stopped compare (no pair on show): its banner is said again in the new language, the rest stays.
    stopped = t("cmp_stopped", "en")  # what `CompareHandlers.stopped` shows
    back = pg.relabel(lang="zh", trace=None, cmp_traces=None, sweep_state=None, lesson_key="polluted",
                      cmp_summary=stopped, **widgets())
    assert back.compare.cmp_summary == t("cmp_stopped", "zh") != stopped and back.compare.cmp_canvas_a is KEEP
    assert pg.relabel(lang="en", trace=None, cmp_traces=None, sweep_state=None, lesson_key="polluted",
                      cmp_summary=back.compare.cmp_summary, **widgets()).compare.cmp_summary == stopped


def test_with_no_trace_yet_a_language_switch_says_the_badge_of_what_a_run_would_decode(pg, runner):
    """A page that opened without an example shows the badge of its settings before any decode (ui.opened); a language
    switch then says that badge again in the new language, as the decode would say it, decoding nothing; settings
    that ask for no decode leave the badge as it is."""
    for lang, knobs in (("zh", widgets()), ("en", widgets(temperature=1.5))):
        said = pg.relabel(lang=lang, trace=None, cmp_traces=None, sweep_state=None, lesson_key=None, **knobs)
        assert runner.calls == []
        assert said.preset_badge == pg.play.decode(prompt="ab ", lang=lang, **knobs).preset_badge
        runner.calls.clear()
    assert "当前预设" in pg.relabel(lang="zh", trace=None, cmp_traces=None, sweep_state=None, lesson_key=None,
                                **widgets()).preset_badge
    bad = pg.relabel(lang="zh", trace=None, cmp_traces=None, sweep_state=None, lesson_key=None, **widgets(top_k=-3))
    assert bad.preset_badge is KEEP


def test_a_language_switch_says_the_playgrounds_banner_again_in_the_new_language(pg, runner):
    """The banner of a decode (here a teaching switch against the correct run) is kept with its trace and said again
    in the new language, with no decode; a stopped decode's banner likewise; a page with no banner gets none."""
    shown = pg.play.decode(prompt="ab ", lang="en", **widgets(temperature=1.5, confidence_from="tempered"))
    zh = pg.play.decode(prompt="ab ", lang="zh", **widgets(temperature=1.5, confidence_from="tempered"))
    assert shown.banner and zh.banner and shown.banner != zh.banner
    runner.calls.clear()
    out = pg.relabel(lang="zh", trace=shown.trace, cmp_traces=None, sweep_state=None, lesson_key="polluted",
                     banner=shown.banner, **widgets())
    assert out.banner == zh.banner and runner.calls == []
    back = pg.relabel(lang="en", trace=shown.trace, cmp_traces=None, sweep_state=None, lesson_key="polluted",
                      banner=out.banner, **widgets())
    assert back.banner == shown.banner
    for banner, said in ((t("banner_stopped", "en"), t("banner_stopped", "zh")), ("", "")):
        assert pg.relabel(lang="zh", trace=shown.trace, cmp_traces=None, sweep_state=None, lesson_key="polluted",
                          banner=banner, **widgets()).banner == said


def test_generate_returns_text_then_trace_json(pg):
    *beats, (text, trace_json) = pg.generate("the ", json.dumps({"gen_length": 16, "temperature": 0.0}))
    trace = Trace.from_json(trace_json)
    assert text == trace.text and len(text) == 16 and all(beat == ("", "") for beat in beats)
    with pytest.raises(ValueError, match="top_k=0"):
        list(pg.generate("the ", '{"top_k": 0}'))


def test_generate_refuses_what_the_model_or_the_server_cannot_run_before_it_decodes(runner, tmp_path):
    from dllm_viz.core.budget import Budget

    pg = Playground(runner, export_dir=tmp_path, budget=Budget(max_length=64, max_cells=5000))
    with pytest.raises(ValueError, match=r"^gen_length = 1000000000 .*max_length=64, less the prompt tokens$"):
        list(pg.generate("the ", json.dumps({"gen_length": 10**9})))
    loop = {"gen_length": 48, "block_length": 2, "revise": "remdm", "remask_sigma": "loop", "remask_loop_steps": 4096}
    with pytest.raises(ValueError, match="this server runs at most 5000 per request"):
        list(pg.generate("the ", json.dumps(loop)))
    assert runner.calls == []  # nothing reached the runner


def test_generate_heartbeats_while_it_waits_and_a_client_that_leaves_cancels_it(pg):
    """/generate streams ("", "") while the decode runs; closing the stream (Gradio does when the
    client is gone) cancels the call through its ticket and ends the decode at its next step."""
    import threading

    from dllm_viz.app.handlers import asking, playground

    gate, cancelled, steps = threading.Event(), threading.Event(), []

    def slow(prompts, configs, *, on_step=None, record_candidates=5):
        ticket = asking.current()
        ticket.cancel = cancelled.set

        def hook(i, rec):
            steps.append(rec.step)
            gate.wait(timeout=30)
            on_step(i, rec)

        return pg_runner(prompts, configs, on_step=hook, record_candidates=record_candidates)

    pg_runner, pg.run = pg.run, slow
    playground.API_HEARTBEAT_SECONDS, old = 0.05, playground.API_HEARTBEAT_SECONDS
    try:
        stream = pg.generate("the ", json.dumps({"gen_length": 16, "schedule": "fixed_steps", "steps": 16}))
        assert next(stream) == ("", "")  # a beat while step 0 is held
        threading.Timer(0.2, gate.set).start()
        stream.close()  # the client left
    finally:
        playground.API_HEARTBEAT_SECONDS = old
    assert cancelled.is_set() and len(steps) <= 2 < 16
