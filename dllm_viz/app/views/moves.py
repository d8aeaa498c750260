"""What the page shows when positions move (docs/indel.md): pure functions of an insert/delete trace.

Once a decoder deletes and splits, a position is no longer a place on the canvas: the token at position 12
may be the one that stood at 11 a step ago. A token here is a *lineage*: a position of the canvas where it
entered (every position at the start, or a mask a step opened: the gap of a split, the pad after a delete),
followed through each step's map (`StepRecord.source`) until the end, a delete or a cut. Everything below
is data for the views (the canvas, the inspector, the order map, the heatmap, links), computed from the
trace alone; a trace whose positions never moved gives one lineage per position and no moves.

Frames: frame 0 is the canvas at the start, frame f the canvas after step f - 1 (`Trace.canvas_at(f - 1)`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from dllm_viz.app.strings import t
from dllm_viz.core.trace import StepRecord, Trace


@dataclass(frozen=True)
class Lineages:
    """Every token of a trace, followed through the frames."""

    ids: list[list[int]]  # (frames, G): the lineage at each position of each frame
    born: list[tuple[int, int]]  # lineage -> (the frame it entered at, its position there)
    ended: list[tuple[int, str] | None]  # lineage -> (the frame it was gone in, "delete" | "cut"); None: it stays

    def position(self, lineage: int, frame: int) -> int | None:
        """Where `lineage` is in `frame` (None: not yet there, or gone)."""
        row = self.ids[frame]
        return row.index(lineage) if lineage in row else None

    def track(self, lineage: int) -> list[int | None]:
        """Its position in every frame."""
        return [self.position(lineage, f) for f in range(len(self.ids))]


def lineages(trace: Trace) -> Lineages:
    """The lineages of `trace`: the positions of the start are lineages 0..G-1, each mask a step opens the next."""
    G = len(trace.token_ids)
    ids = [list(range(G))]
    born: list[tuple[int, int]] = [(0, p) for p in range(G)]
    ended: list[tuple[int, str] | None] = [None] * G
    for f, rec in enumerate(trace.steps, start=1):
        before = ids[-1]
        if rec.source is None:
            ids.append(list(before))
            continue
        row = []
        for j, src in enumerate(rec.source):
            if src >= 0:
                row.append(before[src])
            else:
                row.append(len(born))
                born.append((f, j))
                ended.append(None)
        for pos, kind, _ in (e for e in rec.indel["edits"] if e[1] in ("delete", "cut")):  # type: ignore[index]
            ended[before[pos]] = (f, kind)
        ids.append(row)
    return Lineages(ids=ids, born=born, ended=ended)


@dataclass(frozen=True)
class Move:
    """What one step did to positions: the canvas animates frame `step` into frame `step + 1` from it."""

    step: int
    deleted: list[int]  # positions of the frame before that close up
    cut: list[int]  # positions of the frame before pushed past the block's end by a split before them
    split: list[int]  # positions of the frame before whose token moves right, behind a new mask
    opened: list[tuple[int, str]]  # positions of the frame after that are new masks: "split" (a gap), "pad"
    source: list[int]  # the frame after's position -> the frame before's (-1: a new mask)


def step_move(rec: StepRecord) -> Move | None:
    """What one step moved (None where nothing did: the step kept every position)."""
    if rec.indel is None or rec.source is None or rec.source == list(range(len(rec.source))):
        return None
    edits = rec.indel["edits"]
    split = sorted(p for p, kind, _ in edits if kind == "split")
    gaps = {j - 1 for j, src in enumerate(rec.source) if src in split and j > 0}
    opened = [(j, "split" if j in gaps else "pad") for j, src in enumerate(rec.source) if src < 0]
    return Move(step=rec.step, deleted=sorted(p for p, k, _ in edits if k == "delete"),
                cut=sorted(p for p, k, _ in edits if k == "cut"), split=split, opened=opened, source=list(rec.source))


def moves(trace: Trace) -> list[Move | None]:
    """Per step, what moved (None where nothing did: the step kept every position)."""
    return [step_move(rec) for rec in trace.steps]


def cells(trace: Trace, frame: int, lin: Lineages | None = None) -> list[dict]:
    """The canvas of `frame` for the page: per position its token (None: a mask), its lineage, where it was
    in the frame before (None at frame 0 or for a new mask), and what happened to it there: "kept", "moved"
    (same token, another position), "opened" (a new mask)."""
    lin = lin or lineages(trace)
    canvas = trace.canvas_at(frame - 1)
    out = []
    for p, (tok, lineage) in enumerate(zip(canvas, lin.ids[frame])):
        before = lin.position(lineage, frame - 1) if frame > 0 else p
        event = "opened" if before is None else ("moved" if before != p else "kept")
        out.append({"tok": tok, "lineage": lineage, "from": before if frame > 0 else None, "event": event})
    return out


def heatmap_by_token(trace: Trace, lin: Lineages | None = None) -> list[list[float]]:
    """The heatmap re-indexed by the final tokens: row s, column p, the confidence at step s of the position the
    token that ends at p held entering step s (NaN where it did not exist yet or was not masked). The trace's
    own `confidence` rows are indexed by the positions entering each step."""
    lin = lin or lineages(trace)
    final = lin.ids[-1]
    rows = []
    for s, rec in enumerate(trace.steps):
        here = lin.ids[s]
        where = {lineage: p for p, lineage in enumerate(here)}
        rows.append([rec.confidence[where[x]] if x in where else math.nan for x in final])
    return rows


def link_token(trace: Trace, frame: int, position: int, lin: Lineages | None = None) -> dict:
    """What a link that names `position` at `frame` names where positions moved: the token's lineage, where it
    entered and where it ends (None: deleted or cut before the end)."""
    lin = lin or lineages(trace)
    lineage = lin.ids[frame][position]
    return {"lineage": lineage, "born": list(lin.born[lineage]), "final": lin.position(lineage, len(lin.ids) - 1)}


def describe(trace: Trace, position: int, lang: str, lin: Lineages | None = None) -> list[str]:
    """The inspector's lines on the token at final `position`, in `lang`: where it entered, then each frame it
    moved in."""
    lin = lin or lineages(trace)
    lineage = lin.ids[-1][position]
    frame, at = lin.born[lineage]
    if frame == 0:
        lines = [t("mv_born_start", lang, p=at)]
    else:
        move = moves(trace)[frame - 1]
        kind = dict(move.opened).get(at, "pad") if move is not None else "pad"
        lines = [t(f"mv_born_{kind}", lang, s=frame - 1, p=at)]
    track = lin.track(lineage)
    for f in range(max(1, frame + 1), len(track)):
        if track[f] != track[f - 1]:
            lines.append(t("mv_moved", lang, s=f - 1, a=track[f - 1], b=track[f]))
    return lines


def index_notes(trace: Trace, lang: str) -> dict[str, str]:
    """What the order map and the heatmap index, when positions moved (empty otherwise)."""
    if not trace.moved:
        return {}
    return {"heatmap": t("mv_heatmap_index", lang), "order": t("mv_order_index", lang),
            "ended": t("mv_ended", lang, d=trace.metrics.get("deleted", 0), s=trace.metrics.get("split", 0))}


def player_moves(trace: Trace, lang: str) -> dict:
    """What the page's player gets beside a moved trace's frames: each frame's lineage per position, where each
    lineage entered, each step's moves (or None) and the index notes, in `lang`."""
    lin = lineages(trace)
    steps = [None if m is None else {"deleted": m.deleted, "cut": m.cut, "split": m.split,
                                     "opened": [list(o) for o in m.opened], "source": m.source} for m in moves(trace)]
    return {"lineage": lin.ids, "born": [list(b) for b in lin.born], "steps": steps, "notes": index_notes(trace, lang)}
