"""The Compare tab's layout: the lesson buttons and text, configs A and B, and the two runs side by
side (summary, canvases, order maps, heatmaps, per-step plots, facts). Widgets only; `ui` wires
their events to `handlers_compare`.
"""
from __future__ import annotations

import functools
from typing import Any

import gradio as gr

from dllm_viz.app.handlers.compare import FIRST_LESSON, CompareHandlers
from dllm_viz.app.strings import t
from dllm_viz.studies.lessons import LESSONS, NEIGHBOURS
from dllm_viz.app.layout.page import Labels, bold, small
from dllm_viz.app.views import render

# A Compare side's script: its value names its trace; the page's script (on the Playground's canvas)
# reads it and draws the side's canvas and, with the other side, the pair's figures.
SIDE_JS = """const show = () => (window.__dvSide ? window.__dvSide(element, props, "%s") : setTimeout(show, 50));
show(); watch("value", show);"""


def build_compare_tab(labels: Labels, compare: CompareHandlers, *, model_pick: str | None = None) -> dict[str, Any]:
    """The tab's components by `Page` name (`lessons`: the lesson buttons by key); the first lesson's
    text is the one measured on `model_pick`."""
    lang, lab = labels.lang, labels.add
    c: dict[str, Any] = {"lessons": {}, "boxes": {}}
    c["lesson_key"] = gr.State(FIRST_LESSON)
    c["cmp_traces"] = gr.State(None)
    c["cmp_ref"] = gr.Textbox("", visible=False)  # hidden: the sides' handles the page draws for a compare it starts
    # the lessons compare masked decodes: their heading and buttons hide on a model of another canvas (CanvasShown)
    with gr.Column(elem_id="dv-lessons-box") as c["boxes"]["lessons_box"]:
        labels.markdown(functools.partial(bold, "lessons"))
        with gr.Row(elem_classes="dv-lesson-buttons"):
            for key, lesson in LESSONS.items():
                c["lessons"][key] = lab(gr.Button(lesson.text("title", lang), size="sm", elem_id=f"dv-lesson-{key}"),
                                        functools.partial(lesson.text, "title"), "value")
    c["lesson_text"] = gr.Markdown(compare.lesson_text(FIRST_LESSON, lang, model_pick=model_pick),
                                   elem_id="dv-lesson-text")
    labels.markdown(functools.partial(small, "compare_note"))
    with gr.Row():
        pair = compare.pair_for(model_pick)  # the first lesson's, or on a canvas plug-in's model its own pair
        c["cmp_a"] = lab(gr.Code(pair[0], language="json", label=t("config_a", lang), lines=2, elem_id="dv-cmp-a"),
                         "config_a")
        c["cmp_b"] = lab(gr.Code(pair[1], language="json", label=t("config_b", lang), lines=2, elem_id="dv-cmp-b"),
                         "config_b")
    with gr.Row(equal_height=True):
        c["neighbours"] = lab(gr.Slider(0, len(NEIGHBOURS), 0, step=1, label=t("neighbours", lang), scale=3),
                              "neighbours")
        c["compare_run"] = lab(gr.Button(t("compare_run", lang), variant="primary", scale=1, elem_id="dv-compare-run"),
                               "compare_run", "value")
    c["cmp_summary"] = gr.Markdown("", elem_id="dv-cmp-summary")
    c["cmp_player"] = gr.HTML(render.pair_template(), js_on_load=None, elem_id="dv-cmp-player")
    with gr.Row():
        for side in ("a", "b"):
            c[f"cmp_canvas_{side}"] = gr.HTML(None, html_template=render.side_template(),
                                              js_on_load=SIDE_JS % side, elem_id=f"dv-cmp-canvas-{side}")
    # hidden (palette.CSS): a live side's Stop fills the key and clicks the button (page.js), as the Playground's
    c["cmp_stop"] = lab(gr.Button(t("stop", lang), size="sm", elem_id="dv-cmp-stop"), "stop", "value")
    c["cmp_stop_key"] = gr.Textbox("", show_label=False, container=False, elem_id="dv-cmp-stop-key")
    c["fork_pair"] = gr.Button("fork pair", size="sm", elem_id="dv-fork-pair")  # hidden: a fork's banner link clicks it
    host = lambda elem_id: gr.HTML(render.figure_host_html(), js_on_load=None, elem_id=elem_id)  # noqa: E731
    c["cmp_orders"] = host("dv-cmp-orders")
    with gr.Row(elem_classes="dv-cmp-figs"):  # one above the other on a phone (palette.CSS)
        c["cmp_heat_a"] = host("dv-cmp-heat-a")
        c["cmp_heat_b"] = host("dv-cmp-heat-b")
    with gr.Row(elem_classes="dv-cmp-figs"):
        c["cmp_steps_a"] = host("dv-cmp-steps-a")
        c["cmp_steps_b"] = host("dv-cmp-steps-b")
    with gr.Row():
        c["cmp_facts_a"] = gr.HTML("", js_on_load=None)
        c["cmp_facts_b"] = gr.HTML("", js_on_load=None)
    return c
