"""A trace diff in words, in the page's language: `summary(d, a, b, lang)` for `core.diff.diff`
(docs/fork_diff_export.md).

Pure; the CLI (`python -m dllm_viz diff`) prints it and the page will show it. Steps are said 1-based, as
the page says them (record i is "step i + 1"); tokens as their text, quoted.
"""
from __future__ import annotations

from typing import Any

from dllm_viz.app.strings import t
from dllm_viz.core.analysis import piece
from dllm_viz.core.diff import MASK, Difference, TraceDiff
from dllm_viz.core.trace import Trace

STOPS = {"end": "diff_end", "early_stop": "diff_early_stop"}  # how a trace stopped at an "another_stop"


def _value(d: Difference, side: Any, trace: Trace, lang: str) -> str:
    """What one trace did at a difference, in words."""
    if side is None:
        if d.kind == "another_acceptance":  # a renoising step: what it did not accept, it renoised
            return t("rn_renoised", lang)
        return t("diff_went_on", lang) if d.kind == "another_stop" else t("diff_nothing", lang)
    if d.kind == "another_stop":
        return t(STOPS[side], lang)
    if d.knob is not None:
        return f"{d.knob}={side!r}"
    if side == MASK:
        return t("diff_mask", lang)
    return repr(piece(trace, side))


def kind_label(kind: str, lang: str = "en") -> str:
    return t(f"diff_kind_{kind}", lang)


def summary(d: TraceDiff, a: Trace, b: Trace, lang: str = "en") -> str:
    """The first difference, labelled, with what A and B did there; every difference counted by kind; the
    settings that differ. One sentence a line."""
    if d.first is None:
        lines = [t("diff_same", lang, n=d.steps[0])]
    else:
        f = d.first
        where = "" if f.position is None else t("diff_at", lang, p=f.position)
        lines = [t("diff_first", lang, s=f.step + 1, where=where, what=kind_label(f.kind, lang),
                   a=_value(f, f.a, a, lang), b=_value(f, f.b, b, lang))]
        counts = ", ".join(f"{kind_label(k, lang)} ×{n}" for k, n in d.counts.items() if n)
        lines.append(t("diff_all", lang, counts=counts, k=d.steps_differing, n=max(d.steps)))
    if d.steps[0] != d.steps[1]:
        lines.append(t("diff_steps", lang, a=d.steps[0], b=d.steps[1]))
    if d.config:
        changes = ", ".join(f"{k} {x!r} → {y!r}" for k, (x, y) in d.config.items())
        lines.append(t("diff_settings", lang, changes=changes))
    return "\n".join(lines)
