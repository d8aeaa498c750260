"""The Playground tab's handlers: decode, presets, traces in and out.

Each method takes keyword arguments named after the page's components (`page.Page`) and returns a
record of `outputs`. Every handler computes once: one call to the runner per decode event, one
parse per uploaded file. A trace reaches the page by its handle (`traces.TraceStore`): the canvas's
value names it, and the page reads it and draws every view of it itself (`views.wire`, `app/web/`);
the handlers send the run facts and the banner. No Gradio, no HTML here.
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import torch

from dllm_viz.app.views import render, wire
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
from dllm_viz.app.handlers.asking import Ticket
from dllm_viz.app.links import parse_link
from dllm_viz.app.handlers.banners import NOT_SWITCHES, SWITCHES, decode_banner
from dllm_viz.app.handlers.fit import Note, fit_settings, fitted_knobs
from dllm_viz.app.handlers.live import Decoding, stream
from dllm_viz.app.handlers.seats import Seat, Seats
from dllm_viz.app.handlers.starts import Starts
from dllm_viz.app.handlers.stops import Stops
from dllm_viz.app.handlers.takeout import read_trace_file
from dllm_viz.app.handlers.entry import settle
from dllm_viz.app.handlers.traces import Shown, TraceStore
from dllm_viz.app.handlers.outputs import (
    AUTO_OF,
    KEEP,
    AutoStates,
    DecodeFirst,
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
    keep,
)
from dllm_viz.core import rules
from dllm_viz.core.analysis import k_sequence, prompt_text
from dllm_viz.core.budget import Budget
from dllm_viz.core.config import DecodeConfig
from dllm_viz.core.decoder import Runner
from dllm_viz.core.trace import Trace

EXPORTS_KEPT = 64  # trace files kept in the export directory
# A decode's steps go to the page by its handle as they are computed (`traces`), not through its event;
# the event answers at its start (the handle) and its end (the facts), and checks this often meanwhile
# whether the visitor stopped it or left (Gradio closes a stream that nobody reads at its next answer).
LIVE_SECONDS = 0.1
# While nothing new is shown, the stream still yields (an empty update) this often, so that Gradio can
# close it when the page is gone; each yield costs the server a message, and forty streams that
# yielded every LIVE_SECONDS made the server's own work outweigh the decodes.
KEEPALIVE_SECONDS = 5.0
# How long Stop waits for the decode it stopped to end its stream (it does within LIVE_SECONDS of
# the signal, plus one step of the model for its worker), so nothing of that decode follows Stop's view.
STOP_WAIT_SECONDS = 10.0


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


@dataclasses.dataclass(frozen=True)
class Asked:
    """A decode as the widgets ask for it, fitted (fit.py) and checked against the picked model: what
    `run` gets, and what the fitting changed (the widgets it sets, the banner's notes)."""

    prompt: str
    model_pick: str | None
    cfg: DecodeConfig
    on: tuple[str, ...]  # the teaching switches on: the correct config decodes beside `cfg`, in one batch
    knobs: Knobs  # the widgets the fitting set, else KEEP
    fixes: tuple[Note, ...]

    @property
    def decodes(self) -> tuple[Any, ...]:
        """What is decoded: a started decode is adopted by an event that asks for the same."""
        return self.prompt, self.model_pick, self.cfg


class PlayHandlers:
    """The Playground tab's events. `runner_for(model_pick)` is the runner of the picked model,
    `token_text_for(model_pick)` its tokens' text (the live canvas has no trace to read it from yet),
    `budget_for(model_pick)` the bounds its requests are checked against before anything is built."""

    def __init__(self, runner_for: Callable[[str | None], Runner], *, traces: TraceStore,
                 examples: Sequence[tuple[str, Shown]] = (), export_dir: Path,
                 new_seed: Callable[[], int] = random_seed,
                 token_text_for: Callable[[str | None], Callable[[int], str]] = lambda pick: str,
                 pick_for: Callable[[str, str], tuple[Any, Any]] = lambda model, lang: (KEEP, KEEP),
                 budget_for: Callable[[str | None], Budget] = lambda pick: Budget(),
                 cache_modes_for: Callable[[str | None], tuple[str, ...] | None] = lambda pick: None,
                 edits_lengths_for: Callable[[str | None], bool | None] = lambda pick: None,
                 canvas_for: Callable[[str | None], str] = lambda pick: "masked",
                 seats: Seats | None = None, stops: Stops | None = None) -> None:
        self.runner_for = runner_for
        self.traces = traces  # every session's traces by handle: what the page reads
        self.cache_modes_for = cache_modes_for  # the caches the picked model runs (None: any)
        self.edits_lengths_for = edits_lengths_for  # whether it can edit lengths (None: not known)
        self.canvas_for = canvas_for  # the canvas the picked model writes: the knobs sent (`settings_to_config`)
        self.pick_for = pick_for  # a trace's model -> (the picker's entry, its example prompts), or KEEPs
        self.token_text_for = token_text_for  # the picked model's token text, for the live canvas
        self.budget_for = budget_for
        self.stops = stops if stops is not None else Stops()  # every session's decodes in progress, for Stop
        self.seats = seats if seats is not None else Seats()  # the page's decodes at once, events' and starts'
        self.starts = Starts(self.seats)  # decodes the pages started before their events came
        self.examples = dict(examples)
        self.export_dir = export_dir
        self.new_seed = new_seed

    # --- views of one trace ---------------------------------------------------------------------
    def first_views(self, shown: Shown, *, lang: str, autoplay: bool = False, frame: int | None = None,
                    selected: int | None = None) -> dict[str, Any]:
        """The canvas (the trace's handle: the page draws it and every figure, at `frame`: None = the
        end, or the start when it will play), the facts and the preset badge.

        `selected`: the position to select (None keeps the page's); the page draws the inspector.
        """
        canvas = wire.canvas_value(shown.handle, lang=lang, frame=0 if autoplay else frame, selected=selected,
                                   autoplay=autoplay)
        trace = shown.trace
        return {"canvas": canvas, "facts": render.facts_html(trace, lang),
                "preset_badge": preset_badge(trace.config, lang)}

    # --- decode -----------------------------------------------------------------------------------
    def decode(self, **widgets: Any) -> DecodeFirst:
        """`decode_stream` run to its end: the finished view (for callers that want no stream)."""
        *_, last = self.decode_stream(**widgets)
        return last

    def decode_stream(self, *, prompt: str, lang: str, model_pick: str | None = None, trace: Shown | None = None,
                      ref: str | None = None, session: str | None = None, **settings: Any) -> Iterator[DecodeFirst]:
        """Decode the prompt with the widget settings (one call to `run`), streamed to the page: the
        canvas names the decode's handle at once, and the page reads its steps as they are computed
        (`traces`); the other views stay as they are until the decode ends, then the finished trace's
        facts and banner follow. Stop (`stopped`, same `session`) or closing the stream stops the
        decode at its next step (or drops it from the queue), and nothing more is shown of it; while
        the request waits for a slot of the shared engine the page reads where (`entry.Entry.queue`).

        The settings are checked against the picked model (`budget_for`) before anything is sized
        by them. With a teaching switch on, the correct config decodes in the same batch, and the banner
        says what the switch changed against it (or that alone it changes nothing here). A change of
        settings that gives the trace on show (`trace`) again says so too. `ref`: the handle the page
        drew for this decode (it reads the steps from the start, before this answer reaches it).
        """
        shown = trace
        asked = self.ask(prompt=prompt, model_pick=model_pick, shown=shown.trace.config if shown else None,
                         settings=settings)
        decoding, free = self.starts.adopt(session, ref, asked.decodes)  # the page may have started it already
        if decoding is None:
            decoding = self.launch(asked, session=session, handle=ref if free else None)
        # `said`: the event has answered. A stream that ends having said nothing has Gradio set every output to
        # None, over the views Stop brings back; a stopped one says "nothing new" once before it ends.
        traces, said = None, False
        try:
            if not self.stops.follow(decoding.signal):  # stopped before this event came
                yield keep(DecodeFirst)
                return
            stop, steps, handle = decoding.stop, decoding.steps, decoding.handle
            # A page that named the handle reads it already (and Stop's key with it): no first answer
            # unless the widgets were fitted (each answer costs the page a long task while it decodes).
            knobs = asked.knobs
            if handle != ref or any(getattr(knobs, f.name) is not KEEP for f in dataclasses.fields(knobs)):
                canvas = wire.canvas_value(handle, lang=lang, live=True, key=decoding.key)
                yield dataclasses.replace(keep(DecodeFirst), canvas=canvas, knobs=knobs)  # the fitted widgets
                said = True
            answered = time.monotonic()
            for kind, item in steps:
                if stop.is_set():  # Stop: its view is on show; nothing of this decode may follow it
                    break
                if kind == "done":
                    traces = decoding.traces = item
                    break
                if kind == "idle" and not decoding.encoder.sent:  # no step yet: where it waits, for the page
                    decoding.entry.queue(steps.ticket.waiting())
                if time.monotonic() - answered >= KEEPALIVE_SECONDS:
                    answered = time.monotonic()
                    yield keep(DecodeFirst)  # nothing new for the event; Gradio may close the stream here
                    said = True
            if (traces is None or stop.is_set()) and not said:  # stopped, or its steps ended with it
                yield keep(DecodeFirst)  # (before the stream ends: Stop waits for that end)
        finally:
            decoding.close()
        if traces is None or stop.is_set():
            return
        settle([decoding.entry])  # a page reads it: its views first, then the facts
        yield self._finished(handle, traces[0], traces[1] if asked.on else None, asked, shown, lang)

    def _finished(self, handle: str, trace: Trace, correct: Trace | None, asked: Asked, shown: Shown | None,
                  lang: str) -> DecodeFirst:
        """A decode's last answer: the finished trace, its facts, the banner (kept with the trace, to be said again
        in another language)."""
        before = shown.trace if shown is not None else None  # its trace, not its own banner's (no chain of traces)
        done = Shown(handle, trace, banner=functools.partial(decode_banner, trace, correct, asked.fixes, asked.on,
                                                                   before))
        return DecodeFirst(trace=done, banner=done.banner(lang), knobs=asked.knobs, **self.first_views(done, lang=lang))

    def ask(self, *, prompt: str, model_pick: str | None, shown: DecodeConfig | None,
            settings: dict[str, Any]) -> Asked:
        """The decode the widgets ask for: the knob just moved wins, the others follow it (fit.py; `shown`:
        the config of the trace on show), checked against the picked model (`budget_for`) before anything
        is sized by it. Raises ValueError."""
        canvas = self.canvas_for(model_pick)
        fitted, fixes = settings, []  # a canvas plug-in's knobs are each alone in range: nothing to fit
        if canvas == "masked":
            fitted, fixes = fit_settings(settings, shown=shown, cache_modes=self.cache_modes_for(model_pick),
                                         edits_lengths=self.edits_lengths_for(model_pick))
        knobs = dataclasses.replace(keep(Knobs), **fitted_knobs(settings, fitted))
        cfg = settings_to_config(canvas, **fitted)
        self.budget_for(model_pick).check(cfg)  # its canvas and work, before the live canvas is sized by them
        on = tuple(name for name, ok in SWITCHES.items()
                   if getattr(cfg, name) != ok and (name, getattr(cfg, name)) not in NOT_SWITCHES)
        return Asked(prompt or "", model_pick, cfg, on, knobs, tuple(fixes))

    def badge_for(self, settings: dict[str, Any], *, model_pick: str | None, lang: str) -> str | None:
        """The preset badge a Run with the widgets' `settings` would show, in `lang` (no decode): the page's badge
        before its first decode, and said again in another language; None where the settings ask for no decode."""
        try:
            cfg = self.ask(prompt="", model_pick=model_pick, shown=None, settings=settings).cfg
        except ValueError:
            return None
        return preset_badge(cfg, lang)

    def launch(self, asked: Asked, *, session: str | None, handle: str | None = None,
               followed: bool = True, seat: Seat | None = None) -> Decoding:
        """Start the decode `asked` (one call to `run`, in a worker thread, as the session's: `Ticket`) under
        `handle` (the page's, when it drew one; else a new one): its steps go to the session's trace
        entry as they come. It holds `seat` (a start's), else an event's seat (`seats`), until it closes.
        The caller (or whoever adopts it) closes it."""
        run = self.runner_for(asked.model_pick)
        encoder = wire.Encoder(asked.cfg, prompt=asked.prompt, token_text=self.token_text_for(asked.model_pick))
        handle, entry = self.traces.live(session, encoder, handle)
        signal, key = self.stops.add(session, followed=followed)
        entry.stop_key(key)  # first of its chunks: the page may read it before its event answers
        configs = [asked.cfg, asked.cfg.replace(**SWITCHES)] if asked.on else [asked.cfg]
        held = seat if seat is not None else self.seats.take(session, signal.stop)  # waits while starts fill them

        def closed() -> None:
            held.release()
            self.stops.done(session, signal)

        try:
            steps = stream(run, [asked.prompt] * len(configs), configs, idle=LIVE_SECONDS, stop=signal.stop,
                           ticket=Ticket(client=("page", session)),
                           on_record=lambda i, rec: entry.add(rec) if i == 0 else None,
                           on_done=lambda done: entry.finish(done[0]))  # decoding (or queued) from here on
        except BaseException:
            entry.end("failed")
            closed()
            raise
        return Decoding(asked=asked.decodes, handle=handle, entry=entry, encoder=encoder, steps=steps, signal=signal,
                        key=key, on_close=closed)

    def start(self, *, session: str | None, ref: Any, shown_ref: Any = None, prompt: str, lang: str = "en",
              model_pick: str | None = None, **settings: Any) -> str | None:
        """The page asks for the decode its event (`decode_stream`, same inputs) will ask for, before the
        event comes: started at once under the page's handle `ref`, for the event to adopt (`starts`).
        `shown_ref`: the handle of the trace the page shows (the widgets are fitted against its settings,
        as the event's against its state). Returns None once started, else why not (the event then
        decodes, or reports the error, itself)."""
        shown = self.traces.config_of(session, shown_ref) if isinstance(shown_ref, str) else None
        try:
            asked = self.ask(prompt=prompt, model_pick=model_pick, shown=shown, settings=settings)
        except ValueError as err:
            return str(err)
        return self.starts.start(session, ref, lambda seat: self.launch(asked, session=session, handle=ref,
                                                                        followed=False, seat=seat))

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
            compare = {"cmp_a": KEEP, "cmp_b": KEEP, "lesson_text": KEEP}  # Compare is fitted by `Playground.open_page`
            if view.trace is not KEEP:  # the finished trace, at the link's step and position
                view = dataclasses.replace(view, **self.first_views(view.trace, lang=lang, frame=link.step,
                                                                    selected=link.pos or 0))
                compare |= {"cmp_a": link.cmp_a or KEEP, "cmp_b": link.cmp_b or KEEP}
            shown = {f.name: getattr(view, f.name) for f in dataclasses.fields(view) if f.name != "knobs"}
            yield Linked(knobs=knobs, prompt=prompt, model_pick=pick, **shown, **compare)
            knobs, prompt, pick = keep(Knobs), KEEP, KEEP  # the widgets are set with the first view

    def stopped(self, *, trace: Shown | None, lang: str, stop_key: str = "", session: str | None = None
                ) -> DecodeStopped:
        """The visitor stopped a decode: every decode of the session ends at its next step (or
        leaves the queue), and the trace on show comes back, with its settings.

        Only the page that started them can stop them: `stop_key` must be the key their live
        canvas carried (a session's hash alone is not enough). The decodes' streams are ended
        here, by their own signals, not by Gradio's `cancels`: Gradio cancelled a stream by
        cancelling its task and closing its generator from the server's event loop, which then
        waited for the step in progress (every session's events waited with it), and the page then
        drew its "Error" status over the views Stop had just restored. Stop returns once the
        streams have ended (each sees its signal within LIVE_SECONDS), so a live view a stream was
        sending when Stop came cannot arrive after Stop's view and stay on show.
        """
        self.stops.halt(session, stop_key, wait_seconds=STOP_WAIT_SECONDS)
        if trace is None:
            return keep(DecodeStopped)
        return DecodeStopped(knobs=knobs_of(trace.trace.config), banner=t("banner_stopped", lang),
                             **self.first_views(trace, lang=lang))

    def revert(self, *, trace: Shown | None) -> Knobs:
        """After a failed decode: the widgets go back to the settings of the trace on show."""
        if trace is None:
            return Knobs(**{name: KEEP for name in KNOBS})
        return knobs_of(trace.trace.config)

    # --- knobs ------------------------------------------------------------------------------------
    def preset(self, name: str, *, gen_length: int) -> Knobs:
        """Widget values of one preset for the current gen length: every knob but gen length and seed."""
        return preset_knobs(name, gen_length)

    def knob_states(self, *, schedule: str) -> KnobStates:
        used = SCHEDULE_KNOBS.get(schedule, set())
        return KnobStates(**{k: k in used for k in SCHEDULE_SLIDERS})

    def auto_states(self, **autos: bool) -> AutoStates:
        """A canvas knob's slider is live only while its "auto" switch is off (on: the checkpoint's value)."""
        return AutoStates(**{name: not autos[auto] for name, auto in AUTO_OF.items()})

    def stage_states(self, *, stages_on: bool) -> StageStates:
        """The three stage sliders are live only while staged temperature is on (off, moving one
        would re-run a decode that never reads it)."""
        return StageStates(*(bool(stages_on),) * 3)
    def rule_states(self, *, revise: str, indel: str = "none") -> RuleStates:
        """The knobs the revision and insert/delete rules read interactive, the others greyed out
        (`adapters.RULE_KNOBS`, `adapters.INDEL_KNOBS`)."""
        used = RULE_KNOBS.get(revise, set()) | INDEL_KNOBS.get(indel, set())
        return RuleStates(**{k: k in used for k in RULE_SLIDERS})

    def k_steps(self, *, lang: str, model_pick: str | None = None, **settings: Any) -> KSteps:
        """The k each step will confirm under the current knobs (no decode): shows dead zones of a knob."""
        try:
            cfg = settings_to_config(**settings)
            self.budget_for(model_pick).check(cfg)  # the schedule is simulated step by step below
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
    def export(self, *, trace: Shown | None) -> Exported:
        """Write the trace JSON to a file named by its content hash; the path to download.

        Gradio copies the file into its own cache, so only the newest EXPORTS_KEPT files are kept here.
        """
        if trace is None:
            return Exported(None)
        text = trace.trace.to_json()
        path = self.export_dir / f"trace-{hashlib.sha1(text.encode()).hexdigest()[:12]}.json"
        path.write_text(text, encoding="utf-8")
        files = sorted(self.export_dir.glob("trace-*.json"), key=lambda p: p.stat().st_mtime)
        for old in files[:-EXPORTS_KEPT]:
            old.unlink(missing_ok=True)
        return Exported(str(path))

    def load_trace(self, shown: Shown, *, lang: str, autoplay: bool = False,
                   example: str | None = None, selected: int = 0) -> Loaded:
        """Show a stored trace (uploaded, an example, a fork: its handle), position `selected` selected, and set the
        widgets to its config."""
        first = self.first_views(shown, lang=lang, autoplay=autoplay, selected=selected)
        trace = shown.trace
        if example is not None:
            first["preset_badge"] = preset_badge(trace.config, lang, example=example)
        pick, prompts = self.pick_for(trace.model, lang)  # its model is picked, when the picker has it
        return Loaded(knobs=knobs_of(trace.config), prompt=prompt_text(trace), trace=shown, banner="",
                      model_pick=pick, model_prompts=prompts, **first)

    def upload(self, *, upload: str | None, lang: str, session: str | None = None, ref: Any = None) -> Loaded:
        """Replay an uploaded trace file: parsed once, shown without the model. `ref`: the handle the page drew
        for it (its read already waits for it)."""
        try:
            trace = read_trace_file(upload, lang)
        except ValueError:
            self.traces.refuse(session, ref)  # the page's read of it stops waiting
            raise
        shown = self.traces.add(session, trace, later=True, handle=ref)
        loaded = self.load_trace(shown, lang=lang)
        entry = self.traces.entry(session, shown.handle)
        if entry is not None:
            settle([entry])  # a page reading it draws its views before Gradio's update of the widgets reaches it
        return loaded

    def example(self, *, example: str, lang: str) -> Loaded:
        if example not in self.examples:
            raise ValueError(f"example={example!r} is invalid: expected one of {' | '.join(self.examples)}")
        return self.load_trace(self.examples[example], lang=lang, example=example)

