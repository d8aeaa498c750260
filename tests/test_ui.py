"""ui.py handlers called directly (no server): adapters, decode, replay, compare, sweep, API, wiring."""
from __future__ import annotations

import json
import subprocess
import sys
import threading

import gradio as gr
import pytest

from dllm_viz import DecodeConfig, decode
from dllm_viz.app.i18n import LANGS, STRINGS
from dllm_viz.app.lessons import LESSONS
from dllm_viz.core.trace import Trace
from dllm_viz.app.playground import (
    FIRST_OUT,
    FRAME_OUT,
    KNOBS,
    REST_OUT,
    SCHEDULE_KNOBS,
    SWEEP_OUT,
    VIEW_OUT,
    Playground,
    config_to_settings,
    parse_config_json,
    settings_to_config,
)
from dllm_viz.app.ui import build_demo
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
    # The widgets carry only the knobs the schedule reads; the rest come back at their defaults,
    # and an implicit top_k (None = L/4) comes back explicit.
    used = SCHEDULE_KNOBS[cfg.schedule]
    defaults = DecodeConfig()
    expected = cfg.replace(**{k: getattr(defaults, k) for k in ("top_k", "decay", "steps", "threshold") if k not in used})
    if "top_k" in used:
        expected = expected.replace(top_k=cfg.initial_k)
    assert settings_to_config(**config_to_settings(cfg)) == expected


def test_knobs_a_schedule_ignores_are_not_validated():
    # steps > gen_length would be invalid, but topk_decay does not read steps.
    cfg = settings_to_config(**widgets(gen_length=16, steps=200))
    assert cfg.steps is None
    with pytest.raises(ValueError, match="steps=200"):
        settings_to_config(**widgets(gen_length=16, steps=200, schedule="fixed_steps"))


def test_gradio_floats_become_ints_and_bad_values_name_the_field():
    cfg = settings_to_config(**widgets(gen_length=24.0, seed=5.0, top_k=3.0))
    assert (cfg.gen_length, cfg.seed, cfg.top_k) == (24, 5, 3)
    with pytest.raises(ValueError, match="block_length=16"):
        settings_to_config(**widgets(gen_length=24, block_length=16))
    with pytest.raises(ValueError, match="seed=None"):
        settings_to_config(**widgets(seed=None))
    with pytest.raises(ValueError, match="seed=2.5"):
        settings_to_config(**widgets(seed=2.5))


def test_config_json_defaults_to_the_balanced_preset():
    cfg = parse_config_json('{"gen_length": 48, "temperature": 0.5}')
    assert cfg == DecodeConfig.preset("balanced", 48, temperature=0.5)
    assert parse_config_json("") == DecodeConfig.preset("balanced", 64)
    assert parse_config_json("{}", gen_length=16, seed=3) == DecodeConfig.preset("balanced", 16, seed=3)
    with pytest.raises(ValueError, match="temprature"):
        parse_config_json('{"temprature": 1}')
    with pytest.raises(ValueError, match="config_json"):
        parse_config_json("{not json")
    with pytest.raises(ValueError, match="config_json"):
        parse_config_json("[1, 2]")
    with pytest.raises(ValueError, match="temperature=-1"):
        parse_config_json('{"temperature": -1}')


# ----- playground ----------------------------------------------------------------------------------
def test_decode_then_rest_give_the_whole_view(pg, runner):
    first = pg.decode(prompt="the cat ", lang="en", position=3, **widgets())
    assert set(first) == set(FIRST_OUT)
    trace = first["trace"]
    assert runner.calls == [(["the cat "], [settings_to_config(**widgets())])]
    assert first["frame"]["value"] == len(trace.steps) and first["frame"]["maximum"] == len(trace.steps)
    assert first["position"]["value"] == 3
    rest = pg.rest(trace=trace, lang="en", frame=len(trace.steps), position=3, temperature=1.0)
    assert set(rest) == set(REST_OUT)
    assert set(FIRST_OUT) | set(REST_OUT) == set(VIEW_OUT)
    assert len(runner.calls) == 1


def test_bad_settings_raise_a_visible_gradio_error(runner, tmp_path):
    from dllm_viz.app.playground import user_errors

    pg = Playground(runner, export_dir=tmp_path)
    with pytest.raises(gr.Error, match="block_length=16"):
        user_errors(pg.decode)(prompt="x", lang="en", position=0, **widgets(block_length=16))
    # The session stays usable: the next request succeeds.
    assert user_errors(pg.decode)(prompt="x", lang="en", position=0, **widgets())["trace"].config.gen_length == 24


def test_replay_never_calls_the_model(pg, runner):
    trace = pg.decode(prompt="ab ", lang="en", position=0, **widgets())["trace"]
    runner.calls.clear()
    n = len(trace.steps)
    for f in range(n + 1):
        out = pg.frame_view(trace=trace, lang="en", frame=f, position=2, temperature=0.3)
        assert set(out) == set(FRAME_OUT)
    out = pg.click_token(trace=trace, clicked=5, frame=1, lang="zh", temperature=1.0)
    assert out["position"] == 5 and 'data-pos="5"' in out["canvas"]
    assert "dv-sel" in out["canvas"]
    assert runner.calls == []


def test_play_ticks_to_the_end_and_stops(pg):
    trace = pg.decode(prompt="ab ", lang="en", position=0, **widgets())["trace"]
    n = len(trace.steps)
    start = pg.toggle_play(trace=trace, frame=n, playing=False, lang="en")
    assert start["playing"] and start["frame"] == 0  # at the end, play restarts from the beginning
    frame, ticks = 0, 0
    while True:
        out = pg.tick(trace=trace, frame=frame, lang="en", position=0, temperature=1.0)
        frame, ticks = out["frame"], ticks + 1
        if not out["playing"]:
            break
    assert frame == n and ticks == n
    pause = pg.toggle_play(trace=trace, frame=2, playing=True, lang="en")
    assert not pause["playing"] and pause["frame"] == 2


def test_inspector_follows_the_temperature_slider_without_decoding(pg, runner):
    trace = pg.decode(prompt="ab ", lang="en", position=0, **widgets())["trace"]
    runner.calls.clear()
    cold = pg.frame_view(trace=trace, lang="en", frame=0, position=4, temperature=0.2)["insp_plot"]
    hot = pg.frame_view(trace=trace, lang="en", frame=0, position=4, temperature=2.0)["insp_plot"]
    assert cold != hot and "T=0.2" in cold and "T=2" in hot
    assert runner.calls == []


def test_presets_set_the_article_values(pg):
    out = pg.preset("speed", gen_length=48)
    cfg = DecodeConfig.preset("speed", 48)
    assert out == {"temperature": cfg.temperature, "top_k": cfg.top_k, "decay": cfg.decay,
                   "schedule": "topk_decay", "stages_on": False}


def test_schedule_change_greys_out_unused_knobs(pg):
    out = pg.schedule_changed(schedule="threshold")
    assert out["threshold"]["interactive"] and not out["top_k"]["interactive"]


def test_export_and_upload_round_trip(pg, runner):
    trace = pg.decode(prompt="the ", lang="en", position=0, **widgets(temperature=0.7, seed=9))["trace"]
    path = pg.export(trace=trace)
    assert path.endswith(".json") and pg.export(trace=trace) == path
    runner.calls.clear()
    loaded = pg.upload(path=path, lang="en")
    assert loaded["trace"].to_json() == trace.to_json()
    assert loaded["temperature"] == 0.7 and loaded["seed"] == 9 and loaded["prompt"] == "the "
    assert set(loaded) >= set(VIEW_OUT) | set(KNOBS)
    assert runner.calls == []  # replaying an uploaded trace needs no model


def test_upload_rejects_bad_files(pg, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "something else"}')
    with pytest.raises(ValueError, match="format"):
        pg.upload(path=str(bad), lang="en")
    with pytest.raises(ValueError, match="trace JSON does not parse"):
        bad.write_text("{")
        pg.upload(path=str(bad), lang="en")


def test_examples_load_by_name(runner, tmp_path):
    ex = runner(["hi "], [DecodeConfig.preset("creative", 16)])[0]
    pg = Playground(runner, examples=[("creative", ex)], export_dir=tmp_path)
    assert pg.example(example="creative", lang="en")["trace"] is ex
    with pytest.raises(ValueError, match="example='nope'"):
        pg.example(example="nope", lang="en")


def test_new_seed_uses_the_injected_source(pg):
    assert pg.reseed() == 1234


# ----- compare ------------------------------------------------------------------------------------
def test_lessons_fill_valid_configs_and_text():
    for key, lesson in LESSONS.items():
        a, b = lesson.configs(32, seed=1)
        assert a != b
        for lang in LANGS:
            assert lesson.text("look_for", lang) and lesson.text("title", lang)


def test_compare_decodes_both_sides_in_one_batch(pg, runner):
    filled = pg.lesson("polluted", lang="en")
    runner.calls.clear()
    out = pg.compare(prompt="the ", seed=2, gen_length=24, cmp_a=filled["cmp_a"], cmp_b=filled["cmp_b"],
                     neighbours=0, lang="en")
    assert len(runner.calls) == 1
    prompts, configs = runner.calls[0]
    assert prompts == ["the ", "the "]
    assert configs[1] == configs[0].replace(confidence_from="tempered")
    assert configs[0].seed == 2 and configs[0].gen_length == 24
    ta, tb = out["cmp_traces"]
    assert "diverge" in out["cmp_summary"] or "same positions" in out["cmp_summary"]


def test_global_sampling_with_raw_confidence_gives_the_same_trace(pg):
    filled = pg.lesson("global", lang="en")
    out = pg.compare(prompt="the ", seed=4, gen_length=24, cmp_a=filled["cmp_a"], cmp_b=filled["cmp_b"],
                     neighbours=0, lang="en")
    ta, tb = out["cmp_traces"]
    assert ta.token_ids == tb.token_ids and ta.order == tb.order
    assert out["cmp_summary"] == "The two runs confirmed the same positions at every step."


def test_shared_rng_changes_a_request_when_batched(pg, runner):
    filled = pg.lesson("rng", lang="en")
    assert filled["neighbours"] == 2
    runner.calls.clear()
    out = pg.compare(prompt="the ", seed=4, gen_length=24, cmp_a=filled["cmp_a"], cmp_b=filled["cmp_b"],
                     neighbours=filled["neighbours"], lang="en")
    assert [len(p) for p, _ in runner.calls] == [6, 2]  # the batch with neighbours, then each side alone
    assert "A yes, B no" in out["cmp_summary"]


def test_compare_errors_name_the_field(pg):
    with pytest.raises(ValueError, match="gen_length=8 of config B"):
        pg.compare(prompt="x", seed=0, gen_length=16, cmp_a="{}", cmp_b='{"gen_length": 8}', neighbours=0, lang="en")
    with pytest.raises(ValueError, match="tempreature"):
        pg.compare(prompt="x", seed=0, gen_length=16, cmp_a='{"tempreature": 1}', cmp_b="{}", neighbours=0, lang="en")


# ----- sweep -------------------------------------------------------------------------------------
def test_sweep_is_one_batched_call(pg, runner):
    ticks, threads = [], set()

    def progress(frac, desc=None):  # Gradio's progress works only from the handler's thread
        ticks.append(frac)
        threads.add(threading.get_ident())

    out = pg.sweep(temps=[0.5, 1.0], divisors=["L/4", "L/2"], decays=[0.9], n_seeds=2, prompts="a \nthe ",
                   gen_length=16, lang="en", progress=progress)
    assert ticks and threads == {threading.get_ident()}
    assert len(runner.calls) == 1
    prompts, configs = runner.calls[0]
    assert len(prompts) == 2 * 2 * 1 * 2 * 2
    assert {(c.temperature, c.top_k) for c in configs} == {(0.5, 4), (0.5, 8), (1.0, 4), (1.0, 8)}
    assert out["sweep_state"].grid.divisors == (4, 2)  # columns left to right: growing top_k
    assert set(out) == set(SWEEP_OUT)
    result = out["sweep_state"]
    assert result.table("nfe")[0.9][0] == [r["nfe"] for r in result.rows[:2]]
    assert ticks == sorted(ticks) and all(0 <= x <= 1 for x in ticks)


def test_sweep_needs_a_value_in_each_axis(pg):
    with pytest.raises(ValueError, match="temperatures"):
        pg.sweep(temps=[], divisors=["L/4"], decays=[0.9], n_seeds=1, prompts="a", gen_length=8, lang="en")


# ----- API -----------------------------------------------------------------------------------------
def test_generate_returns_text_then_trace_json(pg):
    text, trace_json = pg.generate("the ", json.dumps({"gen_length": 16, "temperature": 0.0}))
    trace = Trace.from_json(trace_json)
    assert text == trace.text and len(text) == 16
    assert trace.config == DecodeConfig.preset("balanced", 16, temperature=0.0)
    with pytest.raises(ValueError, match="top_k=0"):
        pg.generate("the ", '{"top_k": 0}')


# ----- page ---------------------------------------------------------------------------------------
def test_every_string_has_both_languages():
    for key, values in STRINGS.items():
        assert len(values) == len(LANGS) and all(v.strip() for v in values), key


def test_ui_module_loads_no_model_on_import():
    code = (
        "import sys, dllm_viz.models as m\n"
        "def refuse(*a, **k): raise SystemExit('load_model was called')\n"
        "m.load_model = refuse\n"
        "import dllm_viz.app.ui\n"
        "print('dllm_viz.models.embedded' in sys.modules, 'app' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False False"


def test_build_demo_wires_release_and_the_api(runner, tmp_path):
    ex = runner(["hi "], [DecodeConfig.preset("balanced", 16)])[0]
    demo = build_demo(runner, examples=[("ex", ex)], export_dir=tmp_path)
    runner.calls.clear()
    by_id = {b._id: b for b in demo.blocks.values()}
    release = [fn for fn in demo.fns.values() if any(ev == "release" for _, ev in fn.targets)]
    labels = {getattr(by_id[i], "elem_id", None) for fn in release for i, _ in fn.targets}
    assert "dv-temperature" in labels
    assert all(fn.trigger_mode == "always_last" for fn in release)
    assert [fn.api_name for fn in demo.fns.values() if fn.api_visibility == "public"] == ["generate"]
    assert runner.calls == []  # building the page decodes nothing


# ----- lesson measurements ------------------------------------------------------------------------
def test_measure_backs_the_lesson_claims(runner):
    from dllm_viz.app.lessons import measure, measured_table

    glob = measure(runner, LESSONS["global"], ["the ", "a "], range(3), gen_length=16)
    assert glob["same_trace"] == 1.0  # global sampling with raw confidence: the very same trace ...
    assert glob["b"]["draws"] > glob["a"]["draws"] == 16  # ... for more draws
    rng = measure(runner, LESSONS["rng"], ["the "], range(3), gen_length=16)
    assert rng["solo_match_a"] == 1.0 and rng["solo_match_b"] < 1.0
    table = measured_table(rng)
    assert "| text equals the same request decoded alone | 100% |" in table


def test_missing_measurements_leave_the_text_alone(tmp_path):
    from dllm_viz.app.lessons import load_measured

    assert load_measured(tmp_path / "absent.json") == {}


# Numbers each lesson's prose quotes, as (field in assets/lessons.json, format). The prose must
# follow the measurement: re-measuring (python -m dllm_viz.app.lessons) with another model fails here
# until the text is rewritten.
QUOTED = {
    "polluted": [("a.first_step_spread", "{:.3f}"), ("b.first_step_spread", "{:.3f}"), ("same_step_share", "{:.0%}"),
                 ("b.mean_confidence", "{:.3f}"), ("a.mean_confidence", "{:.3f}"), ("b.mean_logprob", "{:.2f}"),
                 ("a.mean_logprob", "{:.2f}")],
    "global": [("b.draws", "{:.0f}"), ("a.draws", "{:.0f}")],
    "lock_in": [("b.mean_logprob", "{:.2f}"), ("a.mean_logprob", "{:.2f}"), ("b.low_p_share", "{:.0%}"),
                ("a.low_p_share", "{:.0%}"), ("b.repeat_3", "{:.2%}"), ("b.distinct_2", "{:.3f}"),
                ("a.distinct_2", "{:.3f}"), ("same_step_share", "{:.0%}")],
    "rng": [("b.mean_logprob", "{:.2f}"), ("a.mean_logprob", "{:.2f}")],
    "staged": [("b.mean_logprob", "{:.2f}"), ("a.mean_logprob", "{:.2f}"), ("b.repeat_3", "{:.2%}")],
    "threshold": [("b.steps", "{:.0f}"), ("a.steps", "{:.0f}"), ("b.mean_confidence", "{:.3f}"),
                  ("a.mean_confidence", "{:.3f}"), ("b.mean_logprob", "{:.2f}"), ("a.mean_logprob", "{:.2f}"),
                  ("b.low_p_share", "{:.0%}"), ("a.low_p_share", "{:.0%}")],
}


def test_lesson_prose_quotes_the_measured_numbers():
    from dllm_viz.app.lessons import MEASURED_PATH, load_measured

    assert MEASURED_PATH.is_file()
    measured = load_measured()
    assert set(measured) == set(LESSONS) == set(QUOTED)
    for key, quotes in QUOTED.items():
        text = LESSONS[key].measured[0].replace("−", "-")
        for field, fmt in quotes:
            value = measured[key]
            for part in field.split("."):
                value = value[part]
            assert fmt.format(value) in text, (key, field, fmt.format(value))
    runs = measured["rng"]["runs"]
    assert measured["rng"]["solo_match_a"] == 1.0 and f"{runs} of {runs} runs" in LESSONS["rng"].measured[0]
    assert measured["global"]["same_trace"] == 1.0 and f"all {measured['global']['runs']} runs" in LESSONS["global"].measured[0]
