"""The lessons' measurements as the Compare tab shows them, in the page's language.

The numbers and their tables are `dllm_viz.studies`' (measured by its commands); this module only
names rows and columns with the page's strings.
"""
from __future__ import annotations

from typing import Any

from dllm_viz.app.strings import t
from dllm_viz.studies import indel_lessons, lessons, renoise_lessons, revision_lessons, world_lessons

REVISION_HEADER_KEYS = ("rt_rule", "rt_decoder", "rt_nfe", "rt_valid", "rt_broken", "rt_sums", "rt_revised",
                        "rt_matched")


def measured_table(measured: dict[str, Any], lang: str = "en") -> str:
    """Markdown table of one lesson's A/B numbers (`studies.lessons.table`), in `lang`."""
    return lessons.table(measured, lambda key, **values: t(key, lang, **values))


def world_table(result: dict[str, Any], lang: str = "en", *, title: str | None = None, claim: str | None = None) -> str:
    """Markdown table of one world study or pair (`studies.world_lessons.table`), in `lang`."""
    rules = " / ".join(t(f"rule_{r}", lang) for r in world_lessons.MEANING_RULES)
    head = (t("wt_variant", lang), t("wt_steps", lang), t("wt_valid_runs", lang), t("wt_valid_sentences", lang),
            t("wt_broken", lang), t("wt_breaking", lang, rules=rules))
    return world_lessons.table(result, head=head, claim_line=t("wt_claim", lang, c="{c}"), title=title, claim=claim)


def study_md(lang: str, data: dict[str, Any] | None = None, text: dict[str, Any] | None = None) -> str:
    """The revision study as the Compare tab shows it beside a revision lesson: its prose in `lang` and
    one table per regime (headers in `lang`); "" when it was not measured."""
    data = revision_lessons.load_revision() if data is None else data
    text = revision_lessons.load_study_text() if text is None else text
    if not data or not text:
        return ""
    header = [t(key, lang) for key in REVISION_HEADER_KEYS]
    names = {"monotone": t("rt_monotone", lang), "editing": t("rt_editing", lang), "model": t("rt_model", lang),
             "oracle": t("rt_oracle", lang), "skipped": t("rt_cannot_edit", lang)}
    parts = [f"### {text['title'][lang]}", text["text"][lang]]
    for regime in (*revision_lessons.REGIMES, "shipped"):
        if regime not in next(iter(data["decoders"].values())):  # measured before the presets as shipped
            continue
        own = {r: t(f"rt_shipped_{r}", lang) for r in revision_lessons.SHIPPED} if regime == "shipped" else {}
        parts += [f"**{t(f'rt_regime_{regime}', lang)}**",
                  revision_lessons.table(data, regime, header, {**names, **own})]
    parts.append("*" + t("rt_footer", lang, model=data.get("model", "world"), n=len(data["prompts"]) * data["seeds"],
                         g=data["gen_length"]) + "*")
    return "\n\n".join(parts)


def indel_study_md(lang: str, data: dict[str, Any] | None = None, text: dict[str, Any] | None = None) -> str:
    """Insert and delete counted on world-indel (`studies.indel_lessons`), beside the revision study: its prose in
    `lang` and the lesson's table (headers in `lang`); "" when it was not measured."""
    data = indel_lessons.load_eval() if data is None else data
    text = indel_lessons.load_study_text() if text is None else text
    if not data or not text:
        return ""
    header = [t("it_draft", lang), t("it_indel", lang), t("it_joint", lang)]
    names = {kind: t(f"it_kind_{kind}", lang) for kind in indel_lessons.KINDS}
    names |= {op: t(f"it_op_{op}", lang) for op in ("rewrite", "remask", "delete", "split", "cut")}
    footer = t("it_footer", lang, model=data["model"], n=len(data["prompts"]) * data["seeds"], g=data["gen_length"])
    return "\n\n".join([f"### {text['title'][lang]}", text["text"][lang], indel_lessons.table(data, header, names),
                         f"*{footer}*"])


def renoise_study_md(lang: str, data: dict[str, Any] | None = None, text: dict[str, Any] | None = None) -> str:
    """The renoising decoder's knobs counted on world-renoise (`studies.renoise_lessons`): where acceptance entropy
    comes from, the bound, the stop; its prose in `lang` and its tables (words in `lang`); "" when not measured."""
    data = renoise_lessons.load_renoise() if data is None else data
    text = renoise_lessons.load_study_text() if text is None else text
    if not data or not text:
        return ""
    words = {key: t(f"rs_{key}", lang) for key in renoise_lessons.ENGLISH}
    footer = t("rs_footer", lang, model=data["model"], n=len(data["prompts"]) * data["seeds"], g=data["gen_length"])
    return "\n\n".join([f"### {text['title'][lang]}", text["text"][lang], renoise_lessons.table(data, words),
                         f"*{footer}*"])
