"""Widget values <-> `DecodeConfig`: the only place that knows how the page's knobs map to a config.

`settings_to_config` turns the decode-setting widgets' values (keyword names in `KNOBS`) into a
validated `DecodeConfig` (a bad value raises the config's `ValueError`, naming the field); the rule
plug-ins' knobs come from their specs (`core.rules`), so a new rule's knobs need no edit here;
`knobs_of` is its inverse on what it reads, and `preset_knobs` the widget values of a preset
button (a whole state: every knob but the gen length and the seed). On a model whose canvas is not masked
(`rules.canvas_of`: the renoise canvas) only the knobs that apply to it are sent (`canvas_config`), and
`shown_on` says which widgets the page shows for it. Pure functions: no Gradio, no model.
"""
from __future__ import annotations

import dataclasses
import json
import math
from functools import lru_cache
from typing import Any

from dllm_viz.app.handlers.outputs import (AUTO_OF, BOXES, CANVAS_KNOB_SPECS, CORE_KNOB_FIELDS, KEEP, RULE_KNOB_SPECS,
                                           SCHEDULE_KNOB_SPECS, CanvasShown, Knobs, values_of)
from dllm_viz.core import rules
from dllm_viz.core.config import CANVAS_PRESETS, MAX_COUNT, PRESETS, REVISION_PRESETS, SHIPPED_PRESETS, DecodeConfig

# The knobs the rule plug-ins declare (core.rules: the schedules' and the revision rules'), in table order: the
# page makes a widget of each from its spec, greyed out unless the chosen schedule or rule reads it.
SCHEDULE_SLIDERS = tuple(k.name for k in SCHEDULE_KNOB_SPECS)
RULE_SLIDERS = tuple(k.name for k in RULE_KNOB_SPECS)
PLUGIN_KNOBS = SCHEDULE_SLIDERS + RULE_SLIDERS
# The canvas plug-ins' knobs (shown on a model that writes their canvas), each with its "auto" switch where it has one.
CANVAS_KNOBS = tuple(name for k in CANVAS_KNOB_SPECS for name in (k.name, AUTO_OF.get(k.name)) if name)
AUTO = "auto"  # the value of an optional choice's "auto" entry: None, the checkpoint's own
# Widget names of the playground's decode settings, as keyword names of `settings_to_config`: the step's own
# (laid out by hand, `layout_play`), then the plug-ins' knobs.
CORE_KNOBS = tuple(name for name, _ in CORE_KNOB_FIELDS)
KNOBS = CORE_KNOBS + PLUGIN_KNOBS + CANVAS_KNOBS
# Which plug-in knobs each schedule and each revision rule reads; the others are greyed out and not passed on.
SCHEDULE_KNOBS: dict[str, set[str]] = {name: set(p.knob_names) for name, p in rules.SCHEDULES.items()}
RULE_KNOBS: dict[str, set[str]] = {name: set(p.knob_names) for name, p in rules.REVISIONS.items()}
INDEL_KNOBS: dict[str, set[str]] = {name: set(p.knob_names) for name, p in rules.INDELS.items()}
# A knob whose None stands for a value derived from the others shows that value (its slider has no "None").
SHOWN: dict[str, Any] = {"top_k": lambda cfg: cfg.initial_k, "steps": lambda cfg: cfg.total_steps}
# The preset buttons, by group, in the order shown; the page lays out a row per group. A new button
# is a new entry of `core.config.PRESETS` (the article's table) or `SHIPPED_PRESETS` (a reference
# implementation's rule) and a `preset_<name>` label in each language of app/strings/; nothing here
# changes. A new group is a new entry here (its presets known to `DecodeConfig.preset`).
# The "as shipped" group holds the samplers (SHIPPED_PRESETS) and the revision rules as their code ships
# them (REVISION_PRESETS: SGLang's JointThreshold and LowConfidence, WINO, ReMDM, RCR).
# The "canvas" group holds the presets of the canvas plug-ins (`CANVAS_PRESETS`: DiffusionGemma's, SGLang's); the page
# shows the rows whose canvas the model on show writes (`PRESET_CANVAS`).
PRESET_GROUPS: dict[str, tuple[str, ...]] = {"article": tuple(PRESETS),
                                             "shipped": (*SHIPPED_PRESETS, *REVISION_PRESETS),
                                             "canvas": tuple(CANVAS_PRESETS)}
PRESET_CANVAS: dict[str, tuple[str, ...]] = {"article": ("masked",), "shipped": ("masked",),
                                             "canvas": tuple(rules.CANVAS_RULES)}


def integral(value: Any) -> Any:
    """Gradio numbers arrive as floats; pass integral ones on as int, anything else unchanged for validation."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    return value


# What a knob the config will not read must still be (a greyed slider keeps its value, and an API
# call can send anything): what the config would say of a lone value of it, so the error is the config's own.
# A plug-in's knob alone is checked against the largest canvas (`steps`: a stale value above gen_length
# is harmless). Each is its knob's own check against one config of defaults (what a config of that value
# alone would run; 22 configs were made and validated a call before: 0.44 ms, now 0.06).
_STAGES = ("t_early", "t_middle", "t_late")


@lru_cache(maxsize=1)
def _alone_base() -> DecodeConfig:
    return DecodeConfig(gen_length=MAX_COUNT)


def check_alone(s: dict[str, Any]) -> None:
    """Raise the config's own ValueError for a knob of `s` (the widgets' values) that is not allowed on its own:
    the staged temperatures, top-p and every plug-in's knob, read or not."""
    base = _alone_base()
    for i, name in enumerate(_STAGES):
        rules.KNOB["temperature_stages"].check(tuple(s[name] if j == i else 1.0 for j in range(3)), base)
    rules.KNOB["top_p"].check(s["top_p"], base)
    for name in PLUGIN_KNOBS:
        rules.KNOB[name].check(_plugin_value(name, s[name]), base)


def _plugin_value(name: str, value: Any) -> Any:
    """A plug-in knob's widget value as the config takes it: a slider's 4.0 as 4 for an integer knob."""
    kind = rules.KNOB[name].kind
    if kind == "int":
        return integral(value)
    return bool(value) if kind == "bool" else value


def settings_to_config(canvas: str = "masked", **s: Any) -> DecodeConfig:
    """The DecodeConfig for the playground's widget values (names in KNOBS) on a model whose canvas is
    `canvas` (`rules.canvas_of`): only the knobs that apply to it are sent. Raises ValueError.

    Every knob that applies is validated, read or not: a NaN in a slider the schedule ignores is refused as
    surely as one it reads (only its consistency with the other knobs is not asked for).
    """
    missing = set(KNOBS) - set(s)
    if missing:
        raise ValueError(f"settings: missing {sorted(missing)}")
    if canvas != "masked":
        return canvas_config(canvas, s)
    check_alone(s)
    values: dict[str, Any] = {
        "gen_length": integral(s["gen_length"]), "schedule": s["schedule"],
        "confidence": s["confidence"], "temperature": s["temperature"], "seed": integral(s["seed"]),
        "block_length": integral(s["block_length"]) or None,
        "confidence_from": s["confidence_from"], "sample_scope": s["sample_scope"], "rng": s["rng"],
        "early_stop": bool(s["early_stop"]), "early_stop_threshold": s["early_stop_threshold"],
        "top_p": s["top_p"] if s["top_p"] < 1 else None,  # the slider's 1.0 = off (checked above: a number)
        "cache": s["cache"] or "none", "cache_drift": bool(s["cache_drift"]), "revise": s["revise"] or "none",
        "indel": s["indel"] or "none",
    }
    if s["stages_on"]:
        values["temperature_stages"] = (s["t_early"], s["t_middle"], s["t_late"])
    values |= plugin_values(s, values["schedule"], values["revise"], values["indel"])
    return DecodeConfig.from_dict(values)


def canvas_config(canvas: str, s: dict[str, Any]) -> DecodeConfig:
    """The DecodeConfig of a canvas plug-in's widgets (`canvas`: "renoise"): the step's knobs that apply to it
    (gen_length, seed) and its plug-in's, each None where its "auto" is on (the checkpoint's own value). Each
    value is checked alone first, "auto" or not, so that the error names the knob and its range."""
    if canvas not in rules.CANVAS_RULES:
        raise ValueError(f"canvas={canvas!r} is invalid: expected masked | {' | '.join(rules.CANVAS_RULES)}")
    values = {name: integral(s[name]) for name in CORE_KNOBS if name in rules.KNOB and canvas in rules.applies(name)}
    for knob in CANVAS_KNOB_SPECS:
        if canvas not in rules.applies(knob.name):
            continue
        value = None if s[knob.name] == AUTO and knob.kind == "choice" else _plugin_value(knob.name, s[knob.name])
        DecodeConfig(**{knob.name: value})  # alone: the config's own error, naming the knob and its range
        auto = AUTO_OF.get(knob.name)
        values[knob.name] = None if auto and s[auto] else value
    return DecodeConfig.from_dict(values)


def plugin_values(s: dict[str, Any], schedule: str, rule: str, indel: str = "none") -> dict[str, Any]:
    """The config fields of the plug-ins' widgets: the knobs the chosen schedule, revision rule and insert/delete
    rule read (the others keep their defaults, greyed out on the page)."""
    used = SCHEDULE_KNOBS.get(schedule, set()) | RULE_KNOBS.get(rule, set()) | INDEL_KNOBS.get(indel, set())
    return {name: _plugin_value(name, s[name]) for name in PLUGIN_KNOBS if name in used}


def config_to_settings(cfg: DecodeConfig) -> dict[str, Any]:
    """Widget values that reproduce `cfg` (the inverse of `settings_to_config` on what it reads)."""
    return values_of(knobs_of(cfg))


def knobs_of(cfg: DecodeConfig) -> Knobs:
    stages = cfg.temperature_stages
    return Knobs(
        gen_length=cfg.gen_length, temperature=cfg.temperature, block_length=cfg.block_length or 0,
        schedule=cfg.schedule, confidence=cfg.confidence, stages_on=stages is not None,
        t_early=stages[0] if stages else 1.2, t_middle=stages[1] if stages else 1.0,
        t_late=stages[2] if stages else 0.7, seed=cfg.seed, confidence_from=cfg.confidence_from,
        sample_scope=cfg.sample_scope, rng=cfg.rng, early_stop=cfg.early_stop,
        early_stop_threshold=cfg.early_stop_threshold, top_p=cfg.top_p if cfg.top_p is not None else 1.0,
        cache=cfg.cache, cache_drift=cfg.cache_drift, revise=cfg.revise, indel=cfg.indel,
        **{name: SHOWN[name](cfg) if name in SHOWN else getattr(cfg, name) for name in PLUGIN_KNOBS},
        **canvas_knobs(cfg),
    )


def canvas_knobs(cfg: DecodeConfig) -> dict[str, Any]:
    """The canvas plug-ins' widget values for `cfg`: a knob at None shows "auto" (a choice) or its "auto" switch
    on, its slider at the value its plug-in shows for it (`Canvas.shown`, else the slider's start)."""
    out: dict[str, Any] = {}
    for knob in CANVAS_KNOB_SPECS:
        value = getattr(cfg, knob.name)
        if knob.kind == "choice":
            out[knob.name] = AUTO if value is None else value
            continue
        if knob.name in AUTO_OF:
            out[AUTO_OF[knob.name]] = value is None
        if value is None:
            value = rules.OWNER[knob.name].shown.get(knob.name, knob.slider[0] if knob.slider else knob.lo)
        out[knob.name] = value
    return out


def shown_on(canvas: str) -> CanvasShown:
    """Which widgets and groups the page shows on a model whose canvas is `canvas`: the knobs that apply to it
    (a staged temperature's switch and sliders are `temperature_stages`; an "auto" switch is its knob's), the
    preset rows of that canvas (`PRESET_CANVAS`), the boxes of its knobs (`BOX_CANVASES`)."""
    def knob_of(widget: str) -> str:
        auto = {a: name for name, a in AUTO_OF.items()}
        return auto.get(widget) or ("temperature_stages" if widget in STAGE_WIDGETS else widget)

    widgets = {name: canvas in rules.applies(knob_of(name)) for name in KNOBS}
    return CanvasShown(**{name: canvas in BOX_CANVASES[name] for name in BOXES}, **widgets)


STAGE_WIDGETS = ("stages_on", "t_early", "t_middle", "t_late")  # the widgets of `temperature_stages`
# The canvases each group of widgets (`outputs.BOXES`) applies to: the schedule, revision and teaching boxes hold
# masked knobs only; a preset row its presets' canvas (and the headings theirs); a canvas plug-in's box its canvas.
BOX_CANVASES: dict[str, tuple[str, ...]] = {
    "schedule_box": ("masked",), "revise_box": ("masked",), "teaching_box": ("masked",), "presets_title": ("masked",),
    "article_box": ("masked",),  # what the article's table is: the masked presets' note
    "scenes_box": ("masked",),  # the revision rules' scenes: masked decodes (a click picks the scene's model)
    "lessons_box": ("masked",),  # Compare's lessons: masked pairs (a canvas plug-in's model has its own pair)
    "sweep_box": ("masked",),  # the Sweep's grid: masked knobs (a canvas plug-in's model shows its note instead)
    **{f"sweep_note_{name}": (name,) for name in rules.CANVAS_RULES},
    "subtitle_masked": ("masked",), **{f"subtitle_{name}": (name,) for name in rules.CANVAS_RULES},  # the header's
    "presets_canvas_title": tuple(rules.CANVAS_RULES),
    **{f"presets_{group}": canvases for group, canvases in PRESET_CANVAS.items()},
    **{f"canvas_{name}": (name,) for name in rules.CANVAS_RULES},
}


MAX_CONFIG_CHARS = 10_000  # a config JSON names at most every field once: far below this


def parse_config_json(text: str | None, *, gen_length: int | None = None, seed: int | None = None,
                      canvas: str = "masked") -> DecodeConfig:
    """A DecodeConfig from a JSON object of field names for a model whose canvas is `canvas`: missing keys take
    the balanced preset on a masked canvas, and DecodeConfig's defaults on a canvas plug-in's (its knobs "auto":
    the checkpoint's own values; the masked presets' knobs do not apply to it).

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
    if canvas != "masked":
        return DecodeConfig.from_dict({"gen_length": length, **values})
    return DecodeConfig.preset("balanced", length, **values)


def config_json(config: DecodeConfig) -> str:
    """A masked canvas's `config` as Compare's config box writes it, `parse_config_json`'s inverse: the fields that
    differ from the balanced preset (the gen length and the seed are the Playground's)."""
    base = DecodeConfig.preset("balanced", config.gen_length).to_dict()
    return json.dumps({k: v for k, v in config.to_dict().items() if k not in ("gen_length", "seed") and v != base[k]})


@lru_cache(maxsize=1024)
def preset_config(name: str, gen_length: int) -> DecodeConfig:
    """The config a preset button sets (names in PRESET_GROUPS), made once per name and length (configs are
    frozen): every trace shown asks which preset gives it (`active_preset`)."""
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
    seedless = cfg if cfg.seed == 0 else cfg.replace(seed=0)
    for group in PRESET_GROUPS.values():
        for name in group:
            if seedless == preset_config(name, cfg.gen_length):
                return name
    return None
