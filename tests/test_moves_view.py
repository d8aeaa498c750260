"""app/views/moves.py: the view data of a decode whose positions move (issue 37), pure functions of its trace.

On an insert/delete trace of the replayed model (deletes, splits and cuts in most steps): each final token is
followed back to where it entered the canvas, through every frame, consistently with the canvas the trace
replays; each step's moves name what closed up and what opened; the heatmap re-indexed by the final tokens and
a link's position name a token; the inspector's lines and the index notes exist in both languages.
"""
from __future__ import annotations

import math

import pytest

from dllm_viz import DecodeConfig, decode
from dllm_viz.app.strings import LANGS
from dllm_viz.app.views import moves
from tests.sglang.indel_script import Events, ReplayedBlocks

L = 8


@pytest.fixture(scope="module")
def trace():
    model = ReplayedBlocks(L, Events(word=0.1, delete=0.12, split=0.12, mask=0.06), seed=4)
    (tr,) = decode(model, [[1] * L], DecodeConfig.preset("llada22_indel", 2 * L, block_length=L), record_candidates=2)
    assert tr.moved and tr.metrics["deleted"] and tr.metrics["split"]
    return tr


def test_every_final_token_is_followed_back_to_where_it_entered(trace):
    lin = moves.lineages(trace)
    frames = len(trace.steps) + 1
    assert len(lin.ids) == frames and lin.ids[0] == list(range(2 * L))
    for p in range(2 * L):
        lineage = lin.ids[-1][p]
        born_frame, born_at = lin.born[lineage]
        track = lin.track(lineage)
        assert track[born_frame] == born_at and track[-1] == p and lin.ended[lineage] is None
        assert all(x is None for x in track[:born_frame]) and None not in track[born_frame:]
        for f in range(born_frame + 1, frames):  # each step's map sends it from where it was to where it is
            src = trace.steps[f - 1].source
            assert src is None and track[f] == track[f - 1] or src[track[f]] == track[f - 1]
    gone = [x for x, e in enumerate(lin.ended) if e is not None]
    assert gone and all(lin.track(x)[lin.ended[x][0]] is None for x in gone)  # deleted or cut: no longer there


def test_the_cells_of_each_frame_are_the_replayed_canvas_and_say_what_moved(trace):
    lin = moves.lineages(trace)
    seen = set()
    for f in range(len(trace.steps) + 1):
        cells = moves.cells(trace, f, lin)
        assert [c["tok"] for c in cells] == trace.canvas_at(f - 1)
        seen |= {c["event"] for c in cells}
        for p, c in enumerate(cells):
            if c["event"] == "moved":
                assert c["from"] != p and lin.ids[f - 1][c["from"]] == c["lineage"]
            if c["event"] == "opened":
                assert c["tok"] is None
    assert seen == {"kept", "moved", "opened"}


def test_each_step_s_moves_name_what_closed_up_and_what_opened(trace):
    kinds = set()
    for move, rec in zip(moves.moves(trace), trace.steps):
        if move is None:
            assert rec.source == list(range(2 * L))
            continue
        assert len(move.opened) == len(move.deleted) + len(move.cut)  # the block keeps its size
        assert set(move.source) - {-1} == set(range(2 * L)) - set(move.deleted) - set(move.cut)
        for j, kind in move.opened:
            kinds.add(kind)
            if kind == "split":  # the gap stands right before the token the split moved
                assert move.source[j + 1] in move.split
    assert kinds == {"split", "pad"}


def test_the_heatmap_by_token_and_a_link_name_the_token_not_the_slot(trace):
    lin = moves.lineages(trace)
    rows = moves.heatmap_by_token(trace, lin)
    assert len(rows) == len(trace.steps) and all(len(r) == 2 * L for r in rows)
    for s, row in enumerate(rows):
        for p, value in enumerate(row):
            at = lin.position(lin.ids[-1][p], s)
            expected = math.nan if at is None else trace.steps[s].confidence[at]
            assert (math.isnan(value) and math.isnan(expected)) or value == expected
    f = len(trace.steps) // 2
    for pos in range(2 * L):
        link = moves.link_token(trace, f, pos, lin)
        final = link["final"]
        assert final is None or lin.ids[-1][final] == link["lineage"]


def test_the_inspector_and_the_notes_speak_both_languages(trace):
    moved = next(p for p in range(2 * L)
                 if len(set(moves.lineages(trace).track(moves.lineages(trace).ids[-1][p])) - {None}) > 1)
    for lang in LANGS:
        lines = moves.describe(trace, moved, lang)
        assert len(lines) >= 2 and all(lines)
        assert set(moves.index_notes(trace, lang)) == {"heatmap", "order", "ended"}
    plain = decode(ReplayedBlocks(L, Events(), 0), [[1] * L], DecodeConfig.preset("llada21", 2 * L))[0]
    assert moves.index_notes(plain, "en") == {} and all(m is None for m in moves.moves(plain))


def test_the_wire_ships_the_moves_of_a_moved_trace_only(trace):
    from dllm_viz.app.views import wire

    (chunk,) = wire.chunks(trace)
    mv = chunk["steps"]["mv"]
    assert len(mv) == len(trace.steps)
    for m, want in zip(mv, moves.moves(trace)):
        assert m == (None if want is None else [want.source, want.deleted, want.cut, want.split])
    assert chunk["done"]["moved"] == {"deleted": trace.metrics["deleted"], "split": trace.metrics["split"]}
    plain = decode(ReplayedBlocks(L, Events(), 0), [[1] * L], DecodeConfig.preset("llada21", 2 * L))[0]
    (chunk,) = wire.chunks(plain)
    assert "mv" not in chunk["steps"] and chunk["done"]["moved"] is None
