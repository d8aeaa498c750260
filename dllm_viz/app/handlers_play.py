"""The Playground tab's handlers: decode, the cursor's inspector, presets, traces in and out.

Each method takes keyword arguments named after the page's components (`page.Page`) and returns a
record of `outputs`. Every handler computes once: one call to the runner per decode event, one
parse per uploaded file; everything else is rendered from the stored `Trace` by `render` and
`figures`. No Gradio, no HTML here.
"""
from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch

from dllm_viz.app import figures, render, task_view, world_view
from dllm_viz.app.adapters import KNOBS, SCHEDULE_KNOBS, SCHEDULE_SLIDERS, active_preset, knobs_of, preset_knobs
from dllm_viz.app.adapters import settings_to_config
from dllm_viz.app.i18n import example_label, t
from dllm_viz.app.lessons import LESSONS
from dllm_viz.app.outputs import (
    KEEP,
    DecodeFirst,
    DecodeRest,
    Exported,
    Knobs,
    KnobStates,
    KSteps,
    Loaded,
    PresetKnobs,
    Reseeded,
    Selected,
    TraceFigures,
    keep,
)
from dllm_viz.core.analysis import divergence, frame_count, k_sequence, prompt_text
from dllm_viz.core.config import DRAWN_SOURCES, DecodeConfig
from dllm_viz.core.decoder import Runner
from dllm_viz.core.trace import Trace
from dllm_viz.core.trace_schema import MAX_TRACE_BYTES

# Teaching switches: (config field, its correct value, the Compare lesson that shows it).
SWITCHES = (("confidence_from", "raw", "polluted"), ("sample_scope", "selected", "global"), ("rng", "per_request", "rng"))
LESSON_LINK = "dv-open-lesson-"  # href prefix of a banner link that opens a Compare lesson (page.js)
EXPORTS_KEPT = 64  # trace files kept in the export directory


def random_seed() -> int:
    """A fresh seed for the "new seed" button, from a non-deterministically seeded torch.Generator."""
    return torch.Generator().seed() % (2**31)


def preset_badge(cfg: DecodeConfig, lang: str, *, example: str | None = None) -> str:
    """Which preset is active ("custom" once a knob moved off every preset); for an example trace,
    that these are its own settings, so a first Run never inherits them unseen."""
    preset = active_preset(cfg)
    text = t("preset_active", lang, p=t(f"preset_{preset}", lang)) if preset else t("preset_custom", lang)
    if example is not None:
        text = t("preset_example", lang, e=example_label(example, lang), p=text)
    return render.badge_html(text)


def clamp_position(position: Any, trace: Trace) -> int:
    return max(0, min(int(position or 0), max(0, trace.config.gen_length - 1)))


class PlayHandlers:
    """The Playground tab's events. `runner_for(model_pick)` is the runner of the picked model."""

    def __init__(self, runner_for: Callable[[str | None], Runner], *, examples: Sequence[tuple[str, Trace]] = (),
                 export_dir: Path, new_seed: Callable[[], int] = random_seed) -> None:
        self.runner_for = runner_for
        self.examples = dict(examples)
        self.export_dir = export_dir
        self.new_seed = new_seed

    # --- views of one trace ---------------------------------------------------------------------
    def first_views(self, trace: Trace, *, lang: str, position: int, autoplay: bool = False) -> dict[str, Any]:
        """Canvas (at the end, or at the start when it will play), facts, preset badge."""
        pos = clamp_position(position, trace)
        frame = 0 if autoplay else frame_count(trace)
        canvas = render.player_html(trace, lang=lang, frame=frame, selected=pos,
                                    order_width=figures.order_width(trace.config.gen_length), autoplay=autoplay)
        return {"cursor": (frame, pos), "canvas": canvas, "facts": render.facts_html(trace, lang),
                "preset_badge": preset_badge(trace.config, lang)}

    def rest(self, *, trace: Trace | None, lang: str, cursor: tuple[int, int] | None, temperature: float) -> DecodeRest:
        """The rest of the view after a decode: order map, per-step plot, task curve, inspector. The task
        curve's markers sit at the trace's threshold: a threshold slider release moves them."""
        if trace is None:
            return keep(DecodeRest)
        frame, pos = cursor or (frame_count(trace), 0)
        plot, text = self._inspector(trace, lang, frame, pos, temperature)
        task = task_view.task_of(trace)
        curve = figures.task_curve(task_view.curves(), task.family if task else None, trace.config.threshold, lang=lang)
        return DecodeRest(order=figures.order_map(trace, lang=lang), steps_fig=figures.steps_plot(trace, lang=lang),
                          task_curve=curve, insp_plot=plot, insp_text=text)

    def trace_figures(self, *, trace: Trace | None, lang: str, cursor: tuple[int, int] | None,
                      temperature: float) -> TraceFigures:
        """A shown trace's heatmap and the rest of its views (after `upload` or `example`)."""
        if trace is None:
            return keep(TraceFigures)
        rest = self.rest(trace=trace, lang=lang, cursor=cursor, temperature=temperature)
        return TraceFigures(rest=rest, heatmap=figures.confidence_heatmap(trace, lang=lang))

    def _inspector(self, trace: Trace, lang: str, frame: int, position: int, temperature: float) -> tuple[str, str]:
        if trace.config.gen_length == 0:
            return "", ""
        pos = clamp_position(position, trace)
        insp = render.inspect(trace, pos, int(frame), float(temperature), lang=lang)
        # The checker rules this token breaks: the world model's, or a task prompt's.
        rules = world_view.inspector_lines(trace, pos) or task_view.inspector_lines(trace, pos)
        return (render.inspector_html(insp, lang),
                f"{insp.explanation}\n\n{rules + chr(10) * 2 if rules else ''}" +
                render.small_md(render.inspector_note(trace, insp, lang)))

    # --- decode -----------------------------------------------------------------------------------
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
        traces = self.runner_for(model_pick)([prompt or ""] * (2 if on else 1), [cfg, correct] if on else [cfg])
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
            return keep(Selected)
        f = max(0, min(int(frame), frame_count(trace)))
        pos = clamp_position(position, trace)
        plot, text = self._inspector(trace, lang, f, pos, temperature)
        return Selected(cursor=(f, pos), insp_plot=plot, insp_text=text)

    # --- knobs ------------------------------------------------------------------------------------
    def preset(self, name: str, *, gen_length: int) -> PresetKnobs:
        """Widget values of one preset for the current gen length."""
        return preset_knobs(name, gen_length)

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
            return KSteps(render.k_steps_html(t("k_threshold", lang)))
        total = len(k_sequence(cfg, limit=10**6) or [])
        shown = ", ".join(map(str, ks)) + (", …" if total > len(ks) else "")
        return KSteps(render.k_steps_html(t("k_sequence", lang, ks=shown, n=total)))

    def reseed(self) -> Reseeded:
        return Reseeded(self.new_seed())

    # --- traces in and out ------------------------------------------------------------------------
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
        return Loaded(knobs=knobs_of(trace.config), prompt=prompt_text(trace), trace=trace, banner="", **first)

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
