"""The knobs panel's revision box: which rule may take back or rewrite decided tokens, and its knobs; and the
widgets of every rule plug-in's knob, made from its spec (`knob_widget`, also for the schedule box).

Widgets only, as `layout_play`; `ui` wires them (a release or a choice re-runs the decode; the rule
greys out the knobs it does not read, `adapters.RULE_KNOBS`). Each knob carries a help note in both
languages; the box ends with what each rule does and where it comes from.
"""
from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import gradio as gr

from dllm_viz.app.handlers.adapters import INDEL_KNOBS, RULE_KNOBS
from dllm_viz.app.handlers.outputs import RULE_KNOB_SPECS
from dllm_viz.app.strings import STRINGS, t
from dllm_viz.app.layout.page import Labels, small
from dllm_viz.core.config import INDELS, REVISIONS
from dllm_viz.core.knobs import Knob


def named_choices(prefix: str, names: tuple[str, ...], lang: str) -> list[tuple[str, str]]:
    """A dropdown's entries: (the name with what it does, in `lang`; the name)."""
    return [(f"{name}: {t(f'{prefix}{name}', lang)}", name) for name in names]


def knob_widget(labels: Labels, knob: Knob, value: Any, interactive: bool) -> Any:
    """The widget of a rule plug-in's knob, from its spec: a dropdown of its choices, a checkbox, or a
    slider (`Knob.slider`); its label and note are the strings named after it, plain and prefixed `info_`."""
    lang, name, lab = labels.lang, knob.name, labels.add
    info = f"info_{name}" if f"info_{name}" in STRINGS else None
    kw: dict[str, Any] = dict(label=t(name, lang), interactive=interactive, elem_id=f"dv-knob-{name.replace('_', '-')}")
    if info:
        kw["info"] = t(info, lang)
    if knob.kind == "choice":
        choices = functools.partial(named_choices, knob.labels_key, knob.choices)
        widget = lab(gr.Dropdown(choices(lang), value=value, **kw), name)
        lab(widget, choices, "choices")
    elif knob.kind == "bool":
        widget = lab(gr.Checkbox(value, **kw), name)
    else:
        if knob.slider is None:
            raise ValueError(f"knob {name!r}: a number the page shows needs its slider (Knob.slider)")
        lo, hi, step = knob.slider
        widget = lab(gr.Slider(lo, hi, value, step=step, elem_classes="dv-knob", **kw), name)
    if info:
        lab(widget, info, "info")
    return widget


def build_rule_knobs(labels: Labels, settings: dict[str, Any], specs: Sequence[Knob], used: set[str]) -> dict[str, Any]:
    """A widget per knob spec, two per row, greyed out unless the chosen rule reads it (`used`): by name."""
    out: dict[str, Any] = {}
    for i in range(0, len(specs), 2):
        with gr.Row():
            for knob in specs[i : i + 2]:
                out[knob.name] = knob_widget(labels, knob, settings[knob.name], knob.name in used)
    return out


def build_revision_box(labels: Labels, settings: dict[str, Any]) -> dict[str, Any]:
    """The accordion of the revision rule (`boxes`: `revise_box`) and its knobs (`rule_knobs`); components by
    `Page` name."""
    lang, s0, lab = labels.lang, settings, labels.add
    c: dict[str, Any] = {}
    is_open = s0["revise"] != "none" or s0["indel"] != "none"
    with lab(gr.Accordion(t("revise_box", lang), open=is_open, elem_id="dv-revise-box"), "revise_box") as box:
        rules = functools.partial(named_choices, "choice_revise_", REVISIONS)
        c["revise"] = lab(gr.Dropdown(rules(lang), value=s0["revise"], label=t("revise", lang),
                                      info=t("info_revise", lang), elem_id="dv-revise"), "revise")
        lab(c["revise"], "info_revise", "info")
        lab(c["revise"], rules, "choices")
        moves = functools.partial(named_choices, "choice_indel_", INDELS)
        c["indel"] = lab(gr.Dropdown(moves(lang), value=s0["indel"], label=t("indel", lang), info=t("info_indel", lang),
                                     elem_id="dv-indel"), "indel")
        lab(c["indel"], "info_indel", "info")
        lab(c["indel"], moves, "choices")
        used = RULE_KNOBS.get(s0["revise"], set()) | INDEL_KNOBS.get(s0["indel"], set())
        c["rule_knobs"] = build_rule_knobs(labels, s0, RULE_KNOB_SPECS, used)
        labels.markdown(functools.partial(small, "revise_note"))
    c["boxes"] = {"revise_box": box}
    return c
