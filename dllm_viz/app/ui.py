"""The Gradio page: `build_demo(run, ...) -> gr.Blocks`. Thin: it lays out widgets and wires events.

The model never appears here: `run(prompts, configs, *, on_step=None, record_candidates=5)` is
injected by the entry script (plain `decode` on a model, or the shared engine). Components live in
one dataclass, `Page`; every event goes through one `wire`, which maps a handler's keyword
arguments and its result's fields (`playground`'s dataclasses) onto `Page` attributes when the
page is built, so a misspelt name fails at build time. Handlers return plain values (or `KEEP`);
only `wire` speaks Gradio. Playback, the shared step cursor and the linked views run in the
browser (`page.js`, the page's one script, served as the canvas's `js_on_load`); a settled
selection reaches the server as the canvas's `select` event, read through `gr.SelectData`.

Gradio 6 takes theme and CSS in `launch()`: launch with `**launch_options()`.
"""
from __future__ import annotations

import dataclasses
import functools
import inspect
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gradio as gr

from dllm_viz.app import render
from dllm_viz.app.i18n import LANG_CHOICES, STRINGS, t
from dllm_viz.app.lessons import DEFAULT_PROMPTS, LESSONS, NEIGHBOURS
from dllm_viz.app.palette import PAGE_CSS
from dllm_viz.app.playground import (
    KEEP,
    KNOBS,
    PRESET_GROUPS,
    SCHEDULE_KNOBS,
    CompareFigures,
    CompareShown,
    DecodeFirst,
    DecodeRest,
    Exported,
    Knobs,
    KnobStates,
    KSteps,
    LessonShown,
    Loaded,
    ModelChoice,
    ModelPicked,
    Playground,
    PresetKnobs,
    Relabelled,
    Reseeded,
    Selected,
    SweepShown,
    TraceFigures,
    config_to_settings,
    example_label,
    fields_of,
    model_prompts_md,
    random_seed,
    shallow,
)
from dllm_viz.core.config import CONFIDENCE_FROM, CONFIDENCES, MAX_SEED, RNG_MODES, SAMPLE_SCOPES, SCHEDULES
from dllm_viz.core.config import DecodeConfig
from dllm_viz.core.decoder import Runner
from dllm_viz.core.trace import Trace

PAGE_JS = (Path(__file__).with_name("page.js")).read_text(encoding="utf-8")
SWEEP_TEMPERATURES = (0.3, 0.6, 0.9, 1.2, 1.5, 2.0)
SWEEP_DIVISORS = (8, 6, 4, 3, 2)
SWEEP_DECAYS = (0.85, 0.9, 0.95, 1.0)
# Sliders that re-run the decode when released (or when a value is typed into their number box).
RELEASE_KNOBS = ("gen_length", "temperature", "top_k", "decay", "min_k", "steps", "threshold", "block_length", "top_p",
                 "t_early", "t_middle", "t_late", "early_stop_threshold")
CHOICE_KNOBS = ("confidence", "stages_on", "confidence_from", "sample_scope", "rng", "early_stop")
K_KNOBS = ("gen_length", "top_k", "decay", "min_k", "steps", "schedule", "block_length")  # change the k sequence


def launch_options() -> dict[str, Any]:
    """Theme and CSS; Gradio 6 takes them in `launch()`, so app.py and the tests pass these."""
    theme = gr.themes.Soft(primary_hue="violet", secondary_hue="sky", neutral_hue="slate",
                           font=[gr.themes.Font(f) for f in ("Inter", "ui-sans-serif", "system-ui", "sans-serif")])  # no web fonts
    return {"theme": theme, "css": PAGE_CSS}


@dataclass
class Label:
    """A component whose `attr` is re-rendered in each language by `text(lang)`."""

    component: Any
    text: Callable[[str], Any]
    attr: str = "label"


@dataclass
class Page:
    """Every component of the page, by name. Handlers' parameters and results use these names."""

    # header
    header: gr.Markdown
    lang: gr.Radio
    model_pick: gr.Dropdown  # which model decodes (shown when build_demo gets more than one)
    model_prompts: gr.Markdown  # example prompts of the picked model
    # playground: inputs
    prompt: gr.Textbox
    preset_badge: gr.HTML
    gen_length: gr.Slider
    temperature: gr.Slider
    schedule: gr.Dropdown
    top_k: gr.Slider
    decay: gr.Slider
    k_steps: gr.HTML
    min_k: gr.Slider
    steps: gr.Slider
    threshold: gr.Slider
    block_length: gr.Slider
    early_stop: gr.Checkbox
    early_stop_threshold: gr.Slider
    top_p: gr.Slider
    confidence: gr.Dropdown
    stages_on: gr.Checkbox
    t_early: gr.Slider
    t_middle: gr.Slider
    t_late: gr.Slider
    seed: gr.Number
    new_seed: gr.Button
    confidence_from: gr.Radio
    sample_scope: gr.Radio
    rng: gr.Radio
    run: gr.Button
    example: gr.Dropdown
    download: gr.DownloadButton
    upload: gr.UploadButton
    # playground: views
    banner: gr.Markdown
    canvas: gr.HTML
    facts: gr.HTML
    heatmap: gr.Plot
    order: gr.Plot
    steps_fig: gr.Plot
    insp_plot: gr.HTML
    insp_text: gr.Markdown
    trace: gr.State
    cursor: gr.State  # (frame, position): the browser's cursor as the server last heard it
    # compare
    lesson_text: gr.Markdown
    cmp_a: gr.Code
    cmp_b: gr.Code
    neighbours: gr.Slider
    compare_run: gr.Button
    cmp_summary: gr.Markdown
    cmp_canvas_a: gr.HTML
    cmp_canvas_b: gr.HTML
    cmp_orders: gr.Plot
    cmp_heat_a: gr.Plot
    cmp_heat_b: gr.Plot
    cmp_steps_a: gr.Plot
    cmp_steps_b: gr.Plot
    cmp_facts_a: gr.HTML
    cmp_facts_b: gr.HTML
    cmp_traces: gr.State
    lesson_key: gr.State
    # sweep
    sweep_temps: gr.CheckboxGroup
    sweep_divisors: gr.CheckboxGroup
    sweep_decays: gr.CheckboxGroup
    sweep_prompts: gr.Textbox
    sweep_seeds: gr.Slider
    sweep_gen_length: gr.Slider
    sweep_run: gr.Button
    sweep_summary: gr.Markdown
    sweep_nfe: gr.Plot
    sweep_repeat_3: gr.Plot
    sweep_distinct_2: gr.Plot
    sweep_mean_logprob: gr.Plot
    sweep_table: gr.Dataframe
    sweep_state: gr.State
    # groups
    tabs: dict[str, gr.Tab] = field(default_factory=dict)
    presets: dict[str, gr.Button] = field(default_factory=dict)  # by preset name (PRESET_GROUPS)
    lessons: dict[str, gr.Button] = field(default_factory=dict)  # by lesson key
    labels: list[Label] = field(default_factory=list)  # what a language switch re-renders

    @property
    def knobs(self) -> tuple[Any, ...]:
        """The decode-setting components, in KNOBS order."""
        return tuple(getattr(self, name) for name in KNOBS)

    def name_of(self, component: Any) -> str:
        for f in dataclasses.fields(self):
            if getattr(self, f.name) is component:
                return f.name
        raise ValueError(f"component {component!r} is not a field of Page")


# ----- wiring ----------------------------------------------------------------------------------------
def user_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Turn ValueError (bad settings, bad files) into a visible gr.Error; the session stays usable."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except ValueError as err:
            raise gr.Error(str(err), duration=8) from err

    return wrapper


def to_gradio(value: Any, as_update: str | None = None) -> Any:
    """A handler's plain value as Gradio wants it: KEEP -> skip, or set one property."""
    if value is KEEP:
        return gr.skip()
    return gr.update(**{as_update: value}) if as_update else value


def wire(page: Page, trigger: Callable[..., Any], fn: Callable[..., Any], *, ins: Sequence[Any] = (),
         out: type, select: bool = False, progress: bool = False, as_update: str | None = None,
         also: tuple[Sequence[Any], Callable[[dict[str, Any]], list[Any]]] | None = None, **kw: Any) -> Any:
    """Connect `trigger` to `fn`: the components `ins` arrive as keyword arguments named after their
    `Page` fields; `fn` returns an `out` dataclass whose fields name the components to update.

    Names are checked here, when the page is built. `select=True` passes the cursor the page sent
    (gr.SelectData: index = [frame, position]); `progress=True` passes Gradio's progress bar;
    `as_update` sets that property instead of the value; `also` prepends outputs computed by the
    page itself from the named inputs (the language switch's labels).
    """
    in_names = tuple(page.name_of(c) for c in ins)
    out_names = fields_of(out)
    outputs = [getattr(page, name) for name in out_names]  # AttributeError now, not at run time
    params = inspect.signature(fn).parameters
    if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
        extra = {"frame", "position"} if select else set()
        extra |= {"progress"} if progress else set()
        missing = set(in_names) - set(params) | (extra - set(params))
        if missing:
            raise TypeError(f"{getattr(fn, '__name__', fn)} takes no {sorted(missing)}")
    also_outputs, also_fn = also if also else ((), None)

    def answer(values: Sequence[Any], **extra: Any) -> Any:
        named = dict(zip(in_names, values))
        result = fn(**named, **extra)
        values_out = [to_gradio(getattr(result, name), as_update) for name in out_names]
        if also_fn is not None:
            values_out = [*also_fn(named), *values_out]
        return tuple(values_out) if len(values_out) != 1 else values_out[0]

    if select:
        def handler(evt: gr.SelectData, *values: Any) -> Any:
            frame, position = evt.index
            return answer(values, frame=int(frame), position=int(position))
    elif progress:
        def handler(progress: Any = gr.Progress(), *values: Any) -> Any:  # noqa: B008 - Gradio's convention
            return answer(values, progress=progress)
    else:
        def handler(*values: Any) -> Any:
            return answer(values)

    return trigger(user_errors(handler), inputs=list(ins), outputs=[*also_outputs, *outputs],
                   api_visibility="private", **kw)


# ----- layout ------------------------------------------------------------------------------------
def _choices(names: Sequence[str], lang: str) -> list[tuple[str, str]]:
    """Radio choices of a teaching switch: the value (a code identifier) with what it means."""
    return [(f"{name}: {t(f'choice_{name}', lang)}" if f"choice_{name}" in STRINGS else name, name) for name in names]


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
) -> gr.Blocks:
    """The whole page. `run` decodes (see `core.decoder.Runner`); `examples` are (name, trace) shown first.

    `models`: the model picker's entries (label -> `ModelChoice`), the first being the one `run`
    decodes with; without it (or with one entry) there is no picker.
    """
    pg = Playground(run, examples=examples, export_dir=export_dir, new_seed=new_seed, models=models)
    picks = list(models or {})
    lang0 = "en"
    first = examples[0][1] if examples else None
    s0 = config_to_settings(first.config if first else DecodeConfig.preset("balanced", 64))
    shown = pg.load_trace(first, lang=lang0, autoplay=True, example=examples[0][0]) if first else None
    if shown is not None:  # the first example's figures are in the page from the start
        drawn = pg.trace_figures(trace=first, lang=lang0, cursor=shown.cursor, temperature=first.config.temperature)
        shown = {**shallow(shown), **shallow(drawn)}
    v0 = (lambda name, default=None: shown[name] if shown is not None else default)  # noqa: E731
    longest = min(256, (max_length or 256) - 16)
    c: dict[str, Any] = {}
    labels: list[Label] = []
    tabs: dict[str, Any] = {}
    presets: dict[str, Any] = {}
    lesson_buttons: dict[str, Any] = {}

    def lab(comp: Any, key: str | Callable[[str], Any], attr: str = "label") -> Any:
        labels.append(Label(comp, key if callable(key) else functools.partial(t, key), attr))
        return comp

    def help_box(key: str) -> None:
        lab(gr.HTML(render.help_html(key, lang0), elem_classes="dv-help-box"), functools.partial(render.help_html, key),
            "value")

    header = lambda lang: f"# {t('title', lang)}\n{t('subtitle', lang)}"  # noqa: E731
    with gr.Blocks(title="dllm-viz", delete_cache=(3600, 3600)) as demo:
        with gr.Row(elem_id="dv-header", equal_height=True):
            with gr.Column(scale=1):
                c["header"] = lab(gr.Markdown(header(lang0)), header, "value")
                # The picked model's example prompts, under the title so the header stays one band.
                c["model_prompts"] = gr.Markdown(model_prompts_md(models[picks[0]].prompts) if len(picks) > 1 else "",
                                                 visible=len(picks) > 1)
            with gr.Column(scale=0, min_width=200):
                c["lang"] = lab(gr.Radio(list(LANG_CHOICES), value=lang0, label=t("language", lang0), elem_id="dv-lang"),
                                "language")
                model_line = lambda lang: f"<small>{t('model', lang)}: `{model_name}`</small>"  # noqa: E731
                lab(gr.Markdown(model_line(lang0), visible=len(picks) < 2), model_line, "value")
                c["model_pick"] = lab(gr.Dropdown(picks, value=picks[0] if picks else None, label=t("model", lang0),
                                                  visible=len(picks) > 1, elem_id="dv-model"), "model")
        c["trace"] = gr.State(first)
        c["cursor"] = gr.State(v0("cursor", (0, 0)))
        with gr.Tabs():
            with lab(gr.Tab(t("tab_play", lang0)), "tab_play") as tabs["play"]:
                with gr.Row(elem_id="dv-main"):
                    with gr.Column(scale=4, min_width=320, elem_id="dv-knobs"):
                        c["prompt"] = lab(gr.Textbox(first.prompt_text if first else default_prompt, lines=2,
                                                     label=t("prompt", lang0)), "prompt")
                        presets_md = lambda lang: f"**{t('presets', lang)}**"  # noqa: E731
                        lab(gr.Markdown(presets_md(lang0)), presets_md, "value")
                        for group, names in PRESET_GROUPS.items():
                            with gr.Row(elem_id=f"dv-presets-{group}", elem_classes="dv-presets"):
                                for name in names:
                                    presets[name] = lab(gr.Button(t(f"preset_{name}", lang0), size="sm"),
                                                        f"preset_{name}", "value")
                        c["preset_badge"] = gr.HTML(v0("preset_badge", ""), elem_id="dv-preset-badge")
                        note = lambda lang: f"<small>{t('article_note', lang)}</small>"  # noqa: E731
                        with lab(gr.Accordion(t("article_what", lang0), open=False), "article_what"):
                            lab(gr.Markdown(note(lang0)), note, "value")
                        c["gen_length"] = lab(gr.Slider(8, longest, s0["gen_length"], step=8, label=t("gen_length", lang0),
                                                        elem_classes="dv-knob"), "gen_length")
                        c["temperature"] = lab(gr.Slider(0, 2.5, s0["temperature"], step=0.05, label=t("temperature", lang0),
                                                         elem_id="dv-temperature", elem_classes="dv-knob"), "temperature")
                        with lab(gr.Accordion(t("schedule_box", lang0), open=True), "schedule_box"):
                            c["schedule"] = lab(gr.Dropdown(list(SCHEDULES), value=s0["schedule"], label=t("schedule", lang0),
                                                            elem_id="dv-schedule"),
                                                "schedule")
                            used = SCHEDULE_KNOBS[s0["schedule"]]
                            with gr.Row():
                                c["top_k"] = lab(gr.Slider(1, 128, s0["top_k"], step=1, label=t("top_k", lang0),
                                                           interactive="top_k" in used, elem_classes="dv-knob"), "top_k")
                                c["decay"] = lab(gr.Slider(0.5, 1.0, s0["decay"], step=0.01, label=t("decay", lang0),
                                                           interactive="decay" in used, elem_id="dv-decay",
                                                           elem_classes="dv-knob"), "decay")
                            c["k_steps"] = gr.HTML(pg.k_steps(lang=lang0, **s0).k_steps, elem_id="dv-ksteps")
                            with gr.Row():
                                c["min_k"] = lab(gr.Slider(1, 16, s0["min_k"], step=1, label=t("min_k", lang0),
                                                           elem_classes="dv-knob"), "min_k")
                                c["steps"] = lab(gr.Slider(1, 256, s0["steps"], step=1, label=t("steps", lang0),
                                                           interactive="steps" in used, elem_classes="dv-knob"), "steps")
                            with gr.Row():
                                c["threshold"] = lab(gr.Slider(0.05, 1.0, s0["threshold"], step=0.01,
                                                               label=t("threshold", lang0), interactive="threshold" in used,
                                                               elem_classes="dv-knob"), "threshold")
                                c["block_length"] = lab(gr.Slider(0, 128, s0["block_length"], step=8,
                                                                  label=t("block_length", lang0), elem_classes="dv-knob"),
                                                        "block_length")
                            with gr.Row(equal_height=True):  # the end-of-text early stop (off by default)
                                c["early_stop"] = lab(gr.Checkbox(s0["early_stop"], label=t("early_stop", lang0),
                                                                  elem_id="dv-early-stop"), "early_stop")
                                c["early_stop_threshold"] = lab(gr.Slider(0.5, 1.0, s0["early_stop_threshold"], step=0.01,
                                                                          label=t("early_stop_threshold", lang0),
                                                                          elem_classes="dv-knob"), "early_stop_threshold")
                        with lab(gr.Accordion(t("sampling_box", lang0), open=True), "sampling_box"):
                            c["confidence"] = lab(gr.Dropdown(list(CONFIDENCES), value=s0["confidence"],
                                                              label=t("confidence", lang0)), "confidence")
                            c["top_p"] = lab(gr.Slider(0.05, 1.0, s0["top_p"], step=0.01, label=t("top_p", lang0),
                                                       elem_id="dv-top-p", elem_classes="dv-knob"), "top_p")
                            c["stages_on"] = lab(gr.Checkbox(s0["stages_on"], label=t("stages_on", lang0)), "stages_on")
                            with gr.Row():
                                for k in ("t_early", "t_middle", "t_late"):
                                    c[k] = lab(gr.Slider(0, 2.5, s0[k], step=0.05, label=t(k, lang0), min_width=90,
                                                         elem_classes="dv-knob"), k)
                            with gr.Row(equal_height=True):
                                c["seed"] = lab(gr.Number(s0["seed"], precision=0, minimum=0, maximum=MAX_SEED,
                                                          label=t("seed", lang0), scale=2), "seed")
                                c["new_seed"] = lab(gr.Button(t("new_seed", lang0), size="sm", scale=1), "new_seed", "value")
                        with lab(gr.Accordion(t("teaching", lang0), open=False), "teaching"):
                            for name, names in (("confidence_from", CONFIDENCE_FROM), ("sample_scope", SAMPLE_SCOPES),
                                                ("rng", RNG_MODES)):
                                c[name] = lab(gr.Radio(_choices(names, lang0), value=s0[name], label=t(name, lang0)), name)
                                lab(c[name], functools.partial(_choices, names), "choices")
                        c["run"] = lab(gr.Button(t("run", lang0), variant="primary"), "run", "value")
                        with lab(gr.Accordion(t("trace_io", lang0), open=True), "trace_io"):
                            ex_choices = lambda lang: [(example_label(n, lang), n) for n, _ in examples]  # noqa: E731
                            c["example"] = lab(gr.Dropdown(ex_choices(lang0), value=examples[0][0] if examples else None,
                                                           label=t("examples", lang0)), "examples")
                            lab(c["example"], ex_choices, "choices")
                            with gr.Row():
                                c["download"] = lab(gr.DownloadButton(t("download", lang0), value=pg.export(trace=first).download,
                                                                      size="sm"), "download")
                                c["upload"] = lab(gr.UploadButton(t("upload", lang0), file_types=[".json"], type="filepath",
                                                                  size="sm"), "upload")
                    with gr.Column(scale=8):
                        c["banner"] = gr.Markdown("", elem_id="dv-banner", elem_classes="dv-banner-box")
                        help_box("help_canvas")
                        c["canvas"] = gr.HTML(v0("canvas", ""), js_on_load=PAGE_JS, elem_id="dv-canvas")
                        c["facts"] = gr.HTML(v0("facts", ""), js_on_load=None)
                        help_box("help_heatmap")
                        c["heatmap"] = gr.Plot(v0("heatmap"), show_label=False, elem_id="dv-heatmap")
                        with gr.Row():
                            with gr.Column():
                                help_box("help_order")
                                c["order"] = gr.Plot(v0("order"), show_label=False, elem_id="dv-order")
                                insp_md = lambda lang: f"**{t('inspector', lang)}**"  # noqa: E731
                                lab(gr.Markdown(insp_md(lang0)), insp_md, "value")
                                help_box("help_inspector")
                                c["insp_plot"] = gr.HTML(v0("insp_plot", ""), js_on_load=None, elem_id="dv-inspector")
                                c["insp_text"] = gr.Markdown(v0("insp_text", ""))
                            with gr.Column():
                                help_box("help_steps")
                                c["steps_fig"] = gr.Plot(v0("steps_fig"), show_label=False, elem_id="dv-steps")
            with lab(gr.Tab(t("tab_compare", lang0), elem_id="dv-tab-compare"), "tab_compare") as tabs["compare"]:
                lessons_md = lambda lang: f"**{t('lessons', lang)}**"  # noqa: E731
                lab(gr.Markdown(lessons_md(lang0)), lessons_md, "value")
                c["lesson_key"] = gr.State("polluted")
                c["cmp_traces"] = gr.State(None)
                with gr.Row(elem_classes="dv-lesson-buttons"):
                    for key, lesson in LESSONS.items():
                        lesson_buttons[key] = lab(gr.Button(lesson.text("title", lang0), size="sm", elem_id=f"dv-lesson-{key}"),
                                                  functools.partial(lesson.text, "title"), "value")
                c["lesson_text"] = gr.Markdown(pg.lesson_text("polluted", lang0), elem_id="dv-lesson-text")
                cmp_note = lambda lang: f"<small>{t('compare_note', lang)}</small>"  # noqa: E731
                lab(gr.Markdown(cmp_note(lang0)), cmp_note, "value")
                with gr.Row():
                    c["cmp_a"] = lab(gr.Code(json.dumps(LESSONS["polluted"].a), language="json", label=t("config_a", lang0),
                                             lines=2), "config_a")
                    c["cmp_b"] = lab(gr.Code(json.dumps(LESSONS["polluted"].b), language="json", label=t("config_b", lang0),
                                             lines=2), "config_b")
                with gr.Row(equal_height=True):
                    c["neighbours"] = lab(gr.Slider(0, len(NEIGHBOURS), 0, step=1, label=t("neighbours", lang0), scale=3),
                                          "neighbours")
                    c["compare_run"] = lab(gr.Button(t("compare_run", lang0), variant="primary", scale=1,
                                                     elem_id="dv-compare-run"), "compare_run",
                                           "value")
                c["cmp_summary"] = gr.Markdown("", elem_id="dv-cmp-summary")
                with gr.Row():
                    c["cmp_canvas_a"] = gr.HTML("", js_on_load=None, elem_id="dv-cmp-canvas-a")
                    c["cmp_canvas_b"] = gr.HTML("", js_on_load=None, elem_id="dv-cmp-canvas-b")
                c["cmp_orders"] = gr.Plot(show_label=False)
                with gr.Row():
                    c["cmp_heat_a"] = gr.Plot(show_label=False, elem_id="dv-cmp-heat-a")
                    c["cmp_heat_b"] = gr.Plot(show_label=False, elem_id="dv-cmp-heat-b")
                with gr.Row():
                    c["cmp_steps_a"] = gr.Plot(show_label=False)
                    c["cmp_steps_b"] = gr.Plot(show_label=False)
                with gr.Row():
                    c["cmp_facts_a"] = gr.HTML("", js_on_load=None)
                    c["cmp_facts_b"] = gr.HTML("", js_on_load=None)
            with lab(gr.Tab(t("tab_sweep", lang0)), "tab_sweep") as tabs["sweep"]:
                lab(gr.Markdown(t("sweep_intro", lang0)), "sweep_intro", "value")
                c["sweep_state"] = gr.State(None)
                with gr.Row():
                    c["sweep_temps"] = lab(gr.CheckboxGroup(list(SWEEP_TEMPERATURES), value=[0.6, 0.9, 1.2, 1.5],
                                                            label=t("sweep_temps", lang0)), "sweep_temps")
                    c["sweep_divisors"] = lab(gr.CheckboxGroup([f"L/{d}" for d in SWEEP_DIVISORS],
                                                               value=["L/6", "L/4", "L/3"], label=t("sweep_topk", lang0)),
                                              "sweep_topk")
                    c["sweep_decays"] = lab(gr.CheckboxGroup(list(SWEEP_DECAYS), value=[0.9], label=t("sweep_decays", lang0)),
                                            "sweep_decays")
                with gr.Row():
                    c["sweep_prompts"] = lab(gr.Textbox("\n".join(DEFAULT_PROMPTS[:2]), lines=2,
                                                        label=t("sweep_prompts", lang0), scale=3), "sweep_prompts")
                    with gr.Column(scale=2):
                        c["sweep_seeds"] = lab(gr.Slider(1, 8, 2, step=1, label=t("sweep_seeds", lang0)), "sweep_seeds")
                        c["sweep_gen_length"] = lab(gr.Slider(8, longest, 32, step=8, label=t("gen_length", lang0)),
                                                    "gen_length")
                c["sweep_run"] = lab(gr.Button(t("sweep_run", lang0), variant="primary"), "sweep_run", "value")
                c["sweep_summary"] = gr.Markdown("")
                with gr.Row():
                    c["sweep_nfe"] = gr.Plot(show_label=False)
                    c["sweep_repeat_3"] = gr.Plot(show_label=False)
                with gr.Row():
                    c["sweep_distinct_2"] = gr.Plot(show_label=False)
                    c["sweep_mean_logprob"] = gr.Plot(show_label=False)
                c["sweep_table"] = lab(gr.Dataframe(label=t("sweep_table", lang0), interactive=False), "sweep_table")
            with lab(gr.Tab(t("tab_about", lang0)), "tab_about") as tabs["about"]:
                lab(gr.Markdown(t("about_md", lang0)), "about_md", "value")

        page = Page(**c, tabs=tabs, presets=presets, lessons=lesson_buttons, labels=labels)
        _wire_events(page, pg, concurrency_limit)
        gr.api(user_errors(pg.generate), api_name="generate", concurrency_limit=concurrency_limit, concurrency_id="decode")
    demo.page = page  # for tests and for other front ends that add to the page
    return demo


# Ends page.js's busy look on the Compare canvases (set when a lesson or Compare button is clicked).
IDLE_JS = "() => { if (window.__dvIdle) window.__dvIdle(); }"


def _wire_events(page: Page, pg: Playground, concurrency_limit: int | None) -> None:
    """Connect widgets to `Playground` handlers; handlers never see components."""
    p = page
    # Progress shows on the canvas alone: Gradio's status tracker on each of a decode's outputs cost
    # the browser ~50 ms at the click and slowed the decode's forwards by ~20% (measured on 2 cores).
    decode_kw = dict(concurrency_limit=concurrency_limit, concurrency_id="decode", trigger_mode="always_last",
                     show_progress="minimal", show_progress_on=[p.canvas])
    quiet = dict(show_progress="hidden")

    def decode_on(trigger: Callable[..., Any]) -> None:
        """One decode (one call to `run`), then the rest of the views, then the download file."""
        ev = wire(p, trigger, pg.decode, ins=(p.prompt, p.lang, p.cursor, p.model_pick, *p.knobs), out=DecodeFirst,
                  **decode_kw)
        wire(p, ev.failure, pg.revert, ins=(p.trace,), out=Knobs, **quiet)  # widgets never disagree with the views
        rest = wire(p, ev.success, pg.rest, ins=(p.trace, p.lang, p.cursor, p.temperature), out=DecodeRest, **quiet)
        wire(p, rest.then, pg.export, ins=(p.trace,), out=Exported, **quiet)

    decode_on(p.run.click)
    decode_on(p.prompt.submit)
    decode_on(p.seed.submit)
    for name in RELEASE_KNOBS:
        decode_on(getattr(p, name).release)  # release re-runs the decode at once; no Run click needed
    for name in CHOICE_KNOBS:
        decode_on(getattr(p, name).input)
    decode_on(p.schedule.input)
    # Instant handlers that fill widgets before a decode show no progress of their own: Gradio's
    # "full" tracker animates a spinner on every widget (hundreds of DOM changes in 0.3 s), and that
    # ran while the decode that follows was computing.
    decode_on(wire(p, p.new_seed.click, pg.reseed, out=Reseeded, **quiet).then)
    for name, button in p.presets.items():
        filled = wire(p, button.click, functools.partial(pg.preset, name), ins=(p.gen_length,), out=PresetKnobs, **quiet)
        decode_on(filled.then)
    # Whatever sets the schedule (the dropdown, a preset, an example), its sliders follow.
    wire(p, p.schedule.change, pg.knob_states, ins=(p.schedule,), out=KnobStates, as_update="interactive", **quiet)
    for name in K_KNOBS:
        wire(p, getattr(p, name).change, pg.k_steps, ins=(p.lang, *p.knobs), out=KSteps, trigger_mode="always_last",
             **quiet)

    # The page's cursor settled (click, scrub, pause): the inspector, once. No model call.
    wire(p, p.canvas.select, pg.select, ins=(p.trace, p.lang, p.temperature), out=Selected, select=True,
         trigger_mode="always_last", **quiet)

    # Traces in and out: each file parsed once, no model call.
    for trigger, fn, source in ((p.example.input, pg.example, p.example), (p.upload.upload, pg.upload, p.upload)):
        loaded = wire(p, trigger, fn, ins=(source, p.lang), out=Loaded, show_progress="minimal",
                      show_progress_on=[p.canvas])
        drawn = wire(p, loaded.success, pg.trace_figures, ins=(p.trace, p.lang, p.cursor, p.temperature),
                     out=TraceFigures, **quiet)  # the canvas first, then the figures
        wire(p, drawn.then, pg.export, ins=(p.trace,), out=Exported, **quiet)

    # Compare: a lesson click fills its configs and decodes its compare, in one event; the canvases
    # show first, and the figures follow from the stored pair (no second decode).
    # No Gradio progress: its overlay on a lesson's dozen outputs cost the browser more than the
    # compare itself on a small CPU, and even its timer on the two canvases slowed the compare on
    # 2 cores (ui_bench, lesson click: 1.42x the direct compare with it, 1.00x without, one run each). page.js
    # dims the canvases instead (one style change) until the event ends, whichever way it ends.
    cmp_kw = dict(concurrency_limit=concurrency_limit, concurrency_id="decode", show_progress="hidden")

    def figures_after(event: Any) -> None:
        event.then(None, js=IDLE_JS)  # in the browser only: the canvases stop looking busy
        wire(p, event.success, pg.compare_figures, ins=(p.cmp_traces, p.lang), out=CompareFigures, **quiet)

    for key, button in p.lessons.items():
        figures_after(wire(p, button.click, functools.partial(pg.lesson, key),
                           ins=(p.prompt, p.seed, p.gen_length, p.lang, p.model_pick), out=LessonShown, **cmp_kw))
    figures_after(wire(p, p.compare_run.click, pg.compare,
                       ins=(p.prompt, p.seed, p.gen_length, p.cmp_a, p.cmp_b, p.neighbours, p.lang, p.model_pick),
                       out=CompareShown, **cmp_kw))
    # Model picker: its example prompt fills the prompt box, then the playground decodes with it.
    decode_on(wire(p, p.model_pick.input, pg.pick_model, ins=(p.model_pick,), out=ModelPicked, **quiet).then)

    # Sweep: one batched decode with a progress bar.
    wire(p, p.sweep_run.click, pg.sweep, ins=(p.sweep_temps, p.sweep_divisors, p.sweep_decays, p.sweep_seeds,
                                              p.sweep_prompts, p.sweep_gen_length, p.lang),
         out=SweepShown, progress=True, **{**cmp_kw, "show_progress": "full", "show_progress_on": None})  # its progress bar

    # Plotly sizes a figure updated inside a hidden tab to its default width; a resize event when
    # a tab is shown lets the responsive figures fit their containers again. Browser-only.
    for tab in p.tabs.values():
        tab.select(None, js="() => { setTimeout(() => window.dispatchEvent(new Event('resize')), 60); }")

    # Language: every label and text, and every view re-rendered from the stored traces.
    def labels(named: dict[str, Any]) -> list[Any]:
        lang = named["lang"]
        return [gr.update(**{lb.attr: lb.text(lang)}) for lb in p.labels]

    wire(p, p.lang.change, pg.relabel, ins=(p.lang, p.trace, p.cursor, p.cmp_traces, p.sweep_state, p.lesson_key,
                                            *p.knobs),
         out=Relabelled, also=([lb.component for lb in p.labels], labels), **quiet)
