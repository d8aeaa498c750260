"""The knobs panel's revision box (issue 28): which rule may take back or rewrite decided tokens, and its knobs.

Widgets only, as `layout_play`; `ui` wires them (a release or a choice re-runs the decode; the rule
greys out the knobs it does not read, `adapters.RULE_KNOBS`). Each knob carries a help note in both
languages; the box ends with what each rule does and where it comes from.
"""
from __future__ import annotations

import functools
from typing import Any

import gradio as gr

from dllm_viz.app.handlers.adapters import RULE_KNOBS
from dllm_viz.app.strings import t
from dllm_viz.app.layout.page import Labels, small
from dllm_viz.core.config import MAX_BUDGET, REMASK_SIGMAS, REVISIONS

LOOP_MAX = 64  # the sliders' end for the step budgets (the config allows up to MAX_BUDGET)
assert LOOP_MAX <= MAX_BUDGET


def named_choices(prefix: str, names: tuple[str, ...], lang: str) -> list[tuple[str, str]]:
    """A dropdown's entries: (the name with what it does, in `lang`; the name)."""
    return [(f"{name}: {t(f'{prefix}{name}', lang)}", name) for name in names]


def build_revision_box(labels: Labels, settings: dict[str, Any]) -> dict[str, Any]:
    """The accordion of the revision rule and its knobs; components by `Page` name."""
    lang, s0, lab = labels.lang, settings, labels.add
    used = RULE_KNOBS.get(s0["revise"], set())
    c: dict[str, Any] = {}

    def knob(name: str, widget: Any) -> None:
        c[name] = lab(widget, name)
        lab(c[name], f"info_{name}", "info")

    def slider(name: str, lo: float, hi: float, step: float, **kw: Any) -> None:
        knob(name, gr.Slider(lo, hi, s0[name], step=step, label=t(name, lang), info=t(f"info_{name}", lang),
                             interactive=name in used, elem_id=f"dv-{name.replace('_', '-')}", elem_classes="dv-knob",
                             **kw))

    with lab(gr.Accordion(t("revise_box", lang), open=s0["revise"] != "none", elem_id="dv-revise-box"), "revise_box"):
        rules = functools.partial(named_choices, "choice_revise_", REVISIONS)
        knob("revise", gr.Dropdown(rules(lang), value=s0["revise"], label=t("revise", lang),
                                   info=t("info_revise", lang), elem_id="dv-revise"))
        lab(c["revise"], rules, "choices")
        with gr.Row():
            sigmas = functools.partial(named_choices, "choice_sigma_", REMASK_SIGMAS)
            knob("remask_sigma", gr.Dropdown(sigmas(lang), value=s0["remask_sigma"], label=t("remask_sigma", lang),
                                             info=t("info_remask_sigma", lang), interactive="remask_sigma" in used,
                                             elem_id="dv-remask-sigma"))
            lab(c["remask_sigma"], sigmas, "choices")
            slider("remask_eta", 0.01, 1.0, 0.01)
        with gr.Row():
            slider("remask_alpha_on", 0.05, 0.99, 0.01)
            slider("remask_loop_steps", 0, LOOP_MAX, 1)
        slider("verify_threshold", 0.05, 1.0, 0.01)
        with gr.Row():
            slider("edit_threshold", 0.0, 1.0, 0.01)
            slider("max_post_edit_steps", 0, LOOP_MAX, 1)
        slider("penalty_lambda", 0.0, 5.0, 0.1)
        knob("threshold_strict", gr.Checkbox(s0["threshold_strict"], label=t("threshold_strict", lang),
                                             info=t("info_threshold_strict", lang), elem_id="dv-threshold-strict"))
        labels.markdown(functools.partial(small, "revise_note"))
    return c
