"""handlers_play.py called directly (no server): decode, select, presets, the k line, traces in and out."""
from __future__ import annotations

import pytest

from dllm_viz import DecodeConfig
from dllm_viz.app.adapters import KNOBS, SCHEDULE_KNOBS, settings_to_config
from dllm_viz.app.outputs import KEEP
from dllm_viz.app.playground import Playground
from tests.ui_model import CountingRunner, make_text_model, widgets


@pytest.fixture()
def runner() -> CountingRunner:
    return CountingRunner()


@pytest.fixture()
def pg(runner, tmp_path) -> Playground:
    return Playground(runner, export_dir=tmp_path, new_seed=lambda: 1234)


def test_a_decode_calls_the_model_once_and_keeps_the_selected_position(pg, runner):
    out = pg.play.decode(prompt="the cat ", lang="en", cursor=(0, 3), **widgets())
    assert runner.calls == [(["the cat "], [settings_to_config(**widgets())])]
    assert out.cursor == (len(out.trace.steps), 3) and 'data-selected="3"' in out.canvas
    assert out.banner == "" and "active preset: balanced" in out.preset_badge
    rest = pg.play.rest(trace=out.trace, lang="en", cursor=out.cursor, temperature=1.0)
    assert rest.insp_plot and rest.order is not None
    assert len(runner.calls) == 1


def test_a_teaching_switch_decodes_the_correct_run_in_the_same_call(pg, runner):
    out = pg.play.decode(prompt="the ", lang="en", cursor=None, **widgets(confidence_from="tempered", temperature=2.0))
    assert len(runner.calls) == 1
    _, configs = runner.calls[0]
    assert configs[1] == configs[0].replace(confidence_from="raw")
    assert out.banner.startswith("Teaching switch on (confidence_from = tempered)")


def test_a_switch_with_no_effect_alone_says_so_and_names_its_lesson(pg):
    out = pg.play.decode(prompt="the ", lang="en", cursor=None, **widgets(rng="shared"))
    assert "alone it changes nothing here" in out.banner and "Per-request vs shared RNG" in out.banner
    assert "](#dv-open-lesson-rng)" in out.banner  # the link page.js turns into that lesson's click


def test_sampled_confidence_is_never_decoded_with_selected_sampling(pg, runner):
    out = pg.play.decode(prompt="the ", lang="en", cursor=None, **widgets(confidence_from="sampled", sample_scope="selected"))
    assert out.sample_scope == "all" and out.trace.config.sample_scope == "all"
    assert "sample at” was set to all" in out.banner
    assert runner.calls[0][1][0].sample_scope == "all"


def test_a_failed_decode_reverts_the_widgets_to_the_trace_on_show(pg):
    shown = pg.play.decode(prompt="the ", lang="en", cursor=None, **widgets(temperature=0.7)).trace
    with pytest.raises(ValueError, match="block_length=16"):
        pg.play.decode(prompt="x", lang="en", cursor=None, **widgets(block_length=16))
    back = pg.play.revert(trace=shown)
    assert back.temperature == 0.7 and back.block_length == 0
    assert all(getattr(pg.play.revert(trace=None), k) is KEEP for k in KNOBS)


def test_select_shows_the_inspector_without_the_model(pg, runner):
    trace = pg.play.decode(prompt="ab ", lang="en", cursor=None, **widgets()).trace
    runner.calls.clear()
    for f in range(len(trace.steps) + 1):
        out = pg.play.select(trace=trace, lang="zh", temperature=0.3, frame=f, position=2)
        assert out.cursor == (f, 2) and "dv-insp" in out.insp_plot
    assert pg.play.select(trace=trace, lang="en", temperature=1.0, frame=99, position=-4).cursor == (len(trace.steps), 0)
    assert runner.calls == []


def test_presets_set_the_article_values(pg):
    out = pg.play.preset("speed", gen_length=48)
    cfg = DecodeConfig.preset("speed", 48)
    assert (out.temperature, out.top_k, out.decay, out.schedule, out.stages_on) == (
        cfg.temperature, cfg.top_k, cfg.decay, "topk_decay", False)


def test_every_schedule_enables_exactly_the_sliders_it_reads(pg):
    for schedule, used in SCHEDULE_KNOBS.items():
        states = pg.play.knob_states(schedule=schedule)
        assert {k for k in ("top_k", "decay", "steps", "threshold") if getattr(states, k)} == used


def test_k_steps_shows_the_sequence_or_says_why_not(pg):
    assert "8, 7, 6, 5, 4, 3, 2, 1" in pg.play.k_steps(lang="en", **widgets(gen_length=64, top_k=8, decay=0.95)).k_steps
    assert "threshold" in pg.play.k_steps(lang="en", **widgets(schedule="threshold")).k_steps
    assert pg.play.k_steps(lang="en", **widgets(block_length=7)).k_steps is KEEP


# ----- traces in and out --------------------------------------------------------------------------
def test_export_and_upload_round_trip_without_the_model(pg, runner):
    trace = pg.play.decode(prompt="the ", lang="en", cursor=None, **widgets(temperature=0.7, seed=9)).trace
    path = pg.play.export(trace=trace).download
    assert path.endswith(".json") and pg.play.export(trace=trace).download == path
    runner.calls.clear()
    loaded = pg.play.upload(upload=path, lang="en")
    assert loaded.trace.to_json() == trace.to_json()
    assert loaded.knobs.temperature == 0.7 and loaded.knobs.seed == 9 and loaded.prompt == "the "
    drawn = pg.play.trace_figures(trace=loaded.trace, lang="en", cursor=loaded.cursor, temperature=0.7)
    assert drawn.heatmap.data[0].z and drawn.rest.order.data[0].z and drawn.rest.insp_text
    assert runner.calls == []  # the canvas and then the figures: no model call, the file parsed once


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
    assert loaded.trace is ex and loaded.knobs.temperature == ex.config.temperature
    assert "example trace" in loaded.preset_badge and "creative" in loaded.preset_badge
    with pytest.raises(ValueError, match="example='nope'"):
        pg.play.example(example="nope", lang="en")


def test_new_seed_uses_the_injected_source(pg):
    assert pg.play.reseed().seed == 1234


@pytest.mark.parametrize("name", ["llada", "dream", "fast_dllm"])
def test_an_as_shipped_preset_button_sets_its_rule(pg, name):
    """The "as shipped" buttons set every knob their rule reads, Dream's top_p included."""
    out = pg.play.preset(name, gen_length=64)
    values = widgets(gen_length=64, **{k: v for k, v in vars(out).items() if v is not KEEP})
    expected = DecodeConfig.preset(name, 64)
    got = settings_to_config(**values)
    assert got == expected, name
    assert (out.top_p < 1) == (name == "dream")
    assert pg.play.preset("balanced", gen_length=64).top_p == 1.0  # an article preset turns a filter left by Dream off
    assert pg.play.preset("balanced", gen_length=64).confidence_from is KEEP  # the article's buttons keep the switches


def test_a_cache_runs_where_the_model_has_one_and_is_a_named_error_where_not(pg, runner, tmp_path):
    out = pg.play.decode(prompt="the ", lang="en", cursor=None, **widgets(cache="dual", block_length=8))
    assert {rec.forward_kind for rec in out.trace.steps} <= {"full", "dual"} and out.trace.steps[0].forward_kind == "full"
    assert runner.calls[0][1][0].cache == "dual"
    plain = CountingRunner()
    plain.model = make_text_model(cached=False)  # no cached forward: refused by name (a gr.Error on the page)
    with pytest.raises(ValueError, match="cache='prefix' is invalid for 'tiny-chars'"):
        Playground(plain, export_dir=tmp_path).play.decode(prompt="the ", lang="en", cursor=None,
                                                           **widgets(cache="prefix"))
