"""handlers/starts.py: a decode the page starts before its event comes, adopted by that event (one decode)."""
from __future__ import annotations

import re
import threading
import time

import pytest

from dllm_viz import DecodeConfig
from dllm_viz.app.handlers.outputs import DecodeFirst, keep
from dllm_viz.app.handlers.playground import Playground
from dllm_viz.app.handlers.starts import ADOPT_SECONDS, Starts
from dllm_viz.app.views.web import WEB
from dllm_viz.app.handlers.traces import new_handle
from tests.ui_model import CountingRunner, held_after_first_step, widgets


@pytest.fixture()
def runner() -> CountingRunner:
    return CountingRunner()


@pytest.fixture()
def pg(runner, tmp_path) -> Playground:
    return Playground(runner, export_dir=tmp_path, new_seed=lambda: 1234)


def until(check, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.01)
    return check()


def test_the_event_adopts_the_decode_its_page_started_one_decode_in_all(pg, runner):
    ref = new_handle()
    assert pg.play.start(session="s1", ref=ref, prompt="the cat ", lang="en", **widgets(temperature=0.7)) is None
    assert until(lambda: pg.traces.entry("s1", ref) is not None and pg.traces.entry("s1", ref).state == "done")
    views = list(pg.play.decode_stream(prompt="the cat ", lang="en", ref=ref, session="s1", **widgets(temperature=0.7)))
    assert len(runner.calls) == 1  # the page's start was the event's decode
    assert len(views) == 1 and views[0].trace.handle == ref  # the page had the handle: only the finished view
    assert views[0].trace.trace.config.temperature == 0.7 and pg.play.starts.pending() == 0


def test_an_event_that_comes_first_decodes_itself_and_a_late_start_does_nothing(pg, runner):
    ref = new_handle()
    out = pg.play.decode(prompt="the ", lang="en", ref=ref, session="s1", **widgets())
    assert out.trace.handle == ref
    assert pg.play.start(session="s1", ref=ref, prompt="the ", lang="en", **widgets()) == "claimed"
    assert len(runner.calls) == 1 and pg.play.starts.pending() == 0


def test_a_start_no_event_adopts_is_stopped_and_its_handle_is_not_reused(pg, runner):
    gate = threading.Event()
    pg.play.starts = Starts(adopt_seconds=0.3)
    pg.play.runner_for = lambda pick: held_after_first_step(runner, gate)
    ref = new_handle()
    assert pg.play.start(session="s1", ref=ref, prompt="the ", lang="en", **widgets()) is None
    assert until(lambda: pg.traces.entry("s1", ref).state == "stopped")  # the page's reader of it stops too
    gate.set()  # the step in progress ends: the decode stops there
    assert pg.play.starts.pending() == 0 and until(lambda: "s1" not in pg.play.stops._sessions)
    # Its event, late: decodes anew, under a handle of its own (the page has read the old one's end).
    views = list(pg.play.decode_stream(prompt="the ", lang="en", ref=ref, session="s1", **widgets()))
    assert views[0].canvas["ref"] != ref and views[-1].trace.handle == views[0].canvas["ref"]
    assert len(runner.calls) == 2


def test_another_sessions_handle_is_not_adopted(pg, runner):
    ref = new_handle()
    assert pg.play.start(session="s1", ref=ref, prompt="the ", lang="en", **widgets()) is None
    out = pg.play.decode(prompt="the ", lang="en", ref=ref, session="s2", **widgets())
    assert len(runner.calls) == 2 and pg.traces.entry("s2", out.trace.handle) is not None
    assert pg.play.starts.pending("s1") == 1  # s1's own start still waits for s1's event


def test_a_start_is_adopted_only_for_what_its_event_asks(pg, runner):
    gate = threading.Event()
    pg.play.runner_for = lambda pick: held_after_first_step(runner, gate)
    ref = new_handle()
    assert pg.play.start(session="s1", ref=ref, prompt="the ", lang="en", **widgets(temperature=0.5)) is None
    assert until(lambda: len(runner.calls) == 1)
    threading.Timer(0.2, gate.set).start()
    views = list(pg.play.decode_stream(prompt="the ", lang="en", ref=ref, session="s1", **widgets(temperature=0.9)))
    assert views[-1].trace.trace.config.temperature == 0.9 and views[-1].trace.handle != ref
    assert len(runner.calls) == 2 and until(lambda: pg.traces.entry("s1", ref).state == "stopped")


def test_starts_take_the_seats_of_the_page_s_decodes_within_each_session_s_share(pg, runner):
    """One budget (`seats`): a start takes a free seat of the page's decode group, else is refused; a session
    holds at most `per_session` seats, its events' included, so one page cannot take the others' seats."""
    gate = threading.Event()
    pg.play.runner_for = lambda pick: held_after_first_step(runner, gate)
    pg.seats.limit = 4
    try:
        refs = [new_handle() for _ in range(3)]
        assert [pg.play.start(session="s1", ref=r, prompt="a", lang="en", **widgets()) for r in refs] == [
            None, None, "too many"]
        assert pg.seats.held("s1") == 2 and pg.play.starts.pending("s1") == 2
        assert pg.play.start(session="s2", ref=new_handle(), prompt="a", lang="en", **widgets()) is None
        # An event of s3 (no start of its page) takes the last seat: then the page's decodes fill the limit.
        event = threading.Thread(target=pg.play.decode, kwargs=dict(prompt="b", lang="en", session="s3", **widgets()))
        event.start()
        assert until(lambda: pg.seats.held() == 4)
        assert pg.play.start(session="s4", ref=new_handle(), prompt="a", lang="en", **widgets()) == "busy"
        refs4 = f"{new_handle()} {new_handle()}"
        asked = dict(prompt="the ", seed=3, gen_length=24, model_pick=None)
        assert pg.compare.start(session="s4", cmp_ref=refs4, lesson="polluted", lang="en", **asked) == "busy"
        assert until(lambda: len(runner.calls) == 4) and len(runner.calls) == 4  # nothing started beyond the limit
    finally:
        gate.set()
    event.join(30)
    assert until(lambda: pg.seats.held() == 0 or pg.play.starts.pending() > 0)


def test_a_sweep_holds_a_seat_and_a_start_beyond_the_limit_is_refused_then_its_event_decodes(pg, runner):
    gate = threading.Event()
    pg.sweep.runner_for = lambda pick: held_after_first_step(runner, gate)
    pg.seats.limit = 1
    sweep = threading.Thread(target=pg.sweep.run, kwargs=dict(
        sweep_temps=[0.5], sweep_divisors=["16"], sweep_decays=[0.5], sweep_seeds=1, sweep_prompts="the ",
        sweep_gen_length=16, lang="en"))
    sweep.start()
    assert until(lambda: len(runner.calls) == 1 and pg.seats.held() == 1)
    ref = new_handle()
    assert pg.play.start(session="s1", ref=ref, prompt="a", lang="en", **widgets()) == "busy"
    assert len(runner.calls) == 1 and pg.play.starts.pending() == 0
    gate.set()
    sweep.join(30)
    assert pg.seats.held() == 0
    out = pg.play.decode(prompt="a", lang="en", ref=ref, session="s1", **widgets())  # its event: one decode
    assert out.trace.handle == ref and len(runner.calls) == 2 and pg.seats.held() == 0


def test_an_event_waits_for_the_seat_a_start_holds_and_takes_it_when_that_one_ends(pg, runner):
    gate = threading.Event()
    pg.play.runner_for = lambda pick: held_after_first_step(runner, gate)
    pg.seats.limit = 1
    pg.play.starts.adopt_seconds = 0.5  # its event never comes: stopped after this, and its seat freed
    assert pg.play.start(session="s1", ref=new_handle(), prompt="a", lang="en", **widgets()) is None
    pg.play.runner_for = lambda pick: runner
    began = time.monotonic()
    out = pg.play.decode(prompt="b", lang="en", session="s2", **widgets())  # Gradio admitted it: it waits, then runs
    assert time.monotonic() - began >= 0.3 and out.trace.trace.config.gen_length == 24
    gate.set()
    assert until(lambda: pg.seats.held() == 0)


def test_the_api_s_largest_requests_hold_no_seat_of_the_page(pg, runner):
    """`/generate` runs in a concurrency group of its own: its requests at the server's largest budget
    (`serve.REQUEST_CELLS`) refuse no page start and hold no page event."""
    from dllm_viz.app.serve import REQUEST_CELLS
    from dllm_viz.core.budget import Budget

    gate, leave = threading.Event(), threading.Event()
    pg.run = held_after_first_step(runner, gate)
    pg.budget = Budget(max_cells=REQUEST_CELLS)
    pg.seats.limit = 2
    largest = '{"gen_length": 240, "revise": "remdm", "remask_sigma": "loop", "remask_loop_steps": 3800}'
    assert pg.budget.check(pg_config(largest)).cells > 0.95 * REQUEST_CELLS  # the largest the server takes

    def api(i: int) -> None:
        answers = pg.generate("the ", largest, client=("api", i))
        for _ in answers:  # ("", "") each heartbeat while it decodes
            if leave.is_set():
                break
        answers.close()  # the client left: its decode is cancelled

    apis = [threading.Thread(target=api, args=(i,)) for i in range(4)]
    for thread in apis:
        thread.start()
    try:
        assert until(lambda: len(runner.calls) == 4)
        assert pg.seats.held() == 0
        pg.play.runner_for = lambda pick: runner
        assert pg.play.start(session="s1", ref=new_handle(), prompt="a", lang="en", **widgets()) is None
        assert pg.play.decode(prompt="b", lang="en", session="s2", **widgets()).trace is not None
    finally:
        leave.set()
        gate.set()
    for thread in apis:
        thread.join(60)


def pg_config(text: str):
    from dllm_viz.app.handlers.adapters import parse_config_json

    return parse_config_json(text)


def test_a_start_with_a_bad_setting_decodes_nothing_and_its_event_reports_it(pg, runner):
    ref = new_handle()
    error = pg.play.start(session="s1", ref=ref, prompt="x", lang="en", **widgets(temperature=float("nan")))
    assert "temperature=nan" in error and runner.calls == [] and pg.play.starts.pending() == 0
    with pytest.raises(ValueError, match="temperature=nan"):
        pg.play.decode(prompt="x", lang="en", ref=ref, session="s1", **widgets(temperature=float("nan")))
    assert runner.calls == []


def test_stop_stops_a_started_decode_and_its_event_then_answers_nothing_new(pg, runner):
    shown = pg.play.decode(prompt="ab ", lang="en", session="s1", **widgets())
    gate = threading.Event()
    pg.play.runner_for = lambda pick: held_after_first_step(runner, gate)
    ref = new_handle()
    assert pg.play.start(session="s1", ref=ref, prompt="the ", lang="en", **widgets(temperature=0.3)) is None
    assert until(lambda: len(runner.calls) == 2)
    key = pg.play.stops._sessions["s1"].key
    began = time.monotonic()
    assert "Stopped" in pg.play.stopped(trace=shown.trace, lang="en", session="s1", stop_key=key).banner
    assert time.monotonic() - began < 2  # no stream follows it yet: nothing to wait for
    gate.set()
    views = list(pg.play.decode_stream(prompt="the ", lang="en", ref=ref, session="s1", **widgets(temperature=0.3)))
    # one answer, every output as it was (an event that said nothing would have Gradio set its outputs to None)
    assert views == [keep(DecodeFirst)] and len(runner.calls) == 2
    assert until(lambda: pg.traces.entry("s1", ref).state == "stopped")


# ----- a compare: a lesson's click, Compare's run -------------------------------------------------------
def test_a_lesson_click_adopts_the_compare_its_page_started_one_decode(pg, runner):
    refs = f"{new_handle()} {new_handle()}"
    asked = dict(prompt="the ", seed=3, gen_length=24, model_pick=None)
    assert pg.compare.start(session="s1", cmp_ref=refs, lesson="polluted", lang="en", **asked) is None
    views = list(pg.compare.lesson_stream("polluted", lang="en", session="s1", cmp_ref=refs, **asked))
    assert len(runner.calls) == 1 and pg.compare.starts.pending() == 0
    first, last = views[0].compare, views[-1].compare
    assert [first.cmp_canvas_a["ref"], first.cmp_canvas_b["ref"]] == refs.split()  # the page's own handles
    assert [s.handle for s in last.cmp_traces] == refs.split()


def test_a_compare_run_not_what_its_page_started_decodes_its_own(pg, runner):
    refs = f"{new_handle()} {new_handle()}"
    asked = dict(prompt="the ", seed=3, gen_length=24, cmp_a='{"temperature": 0.5}', neighbours=0)
    assert pg.compare.start(session="s1", cmp_ref=refs, cmp_b='{"temperature": 0.9}', **asked) is None
    views = list(pg.compare.run_stream(lang="en", session="s1", cmp_ref=refs, cmp_b='{"temperature": 1.2}', **asked))
    assert views[-1].cmp_traces[1].trace.config.temperature == 1.2 and len(runner.calls) == 2
    assert views[0].cmp_canvas_a["ref"] not in refs.split()  # the page has read the stopped one's end
    # A page's start with a bad config decodes nothing; the event reports it (naming the side).
    bad = f"{new_handle()} {new_handle()}"
    assert "config B" in pg.compare.start(session="s1", cmp_ref=bad, cmp_b='{"temperature": -1}', **asked)
    with pytest.raises(ValueError, match="config B"):
        list(pg.compare.run_stream(lang="en", session="s1", cmp_ref=bad, cmp_b='{"temperature": -1}', **asked))
    assert len(runner.calls) == 2


# ----- the start's pre-check: as the picked model reads the settings ---------------------------------
@pytest.fixture()
def picker(tmp_path):
    """A page whose picker offers a masked model that cannot edit and a renoising one, each with what
    `serve.limits_of` says of it (how it reads a config), within a server's work bound."""
    from dllm_viz.app.handlers.playground import ModelChoice
    from dllm_viz.app.serve import limits_of
    from dllm_viz.core.budget import Budget
    from tests.renoise_table import TableRenoiser

    masked, renoise = CountingRunner(), CountingRunner()
    renoise.model = TableRenoiser()
    models = {name: ModelChoice(run=r, prompts=("a",), name=name, **limits_of(r.model))
              for name, r in (("tiny", masked), ("table", renoise))}
    pg = Playground(masked, export_dir=tmp_path, models=models, budget=Budget(max_cells=1000))
    return pg, masked, renoise


def test_a_start_on_a_renoising_model_is_checked_as_it_reads_the_settings(picker):
    pg, _, renoise = picker
    # The page's masked widgets are not sent to a renoising model (top_k is not named); its own work is refused
    error = pg.play.start(session="s1", ref=new_handle(), prompt="a", lang="en", model_pick="table", **widgets())
    assert "1152 positions" in error and "top_k" not in error
    assert renoise.calls == [] and pg.seats.held() == 0 and pg.play.starts.pending() == 0
    # Its work is whole canvases of max_denoising_steps steps (4 x 48 x 6 = 1,152 positions), not the masked
    # canvas's 24 x 24 = 576: over the server's 1,000.
    with pytest.raises(ValueError, match=r"192 steps x 6 positions = 1152 .* max_denoising_steps=48"):
        pg.budget_for("table").check(DecodeConfig(gen_length=24))
    assert pg.budget_for("tiny").check(DecodeConfig(gen_length=24)).cells == 576
    assert pg.budget_for("table").check(DecodeConfig(gen_length=24, max_denoising_steps=20)).cells == 480


def test_a_start_asking_a_masked_model_for_what_it_cannot_do_decodes_nothing(picker):
    pg, masked, _ = picker
    for asked, says in (({"revise": "joint_threshold"}, "the model cannot edit"),
                        ({"early_stop": True}, "the model has no end-of-text token")):
        error = pg.play.start(session="s1", ref=new_handle(), prompt="a", lang="en", model_pick="tiny",
                              **widgets(**asked))
        assert error is not None and says in error, error
        with pytest.raises(ValueError, match=says):  # its event reports the same, before anything starts
            pg.play.decode(prompt="a", lang="en", session="s1", model_pick="tiny", **widgets(**asked))
    assert masked.calls == [] and pg.seats.held() == 0


def test_the_pages_hold_on_its_event_ends_well_inside_the_adopt_window():
    # The page holds a decode event it started until its views are drawn, at most HOLD_MS (start.js); a start
    # no event adopts within ADOPT_SECONDS is stopped, so a held event must still find its decode running.
    hold_ms = int(re.search(r"const HOLD_MS = (\d+);", (WEB / "start.js").read_text(encoding="utf-8")).group(1))
    assert hold_ms / 1000 + 1.5 <= ADOPT_SECONDS
