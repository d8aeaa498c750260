"""adapters.py: widget values <-> DecodeConfig, and the widget values of the preset buttons."""
from __future__ import annotations

import re

import pytest

from dllm_viz import DecodeConfig
from dllm_viz.app.handlers.adapters import (
    KNOBS,
    PRESET_CANVAS,
    PRESET_GROUPS,
    RULE_KNOBS,
    RULE_SLIDERS,
    SCHEDULE_KNOBS,
    active_preset,
    config_to_settings,
    parse_config_json,
    preset_knobs,
    settings_to_config,
)
from dllm_viz.app.strings import LANGS, t
from dllm_viz.app.handlers.outputs import KEEP
from dllm_viz.core.config import CANVAS_PRESETS, PRESETS, REVISION_PRESETS, SHIPPED_PRESETS
from tests.ui_model import widgets


@pytest.mark.parametrize("cfg", [
    DecodeConfig.preset("balanced", 32),
    DecodeConfig.preset("speed", 48, seed=7, min_k=2),
    DecodeConfig(gen_length=32, schedule="threshold", threshold=0.7, confidence="margin"),
    DecodeConfig(gen_length=32, schedule="fixed_steps", steps=8, block_length=16),
    DecodeConfig(gen_length=32, schedule="adaptive", top_k=5, temperature_stages=(1.2, 1.0, 0.7)),
    DecodeConfig(gen_length=16, sample_scope="all", confidence_from="sampled", rng="shared"),
    DecodeConfig(gen_length=32, block_length=16, cache="dual", cache_drift=True),
    DecodeConfig(gen_length=32, cache="prefix"),
])
def test_widgets_round_trip_to_the_same_config(cfg):
    used = SCHEDULE_KNOBS[cfg.schedule]
    defaults = DecodeConfig()
    expected = cfg.replace(**{k: getattr(defaults, k) for k in ("top_k", "decay", "steps", "threshold")
                              if k not in used})
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


@pytest.mark.parametrize("knob", ["top_k", "decay", "steps", "threshold", "t_early", "t_middle", "t_late", "top_p"])
@pytest.mark.parametrize("value", [float("nan"), float("inf"), -1.0])
def test_every_knob_is_validated_whether_or_not_the_schedule_reads_it(knob, value):
    """A NaN in a slider the schedule ignores (here threshold or steps under topk_decay, the stage
    temperatures with stages off, top_p) was accepted: each is refused naming the knob."""
    name = {"t_early": "temperature_stages", "t_middle": "temperature_stages",
            "t_late": "temperature_stages"}.get(knob, knob)
    for schedule in ("topk_decay", "threshold", "fixed_steps"):
        with pytest.raises(ValueError, match=name):
            settings_to_config(**widgets(schedule=schedule, **{knob: value}))


def test_a_seed_typed_as_1_5_is_refused_not_rounded(tmp_path):
    """The seed box hands the handlers what was typed (Gradio's precision=0 rounded 1.5 to 2)."""
    from dllm_viz.app import ui
    from tests.ui_model import CountingRunner

    runner = CountingRunner()
    ex = runner(["hi "], [DecodeConfig.preset("balanced", 16, seed=1)])[0]
    seed_box = ui.build_demo(runner, examples=[("ex", ex)], export_dir=tmp_path).page.seed
    with pytest.raises(ValueError, match="seed=1.5 is invalid"):
        settings_to_config(**widgets(seed=seed_box.preprocess(1.5)))
    assert settings_to_config(**widgets(seed=seed_box.preprocess(7))).seed == 7
    with pytest.raises(ValueError, match="seed=1.5 is invalid"):
        parse_config_json("{}", seed=seed_box.preprocess(1.5))


@pytest.mark.parametrize("text,says", [
    ("[" * 100_000, "config_json has 100000 characters: expected at most"),
    ("[" * 5_000, "config_json nests too deeply"),
    ('{"temperature_stages": ' + "[" * 4000 + "]" * 4000 + "}", "config_json nests too deeply"),
], ids=["long", "deep", "deep-inside"])
def test_config_json_is_bounded_like_a_trace(text, says):
    with pytest.raises(ValueError, match=says):
        parse_config_json(text)


def test_config_json_defaults_to_the_balanced_preset():
    balanced = DecodeConfig.preset("balanced", 48, temperature=0.5)
    assert parse_config_json('{"gen_length": 48, "temperature": 0.5}') == balanced
    assert parse_config_json("{}", gen_length=16, seed=3) == DecodeConfig.preset("balanced", 16, seed=3)
    for bad, match in (('{"temprature": 1}', "temprature"), ("{not json", "config_json"), ("[1, 2]", "config_json")):
        with pytest.raises(ValueError, match=match):
            parse_config_json(bad)


def test_active_preset_names_a_preset_or_none():
    assert active_preset(DecodeConfig.preset("speed", 48, seed=9)) == "speed"
    assert active_preset(DecodeConfig.preset("speed", 48, temperature=0.3)) is None


def test_the_early_stop_widgets_round_trip():
    cfg = DecodeConfig.preset("balanced", 32, early_stop=True, early_stop_threshold=0.8)
    settings = config_to_settings(cfg)
    assert (settings["early_stop"], settings["early_stop_threshold"]) == (True, 0.8)
    assert settings_to_config(**settings) == cfg
    assert settings_to_config(**config_to_settings(DecodeConfig.preset("balanced", 32))).early_stop is False


def test_every_preset_of_core_config_is_a_button_that_sets_its_config():
    """PRESET_GROUPS takes its buttons from core.config: a new preset there is a button here that
    gives its config, with no change in this module."""
    assert PRESET_GROUPS == {"article": tuple(PRESETS), "shipped": (*SHIPPED_PRESETS, *REVISION_PRESETS),
                             "canvas": tuple(CANVAS_PRESETS)}
    for group, names in PRESET_GROUPS.items():
        for name in names:
            out = preset_knobs(name, 64.0)  # a Gradio slider's float
            values = widgets(gen_length=64, **{k: v for k, v in vars(out).items() if v is not KEEP})
            canvas = PRESET_CANVAS[group][0]  # a canvas preset's knobs are sent on a model of its canvas
            assert settings_to_config(canvas, **values) == DecodeConfig.preset(name, 64), name
            assert all(t(f"preset_{name}", lang) for lang in LANGS)  # its button's label in both languages


def test_the_cache_widgets_make_the_config_and_a_bad_pair_is_named():
    assert settings_to_config(**widgets(cache="prefix")).cache == "prefix"
    on = settings_to_config(**widgets(cache="dual", block_length=8, cache_drift=True))
    assert (on.cache, on.cache_drift, on.block_length) == ("dual", True, 8)
    with pytest.raises(ValueError, match="cache='dual' needs block_length"):
        settings_to_config(**widgets(cache="dual", block_length=0))


# ----- the revision rule's widgets (issue 28) ------------------------------------------------------
def test_the_revision_widgets_make_the_config_reading_only_the_rules_knobs():
    cfg = settings_to_config(**widgets(revise="remdm", remask_sigma="conf", remask_eta=0.3, remask_loop_steps=4.0,
                                       verify_threshold=0.5))
    assert (cfg.revise, cfg.remask_sigma, cfg.remask_eta, cfg.remask_loop_steps) == ("remdm", "conf", 0.3, 4)
    assert cfg.verify_threshold == DecodeConfig().verify_threshold  # WINO's knob: not read by remdm
    wino = settings_to_config(**widgets(revise="wino", verify_threshold=0.5, remask_eta=0.3))
    assert (wino.verify_threshold, wino.remask_eta) == (0.5, DecodeConfig().remask_eta)
    edit = settings_to_config(**widgets(revise="joint_threshold", edit_threshold=0.4, max_post_edit_steps=3.0,
                                        penalty_lambda=0.5))
    assert (edit.edit_threshold, edit.max_post_edit_steps, edit.penalty_lambda) == (0.4, 3, 0.5)
    # the strict comparison belongs to the threshold schedule: read only there
    assert settings_to_config(**widgets(schedule="threshold", threshold_strict=True)).threshold_strict is True
    assert settings_to_config(**widgets(schedule="topk_decay", threshold_strict=True)).threshold_strict is False
    for rule, knobs in RULE_KNOBS.items():  # the table names every knob a rule reads, and only those
        assert knobs <= set(RULE_SLIDERS) and (rule == "none") <= (not knobs)


@pytest.mark.parametrize("name, value, says", [
    ("revise", "remask", "revise='remask'"), ("remask_sigma", "cape", "remask_sigma='cape'"),
    ("remask_eta", 0.0, "remask_eta=0.0"), ("remask_eta", float("nan"), "remask_eta"),
    ("remask_alpha_on", 1.0, "remask_alpha_on=1.0"), ("remask_loop_steps", -1.0, "remask_loop_steps=-1"),
    ("verify_threshold", 1.5, "verify_threshold=1.5"), ("edit_threshold", -0.1, "edit_threshold=-0.1"),
    ("max_post_edit_steps", 5000.0, "max_post_edit_steps=5000"), ("penalty_lambda", -1.0, "penalty_lambda=-1.0"),
])
def test_a_bad_revision_setting_is_a_named_error_whether_the_rule_reads_it_or_not(name, value, says):
    for rule in ("none", "remdm", "wino", "joint_threshold"):
        if name == "revise" and rule != "none":
            continue
        with pytest.raises(ValueError, match=re.escape(says)):
            settings_to_config(**widgets(**{"revise": rule, name: value}))


def test_revision_presets_are_whole_states_and_round_trip():
    for name in REVISION_PRESETS:
        cfg = DecodeConfig.preset(name, 64, seed=3)
        assert settings_to_config(**config_to_settings(cfg)) == cfg, name
        assert active_preset(cfg) == name
    # after a revision preset, an article preset turns the rule off again (a preset is a whole state)
    knobs = preset_knobs("balanced", 64)
    values = widgets(gen_length=64, revise="wino", threshold_strict=True, verify_threshold=0.5)
    values.update({k: v for k, v in vars(knobs).items() if v is not KEEP})
    assert values["revise"] == "none" and settings_to_config(**values) == DecodeConfig.preset("balanced", 64)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -1, -0.5, 0, 0.5, 1, 2.5, 10**9, "x", None, True])
def test_a_lone_knob_is_refused_with_the_error_a_config_of_it_alone_gives(value):
    """`check_alone` (each knob's own check against one config of defaults) says of a value what a DecodeConfig of
    that value alone says (the staged temperatures in their triple, a plug-in's knob on the largest canvas)."""
    from dllm_viz.app.handlers.adapters import PLUGIN_KNOBS, _plugin_value, check_alone
    from dllm_viz.core.config import MAX_COUNT

    alone = {"t_early": lambda v: DecodeConfig(temperature_stages=(v, 1.0, 1.0)),
             "t_middle": lambda v: DecodeConfig(temperature_stages=(1.0, v, 1.0)),
             "t_late": lambda v: DecodeConfig(temperature_stages=(1.0, 1.0, v)),
             "top_p": lambda v: DecodeConfig(top_p=v),
             **{n: (lambda n: lambda v: DecodeConfig(gen_length=MAX_COUNT, **{n: _plugin_value(n, v)}))(n)
                for n in PLUGIN_KNOBS}}
    fine = {"t_early": 1.0, "t_middle": 1.0, "t_late": 1.0, "top_p": 1.0} | {
        n: getattr(DecodeConfig(), n) for n in PLUGIN_KNOBS}
    for name, make in alone.items():
        try:
            make(value)
            said = None
        except (ValueError, TypeError) as err:
            said = (type(err), str(err))
        try:
            check_alone(fine | {name: value})
            got = None
        except (ValueError, TypeError) as err:
            got = (type(err), str(err))
        assert got == said, name
