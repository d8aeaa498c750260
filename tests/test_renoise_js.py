"""The page's renderer drawing a renoising trace (trace format 3's renoise section, issue 36), in Debian's chromium.

The trace reaches the page as the server sends it (`views.wire`'s "rn": each step's canvas read, argmax,
entropy, accepted positions); at every frame, scrubbed both ways, the canvas shows the trace's own canvas
(`Trace.canvas_at`) with each position's state as `views.renoise.frames` says (noise, accepted, final, not
begun), a renoised position marked with the token it lost, and the entropy on hover; read chunk by chunk (a
decode in progress) it gives the same canvases.
"""
from __future__ import annotations

import pytest

from dllm_viz.app.strings import t
from dllm_viz.app.views import renoise as view
from dllm_viz.core.analysis import piece
from tests import renderer
from tests.test_page_js import SPANS, TEXTS, at, chromium, show  # noqa: F401  (fixtures)
from tests.test_renoise_view import trace  # noqa: F401  (the fixture: a renoising trace of the table model)


def test_a_renoising_canvas_shows_each_frames_states_scrubbed_both_ways(show, trace):  # noqa: F811
    n, G = len(trace.steps), len(trace.token_ids)
    frames = view.frames(trace)
    page = show(trace, frame=0, selected=0)
    lost = 0
    for f in [*range(n + 1), *range(n, -1, -1), *range(0, n + 1, 4)]:
        at(page, f)
        canvas, frame = trace.canvas_at(f - 1), frames[f]
        texts = page.evaluate(TEXTS)
        assert [texts[p] for p in range(G) if canvas[p] is not None] == [
            piece(trace, tok) for tok in canvas if tok is not None], f
        for i, state in enumerate(view.STATES):
            assert page.evaluate(SPANS, f"dv-rn-{state}") == [p for p in range(G) if frame["state"][p] == i], (f, state)
        assert page.evaluate(SPANS, "dv-rn-lost") == sorted(frame["lost"]), f
        for p, tok in frame["lost"].items():
            title = page.get_attribute(f'#dv-canvas [data-pos="{p}"]', "title")
            assert f"lost {piece(trace, tok)!r}" in title, (f, p)
        status = page.inner_text("#dv-canvas .dv-status")  # what a step accepted, never "confirmed" or "masked"
        if f == 0:
            assert t("rn_start", "en") in status
        else:
            assert trace.steps[f - 1].k == len(trace.steps[f - 1].renoise.accepted)
            assert f"after step {f}: {trace.steps[f - 1].k} accepted (" in status, (f, status)
        assert "confirmed" not in status and "mask" not in status, (f, status)
        lost += len(frame["lost"])
        if 0 < f < n:  # the entropy the step before ranked each position of its canvas by
            span = trace.canvases[trace.steps[f - 1].block]
            if trace.steps[f].block == span.index:
                p = span.start
                title = page.get_attribute(f'#dv-canvas [data-pos="{p}"]', "title")
                assert f"entropy at step {f}: {trace.steps[f - 1].renoise.entropy[0]:.3f}" in title, f
    assert lost, "the seed must renoise an accepted token for this test to mean something"
    assert "accepted proposal" in page.inner_text("#dv-canvas .dv-legend")


@pytest.mark.parametrize("parts", [1, 4])
def test_a_renoising_trace_read_chunk_by_chunk_replays_the_same_canvases(chromium, trace, parts):  # noqa: F811
    chunks = renderer.chunked(trace, parts)
    assert chunks[0]["head"]["canvas"] == "renoise" and all("rn" in c["steps"] for c in chunks)
    page = renderer.open_page(chromium)
    try:
        renderer.load(page, trace, chunks=chunks)
        renderer.assert_canvases(page, trace)
        assert page.errors == []
    finally:
        page.close()


def test_the_inspector_of_a_renoising_trace_says_its_state_never_a_masked_ones(show, trace):  # noqa: F811
    """The inspector said "Still masked after step f ... ranks 0 of 0 masked positions" of a canvas never masked: it
    says each position's state at the frame on show as the canvas's tooltip does (noise, accepted since a step, final,
    not begun; the token renoising took; the entropy it was ranked by), with no candidate bars."""
    n, G = len(trace.steps), len(trace.token_ids)
    frames = view.frames(trace)
    page = show(trace, frame=0, selected=0)
    seen = set()
    for f in range(0, n + 1, max(1, n // 6)):
        for p in range(0, G, 3):
            at(page, f, p)
            text = page.inner_text("#dv-inspector")
            state = view.STATES[frames[f]["state"][p]]
            seen.add(state)
            assert text.startswith(t("rn_insp_title", "en", p=p, s=f)), (f, p, text)
            assert page.get_attribute(f'#dv-canvas [data-pos="{p}"]', "title").split("\n")[0] in text, (f, p)
            if p in frames[f]["lost"]:
                assert f"lost {piece(trace, frames[f]['lost'][p])!r}" in text, (f, p)
            assert "masked" not in text and "Confirmed" not in text and "Top candidates" not in text, (f, p, text)
            assert page.locator("#dv-inspector .dv-insp-row, #dv-inspector .dv-insp-key").count() == 0
    assert {"noise", "accepted", "final"} <= seen, seen


def test_a_renoising_trace_the_page_forks_offers_its_settings_row_and_no_candidate(show, trace):  # noqa: F811
    """Where the page forks the trace (`onFork`, `canFork`), a renoising canvas's inspector has the settings' row only:
    its own knobs (`web.switchable("renoise")`: the entropy bound first, ..., the seed), the value in force at the frame
    ("" for the checkpoint's own), and a fork asking for `{step, knobs}`; no candidate, no take-back."""
    from dllm_viz.app.views import web

    page = show(trace, frame=0, selected=0)
    page.evaluate("(s) => { window.__asked = []; window.__dv.options.onFork = (c) => window.__asked.push(c);"
                  " window.__dv.options.canFork = () => true; window.__dv.options.switchable = s; }",
                  web.options()["switchable"])
    at(page, 2, 1)
    row = page.locator("#dv-inspector .dv-insp-switch")
    assert [o.get_attribute("value") for o in row.locator("option").all()] == list(web.switchable("renoise"))
    assert page.locator("#dv-inspector .dv-insp-row, #dv-inspector .dv-insp-takeback").count() == 0
    assert row.locator("select").input_value() == "entropy_bound"  # its canvas's first knob (temperature is not one)
    assert row.locator("input").input_value() == ("" if trace.config.entropy_bound is None
                                                  else str(trace.config.entropy_bound))
    row.locator("input").fill("1.5")
    row.locator("button").click()
    assert page.evaluate("() => window.__asked") == [{"step": 2, "knobs": {"entropy_bound": 1.5}}]
