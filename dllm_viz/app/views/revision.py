"""What the page's canvas and inspector need to replay a decode whose confirmations were taken back (issue 28).

A revision rule may re-mask a decided token or rewrite it (`core/revision.py`); the trace records
each (format 2), and `core.analysis.events` reads them per position. `canvas_events` turns them into
the compact rows canvas.js replays: the state of position p at frame f is its last event before
record f (a re-mask: a mask again; an edit: the new token, marked, the old one on hover), so
scrubbing backwards and forwards across a revision shows exactly `Trace.canvas_at(f - 1)`; the
inspector lists the events before record f, token by token. Pure functions of a `Trace`, like
`world_view` and `task_view`; a trace without revisions gets nothing (its canvas replays from the
order alone, as it always did).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from dllm_viz.app.views.figures_revision import score_name
from dllm_viz.app.views.palette import tint
from dllm_viz.core.analysis import events, piece
from dllm_viz.core.config import DecodeConfig
from dllm_viz.core.trace import Trace

KINDS = {"confirm": "c", "edit": "e", "remask": "r", "force": "f"}  # an event's kind, one letter in the page's data
# The strings canvas.js and inspector.js read for revisions (render ships them with a revised trace's data).
STRINGS = ("rv_tip_edited", "rv_tip_remasked", "rv_history", "rv_hist_confirm", "rv_hist_edit", "rv_hist_remask",
           "insp_edited", "rv_status")


def _r(x: float | None, digits: int) -> float | None:
    return None if x is None or math.isnan(x) else round(x, digits)


def threshold_reason(cfg: DecodeConfig, confidence: float) -> str:
    """Why the threshold schedule confirmed a position with `confidence`: "above" (past the threshold:
    >, or >= unless `threshold_strict`) or "floor" (the min_k floor filled the step); "" under other
    schedules (`schedules.choose`)."""
    if cfg.schedule != "threshold" or math.isnan(confidence):
        return ""
    above = confidence > cfg.threshold if cfg.threshold_strict else confidence >= cfg.threshold
    return "above" if above else "floor"


def canvas_events(trace: Trace, index: Callable[[str], int], lang: str) -> dict[str, Any] | None:
    """The revision part of the page's canvas data, None for a trace whose confirmations are all final.

    `ev`: per position its decisions in order, each ``[step, kind, token, tint, conf, p, old, p_old, why]``:
    the 0-based record, "c" / "e" / "r", the index of the token it holds after (`index`, render's list of
    pieces; -1 once re-masked), the tint behind it (a confirmation's: the confidence the schedule ranked
    it by, as the order-only canvas; a rewrite's: the new id's probability), that confidence (a rewrite:
    the new id's p), the raw probability that decided it (the drawn token's, the new id's, or a re-mask's
    score), the index of the token it replaced (-1: a mask), a rewrite's probability of the old id (else
    None), and why the threshold schedule confirmed it (`threshold_reason`). `rvScore`: what a re-mask's
    score is under this rule, in `lang`.
    """
    if not trace.revised:
        return None
    out = []
    for pos, evs in enumerate(events(trace)):
        rows = []
        for e in evs:
            conf = trace.steps[e.step].confidence[pos] if e.kind == "confirm" else e.prob
            rows.append([e.step, KINDS[e.kind], -1 if e.token is None else index(piece(trace, e.token)),
                         "" if e.kind == "remask" or math.isnan(conf) else tint(conf),
                         None if e.kind == "remask" else _r(conf, 3), _r(e.prob, 4),
                         -1 if e.before is None else index(piece(trace, e.before)), _r(e.before_prob, 4),
                         threshold_reason(trace.config, conf) if e.kind == "confirm" else ""])
        out.append(rows)
    return {"ev": out, "rvScore": score_name(trace, lang)}
