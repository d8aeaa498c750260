"""The page's handlers, one object per tab, built around the injected runner(s). No Gradio here.

`Playground(run, ...)` holds `play` (`handlers_play.PlayHandlers`), `compare`
(`handlers_compare.CompareHandlers`) and `sweep` (`handlers_sweep.SweepHandlers`), and the events
that belong to the whole page: the model picker, the language switch (every view re-rendered
from the stored traces) and the `/generate` API. Handlers take keyword arguments named after
the page's components (`page.Page`) and return records of `outputs`, so `ui` wires them by name
and tests call them without a server.

The model never appears here: decodes go through the injected `run` (`core.decoder.Runner`), or
the runner of the entry picked in the model picker (`ModelChoice`).
"""
from __future__ import annotations

import functools
import json
import tempfile
import time
from collections.abc import Callable, Hashable, Iterator, Sequence
import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dllm_viz.app.views import render, world as world_view
from dllm_viz.app.handlers.adapters import config_json, knobs_of, parse_config_json, shown_on
from dllm_viz.app.handlers.compare import FIRST_LESSON, CompareHandlers
from dllm_viz.app.fork_request import ForkRequest, page_fork_json, parse_fork_json
from dllm_viz.app.handlers.fork import Forker, fork_api
from dllm_viz.app.links import parse_link
from dllm_viz.app.strings import LANGS, t
from dllm_viz.app.handlers.play import PlayHandlers, random_seed
from dllm_viz.app.handlers.sweep import SweepHandlers
from dllm_viz.app.handlers.fit import gen_length_max
from dllm_viz.app.handlers.banners import fork_banner, fork_change
from dllm_viz.app.handlers.outputs import (KEEP, CanvasShown, ForkPaired, Linked, Loaded, ModelPicked, Ranges,
                                          Relabelled, SceneSet)
from dllm_viz.app.handlers.scenes import SCENES
from dllm_viz.app.handlers.seats import Seats
from dllm_viz.app.handlers.stops import Stops
from dllm_viz.app.handlers.sweep_grid import SweepResult
from dllm_viz.app.handlers.asking import Ticket
from dllm_viz.app.handlers.live import stream
from dllm_viz.core.budget import Budget
from dllm_viz.core.config import DecodeConfig
from dllm_viz.app.handlers.takeout import TakeoutHandlers
from dllm_viz.app.handlers.traces import Shown, TraceStore
from dllm_viz.core.decoder import Runner
from dllm_viz.core.trace import Trace

OPENING_LENGTH = 64  # the gen length the page opens with, when no example sets it (within the model's context)
# While `/generate` decodes it sends ("", "") at least this often: a client that left is noticed at
# the next one (Gradio stops a stream whose client is gone), and its decode is cancelled.
API_HEARTBEAT_SECONDS = 1.0


@dataclass(frozen=True)
class ModelChoice:
    """One entry of the model picker: how to decode with it and prompts in its language."""

    run: Runner
    prompts: tuple[str, ...]  # example prompts; the first fills the prompt box when picked
    name: str  # the model's name (what traces record)
    token_text: Callable[[int], str] | None = None  # a token's text (the live canvas shows tokens before the trace)
    fork: Forker | None = None  # how a trace of this model forks (`/fork`); None: it does not here
    max_length: int | None = None  # the model's context (prompt + gen_length; the gen length slider ends before it)
    cache_modes: tuple[str, ...] | None = None  # the key-value caches it runs besides none; None: any
    edits_lengths: bool | None = None  # whether it writes DELETE and SPLIT (an insert/delete rule's); None: not known
    resolve: Callable[[Any], Any] | None = None  # a config as it reads it, checked (`Budget.resolve`); None: masked
    canvas: str = "masked"  # the canvas it writes (`rules.canvas_of`): which knobs the page offers and sends


class Playground:
    """Every event handler of the page: one object per tab, and the page-wide ones."""

    def __init__(self, run: Runner, *, examples: Sequence[tuple[str, Trace]] = (), export_dir: str | Path | None = None,
                 new_seed: Callable[[], int] = random_seed, models: dict[str, ModelChoice] | None = None,
                 token_text: Callable[[int], str] | None = None, budget: Budget | None = None,
                 opens_on: str | None = None) -> None:
        self.run = run
        self.models = dict(models or {})  # picker label -> ModelChoice; an unknown or empty pick decodes with `run`
        if opens_on is not None and opens_on not in self.models:
            raise ValueError(f"opens_on={opens_on!r} is invalid: expected an entry of the picker: "
                             f"{', '.join(self.models) or 'none'}")
        self.opens_on = opens_on  # the entry of a model asked for (`dllm-viz serve --model`): the page opens on it
        # the page's own opening decode on it (no example), once finished: every visitor's page plays it (`open_page`)
        self.opened: dict[str, tuple[Shown, str]] = {}  # by language: the published trace, and its banner
        self.token_text = token_text  # `run`'s model's token text
        self.budget = budget or Budget()  # `run`'s model's context, and the work one request may ask for
        export = Path(export_dir or tempfile.mkdtemp(prefix="dllm-viz-"))
        export.mkdir(parents=True, exist_ok=True)
        self.traces = TraceStore()  # every session's traces by handle: what the page reads (`read`)
        self.examples = [(name, self.traces.publish(trace)) for name, trace in examples]  # everyone may read these
        self.seats = Seats()  # the page's decodes at once (`ui` sets its limit): events, starts and sweeps alike
        self.stops = Stops()  # every session's decodes in progress, either tab's: one Stop, one key
        self.play = PlayHandlers(self.runner_for, traces=self.traces, examples=self.examples, export_dir=export,
                                 new_seed=new_seed, token_text_for=self.token_text_for, pick_for=self.pick_for,
                                 budget_for=self.budget_for, cache_modes_for=self.cache_modes_for,
                                 edits_lengths_for=self.edits_lengths_for, canvas_for=self.canvas_for,
                                 seats=self.seats, stops=self.stops)
        self.compare = CompareHandlers(self.runner_for, is_world=self.is_world, traces=self.traces,
                                       token_text_for=self.token_text_for, budget_for=self.budget_for,
                                       canvas_for=self.canvas_for, seats=self.seats, stops=self.stops)
        self.takeout = TakeoutHandlers(export_dir=export)  # the animation download and the trace diff
        self.sweep = SweepHandlers(self.runner_for, budget_for=self.budget_for, canvas_for=self.canvas_for,
                                   seats=self.seats)

    # --- model picker ---------------------------------------------------------------------------
    def runner_for(self, model_pick: str | None) -> Runner:
        """The runner of the picked model (`run` when nothing is picked). Raises ValueError."""
        if not model_pick or not self.models:
            return self.run
        if model_pick not in self.models:
            raise ValueError(f"model_pick={model_pick!r} is invalid: expected one of {', '.join(self.models)}")
        return self.models[model_pick].run

    def budget_for(self, model_pick: str | None) -> Budget:
        """The bounds a request to the picked model is checked against (its context, the page's
        work bound) before anything is sized by it. Raises ValueError for an unknown pick."""
        self.runner_for(model_pick)
        choice = self.models.get(model_pick or "")
        if choice is None or choice.run is self.run:  # `run`'s model: its own entry says how it reads a config
            own = next((c for c in self.models.values() if c.run is self.run and c.resolve is not None), None)
            return self.budget if own is None else dataclasses.replace(self.budget, resolve=own.resolve)
        return Budget(max_length=choice.max_length, max_cells=self.budget.max_cells, resolve=choice.resolve)

    def pick_of(self, model: str | None) -> str | None:
        """The picker's entry for the model named `model` (a trace's `model`), or None."""
        return next((label for label, choice in self.models.items() if choice.name == model), None)

    def pick_for(self, model: str, lang: str) -> tuple[Any, Any]:
        """For a trace of `model` put on show: its picker entry and its example prompts (KEEPs when
        the picker does not have it)."""
        pick = self.pick_of(model)
        if pick is None:
            return KEEP, KEEP
        return pick, render.model_prompts_html(self.models[pick].prompts, lang)

    def token_text_for(self, model_pick: str | None) -> Callable[[int], str]:
        """The picked model's token text; without one, a token shows as its id ("<17>", as a trace
        without its vocab does)."""
        choice = self.models.get(model_pick or "") if self.models else None
        text = choice.token_text if choice is not None else self.token_text
        return text or (lambda i: f"<{i}>")

    def cache_modes_for(self, model_pick: str | None) -> tuple[str, ...] | None:
        """The caches the picked model runs (None: not known, any may be asked)."""
        choice = self.models.get(model_pick or "") if self.models else None
        return None if choice is None or choice.cache_modes is None else ("none", *choice.cache_modes)

    def edits_lengths_for(self, model_pick: str | None) -> bool | None:
        """Whether the picked model can edit lengths (None: not known, an insert/delete rule may be asked)."""
        choice = self.models.get(model_pick or "") if self.models else None
        return None if choice is None else choice.edits_lengths

    def canvas_for(self, model_pick: str | None) -> str:
        """The canvas the picked model writes (nothing picked: `run`'s model's, its own entry of the picker)."""
        choice = self.models.get(model_pick or "") if self.models else None
        if choice is None:
            choice = next((c for c in self.models.values() if c.run is self.run), None)
        return "masked" if choice is None else choice.canvas

    def canvas_shown(self, *, model_pick: str | None) -> CanvasShown:
        """The widgets and groups the page shows for the picked model's canvas (the others are hidden, not sent); the
        scenes' box where the page has scenes."""
        shown = shown_on(self.canvas_for(model_pick))
        return dataclasses.replace(shown, scenes_box=shown.scenes_box and bool(self.scene_keys()))

    def ranges(self, *, model_pick: str | None) -> Ranges:
        """The gen length sliders' end for the model on show (its context, less room for a prompt)."""
        choice = self.models.get(model_pick or "") if self.models else None
        longest = gen_length_max(choice.max_length if choice is not None else None)
        return Ranges(gen_length=longest, sweep_gen_length=longest)

    def is_world(self, model_pick: str | None) -> bool:
        """Whether the picked model writes the world language (its runs can be checked)."""
        choice = self.models.get(model_pick or "")
        return choice is not None and choice.name in world_view.CHECKED_MODELS

    def pick_model(self, *, model_pick: str, lang: str = "en", lesson_key: str | None = None,
                   gen_length: int | None = None, cmp_a: str | None = None, cmp_b: str | None = None) -> ModelPicked:
        """A model was picked: its first example prompt goes in the prompt box, the others are listed
        (and fill the Sweep's prompts), the gen length comes within its context, the lesson on
        show names what was measured on this model, and Compare's configs A and B, where they set knobs its canvas
        lacks, become the ones the tab offers on it (`CompareHandlers.pair_for`)."""
        self.runner_for(model_pick)  # ValueError for an unknown label
        prompts = self.models[model_pick].prompts
        longest = self.ranges(model_pick=model_pick).gen_length
        fits = gen_length is None or not isinstance(gen_length, (int, float)) or gen_length <= longest
        pair = (KEEP, KEEP) if self.compare.pair_fits(model_pick, cmp_a, cmp_b) else self.compare.pair_for(model_pick)
        return ModelPicked(prompt=prompts[0] if prompts else KEEP,
                           model_prompts=render.model_prompts_html(prompts, lang),
                           lesson_text=self.compare.lesson_text(lesson_key, lang, model_pick=model_pick) or KEEP,
                           gen_length=KEEP if fits else longest,
                           sweep_prompts="\n".join(prompts[:2]) if prompts else KEEP, cmp_a=pair[0], cmp_b=pair[1])

    # --- the page opening ------------------------------------------------------------------------
    def opening(self) -> tuple[str | None, str | None]:
        """The picker entry the page opens on and the example it plays (None: no example; without a link, the page
        then decodes the entry's first prompt as it loads: `open_page`).

        A model asked for (`opens_on`) opens with its first example, else with that decode; without one the page
        opens on the first example, on its model's entry (the world model's, as served: its checker shows which
        sentences hold)."""
        if self.opens_on is not None:
            name = self.models[self.opens_on].name
            return self.opens_on, next((ex for ex, shown in self.examples if shown.trace.model == name), None)
        if not self.examples:
            return next(iter(self.models), None), None
        example, shown = self.examples[0]
        return self.pick_of(shown.trace.model) or next(iter(self.models), None), example

    def opening_config(self) -> DecodeConfig:
        """The settings the page opens with when no example sets them: the balanced preset, within the context of
        the model it opens on (a renoising model reads only its gen length and seed: its knobs stay "auto")."""
        pick, _ = self.opening()
        return DecodeConfig.preset("balanced", min(OPENING_LENGTH, self.ranges(model_pick=pick).gen_length))

    def open_page(self, *, query: dict[str, str], lang: str, session: str | None = None) -> Iterator[Linked]:
        """The page was opened: a link's trace decoded (`play.open_link`); without a link, on a model asked for that
        has no example to play, its first prompt decoded as a link to it would be (streamed), then its trace played
        from the start as an example is on arrival (the walkthrough starts over it).

        That decode is the same for every visitor (one prompt, one config, its seed): the first page to finish it
        publishes its trace (`opened`, with its banner in the page's language), and every later page in that language
        plays that one, as an example, without a decode."""
        if lang not in LANGS:  # before any decode, and nothing kept for it (`opened` holds one trace per language)
            raise ValueError(f"lang={lang!r} is invalid: expected one of {' | '.join(LANGS)}")
        pick, example = self.opening()
        own = not query.get("config") and self.opens_on is not None and example is None and self.models[pick].prompts
        if own:
            fields = {k: v for k, v in self.opening_config().to_dict().items() if v is not None}
            query = {"model": pick, "prompt": self.models[pick].prompts[0], "config": json.dumps(fields)}
            if lang in self.opened:  # decoded for an earlier visitor
                shown, banner = self.opened[lang]
                link = parse_link(query)
                yield self.compare_fitted(Linked(
                    knobs=knobs_of(link.config), prompt=link.prompt, model_pick=pick, trace=shown, banner=banner,
                    cmp_a=KEEP, cmp_b=KEEP, lesson_text=KEEP,
                    **self.play.first_views(shown, lang=lang, autoplay=True, selected=0)), pick, lang)
                return
        picked, forks = None, parse_link(query).forks
        for view in self.play.open_link(query=query, lang=lang, session=session):
            picked = picked if view.model_pick is KEEP else view.model_pick
            if forks and view.trace is not KEEP:  # a fork's link: its fork points made again, in order
                view = self._forked(view, forks, lang=lang, session=session)
            if own and view.trace is not KEEP:
                view = dataclasses.replace(view, **self.play.first_views(view.trace, lang=lang, autoplay=True,
                                                                         selected=0))
                published = dataclasses.replace(self.traces.publish(view.trace.trace), banner=view.trace.banner)
                self.opened[lang] = (published, view.banner)
            yield self.compare_fitted(view, picked, lang) if view.trace is not KEEP and picked else view

    def _forked(self, view: Linked, forks: Sequence[ForkRequest], *, lang: str, session: str | None) -> Linked:
        """A link's decode (`view`, finished) forked as its fork points say (`links.Link.forks`), shown at the link's
        frame and position (the view's), with the fork's settings and its banner."""
        decoded = view.trace.trace
        out, fork = decoded, self.forker_for(decoded.model)
        for change in forks:
            out = fork(out, change.step, force=change.force, remask=change.remask, knobs=change.knobs)
        shown = self._kept_fork(session, view.trace, out)
        frame, selected = view.canvas["frame"], view.canvas["selected"]
        return dataclasses.replace(view, trace=shown, banner=shown.banner(lang), knobs=knobs_of(out.config),
                                   **self.play.first_views(shown, lang=lang, frame=frame, selected=selected))

    def _kept_fork(self, session: str | None, parent: Shown, fork: Trace) -> Shown:
        """`fork` of the trace `parent` kept for `session` by handle, with its banner (`fork_banner`) and its parent one
        level deep (a chain of forks keeps no chain of traces)."""
        kept = self.traces.add(session, fork)
        return dataclasses.replace(kept, banner=functools.partial(fork_banner, parent.trace, fork),
                                   parent=dataclasses.replace(parent, parent=None))

    def compare_fitted(self, view: Linked, pick: str, lang: str) -> Linked:
        """`view` (a link's trace, opened on the model `pick`) with the Compare tab fitted to that model: configs A and
        B the link's where it names them, else the pair the tab offers there (`CompareHandlers.pair_for`: a model of
        another canvas than the page opened on takes its own), and the first lesson's text as measured on it."""
        a, b = self.compare.pair_for(pick)
        return dataclasses.replace(view, cmp_a=a if view.cmp_a is KEEP else view.cmp_a,
                                   cmp_b=b if view.cmp_b is KEEP else view.cmp_b,
                                   lesson_text=self.compare.lesson_text(FIRST_LESSON, lang, model_pick=pick))

    # --- scenes ---------------------------------------------------------------------------------
    def scene_keys(self) -> tuple[str, ...]:
        """The scenes whose model the picker has (the page shows a button for each)."""
        return tuple(key for key, scene in SCENES.items() if self.pick_of(scene.model) is not None)

    def scene(self, key: str, *, lang: str = "en") -> SceneSet:
        """A scene button: its model picked, its prompt, its whole settings (the decode follows)."""
        if key not in SCENES:
            raise ValueError(f"scene={key!r} is invalid: expected one of {' | '.join(SCENES)}")
        scene = SCENES[key]
        pick = self.pick_of(scene.model)
        if pick is None:
            raise ValueError(f"scene={key!r} needs the model {scene.model}, which this page does not serve")
        return SceneSet(knobs=knobs_of(scene.config()), prompt=scene.prompt, model_pick=pick,
                        model_prompts=render.model_prompts_html(self.models[pick].prompts, lang))

    # --- language -------------------------------------------------------------------------------
    def relabel(self, *, lang: str, trace: Shown | None, temperature: float, cmp_traces: tuple[Shown, Shown] | None,
                sweep_state: SweepResult | None, lesson_key: str | None, model_pick: str | None = None,
                cmp_summary: str | None = None, banner: str | None = None, **settings: Any) -> Relabelled:
        """Every rendered view again, in `lang`, from the stored traces (no decode): the page redraws the
        traces it holds in `lang`, told so by their handles' values. The banners on show are said again in `lang`:
        the Playground's (`banner`: what its decode said, kept with its trace, or that a decode was stopped; any
        other is cleared) and a stopped compare's (`cmp_summary`)."""
        canvas = facts = badge = KEEP
        if trace is not None:  # the same trace: the page keeps its cursor and playback
            first = self.play.first_views(trace, lang=lang)
            canvas, facts, badge = first["canvas"], first["facts"], first["preset_badge"]
        else:  # no trace yet: the badge of what a Run would decode (the page opened with one)
            said = self.play.badge_for({"temperature": temperature, **settings}, model_pick=model_pick, lang=lang)
            badge = KEEP if said is None else said
        pair = cmp_traces
        summary = render.divergence_text(pair[0].trace, pair[1].trace, lang) if pair else ""
        compare = self.compare.view(pair, summary=summary, lang=lang)  # KEEP without a pair
        if pair is None and cmp_summary in {t("cmp_stopped", other) for other in LANGS}:
            compare = dataclasses.replace(compare, cmp_summary=t("cmp_stopped", lang))
        return Relabelled(
            compare=compare,
            sweep=self.sweep.view(sweep_state, lang=lang),
            canvas=canvas, facts=facts, banner=self._banner_in(lang, banner, trace), preset_badge=badge,
            lesson_text=self._lesson_text(lesson_key, pair, lang, model_pick),
            model_prompts=render.model_prompts_html(self.models[model_pick].prompts, lang)
            if model_pick in self.models else KEEP,
            k_steps=self.play.k_steps(lang=lang, temperature=temperature, **settings).k_steps,
        )

    def _lesson_text(self, lesson_key: str | None, pair: tuple[Shown, Shown] | None, lang: str,
                     model_pick: str | None) -> str:
        """The text in the Compare tab's lesson place, in `lang`: the lesson's, or for a fork beside its parent (no
        lesson made that pair: `fork_pair`) which side is which."""
        if not lesson_key and pair is not None and pair[1].trace.forks:
            return t("fork_pair_text", lang, what=fork_change(pair[1].trace, lang))
        return self.compare.lesson_text(lesson_key, lang, model_pick=model_pick)

    @staticmethod
    def _banner_in(lang: str, banner: str | None, trace: Shown | None) -> str:
        """The Playground's banner on show (`banner`, in any language) said in `lang`: "" when none is on show."""
        if not banner:
            return ""
        if banner in {t("banner_stopped", other) for other in LANGS}:
            return t("banner_stopped", lang)
        return trace.banner(lang) if trace is not None and trace.banner is not None else ""

    # --- API -----------------------------------------------------------------------------------
    def generate(self, prompt: str, config_json: str, *, client: Hashable = None) -> Iterator[tuple[str, str]]:
        """Decode `prompt` with a JSON object of DecodeConfig fields (missing keys: the balanced preset, or on a
        renoising model its own defaults, `parse_config_json`):
        ("", "") at least every API_HEARTBEAT_SECONDS while it decodes, then (text, trace JSON).

        `client` is who asks (the engine serves clients in turn). A client that stops reading (Gradio
        closes this stream when its connection is gone) cancels the decode, waiting or running."""
        cfg = parse_config_json(config_json, canvas=self.canvas_for(None))  # the served model's canvas
        self.budget_for(None).check(cfg)  # as `run`'s model reads it
        beat = time.monotonic()
        steps = stream(self.run, [prompt or ""], [cfg], idle=API_HEARTBEAT_SECONDS, ticket=Ticket(client=client))
        try:
            for kind, item in steps:
                if kind == "done":
                    trace = item[0]
                    yield trace.text or "", trace.to_json()
                    return
                if time.monotonic() - beat >= API_HEARTBEAT_SECONDS:
                    beat = time.monotonic()
                    yield "", ""
        finally:
            steps.close()  # the client left (or the decode failed): cancelled, waiting or running

    def fork(self, trace_json: str, fork_json: str) -> tuple[str, str, str]:
        """Fork a trace at a step (`core.fork`): `fork_json` is `{"step": s, "force": {position: id},
        "remask": [positions], "knobs": {field: value}}`; returns the fork's text, its trace JSON and the
        world checker's verdicts on the trace and the fork (`null` for another model)."""
        return fork_api(self.forker_for, trace_json, fork_json)

    def can_fork(self, trace: Trace) -> bool:
        """Whether the inspector may fork `trace` here (`fork_here`): a trace of a model an entry of the picker forks
        (`forking_models`: the page's own test, given them once); a renoising one forks by its knobs alone (`core.fork`
        refuses its forced tokens by name; the page offers it the settings' row only)."""
        return trace.model in self._forkers()

    def forking_models(self) -> tuple[str, ...]:
        """The names of the models whose traces fork here: the page offers the inspector's fork on their traces (a
        renoising one: its settings' row only; `web.options(forks=...)`, page.js)."""
        return tuple(sorted(self._forkers()))

    def fork_here(self, *, fork_request: str, trace: Shown | None, lang: str, session: str | None = None) -> Loaded:
        """The inspector's fork of the trace on show (`trace`): `fork_request` is `/fork`'s change (`parse_fork_json`:
        the step of the canvas on show, a token forced at a position, a candidate the trace recorded (`page_fork_json`),
        positions taken back, or settings switched). The fork (`core.fork`, on the trace's own model, within the
        server's bounds) is shown as a loaded trace is, the position it changed selected (a setting switched: the first
        that ends otherwise), and the banner says how far it went from its parent. ValueError names what is wrong (the
        trace on show stays)."""
        if trace is None or not self.can_fork(trace.trace):
            raise ValueError("fork_request: the trace on show cannot be forked here: expected a trace by a model this "
                             f"server runs ({', '.join(sorted(self._forkers())) or 'none'})")
        parent = trace.trace
        request = parse_fork_json(page_fork_json(fork_request, parent))
        out = self.forker_for(parent.model)(parent, request.step, force=request.force, remask=request.remask,
                                            knobs=request.knobs)
        shown = self._kept_fork(session, trace, out)
        # the position it changed; a setting switched: the first that ends with another token than the parent's
        changed = [*request.force, *request.remask] or [p for p, (a, b) in enumerate(zip(parent.token_ids,
                                                                                        out.token_ids)) if a != b]
        loaded = self.play.load_trace(shown, lang=lang, selected=changed[0] if changed else 0)
        return dataclasses.replace(loaded, banner=shown.banner(lang))

    def fork_pair(self, *, trace: Shown | None, lang: str, session: str | None = None) -> ForkPaired:
        """The fork on show beside the trace it left (its banner's link): Compare's view of the pair, in step (A the
        parent, B the fork; no decode), and a text saying which is which in the lesson's place. ValueError for a trace
        that is no fork made here."""
        if trace is None or trace.parent is None:
            raise ValueError("fork_pair: the trace on show is no fork made on this page: expected a fork of the "
                             "inspector (or of a fork's link)")
        parent = trace.parent
        if self.traces.entry(session, parent.handle) is None:  # (the session's store may have let it go since)
            parent = dataclasses.replace(self.traces.add(session, parent.trace), banner=parent.banner)
        pair = (parent, dataclasses.replace(trace, parent=None))
        summary = render.divergence_text(parent.trace, trace.trace, lang)
        return ForkPaired(compare=self.compare.view(pair, summary=summary, lang=lang), lesson_key=None,
                          cmp_a=config_json(parent.trace.config), cmp_b=config_json(trace.trace.config),
                          lesson_text=self._lesson_text(None, pair, lang, None))

    def _forkers(self) -> dict[str, Forker]:
        """Model name -> how it forks, for each entry of the picker that forks (`ModelChoice.fork`)."""
        return {choice.name: choice.fork for choice in self.models.values() if choice.fork is not None}

    def forker_for(self, model: str) -> Forker:
        """How the model named `model` (a trace's) forks here; ValueError when no entry of the picker can."""
        able = self._forkers()
        if model not in able:
            raise ValueError(f"trace model={model!r} is invalid for a fork here: expected a trace of a model this "
                             "server runs (a fork replays the trace on its own model): "
                             + (", ".join(sorted(able)) or "none can fork"))
        return able[model]
