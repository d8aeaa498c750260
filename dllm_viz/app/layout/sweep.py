"""The Sweep tab's layout: the grid's axes (temperatures, top_k divisors, decays), prompts, seeds and
length, and one heatmap per metric with the table under them; on a model of a canvas plug-in (a renoising one),
a note and that canvas's own sweep, counted, in their place. Widgets only; `ui` wires the Run button to
`handlers_sweep`.
"""
from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import gradio as gr

from dllm_viz.app.handlers.compare import CANVAS_STUDIES
from dllm_viz.app.strings import t
from dllm_viz.core import rules
from dllm_viz.studies.lessons import DEFAULT_PROMPTS
from dllm_viz.app.layout.page import Labels
from dllm_viz.app.handlers.sweep_grid import MAX_SWEEP_SEEDS

SWEEP_TEMPERATURES = (0.3, 0.6, 0.9, 1.2, 1.5, 2.0)
SWEEP_DIVISORS = (8, 6, 4, 3, 2)
SWEEP_DECAYS = (0.85, 0.9, 0.95, 1.0)


def build_sweep_tab(labels: Labels, *, longest: int, prompts: Sequence[str] = DEFAULT_PROMPTS) -> dict[str, Any]:
    """The tab's components by `Page` name; `longest` is the longest gen_length offered, `prompts`
    the example prompts of the model on show (the first two fill the prompts box)."""
    c: dict[str, Any] = {"boxes": {}}
    c["sweep_state"] = gr.State(None)
    # On a model of a canvas plug-in, what its sweep is instead (the grid's knobs are the masked canvas's; the
    # boxes follow the model on show: CanvasShown).
    for canvas in rules.CANVAS_RULES:
        c["boxes"][f"sweep_note_{canvas}"] = labels.markdown(functools.partial(sweep_note_md, canvas),
                                                            elem_id=f"dv-sweep-note-{canvas}")
    with gr.Column(elem_id="dv-sweep-box") as c["boxes"]["sweep_box"]:
        _grid(c, labels, longest=longest, prompts=prompts)
    return c


def sweep_note_md(canvas: str, lang: str) -> str:
    """The Sweep tab on a model of a canvas plug-in: why the grid does not run there, and that canvas's own sweep,
    counted (`CANVAS_STUDIES`, the Compare tab's study)."""
    return f"{t(f'sweep_canvas_{canvas}', lang)}\n\n{CANVAS_STUDIES[canvas](lang)}"


def _grid(c: dict[str, Any], labels: Labels, *, longest: int, prompts: Sequence[str]) -> None:
    """The masked canvas's grid: its axes, prompts, seeds and length, the Run button, the heatmaps and the table."""
    lang, lab = labels.lang, labels.add
    labels.markdown(functools.partial(t, "sweep_intro"))
    with gr.Row():
        c["sweep_temps"] = lab(gr.CheckboxGroup(list(SWEEP_TEMPERATURES), value=[0.6, 0.9, 1.2, 1.5],
                                                label=t("sweep_temps", lang)), "sweep_temps")
        c["sweep_divisors"] = lab(gr.CheckboxGroup([f"L/{d}" for d in SWEEP_DIVISORS], value=["L/6", "L/4", "L/3"],
                                                   label=t("sweep_topk", lang)), "sweep_topk")
        c["sweep_decays"] = lab(gr.CheckboxGroup(list(SWEEP_DECAYS), value=[0.9], label=t("sweep_decays", lang)),
                                "sweep_decays")
    with gr.Row():
        c["sweep_prompts"] = lab(gr.Textbox("\n".join(prompts[:2]), lines=2, label=t("sweep_prompts", lang),
                                            scale=3), "sweep_prompts")
        with gr.Column(scale=2):
            c["sweep_seeds"] = lab(gr.Slider(1, MAX_SWEEP_SEEDS, 2, step=1, label=t("sweep_seeds", lang)),
                                   "sweep_seeds")
            c["sweep_gen_length"] = lab(gr.Slider(8, longest, 32, step=8, label=t("gen_length", lang)), "gen_length")
    c["sweep_run"] = lab(gr.Button(t("sweep_run", lang), variant="primary"), "sweep_run", "value")
    c["sweep_summary"] = gr.Markdown("")
    with gr.Row():
        c["sweep_nfe"] = gr.Plot(show_label=False)
        c["sweep_repeat_3"] = gr.Plot(show_label=False)
    with gr.Row():
        c["sweep_distinct_2"] = gr.Plot(show_label=False)
        c["sweep_mean_logprob"] = gr.Plot(show_label=False)
    c["sweep_table"] = lab(gr.Dataframe(label=t("sweep_table", lang), interactive=False), "sweep_table")
