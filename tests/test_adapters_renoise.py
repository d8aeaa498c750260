"""adapters.py and the playground's handlers on a renoising model: the renoise canvas's widgets (made from its
Knob specs) make the config, only the knobs that apply to the picked model's canvas are sent, presets and links
set the renoise widgets, and the page shows the renoise box instead of the masked ones."""
from __future__ import annotations

import dataclasses
import json

import pytest

from dllm_viz import DecodeConfig, load_model
from dllm_viz.app.handlers.adapters import (
    AUTO,
    BOX_CANVASES,
    CANVAS_KNOBS,
    KNOBS,
    PRESET_GROUPS,
    canvas_config,
    parse_config_json,
    config_to_settings,
    settings_to_config,
    shown_on,
)
from dllm_viz.app.handlers.outputs import AUTO_OF, BOXES, KEEP, CanvasShown
from dllm_viz.app.handlers.playground import ModelChoice, Playground
from dllm_viz.app.links import link_fields
from dllm_viz.app.strings import LANGS, STRINGS, t
from dllm_viz.core import rules
from dllm_viz.core.rules.renoise import KNOBS as RENOISE_KNOBS
from tests.ui_model import CountingRunner, widgets

RENOISE = tuple(k.name for k in RENOISE_KNOBS)


def test_the_renoise_widgets_are_the_renoise_rules_knob_specs():
    # one widget per spec (a new knob of the plug-in is a new widget, nothing here changes), and an "auto" switch
    # beside every optional number
    assert [n for n in CANVAS_KNOBS if not n.endswith("_auto")] == list(RENOISE)
    assert set(AUTO_OF) == {k.name for k in RENOISE_KNOBS if k.optional and k.kind in ("int", "float")}
    assert set(CANVAS_KNOBS) <= set(KNOBS)
    for name in RENOISE:  # their labels and notes in both languages
        assert all(t(name, lang) and t(f"info_{name}", lang) for lang in LANGS)
    assert all(t(key, lang) for key in ("knob_auto", "knob_auto_choice", "canvas_box_renoise", "canvas_note_renoise")
               for lang in LANGS)


def test_masked_widgets_make_a_config_a_renoise_model_runs():
    # the page's masked widgets as they stand (balanced, a moved temperature): on a renoise model only gen_length,
    # seed and the renoise knobs are sent, so the canvas check (what refused the decode by name) passes
    settings = widgets(temperature=0.7, seed=5, top_k=3)
    with pytest.raises(ValueError, match="top_k=3 is invalid for 'world-renoise'"):
        rules.check_canvas(settings_to_config(**settings), "renoise", "'world-renoise'")
    cfg = settings_to_config("renoise", **settings)
    rules.check_canvas(cfg, "renoise", "'world-renoise'")
    assert cfg == DecodeConfig(gen_length=24, seed=5)  # every renoise knob "auto": the checkpoint's own


def test_a_renoise_slider_is_sent_only_with_its_auto_switch_off():
    cfg = settings_to_config("renoise", **widgets(entropy_bound=0.3, entropy_bound_auto=False, t_min=0.2,
                                                  max_denoising_steps=12.0, max_denoising_steps_auto=False))
    assert (cfg.entropy_bound, cfg.t_min, cfg.max_denoising_steps) == (0.3, None, 12)  # t_min's auto is on
    assert isinstance(cfg.max_denoising_steps, int)  # a Gradio slider's 12.0 as the integer knob takes it
    assert settings_to_config("renoise", **widgets(acceptance_from="raw")).acceptance_from == "raw"
    assert settings_to_config("renoise", **widgets(acceptance_from=AUTO)).acceptance_from is None


@pytest.mark.parametrize("name, value, match", [
    ("entropy_bound", 0.0, r"entropy_bound=0.0 is invalid: expected a finite number in \(0.0, "),
    ("max_denoising_steps", 0, r"max_denoising_steps=0 is invalid: expected an integer in \[1, 4096\]"),
    ("t_min", float("nan"), r"t_min=nan is invalid: expected a finite number in \[0"),
    ("acceptance_from", "cooked", r"acceptance_from='cooked' is invalid: expected one of tempered \| raw"),
])
def test_a_bad_renoise_value_is_named_with_its_range_auto_or_not(name, value, match):
    for auto in (False, True):
        changes = {name: value, **({AUTO_OF[name]: auto} if name in AUTO_OF else {})}
        with pytest.raises(ValueError, match=match):
            settings_to_config("renoise", **widgets(**changes))


def test_t_max_below_t_min_is_named():
    with pytest.raises(ValueError, match="t_max=0.3 is invalid: expected a finite number >= t_min=0.5"):
        settings_to_config("renoise", **widgets(t_min=0.5, t_min_auto=False, t_max=0.3, t_max_auto=False))


def test_the_masked_page_does_not_send_the_renoise_widgets():
    # a masked model's config is what it was: the renoise widgets are not read there, whatever they hold
    assert settings_to_config(**widgets(entropy_bound=0.0, entropy_bound_auto=False)) == settings_to_config(
        **widgets())
    with pytest.raises(ValueError, match="canvas='paper' is invalid"):
        canvas_config("paper", widgets())


@pytest.mark.parametrize("cfg", [
    DecodeConfig.preset("diffusion_gemma", 32),
    DecodeConfig.preset("gemma4_renoise", 48, seed=3),
    DecodeConfig(gen_length=16, entropy_bound=0.5, t_min=0.0, t_max=1.3, max_denoising_steps=7, stability_threshold=0,
                 confidence_threshold=0.0, canvas_length=16, acceptance_from="raw", seed=9),
])
def test_renoise_configs_round_trip_through_the_widgets(cfg):
    # a renoise trace, a link or a preset sets the widgets; the widgets make the same config again
    settings = config_to_settings(cfg)
    assert settings_to_config("renoise", **settings) == cfg
    for name, auto in AUTO_OF.items():
        assert settings[auto] is (getattr(cfg, name) is None)


def test_an_auto_slider_shows_the_checkpoints_usual_value():
    settings = config_to_settings(DecodeConfig.preset("diffusion_gemma", 32))
    assert (settings["entropy_bound"], settings["t_max"], settings["max_denoising_steps"]) == (0.1, 0.8, 48)
    assert settings["acceptance_from"] == "tempered"  # the preset names it: not "auto"


def test_the_page_shows_the_knobs_of_the_canvas_on_show():
    renoise, masked = shown_on("renoise"), shown_on("masked")
    assert set(BOX_CANVASES) == set(BOXES)
    for name in RENOISE:
        assert getattr(renoise, name) and not getattr(masked, name)
    for name in ("temperature", "schedule", "top_k", "revise", "cache", "stages_on", "t_early", "confidence"):
        assert getattr(masked, name) and not getattr(renoise, name), name
    for name in ("gen_length", "seed"):  # both canvases read them
        assert getattr(masked, name) and getattr(renoise, name)
    boxes = ("presets_canvas", "presets_canvas_title", "presets_article", "presets_title", "schedule_box",
             "article_box", "canvas_renoise", "subtitle_renoise", "subtitle_masked", "scenes_box", "lessons_box",
             "sweep_box", "sweep_note_renoise")
    assert [getattr(renoise, b) for b in boxes] == [True, True, False, False, False, False, True, True, False, False,
                                                    False, False, True]
    assert [getattr(masked, b) for b in boxes] == [False, False, True, True, True, True, False, False, True, True, True,
                                                   True, False]
    assert PRESET_GROUPS["canvas"] == ("diffusion_gemma", "gemma4_renoise")


# ----- through the handlers, on the shipped renoising world model -------------------------------------
@pytest.fixture(scope="module")
def renoiser():
    return load_model("world-renoise")


@pytest.fixture()
def pg(renoiser, tmp_path):
    from dllm_viz.app.serve import limits_of

    masked = CountingRunner()
    calls: list[DecodeConfig] = []

    def run(prompts, configs, **kw):
        from dllm_viz import decode

        calls.extend(configs)
        return decode(renoiser, prompts, configs, **kw)

    pg = Playground(masked, export_dir=tmp_path, models={
        "tiny": ModelChoice(run=masked, prompts=("the ",), name="tiny-chars"),
        "world-renoise": ModelChoice(run=run, prompts=("Ana",), name=renoiser.name, **limits_of(renoiser))})
    pg.calls = calls
    return pg


def test_a_renoise_model_decodes_from_the_page_widgets(pg):
    assert pg.canvas_for("world-renoise") == "renoise" and pg.canvas_for("tiny") == "masked"
    assert pg.canvas_shown(model_pick="world-renoise") == shown_on("renoise")
    # the scenes' box shows on a masked canvas only where the page has scenes (their world models): none here
    assert pg.scene_keys() == () and not pg.canvas_shown(model_pick="tiny").scenes_box
    settings = widgets(gen_length=16, temperature=0.7, entropy_bound=0.5, entropy_bound_auto=False)
    out = pg.play.decode(prompt="Ana", lang="en", model_pick="world-renoise", **settings)
    assert pg.calls == [DecodeConfig(gen_length=16, entropy_bound=0.5)]  # one decode, renoise knobs only
    trace = out.trace.trace
    assert trace.canvas == "renoise" and trace.config.entropy_bound == 0.5 and out.banner == ""
    # the trace records the values that ran: reverting the widgets to it sets each renoise slider, auto off
    knobs = pg.play.revert(trace=out.trace)
    assert (knobs.entropy_bound, knobs.entropy_bound_auto, knobs.max_denoising_steps_auto) == (0.5, False, False)
    assert settings_to_config("renoise", **dataclasses.asdict(knobs)) == trace.config


def test_a_bad_renoise_value_is_refused_before_any_decode_and_the_next_one_runs(pg):
    with pytest.raises(ValueError, match=r"max_denoising_steps=0 is invalid: expected an integer in \[1, 4096\]"):
        pg.play.decode(prompt="Ana", lang="en", model_pick="world-renoise",
                       **widgets(gen_length=16, max_denoising_steps=0, max_denoising_steps_auto=False))
    with pytest.raises(ValueError, match="t_max=0.3 is invalid"):  # against the checkpoint's t_min (0.4)
        pg.play.decode(prompt="Ana", lang="en", model_pick="world-renoise",
                       **widgets(gen_length=16, t_max=0.3, t_max_auto=False))
    assert pg.calls == []
    pg.play.decode(prompt="Ana", lang="en", model_pick="world-renoise", **widgets(gen_length=16))
    assert pg.calls == [DecodeConfig(gen_length=16)]


def test_a_canvas_preset_button_sets_the_renoise_widgets(pg):
    knobs = pg.play.preset("gemma4_renoise", gen_length=32.0)
    assert (knobs.gen_length, knobs.seed) == (KEEP, KEEP)
    values = widgets(gen_length=32, **{k: v for k, v in vars(knobs).items() if v is not KEEP})
    assert settings_to_config("renoise", **values) == DecodeConfig.preset("gemma4_renoise", 32)
    # SGLang's numbers, the checkpoint's canvas
    assert (values["canvas_length_auto"], values["entropy_bound_auto"]) == (True, False)


def test_a_link_of_a_renoise_trace_restores_the_renoise_widgets(pg):
    out = pg.play.decode(prompt="Ana", lang="en", model_pick="world-renoise",
                         **widgets(gen_length=16, acceptance_from="raw", stability_threshold=0,
                                   stability_threshold_auto=False))
    fields = link_fields(out.trace.trace)
    query = {"model": fields["model"], "prompt": fields["prompt"], "config": json.dumps(fields["config"])}
    linked = next(pg.play.open_link(query=query, lang="en"))
    assert (linked.knobs.acceptance_from, linked.knobs.stability_threshold, linked.knobs.stability_threshold_auto) == (
        "raw", 0, False)
    assert settings_to_config("renoise", **dataclasses.asdict(linked.knobs)) == out.trace.trace.config


def test_an_auto_switch_greys_its_slider_out(pg):
    autos = {auto: name == "t_min" for name, auto in AUTO_OF.items()}
    states = pg.play.auto_states(**autos)
    assert vars(states) == {name: name != "t_min" for name in AUTO_OF}
    assert "knob_auto" in STRINGS and isinstance(pg.canvas_shown(model_pick="tiny"), CanvasShown)


def test_a_config_json_takes_the_canvas_defaults_where_it_is_silent():
    # the masked canvas's missing keys are the balanced preset's; a renoise canvas's are its "auto" (DecodeConfig's
    # defaults): the masked preset's top_k or temperature would be refused there
    assert parse_config_json('{"gen_length": 16}') == DecodeConfig.preset("balanced", 16)
    renoise = parse_config_json('{"acceptance_from": "raw"}', seed=3, canvas="renoise")
    assert renoise == DecodeConfig(gen_length=64, seed=3, acceptance_from="raw")
    rules.check_canvas(renoise, "renoise")  # every knob it sets applies to the canvas
    with pytest.raises(ValueError, match="top_k=16 is invalid for world-renoise, whose canvas is 'renoise'"):
        rules.check_canvas(parse_config_json('{"acceptance_from": "raw"}'), "renoise", "world-renoise")


def test_the_api_and_compare_decode_on_a_server_of_a_renoising_model(renoiser, tmp_path):
    """`python app.py --model world-renoise`: /generate took the masked balanced preset for every key left out, and
    refused even "{}"; Compare did the same with configs A and B. A lesson (two masked decodes) is one named error."""
    from dllm_viz import decode
    from dllm_viz.app.serve import limits_of

    def run(prompts, configs, **kw):
        return decode(renoiser, prompts, configs, **kw)

    pg = Playground(run, export_dir=tmp_path, models={"world-renoise": ModelChoice(
        run=run, prompts=("Ana",), name=renoiser.name, **limits_of(renoiser))})
    for config_json in ("{}", '{"gen_length": 16, "acceptance_from": "raw"}'):
        *beats, (text, trace_json) = pg.generate("Ana", config_json)
        trace = json.loads(trace_json)
        assert text and trace["canvas"] == "renoise", config_json
    shown = pg.compare.run(prompt="Ana", seed=0, gen_length=16, cmp_a='{"acceptance_from": "tempered"}',
                           cmp_b='{"acceptance_from": "raw"}', neighbours=0, lang="en", model_pick="world-renoise")
    a, b = (side.trace for side in shown.cmp_traces)
    assert (a.config.acceptance_from, b.config.acceptance_from, a.canvas) == ("tempered", "raw", "renoise")
    assert "positions accepted" in shown.cmp_summary or "accepted the same positions" in shown.cmp_summary
    differ = sum(x != y for x, y in zip(a.token_ids, b.token_ids))
    assert f"differ at {differ} of 16 positions" in shown.cmp_summary
    with pytest.raises(ValueError, match="lesson='global' is invalid for 'world-renoise', whose canvas is 'renoise'"):
        pg.compare.lesson("global", prompt="Ana", seed=0, gen_length=16, lang="en", model_pick="world-renoise")


def test_a_sweep_on_a_renoising_model_is_one_named_error_before_any_decode(pg):
    grid = dict(sweep_temps=[0.5, 1.0], sweep_divisors=["4"], sweep_decays=[0.9], sweep_seeds=1, sweep_prompts="Ana",
                sweep_gen_length=16, lang="en")
    with pytest.raises(ValueError, match=r"model_pick='world-renoise' is invalid for the Sweep: its canvas is "
                                         r"'renoise'.*expected a masked model"):
        pg.sweep.run(model_pick="world-renoise", **grid)
    assert pg.calls == []
    assert pg.sweep.run(model_pick="tiny", **{**grid, "sweep_prompts": "the "}).sweep_table  # the masked one runs


def test_picking_a_renoising_model_offers_its_own_compare_and_back(pg):
    """The Compare tab's configs are the first lesson's (masked knobs): picking the renoising model they become its
    pair (as shipped against the article's rule), which decodes there at once; the lesson text says why no lesson runs
    and shows its study; picking the masked model back brings a lesson's configs, and configs that fit stay."""
    from dllm_viz.app.handlers.compare import FIRST_LESSON, LESSONS

    lesson = json.dumps(LESSONS[FIRST_LESSON].a), json.dumps(LESSONS[FIRST_LESSON].b)
    picked = pg.pick_model(model_pick="world-renoise", lang="en", lesson_key=FIRST_LESSON, cmp_a=lesson[0],
                           cmp_b=lesson[1])
    assert (picked.cmp_a, picked.cmp_b) == pg.compare.pair_for("world-renoise") == ("{}", '{"acceptance_from": "raw"}')
    assert picked.lesson_text.startswith("### Compare on a renoising model")
    assert pg.compare.lesson_text(None, "zh", model_pick="world-renoise").startswith("### 在重新加噪的模型上对比")
    shown = pg.compare.run(prompt="Ana", seed=0, gen_length=16, cmp_a=picked.cmp_a, cmp_b=picked.cmp_b, neighbours=0,
                           lang="en", model_pick="world-renoise")
    assert [s.trace.config.acceptance_from for s in shown.cmp_traces] == ["tempered", "raw"]  # as each ran
    back = pg.pick_model(model_pick="tiny", lang="en", lesson_key=FIRST_LESSON, cmp_a=picked.cmp_a,
                         cmp_b=picked.cmp_b)
    assert (back.cmp_a, back.cmp_b) == lesson and back.lesson_text.startswith("### ")  # acceptance_from is not masked
    same = pg.pick_model(model_pick="tiny", lang="en", cmp_a='{"temperature": 0.5}', cmp_b="{}")
    assert (same.cmp_a, same.cmp_b) == (KEEP, KEEP)
    assert pg.pick_model(model_pick="world-renoise", cmp_a="{}", cmp_b="{}").cmp_a is KEEP  # {} fits either canvas
    typo = pg.pick_model(model_pick="world-renoise", cmp_a='{"acceptance_from": ', cmp_b="{}")
    assert (typo.cmp_a, typo.cmp_b) == (KEEP, KEEP)  # a config being typed stays: the next Compare names its error
