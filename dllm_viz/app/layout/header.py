"""The text around the tabs: the header band (title, language, model or model picker) and the About tab."""
from __future__ import annotations

import functools
from typing import Any

import gradio as gr

from dllm_viz.app.views import render
from dllm_viz.core import rules
from dllm_viz.app.strings import LANG_CHOICES, t
from dllm_viz.app.layout.page import Labels
from dllm_viz.app.handlers.playground import ModelChoice


def header_md(lang: str) -> str:
    """The page's title."""
    return f"# {t('title', lang)}"


def subtitle_md(canvas: str, lang: str) -> str:
    """What the model on show does, under the title: a masked canvas confirms, a canvas plug-in's says its own
    (the string `subtitle_` + its name)."""
    return t("subtitle" if canvas == "masked" else f"subtitle_{canvas}", lang)


def model_line(model_name: str, lang: str) -> str:
    """Which model decodes, when there is no picker."""
    return render.small_md(f"{t('model', lang)}: `{model_name}`")


def build_header(labels: Labels, *, model_name: str, models: dict[str, ModelChoice],
                 pick: str | None = None) -> dict[str, Any]:
    """Title, language switch, "link", and the model's name (one model) or the model picker (more
    than one) set to `pick` (default: the first), with its example prompts."""
    lang, picks = labels.lang, list(models)
    pick = pick if pick in models else (picks[0] if picks else None)
    c: dict[str, Any] = {"boxes": {}}
    with gr.Row(elem_id="dv-header", equal_height=True):
        with gr.Column(scale=1):
            with gr.Column(elem_id="dv-header-text"):  # the title, and the subtitle of the model's canvas
                c["header"] = labels.markdown(header_md)
                for canvas in ("masked", *rules.CANVAS_RULES):  # shown as the model on show writes it (CanvasShown)
                    c["boxes"][f"subtitle_{canvas}"] = labels.markdown(functools.partial(subtitle_md, canvas),
                                                                     elem_id=f"dv-subtitle-{canvas}")
            # The picked model's example prompts: a click fills the prompt box and runs it (page.js).
            c["model_prompts"] = gr.HTML(render.model_prompts_html(models[pick].prompts, lang) if pick else "",
                                         visible=bool(picks), elem_id="dv-model-prompts")
        with gr.Column(scale=0, min_width=240, elem_id="dv-header-side"):
            with gr.Row(equal_height=True):
                c["lang"] = labels.add(gr.Radio(list(LANG_CHOICES), value=lang, label=t("language", lang),
                                                elem_id="dv-lang", container=False, scale=3), "language")
                labels.add(gr.HTML(render.link_button_html(lang), elem_id="dv-link-box", min_width=70, scale=1),
                           render.link_button_html, "value")
            labels.markdown(functools.partial(model_line, model_name), visible=len(picks) < 2)
            c["model_pick"] = labels.add(gr.Dropdown(picks, value=pick, label=t("model", lang),
                                                     visible=len(picks) > 1, elem_id="dv-model"), "model")
    return c


def build_about_tab(labels: Labels) -> None:
    """The About tab: how to read the page (i18n `about_md`)."""
    labels.markdown(functools.partial(t, "about_md"))


def build_footer(labels: Labels) -> None:
    """The page's footer in the page's language (Gradio's own, in English only, is hidden: palette.PAGE_CSS)."""
    labels.add(gr.HTML(render.footer_html(labels.lang), elem_id="dv-footer"), render.footer_html, "value")
