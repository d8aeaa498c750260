"""The Playground tab's handlers: decode, presets, traces in and out.

Each method takes keyword arguments named after the page's components (`page.Page`) and returns a
record of `outputs`. Every handler computes once: one call to the runner per decode event, one
parse per uploaded file; everything else is rendered from the stored `Trace` by `render` and
`figures`. No Gradio, no HTML here.
"""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import math
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import torch

from dllm_viz.app.views import figures, render, task as task_view
from dllm_viz.app.handlers.adapters import (
    KNOBS,
    INDEL_KNOBS,
    RULE_KNOBS,
    RULE_SLIDERS,
    SCHEDULE_KNOBS,
    SCHEDULE_SLIDERS,
    active_preset,
    knobs_of,
    preset_knobs,
)
from dllm_viz.app.handlers.adapters import config_to_settings, settings_to_config
from dllm_viz.app.strings import example_label, t
from dllm_viz.studies.lessons import LESSONS
from dllm_viz.app.links import parse_link
from dllm_viz.app.handlers.fit import fit_settings, fitted_knobs
from dllm_viz.app.handlers.live import Live, stream
from dllm_viz.app.handlers.outputs import (
    KEEP,
    DecodeFirst,
    DecodeRest,
    Exported,
    Knobs,
    KnobStates,
    KSteps,
    Linked,
    Loaded,
    Reseeded,
    RuleStates,
    StageStates,
    DecodeStopped,
    TraceFigures,
    keep,
)
from dllm_viz.core import rules
from dllm_viz.core.analysis import divergence, k_sequence, prompt_text
from dllm_viz.core.config import REVISION_PRESETS, SHIPPED_PRESETS, DecodeConfig
from dllm_viz.core.decoder import Runner
from dllm_viz.core.trace import Trace
from dllm_viz.core.trace_schema import MAX_TRACE_BYTES

# Teaching switches: config field -> its correct value.
SWITCHES = {"confidence_from": "raw", "sample_scope": "selected", "rng": "per_request"}
# Values that are no teaching switch: raw's measure computed with SGLang's float ops (its LowConfidence
# and JointThreshold presets ship it), so no "correct" twin is decoded beside them.
NOT_SWITCHES = {("confidence_from", "softmax")}
# The Compare lesson that shows a switch's wrong value against the correct one.
SWITCH_LESSONS = {("confidence_from", "tempered"): "polluted", ("confidence_from", "filtered"): "polluted",
                  ("confidence_from", "sampled"): "lock_in", ("confidence_from", "sampled_raw"): "shipped_llada",
                  ("sample_scope", "all"): "global", ("rng", "shared"): "rng"}
LESSON_LINK = "dv-open-lesson-"  # href prefix of a banner link that opens a Compare lesson (page.js)
EXPORTS_KEPT = 64  # trace files kept in the export directory
# A live canvas is sent after the first step, then at most this often: each one costs the server a
# render and the browser a paint, and the decode shares their CPU (a step of a gen-64 decode of the
# embedded model takes ~30 ms on 2 cores).
LIVE_SECONDS = 0.1
# How long Stop waits for the decode it stopped to end its stream (it does within LIVE_SECONDS of
# the signal, plus one step of the model for its worker), so nothing of that decode follows Stop's view.
STOP_WAIT_SECONDS = 10.0


def switch_lesson(cfg: DecodeConfig, on: list[str]) -> str:
    """The Compare lesson that shows what the switches `on` do: an as-shipped rule's own lesson when
    `cfg` is that preset (LLaDA's, Fast-dLLM's), else the lesson of the first switch on."""
    preset = active_preset(cfg)
    if preset is not None and f"shipped_{preset}" in LESSONS:
        return f"shipped_{preset}"
    return SWITCH_LESSONS[(on[0], getattr(cfg, on[0]))]


def unchanged_note(shown: Trace, trace: Trace, lang: str) -> str:
    """A hint when new settings gave the run on show again, step for step ("" otherwise): a
    threshold moved where no confidence lay between its old and new value changes nothing."""
    old, new = shown.config, trace.config
    changed = [name for name in old.field_names() if getattr(old, name) != getattr(new, name)]
    same = shown.token_ids == trace.token_ids and shown.order == trace.order and shown.prompt_ids == trace.prompt_ids
    if not changed or not same or shown.model != trace.model:
        return ""
    if changed == ["threshold"] and new.schedule == "threshold":
        lo, hi = sorted((old.threshold, new.threshold))
        if not any(lo <= c < hi for rec in trace.steps for c in rec.confidence if not math.isnan(c)):
            return t("banner_unchanged_threshold", lang, a=old.threshold, b=new.threshold)
    return t("banner_unchanged", lang, what=", ".join(f"{name} = {getattr(new, name)}" for name in changed))


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


def shipped_banner(trace: Trace, correct: Trace | None, on: list[str], lang: str) -> str:
    """What the banner says of a preset "as shipped" (`trace` decoded with it): what the shipped rule
    does and the code it follows, then, when its ranking is not the article's (`on`: the switches it
    sets), how the article's rule decoded the same request (`correct`, in the same batch); "" for any
    other config. A preset is no teaching switch the visitor turned on, so the banner never says so."""
    preset = active_preset(trace.config)
    shipped = {**SHIPPED_PRESETS, **REVISION_PRESETS}.get(preset or "")
    if shipped is None:
        return ""
    text = t("shipped_head", lang, p=t(f"preset_{preset}", lang), what=t(f"sb_{preset}", lang), src=shipped.source)
    if not on or correct is None:
        return text
    d = divergence(trace, correct)
    if d.first_step is None and trace.token_ids == correct.token_ids:
        key = switch_lesson(trace.config, on)
        lesson = LESSONS[key].text("title", lang)
        return text + " " + t("shipped_same", lang, lesson=lesson, href=f"#{LESSON_LINK}{key}")
    return text + " " + t("shipped_diff", lang, n=len(d.order_differs), g=trace.config.gen_length,
                          t=len(d.token_differs))


def revision_banner(trace: Trace, lang: str) -> list[str]:
    """What the banner says of a revision rule: what it took back and rewrote in this decode (nothing
    for a decode without one)."""
    notes = []
    if trace.config.revise != "none":
        m = trace.metrics
        notes.append(t("rv_banner_counts", lang, rule=trace.config.revise, r=m["remasked"], e=m["edited"],
                       s=m["steps"], n=m["nfe"]))
    return notes


class PlayHandlers:
    """The Playground tab's events. `runner_for(model_pick)` is the runner of the picked model,
    `token_text_for(model_pick)` its tokens' text (the live canvas has no trace to read it from yet)."""

    def __init__(self, runner_for: Callable[[str | None], Runner], *, examples: Sequence[tuple[str, Trace]] = (),
                 export_dir: Path, new_seed: Callable[[], int] = random_seed,
                 token_text_for: Callable[[str | None], Callable[[int], str]] = lambda pick: str,
                 pick_for: Callable[[str, str], tuple[Any, Any]] = lambda model, lang: (KEEP, KEEP),
                 cache_modes_for: Callable[[str | None], tuple[str, ...] | None] = lambda pick: None,
                 edits_lengths_for: Callable[[str | None], bool | None] = lambda pick: None) -> None:
        self.runner_for = runner_for
        self.cache_modes_for = cache_modes_for  # the caches the picked model runs (None: any)
        self.edits_lengths_for = edits_lengths_for  # whether it can edit lengths (None: not known)
        self.pick_for = pick_for  # a trace's model -> (the picker's entry, its example prompts), or KEEPs
        self.token_text_for = token_text_for  # the picked model's token text, for the live canvas
        # session -> (the Stop signal, set when its stream has ended) of its decode in progress
        self._stops: dict[str, tuple[threading.Event, threading.Event]] = {}
        self._lock = threading.Lock()
        self.examples = dict(examples)
        self.export_dir = export_dir
        self.new_seed = new_seed

    # --- views of one trace ---------------------------------------------------------------------
    def first_views(self, trace: Trace, *, lang: str, autoplay: bool = False, frame: int | None = None,
                    selected: int | None = None) -> dict[str, Any]:
        """Canvas (at `frame`: None = the end, or the start when it will play), facts, preset badge.

        `selected`: the position to select (None keeps the page's); the page draws the inspector.
        """
        frame = 0 if autoplay else frame
        canvas = render.player_html(trace, lang=lang, frame=frame, selected=selected,
                                    order_width=figures.order_width(trace.config.gen_length), autoplay=autoplay)
        return {"canvas": canvas, "facts": render.facts_html(trace, lang), "preset_badge": preset_badge(trace.config, lang)}

    def rest(self, *, trace: Trace | None, lang: str) -> DecodeRest:
        """The rest of the view after a decode: order map, per-step plot, task curve (the page draws the
        inspector). The task curve's markers sit at the trace's threshold: a threshold slider release moves them."""
        if trace is None:
            return keep(DecodeRest)
        task = task_view.task_of(trace)
        curve = figures.task_curve(task_view.curves(), task.family if task else None, trace.config.threshold, lang=lang,
                                   rule=trace.config.revise)
        return DecodeRest(order=figures.order_map(trace, lang=lang), steps_fig=figures.steps_plot(trace, lang=lang),
                          task_curve=curve)

    def trace_figures(self, *, trace: Trace | None, lang: str) -> TraceFigures:
        """A shown trace's heatmap and the rest of its figures (after `upload` or `example`)."""
        if trace is None:
            return keep(TraceFigures)
        return TraceFigures(rest=self.rest(trace=trace, lang=lang), heatmap=figures.confidence_heatmap(trace, lang=lang))

    # --- decode -----------------------------------------------------------------------------------
    def decode(self, **widgets: Any) -> DecodeFirst:
        """`decode_stream` run to its end: the finished view (for callers that want no stream)."""
        *_, last = self.decode_stream(**widgets)
        return last

    def decode_stream(self, *, prompt: str, lang: str, model_pick: str | None = None, trace: Trace | None = None,
                      session: str | None = None, **settings: Any) -> Iterator[DecodeFirst]:
        """Decode the prompt with the widget settings (one call to `run`), streamed: a live canvas
        after the first step and then at most every LIVE_SECONDS (the other views left as they
        are), then the finished view. Stop (`stopped`, same `session`) or closing the stream stops
        the decode at its next step, and nothing more is shown of it.

        With a teaching switch on, the correct config decodes in the same batch, and the banner
        says what the switch changed against it (or that alone it changes nothing here). A change of
        settings that gives the trace on show (`trace`) again says so too.
        """
        shown = trace
        # The knob just moved wins; the others follow it (fit.py), and the widgets show what is decoded.
        fitted, fixes = fit_settings(settings, shown=shown.config if shown is not None else None,
                                     cache_modes=self.cache_modes_for(model_pick),
                                     edits_lengths=self.edits_lengths_for(model_pick))
        knobs = dataclasses.replace(keep(Knobs), **fitted_knobs(settings, fitted))
        settings, notes = fitted, [t(note.key, lang, **note.values) for note in fixes]
        cfg = settings_to_config(**settings)
        correct = cfg.replace(**SWITCHES)
        on = [name for name, ok in SWITCHES.items()
              if getattr(cfg, name) != ok and (name, getattr(cfg, name)) not in NOT_SWITCHES]
        run = self.runner_for(model_pick)
        live = Live(cfg, prompt=prompt or "", token_text=self.token_text_for(model_pick), lang=lang)
        shown_at, fresh, traces, knobs_sent = 0.0, False, None, False
        with self._stop_for(session) as stop:
            # The first step at once; then at most every LIVE_SECONDS, and the latest step whenever
            # the decode pauses that long (a slow step, a busy engine).
            for kind, item in stream(run, [prompt or ""] * (2 if on else 1), [cfg, correct] if on else [cfg],
                                     idle=LIVE_SECONDS, stop=stop):
                if stop.is_set():  # Stop: its view is on show; nothing of this decode may follow it
                    return
                if kind == "done":
                    traces = item
                    break
                if kind == "step":
                    live.add(item)
                    fresh = True
                if fresh and (live.steps == 1 or kind == "idle" or time.monotonic() - shown_at >= LIVE_SECONDS):
                    shown_at, fresh = time.monotonic(), False
                    yield dataclasses.replace(keep(DecodeFirst), canvas=render.live_html(live.data(), lang=lang),
                                              knobs=keep(Knobs) if knobs_sent else knobs)
                    knobs_sent = True  # the fitted widgets show with the first live canvas
                elif kind == "idle":
                    yield keep(DecodeFirst)  # nothing new; Gradio may close the stream here
        if traces is None or stop.is_set():
            return
        trace = traces[0]
        shipped = shipped_banner(trace, traces[1] if on else None, on, lang)
        if shipped:
            notes.append(shipped)
        elif on:
            notes.append(self._banner(trace, traces[1], on, lang))
        notes += revision_banner(trace, lang)
        if shown is not None:
            notes.append(unchanged_note(shown, trace, lang))
        yield DecodeFirst(trace=trace, banner="\n\n".join(n for n in notes if n), knobs=knobs,
                          heatmap=figures.confidence_heatmap(trace, lang=lang), **self.first_views(trace, lang=lang))

    def open_link(self, *, query: dict[str, str], lang: str, session: str | None = None) -> Iterator[Linked]:
        """The page was opened with a link (`links`): its widgets and model set, its trace decoded
        (one call to `run`, streamed) and shown at its step and position. Without one, nothing."""
        link = parse_link(query)
        if link.config is None:
            yield keep(Linked)
            return
        knobs, prompt, pick = knobs_of(link.config), link.prompt, link.model or KEEP
        for view in self.decode_stream(prompt=link.prompt, lang=lang, model_pick=link.model, session=session,
                                       **config_to_settings(link.config)):
            compare = {"cmp_a": KEEP, "cmp_b": KEEP}
            if view.trace is not KEEP:  # the finished trace, at the link's step and position
                view = dataclasses.replace(view, **self.first_views(view.trace, lang=lang, frame=link.step,
                                                                    selected=link.pos or 0))
                compare = {"cmp_a": link.cmp_a or KEEP, "cmp_b": link.cmp_b or KEEP}
            shown = {f.name: getattr(view, f.name) for f in dataclasses.fields(view) if f.name != "knobs"}
            yield Linked(knobs=knobs, prompt=prompt, model_pick=pick, **shown, **compare)
            knobs, prompt, pick = keep(Knobs), KEEP, KEEP  # the widgets are set with the first view

    @contextlib.contextmanager
    def _stop_for(self, session: str | None) -> Iterator[threading.Event]:
        """The Stop signal of the decode `session` runs now (its earlier one is replaced); the
        stream's end is signalled when the block is left, whichever way."""
        stop, ended = threading.Event(), threading.Event()
        with self._lock:
            if session is not None:
                self._stops[session] = (stop, ended)
        try:
            yield stop
        finally:
            ended.set()
            with self._lock:
                if session is not None and self._stops.get(session, (None,))[0] is stop:
                    del self._stops[session]

    def stopped(self, *, trace: Trace | None, lang: str, session: str | None = None) -> DecodeStopped:
        """The visitor stopped a decode: it ends at its next step, and the trace on show comes back,
        with its settings.

        The decode's stream is ended here, by its own signal, not by Gradio's `cancels`: Gradio
        cancelled a stream by cancelling its task and closing its generator from the server's event
        loop, which then waited for the step in progress (every session's events waited with it),
        and the page then drew its "Error" status over the views Stop had just restored. Stop
        returns once the stream has ended (it sees the signal within LIVE_SECONDS), so a live view
        the stream was sending when Stop came cannot arrive after Stop's view and stay on show.
        """
        with self._lock:
            signals = self._stops.get(session) if session is not None else None
        if signals is not None:
            stop, ended = signals
            stop.set()
            ended.wait(timeout=STOP_WAIT_SECONDS)
        if trace is None:
            return keep(DecodeStopped)
        return DecodeStopped(knobs=knobs_of(trace.config), banner=t("banner_stopped", lang),
                       **self.first_views(trace, lang=lang))

    @staticmethod
    def _banner(trace: Trace, correct: Trace, on: list[str], lang: str) -> str:
        switches = ", ".join(f"{name} = {getattr(trace.config, name)}" for name in on)
        d = divergence(trace, correct)
        if d.first_step is None and trace.token_ids == correct.token_ids:
            key = switch_lesson(trace.config, on)
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

    # --- knobs ------------------------------------------------------------------------------------
    def preset(self, name: str, *, gen_length: int) -> Knobs:
        """Widget values of one preset for the current gen length: every knob but gen length and seed."""
        return preset_knobs(name, gen_length)

    def knob_states(self, *, schedule: str) -> KnobStates:
        used = SCHEDULE_KNOBS.get(schedule, set())
        return KnobStates(**{k: k in used for k in SCHEDULE_SLIDERS})

    def stage_states(self, *, stages_on: bool) -> StageStates:
        """The three stage sliders are live only while staged temperature is on (off, moving one
        would re-run a decode that never reads it)."""
        return StageStates(*(bool(stages_on),) * 3)
    def rule_states(self, *, revise: str, indel: str = "none") -> RuleStates:
        """The knobs the revision and insert/delete rules read interactive, the others greyed out
        (`adapters.RULE_KNOBS`, `adapters.INDEL_KNOBS`)."""
        used = RULE_KNOBS.get(revise, set()) | INDEL_KNOBS.get(indel, set())
        return RuleStates(**{k: k in used for k in RULE_SLIDERS})

    def k_steps(self, *, lang: str, **settings: Any) -> KSteps:
        """The k each step will confirm under the current knobs (no decode): shows dead zones of a knob."""
        try:
            cfg = settings_to_config(**settings)
        except ValueError:
            return KSteps(KEEP)
        if not rules.SCHEDULES[cfg.schedule].planned:  # the model decides each step's count (threshold, eb)
            return KSteps(render.k_steps_html(t("k_threshold", lang, schedule=cfg.schedule)))
        # A revision rule that adds steps of its own (WINO, token editing, ReMDM's loop): the schedule's
        # plan, then the steps the rule adds as it runs.
        plan = cfg.replace(revise="none") if cfg.revision_adds_steps else cfg
        ks, total = k_sequence(plan, limit=24) or [], len(k_sequence(plan, limit=10**6) or [])
        shown = ", ".join(map(str, ks)) + (", …" if total > len(ks) else "")
        key = "k_sequence_revised" if cfg.revision_adds_steps else "k_sequence"
        return KSteps(render.k_steps_html(t(key, lang, ks=shown, n=total, rule=cfg.revise)))

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

    def load_trace(self, trace: Trace, *, lang: str, autoplay: bool = False,
                   example: str | None = None) -> Loaded:
        """Show a stored trace (uploaded or example) and set the widgets to its config; its figures
        follow (`trace_figures`)."""
        first = self.first_views(trace, lang=lang, autoplay=autoplay, selected=0)
        if example is not None:
            first["preset_badge"] = preset_badge(trace.config, lang, example=example)
        pick, prompts = self.pick_for(trace.model, lang)  # its model is picked, when the picker has it
        return Loaded(knobs=knobs_of(trace.config), prompt=prompt_text(trace), trace=trace, banner="",
                      model_pick=pick, model_prompts=prompts, **first)

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
