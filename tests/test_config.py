from __future__ import annotations

import dataclasses

import pytest

from dllm_viz import PRESETS, DecodeConfig
from dllm_viz.core.schedules import planned_steps, temperature_at

INVALID = [
    ("gen_length", -1), ("gen_length", 2.5), ("gen_length", True),
    ("block_length", 0), ("block_length", 5), ("block_length", 100),
    ("schedule", "cosine"), ("top_k", 0), ("decay", 0.0), ("decay", 1.5), ("decay", float("nan")),
    ("min_k", 0), ("steps", 0), ("steps", 65), ("threshold", 0.0), ("threshold", 1.01),
    ("temperature", -0.1), ("temperature", float("inf")), ("temperature_stages", (1.0, 1.0)),
    ("temperature_stages", (1.0, -1.0, 0.5)), ("confidence", "logit"), ("top_p", 0.0), ("top_p", 1.2),
    ("vocab_top_k", 0), ("seed", -1), ("seed", 2**64), ("block_schedule", "reset"),
    ("confidence_from", "logits"), ("sample_scope", "none"), ("rng", "global"),
    ("early_stop", 1), ("early_stop", "yes"), ("early_stop_threshold", 0.0), ("early_stop_threshold", 1.5),
    ("cache", "kv"), ("cache", None), ("cache_refresh", 0), ("cache_refresh", 1.5), ("cache_drift", "yes"),
]


@pytest.mark.parametrize("field,value", INVALID)
def test_every_invalid_field_raises_a_named_value_error(field, value):
    with pytest.raises(ValueError, match=field.split("[")[0]) as err:
        DecodeConfig(**{"gen_length": 64, field: value})
    assert "expected" in str(err.value) or "needs" in str(err.value)


def test_cross_field_checks():
    with pytest.raises(ValueError, match="steps=6.*multiple of the number of blocks"):
        DecodeConfig(gen_length=64, block_length=16, steps=6)
    with pytest.raises(ValueError, match="confidence_from='sampled' needs sample_scope='all'"):
        DecodeConfig(confidence_from="sampled")
    DecodeConfig(confidence_from="sampled", sample_scope="all")


def test_cache_settings_are_checked_against_each_other():
    # The dual cache keeps the blocks after the current one: without blocks there are none.
    with pytest.raises(ValueError, match="cache='dual' needs block_length"):
        DecodeConfig(gen_length=64, cache="dual")
    assert DecodeConfig(gen_length=64, cache="dual", block_length=16).cache == "dual"
    assert DecodeConfig(gen_length=64, cache="prefix").cache == "prefix"  # one block: the prompt is cached
    with pytest.raises(ValueError, match="cache='prefix' with early_stop=True is invalid"):
        DecodeConfig(gen_length=64, cache="prefix", early_stop=True)
    # A revision rule scores decided tokens; a cached window scores only the current block's masks.
    with pytest.raises(ValueError, match="cache='dual' with revise='rcr' is invalid: a revision rule scores decided"):
        DecodeConfig(gen_length=64, block_length=16, cache="dual", revise="rcr")
    cfg = DecodeConfig(gen_length=64, block_length=16, cache="dual", cache_refresh=4, cache_drift=True)
    assert DecodeConfig.from_dict(cfg.to_dict()) == cfg
    assert DecodeConfig().cache == "none" and DecodeConfig().cache_refresh is None and not DecodeConfig().cache_drift


def test_a_refresh_interval_without_a_cache_is_refused_by_name():
    """cache_refresh sets when a cache is refreshed: without one it would be silently ignored (issue 42)."""
    with pytest.raises(ValueError, match=r"cache_refresh=3 is invalid: expected None with cache='none'"):
        DecodeConfig(gen_length=64, cache_refresh=3)
    with pytest.raises(ValueError, match=r"cache_refresh=2 is invalid"):
        DecodeConfig(gen_length=64, cache="prefix", cache_refresh=2).replace(cache="none")
    assert DecodeConfig(gen_length=64, cache="prefix", cache_refresh=2).cache_refresh == 2


def test_frozen_and_keyword_only():
    cfg = DecodeConfig()
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.temperature = 2.0  # type: ignore[misc]
    with pytest.raises(TypeError):
        DecodeConfig(64)  # type: ignore[misc]


def test_defaults_are_the_correct_behaviour():
    cfg = DecodeConfig()
    assert (cfg.confidence_from, cfg.sample_scope, cfg.rng) == ("raw", "selected", "per_request")
    assert cfg.early_stop is False  # the end-of-text early stop is opt-in
    assert cfg.initial_k == 16 and DecodeConfig(gen_length=2).initial_k == 1


@pytest.mark.parametrize("name", list(PRESETS))
def test_presets_follow_the_article_table(name):
    cfg = DecodeConfig.preset(name, 120)
    p = PRESETS[name]
    assert cfg.top_k == 120 // p.top_k_divisor and cfg.decay == p.decay and cfg.temperature == p.temperature
    assert cfg.schedule == "topk_decay"
    assert DecodeConfig.preset(name, 120, temperature=0.3).temperature == 0.3


def test_preset_errors():
    with pytest.raises(ValueError, match="preset"):
        DecodeConfig.preset("fast", 64)
    with pytest.raises(ValueError, match="gen_length"):
        DecodeConfig.preset("balanced", -4)


def test_from_dict_and_replace():
    cfg = DecodeConfig.from_dict({"gen_length": 32, "temperature_stages": [1.2, 1.0, 0.7]})
    assert cfg.temperature_stages == (1.2, 1.0, 0.7)
    assert DecodeConfig.from_dict(cfg.to_dict()) == cfg
    with pytest.raises(ValueError, match="temprature"):
        DecodeConfig.from_dict({"temprature": 1.0})
    assert cfg.replace(seed=3).seed == 3 and cfg.replace(seed=3).gen_length == 32
    with pytest.raises(ValueError, match="seed"):
        cfg.replace(seed=-3)


@pytest.mark.parametrize("kw,planned", [
    (dict(gen_length=64, top_k=16, decay=0.9), 6),
    (dict(gen_length=16, top_k=1, decay=1.0), 16),
    (dict(gen_length=16, schedule="fixed_steps", steps=5), 5),
    (dict(gen_length=16, schedule="fixed_steps"), 8),
    (dict(gen_length=16, schedule="threshold"), None),
    (dict(gen_length=0), 0),
])
def test_planned_steps(kw, planned):
    assert planned_steps(DecodeConfig(**kw)) == planned


def test_temperature_at_thirds():
    cfg = DecodeConfig(gen_length=12, schedule="fixed_steps", steps=6, temperature_stages=(1.2, 1.0, 0.7))
    assert [temperature_at(cfg, s, 0.0) for s in range(6)] == [1.2, 1.2, 1.0, 1.0, 0.7, 0.7]
    thr = DecodeConfig(schedule="threshold", temperature_stages=(1.2, 1.0, 0.7))
    assert [temperature_at(thr, 0, f) for f in (0.0, 0.34, 0.7, 1.0)] == [1.2, 1.0, 0.7, 0.7]
    assert temperature_at(DecodeConfig(temperature=0.5), 3, 0.5) == 0.5


@pytest.mark.parametrize("schedule", ["fixed_steps", "linear_time"])
def test_total_steps_is_the_budget_of_both_step_counted_schedules(schedule):
    plain = DecodeConfig(gen_length=64, block_length=16, schedule=schedule)
    assert plain.total_steps == 4 * 8 == planned_steps(plain)  # half of each block's positions, every block
    assert planned_steps(plain.replace(steps=8)) == 8 == plain.replace(steps=8).total_steps
    assert planned_steps(plain.replace(schedule="topk_decay", top_k=4)) != plain.total_steps  # not its budget
