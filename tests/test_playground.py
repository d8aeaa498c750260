"""playground.py handlers called directly (no server): adapters, decode, select, presets, traces, compare."""
from __future__ import annotations

import json

import pytest

from dllm_viz import DecodeConfig, decode
from dllm_viz.app.playground import (
    KEEP,
    KNOBS,
    SCHEDULE_KNOBS,
    Playground,
    active_preset,
    config_to_settings,
    parse_config_json,
    settings_to_config,
)
from dllm_viz.core.trace import Trace
from tests.ui_model import make_text_model


class CountingRunner:
    """`run` for the UI that records each call (prompts, configs)."""

    def __init__(self) -> None:
        self.model = make_text_model()
        self.calls: list[tuple[list[str], list[DecodeConfig]]] = []

    def __call__(self, prompts, configs, *, on_step=None, record_candidates=5):
        self.calls.append((list(prompts), list(configs)))
        return decode(self.model, prompts, configs, on_step=on_step, record_candidates=record_candidates)


@pytest.fixture()
def runner() -> CountingRunner:
    return CountingRunner()


@pytest.fixture()
def pg(runner, tmp_path) -> Playground:
    return Playground(runner, export_dir=tmp_path, new_seed=lambda: 1234)


def widgets(**changes) -> dict:
    values = config_to_settings(DecodeConfig.preset("balanced", 24))
    values.update(changes)
    return values


# ----- adapters ------------------------------------------------------------------------------------
@pytest.mark.parametrize("cfg", [
    DecodeConfig.preset("balanced", 32),
    DecodeConfig.preset("speed", 48, seed=7, min_k=2),
    DecodeConfig(gen_length=32, schedule="threshold", threshold=0.7, confidence="margin"),
    DecodeConfig(gen_length=32, schedule="fixed_steps", steps=8, block_length=16),
    DecodeConfig(gen_length=32, schedule="adaptive", top_k=5, temperature_stages=(1.2, 1.0, 0.7)),
    DecodeConfig(gen_length=16, sample_scope="all", confidence_from="sampled", rng="shared"),
])
def test_widgets_round_trip_to_the_same_config(cfg):
    used = SCHEDULE_KNOBS[cfg.schedule]
    defaults = DecodeConfig()
    expected = cfg.replace(**{k: getattr(defaults, k) for k in ("top_k", "decay", "steps", "threshold") if k not in used})
    if "top_k" in used:
        expected = expected.replace(top_k=cfg.initial_k)
    assert settings_to_config(**config_to_settings(cfg)) == expected
    assert set(config_to_settings(cfg)) == set(KNOBS)


def test_knobs_a_schedule_ignores_are_not_validated():
    cfg = settings_to_config(**widgets(gen_length=16, steps=200))
    assert cfg.steps is None
    with pytest.raises(ValueError, match="steps=200"):
        settings_to_config(**widgets(gen_length=16, steps=200, schedule="fixed_steps"))


def test_gradio_floats_become_ints_and_bad_values_name_the_field():
    cfg = settings_to_config(**widgets(gen_length=24.0, seed=5.0, top_k=3.0))
    assert (cfg.gen_length, cfg.seed, cfg.top_k) == (24, 5, 3)
    with pytest.raises(ValueError, match="block_length=16"):
        settings_to_config(**widgets(gen_length=24, block_length=16))
    with pytest.raises(ValueError, match="seed=2.5"):
        settings_to_config(**widgets(seed=2.5))


def test_config_json_defaults_to_the_balanced_preset():
    assert parse_config_json('{"gen_length": 48, "temperature": 0.5}') == DecodeConfig.preset("balanced", 48, temperature=0.5)
    assert parse_config_json("{}", gen_length=16, seed=3) == DecodeConfig.preset("balanced", 16, seed=3)
    for bad, match in (('{"temprature": 1}', "temprature"), ("{not json", "config_json"), ("[1, 2]", "config_json")):
        with pytest.raises(ValueError, match=match):
            parse_config_json(bad)


def test_active_preset_names_a_preset_or_none():
    assert active_preset(DecodeConfig.preset("speed", 48, seed=9)) == "speed"
    assert active_preset(DecodeConfig.preset("speed", 48, temperature=0.3)) is None


# ----- decode -------------------------------------------------------------------------------------
def test_a_decode_calls_the_model_once_and_keeps_the_selected_position(pg, runner):
    out = pg.decode(prompt="the cat ", lang="en", cursor=(0, 3), **widgets())
    assert runner.calls == [(["the cat "], [settings_to_config(**widgets())])]
    assert out.cursor == (len(out.trace.steps), 3) and 'data-selected="3"' in out.canvas
    assert out.banner == "" and "active preset: balanced" in out.preset_badge
    rest = pg.rest(trace=out.trace, lang="en", cursor=out.cursor, temperature=1.0)
    assert rest.insp_plot and rest.order is not None
    assert len(runner.calls) == 1


def test_a_teaching_switch_decodes_the_correct_run_in_the_same_call(pg, runner):
    out = pg.decode(prompt="the ", lang="en", cursor=None, **widgets(confidence_from="tempered", temperature=2.0))
    assert len(runner.calls) == 1
    _, configs = runner.calls[0]
    assert configs[1] == configs[0].replace(confidence_from="raw")
    assert out.banner.startswith("Teaching switch on (confidence_from = tempered)")


def test_a_switch_with_no_effect_alone_says_so_and_names_its_lesson(pg):
    out = pg.decode(prompt="the ", lang="en", cursor=None, **widgets(rng="shared"))
    assert "alone it changes nothing here" in out.banner and "Per-request vs shared RNG" in out.banner
    assert "](#dv-open-lesson-rng)" in out.banner  # the link page.js turns into that lesson's click


def test_sampled_confidence_is_never_decoded_with_selected_sampling(pg, runner):
    out = pg.decode(prompt="the ", lang="en", cursor=None, **widgets(confidence_from="sampled", sample_scope="selected"))
    assert out.sample_scope == "all" and out.trace.config.sample_scope == "all"
    assert "sample at” was set to all" in out.banner
    assert runner.calls[0][1][0].sample_scope == "all"


def test_a_failed_decode_reverts_the_widgets_to_the_trace_on_show(pg):
    shown = pg.decode(prompt="the ", lang="en", cursor=None, **widgets(temperature=0.7)).trace
    with pytest.raises(ValueError, match="block_length=16"):
        pg.decode(prompt="x", lang="en", cursor=None, **widgets(block_length=16))
    back = pg.revert(trace=shown)
    assert back.temperature == 0.7 and back.block_length == 0
    assert all(getattr(pg.revert(trace=None), k) is KEEP for k in KNOBS)


def test_select_shows_the_inspector_without_the_model(pg, runner):
    trace = pg.decode(prompt="ab ", lang="en", cursor=None, **widgets()).trace
    runner.calls.clear()
    for f in range(len(trace.steps) + 1):
        out = pg.select(trace=trace, lang="zh", temperature=0.3, frame=f, position=2)
        assert out.cursor == (f, 2) and "dv-insp" in out.insp_plot
    assert pg.select(trace=trace, lang="en", temperature=1.0, frame=99, position=-4).cursor == (len(trace.steps), 0)
    assert runner.calls == []


def test_presets_set_the_article_values(pg):
    out = pg.preset("speed", gen_length=48)
    cfg = DecodeConfig.preset("speed", 48)
    assert (out.temperature, out.top_k, out.decay, out.schedule, out.stages_on) == (
        cfg.temperature, cfg.top_k, cfg.decay, "topk_decay", False)


def test_every_schedule_enables_exactly_the_sliders_it_reads(pg):
    for schedule, used in SCHEDULE_KNOBS.items():
        states = pg.knob_states(schedule=schedule)
        assert {k for k in ("top_k", "decay", "steps", "threshold") if getattr(states, k)} == used


def test_k_steps_shows_the_sequence_or_says_why_not(pg):
    assert "8, 7, 6, 5, 4, 3, 2, 1" in pg.k_steps(lang="en", **widgets(gen_length=64, top_k=8, decay=0.95)).k_steps
    assert "threshold" in pg.k_steps(lang="en", **widgets(schedule="threshold")).k_steps
    assert pg.k_steps(lang="en", **widgets(block_length=7)).k_steps is KEEP


# ----- traces in and out --------------------------------------------------------------------------
def test_export_and_upload_round_trip_without_the_model(pg, runner):
    trace = pg.decode(prompt="the ", lang="en", cursor=None, **widgets(temperature=0.7, seed=9)).trace
    path = pg.export(trace=trace).download
    assert path.endswith(".json") and pg.export(trace=trace).download == path
    runner.calls.clear()
    loaded = pg.upload(upload=path, lang="en")
    assert loaded.trace.to_json() == trace.to_json()
    assert loaded.temperature == 0.7 and loaded.seed == 9 and loaded.prompt == "the "
    drawn = pg.trace_figures(trace=loaded.trace, lang="en", cursor=loaded.cursor, temperature=0.7)
    assert drawn.heatmap.data[0].z and drawn.order.data[0].z and drawn.insp_text
    assert runner.calls == []  # the canvas and then the figures: no model call, the file parsed once


def test_upload_rejects_bad_files(pg, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "something else"}')
    with pytest.raises(ValueError, match="format"):
        pg.upload(upload=str(bad), lang="en")
    bad.write_text("{")
    with pytest.raises(ValueError, match="trace JSON does not parse"):
        pg.upload(upload=str(bad), lang="en")


def test_examples_load_by_name_and_show_their_own_settings(runner, tmp_path):
    ex = runner(["hi "], [DecodeConfig.preset("creative", 16)])[0]
    pg = Playground(runner, examples=[("creative", ex)], export_dir=tmp_path)
    loaded = pg.example(example="creative", lang="en")
    assert loaded.trace is ex and loaded.temperature == ex.config.temperature
    assert "example trace" in loaded.preset_badge and "creative" in loaded.preset_badge
    with pytest.raises(ValueError, match="example='nope'"):
        pg.example(example="nope", lang="en")


def test_new_seed_uses_the_injected_source(pg):
    assert pg.reseed().seed == 1234


# ----- compare ------------------------------------------------------------------------------------
def test_a_lesson_click_decodes_once(pg, runner):
    for key in ("polluted", "rng"):
        runner.calls.clear()
        out = pg.lesson(key, prompt="the ", seed=2, gen_length=24, lang="en")
        assert len(runner.calls) == 1, key
        assert out.lesson_key == key and out.cmp_traces is not None and out.lesson_text.startswith("### ")
        drawn = pg.compare_figures(cmp_traces=out.cmp_traces, lang="en")  # the follow-up: figures, no decode
        assert len(runner.calls) == 1, key
        rows = max(len(tr.steps) for tr in out.cmp_traces)  # both heatmaps on one height and scale
        assert list(drawn.cmp_heat_a.layout.yaxis.range) == list(drawn.cmp_heat_b.layout.yaxis.range) == [rows + 0.5, 0.5]


def test_compare_decodes_both_sides_in_one_batch(pg, runner):
    out = pg.compare(prompt="the ", seed=2, gen_length=24, cmp_a='{"temperature": 1.5}',
                     cmp_b='{"temperature": 1.5, "confidence_from": "tempered"}', neighbours=0, lang="en")
    (prompts, configs), = runner.calls
    assert prompts == ["the ", "the "] and configs[1] == configs[0].replace(confidence_from="tempered")
    assert out.cmp_summary.startswith("Steps: A ")
    assert "dv-side-a" in out.cmp_canvas_a and "dv-side-b" in out.cmp_canvas_b


def test_global_sampling_with_raw_confidence_gives_the_same_trace(pg):
    out = pg.lesson("global", prompt="the ", seed=4, gen_length=24, lang="en")
    ta, tb = out.cmp_traces
    assert ta.token_ids == tb.token_ids and ta.order == tb.order
    assert out.cmp_summary.endswith("The two runs confirmed the same positions at every step.")


def test_shared_rng_changes_a_request_when_batched(pg, runner):
    out = pg.lesson("rng", prompt="the ", seed=4, gen_length=24, lang="en")
    assert [len(p) for p, _ in runner.calls] == [8]  # A and B with two neighbours each, and each alone
    assert "A yes, B no" in out.cmp_summary


def test_compare_errors_name_the_field(pg):
    with pytest.raises(ValueError, match="gen_length=8 of config B"):
        pg.compare(prompt="x", seed=0, gen_length=16, cmp_a="{}", cmp_b='{"gen_length": 8}', neighbours=0, lang="en")


# ----- sweep / language / API -----------------------------------------------------------------------
def test_sweep_is_one_batched_call_with_fixed_colour_ranges(pg, runner):
    out = pg.sweep(sweep_temps=[0.5, 1.0], sweep_divisors=["L/4", "L/2"], sweep_decays=[0.9], sweep_seeds=1,
                   sweep_prompts="a \nthe ", sweep_gen_length=16, lang="zh")
    assert len(runner.calls) == 1
    assert out.sweep_repeat_3.data[0].zmin == 0.0 and out.sweep_repeat_3.data[0].zmax == 0.5
    assert out.sweep_table["headers"][0] == "温度"


def test_sweep_needs_a_value_in_each_axis(pg):
    with pytest.raises(ValueError, match="temperatures"):
        pg.sweep(sweep_temps=[], sweep_divisors=["L/4"], sweep_decays=[0.9], sweep_seeds=1, sweep_prompts="a",
                 sweep_gen_length=8, lang="en")


def test_relabel_renders_every_view_again_without_decoding(pg, runner):
    trace = pg.decode(prompt="ab ", lang="en", cursor=None, **widgets()).trace
    runner.calls.clear()
    out = pg.relabel(lang="zh", trace=trace, cursor=(1, 2), cmp_traces=None, sweep_state=None, lesson_key="polluted",
                     **widgets())
    assert 'data-frame="1"' in out.canvas and "播放" in out.canvas and out.cmp_summary is KEEP
    assert runner.calls == []


def test_generate_returns_text_then_trace_json(pg):
    text, trace_json = pg.generate("the ", json.dumps({"gen_length": 16, "temperature": 0.0}))
    trace = Trace.from_json(trace_json)
    assert text == trace.text and len(text) == 16
    with pytest.raises(ValueError, match="top_k=0"):
        pg.generate("the ", '{"top_k": 0}')


def test_the_early_stop_widgets_round_trip():
    cfg = DecodeConfig.preset("balanced", 32, early_stop=True, early_stop_threshold=0.8)
    settings = config_to_settings(cfg)
    assert (settings["early_stop"], settings["early_stop_threshold"]) == (True, 0.8)
    assert settings_to_config(**settings) == cfg
    assert settings_to_config(**config_to_settings(DecodeConfig.preset("balanced", 32))).early_stop is False


@pytest.mark.parametrize("name", ["llada", "dream", "fast_dllm"])
def test_an_as_shipped_preset_button_sets_its_rule(pg, name):
    """The "as shipped" buttons set every knob their rule reads, Dream's top_p included."""
    out = pg.preset(name, gen_length=64)
    values = widgets(gen_length=64, **{k: v for k, v in vars(out).items() if v is not KEEP})
    expected = DecodeConfig.preset(name, 64)
    got = settings_to_config(**values)
    assert got == expected, name
    assert (out.top_p < 1) == (name == "dream")
    assert pg.preset("balanced", gen_length=64).top_p == 1.0  # an article preset turns a filter left by Dream off
    assert pg.preset("balanced", gen_length=64).confidence_from is KEEP  # the article's buttons keep the switches
