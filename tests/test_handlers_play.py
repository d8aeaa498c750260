"""app/handlers/play.py called directly (no server): decode, presets, the k line, traces in and out."""
from __future__ import annotations

import json
import threading
import time

import pytest

from dllm_viz import DecodeConfig
from dllm_viz.app.handlers.adapters import KNOBS, SCHEDULE_KNOBS, config_to_settings, settings_to_config
from dllm_viz.app.handlers.outputs import KEEP
from dllm_viz.app.handlers.playground import Playground
from dllm_viz.app.strings import t
from dllm_viz.core.config import REVISION_PRESETS, SHIPPED_PRESETS
from tests.ui_model import CountingRunner, held_after_first_step, make_text_model, widgets


@pytest.fixture()
def runner() -> CountingRunner:
    return CountingRunner()


@pytest.fixture()
def pg(runner, tmp_path) -> Playground:
    return Playground(runner, export_dir=tmp_path, new_seed=lambda: 1234)


def test_a_decode_calls_the_model_once_and_leaves_the_selection_to_the_page(pg, runner):
    out = pg.play.decode(prompt="the cat ", lang="en", **widgets())
    assert runner.calls == [(["the cat "], [settings_to_config(**widgets())])]
    # The trace by its handle, at its end; no position named, so the page keeps the one it has selected.
    assert out.canvas == {"ref": out.trace.handle, "lang": "en", "live": False, "frame": None, "selected": None,
                          "autoplay": False}
    assert out.banner == "" and "active preset: balanced" in out.preset_badge
    assert len(runner.calls) == 1


def test_a_teaching_switch_decodes_the_correct_run_in_the_same_call(pg, runner):
    out = pg.play.decode(prompt="the ", lang="en", **widgets(confidence_from="tempered", temperature=2.0))
    assert len(runner.calls) == 1
    _, configs = runner.calls[0]
    assert configs[1] == configs[0].replace(confidence_from="raw")
    assert out.banner.startswith("Teaching switch on (confidence_from = tempered)")


def test_a_switch_with_no_effect_alone_says_so_and_names_its_lesson(pg):
    out = pg.play.decode(prompt="the ", lang="en", **widgets(rng="shared"))
    assert "alone it changes nothing here" in out.banner and "Per-request vs shared RNG" in out.banner
    assert "](#dv-open-lesson-rng)" in out.banner  # the link page.js turns into that lesson's click


@pytest.mark.parametrize("name", ["llada", "fast_dllm"])
def test_an_as_shipped_rules_banner_links_its_own_lesson(pg, name):
    # At temperature 0 LLaDA's and Fast-dLLM's draws are the argmax: alone the rule changes nothing
    # on this prompt, and the banner sends to that rule's lesson, not the polluted-confidence one.
    settings = config_to_settings(DecodeConfig.preset(name, 16))
    out = pg.play.decode(prompt="the ", lang="en", **settings)
    assert "decodes exactly what the article's rule does" in out.banner and "Teaching switch" not in out.banner
    assert f"](#dv-open-lesson-shipped_{name})" in out.banner and "polluted" not in out.banner
    tempered = pg.play.decode(prompt="the ", lang="en", **widgets(confidence_from="sampled_raw", sample_scope="all",
                                                                  temperature=0.0))
    assert "](#dv-open-lesson-shipped_llada)" in tempered.banner  # the switch alone: LLaDA's rule's lesson too


def test_sampled_confidence_is_never_decoded_with_selected_sampling(pg, runner):
    out = pg.play.decode(prompt="the ", lang="en", **widgets(confidence_from="sampled", sample_scope="selected"))
    assert out.knobs.sample_scope == "all" and out.trace.trace.config.sample_scope == "all"
    assert "sample at” was set to all" in out.banner
    assert runner.calls[0][1][0].sample_scope == "all"


def test_a_failed_decode_reverts_the_widgets_to_the_trace_on_show(pg):
    shown = pg.play.decode(prompt="the ", lang="en", **widgets(temperature=0.7)).trace
    with pytest.raises(ValueError, match="temperature=nan"):
        pg.play.decode(prompt="x", lang="en", **widgets(temperature=float("nan")))
    back = pg.play.revert(trace=shown)
    assert back.temperature == 0.7 and back.block_length == 0
    assert all(getattr(pg.play.revert(trace=None), k) is KEEP for k in KNOBS)


def test_presets_set_the_article_values(pg):
    out = pg.play.preset("speed", gen_length=48)
    cfg = DecodeConfig.preset("speed", 48)
    assert (out.temperature, out.top_k, out.decay, out.schedule, out.stages_on) == (
        cfg.temperature, cfg.top_k, cfg.decay, "topk_decay", False)
    assert out.gen_length is KEEP and out.seed is KEEP  # not a decoding rule: they stay as they are


def test_every_schedule_enables_exactly_the_sliders_it_reads(pg):
    from dllm_viz.app.handlers.adapters import SCHEDULE_SLIDERS

    for schedule, used in SCHEDULE_KNOBS.items():
        states = vars(pg.play.knob_states(schedule=schedule))
        assert set(states) == set(SCHEDULE_SLIDERS) and {k for k, on in states.items() if on} == used
    assert SCHEDULE_KNOBS["topk_decay"] == {"top_k", "decay", "min_k"} and SCHEDULE_KNOBS["eb"] == {"gamma"}


def test_k_steps_shows_the_sequence_or_says_why_not(pg):
    assert "8, 7, 6, 5, 4, 3, 2, 1" in pg.play.k_steps(lang="en", **widgets(gen_length=64, top_k=8, decay=0.95)).k_steps
    assert "threshold" in pg.play.k_steps(lang="en", **widgets(schedule="threshold")).k_steps
    assert pg.play.k_steps(lang="en", **widgets(block_length=7)).k_steps is KEEP


# ----- traces in and out --------------------------------------------------------------------------
def read_all(pg, session: str, handle: str) -> dict:
    """What the page reads of a trace: its chunks and state, once it is done (`TraceStore.read`)."""
    import asyncio

    out = json.loads(asyncio.run(pg.traces.read(session, handle, 0, timeout=10.0)))
    assert out["state"] != "live"
    return out


def test_export_and_upload_round_trip_without_the_model(pg, runner):
    trace = pg.play.decode(prompt="the ", lang="en", **widgets(temperature=0.7, seed=9)).trace
    path = pg.play.export(trace=trace).download
    assert path.endswith(".json") and pg.play.export(trace=trace).download == path
    runner.calls.clear()
    loaded = pg.play.upload(upload=path, lang="en", session="s")
    assert loaded.trace.trace.to_json() == trace.trace.to_json() and loaded.trace.handle != trace.handle
    assert loaded.knobs.temperature == 0.7 and loaded.knobs.seed == 9 and loaded.prompt == "the "
    assert loaded.canvas["ref"] == loaded.trace.handle and loaded.canvas["selected"] == 0  # a file opens on position 0
    read = read_all(pg, "s", loaded.trace.handle)  # as the page reads it: its chunks are made while the upload answers
    assert read["state"] == "done" and len(read["chunks"]) == 1  # the page reads it all at once
    assert runner.calls == []  # no model call, the file parsed once


def test_a_renoising_trace_file_and_a_moved_one_open_without_the_model(pg, runner, tmp_path):
    from dllm_viz import decode
    from tests.renoise_table import TableRenoiser
    from tests.sglang.indel_script import Events, ReplayedBlocks

    (renoised,) = decode(TableRenoiser(), [[3, 4, 5]], DecodeConfig(gen_length=18, seed=1, max_denoising_steps=6))
    (moved,) = decode(ReplayedBlocks(8, Events(word=0.1, delete=0.12, split=0.12, mask=0.06), seed=4), [[1] * 8],
                      DecodeConfig.preset("llada22_indel", 16, block_length=8))
    assert moved.moved
    for name, trace, key in (("renoise", renoised, "rn"), ("moved", moved, "mv")):
        path = tmp_path / f"{name}.json"
        path.write_text(trace.to_json())
        loaded = pg.play.upload(upload=str(path), lang="en", session="s")
        assert loaded.trace.trace.to_json() == trace.to_json() and "<b>" in loaded.facts
        read = read_all(pg, "s", loaded.trace.handle)
        (chunk,) = read["chunks"]
        assert read["state"] == "done" and key in chunk["steps"]  # what the page draws it from
    assert runner.calls == []


def test_an_upload_by_the_pages_own_handle_is_read_as_soon_as_it_is_parsed(pg, runner, tmp_path):
    """The page draws the upload's handle and reads it at once (start.js `__dvNewUpload`): the read waits for
    the trace and gets the same chunks as a read after the answer; a refused file ends the waiting read at
    once (gone), not after the store's wait; a malformed handle is drawn anew."""
    import asyncio

    from dllm_viz.app.handlers.traces import new_handle

    trace = pg.play.decode(prompt="the ", lang="en", **widgets(seed=3)).trace
    path = pg.play.export(trace=trace).download
    name, got = new_handle(), []
    reader = threading.Thread(target=lambda: got.append(read_all(pg, "s", name)))
    reader.start()
    time.sleep(0.1)
    assert got == []  # waiting for it
    loaded = pg.play.upload(upload=path, lang="en", session="s", ref=name)
    reader.join(timeout=10)
    assert loaded.trace.handle == name and loaded.canvas["ref"] == name
    assert got[0]["state"] == "done" and got[0] == read_all(pg, "s", name)
    assert pg.play.upload(upload=path, lang="en", session="s", ref="not a handle").trace.handle != "not a handle"
    bad, name = tmp_path / "bad.json", new_handle()
    bad.write_text("{")

    async def refused() -> tuple[str, float]:
        start = time.monotonic()
        waiting = asyncio.ensure_future(pg.traces.read("s", name, 0, timeout=10.0))
        await asyncio.sleep(0.1)
        with pytest.raises(ValueError, match="does not parse"):
            pg.play.upload(upload=str(bad), lang="en", session="s", ref=name)
        return await waiting, time.monotonic() - start

    answer, seconds = asyncio.run(refused())
    assert json.loads(answer)["state"] == "gone" and seconds < 2.0


def test_upload_rejects_bad_files(pg, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "something else"}')
    with pytest.raises(ValueError, match="format"):
        pg.play.upload(upload=str(bad), lang="en")
    bad.write_text("{")
    with pytest.raises(ValueError, match="trace JSON does not parse"):
        pg.play.upload(upload=str(bad), lang="en")


def test_examples_load_by_name_and_show_their_own_settings(runner, tmp_path):
    ex = runner(["hi "], [DecodeConfig.preset("creative", 16)])[0]
    pg = Playground(runner, examples=[("creative", ex)], export_dir=tmp_path)
    loaded = pg.play.example(example="creative", lang="en")
    assert loaded.trace.trace is ex and loaded.knobs.temperature == ex.config.temperature
    assert pg.traces.entry("any session", loaded.trace.handle) is not None  # an example: every page may read it
    assert "example “creative”" in loaded.preset_badge and "its own settings" in loaded.preset_badge
    with pytest.raises(ValueError, match="example='nope'"):
        pg.play.example(example="nope", lang="en")


def test_new_seed_uses_the_injected_source(pg):
    assert pg.play.reseed().seed == 1234


@pytest.mark.parametrize("name", ["llada", "dream", "fast_dllm"])
def test_an_as_shipped_preset_button_sets_its_rule(pg, name):
    """The "as shipped" buttons set every knob, Dream's top_p included."""
    out = pg.play.preset(name, gen_length=64)
    values = widgets(gen_length=64, **{k: v for k, v in vars(out).items() if v is not KEEP})
    expected = DecodeConfig.preset(name, 64)
    got = settings_to_config(**values)
    assert got == expected, name
    assert (out.top_p < 1) == (name == "dream")
    balanced = pg.play.preset("balanced", gen_length=64)
    assert balanced.top_p == 1.0  # an article preset turns a filter left by Dream off
    # ... and every switch an as-shipped rule set: a preset is a whole state (issue 29 item 1).
    assert (balanced.confidence_from, balanced.sample_scope, balanced.block_length, balanced.min_k) == (
        "raw", "selected", 0, DecodeConfig.preset("balanced", 64).min_k)


def test_a_decode_streams_each_step_then_the_finished_view(pg, runner, monkeypatch):
    """The event answers with the decode's handle before its first step; each step reaches the page's
    reader as it is computed (the chunk is there when the runner goes on), then the finished trace."""
    from dllm_viz.app.handlers.entry import Entry

    seen = []  # (step, chunks readable once its on_step returned)
    original = Entry.add

    def add(entry, record):
        original(entry, record)
        seen.append((record.step, len(entry.since(0)[0])))

    monkeypatch.setattr(Entry, "add", add)
    stream = pg.play.decode_stream(prompt="the ", lang="en", session="s", **widgets(schedule="fixed_steps", steps=12,
                                                                                     gen_length=24))
    first = next(stream)
    assert first.canvas["live"] is True and first.trace is KEEP and first.facts is KEEP
    *beats, final = list(stream)
    assert all(view.canvas is KEEP for view in beats)  # heartbeats only: the steps went to the reader
    assert len(runner.calls) == 1  # one decode
    assert seen == [(s, s + 2) for s in range(12)]  # after Stop's key (the session's page reads it there)
    chunks, state = pg.traces.entry("s", first.canvas["ref"]).since(0)
    assert state == "done" and len(chunks) == 14  # the key, a chunk per step, then what the finished trace says
    assert json.loads(chunks[0])["key"] == first.canvas["key"]
    assert final.trace.handle == first.canvas["ref"] and final.canvas["live"] is False
    assert len(final.trace.trace.steps) == 12


def test_closing_a_stream_stops_its_decode_at_the_next_step(pg, runner):
    steps = []
    original = runner.__call__

    gate = threading.Event()

    def counting(prompts, configs, *, on_step=None, record_candidates=5):
        def hook(i, rec):
            if rec.step >= 1:
                gate.wait(timeout=60)  # step 1 waits until the stream is closed
            steps.append(rec.step)
            on_step(i, rec)
        return original(prompts, configs, on_step=hook, record_candidates=record_candidates)

    pg.play.runner_for = lambda pick: counting
    live = pg.play.decode_stream(prompt="the ", lang="en", **widgets(schedule="fixed_steps", steps=24, gen_length=24))
    first = next(live)
    assert first.canvas["live"] is True
    threading.Timer(0.2, gate.set).start()  # lets step 1 go on once close() below has begun
    live.close()  # Stop: the worker's next step raises Stopped, and close() waits for it to end
    assert steps[:1] == [0] and len(steps) <= 3 < 24  # at most one step past the one in progress


def test_stopped_brings_back_the_trace_on_show(pg):
    shown = pg.play.decode(prompt="ab ", lang="en", **widgets(temperature=0.7))
    out = pg.play.stopped(trace=shown.trace, lang="en")
    assert out.knobs.temperature == 0.7 and "Stopped" in out.banner
    assert out.canvas["ref"] == shown.trace.handle and out.canvas["live"] is False and out.canvas["selected"] is None


def test_stop_ends_its_sessions_decode_and_nothing_of_it_follows(pg, runner):
    gate = threading.Event()
    held = held_after_first_step(runner, gate)

    shown = pg.play.decode(prompt="ab ", lang="en", **widgets())
    pg.play.runner_for = lambda pick: held
    mine = pg.play.decode_stream(prompt="the ", lang="en", session="s1", **widgets(schedule="fixed_steps", steps=24,
                                                                                   gen_length=24))
    live = next(mine).canvas
    assert live["live"] is True
    key = live["key"]
    assert "Stopped" in pg.play.stopped(trace=shown.trace, lang="en", session="other", stop_key=key).banner
    assert not any(s.stop.is_set() for s in pg.play.stops._sessions["s1"].running)  # another session's Stop: not this
    later: list = []  # (when, view) of each view the stream gives after its first
    reader = threading.Thread(target=lambda: later.extend((time.monotonic(), view) for view in mine))
    reader.start()  # Gradio reads the stream in its own thread
    threading.Timer(0.3, gate.set).start()  # the step in progress ends after Stop came
    out = pg.play.stopped(trace=shown.trace, lang="en", session="s1", stop_key=key)
    returned = time.monotonic()
    reader.join(timeout=60)
    # Stop returns once the stream has ended: nothing of the stopped decode follows its view.
    assert "Stopped" in out.banner and "s1" not in pg.play.stops._sessions
    assert [when for when, _ in later if when > returned] == []
    assert all(view.canvas is KEEP for _, view in later)  # no finished view
    assert pg.traces.entry("s1", live["ref"]).since(0)[1] == "stopped"  # the page's reader of it stops too


def test_a_stopped_decode_that_said_nothing_says_nothing_new_once_before_its_stream_ends(pg, runner):
    """A page that drew the handle gets no first answer; stopped then (or before its event came), the stream says
    "nothing new" once (every output KEEP) before it ends: a Gradio stream that ends having said nothing sets
    every output of its event to None, over the views Stop brings back."""
    import json as json_module

    from dllm_viz.app.handlers.outputs import DecodeFirst, keep
    from dllm_viz.app.handlers.traces import new_handle

    shown = pg.play.decode(prompt="ab ", lang="en", **widgets())
    for started in (False, True):
        gate = threading.Event()
        pg.play.runner_for = lambda pick, gate=gate: held_after_first_step(runner, gate)
        ref, session = new_handle(), f"s{started}"
        ask = dict(prompt="the ", lang="en", ref=ref, session=session, **widgets(schedule="fixed_steps", steps=24,
                                                                                  gen_length=24))
        if started:  # the page started it, and Stop comes before the event does
            assert pg.play.start(**ask) is None
        stream = pg.play.decode_stream(**ask) if not started else None
        views: list = []
        reader = threading.Thread(target=lambda: views.extend(stream)) if stream is not None else None
        if reader is not None:
            reader.start()
        deadline = time.monotonic() + 30
        while pg.traces.entry(session, ref) is None or not pg.traces.entry(session, ref).since(0)[0]:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        key = json_module.loads(pg.traces.entry(session, ref).since(0)[0][0])["key"]
        threading.Timer(0.3, gate.set).start()
        assert "Stopped" in pg.play.stopped(trace=shown.trace, lang="en", session=session, stop_key=key).banner
        if reader is not None:
            reader.join(timeout=60)
        else:
            views = list(pg.play.decode_stream(**ask))
        assert views == [keep(DecodeFirst)]  # one answer, every output (the knobs' too) as it was


def test_a_cache_runs_where_the_model_has_one_and_is_a_named_error_where_not(pg, runner, tmp_path):
    out = pg.play.decode(prompt="the ", lang="en", **widgets(cache="dual", block_length=8))
    steps = out.trace.trace.steps
    assert {rec.forward_kind for rec in steps} <= {"full", "dual"} and steps[0].forward_kind == "full"
    assert runner.calls[0][1][0].cache == "dual"
    plain = CountingRunner()
    plain.model = make_text_model(cached=False)  # no cached forward: refused by name (a gr.Error on the page)
    with pytest.raises(ValueError, match="cache='prefix' is invalid for 'tiny-chars'"):
        Playground(plain, export_dir=tmp_path).play.decode(prompt="the ", lang="en",
                                                           **widgets(cache="prefix"))


# ----- confirmations taken back (issue 28) -------------------------------------------------------
def test_a_revision_preset_decodes_as_shipped_and_the_banner_cites_its_source(pg, runner):
    from dllm_viz.app.handlers.adapters import preset_knobs
    from dllm_viz.core.config import REVISION_PRESETS

    knobs = {k: v for k, v in vars(preset_knobs("rcr", 24)).items() if v is not KEEP}
    out = pg.play.decode(prompt="the cat ", lang="en", **widgets(**knobs))
    assert runner.calls[-1][1] == [DecodeConfig.preset("rcr", 24)]
    assert "active preset: RCR as shipped" in out.preset_badge
    assert f"`{REVISION_PRESETS['rcr'].source}`" in out.banner
    m = out.trace.trace.metrics
    assert (f"{m['remasked']} tokens taken back to [MASK] and {m['edited']} rewritten, in {m['steps']} steps"
            in out.banner)
    zh = pg.play.decode(prompt="the cat ", lang="zh", **widgets(**knobs))
    assert t("sb_rcr", "zh") in zh.banner and "被撤回" in zh.banner
    plain = pg.play.decode(prompt="the cat ", lang="en", **widgets())
    assert plain.banner == ""  # no rule, no preset as shipped: nothing to say


def test_editing_on_a_model_that_cannot_edit_is_a_named_error(pg):
    with pytest.raises(ValueError, match="revise='joint_threshold'.*can_edit"):
        pg.play.decode(prompt="the ", lang="en", **widgets(revise="joint_threshold"))
    out = pg.play.decode(prompt="the ", lang="en", **widgets(revise="remdm"))  # the session goes on
    assert out.trace.trace.config.revise == "remdm"


def test_insert_delete_on_a_model_that_cannot_edit_lengths_is_a_named_error(pg):
    # the tiny model's tokenizer has no len(): the refusal still names the rule, never a TypeError
    with pytest.raises(ValueError, match="indel='joint_threshold_indel' is invalid.*cannot edit lengths"):
        pg.play.decode(prompt="the ", lang="en", **config_to_settings(DecodeConfig.preset("llada22_indel", 24)))
    out = pg.play.decode(prompt="the ", lang="en", **widgets())  # the session goes on
    assert out.trace.trace.config.indel == "none"


def test_the_rule_greys_out_the_knobs_it_does_not_read(pg):
    from dllm_viz.app.handlers.adapters import RULE_KNOBS, RULE_SLIDERS

    for rule, used in RULE_KNOBS.items():
        states = vars(pg.play.rule_states(revise=rule))
        assert set(states) == set(RULE_SLIDERS) and {k for k, on in states.items() if on} == used


def test_stop_needs_the_key_its_page_received_and_ends_every_decode_of_the_session(pg, runner):
    """Knowing a session's hash is not enough to stop its decodes: Stop must send the key their live
    canvas carried. With it, Stop ends every decode the session has in progress, not only the
    latest, and nothing of either follows Stop's view (issue 42)."""
    gate = threading.Event()
    held = held_after_first_step(runner, gate)

    shown = pg.play.decode(prompt="ab ", lang="en", **widgets())
    pg.play.runner_for = lambda pick: held
    settings = widgets(schedule="fixed_steps", steps=24, gen_length=24)
    first = pg.play.decode_stream(prompt="the ", lang="en", session="s1", **settings)
    second = pg.play.decode_stream(prompt="a dog ", lang="en", session="s1", **settings)
    keys = {next(first).canvas["key"], next(second).canvas["key"]}
    assert len(keys) == 1 and len(next(iter(keys))) >= 16  # one key for the session's decodes, not guessable
    key = keys.pop()
    for wrong in ("", "x" * len(key)):  # the session's hash alone, or a guess
        pg.play.stopped(trace=shown.trace, lang="en", session="s1", stop_key=wrong)
        assert len(pg.play.stops._sessions["s1"].running) == 2
        assert not any(s.stop.is_set() for s in pg.play.stops._sessions["s1"].running)
    later: list = []
    readers = [threading.Thread(target=lambda m=m: later.extend((time.monotonic(), v) for v in m))
               for m in (first, second)]
    for r in readers:
        r.start()
    threading.Timer(0.3, gate.set).start()
    out = pg.play.stopped(trace=shown.trace, lang="en", session="s1", stop_key=key)
    returned = time.monotonic()
    for r in readers:
        r.join(timeout=60)
    assert "Stopped" in out.banner and "s1" not in pg.play.stops._sessions
    assert [when for when, _ in later if when > returned] == []  # nothing of either decode after Stop's view
    assert all(view.canvas is KEEP for _, view in later)


def test_a_link_or_event_asking_past_the_model_is_refused_before_anything_is_built(runner, tmp_path):
    """The page's decode events and links check the settings against the picked model's context
    and the server's work bound before the live canvas is sized by them (issue 42)."""
    from dllm_viz.core.budget import Budget

    pg = Playground(runner, export_dir=tmp_path, budget=Budget(max_length=64, max_cells=10**4))
    with pytest.raises(ValueError, match=r"gen_length = 1000000000 .*max_length=64, less the prompt tokens"):
        next(pg.play.open_link(query={"config": '{"gen_length": 1000000000}'}, lang="en"))
    with pytest.raises(ValueError, match="max_length=64"):
        next(pg.play.decode_stream(prompt="the ", lang="en", **widgets(gen_length=1000)))
    loop = widgets(gen_length=48, block_length=8, revise="remdm", remask_sigma="loop", remask_loop_steps=64)
    with pytest.raises(ValueError, match="at most 10000 per request"):
        next(pg.play.decode_stream(prompt="the ", lang="en", **loop))
    assert runner.calls == []
    assert pg.play.k_steps(lang="en", **widgets(gen_length=10**9)).k_steps is KEEP  # no schedule simulated


def test_a_decode_waiting_for_a_slot_shows_where_it_stands(pg, runner):
    """Before its first step, a decode that waits in the shared engine's queue tells the page its
    position and an estimate (what the served runner sets on the call's ticket), in its trace's
    chunks, each change once; its first step follows them."""
    import json

    from dllm_viz.app.handlers import asking

    go = threading.Event()
    places = iter([(3, 4.2), (3, 4.2), (1, 1.01), None])

    def queued(prompts, configs, *, on_step=None, record_candidates=5):
        ticket = asking.current()
        ticket.waiting = lambda: next(places, None)
        assert go.wait(timeout=60)  # "in the queue" until the test lets it run
        return runner(prompts, configs, on_step=on_step, record_candidates=record_candidates)

    pg.play.runner_for = lambda pick: queued
    views = pg.play.decode_stream(prompt="the ", lang="en", session="s", **widgets())
    entry = pg.traces.entry("s", next(views).canvas["ref"])
    rest: list = []
    reader = threading.Thread(target=lambda: rest.extend(views))
    reader.start()
    chunks = lambda: [json.loads(c) for c in entry.since(0)[0]]  # noqa: E731
    deadline = time.monotonic() + 30
    while sum("queue" in c for c in chunks()) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    go.set()
    reader.join(timeout=60)
    got = chunks()
    assert [c["queue"] for c in got if "queue" in c] == [[3, 5], [1, 2], None]  # seconds rounded up
    assert got[0]["key"] and "head" in got[4] and not any("queue" in c for c in got[4:])  # Stop's key; then its steps
    assert rest[-1].trace is not KEEP


def test_a_decode_runs_under_the_handle_its_page_drew(pg):
    from dllm_viz.app.handlers.traces import new_handle

    name = new_handle()
    views = list(pg.play.decode_stream(prompt="the ", lang="en", ref=name, session="s", **widgets()))
    out = views[-1]
    assert out.trace.handle == out.canvas["ref"] == name and pg.traces.entry("s", name) is not None
    # the page that named it reads it already, Stop's key with it: the event's only answer is the finished view
    assert len(views) == 1 and '"key"' in pg.traces.entry("s", name).since(0)[0][0]
    assert pg.play.decode(prompt="the ", lang="en", ref="<script>", session="s", **widgets()).trace.handle != "<script>"


@pytest.mark.parametrize("name", [*SHIPPED_PRESETS, *REVISION_PRESETS])
def test_every_preset_as_shipped_says_what_its_rule_does(pg, name):
    """Issue 41 item 5: a preset as shipped is no teaching switch; its banner says what the rule does,
    in both languages, whatever preset a plug-in adds."""
    from dllm_viz import decode, load_model
    from dllm_viz.app.handlers.banners import shipped_banner

    config = DecodeConfig.preset(name, 16)
    for lang in ("en", "zh"):
        if config.indel != "none":  # nor edit lengths: world-indel can
            banner = shipped_banner(decode(load_model("world-indel"), ["Ana"], [config])[0], None, [], lang)
        elif config.revise == "joint_threshold":  # the tiny model cannot edit: the world model can
            banner = shipped_banner(decode(load_model("world"), ["Ana"], [config])[0], None, [], lang)
        else:
            banner = pg.play.decode(prompt="the ", lang=lang, **config_to_settings(config)).banner
        assert t(f"sb_{name}", lang) in banner and "Teaching switch" not in banner, (name, lang)
