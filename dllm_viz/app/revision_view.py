"""What the page's canvas and inspector need to replay a decode whose confirmations were taken back (issue 28).

A revision rule may re-mask a decided token or rewrite it (`core/revision.py`); the trace records
each (format 2), and `core.analysis.events` reads them per position. `canvas_events` turns them into
the compact lists page.js replays: the state of position p at frame f is its last event before
record f, so scrubbing backwards and forwards across a revision shows exactly `Trace.canvas_at`.
Pure functions of a `Trace`, like `world_view` and `task_view`; a trace without revisions gets
nothing (its canvas replays from the order alone, as it always did).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from dllm_viz.app.palette import tint
from dllm_viz.core.analysis import events, piece
from dllm_viz.core.trace import Trace

KINDS = {"confirm": "c", "edit": "e", "remask": "r"}  # an event's kind, one letter in the page's data
# The strings page.js reads for revisions (render passes them with the canvas's other strings).
STRINGS = ("rv_tip_edited", "rv_tip_remasked", "rv_history", "rv_hist_confirm", "rv_hist_edit", "rv_hist_remask",
           "rv_hist_later", "legend_edited", "legend_remasked")


def canvas_events(trace: Trace, index: Callable[[str], int]) -> list[list[list[Any]]] | None:
    """Per position, its decisions in order, each ``[step, kind, token, tint, p, old, score]``: the 0-based
    record, "c" / "e" / "r", the index of its token's text (`index`, render's list of pieces; -1 once
    re-masked), the tint behind it (the confidence it was confirmed with; a rewrite's probability), the
    raw probability that decided it (the drawn token's, the new id's, or a re-mask's score), the index of
    the token it replaced (-1: a mask), and a rewrite's probability of the old id (else None).
    None for a trace whose confirmations are all final."""
    if not trace.revised:
        return None
    out = []
    for pos, evs in enumerate(events(trace)):
        rows = []
        for e in evs:
            conf = trace.steps[e.step].confidence[pos] if e.kind == "confirm" else e.prob
            rows.append([e.step, KINDS[e.kind], -1 if e.token is None else index(piece(trace, e.token)),
                         "" if e.kind == "remask" or math.isnan(conf) else tint(conf), round(e.prob, 4),
                         -1 if e.before is None else index(piece(trace, e.before)),
                         None if e.before_prob is None else round(e.before_prob, 4)])
        out.append(rows)
    return out
