"""The knobs panel's box of a canvas plug-in (the renoise canvas): a widget per knob of its spec, shown while the
model on show writes that canvas (`adapters.shown_on`; the masked boxes hide then).

Widgets only, as `layout_play`; `ui` wires them (a release or a choice re-runs the decode). A number is a slider
(`Knob.slider`) with, when the knob is optional, an "auto" switch beside it: on, the knob is None, the
checkpoint's own value (its generation config), and the slider is greyed out. A choice is a dropdown of its
choices, with an "auto" entry when it is optional. Labels and notes are the strings named after each knob.
"""
from __future__ import annotations

import functools
from typing import Any

import gradio as gr

from dllm_viz.app.handlers.adapters import AUTO
from dllm_viz.app.handlers.outputs import AUTO_OF, CANVAS_KNOB_SPECS
from dllm_viz.app.layout.page import Labels, small
from dllm_viz.app.layout.revision import knob_widget, named_choices
from dllm_viz.app.strings import STRINGS, t
from dllm_viz.core import rules
from dllm_viz.core.knobs import Knob


def auto_choices(knob: Knob, lang: str) -> list[tuple[str, str]]:
    """An optional choice's entries: "auto" (None: as the checkpoint ships it), then its choices."""
    auto = [(f"{AUTO}: {t('knob_auto_choice', lang)}", AUTO)] if knob.optional else []
    return auto + named_choices(knob.labels_key, knob.choices, lang)


def choice_widget(labels: Labels, knob: Knob, value: Any) -> gr.Dropdown:
    """A canvas knob's dropdown, its "auto" entry first."""
    lang, name, lab = labels.lang, knob.name, labels.add
    kw: dict[str, Any] = dict(label=t(name, lang), elem_id=f"dv-knob-{name.replace('_', '-')}")
    info = f"info_{name}" if f"info_{name}" in STRINGS else None
    if info:
        kw["info"] = t(info, lang)
    choices = functools.partial(auto_choices, knob)
    widget = lab(gr.Dropdown(choices(lang), value=value, **kw), name)
    lab(widget, choices, "choices")
    if info:
        lab(widget, info, "info")
    return widget


def build_canvas_box(labels: Labels, settings: dict[str, Any], canvas: str) -> dict[str, Any]:
    """The accordion of the canvas plug-in `canvas` (`boxes`: "canvas_" and its name) and its knobs' widgets
    (`rule_knobs`, each "auto" switch under its knob's name and "_auto"); components by `Page` name."""
    lang, s0, lab = labels.lang, settings, labels.add
    widgets: dict[str, Any] = {}
    box = lab(gr.Accordion(t(f"canvas_box_{canvas}", lang), open=True, elem_id=f"dv-canvas-box-{canvas}"),
              f"canvas_box_{canvas}")
    with box:
        for knob in (k for k in CANVAS_KNOB_SPECS if canvas in rules.applies(k.name)):
            if knob.kind == "choice":
                widgets[knob.name] = choice_widget(labels, knob, s0[knob.name])
                continue
            auto = AUTO_OF.get(knob.name)
            with gr.Row(equal_height=True):
                widgets[knob.name] = knob_widget(labels, knob, s0[knob.name], not (auto and s0[auto]))
                if auto:
                    widgets[auto] = lab(gr.Checkbox(s0[auto], label=t("knob_auto", lang), scale=0, min_width=80,
                                                    elem_id=f"dv-knob-{knob.name.replace('_', '-')}-auto",
                                                    elem_classes="dv-auto"), "knob_auto")
        labels.markdown(functools.partial(small, f"canvas_note_{canvas}"))
    return {"boxes": {f"canvas_{canvas}": box}, "rule_knobs": widgets}
