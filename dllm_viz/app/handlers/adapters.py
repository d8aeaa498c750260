"""Widget values <-> `DecodeConfig`: the only place that knows how the page's knobs map to a config.

`settings_to_config` turns the decode-setting widgets' values (keyword names in `KNOBS`) into a
validated `DecodeConfig` (a bad value raises the config's `ValueError`, naming the field);
`knobs_of` is its inverse on what it reads, and `preset_knobs` the widget values of a preset
button (a whole state: every knob but the gen length and the seed). Pure functions: no Gradio, no model.
"""
from __future__ import annotations

import dataclasses
import json
import math
from typing import Any

from dllm_viz.app.handlers.outputs import KEEP, Knobs, values_of
from dllm_viz.core.config import MAX_COUNT, PRESETS, REVISION_PRESETS, SHIPPED_PRESETS, DecodeConfig

# Widget names of the playground's decode settings, as keyword names of `settings_to_config`.
KNOBS = (
    "gen_length", "temperature", "top_k", "decay", "min_k", "steps", "threshold", "block_length",
    "schedule", "confidence", "stages_on", "t_early", "t_middle", "t_late", "seed",
    "confidence_from", "sample_scope", "rng", "early_stop", "early_stop_threshold", "top_p", "cache", "cache_drift",
    # confirmations taken back (issue 28): the revision rule and its knobs, and the strict threshold
    "revise", "remask_sigma", "remask_eta", "remask_alpha_on", "remask_loop_steps", "verify_threshold",
    "edit_threshold", "max_post_edit_steps", "penalty_lambda", "threshold_strict",
)
# Which knobs a schedule reads; the others are greyed out and not passed to DecodeConfig.
SCHEDULE_KNOBS = {
    "topk_decay": {"top_k", "decay"}, "adaptive": {"top_k"}, "fixed_steps": {"steps"}, "threshold": {"threshold"},
    "linear_time": {"steps"},
}
SCHEDULE_SLIDERS = ("top_k", "decay", "steps", "threshold")
# Which knobs a revision rule reads (core/revision.py); the others are greyed out and not passed on.
RULE_KNOBS: dict[str, set[str]] = {
    "none": set(), "rcr": set(), "wino": {"verify_threshold"},
    "remdm": {"remask_sigma", "remask_eta", "remask_alpha_on", "remask_loop_steps"},
    "joint_threshold": {"edit_threshold", "max_post_edit_steps", "penalty_lambda"},
}
RULE_SLIDERS = ("remask_sigma", "remask_eta", "remask_alpha_on", "remask_loop_steps", "verify_threshold",
                "edit_threshold", "max_post_edit_steps", "penalty_lambda")
_RULE_COUNTS = ("remask_loop_steps", "max_post_edit_steps")  # integer knobs: a slider's 4.0 is passed on as 4
# The preset buttons, by group, in the order shown; the page lays out a row per group. A new button
# is a new entry of `core.config.PRESETS` (the article's table) or `SHIPPED_PRESETS` (a reference
# implementation's rule) and a `preset_<name>` label in each language of app/strings/; nothing here
# changes. A new group is a new entry here (its presets known to `DecodeConfig.preset`).
# The "as shipped" group holds the samplers (SHIPPED_PRESETS) and the revision rules as their code ships
# them (REVISION_PRESETS: SGLang's JointThreshold and LowConfidence, WINO, ReMDM, RCR).
PRESET_GROUPS: dict[str, tuple[str, ...]] = {"article": tuple(PRESETS),
                                             "shipped": (*SHIPPED_PRESETS, *REVISION_PRESETS)}


def integral(value: Any) -> Any:
    """Gradio numbers arrive as floats; pass integral ones on as int, anything else unchanged for validation."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    return value


# What a knob the config will not read must still be (a greyed slider keeps its value, and an API
# call can send anything): the config a lone value of it would make, so the error is the config's own.
# `steps` alone is checked against the largest canvas: a stale value above gen_length is harmless.
_ALONE: dict[str, Any] = {
    "top_k": lambda v: DecodeConfig(top_k=integral(v)), "decay": lambda v: DecodeConfig(decay=v),
    "steps": lambda v: DecodeConfig(gen_length=MAX_COUNT, steps=integral(v)),
    "threshold": lambda v: DecodeConfig(threshold=v),
    "t_early": lambda v: DecodeConfig(temperature_stages=(v, 1.0, 1.0)),
    "t_middle": lambda v: DecodeConfig(temperature_stages=(1.0, v, 1.0)),
    "t_late": lambda v: DecodeConfig(temperature_stages=(1.0, 1.0, v)),
    "top_p": lambda v: DecodeConfig(top_p=v),
    **{name: (lambda name: lambda v: DecodeConfig(**{name: _rule_value(name, v)}))(name) for name in RULE_SLIDERS},
}


def _rule_value(name: str, value: Any) -> Any:
    return integral(value) if name in _RULE_COUNTS else value


def settings_to_config(**s: Any) -> DecodeConfig:
    """The DecodeConfig for the playground's widget values (names in KNOBS). Raises ValueError.

    Every knob is validated, read or not: a NaN in a slider the schedule ignores is refused as
    surely as one it reads (only its consistency with the other knobs is not asked for).
    """
    missing = set(KNOBS) - set(s)
    if missing:
        raise ValueError(f"settings: missing {sorted(missing)}")
    for name, alone in _ALONE.items():
        alone(s[name])
    schedule = s["schedule"]
    used = SCHEDULE_KNOBS.get(schedule, set())
    values: dict[str, Any] = {
        "gen_length": integral(s["gen_length"]), "schedule": schedule,
        "confidence": s["confidence"], "temperature": s["temperature"],
        "min_k": integral(s["min_k"]), "seed": integral(s["seed"]),
        "block_length": integral(s["block_length"]) or None,
        "confidence_from": s["confidence_from"], "sample_scope": s["sample_scope"], "rng": s["rng"],
        "early_stop": bool(s["early_stop"]), "early_stop_threshold": s["early_stop_threshold"],
        "top_p": s["top_p"] if s["top_p"] < 1 else None,  # the slider's 1.0 = off (checked above: a number)
        "cache": s["cache"] or "none", "cache_drift": bool(s["cache_drift"]),
    }
    for name in ("top_k", "steps"):
        if name in used:
            values[name] = integral(s[name])
    for name in ("decay", "threshold"):
        if name in used:
            values[name] = s[name]
    if s["stages_on"]:
        values["temperature_stages"] = (s["t_early"], s["t_middle"], s["t_late"])
    values |= revision_values(s, schedule)
    return DecodeConfig.from_dict(values)


def revision_values(s: dict[str, Any], schedule: str) -> dict[str, Any]:
    """The config fields of the revision rule's widgets: the rule, the knobs it reads (the others
    keep their defaults, as a schedule's unread sliders do), and the strict comparison of the
    threshold schedule (read only there)."""
    rule = s["revise"] or "none"
    values: dict[str, Any] = {"revise": rule}
    for name in RULE_KNOBS.get(rule, set()):
        values[name] = _rule_value(name, s[name])
    if schedule == "threshold":
        values["threshold_strict"] = bool(s["threshold_strict"])
    return values


def config_to_settings(cfg: DecodeConfig) -> dict[str, Any]:
    """Widget values that reproduce `cfg` (the inverse of `settings_to_config` on what it reads)."""
    return values_of(knobs_of(cfg))


def knobs_of(cfg: DecodeConfig) -> Knobs:
    stages = cfg.temperature_stages
    return Knobs(
        gen_length=cfg.gen_length, temperature=cfg.temperature, top_k=cfg.initial_k, decay=cfg.decay,
        min_k=cfg.min_k, steps=cfg.total_steps, threshold=cfg.threshold, block_length=cfg.block_length or 0,
        schedule=cfg.schedule, confidence=cfg.confidence, stages_on=stages is not None,
        t_early=stages[0] if stages else 1.2, t_middle=stages[1] if stages else 1.0,
        t_late=stages[2] if stages else 0.7, seed=cfg.seed, confidence_from=cfg.confidence_from,
        sample_scope=cfg.sample_scope, rng=cfg.rng, early_stop=cfg.early_stop,
        early_stop_threshold=cfg.early_stop_threshold, top_p=cfg.top_p if cfg.top_p is not None else 1.0,
        cache=cfg.cache, cache_drift=cfg.cache_drift, revise=cfg.revise, remask_sigma=cfg.remask_sigma,
        remask_eta=cfg.remask_eta, remask_alpha_on=cfg.remask_alpha_on, remask_loop_steps=cfg.remask_loop_steps,
        verify_threshold=cfg.verify_threshold, edit_threshold=cfg.edit_threshold,
        max_post_edit_steps=cfg.max_post_edit_steps, penalty_lambda=cfg.penalty_lambda,
        threshold_strict=cfg.threshold_strict,
    )


MAX_CONFIG_CHARS = 10_000  # a config JSON names at most every field once: far below this


def parse_config_json(text: str | None, *, gen_length: int | None = None, seed: int | None = None) -> DecodeConfig:
    """A DecodeConfig from a JSON object of field names; missing keys take the balanced preset.

    `gen_length` / `seed` are defaults used when the JSON does not set them (the API uses 64 / 0).
    Bounded like `Trace.from_json`: too long, or nested too deep for the parser, is a ValueError.
    """
    text = (text or "").strip() or "{}"
    if len(text) > MAX_CONFIG_CHARS:
        raise ValueError(f"config_json has {len(text)} characters: expected at most {MAX_CONFIG_CHARS}")
    try:
        values = json.loads(text)
    except RecursionError:
        raise ValueError("config_json nests too deeply: expected one flat JSON object of DecodeConfig fields") from None
    except json.JSONDecodeError as err:
        raise ValueError(f"config_json={text[:80]!r} is invalid: expected a JSON object ({err})") from err
    if not isinstance(values, dict):
        raise ValueError(f"config_json={text[:80]!r} is invalid: expected a JSON object of DecodeConfig fields")
    values = dict(values)
    length = values.pop("gen_length", 64 if gen_length is None else gen_length)
    if seed is not None:
        values.setdefault("seed", seed)
    return DecodeConfig.preset("balanced", length, **values)


def preset_config(name: str, gen_length: int) -> DecodeConfig:
    """The config a preset button sets (names in PRESET_GROUPS)."""
    return DecodeConfig.preset(name, gen_length)


def preset_knobs(name: str, gen_length: Any) -> Knobs:
    """Widget values of one preset button for the current gen length: a preset is a whole state.

    Every knob takes the value the preset's config implies (`DecodeConfig.preset`), the ones it
    does not name included: the teaching switches back to correct, no blocks, no staged
    temperature, no top_p filter, no early stop, the stage sliders at their defaults. Only what is
    not a decoding rule stays as it is: the gen length and the seed (`KEEP`).
    """
    knobs = knobs_of(preset_config(name, integral(gen_length)))
    return dataclasses.replace(knobs, gen_length=KEEP, seed=KEEP)


def active_preset(cfg: DecodeConfig) -> str | None:
    """The preset whose button gives `cfg` (any seed), or None for custom settings."""
    for group in PRESET_GROUPS.values():
        for name in group:
            if cfg.replace(seed=0) == preset_config(name, cfg.gen_length):
                return name
    return None
