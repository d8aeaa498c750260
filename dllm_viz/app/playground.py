"""The playground's handlers: plain widget values in, plain values out. No Gradio here.

`Playground` holds one method per page action (decode, select, load a trace, compare, sweep, the
`/generate` API). Each takes keyword arguments named after the page's components (`ui.Page`) and
returns a small frozen dataclass whose field names are components too, so `ui.wire` maps both
sides by name when the page is built (a typo fails there, not at run time) and tests call the
handlers without a server. `KEEP` leaves an output as it is. Every handler computes once: one
call to `run` per decode event, one parse per uploaded file.

The model never appears here: decodes go through the injected `run` (`core.decoder.Runner`), and
everything else is rendered from stored `Trace`s by `render` and `figures`.
"""
from __future__ import annotations

import concurrent.futures
import dataclasses
import hashlib
import html
import itertools
import json
import math
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from dllm_viz.app import figures, render, world_view
from dllm_viz.app.i18n import t
from dllm_viz.app.lessons import LESSONS, NEIGHBOURS, load_measured, measured_table
from dllm_viz.app.sweep import METRICS, SweepGrid, SweepResult, run_sweep, total_steps
from dllm_viz.app.world_lessons import load_world_pairs
from dllm_viz.app.world_lessons import table as world_table
from dllm_viz.core.analysis import divergence, frame_count, k_sequence, prompt_text
from dllm_viz.core.config import DRAWN_SOURCES, PRESETS, SHIPPED_PRESETS, DecodeConfig
from dllm_viz.core.decoder import Runner
from dllm_viz.core.trace import Trace
from dllm_viz.core.trace_schema import MAX_TRACE_BYTES


class _Keep:
    """Sentinel: leave this output as it is (ui.wire turns it into gr.skip())."""

    def __repr__(self) -> str:
        return "KEEP"


KEEP: Any = _Keep()

# Widget names of the playground's decode settings, as keyword names of `settings_to_config`.
KNOBS = (
    "gen_length", "temperature", "top_k", "decay", "min_k", "steps", "threshold", "block_length",
    "schedule", "confidence", "stages_on", "t_early", "t_middle", "t_late", "seed",
    "confidence_from", "sample_scope", "rng", "early_stop", "early_stop_threshold", "top_p",
)
# Which knobs a schedule reads; the others are greyed out and not passed to DecodeConfig.
SCHEDULE_KNOBS = {
    "topk_decay": {"top_k", "decay"}, "adaptive": {"top_k"}, "fixed_steps": {"steps"}, "threshold": {"threshold"},
    "linear_time": {"steps"},
}
SCHEDULE_SLIDERS = ("top_k", "decay", "steps", "threshold")
# The preset buttons, by group, in the order shown. One place: a new group (or button) goes here
# and in `preset_config`; the page lays out a row per group.
PRESET_GROUPS: dict[str, tuple[str, ...]] = {"article": tuple(PRESETS), "shipped": tuple(SHIPPED_PRESETS)}
# Teaching switches: (config field, its correct value, the Compare lesson that shows it).
LESSON_LINK = "dv-open-lesson-"  # href prefix of a banner link that opens a Compare lesson (page.js)
SWITCHES = (("confidence_from", "raw", "polluted"), ("sample_scope", "selected", "global"), ("rng", "per_request", "rng"))
EXPORTS_KEPT = 64  # trace files kept in the export directory
PROGRESS_EVERY = 0.25  # seconds between progress-bar updates during a sweep
# Colour range per sweep metric, fixed so that small differences look small: (low, high) or a
# function of gen_length for the step count.
SWEEP_RANGES: dict[str, Callable[[int], tuple[float, float]]] = {
    "nfe": lambda g: (1.0, float(max(2, g))), "repeat_3": lambda g: (0.0, 0.5),
    "distinct_2": lambda g: (0.5, 1.0), "mean_logprob": lambda g: (-10.0, 0.0),
}


# ----- outputs: field names are the page's components ---------------------------------------------
@dataclass(frozen=True)
class Knobs:
    """The decode-setting widgets' values (the names in KNOBS)."""

    gen_length: int
    temperature: float
    top_k: int
    decay: float
    min_k: int
    steps: int
    threshold: float
    block_length: int
    schedule: str
    confidence: str
    stages_on: bool
    t_early: float
    t_middle: float
    t_late: float
    seed: int
    confidence_from: str
    sample_scope: str
    rng: str
    early_stop: bool
    early_stop_threshold: float
    top_p: float  # the nucleus filter at drawn positions; 1.0 = off (DecodeConfig.top_p = None)


@dataclass(frozen=True)
class DecodeFirst:
    """What a decode shows first: the canvas, the heatmap and the facts (the rest follows)."""

    trace: Trace
    cursor: tuple[int, int]  # (frame, position) shared by every view
    canvas: str
    heatmap: Any
    facts: str
    banner: str
    preset_badge: str
    sample_scope: str  # set to "all" when confidence_from="sampled" needs it


@dataclass(frozen=True)
class DecodeRest:
    """The rest of a trace's views: order map, per-step plot, inspector."""

    order: Any
    steps_fig: Any
    insp_plot: str
    insp_text: str


@dataclass(frozen=True)
class TraceFigures(DecodeRest):
    """A stored trace's figures and inspector, drawn after its canvas (an upload or an example shows
    its text first: the heatmap of a long trace takes the browser longer than the text)."""

    heatmap: Any


@dataclass(frozen=True)
class Selected:
    """The inspector for the cursor the page sent."""

    cursor: tuple[int, int]
    insp_plot: str
    insp_text: str


@dataclass(frozen=True)
class PresetKnobs:
    temperature: float
    top_k: int
    decay: float
    schedule: str
    stages_on: bool
    top_p: float  # 1.0 = off; Dream's rule filters at 0.95, the article's presets do not filter
    # What a shipped sampler's rule sets beyond the article's table (KEEP for the article's presets).
    steps: Any = KEEP
    threshold: Any = KEEP
    min_k: Any = KEEP
    block_length: Any = KEEP
    confidence: Any = KEEP
    confidence_from: Any = KEEP
    sample_scope: Any = KEEP


@dataclass(frozen=True)
class KnobStates:
    """Which schedule sliders the chosen schedule reads (the others are greyed out)."""

    top_k: bool
    decay: bool
    steps: bool
    threshold: bool


@dataclass(frozen=True)
class KSteps:
    k_steps: str


@dataclass(frozen=True)
class Loaded(Knobs):
    """A stored trace shown (example or upload): every view, and the widgets set to its config."""

    prompt: str
    trace: Trace
    cursor: tuple[int, int]
    canvas: str
    facts: str
    banner: str
    preset_badge: str


@dataclass(frozen=True)
class Reseeded:
    seed: int


@dataclass(frozen=True)
class Exported:
    download: str | None


@dataclass(frozen=True)
class CompareShown:
    """A comparison's text: summary, both canvases and facts (its figures follow, `CompareFigures`)."""

    cmp_summary: str
    cmp_canvas_a: str
    cmp_canvas_b: str
    cmp_facts_a: str
    cmp_facts_b: str
    cmp_traces: tuple[Trace, Trace] | None


@dataclass(frozen=True)
class CompareFigures:
    """A comparison's figures, drawn from the stored pair once its canvases are on the page."""

    cmp_orders: Any
    cmp_heat_a: Any
    cmp_heat_b: Any
    cmp_steps_a: Any
    cmp_steps_b: Any


@dataclass(frozen=True)
class LessonShown(CompareShown):
    """A lesson click: its configs and text filled in, and its ONE compare decoded."""

    cmp_a: str
    cmp_b: str
    neighbours: int
    lesson_key: str
    lesson_text: str


@dataclass(frozen=True)
class SweepShown:
    sweep_state: SweepResult | None
    sweep_nfe: Any
    sweep_repeat_3: Any
    sweep_distinct_2: Any
    sweep_mean_logprob: Any
    sweep_table: Any
    sweep_summary: str


@dataclass(frozen=True)
class Relabelled(CompareShown, CompareFigures, SweepShown):
    """Everything rendered in the page's language, after a language switch."""

    canvas: str
    heatmap: Any
    facts: str
    banner: str
    preset_badge: str
    order: Any
    steps_fig: Any
    insp_plot: str
    insp_text: str
    lesson_text: str
    k_steps: str


def fields_of(cls: type) -> tuple[str, ...]:
    """Output names of a handler's result type (the components it updates), in order."""
    return tuple(f.name for f in dataclasses.fields(cls))


def shallow(obj: Any) -> dict[str, Any]:
    """A result's fields as a dict, values untouched (dataclasses.asdict would unpack traces too)."""
    return {name: getattr(obj, name) for name in fields_of(type(obj))}


# ----- adapters: widget values <-> DecodeConfig ------------------------------------------------
def _integral(value: Any) -> Any:
    """Gradio numbers arrive as floats; pass integral ones on as int, anything else unchanged for validation."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    return value


def settings_to_config(**s: Any) -> DecodeConfig:
    """The DecodeConfig for the playground's widget values (names in KNOBS). Raises ValueError."""
    missing = set(KNOBS) - set(s)
    if missing:
        raise ValueError(f"settings: missing {sorted(missing)}")
    schedule = s["schedule"]
    used = SCHEDULE_KNOBS.get(schedule, set())
    values: dict[str, Any] = {
        "gen_length": _integral(s["gen_length"]), "schedule": schedule,
        "confidence": s["confidence"], "temperature": s["temperature"],
        "min_k": _integral(s["min_k"]), "seed": _integral(s["seed"]),
        "block_length": _integral(s["block_length"]) or None,
        "confidence_from": s["confidence_from"], "sample_scope": s["sample_scope"], "rng": s["rng"],
        "early_stop": bool(s["early_stop"]), "early_stop_threshold": s["early_stop_threshold"],
        "top_p": s["top_p"] if s["top_p"] is not None and s["top_p"] < 1 else None,  # the slider's 1.0 = off
    }
    for name in ("top_k", "steps"):
        if name in used:
            values[name] = _integral(s[name])
    for name in ("decay", "threshold"):
        if name in used:
            values[name] = s[name]
    if s["stages_on"]:
        values["temperature_stages"] = (s["t_early"], s["t_middle"], s["t_late"])
    return DecodeConfig.from_dict(values)


def config_to_settings(cfg: DecodeConfig) -> dict[str, Any]:
    """Widget values that reproduce `cfg` (the inverse of `settings_to_config` on what it reads)."""
    return shallow(knobs_of(cfg))


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
    )


def parse_config_json(text: str | None, *, gen_length: int | None = None, seed: int | None = None) -> DecodeConfig:
    """A DecodeConfig from a JSON object of field names; missing keys take the balanced preset.

    `gen_length` / `seed` are defaults used when the JSON does not set them (the API uses 64 / 0).
    """
    text = (text or "").strip() or "{}"
    try:
        values = json.loads(text)
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


def active_preset(cfg: DecodeConfig) -> str | None:
    """The preset whose button gives `cfg` (any seed), or None for custom settings."""
    for group in PRESET_GROUPS.values():
        for name in group:
            if cfg.replace(seed=0) == preset_config(name, cfg.gen_length):
                return name
    return None


def preset_badge(cfg: DecodeConfig, lang: str, *, example: str | None = None) -> str:
    """Which preset is active ("custom" once a knob moved off every preset); for an example trace,
    that these are its own settings, so a first Run never inherits them unseen."""
    preset = active_preset(cfg)
    text = t("preset_active", lang, p=t(f"preset_{preset}", lang)) if preset else t("preset_custom", lang)
    if example is not None:
        text = t("preset_example", lang, e=example_label(example, lang), p=text)
    return f'<span class="dv-badge">{html.escape(text)}</span>'


def random_seed() -> int:
    """A fresh seed for the "new seed" button, from a non-deterministically seeded torch.Generator."""
    return torch.Generator().seed() % (2**31)


def _clamp_position(position: Any, trace: Trace) -> int:
    return max(0, min(int(position or 0), max(0, trace.config.gen_length - 1)))


# ----- handlers ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class ModelChoice:
    """One entry of the model picker: how to decode with it and prompts in its language."""

    run: Runner
    prompts: tuple[str, ...]  # example prompts; the first fills the prompt box when picked
    name: str  # the model's name (what traces record)


@dataclass
class ModelPicked:
    prompt: Any
    model_prompts: str


class Playground:
    """Every event handler of the page; plain Python values in, plain values out."""

    def __init__(self, run: Runner, *, examples: Sequence[tuple[str, Trace]] = (), export_dir: str | Path | None = None,
                 new_seed: Callable[[], int] = random_seed, models: dict[str, ModelChoice] | None = None) -> None:
        self.run = run
        self.models = dict(models or {})  # picker label -> ModelChoice; an unknown or empty pick decodes with `run`
        self.examples = dict(examples)
        self.export_dir = Path(export_dir or tempfile.mkdtemp(prefix="dllm-viz-"))
        self.export_dir.mkdir(parents=True, exist_ok=True)
        self.new_seed = new_seed
        self.measured = load_measured()

    # --- views of one trace ---------------------------------------------------------------------
    def first_views(self, trace: Trace, *, lang: str, position: int, autoplay: bool = False) -> dict[str, Any]:
        """Canvas (at the end, or at the start when it will play), facts, preset badge."""
        pos = _clamp_position(position, trace)
        frame = 0 if autoplay else frame_count(trace)
        canvas = render.player_html(trace, lang=lang, frame=frame, selected=pos,
                                    order_width=figures.order_width(trace.config.gen_length), autoplay=autoplay)
        return {"cursor": (frame, pos), "canvas": canvas, "facts": render.facts_html(trace, lang),
                "preset_badge": preset_badge(trace.config, lang)}

    def rest(self, *, trace: Trace | None, lang: str, cursor: tuple[int, int] | None, temperature: float) -> DecodeRest:
        """The rest of the view after a decode: order map, per-step plot, inspector."""
        if trace is None:
            return DecodeRest(KEEP, KEEP, KEEP, KEEP)
        frame, pos = cursor or (frame_count(trace), 0)
        plot, text = self._inspector(trace, lang, frame, pos, temperature)
        return DecodeRest(order=figures.order_map(trace, lang=lang), steps_fig=figures.steps_plot(trace, lang=lang),
                          insp_plot=plot, insp_text=text)

    def trace_figures(self, *, trace: Trace | None, lang: str, cursor: tuple[int, int] | None,
                      temperature: float) -> TraceFigures:
        """A shown trace's heatmap and the rest of its views (after `upload` or `example`)."""
        if trace is None:
            return TraceFigures(*(KEEP for _ in fields_of(TraceFigures)))
        rest = self.rest(trace=trace, lang=lang, cursor=cursor, temperature=temperature)
        return TraceFigures(**shallow(rest), heatmap=figures.confidence_heatmap(trace, lang=lang))

    def _inspector(self, trace: Trace, lang: str, frame: int, position: int, temperature: float) -> tuple[str, str]:
        if trace.config.gen_length == 0:
            return "", ""
        pos = _clamp_position(position, trace)
        insp = render.inspect(trace, pos, int(frame), float(temperature), lang=lang)
        rules = world_view.inspector_lines(trace, pos)  # world model: the checker rules this token breaks
        return (render.inspector_html(insp, lang),
                f"{insp.explanation}\n\n{rules + chr(10) * 2 if rules else ''}"
                f"<small>{render.inspector_note(trace, insp, lang)}</small>")

    # --- model picker ---------------------------------------------------------------------------
    def _runner(self, model_pick: str | None) -> Runner:
        if not model_pick or not self.models:
            return self.run
        if model_pick not in self.models:
            raise ValueError(f"model_pick={model_pick!r} is invalid: expected one of {', '.join(self.models)}")
        return self.models[model_pick].run

    def pick_model(self, *, model_pick: str) -> ModelPicked:
        """A model was picked: its first example prompt goes in the prompt box, the others are listed."""
        self._runner(model_pick)  # ValueError for an unknown label
        prompts = self.models[model_pick].prompts
        return ModelPicked(prompt=prompts[0] if prompts else KEEP, model_prompts=model_prompts_md(prompts))

    def _is_world(self, model_pick: str | None) -> bool:
        choice = self.models.get(model_pick or "")
        return choice is not None and choice.name in world_view.CHECKED_MODELS

    # --- playground -------------------------------------------------------------------------------
    def decode(self, *, prompt: str, lang: str, cursor: tuple[int, int] | None, model_pick: str | None = None,
               **settings: Any) -> DecodeFirst:
        """Decode the prompt with the widget settings (one call to `run`); the first part of the view.

        With a teaching switch on, the correct config decodes in the same batch, and the banner
        says what the switch changed against it (or that alone it changes nothing here).
        """
        notes = []
        if settings.get("confidence_from") in DRAWN_SOURCES and settings.get("sample_scope") != "all":
            settings = {**settings, "sample_scope": "all"}  # the invalid pairs are never decoded
            notes.append(t("banner_fixed", lang, src=settings["confidence_from"]))
        cfg = settings_to_config(**settings)
        correct = cfg.replace(**{name: ok for name, ok, _ in SWITCHES})
        on = [(name, lesson) for name, ok, lesson in SWITCHES if getattr(cfg, name) != ok]
        traces = self._runner(model_pick)([prompt or ""] * (2 if on else 1), [cfg, correct] if on else [cfg])
        trace = traces[0]
        if on:
            notes.append(self._banner(trace, traces[1], on, lang))
        pos = cursor[1] if cursor else 0
        return DecodeFirst(trace=trace, banner="\n\n".join(notes), sample_scope=cfg.sample_scope,
                           heatmap=figures.confidence_heatmap(trace, lang=lang),
                           **self.first_views(trace, lang=lang, position=pos))

    @staticmethod
    def _banner(trace: Trace, correct: Trace, on: list[tuple[str, str]], lang: str) -> str:
        switches = ", ".join(f"{name} = {getattr(trace.config, name)}" for name, _ in on)
        d = divergence(trace, correct)
        if d.first_step is None and trace.token_ids == correct.token_ids:
            key = on[0][1]
            # page.js turns a click on this link into: the Compare tab, then that lesson's button.
            return t("banner_same", lang, sw=switches, lesson=LESSONS[key].text("title", lang),
                     href=f"#{LESSON_LINK}{key}")
        return t("banner_diff", lang, sw=switches, n=len(d.order_differs), g=trace.config.gen_length,
                 t=len(d.token_differs))

    def revert(self, *, trace: Trace | None) -> Knobs:
        """After a failed decode: the widgets go back to the settings of the trace on show."""
        if trace is None:
            return Knobs(**{name: KEEP for name in KNOBS})
        return knobs_of(trace.config)

    def select(self, *, trace: Trace | None, lang: str, temperature: float, frame: int, position: int) -> Selected:
        """The page moved its cursor (a click, a scrub, a pause): the inspector at that step and position."""
        if trace is None:
            return Selected(KEEP, KEEP, KEEP)
        f = max(0, min(int(frame), frame_count(trace)))
        pos = _clamp_position(position, trace)
        plot, text = self._inspector(trace, lang, f, pos, temperature)
        return Selected(cursor=(f, pos), insp_plot=plot, insp_text=text)

    def preset(self, name: str, *, gen_length: int) -> PresetKnobs:
        """Widget values of one preset for the current gen length."""
        cfg = preset_config(name, _integral(gen_length))
        shipped = {}
        if name in SHIPPED_PRESETS:
            shipped = dict(steps=cfg.total_steps, threshold=cfg.threshold, min_k=cfg.min_k,
                           block_length=cfg.block_length or 0, confidence=cfg.confidence,
                           confidence_from=cfg.confidence_from, sample_scope=cfg.sample_scope)
        return PresetKnobs(temperature=cfg.temperature, top_k=cfg.initial_k, decay=cfg.decay, schedule=cfg.schedule,
                           stages_on=False, top_p=cfg.top_p if cfg.top_p is not None else 1.0, **shipped)

    def knob_states(self, *, schedule: str) -> KnobStates:
        used = SCHEDULE_KNOBS.get(schedule, set())
        return KnobStates(**{k: k in used for k in SCHEDULE_SLIDERS})

    def k_steps(self, *, lang: str, **settings: Any) -> KSteps:
        """The k each step will confirm under the current knobs (no decode): shows dead zones of a knob."""
        try:
            cfg = settings_to_config(**settings)
        except ValueError:
            return KSteps(KEEP)
        ks = k_sequence(cfg, limit=24)
        if ks is None:
            return KSteps(f'<span class="dv-ksteps">{t("k_threshold", lang)}</span>')
        total = len(k_sequence(cfg, limit=10**6) or [])
        shown = ", ".join(map(str, ks)) + (", …" if total > len(ks) else "")
        return KSteps(f'<span class="dv-ksteps">{t("k_sequence", lang, ks=shown, n=total)}</span>')

    def export(self, *, trace: Trace | None) -> Exported:
        """Write the trace JSON to a file named by its content hash; the path to download.

        Gradio copies the file into its own cache, so only the newest EXPORTS_KEPT files are kept here.
        """
        if trace is None:
            return Exported(None)
        text = trace.to_json()
        path = self.export_dir / f"trace-{hashlib.sha1(text.encode()).hexdigest()[:12]}.json"
        path.write_text(text, encoding="utf-8")
        files = sorted(self.export_dir.glob("trace-*.json"), key=lambda p: p.stat().st_mtime)
        for old in files[:-EXPORTS_KEPT]:
            old.unlink(missing_ok=True)
        return Exported(str(path))

    def load_trace(self, trace: Trace, *, lang: str, temperature: float | None = None, autoplay: bool = False,
                   example: str | None = None) -> Loaded:
        """Show a stored trace (uploaded or example) and set the widgets to its config; its figures
        follow (`trace_figures`)."""
        first = self.first_views(trace, lang=lang, position=0, autoplay=autoplay)
        if example is not None:
            first["preset_badge"] = preset_badge(trace.config, lang, example=example)
        return Loaded(**shallow(knobs_of(trace.config)), prompt=prompt_text(trace), trace=trace, banner="", **first)

    def upload(self, *, upload: str | None, lang: str) -> Loaded:
        """Replay an uploaded trace file: parsed once, shown without the model."""
        if not upload:
            raise ValueError("trace file: nothing was uploaded")
        try:
            size = Path(upload).stat().st_size
            if size > MAX_TRACE_BYTES:  # refused before it is read (app.py also caps uploads at this size)
                raise ValueError(f"trace file has {size} bytes: this viewer reads at most {MAX_TRACE_BYTES}")
            text = Path(upload).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as err:
            raise ValueError(t("err_trace", lang, e=err)) from err
        return self.load_trace(Trace.from_json(text), lang=lang)

    def example(self, *, example: str, lang: str) -> Loaded:
        if example not in self.examples:
            raise ValueError(f"example={example!r} is invalid: expected one of {' | '.join(self.examples)}")
        return self.load_trace(self.examples[example], lang=lang, example=example)

    def reseed(self) -> Reseeded:
        return Reseeded(self.new_seed())

    # --- compare -------------------------------------------------------------------------------
    def lesson(self, key: str, *, prompt: str, seed: int, gen_length: int, lang: str,
               model_pick: str | None = None) -> LessonShown:
        """One lesson click: fill its configs and text, and decode its compare once."""
        lesson = LESSONS[key]
        a, b = json.dumps(lesson.a), json.dumps(lesson.b)
        shown = self.compare(prompt=prompt, seed=seed, gen_length=gen_length, cmp_a=a, cmp_b=b,
                             neighbours=lesson.neighbours, lang=lang, model_pick=model_pick)
        text = self.lesson_text(key, lang)
        if self._is_world(model_pick):  # the same pair measured as correctness on the world model
            text += "\n\n" + world_lesson_table(key)
        return LessonShown(**shallow(shown), cmp_a=a, cmp_b=b,
                           neighbours=lesson.neighbours, lesson_key=key, lesson_text=text)

    def lesson_text(self, key: str | None, lang: str) -> str:
        if not key:
            return ""
        lesson = LESSONS[key]
        parts = [f"### {lesson.text('title', lang)}", f"**{t('look_for', lang)}.** {lesson.text('look_for', lang)}"]
        numbers = self.measured.get(key)
        if numbers:
            parts.append(f"**{t('measured', lang)}.** {lesson.text('measured', lang)}")
            parts.append(measured_table(numbers, lang))
        return "\n\n".join(parts)

    def compare(self, *, prompt: str, seed: int, gen_length: int, cmp_a: str, cmp_b: str, neighbours: int,
                lang: str, model_pick: str | None = None) -> CompareShown:
        """Decode A and B on the same prompt and seed (in one batch) and show where they diverge."""
        seed, gen_length = _integral(seed), _integral(gen_length)
        a = parse_config_json(cmp_a, gen_length=gen_length, seed=seed)
        b = parse_config_json(cmp_b, gen_length=gen_length, seed=seed)
        if a.gen_length != b.gen_length:
            raise ValueError(f"gen_length={b.gen_length} of config B is invalid: expected A's gen_length={a.gen_length}")
        k = max(0, min(int(neighbours or 0), len(NEIGHBOURS)))
        group = [prompt or "", *NEIGHBOURS[:k]]
        # With neighbours, each side also decodes alone in the same call, to show whether batching changed it.
        solo = [prompt or ""] * 2 if k else []
        run = self._runner(model_pick)
        traces = run(group * 2 + solo, [a] * len(group) + [b] * len(group) + ([a, b] if k else []))
        ta, tb = traces[0], traces[len(group)]
        summary = render.divergence_text(ta, tb, lang)
        if k:
            same = lambda x, y: t("yes" if x.token_ids == y.token_ids else "no", lang)  # noqa: E731
            summary += "\n\n" + t("batch_note", lang, n=k, a=same(ta, traces[-2]), b=same(tb, traces[-1]))
        return self.compare_view((ta, tb), summary=summary, lang=lang)

    def compare_view(self, pair: tuple[Trace, Trace] | None, *, summary: str, lang: str) -> CompareShown:
        if pair is None:
            return CompareShown(*(KEEP for _ in fields_of(CompareShown)))
        ta, tb = pair
        diff = set(divergence(ta, tb).token_differs)
        canvas = lambda tr, side: render.side_label(side, lang) + render.canvas_html(tr, lang=lang, diff=diff, legend=False)  # noqa: E731
        return CompareShown(
            cmp_summary=summary, cmp_canvas_a=canvas(ta, "side_a"), cmp_canvas_b=canvas(tb, "side_b"),
            cmp_facts_a=render.facts_html(ta, lang, side="side_a"), cmp_facts_b=render.facts_html(tb, lang, side="side_b"),
            cmp_traces=(ta, tb),
        )

    def compare_figures(self, *, cmp_traces: tuple[Trace, Trace] | None, lang: str) -> CompareFigures:
        """The stored comparison's figures (after `compare` or `lesson`; no model call)."""
        if cmp_traces is None:
            return CompareFigures(*(KEEP for _ in fields_of(CompareFigures)))
        ta, tb = cmp_traces
        rows = max(len(ta.steps), len(tb.steps))  # both heatmaps on one height and one scale
        return CompareFigures(
            cmp_orders=figures.compare_orders(ta, tb, lang=lang),
            cmp_heat_a=figures.confidence_heatmap(ta, lang=lang, rows=rows, side="side_a"),
            cmp_heat_b=figures.confidence_heatmap(tb, lang=lang, rows=rows, side="side_b"),
            cmp_steps_a=figures.steps_plot(ta, lang=lang, side="side_a"),
            cmp_steps_b=figures.steps_plot(tb, lang=lang, side="side_b"),
        )

    # --- sweep ---------------------------------------------------------------------------------
    def sweep(self, *, sweep_temps: list[float], sweep_divisors: list[str], sweep_decays: list[float], sweep_seeds: int,
              sweep_prompts: str, sweep_gen_length: int, lang: str,
              progress: Callable[..., Any] | None = None) -> SweepShown:
        """Run the grid as one batched decode, reporting progress per batched step."""
        lines = tuple(p for p in (sweep_prompts or "").splitlines() if p.strip())
        for name, values in (("sweep_temps", sweep_temps), ("sweep_topk", sweep_divisors),
                             ("sweep_decays", sweep_decays), ("sweep_prompts", lines)):
            if not values:
                raise ValueError(t("err_empty_grid", lang, v=t(name, lang)))
        grid = SweepGrid(
            temperatures=tuple(sorted(float(x) for x in sweep_temps)),
            divisors=tuple(sorted((int(str(d).removeprefix("L/")) for d in sweep_divisors), reverse=True)),  # k grows →
            decays=tuple(sorted(float(x) for x in sweep_decays)), seeds=tuple(range(_integral(sweep_seeds))),
            prompts=lines, gen_length=_integral(sweep_gen_length),
        )
        _, configs, _ = grid.requests()
        total = max(1, total_steps(configs))
        done = itertools.count(1)  # request-steps finished; next() is atomic under the GIL
        finished = [0]

        def on_step(i: int, rec: Any) -> None:  # may run in the engine's worker thread
            finished[0] = next(done)

        if progress is None:
            return self.sweep_view(run_sweep(self.run, grid, on_step=on_step), lang=lang)
        # Gradio's progress bar can only be updated from the handler's own thread, so the decode
        # runs in a helper thread and this one reports until it finishes.
        with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="dllm-viz-sweep") as pool:
            future = pool.submit(run_sweep, self.run, grid, on_step=on_step)
            while True:
                progress(min(1.0, finished[0] / total), desc=f"{finished[0]}/{total}")
                try:
                    result = future.result(timeout=PROGRESS_EVERY)
                    break
                except concurrent.futures.TimeoutError:
                    continue
        return self.sweep_view(result, lang=lang)

    def sweep_view(self, result: SweepResult | None, *, lang: str) -> SweepShown:
        if result is None:
            return SweepShown(*(KEEP for _ in fields_of(SweepShown)))
        g = result.grid
        figs = {
            metric: figures.sweep_heatmap(result.table(metric), g.temperatures, g.divisors, title=t(f"m_{metric}", lang),
                                          lang=lang, reverse=lower_better, zrange=SWEEP_RANGES[metric](g.gen_length))
            for metric, lower_better in METRICS.items()
        }
        columns = ["temperature", "top_k", "decay", "runs", *METRICS]
        headers = [t(f"col_{c}", lang) if c in ("temperature", "top_k", "decay", "runs") else t(f"m_{c}", lang)
                   for c in columns]
        table = {"headers": headers, "data": [[r[c] for c in columns] for r in result.rows]}
        return SweepShown(sweep_state=result, sweep_nfe=figs["nfe"], sweep_repeat_3=figs["repeat_3"],
                          sweep_distinct_2=figs["distinct_2"], sweep_mean_logprob=figs["mean_logprob"],
                          sweep_table=table, sweep_summary=t("sweep_done", lang, n=g.size, s=result.wall_time))

    # --- language ------------------------------------------------------------------------------
    def relabel(self, *, lang: str, trace: Trace | None, cursor: tuple[int, int] | None, temperature: float,
                cmp_traces: tuple[Trace, Trace] | None, sweep_state: SweepResult | None, lesson_key: str | None,
                **settings: Any) -> Relabelled:
        """Every rendered view again, in `lang`, from the stored traces (no decode)."""
        views: dict[str, Any] = {name: KEEP for name in ("canvas", "heatmap", "facts", "preset_badge", "order",
                                                         "steps_fig", "insp_plot", "insp_text")}
        if trace is not None:
            frame, pos = cursor or (frame_count(trace), 0)
            first = self.first_views(trace, lang=lang, position=pos)
            first["canvas"] = render.player_html(trace, lang=lang, frame=frame, selected=first["cursor"][1],
                                                 order_width=figures.order_width(trace.config.gen_length))
            first.pop("cursor")
            views |= first | shallow(self.trace_figures(trace=trace, lang=lang, cursor=(frame, pos),
                                                        temperature=temperature))
        pair = cmp_traces
        compare = self.compare_view(pair, summary=render.divergence_text(*pair, lang) if pair else "", lang=lang)
        compare_fields = shallow(compare) | shallow(self.compare_figures(cmp_traces=pair, lang=lang))
        sweep = self.sweep_view(sweep_state, lang=lang)
        return Relabelled(**compare_fields, **shallow(sweep), **views, banner="",
                          lesson_text=self.lesson_text(lesson_key, lang),
                          k_steps=self.k_steps(lang=lang, temperature=temperature, **settings).k_steps)

    # --- API -----------------------------------------------------------------------------------
    def generate(self, prompt: str, config_json: str) -> tuple[str, str]:
        """Decode `prompt` with a JSON object of DecodeConfig fields (missing keys: balanced preset)."""
        cfg = parse_config_json(config_json)
        trace = self.run([prompt or ""], [cfg])[0]
        return trace.text or "", trace.to_json()


def model_prompts_md(prompts: Sequence[str]) -> str:
    """The picked model's example prompts, one line."""
    return "<small>" + " · ".join(f"`{html.escape(p)}`" for p in prompts) + "</small>" if prompts else ""


def world_lesson_table(key: str) -> str:
    """Correctness of a Compare-tab pair on the world model (assets/world/lessons.json), or ""."""
    measured = load_world_pairs().get(key)
    return world_table(measured) if measured else ""


def example_label(name: str, lang: str) -> str:
    """An example trace's name in `lang` (names without a translation are shown as they are)."""
    try:
        return t(f"ex_{name}", lang)
    except KeyError:
        return name
