"""The Gradio page: `build_demo(run, ...) -> gr.Blocks`. Thin: it composes the tab builders and wires events.

The model never appears here: `run(prompts, configs, *, on_step=None, record_candidates=5)` is
injected by the entry script (plain `decode` on a model, or the shared engine). Each tab's
widgets come from its builder (`layout_header`, `layout_play`, `layout_compare`, `layout_sweep`)
into one `page.Page`; every event goes through one `wiring.wire`, which maps a handler's keyword
arguments and its result's fields (`outputs`) onto `Page` attributes when the page is built, so a
misspelt name fails at build time. Handlers (`playground.Playground`: one object per tab) return
plain values (or `KEEP`); only `wiring` speaks Gradio to them.

Events carry control values and handles, never traces: a trace travels once, as the chunks of
`views.wire`, read by the page itself from the canvas's server functions (`page_server`: `dv_stream`,
a decode in progress step by step as it is computed, in one streamed answer; `dv_read`, an answer a
call). The page draws every view of it (the renderer, `views.web`: `app/web/*.js`, run as the canvas's
`js_on_load`, plotly.js loaded by the canvas's `head`): moving the cursor sends nothing to the server.

Gradio 6 takes theme and CSS in `launch()`: launch with `**launch_options()`.
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import gradio as gr

from dllm_viz.app import early, fn_route
from dllm_viz.app.handlers.adapters import config_to_settings
from dllm_viz.app.handlers.fit import gen_length_max
from dllm_viz.app.handlers.play import random_seed
from dllm_viz.app.strings import t
from dllm_viz.app.layout.compare import build_compare_tab
from dllm_viz.app.layout.header import build_about_tab, build_footer, build_header
from dllm_viz.app.layout.play import build_play_tab
from dllm_viz.app.layout.sweep import build_sweep_tab
from dllm_viz.studies.lessons import DEFAULT_PROMPTS
from dllm_viz.app.handlers.outputs import (
    AUTO_OF,
    CANVAS_KNOB_SPECS,
    Animated,
    AutoStates,
    CanvasShown,
    CompareCleared,
    CompareShown,
    DecodeFirst,
    ForkPaired,
    DecodeStopped,
    Diffed,
    Exported,
    Knobs,
    RULE_KNOB_SPECS,
    SCHEDULE_KNOB_SPECS,
    KnobStates,
    KSteps,
    LessonShown,
    Linked,
    Loaded,
    ModelPicked,
    Ranges,
    Relabelled,
    Reseeded,
    RuleStates,
    SceneSet,
    StageStates,
    SweepShown,
    values_of,
)
from dllm_viz.app.page_server import (PAIR_JS, UPLOAD_JS, compare_inputs, decode_inputs, lesson_inputs, new_ref_js,
                                      read_traces)
from dllm_viz.app.views import web
from dllm_viz.app.layout.page import Labels, Page
from dllm_viz.app.views.palette import PAGE_CSS, toast_heading_css
from dllm_viz.app.handlers.playground import ModelChoice, Playground
from dllm_viz.app.wiring import user_errors, wire
from dllm_viz.core.budget import Budget
from dllm_viz.core.decoder import Runner
from dllm_viz.core.trace import Trace

# Sliders that re-run the decode when released (or when a value is typed into their number box), and the
# choices that re-run it when picked: the step's own, then every rule plug-in's knob by its kind (its spec).
_PLUGIN_SPECS = (*SCHEDULE_KNOB_SPECS, *RULE_KNOB_SPECS, *CANVAS_KNOB_SPECS)
RELEASE_KNOBS = ("gen_length", "temperature", "block_length", "top_p", "t_early", "t_middle", "t_late",
                 "early_stop_threshold", *(k.name for k in _PLUGIN_SPECS if k.kind not in ("choice", "bool")))
CHOICE_KNOBS = ("confidence", "stages_on", "confidence_from", "sample_scope", "rng", "early_stop", "cache",
                "cache_drift", "revise", "indel", *(k.name for k in _PLUGIN_SPECS if k.kind in ("choice", "bool")),
                *AUTO_OF.values())
K_KNOBS = ("gen_length", "top_k", "decay", "min_k", "steps", "schedule", "block_length")  # change the k sequence
# Ends page.js's busy look on the Compare canvases (set when a lesson or Compare button is clicked).
IDLE_JS = "() => { if (window.__dvIdle) window.__dvIdle(); }"
# Plotly sizes a figure updated inside a hidden tab to its default width; a resize event when a
# tab is shown lets the responsive figures fit their containers again.
RESIZE_JS = "() => { setTimeout(() => window.dispatchEvent(new Event('resize')), 60); }"


def launch_options() -> dict[str, Any]:
    """Theme and CSS, the page's first script (`early`: before Gradio's own) and the route of its streams
    (`fn_route`); Gradio 6 takes them in `launch()`, so app.py and the tests pass these."""
    theme = gr.themes.Soft(primary_hue="violet", secondary_hue="sky", neutral_hue="slate",  # fonts: no web fonts
                           font=[gr.themes.Font(f) for f in ("Inter", "ui-sans-serif", "system-ui", "sans-serif")])
    return {"theme": theme, "css": PAGE_CSS + toast_heading_css(),
            "app_kwargs": {"middleware": [early.middleware(), fn_route.middleware()]}}


FORK_CONCURRENCY = 2  # `/fork` calls at once: each decodes beside the engine, not in its turns (`serve.fair`)


def build_demo(
    run: Runner,
    *,
    examples: Sequence[tuple[str, Trace]] = (),
    model_name: str = "model",
    max_length: int | None = None,
    default_prompt: str = DEFAULT_PROMPTS[0],
    concurrency_limit: int | None = 1,
    new_seed: Callable[[], int] = random_seed,
    export_dir: str | Path | None = None,
    models: dict[str, ModelChoice] | None = None,
    token_text: Callable[[int], str] | None = None,
    max_cells: int | None = None,
    api_concurrency_limit: int | None | str = "same",
    session_ttl: float | None = None,
    opens_on: str | None = None,
) -> gr.Blocks:
    """The whole page. `run` decodes (see `core.decoder.Runner`); `examples` are (name, trace) shown first.

    `models`: the model picker's entries (label -> `ModelChoice`), the first being the one `run`
    decodes with; without it (or with one entry) there is no picker. `max_cells`: the most work
    (steps x positions) one request may ask for (`core.budget`). `concurrency_limit` bounds the page's
    decode events and `api_concurrency_limit` (default: the same) the `/generate` API, each in a group
    of its own, so API calls never hold the page's workers; `/fork` decodes outside the shared engine
    (it replays one request on a batch of its own), so at most FORK_CONCURRENCY run at once, in a
    group of their own. `session_ttl`: seconds a session's traces stay after its last event
    (`gr.State(time_to_live=...)`; None: Gradio's default). `opens_on`: the entry of `models` of a model asked
    for (`dllm-viz serve --model`): the page opens on it, with its first example or else its first prompt
    decoded as the page loads (`Playground.opening`); None: on the first example's model.
    """
    pg = Playground(run, examples=examples, export_dir=export_dir, new_seed=new_seed, models=models,
                    token_text=token_text, budget=Budget(max_length=max_length, max_cells=max_cells),
                    opens_on=opens_on)
    gr.set_static_paths([web.PLOTLY_JS])  # the page loads plotly.js from the app itself
    labels = Labels("en")
    pick, opens = pg.opening()[0], opened(pg, labels.lang, default_prompt)  # the model the page opens on, as shown
    tabs: dict[str, Any] = {}
    longest = pg.ranges(model_pick=pick).gen_length if pick else gen_length_max(max_length)
    with gr.Blocks(title="dllm-viz", delete_cache=(3600, 3600)) as demo:
        c = build_header(labels, model_name=model_name, models=dict(models or {}), pick=pick)
        c["trace"] = gr.State(opens["first"])
        with gr.Tabs(elem_id="dv-root-tabs", overflow_behavior="wrap"):  # no tab hides behind "..." on a phone
            with labels.add(gr.Tab(t("tab_play", labels.lang)), "tab_play") as tabs["play"]:
                c = merged(c, build_play_tab(labels, pg.play, **opens, examples=[name for name, _ in examples],
                                             longest=longest, scenes=pg.scene_keys(), forks=pg.forking_models(),
                                             server=read_traces(pg.traces, pg.play, pg.compare, lambda: demo.page)))
            with labels.add(gr.Tab(t("tab_compare", labels.lang), elem_id="dv-tab-compare"),
                            "tab_compare") as tabs["compare"]:
                c = merged(c, build_compare_tab(labels, pg.compare, model_pick=pick))
            with labels.add(gr.Tab(t("tab_sweep", labels.lang)), "tab_sweep") as tabs["sweep"]:
                c = merged(c, build_sweep_tab(labels, longest=longest, prompts=models[pick].prompts
                                              if models and pick in models else DEFAULT_PROMPTS))
            with labels.add(gr.Tab(t("tab_about", labels.lang)), "tab_about") as tabs["about"]:
                build_about_tab(labels)
        build_footer(labels)

        page = Page(**c, tabs=tabs, labels=labels.items)
        pg.seats.limit = concurrency_limit  # the decode group's events, and the decodes the page starts before them
        state_ttl(page, session_ttl)
        wire_play(page, pg, concurrency_limit)
        wire_compare(page, pg, concurrency_limit)
        wire_sweep(page, pg, concurrency_limit)
        wire_page(page, pg, concurrency_limit)
        # A link opened (`links`): its settings, its trace decoded at its step and position.
        linked = wire(page, demo.load, pg.open_page, ins=(page.lang,), out=Linked, request=("query", "session"),
                      **_decode_kw(page, concurrency_limit))
        after_decode(page, pg, linked)
        ranges_after(page, pg, linked.success)  # a link of another model: the sliders' ends follow it
        wire_stop(page, pg)
        demo.unload(release_traces(pg))
        api = concurrency_limit if api_concurrency_limit == "same" else api_concurrency_limit
        gr.api(api_generate(pg), api_name="generate", concurrency_limit=api, concurrency_id="api")
        forks = FORK_CONCURRENCY if api is None else min(FORK_CONCURRENCY, api)
        wire_fork(page, pg, forks)
        gr.api(user_errors(pg.fork), api_name="fork", concurrency_limit=forks, concurrency_id="fork")
    # for tests and other front ends: the page, the traces it reads by handle, the decodes it starts itself
    demo.page, demo.traces, demo.starts = page, pg.traces, {"play": pg.play.starts, "compare": pg.compare.starts}
    return demo


def merged(c: dict[str, Any], part: dict[str, Any]) -> dict[str, Any]:
    """The page's components `c` and a builder's `part`, the groups each shows by the canvas of the model on show
    (`boxes`: the header's subtitles, the Playground's boxes, the Compare tab's lessons, the Sweep's grid and its
    note on another canvas) gathered."""
    return c | part | {"boxes": {**c.get("boxes", {}), **part.get("boxes", {})}}


def opened(pg: Playground, lang: str, default_prompt: str) -> dict[str, Any]:
    """What the Playground tab shows as the page opens (`Playground.opening`): the example it plays (its trace
    `first`, its views `shown`, its settings), else the opening settings and the first prompt of the model it opens
    on (decoded as the page loads: `Playground.open_page`)."""
    pick, example = pg.opening()
    first = dict(pg.examples)[example] if example is not None else None
    config = first.trace.config if first else pg.opening_config()
    settings = config_to_settings(config)
    # without an example, the badge says what a Run of the opening settings decodes already: its line never appears
    # under the visitor's pointer as the first decode lands (it moved every knob below it down a line)
    shown = (values_of(pg.play.load_trace(first, lang=lang, autoplay=True, example=example)) if first
             else {"preset_badge": pg.play.badge_for(settings, model_pick=pick, lang=lang) or ""})
    prompts = pg.models[pick].prompts if pick else ()
    return {"first": first, "example": example, "shown": shown, "settings": settings,
            "default_prompt": prompts[0] if prompts else default_prompt}


def show(page: Page, shown: CanvasShown) -> None:
    """Each widget and group of `shown` visible or not, as the page is built (a model pick changes it after)."""
    for name, visible in values_of(shown).items():
        getattr(page, name).visible = visible


def state_ttl(page: Page, seconds: float | None) -> None:
    """Every session state of the page expires `seconds` after it was last set (Gradio deletes it;
    `state_session_capacity` in `launch` bounds how many sessions are kept at all)."""
    if seconds is None:
        return
    for name in ("trace", "cmp_traces", "sweep_state", "lesson_key"):
        state = getattr(page, name, None)
        if isinstance(state, gr.State):
            state.time_to_live = seconds


def release_traces(pg: Playground) -> Callable[[gr.Request], None]:
    """When a page closes, the traces its session could read by handle go (`traces.TraceStore.release`)."""

    def release(request: gr.Request) -> None:
        pg.traces.release(getattr(request, "session_hash", None))

    return release


def api_generate(pg: Playground) -> Callable[..., Any]:
    """`/generate` as Gradio serves it: typed for the API page (two strings in, two out; a stream,
    see `Playground.generate`), the caller's address as its client."""

    def generate(prompt: str, config_json: str, request: gr.Request) -> tuple[str, str]:  # (a generator)
        yield from pg.generate(prompt, config_json, client=("api", getattr(request.client, "host", None)))

    return user_errors(generate)


# ----- events ------------------------------------------------------------------------------------
QUIET = dict(show_progress="hidden")


def _decode_kw(page: Page, concurrency_limit: int | None) -> dict[str, Any]:
    # No Gradio progress: the decode streams its own (a live canvas after each step, with a bar of
    # steps done against planned and a Stop button). Gradio's tracker on the canvas also cost the
    # browser ~50 ms at the click and slowed the decode's forwards by ~20% (measured on 2 cores).
    return dict(concurrency_limit=concurrency_limit, concurrency_id="decode", trigger_mode="always_last",
                show_progress="hidden")


def decode_on(p: Page, pg: Playground, trigger: Callable[..., Any], concurrency_limit: int | None) -> Any:
    """One decode (one call to `run`, streamed), then the rest of the views, then the download file.
    The page starts the decode itself as the event starts (`new_ref_js`, `page_server`); the event adopts
    it. Returns the decode event."""
    ev = wire(p, trigger, pg.play.decode_stream, ins=decode_inputs(p), out=DecodeFirst, request=("session",),
              js=new_ref_js(p, RELEASE_KNOBS), **_decode_kw(p, concurrency_limit))
    return after_decode(p, pg, ev)


def after_decode(p: Page, pg: Playground, ev: Any) -> Any:
    """What follows a decode event: on failure the widgets go back to the trace on show; on success
    the download file. Returns `ev`."""
    play = pg.play
    wire(p, ev.failure, play.revert, ins=(p.trace,), out=Knobs, **QUIET)  # widgets never disagree with the views
    wire(p, ev.success, play.export, ins=(p.trace,), out=Exported, **QUIET)
    return ev


def wire_play(p: Page, pg: Playground, concurrency_limit: int | None) -> None:
    """The Playground tab: every decode trigger, presets and scenes, the k line, traces in and out. (The cursor
    and everything that follows it live in the page: page.js.)"""
    play = pg.play

    def decode(trigger: Callable[..., Any]) -> None:
        decode_on(p, pg, trigger, concurrency_limit)

    decode(p.run.click)
    decode(p.prompt.submit)
    decode(p.seed.submit)
    for name in RELEASE_KNOBS:
        decode(getattr(p, name).release)  # release re-runs the decode at once; no Run click needed
    for name in CHOICE_KNOBS:
        decode(getattr(p, name).input)
    decode(p.schedule.input)
    # Instant handlers that fill widgets before a decode show no progress of their own: Gradio's
    # "full" tracker animates a spinner on every widget (hundreds of DOM changes in 0.3 s), and that
    # ran while the decode that follows was computing.
    decode(wire(p, p.new_seed.click, play.reseed, out=Reseeded, **QUIET).then)
    for name, button in p.presets.items():
        filled = wire(p, button.click, functools.partial(play.preset, name), ins=(p.gen_length,), out=Knobs,
                      **QUIET)
        decode(filled.then)
    for key, button in p.scenes.items():  # a scene: its model, prompt and settings, then one decode
        scene = wire(p, button.click, functools.partial(pg.scene, key), ins=(p.lang,), out=SceneSet, **QUIET)
        decode(ranges_after(p, pg, scene.then))
    # Whatever sets the schedule (the dropdown, a preset, an example), its sliders follow; so do the
    # stage sliders the staged-temperature switch.
    wire(p, p.schedule.change, play.knob_states, ins=(p.schedule,), out=KnobStates, as_update="interactive", **QUIET)
    wire(p, p.stages_on.change, play.stage_states, ins=(p.stages_on,), out=StageStates, as_update="interactive",
         **QUIET)
    for chooser in (p.revise, p.indel):  # the knobs of the revision and insert/delete rules chosen
        wire(p, chooser.change, play.rule_states, ins=(p.revise, p.indel), out=RuleStates, as_update="interactive",
             **QUIET)
    autos = tuple(getattr(p, name) for name in AUTO_OF.values())
    for auto in autos:  # a canvas knob's "auto" switch greys its slider out
        wire(p, auto.change, play.auto_states, ins=autos, out=AutoStates, as_update="interactive", **QUIET)
    for name in K_KNOBS:
        wire(p, getattr(p, name).change, play.k_steps, ins=(p.lang, *p.knobs), out=KSteps, trigger_mode="always_last",
             **QUIET)

    # Traces in and out: each file parsed once, no model call; the page reads the trace by its handle.
    # An upload's handle is drawn by the page (`UPLOAD_JS`), which reads the trace as soon as the server has it.
    for trigger, fn, ins, asked, js in ((p.example.input, play.example, (p.example, p.lang), (), None),
                                        (p.upload.upload, play.upload, (p.upload, p.lang, p.ref), ("session",),
                                         UPLOAD_JS)):
        loaded = wire(p, trigger, fn, ins=ins, out=Loaded, request=asked, show_progress="minimal",
                      show_progress_on=[p.canvas], js=js)
        wire(p, ranges_after(p, pg, loaded.success), play.export, ins=(p.trace,), out=Exported, **QUIET)
    wire_takeout(p, pg)


def wire_takeout(p: Page, pg: Playground) -> None:
    """The trace on show as an animation file, and diffed against an uploaded trace file (`handlers.takeout`):
    no model call; an error names what is wrong and leaves the page as it was."""
    wire(p, p.anim_make.click, pg.takeout.animation, ins=(p.trace, p.anim_format, p.lang), out=Animated,
         show_progress="minimal", show_progress_on=[p.anim_file])
    diffed = wire(p, p.diff_upload.upload, pg.takeout.diff, ins=(p.diff_upload, p.trace, p.lang), out=Diffed, **QUIET)
    wire(p, diffed.failure, pg.takeout.cleared, out=Diffed, **QUIET)  # no summary of another file stays on show


def ranges_after(p: Page, pg: Playground, trigger: Callable[..., Any]) -> Any:
    """After `trigger` (anything that may put another model on show: the picker, a scene, a trace or a
    link of another model), the sliders' ends follow the model on show. Returns the event's `.then`."""
    return wire(p, trigger, pg.ranges, ins=(p.model_pick,), out=Ranges, as_update="maximum", **QUIET).then


def wire_stop(p: Page, pg: Playground) -> None:
    """Stop (drawn in the live canvas, which clicks this hidden button): the session's decode in
    progress ends its stream (its next step raises in the runner: `live.stream`) and the trace on
    show comes back. No Gradio `cancels`: see `PlayHandlers.stopped`."""
    wire(p, p.stop.click, pg.play.stopped, ins=(p.trace, p.lang, p.stop_key), out=DecodeStopped,
         request=("session",), **QUIET)


def wire_fork(p: Page, pg: Playground, forks: int | None) -> None:
    """The inspector's fork buttons (drawn by the page, which puts their change in the hidden box and clicks this
    hidden button): the trace on show forked from the canvas on show (`Playground.fork_here`: outside the engine,
    as `/fork`, and in its group), shown as a loaded trace is; then the sliders' ends and its download file. Its
    banner's link shows it beside the trace it left, in the Compare tab (`Playground.fork_pair`, no decode)."""
    forked = wire(p, p.fork.click, pg.fork_here, ins=(p.fork_request, p.trace, p.lang), out=Loaded,
                  request=("session",), concurrency_limit=forks, concurrency_id="fork", show_progress="minimal",
                  show_progress_on=[p.canvas])
    wire(p, ranges_after(p, pg, forked.success), pg.play.export, ins=(p.trace,), out=Exported, **QUIET)
    wire(p, p.fork_pair.click, pg.fork_pair, ins=(p.trace, p.lang), out=ForkPaired, request=("session",), **QUIET)


def _compare_kw(concurrency_limit: int | None) -> dict[str, Any]:
    return dict(concurrency_limit=concurrency_limit, concurrency_id="decode", show_progress="hidden")


def wire_compare(p: Page, pg: Playground, concurrency_limit: int | None) -> None:
    """The Compare tab: a lesson click fills its configs and decodes its compare, in one event that
    names both sides' traces by handle; the page reads them and draws the canvases and the pair's
    figures (no second event, no second decode).

    No Gradio progress: its overlay on a lesson's dozen outputs cost the browser more than the
    compare itself on a small CPU, and even its timer on the two canvases slowed the compare on
    2 cores (ui_bench, lesson click: 1.42x the direct compare with it, 1.00x without, one run each).
    page.js dims the canvases instead (one style change) until the event ends, whichever way it ends.
    """
    compare, kw = pg.compare, _compare_kw(concurrency_limit)

    def after(event: Any) -> None:
        event.then(None, js=IDLE_JS)  # in the browser only: the canvases stop looking busy
        wire(p, event.failure, compare.cleared, out=CompareCleared, **QUIET).then(None, js=IDLE_JS)

    # A compare's error names config A or B and stays until closed (the configs are typed by hand).
    for key, button in p.lessons.items():
        after(wire(p, button.click, functools.partial(compare.lesson_stream, key), ins=lesson_inputs(p),
                   out=LessonShown, request=("session",), error_seconds=None, js=PAIR_JS % f'"lesson:{key}"', **kw))
    after(wire(p, p.compare_run.click, compare.run_stream, ins=compare_inputs(p), out=CompareShown,
               request=("session",), error_seconds=None, js=PAIR_JS % '"compare"', **kw))
    # Stop (drawn on a live side, which clicks this hidden button): as the Playground's (`wire_stop`), the
    # session's decodes end their streams; the tab then shows an empty pair under a banner.
    stopped = wire(p, p.cmp_stop.click, compare.stopped, ins=(p.lang, p.cmp_stop_key), out=CompareShown,
                   request=("session",), **QUIET)
    stopped.then(None, js=IDLE_JS)


def wire_sweep(p: Page, pg: Playground, concurrency_limit: int | None) -> None:
    """The Sweep tab: one batched decode with a progress bar."""
    wire(p, p.sweep_run.click, pg.sweep.run, ins=(p.sweep_temps, p.sweep_divisors, p.sweep_decays, p.sweep_seeds,
                                                  p.sweep_prompts, p.sweep_gen_length, p.lang, p.model_pick),
         out=SweepShown, progress=True,
         **{**_compare_kw(concurrency_limit), "show_progress": "full", "show_progress_on": None})  # its progress bar


def wire_page(p: Page, pg: Playground, concurrency_limit: int | None) -> None:
    """Events of the whole page: the model picker, tabs shown, and the language switch."""
    # Model picker: its example prompt fills the prompt box, then the playground decodes with it.
    # The gen length comes within the model's context first, then the sliders' ends follow the model
    # (one after the other: a value beyond the new end would be refused by the next event's inputs).
    # Whatever puts a model on show (the picker, a link, a scene, a trace), its canvas's knobs show, the others hide.
    show(p, pg.canvas_shown(model_pick=p.model_pick.value))  # as the page opens: the model it opens on
    wire(p, p.model_pick.change, pg.canvas_shown, ins=(p.model_pick,), out=CanvasShown, as_update="visible", **QUIET)
    picked = wire(p, p.model_pick.input, pg.pick_model,
                  ins=(p.model_pick, p.lang, p.lesson_key, p.gen_length, p.cmp_a, p.cmp_b), out=ModelPicked, **QUIET)
    decode_on(p, pg, ranges_after(p, pg, picked.then), concurrency_limit)
    for tab in p.tabs.values():
        tab.select(None, js=RESIZE_JS)  # browser-only

    # Language: every label and text, and every view re-rendered from the stored traces.
    def labels(named: dict[str, Any]) -> list[Any]:
        lang = named["lang"]
        return [gr.update(**{lb.attr: lb.text(lang)}) for lb in p.labels]

    wire(p, p.lang.change, pg.relabel, ins=(p.lang, p.trace, p.cmp_traces, p.sweep_state, p.lesson_key, p.model_pick,
                                            p.cmp_summary, p.banner, *p.knobs),
         out=Relabelled, also=([lb.component for lb in p.labels], labels), **QUIET)
