"""The page's components by name (`Page`), and what a language switch re-renders (`Labels`).

Handlers' parameters and their results' fields (`outputs`) use `Page`'s field names; the tab
builders (`layout_*`) make the components and register, for each text on the page, how to
render it in another language.
"""
from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import gradio as gr

from dllm_viz.app.views import render
from dllm_viz.app.handlers.adapters import KNOBS
from dllm_viz.app.strings import t


@dataclass
class Label:
    """A component whose `attr` is re-rendered in each language by `text(lang)`."""

    component: Any
    text: Callable[[str], Any]
    attr: str = "label"


class Labels:
    """The page's `Label`s, in the order the builders made them; `lang` is the language the page
    is built in."""

    def __init__(self, lang: str) -> None:
        self.lang = lang
        self.items: list[Label] = []

    def add(self, component: Any, key: str | Callable[[str], Any], attr: str = "label") -> Any:
        """Re-render `component.attr` on a language switch: the i18n string `key`, or `key(lang)`."""
        self.items.append(Label(component, key if callable(key) else functools.partial(t, key), attr))
        return component

    def markdown(self, text: Callable[[str], str], **kwargs: Any) -> gr.Markdown:
        """A Markdown component showing `text(lang)`."""
        return self.add(gr.Markdown(text(self.lang), **kwargs), text, "value")

    def help_box(self, key: str) -> None:
        """The "?" that explains the view below it (i18n key `key`)."""
        self.add(gr.HTML(render.help_html(key, self.lang), elem_classes="dv-help-box"),
                 functools.partial(render.help_html, key), "value")


def bold(key: str, lang: str) -> str:
    """The i18n string `key` in bold: the heading of a group of widgets."""
    return f"**{t(key, lang)}**"


def small(key: str, lang: str) -> str:
    """The i18n string `key` in small print: a note under a group of widgets."""
    return render.small_md(t(key, lang))


@dataclass
class Page:
    """Every component of the page, by name. Handlers' parameters and results use these names."""

    # header
    header: gr.Markdown
    lang: gr.Radio
    model_pick: gr.Dropdown  # which model decodes (shown when build_demo gets more than one)
    model_prompts: gr.HTML  # example prompts of the picked model: a click runs one (page.js)
    # playground: inputs
    prompt: gr.Textbox
    preset_badge: gr.HTML
    gen_length: gr.Slider
    temperature: gr.Slider
    schedule: gr.Dropdown
    k_steps: gr.HTML
    block_length: gr.Slider
    early_stop: gr.Checkbox
    early_stop_threshold: gr.Slider
    cache: gr.Dropdown
    cache_drift: gr.Checkbox
    revise: gr.Dropdown  # the revision rule; its knobs and the schedules' are in `rule_knobs`
    indel: gr.Dropdown  # the insert/delete rule (its knobs are the threshold's and the edit rule's)
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
    anim_format: gr.Dropdown  # the animation's format (handlers/takeout.py: mp4 only with ffmpeg)
    anim_make: gr.Button  # writes the trace on show as an animation into anim_file
    anim_file: gr.File  # the animation to download
    diff_upload: gr.UploadButton  # a trace file to diff against the trace on show
    diff_summary: gr.Markdown  # where they part, in words
    # playground: views
    banner: gr.Markdown
    canvas: gr.HTML  # its value names the trace on show by handle; the page draws it and every figure below
    ref: gr.Textbox  # hidden: the handle the page draws for a decode it starts (`page_server.NEW_REF_JS`)
    stop: gr.Button  # hidden: the live canvas's Stop clicks it (page.js)
    stop_key: gr.Textbox  # hidden: the key of the decode to stop, from its live canvas (page.js)
    fork: gr.Button  # hidden: the inspector's fork buttons click it (page.js)
    fork_request: gr.Textbox  # hidden: their change, `/fork`'s JSON, the step being the canvas on show (page.js)
    facts: gr.HTML
    heatmap: gr.HTML  # the figures' hosts: the page draws them from the trace (web/figures.js)
    order: gr.HTML
    steps_fig: gr.HTML
    task_curve: gr.HTML  # a task prompt's measured accuracy-against-parallelism curves (dllm_viz.tasks)
    inspector: gr.HTML  # drawn by page.js for the page's cursor (render.inspector_host_html)
    trace: gr.State  # the trace on show (`traces.Shown`: its handle and the trace)
    # compare
    lesson_text: gr.Markdown
    cmp_a: gr.Code
    cmp_b: gr.Code
    neighbours: gr.Slider
    compare_run: gr.Button
    cmp_summary: gr.Markdown
    cmp_player: gr.HTML  # one player over both sides, drawn by the page once both are done (web/pair.js)
    cmp_canvas_a: gr.HTML  # a side's trace by handle; the page draws its canvas and the pair's figures
    cmp_canvas_b: gr.HTML
    cmp_orders: gr.HTML
    cmp_heat_a: gr.HTML
    cmp_heat_b: gr.HTML
    cmp_steps_a: gr.HTML
    cmp_steps_b: gr.HTML
    cmp_facts_a: gr.HTML
    cmp_facts_b: gr.HTML
    cmp_traces: gr.State
    cmp_ref: gr.Textbox  # hidden: the sides' handles the page draws for a compare it starts (`page_server.PAIR_JS`)
    cmp_stop: gr.Button  # hidden: a live Compare side's Stop clicks it (page.js)
    cmp_stop_key: gr.Textbox  # hidden: the key of the compare to stop, from its live sides (page.js)
    fork_pair: gr.Button  # hidden: a fork's banner link clicks it (the fork beside the trace it left, page.js)
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
    presets: dict[str, gr.Button] = field(default_factory=dict)  # by preset name (adapters.PRESET_GROUPS)
    # The rule plug-ins' knobs (adapters.PLUGIN_KNOBS), made from their specs: read as attributes too (`page.gamma`).
    rule_knobs: dict[str, Any] = field(default_factory=dict)
    # Groups of widgets shown or hidden whole with the canvas of the model on show (`outputs.BOXES`), as attributes.
    boxes: dict[str, Any] = field(default_factory=dict)
    scenes: dict[str, gr.Button] = field(default_factory=dict)  # by scene key (handlers/scenes.py)
    lessons: dict[str, gr.Button] = field(default_factory=dict)  # by lesson key
    labels: list[Label] = field(default_factory=list)  # what a language switch re-renders

    def __getattr__(self, name: str) -> Any:  # only for names that are not fields: a plug-in's knob, a box
        for group in ("rule_knobs", "boxes"):
            named = self.__dict__.get(group) or {}
            if name in named:
                return named[name]
        raise AttributeError(f"Page has no component {name!r}")

    @property
    def knobs(self) -> tuple[Any, ...]:
        """The decode-setting components, in KNOBS order."""
        return tuple(getattr(self, name) for name in KNOBS)

    def name_of(self, component: Any) -> str:
        for f in dataclasses.fields(self):
            if getattr(self, f.name) is component:
                return f.name
        for name, knob in (*self.rule_knobs.items(), *self.boxes.items()):
            if knob is component:
                return name
        raise ValueError(f"component {component!r} is not a field of Page")
