"""The page's renderer drawing a decode whose positions move (insert/delete, issue 37), in Debian's chromium.

The trace reaches the page as the server sends it (`views.wire`: each step's map to the positions before,
its deletes, cuts and splits); the canvas at every frame, scrubbed both ways, is the trace's own canvas
(`Trace.canvas_at`), a mask a step opened and a token it moved are marked as `views.moves` says, and a
trace read chunk by chunk (a decode in progress) gives the same canvases.
"""
from __future__ import annotations

import pytest

from dllm_viz.app.views import moves
from dllm_viz.core.analysis import piece
from tests import renderer
from tests.test_moves_view import trace  # noqa: F401  (the fixture: an insert/delete trace of the replayed model)
from tests.test_page_js import SPANS, TEXTS, at, chromium, show  # noqa: F401  (fixtures)


def test_a_moved_canvas_is_the_traces_canvas_at_every_frame_scrubbed_both_ways(show, trace):  # noqa: F811
    n, G = len(trace.steps), len(trace.token_ids)
    page = show(trace, frame=0, selected=0)
    marked = 0
    for f in [*range(n + 1), *range(n, -1, -1), *range(0, n + 1, 3)]:
        at(page, f)
        canvas = trace.canvas_at(f - 1)
        held = [p for p in range(G) if canvas[p] is not None]
        assert page.evaluate(SPANS, "dv-tok") == held, f
        assert page.evaluate(SPANS, "dv-mask") == [p for p in range(G) if canvas[p] is None], f
        texts = page.evaluate(TEXTS)
        assert [texts[p] for p in held] == [piece(trace, canvas[p]) for p in held], f
        move = moves.moves(trace)[f - 1] if f > 0 else None
        opened = [j for j, _ in move.opened] if move else []
        moved = [j for j, src in enumerate(move.source) if 0 <= src != j] if move else []
        assert page.evaluate(SPANS, "dv-opened") == opened, f
        assert page.evaluate(SPANS, "dv-moved") == moved, f
        marked += len(opened) + len(moved)
        for j, kind in move.opened if move else []:
            assert page.get_attribute(f'#dv-canvas [data-pos="{j}"]', "title").count(
                {"split": "a split opened", "pad": "padded at the block's end"}[kind]) == 1, (f, j)
    assert marked, "the seed must move positions for this test to mean something"


@pytest.mark.parametrize("parts", [1, 3])
def test_a_moved_trace_read_chunk_by_chunk_replays_the_same_canvases(chromium, trace, parts):  # noqa: F811
    n = len(trace.steps)
    chunks = renderer.chunked(trace, parts)
    assert any("mv" in c.get("steps", {}) for c in chunks)
    page = renderer.open_page(chromium)
    try:
        renderer.load(page, trace, chunks=chunks)
        renderer.assert_canvases(page, trace)
        lin = moves.lineages(trace)
        assert page.evaluate("() => window.d.lin.length") == n + 1
        same = page.evaluate("() => window.d.lin.map((row) => row.join(','))")
        # lineages are numbered alike: the start's positions, then each new mask in order
        assert same == [",".join(map(str, row)) for row in lin.ids]
        assert page.errors == []
    finally:
        page.close()


def test_the_heatmap_marks_a_take_back_or_rewrite_where_the_token_stood_at_its_step(chromium, trace):  # noqa: F811
    steps = list(enumerate(trace.steps, start=1))
    want = {"x-thin-open": sorted((p, s) for s, rec in steps for p in rec.remasked or ()),
            "diamond-open": sorted((p, s) for s, rec in steps for p in rec.edited or ())}
    assert any(want.values()), "the seed must take back or rewrite a token for this test to mean something"
    page = renderer.open_page(chromium)
    try:
        renderer.load(page, trace)
        fig = renderer.figure(page, "heatmap")
        got = {tr["marker"]["symbol"]: sorted(zip(tr["x"], tr["y"])) for tr in fig["data"]
               if tr.get("marker", {}).get("symbol") in want}
        assert got == {k: v for k, v in want.items() if v}
        assert page.errors == []
    finally:
        page.close()
