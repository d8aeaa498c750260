"""app/handlers/compare.py called directly (no server): lesson clicks and compares, one batched decode each."""
from __future__ import annotations

import dataclasses
import json
import threading
import time

import pytest

from dllm_viz.app.handlers.outputs import KEEP
from dllm_viz.app.handlers.playground import Playground
from dllm_viz.app.handlers.traces import new_handle
from dllm_viz.app.strings import t
from dllm_viz.core.analysis import divergence
from tests.test_starts import until
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


# ----- Stop: a compare is one of its session's decodes, stopped as the Playground's are ----------------------
def held_counting(runner, gate, steps):
    """`runner`, each call's step records of request 0 listed in `steps`, held after step 0 until `gate` is set."""
    def held(prompts, configs, *, on_step=None, record_candidates=5):
        def hook(i, rec):
            if i == 0:
                steps.append(rec.step)
            if rec.step >= 1:
                gate.wait(timeout=60)
            on_step(i, rec)
        return runner(prompts, configs, on_step=hook, record_candidates=record_candidates)

    return held


LESSON = dict(prompt="the ", seed=2, gen_length=24, model_pick=None)


def test_stop_ends_a_compare_at_its_next_step_and_the_tab_shows_it_stopped(pg, runner):
    full = pg.compare.lesson("shipped_llada", lang="en", session="s0", **LESSON)
    planned = len(full.compare.cmp_traces[0].trace.steps)
    gate, steps = threading.Event(), []
    pg.compare.runner_for = lambda pick: held_counting(runner, gate, steps)
    runner.calls.clear()
    mine = pg.compare.lesson_stream("shipped_llada", lang="en", session="s1", **LESSON)
    first_view = next(mine)
    first = first_view.compare
    a, b = first.cmp_canvas_a, first.cmp_canvas_b
    assert a["live"] is True and a["key"] == b["key"] and len(a["key"]) >= 16  # what the sides' Stop sends
    for side in (a, b):  # the key is the first chunk of both sides: the page reads it before the event answers
        assert json.loads(pg.traces.entry("s1", side["ref"]).since(0)[0][0])["key"] == a["key"]
    later: list = []  # (when, view) of each view the stream gives after its first
    reader = threading.Thread(target=lambda: later.extend((time.monotonic(), view) for view in mine))
    reader.start()  # Gradio reads the stream in its own thread
    threading.Timer(0.3, gate.set).start()  # the step in progress ends after Stop came
    out = pg.compare.stopped(lang="en", cmp_stop_key=a["key"], session="s1")
    reader.join(timeout=60)
    # Stop returns once the compare's stream has ended: nothing of it follows Stop's view, which is an empty
    # pair under the banner (the configs asked stay; no other pair stands beside them). The stream ends on that
    # view too (an event that answers nothing would have Gradio empty its outputs: the configs, the text).
    assert [view.compare for _, view in later] == [out] and "s1" not in pg.compare.stops._sessions
    assert later[0][1].lesson_key == "shipped_llada" and later[0][1].cmp_a == first_view.cmp_a
    assert out.cmp_summary == t("cmp_stopped", "en") and out.cmp_traces is None
    assert out.cmp_canvas_a is None and out.cmp_canvas_b is None and out.cmp_facts_a == out.cmp_facts_b == ""
    assert len(runner.calls) == 1 and steps[:1] == [0] and len(steps) <= 3 < planned  # ended at its next step
    assert [pg.traces.entry("s1", s["ref"]).since(0)[1] for s in (a, b)] == ["stopped", "stopped"]
    # The session goes on: the next lesson click decodes once, to its end.
    gate.set()
    runner.calls.clear()
    again = pg.compare.lesson("shipped_llada", lang="en", session="s1", **LESSON)
    assert len(runner.calls) == 1 and len(again.compare.cmp_traces[0].trace.steps) == planned
    assert "s1" not in pg.compare.stops._sessions


def test_a_compare_stops_only_with_its_pages_key_and_in_either_language(pg, runner):
    gate, steps = threading.Event(), []
    pg.compare.runner_for = lambda pick: held_counting(runner, gate, steps)
    mine = pg.compare.run_stream(lang="zh", session="s1", cmp_a='{"schedule": "fixed_steps"}',
                                 cmp_b='{"schedule": "fixed_steps", "temperature": 1.0}', neighbours=0, **LESSON)
    key = next(mine).cmp_canvas_a["key"]
    for session, wrong in (("s1", ""), ("s1", "x" * len(key)), ("other", key)):  # the hash alone, a guess, another's
        out = pg.compare.stopped(lang="zh", cmp_stop_key=wrong, session=session)
        assert all(getattr(out, f.name) is KEEP for f in dataclasses.fields(out))  # the tab as it is
        assert not any(s.stop.is_set() for s in pg.compare.stops._sessions["s1"].running)
    reader = threading.Thread(target=lambda: list(mine))
    reader.start()
    threading.Timer(0.3, gate.set).start()
    out = pg.compare.stopped(lang="zh", cmp_stop_key=key, session="s1")
    reader.join(timeout=60)  # (its stream ends on the same view)
    assert out.cmp_summary == t("cmp_stopped", "zh") != t("cmp_stopped", "en") and out.cmp_traces is None
    assert len(runner.calls) == 1 and len(steps) <= 3


def test_the_playgrounds_stop_stops_a_compare_of_its_session_too(pg, runner):
    """One Stop, one key for the session's decodes, whichever tab started them."""
    gate, steps = threading.Event(), []
    pg.compare.runner_for = lambda pick: held_counting(runner, gate, steps)
    mine = pg.compare.lesson_stream("shipped_llada", lang="en", session="s1", **LESSON)
    key = next(mine).compare.cmp_canvas_a["key"]
    assert pg.play.stops is pg.compare.stops
    threading.Timer(0.3, gate.set).start()
    pg.play.stopped(trace=None, lang="en", session="s1", stop_key=key)
    rest = list(mine)  # the Compare tab shows it stopped too
    assert [v.compare.cmp_summary for v in rest] == [t("cmp_stopped", "en")] and rest[0].compare.cmp_traces is None
    assert len(steps) <= 3 and "s1" not in pg.play.stops._sessions


def test_stop_before_its_event_came_stops_the_compare_its_page_started_and_the_event_shows_it_stopped(pg, runner):
    gate, steps = threading.Event(), []
    pg.compare.runner_for = lambda pick: held_counting(runner, gate, steps)
    refs = f"{new_handle()} {new_handle()}"
    assert pg.compare.start(session="s1", cmp_ref=refs, lesson="shipped_llada", lang="en", **LESSON) is None
    assert until(lambda: len(steps) >= 1)
    key = pg.compare.stops._sessions["s1"].key
    began = time.monotonic()
    out = pg.compare.stopped(lang="en", cmp_stop_key=key, session="s1")
    assert out.cmp_summary == t("cmp_stopped", "en") and time.monotonic() - began < 2  # no stream to wait for
    gate.set()
    views = list(pg.compare.lesson_stream("shipped_llada", lang="en", session="s1", cmp_ref=refs, **LESSON))
    assert [v.compare for v in views] == [out] and views[0].lesson_key == "shipped_llada"  # nothing of it, and
    assert len(runner.calls) == 1 and len(steps) <= 3  # no answer-less end (Gradio would empty the configs)
    assert until(lambda: pg.traces.entry("s1", refs.split()[0]).state == "stopped")


def test_a_compare_waiting_for_a_slot_shows_where_it_stands_on_both_sides(pg, runner):
    """Before its first step, a compare that waits in the shared engine's queue tells the page its position and an
    estimate on both sides (the page then shows them, with Stop), each change once; its steps follow."""
    from dllm_viz.app.handlers import asking

    go = threading.Event()
    places = iter([(2, 3.5), (2, 3.5), (1, None), None])

    def queued(prompts, configs, *, on_step=None, record_candidates=5):
        ticket = asking.current()
        ticket.waiting = lambda: next(places, None)
        assert go.wait(timeout=60)  # "in the queue" until the test lets it run
        return runner(prompts, configs, on_step=on_step, record_candidates=record_candidates)

    pg.compare.runner_for = lambda pick: queued
    views = pg.compare.lesson_stream("polluted", lang="en", session="s", **LESSON)
    first = next(views).compare
    entries = [pg.traces.entry("s", side["ref"]) for side in (first.cmp_canvas_a, first.cmp_canvas_b)]
    rest: list = []
    reader = threading.Thread(target=lambda: rest.extend(views))
    reader.start()
    chunks = lambda entry: [json.loads(c) for c in entry.since(0)[0]]  # noqa: E731
    deadline = time.monotonic() + 30
    while sum("queue" in c for c in chunks(entries[1])) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    go.set()
    reader.join(timeout=60)
    for entry in entries:
        got = chunks(entry)
        assert [c["queue"] for c in got if "queue" in c] == [[2, 4], [1, None], None]  # seconds rounded up
        assert got[0]["key"] == first.cmp_canvas_a["key"] and "head" in got[4]  # Stop's key; then its steps
        assert not any("queue" in c for c in got[4:])
    assert rest[-1].compare.cmp_traces is not None
