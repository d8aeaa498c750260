"""What the page's handlers return: small frozen records whose field names are the page's components.

`wiring.wire` maps a record's fields onto `page.Page` attributes by name when the page is built (a
typo fails there, not at run time), and tests read the records without a server. `KEEP` in a
field leaves that component as it is (`wiring.to_gradio` turns it into `gr.skip()`).

A record that shows more than one group of views holds each group whole, as a field typed with a
record of `GROUPS` (`Relabelled.compare: CompareShown`); `fields_of` and `values_of` read such a
field as its group's components, in order. No record inherits from another.
"""
from __future__ import annotations

import dataclasses
import functools
import typing
from dataclasses import dataclass
from typing import Any

from dllm_viz.app.handlers.sweep_grid import SweepResult
from dllm_viz.app.handlers.traces import Shown
from dllm_viz.core import rules


class _Keep:
    """Sentinel: leave this output as it is (wiring.wire turns it into gr.skip())."""

    def __repr__(self) -> str:
        return "KEEP"


KEEP: Any = _Keep()


# ----- the playground tab -------------------------------------------------------------------------
def _record(name: str, doc: str, fields: list[tuple[str, type]]) -> type:
    """A frozen record whose fields come from the knob specs (made here, in this module)."""
    cls = dataclasses.make_dataclass(name, fields, frozen=True)
    cls.__module__, cls.__doc__ = __name__, doc
    return cls


_TYPES = {"int": int, "float": float, "bool": bool, "choice": str, "temperature": float}
# The rule plug-ins' knobs (core.rules), in table order: a widget each, made from its spec.
SCHEDULE_KNOB_SPECS = tuple(k for k in rules.KNOBS if isinstance(rules.OWNER.get(k.name), rules.Schedule))
RULE_KNOB_SPECS = tuple(k for k in rules.KNOBS if isinstance(rules.OWNER.get(k.name), rules.Revision))
# The canvas plug-ins' knobs (the renoise canvas's): a widget each, shown while the model on show writes that canvas;
# an optional number also gets an "auto" switch (on: None, the checkpoint's own value), named after it with "_auto".
CANVAS_KNOB_SPECS = tuple(k for k in rules.KNOBS if isinstance(rules.OWNER.get(k.name), rules.Canvas))
AUTO_OF: dict[str, str] = {k.name: f"{k.name}_auto" for k in CANVAS_KNOB_SPECS
                           if k.optional and k.kind in ("int", "float")}
# The step's own knobs' widgets, laid out by hand (`layout_play`): name and type.
CORE_KNOB_FIELDS: tuple[tuple[str, type], ...] = (
    ("gen_length", int), ("temperature", float), ("block_length", int), ("schedule", str), ("confidence", str),
    ("stages_on", bool), ("t_early", float), ("t_middle", float), ("t_late", float), ("seed", int),
    ("confidence_from", str), ("sample_scope", str), ("rng", str), ("early_stop", bool),
    ("early_stop_threshold", float),
    ("top_p", float),  # the nucleus filter at drawn positions; 1.0 = off (DecodeConfig.top_p = None)
    ("cache", str),  # the approximate key-value cache: none | prefix | dual
    ("cache_drift", bool),  # record each cached step's drift against the exact forward
    ("revise", str),  # the revision rule; its knobs are the plug-ins' below
    ("indel", str),  # the insert/delete rule (it reads the threshold and the edit knobs below)
)
Knobs = _record("Knobs", "The decode-setting widgets' values (the names in `adapters.KNOBS`): the step's own, then "
                         "every rule plug-in's knobs.",
                [*CORE_KNOB_FIELDS, *((k.name, _TYPES[k.kind]) for k in (*SCHEDULE_KNOB_SPECS, *RULE_KNOB_SPECS)),
                 *((name, _TYPES[k.kind] if name == k.name else bool) for k in CANVAS_KNOB_SPECS
                   for name in (k.name, AUTO_OF.get(k.name)) if name)])


@dataclass(frozen=True)
class DecodeFirst:
    """What a decode shows: at once the canvas's handle of the decode in progress (the page reads its
    steps and draws every view from them), at its end the trace, its facts and the banner."""

    trace: Shown
    canvas: Any  # the trace on show by its handle (`wire.canvas_value`): the page draws every view of it
    facts: str
    banner: str
    preset_badge: str
    knobs: Knobs  # the widgets the decode set so that its settings decode together (handlers/fit.py), else KEEP


@dataclass(frozen=True)
class Linked:
    """A link opened (`?model=...&prompt=...&config=...&step=...&pos=...`): the widgets set to its
    settings and its trace decoded (streamed), at its step and position; Compare fitted to its model: the link's
    configs where it names them (page.js then opens its tab or lesson), else the pair the tab offers on that model,
    and the first lesson's text as measured on it."""

    knobs: Knobs
    prompt: Any
    model_pick: Any
    trace: Any
    canvas: Any
    facts: Any
    banner: Any
    preset_badge: Any
    cmp_a: Any
    cmp_b: Any
    lesson_text: Any


@dataclass(frozen=True)
class DecodeStopped:
    """A decode stopped by the visitor: the trace on show again, and the widgets set to its settings."""

    knobs: Knobs
    canvas: Any
    facts: str
    banner: str
    preset_badge: str


RuleStates = _record("RuleStates", "Which revision knobs the chosen rule reads (the others are greyed out).",
                     [(k.name, bool) for k in RULE_KNOB_SPECS])
KnobStates = _record("KnobStates", "Which schedule knobs the chosen schedule reads (the others are greyed out).",
                     [(k.name, bool) for k in SCHEDULE_KNOB_SPECS])
AutoStates = _record("AutoStates", "Which canvas knobs' sliders are live (greyed out while their \"auto\" is on).",
                     [(name, bool) for name in AUTO_OF])
# The page's groups of widgets that show or hide whole with the canvas of the model on show (`adapters.shown_on`):
# the masked canvas's boxes, the preset rows (`adapters.PRESET_GROUPS`) and their headings, each canvas plug-in's box.
BOXES = ("schedule_box", "revise_box", "teaching_box", "article_box", "presets_title", "presets_canvas_title",
         "presets_article", "presets_shipped", "presets_canvas", "scenes_box", "lessons_box", "sweep_box",
         *(f"canvas_{name}" for name in rules.CANVAS_RULES), *(f"sweep_note_{name}" for name in rules.CANVAS_RULES),
         *(f"subtitle_{name}" for name in ("masked", *rules.CANVAS_RULES)))
CanvasShown = _record("CanvasShown", "Which widgets and groups show for the canvas of the model on show (the knobs "
                                     "that apply to it; the others are hidden and not sent).",
                      [(name, bool) for name in (*BOXES, *(f.name for f in dataclasses.fields(Knobs)))])


@dataclass(frozen=True)
class StageStates:
    """Whether the staged-temperature sliders are live (only while staged temperature is on)."""

    t_early: bool
    t_middle: bool
    t_late: bool


@dataclass(frozen=True)
class KSteps:
    k_steps: str


@dataclass(frozen=True)
class Loaded:
    """A stored trace shown (example or upload): every view, and the widgets set to its config."""

    knobs: Knobs
    prompt: str
    trace: Shown
    canvas: Any
    facts: str
    banner: str
    preset_badge: str
    model_pick: Any  # the trace's model, when the picker has it (else KEEP)
    model_prompts: Any


@dataclass(frozen=True)
class SceneSet:
    """A scene button (`handlers/scenes.py`): its model picked, its prompt, its whole settings; a decode follows."""

    knobs: Knobs
    prompt: str
    model_pick: Any
    model_prompts: Any


@dataclass(frozen=True)
class Reseeded:
    seed: int


@dataclass(frozen=True)
class Exported:
    download: str | None


@dataclass(frozen=True)
class Animated:
    anim_file: str | None  # the trace on show as an animation file (handlers/takeout.py)


@dataclass(frozen=True)
class Diffed:
    diff_summary: str  # the trace on show against an uploaded one, in words (views/diff.py)


# ----- the header -------------------------------------------------------------------------------
@dataclass(frozen=True)
class ModelPicked:
    prompt: Any
    model_prompts: str
    lesson_text: Any  # the lesson on show, measured on the picked model (KEEP without one)
    gen_length: Any  # within the picked model's context (KEEP when it is)
    sweep_prompts: Any  # the Sweep runs the picked model on its own example prompts
    cmp_a: Any  # Compare's configs, the picked model's canvas's pair where they set knobs it lacks (else KEEP)
    cmp_b: Any


@dataclass(frozen=True)
class Ranges:
    """The sliders' ends that follow the model on show (set as their `maximum`)."""

    gen_length: int
    sweep_gen_length: int


# ----- the compare tab ----------------------------------------------------------------------------
@dataclass(frozen=True)
class CompareShown:
    """A comparison: the summary, both sides' traces by handle (`wire.side_value`: the page draws their
    canvases and the pair's figures), and their facts."""

    cmp_summary: str
    cmp_canvas_a: Any
    cmp_canvas_b: Any
    cmp_facts_a: str
    cmp_facts_b: str
    cmp_traces: tuple[Shown, Shown] | None


@dataclass(frozen=True)
class CompareCleared:
    """A Compare run failed: no stale pair stays on show beside its error."""

    compare: CompareShown


@dataclass(frozen=True)
class ForkPaired:
    """The fork on show beside the trace it left, in the Compare tab (A the parent, B the fork), their configs in the
    boxes, and a text that says which is which in the lesson's place (no lesson's text stays beside a pair it did not
    make)."""

    compare: CompareShown
    cmp_a: str  # their configs, as the boxes write them (Run decodes them again: a fork's change is no config)
    cmp_b: str
    lesson_key: Any
    lesson_text: str


@dataclass(frozen=True)
class LessonShown:
    """A lesson click: its configs and text filled in, and its ONE compare decoded."""

    compare: CompareShown
    cmp_a: str
    cmp_b: str
    neighbours: int
    lesson_key: str
    lesson_text: str


# ----- the sweep tab ------------------------------------------------------------------------------
@dataclass(frozen=True)
class SweepShown:
    sweep_state: SweepResult | None
    sweep_nfe: Any
    sweep_repeat_3: Any
    sweep_distinct_2: Any
    sweep_mean_logprob: Any
    sweep_table: Any
    sweep_summary: str


# ----- every tab ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Relabelled:
    """Everything rendered in the page's language, after a language switch."""

    compare: CompareShown
    sweep: SweepShown
    canvas: Any  # the same trace, in the new language (the page redraws every view of it)
    facts: str
    banner: str
    preset_badge: str
    lesson_text: str
    k_steps: str
    model_prompts: Any  # the picked model's example prompts (KEEP without a picker)


# Records that other records hold whole, as one field (its components in order).
GROUPS: tuple[type, ...] = (Knobs, CompareShown, SweepShown)


@functools.cache
def _groups_of(cls: type) -> dict[str, type]:
    """Fields of `cls` that hold a record of GROUPS, with that record's type."""
    hints = typing.get_type_hints(cls)
    return {f.name: hints[f.name] for f in dataclasses.fields(cls) if hints[f.name] in GROUPS}


def fields_of(cls: type) -> tuple[str, ...]:
    """Output names of a handler's result type (the components it updates), in order."""
    groups = _groups_of(cls)
    return tuple(name for f in dataclasses.fields(cls)
                 for name in (fields_of(groups[f.name]) if f.name in groups else (f.name,)))


def values_of(obj: Any) -> dict[str, Any]:
    """A result's components and values (a group's fields in its place), values untouched
    (dataclasses.asdict would unpack traces too)."""
    groups = _groups_of(type(obj))
    values: dict[str, Any] = {}
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        values |= values_of(value) if f.name in groups else {f.name: value}
    return values


def keep(cls: type) -> Any:
    """A `cls` record that leaves every component it names as it is."""
    groups = _groups_of(cls)
    return cls(**{f.name: keep(groups[f.name]) if f.name in groups else KEEP for f in dataclasses.fields(cls)})
