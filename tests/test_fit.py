"""app/handlers/fit.py: the knob just moved wins, the others follow, and what the widgets offer always decodes."""
from __future__ import annotations

import random

import pytest

from dllm_viz import DecodeConfig
from dllm_viz.app.handlers.adapters import active_preset, config_to_settings, settings_to_config
from dllm_viz.app.handlers.fit import block_divisor, fit_settings, fitted_knobs, gen_length_max
from dllm_viz.core import rules
from dllm_viz.core.config import CACHES, CONFIDENCE_FROM, REVISIONS, SCHEDULES


def settings(**changes):
    values = config_to_settings(DecodeConfig.preset("balanced", 64))
    values.update(changes)
    return values


def keys(notes):
    return [n.key for n in notes]


def test_the_dual_cache_on_one_block_gets_a_block_length():
    shown = DecodeConfig.preset("balanced", 64)
    fitted, notes = fit_settings(settings(cache="dual"), shown=shown)
    assert fitted["block_length"] == 32 and keys(notes) == ["fit_dual_block"]
    assert settings_to_config(**fitted).cache == "dual"
    fitted, _ = fit_settings(settings(cache="dual", gen_length=32), shown=shown)
    assert fitted["block_length"] == 16  # half the canvas: the cache has a block after the current one


def test_a_block_length_that_does_not_divide_moves_to_the_nearest_that_does():
    assert [block_divisor(64, b) for b in (24, 40, 56, 128)] == [16, 32, 64, 64]  # ties to the smaller
    assert block_divisor(48, 40) == 48 and block_divisor(8, 4) == 8  # slider values (multiples of 8) first
    fitted, notes = fit_settings(settings(block_length=24), shown=DecodeConfig.preset("balanced", 64))
    assert fitted["block_length"] == 16 and notes[0].values == {"a": 24, "g": 64, "b": 16}


def test_a_cache_and_a_revision_rule_the_one_just_chosen_wins():
    plain = DecodeConfig.preset("balanced", 64)
    fitted, notes = fit_settings(settings(cache="prefix", revise="rcr"), shown=plain.replace(revise="rcr"))
    assert (fitted["cache"], fitted["revise"], keys(notes)) == ("prefix", "none", ["fit_cache_revise"])
    fitted, notes = fit_settings(settings(cache="prefix", revise="rcr"), shown=plain.replace(cache="prefix"))
    assert (fitted["cache"], fitted["revise"], keys(notes)) == ("none", "rcr", ["fit_revise_cache"])
    fitted, notes = fit_settings(settings(cache="prefix", early_stop=True), shown=plain.replace(cache="prefix"))
    assert (fitted["cache"], fitted["early_stop"], keys(notes)) == ("none", True, ["fit_stop_cache"])
    fitted, notes = fit_settings(settings(cache="prefix", early_stop=True), shown=plain.replace(early_stop=True))
    assert (fitted["cache"], fitted["early_stop"], keys(notes)) == ("prefix", False, ["fit_cache_stop"])


def test_a_model_without_caches_decodes_without_one():
    fitted, notes = fit_settings(settings(cache="prefix"), cache_modes=("none",))
    assert fitted["cache"] == "none" and keys(notes) == ["fit_cache_model"]
    assert fit_settings(settings(cache="prefix"), cache_modes=("none", "prefix", "dual"))[1] == []


def test_steps_are_shared_evenly_by_the_blocks():
    fitted, notes = fit_settings(settings(schedule="fixed_steps", steps=30, block_length=16))
    assert fitted["steps"] % 4 == 0 and fitted["steps"] <= 64 and keys(notes) == ["fit_steps"]
    fitted, _ = fit_settings(settings(schedule="fixed_steps", steps=200))
    assert fitted["steps"] == 64  # at most one step per position
    assert fit_settings(settings(schedule="topk_decay", steps=200))[1] == []  # steps is not read there


def test_a_gen_length_moved_under_a_preset_keeps_the_preset():
    shown = DecodeConfig.preset("quality", 64, seed=5)
    fitted, notes = fit_settings(settings(**{**config_to_settings(shown), "gen_length": 128}), shown=shown)
    assert notes == [] and active_preset(settings_to_config(**fitted)) == "quality"
    assert fitted["top_k"] == 128 // 6 and fitted["seed"] == 5
    custom = shown.replace(top_k=3)  # no preset on show: the length alone moves
    fitted, _ = fit_settings({**config_to_settings(custom), "gen_length": 128}, shown=custom)
    assert fitted["top_k"] == 3


def test_what_the_widgets_offer_always_decodes():
    """Any mix of the page's slider and dropdown values, fitted, is a valid config (seeded sample)."""
    rng = random.Random(0)
    base = settings()
    for _ in range(400):
        s = dict(base, gen_length=rng.randrange(8, 241, 8), block_length=rng.randrange(0, 129, 8),
                 schedule=rng.choice(SCHEDULES), steps=rng.randint(1, 256), cache=rng.choice(CACHES),
                 revise=rng.choice(REVISIONS), early_stop=rng.random() < 0.3,
                 confidence_from=rng.choice(CONFIDENCE_FROM), sample_scope=rng.choice(("selected", "all")),
                 indel=rng.choice(list(rules.INDELS)))
        shown = rng.choice([None, DecodeConfig.preset("balanced", 64)])
        fitted, _ = fit_settings(s, shown=shown)
        settings_to_config(**fitted)  # raises on any combination the page would still refuse
        assert fitted["gen_length"] == s["gen_length"]  # the length the visitor chose stays


def test_an_insert_delete_rule_just_chosen_sets_the_rest_as_its_preset_and_leaves_when_they_move():
    """The page as it opens (balanced, no blocks) with the insert/delete rule picked: its preset's knobs
    follow; a knob then moved away from what the rule needs turns the rule off."""
    shown = DecodeConfig.preset("balanced", 64)
    fitted, notes = fit_settings(settings(indel="joint_threshold_indel"), shown=shown)
    cfg = settings_to_config(**fitted)
    assert keys(notes) == ["fit_indel_preset"]
    assert notes[0].values == {"r": "joint_threshold_indel", "p": "llada22_indel"}
    assert cfg == DecodeConfig.preset("llada22_indel", 64).replace(seed=shown.seed)
    after, notes = fit_settings(dict(fitted, schedule="topk_decay"), shown=cfg)
    assert keys(notes) == ["fit_indel_off"] and after["indel"] == "none" and after["schedule"] == "topk_decay"
    assert settings_to_config(**after).indel == "none"
    again, notes = fit_settings(dict(fitted, threshold=0.7), shown=cfg)  # a knob it reads: it stays
    assert notes == [] and settings_to_config(**again).indel == "joint_threshold_indel"


def test_an_insert_delete_rule_on_a_model_that_cannot_edit_lengths_is_turned_off():
    """The page's limits say which models write DELETE and SPLIT (serve.limits_of); on the others the
    rule is turned off, with a line, and what the widgets show decodes there."""
    from dllm_viz import load_model
    from dllm_viz.app.serve import limits_of

    assert limits_of(load_model("world-indel"))["edits_lengths"] is True
    assert limits_of(load_model("world"))["edits_lengths"] is False
    shown = DecodeConfig.preset("balanced", 64)
    fitted, notes = fit_settings(settings(indel="joint_threshold_indel"), shown=shown, edits_lengths=False)
    assert keys(notes) == ["fit_indel_model"] and fitted["indel"] == "none"
    assert settings_to_config(**fitted) == shown
    fitted, notes = fit_settings(settings(indel="joint_threshold_indel"), shown=shown, edits_lengths=True)
    assert keys(notes) == ["fit_indel_preset"]


def test_only_the_changed_widgets_are_sent_back():
    before = settings(cache="dual")
    after, _ = fit_settings(before, shown=DecodeConfig.preset("balanced", 64))
    assert fitted_knobs(before, after) == {"block_length": 32}


@pytest.mark.parametrize("max_length, end", [(256, 240), (96, 80), (48, 32), (None, 240), (4096, 256), (20, 8)])
def test_the_gen_length_slider_ends_within_the_models_context(max_length, end):
    assert gen_length_max(max_length) == end
