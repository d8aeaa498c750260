"""Widget values that decode together: the knob just moved wins, and the others follow it.

A control never offers a value that fails with the others as they stand: picking the
dual cache on a canvas without blocks sets a block length; a block length that does not divide the
gen length, or a step count the blocks cannot share, moves to the nearest one that does; a cache
beside a revision rule or the end-of-text early stop turns off whichever of the two was not just
chosen; an insert/delete rule that decides each step itself, just chosen, sets the other knobs as its
preset ships them, and is turned off when another knob moves away from what it needs; a gen length
moved under an active preset keeps that preset (its top_k and steps scale
with the length, as the preset's own table says). `fit_settings` returns the fitted widget values
and, for each change it made, a note for the banner (i18n key and values); the decode then runs
with what the widgets show. Pure: no Gradio, no model.
"""
from __future__ import annotations

import dataclasses
from types import SimpleNamespace
from typing import Any

from dllm_viz.app.handlers.adapters import active_preset, config_to_settings, integral, preset_config, preset_knobs
from dllm_viz.core import rules
from dllm_viz.core.config import DRAWN_SOURCES, DecodeConfig

BLOCK_STEP = 8  # the block length slider's step (layout/play.py); a fitted block length is one of its values
BLOCK_MAX = 128  # the block length slider's end
DUAL_BLOCK = 32  # the block length the dual cache gets when none is set (Fast-dLLM's), at most half the canvas
STEP_SCHEDULES = ("fixed_steps", "linear_time")  # the schedules that read `steps`
PROMPT_ROOM = 16  # tokens of a model's context left for the prompt when the gen length slider ends
LONGEST = 256  # the gen length slider never goes further, whatever the model holds


@dataclasses.dataclass(frozen=True)
class Note:
    """One change `fit_settings` made: the banner's i18n key and its values."""

    key: str
    values: dict[str, Any]


def gen_length_max(max_length: int | None) -> int:
    """The gen length slider's end for a model whose context holds `max_length` tokens: room for a
    prompt of PROMPT_ROOM tokens, a multiple of the slider's step of 8, at most LONGEST."""
    room = min(LONGEST, (max_length or LONGEST) - PROMPT_ROOM)
    return max(8, room - room % 8)


def block_divisor(gen_length: int, want: int) -> int:
    """The block length nearest `want` that divides `gen_length`: a multiple of the slider's step
    where one divides it, at most the slider's end; ties go to the smaller."""
    divisors = [d for d in range(1, min(gen_length, BLOCK_MAX) + 1) if gen_length % d == 0] or [gen_length]
    stepped = [d for d in divisors if d % BLOCK_STEP == 0] or divisors
    return min(stepped, key=lambda d: (abs(d - want), d))


def _changed(settings: dict[str, Any], shown: DecodeConfig | None) -> set[str]:
    """The knobs whose value differs from the trace on show (all of them without one)."""
    if shown is None:
        return set(settings)
    before = config_to_settings(shown)
    return {name for name, value in settings.items() if name in before and before[name] != value}


def _keep_preset(s: dict[str, Any], shown: DecodeConfig | None, changed: set[str]) -> dict[str, Any]:
    """Only the gen length moved under an active preset: that preset at the new length (its top_k and
    steps scale with it), the seed as it is."""
    if shown is None or changed != {"gen_length"}:
        return s
    name = active_preset(shown)
    length = integral(s["gen_length"])
    if name is None or not isinstance(length, int) or length < 1:
        return s
    try:
        preset_config(name, length)
    except ValueError:
        return s
    knobs = {k: v for k, v in dataclasses.asdict(preset_knobs(name, length)).items() if k not in ("gen_length", "seed")}
    return {**s, **knobs}


def _fit_indel(s: dict[str, Any], changed: set[str], g: int, edits_lengths: bool | None) -> list[Note]:
    """An insert/delete rule on a model that cannot edit lengths: turned off. One with needs
    (`requires`) the other knobs do not meet: just chosen, the other knobs as its preset ships them
    (gen length and seed kept); else the rule turned off."""
    name = s["indel"] or "none"
    rule = rules.INDELS.get(name)
    if rule is not None and rule.step is not None and edits_lengths is False:
        s["indel"] = "none"
        return [Note("fit_indel_model", {"r": name})]
    if rule is None or rule.requires is None:
        return []
    probe = SimpleNamespace(**{**s, "revise": s["revise"] or "none", "cache": s["cache"] or "none",
                               "early_stop": bool(s["early_stop"]), "threshold_strict": bool(s["threshold_strict"]),
                               "min_k": integral(s["min_k"])})
    if rule.requires(probe) is None:
        return []
    if "indel" not in changed or not rule.presets:
        s["indel"] = "none"
        return [Note("fit_indel_off", {"r": name})]
    preset = next(iter(rule.presets))
    s.update({k: v for k, v in config_to_settings(preset_config(preset, g)).items() if k not in ("gen_length", "seed")})
    return [Note("fit_indel_preset", {"r": name, "p": preset})]


def fit_settings(settings: dict[str, Any], *, shown: DecodeConfig | None = None,
                 cache_modes: tuple[str, ...] | None = None,
                 edits_lengths: bool | None = None) -> tuple[dict[str, Any], list[Note]]:
    """Widget values (names in `adapters.KNOBS`) that decode together, and a note per change.

    `shown` is the config of the trace on show (what the widgets held before this change: the knob
    that moved is the one that differs); `cache_modes` the caches the picked model runs (None: any);
    `edits_lengths` whether it writes DELETE and SPLIT (None: not known).
    Values that are wrong on their own (a NaN, a negative count) are left for `settings_to_config` to
    refuse by name.
    """
    changed = _changed(settings, shown)
    s = _keep_preset(dict(settings), shown, changed)
    notes: list[Note] = []
    g = integral(s["gen_length"])
    if not isinstance(g, int) or isinstance(g, bool) or g < 1:
        return s, notes
    notes += _fit_indel(s, changed, g, edits_lengths)
    if s["confidence_from"] in DRAWN_SOURCES and s["sample_scope"] != "all":
        s["sample_scope"] = "all"  # the confidence of a drawn token exists only where one was drawn
        notes.append(Note("banner_fixed", {"src": s["confidence_from"]}))
    cache = s["cache"] or "none"
    if cache != "none" and cache_modes is not None and cache not in cache_modes:
        s["cache"] = cache = "none"
        notes.append(Note("fit_cache_model", {"c": settings["cache"]}))
    block = integral(s["block_length"])
    if cache == "dual" and block == 0:
        s["block_length"] = block = block_divisor(g, min(DUAL_BLOCK, max(1, g // 2)))
        notes.append(Note("fit_dual_block", {"b": block}))
    elif isinstance(block, int) and block > 0 and g % block:
        s["block_length"] = fitted = block_divisor(g, block)
        notes.append(Note("fit_block", {"a": block, "g": g, "b": fitted}))
        block = fitted
    if cache != "none" and (s["revise"] or "none") != "none":
        off = "revise" if "cache" in changed and "revise" not in changed else "cache"
        s["revise" if off == "revise" else "cache"] = "none"
        key = "fit_cache_revise" if off == "revise" else "fit_revise_cache"
        notes.append(Note(key, {"c": cache, "r": settings["revise"]}))
        cache = s["cache"] or "none"
    if cache != "none" and s["early_stop"]:
        off = "early_stop" if "cache" in changed and "early_stop" not in changed else "cache"
        if off == "early_stop":
            s["early_stop"] = False
        else:
            s["cache"] = cache = "none"
        notes.append(Note("fit_cache_stop" if off == "early_stop" else "fit_stop_cache", {"c": settings["cache"]}))
    steps = integral(s["steps"])
    if s["schedule"] in STEP_SCHEDULES and isinstance(steps, int) and not isinstance(steps, bool) and steps >= 1:
        blocks = g // block if isinstance(block, int) and block > 0 else 1
        fitted = min(max(blocks, round(steps / blocks) * blocks), g - g % blocks)
        if fitted != steps:
            s["steps"] = fitted
            notes.append(Note("fit_steps", {"a": steps, "b": fitted, "n": blocks, "g": g}))
    return s, notes


def fitted_knobs(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """The widgets `fit_settings` changed, with their new values."""
    return {name: value for name, value in after.items() if before.get(name) != value}
