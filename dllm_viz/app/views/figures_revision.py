"""The figures' parts that show what a revision rule did (issue 28): pure functions of a `Trace`.

A revision rule (`core/revision.py`) may take a decided token back to [MASK] (ReMDM, RCR, WINO) or
rewrite it (LLaDA 2.1's token editing); a version-2 trace records each, with the ids and the
probability that decided it, and `core.analysis.events` reads them per position. Here they become
the figures' parts: marks on the confidence heatmap at the step they happened, the history of a
position (the order map's hover), and the revisions-per-step series of the per-step figure.
`figures` calls these only for a trace whose rule is not "none", so a plain decode's figures are
what they always were.
"""
from __future__ import annotations

from typing import Any

from dllm_viz.app.strings import t
from dllm_viz.app.views.markup import html_literal
from dllm_viz.app.views.palette import PALETTE
from dllm_viz.core.analysis import Event, events, piece
from dllm_viz.core.trace import Trace

LABEL_CHARS = 24  # as figures.LABEL_CHARS: a token's text clipped in hover labels
HISTORY_SHOWN = 8  # events of one position listed in a hover label; the earlier ones are counted


def _piece(trace: Trace, token_id: int | None) -> str:
    """A token's text as figures._piece writes it (clipped, escaped: plotly reads tags in labels), quoted."""
    text = "[MASK]" if token_id is None else piece(trace, token_id)
    return repr(html_literal(text if len(text) <= LABEL_CHARS else text[: LABEL_CHARS - 1] + "…"))


def score_name(trace: Trace, lang: str) -> str:
    """What a re-mask's recorded score is under the trace's rule (ReMDM: sigma; RCR: the confidence the
    token was decided with; WINO: its probability in the verify pass)."""
    rule = trace.config.revise.removesuffix("_shipped")  # the original's own loop records the same score
    return t(f"rv_score_{rule}", lang) if rule in ("remdm", "rcr", "wino") else t("rv_score", lang)


def event_label(trace: Trace, e: Event, lang: str) -> str:
    """One decision in words, e.g. "step 5: rewritten 'a' → 'b' (p 0.81, was 0.12)" (steps 1-based)."""
    step = f"{t('axis_step', lang)} {e.step + 1}"
    if e.kind == "remask":
        return f"{step}: {t('rv_remasked', lang)} {_piece(trace, e.before)} ({score_name(trace, lang)} {e.prob:.3g})"
    if e.kind == "edit":
        return (f"{step}: {t('rv_edited', lang)} {_piece(trace, e.before)} → {_piece(trace, e.token)} "
                f"(p {e.prob:.3g}, {t('rv_was', lang)} {e.before_prob:.3g})")
    return f"{step}: {t('rv_confirmed', lang)} {_piece(trace, e.token)} (p {e.prob:.3g})"


def history_label(trace: Trace, position_events: list[Event], lang: str, limit: int = HISTORY_SHOWN) -> str:
    """A position's decisions, one per line (hover text): the last `limit`, after a count of the others."""
    shown = position_events[-limit:]
    lines = [event_label(trace, e, lang) for e in shown]
    if len(position_events) > len(shown):
        lines.insert(0, t("rv_earlier", lang, n=len(position_events) - len(shown)))
    return "<br>".join(lines)


def heatmap_marks(trace: Trace, lang: str, where: str) -> list[dict[str, Any]]:
    """Scatter traces over the confidence heatmap: × where a step took a token back, ◇ where it
    rewrote one (cell: that position, that step); hover says what and why. Empty when nothing was."""
    remask: dict[str, list] = {"x": [], "y": [], "text": []}
    edit: dict[str, list] = {"x": [], "y": [], "text": []}
    for pos, evs in enumerate(events(trace)):
        for e in evs:
            if e.kind != "confirm":
                out = remask if e.kind == "remask" else edit
                out["x"].append(pos)
                out["y"].append(e.step + 1)
                out["text"].append(event_label(trace, e, lang))
    size = max(5, min(12, 520 // max(trace.config.gen_length, 1)))
    data = []
    for marks, name, symbol, colour in ((remask, "rv_remasked", "x-thin-open", "remask"),
                                        (edit, "rv_edited", "diamond-open", "edit")):
        if marks["x"]:
            data.append({"type": "scatter", "mode": "markers", "x": marks["x"], "y": marks["y"],
                         "customdata": marks["text"], "name": t(name, lang), "showlegend": False,
                         "marker": {"symbol": symbol, "size": size + 2, "color": PALETTE[colour], "line": {"width": 2}},
                         "hovertemplate": where + "%{customdata}<extra></extra>"})
    return data


def revisions_series(trace: Trace, lang: str) -> dict[str, Any]:
    """The per-step figure's revisions curve, on its k axis: tokens each step took back or rewrote;
    hover splits them and says where a verify pass made the step two forwards."""
    step = t("axis_step", lang)
    hover = []
    for rec in trace.steps:
        text = t("rv_step", lang, r=len(rec.remasked or ()), e=len(rec.edited or ()))
        if (rec.forwards or 1) > 1:
            text += " · " + t("rv_forwards", lang, n=rec.forwards)
        elif rec.forwards == 0:
            text += " · " + t("rv_reused", lang)
        hover.append(f"{step} {rec.step + 1} · {text}")
    return {"type": "scatter", "mode": "lines+markers", "x": [rec.step + 1 for rec in trace.steps],
            "y": [rec.revisions for rec in trace.steps], "xaxis": "x", "yaxis": "y", "customdata": hover,
            "name": t("rv_per_step", lang), "line": {"color": PALETTE["remask"], "width": 2, "shape": "hvh"},
            "marker": {"size": 5}, "hovertemplate": "%{customdata}<extra></extra>"}
