"""The Playground tab's layout: the knobs panel (prompt, presets, schedule, sampling, teaching
switches, traces in and out) beside the views panel (canvas, heatmap, order map, inspector,
per-step plot). Widgets only; `ui` wires their events to `handlers_play`.
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import gradio as gr

from dllm_viz.app.views import render, task as task_view, web
from dllm_viz.app.handlers.adapters import PRESET_GROUPS, SCHEDULE_KNOBS
from dllm_viz.app.handlers.outputs import SCHEDULE_KNOB_SPECS
from dllm_viz.app.handlers.play import PlayHandlers
from dllm_viz.app.strings import STRINGS, example_label, t
from dllm_viz.app.layout.canvas import build_canvas_box
from dllm_viz.app.layout.revision import build_revision_box, build_rule_knobs
from dllm_viz.app.layout.page import Labels, bold, small
from dllm_viz.core import rules
from dllm_viz.core.config import CACHES, CONFIDENCE_FROM, CONFIDENCES, RNG_MODES, SAMPLE_SCOPES, SCHEDULES
from dllm_viz.app.handlers.takeout import animation_formats
from dllm_viz.app.handlers.traces import Shown

# The heights a figure's host keeps before its figure is drawn (the page draws them: web/figures.js),
# so what is below does not jump when it is.
FIGURE_HEIGHTS = {"heatmap": 256, "order": 180, "steps_fig": 520, "task_curve": 260}


def switch_choices(names: Sequence[str], lang: str) -> list[tuple[str, str]]:
    """Radio choices of a teaching switch: the value (a code identifier) with what it means."""
    return [(f"{name}: {t(f'choice_{name}', lang)}" if f"choice_{name}" in STRINGS else name, name) for name in names]


def cache_choices(lang: str) -> list[tuple[str, str]]:
    """The cache dropdown's entries: (what the cache keeps, in `lang`, its name)."""
    return [(f"{name}: {t(f'choice_cache_{name}', lang)}", name) for name in CACHES]


def example_choices(names: Sequence[str], lang: str) -> list[tuple[str, str]]:
    """The example traces' dropdown entries: (label in `lang`, name)."""
    return [(example_label(n, lang), n) for n in names]


def build_play_tab(labels: Labels, play: PlayHandlers, *, settings: dict[str, Any], shown: dict[str, Any],
                   first: Shown | None, examples: Sequence[str], default_prompt: str, longest: int,
                   server: Sequence[Callable[..., Any]], scenes: Sequence[str] = (),
                   example: str | None = None, forks: tuple[str, ...] = ()) -> dict[str, Any]:
    """The tab's components by `Page` name (`presets`: the preset buttons by name; `scenes`: a button per
    scene key given).

    `settings` are the knobs' start values, `shown` the start views (empty without an example),
    `first` the trace on show (`example`: the example it is, if one), `examples` the example traces' names,
    `longest` the longest gen_length, `server` the canvas's server functions (the page reads traces by handle
    with them: `page_server.read_traces`), `forks` the models whose traces the inspector forks.
    """
    with gr.Row(elem_id="dv-main"):
        with gr.Column(scale=4, min_width=320, elem_id="dv-knobs"):
            c = build_knobs_panel(labels, play, settings=settings, shown=shown, first=first, examples=examples,
                                  default_prompt=default_prompt, longest=longest, scenes=scenes, example=example)
        with gr.Column(scale=8, elem_id="dv-views"):
            c |= build_views_panel(labels, shown, server=server, forks=forks)
    return c


def build_knobs_panel(labels: Labels, play: PlayHandlers, *, settings: dict[str, Any], shown: dict[str, Any],
                      first: Shown | None, examples: Sequence[str], default_prompt: str,
                      longest: int, scenes: Sequence[str] = (), example: str | None = None) -> dict[str, Any]:
    """Prompt and Run, preset buttons, decode settings, teaching switches, and traces in and out."""
    lang, s0, lab = labels.lang, settings, labels.add
    c: dict[str, Any] = {"presets": {}, "boxes": {}}
    # Your own prompt in one step: Run beside it; Enter runs, Shift+Enter starts a new line (one line
    # that grows: Gradio submits on Enter when `lines` is 1, and Shift+Enter types a newline).
    with gr.Column(elem_id="dv-knobs-top"), gr.Row(elem_id="dv-prompt-row"):
        c["prompt"] = lab(gr.Textbox(first.trace.prompt_text if first else default_prompt, lines=1, max_lines=6,
                                     label=t("prompt", lang), info=t("prompt_info", lang), scale=4, min_width=180,
                                     elem_id="dv-prompt"), "prompt")
        lab(c["prompt"], "prompt_info", "info")
        c["run"] = lab(gr.Button(t("run", lang), variant="primary", scale=1, min_width=80, elem_id="dv-run"), "run",
                       "value")
    with gr.Column(elem_id="dv-knobs-main"):  # presets, gen length, temperature: the first things to try
        # the heading of the masked presets (the article's table), or of a canvas's presets (as their code ships them)
        c["boxes"]["presets_title"] = labels.markdown(functools.partial(bold, "presets"))
        c["boxes"]["presets_canvas_title"] = labels.markdown(functools.partial(bold, "presets_canvas"))
        for group, names in PRESET_GROUPS.items():
            with gr.Row(elem_id=f"dv-presets-{group}", elem_classes="dv-presets") as c["boxes"][f"presets_{group}"]:
                for name in names:
                    c["presets"][name] = lab(gr.Button(t(f"preset_{name}", lang), size="sm", min_width=60),
                                             f"preset_{name}", "value")
        # each revision rule where it visibly takes back or rewrites (handlers/scenes.py), on a masked canvas; the
        # box stays (hidden) without scenes, so the page's canvas switch has it to show or hide
        with gr.Column(elem_id="dv-scenes-box", visible=bool(scenes)) as c["boxes"]["scenes_box"]:
            if scenes:
                c["scenes"] = {}
                labels.markdown(functools.partial(small, "scenes"), elem_id="dv-scenes-label")
                with gr.Row(elem_id="dv-scenes", elem_classes="dv-presets"):
                    for key in scenes:
                        c["scenes"][key] = lab(gr.Button(t(f"scene_{key}", lang), size="sm", min_width=60,
                                                         elem_id=f"dv-scene-{key}"), f"scene_{key}", "value")
        c["preset_badge"] = gr.HTML(shown.get("preset_badge", ""), elem_id="dv-preset-badge")
        c["gen_length"] = lab(gr.Slider(8, longest, s0["gen_length"], step=8, label=t("gen_length", lang),
                                        elem_id="dv-gen-length", elem_classes="dv-knob"), "gen_length")
        c["temperature"] = lab(gr.Slider(0, 2.5, s0["temperature"], step=0.05, label=t("temperature", lang),
                                         elem_id="dv-temperature", elem_classes="dv-knob"), "temperature")
    more = build_more_knobs(labels, play, settings=settings, first=first, examples=examples, example=example)
    return c | more | {"boxes": {**c["boxes"], **more["boxes"]}}


def build_more_knobs(labels: Labels, play: PlayHandlers, *, settings: dict[str, Any], first: Shown | None,
                     examples: Sequence[str], example: str | None = None) -> dict[str, Any]:
    """The schedule, sampling and teaching switches, and traces in and out (below the first knobs)."""
    lang, s0, lab = labels.lang, settings, labels.add
    c: dict[str, Any] = {"boxes": {}, "rule_knobs": {}}
    with gr.Column(elem_id="dv-knobs-more"):
        for canvas in rules.CANVAS_RULES:  # shown instead of the masked boxes on a model that writes that canvas
            box = build_canvas_box(labels, s0, canvas)
            c["boxes"] |= box["boxes"]
            c["rule_knobs"] |= box["rule_knobs"]
        with lab(gr.Accordion(t("article_what", lang), open=False), "article_what") as c["boxes"]["article_box"]:
            labels.markdown(functools.partial(small, "article_note"))
        with lab(gr.Accordion(t("schedule_box", lang), open=True), "schedule_box") as c["boxes"]["schedule_box"]:
            c["schedule"] = lab(gr.Dropdown(list(SCHEDULES), value=s0["schedule"], label=t("schedule", lang),
                                            elem_id="dv-schedule"), "schedule")
            c["rule_knobs"] |= build_rule_knobs(labels, s0, SCHEDULE_KNOB_SPECS,
                                                SCHEDULE_KNOBS.get(s0["schedule"], set()))
            c["k_steps"] = gr.HTML(play.k_steps(lang=lang, **s0).k_steps, elem_id="dv-ksteps")
            c["block_length"] = lab(gr.Slider(0, 128, s0["block_length"], step=8, label=t("block_length", lang),
                                              elem_id="dv-block-length", elem_classes="dv-knob"), "block_length")
            with gr.Row(equal_height=True):  # the end-of-text early stop (off by default)
                c["early_stop"] = lab(gr.Checkbox(s0["early_stop"], label=t("early_stop", lang),
                                                  elem_id="dv-early-stop"), "early_stop")
                c["early_stop_threshold"] = lab(gr.Slider(0.5, 1.0, s0["early_stop_threshold"], step=0.01,
                                                          label=t("early_stop_threshold", lang),
                                                          elem_classes="dv-knob"), "early_stop_threshold")
            # The approximate key-value cache (off by default): its own row, so that its choices read whole.
            c["cache"] = lab(gr.Dropdown(cache_choices(lang), value=s0["cache"], label=t("cache", lang),
                                         elem_id="dv-cache"), "cache")
            lab(c["cache"], cache_choices, "choices")
            drift = gr.Checkbox(s0["cache_drift"], label=t("cache_drift", lang), elem_id="dv-cache-drift")
            c["cache_drift"] = lab(drift, "cache_drift")
            labels.markdown(functools.partial(small, "cache_note"))
        with lab(gr.Accordion(t("sampling_box", lang), open=True), "sampling_box"):
            c["confidence"] = lab(gr.Dropdown(list(CONFIDENCES), value=s0["confidence"], label=t("confidence", lang)),
                                  "confidence")
            c["top_p"] = lab(gr.Slider(0.05, 1.0, s0["top_p"], step=0.01, label=t("top_p", lang), elem_id="dv-top-p",
                                       elem_classes="dv-knob"), "top_p")
            c["stages_on"] = lab(gr.Checkbox(s0["stages_on"], label=t("stages_on", lang)), "stages_on")
            with gr.Row():
                for k in ("t_early", "t_middle", "t_late"):
                    c[k] = lab(gr.Slider(0, 2.5, s0[k], step=0.05, label=t(k, lang), min_width=90,
                                         elem_classes="dv-knob", interactive=bool(s0["stages_on"]),
                                         elem_id=f"dv-{k.replace('_', '-')}"), k)
            with gr.Row(equal_height=True):
                # No precision: Gradio would round 1.5 to 2; the handlers refuse it (seeds are integers). No
                # minimum or maximum either: Gradio would refuse -1 itself, in English, once for every event that
                # reads the seed (a slider's release and its k line: two toasts); the handlers refuse it once,
                # naming the range in the page's language, and the widgets go back to the trace on show.
                c["seed"] = lab(gr.Number(s0["seed"], precision=None, label=t("seed", lang), scale=2,
                                          elem_id="dv-seed"), "seed")
                c["new_seed"] = lab(gr.Button(t("new_seed", lang), size="sm", scale=1), "new_seed", "value")
        revision = build_revision_box(labels, s0)
        c |= {**revision, "rule_knobs": {**c["rule_knobs"], **revision["rule_knobs"]},
              "boxes": {**c["boxes"], **revision["boxes"]}}
        with lab(gr.Accordion(t("teaching", lang), open=False), "teaching") as c["boxes"]["teaching_box"]:
            for name, names in (("confidence_from", CONFIDENCE_FROM), ("sample_scope", SAMPLE_SCOPES),
                                ("rng", RNG_MODES)):
                c[name] = lab(gr.Radio(switch_choices(names, lang), value=s0[name], label=t(name, lang)), name)
                lab(c[name], functools.partial(switch_choices, names), "choices")
        with lab(gr.Accordion(t("trace_io", lang), open=True), "trace_io"):
            choices = functools.partial(example_choices, tuple(examples))
            c["example"] = lab(gr.Dropdown(choices(lang), value=example,
                                           label=t("examples", lang)), "examples")
            lab(c["example"], choices, "choices")
            with gr.Row():
                c["download"] = lab(gr.DownloadButton(t("download", lang), value=play.export(trace=first).download,
                                                      size="sm"), "download")
                c["upload"] = lab(gr.UploadButton(t("upload", lang), file_types=[".json"], type="filepath", size="sm"),
                                  "upload")
            c |= build_takeout(labels)
    return c


def build_takeout(labels: Labels) -> dict[str, Any]:
    """The trace on show taken out of the page (handlers/takeout.py): an animation file in a format offered,
    and a trace file diffed against it, in words."""
    lang, lab = labels.lang, labels.add
    c: dict[str, Any] = {}
    with gr.Row(equal_height=True, elem_id="dv-anim-row"):
        formats = animation_formats()
        c["anim_format"] = lab(gr.Dropdown(formats, value=formats[0], label=t("anim_format", lang), min_width=90,
                                           scale=1, elem_id="dv-anim-format"), "anim_format")
        c["anim_make"] = lab(gr.Button(t("anim_make", lang), size="sm", scale=2, elem_id="dv-anim-make"), "anim_make",
                             "value")
    c["anim_file"] = lab(gr.File(label=t("anim_file", lang), interactive=False, height=80, elem_id="dv-anim-file"),
                         "anim_file")
    c["diff_upload"] = lab(gr.UploadButton(t("diff_upload", lang), file_types=[".json"], type="filepath", size="sm",
                                           elem_id="dv-diff-upload"), "diff_upload")
    c["diff_summary"] = gr.Markdown("", elem_id="dv-diff-summary")
    return c


def figure_host(name: str, elem_id: str) -> gr.HTML:
    """Where the page draws one figure of the trace on show (no value: the page has the trace)."""
    return gr.HTML(render.figure_host_html(), js_on_load=None, elem_id=elem_id, min_height=FIGURE_HEIGHTS.get(name))


def build_views_panel(labels: Labels, shown: dict[str, Any], *, server: Sequence[Callable[..., Any]],
                      forks: tuple[str, ...] = ()) -> dict[str, Any]:
    """The banner, the canvas with its player, run facts, and the figures of the trace on show. The
    canvas's value names the trace on show; its script (`web.PAGE_JS`) reads the trace with `server`
    and draws the canvas, the inspector and every figure; plotly.js comes with it (`head`)."""
    c: dict[str, Any] = {}
    with gr.Column(elem_id="dv-views-canvas"):
        c["banner"] = gr.Markdown("", elem_id="dv-banner", elem_classes="dv-banner-box")
        labels.help_box("help_canvas")
        c["canvas"] = gr.HTML(shown.get("canvas"), html_template=render.canvas_template(),
                              js_on_load=web.PAGE_JS, server_functions=list(server), head=web.plotly_head(),
                              elem_id="dv-canvas", **web.options(forks))
        c["stop"] = labels.add(gr.Button(t("stop", labels.lang), size="sm", elem_id="dv-stop"), "stop", "value")
        c["stop_key"] = gr.Textbox("", show_label=False, container=False, elem_id="dv-stop-key")  # page.js fills it
        c["ref"] = gr.Textbox("", visible=False)  # a decode's handle, drawn by the page when it starts one
        c["fork"] = gr.Button("fork", size="sm", elem_id="dv-fork")  # hidden: the inspector's fork buttons click it
        c["fork_request"] = gr.Textbox("", show_label=False, container=False, elem_id="dv-fork-key")  # their change
    with gr.Column(elem_id="dv-views-facts"):
        c["facts"] = gr.HTML(shown.get("facts", ""), js_on_load=None)
    with gr.Column(elem_id="dv-views-task"):  # a task prompt's measured curves (dllm_viz.tasks)
        labels.help_box("help_task_curve")
        c["task_curve"] = figure_host("task_curve", "dv-task-curve")
        with labels.add(gr.Accordion(t("curve_lesson_box", labels.lang), open=False, elem_id="dv-curve-lesson"),
                        "curve_lesson_box"):
            labels.markdown(task_view.curve_lesson_md)
    with gr.Column(elem_id="dv-views-figs"):
        labels.help_box("help_heatmap")
        c["heatmap"] = figure_host("heatmap", "dv-heatmap")
        with gr.Row():
            with gr.Column():
                labels.help_box("help_order")
                c["order"] = figure_host("order", "dv-order")
                labels.markdown(functools.partial(bold, "inspector"))
                labels.help_box("help_inspector")
                c["inspector"] = gr.HTML(render.inspector_host_html(), js_on_load=None, elem_id="dv-inspector")
            with gr.Column():
                labels.help_box("help_steps")
                c["steps_fig"] = figure_host("steps_fig", "dv-steps")
    return c
