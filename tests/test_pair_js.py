"""web/pair.js: Compare in step. One player moves both sides of a compare to the same step, each clamped to
its own length, and marks the positions whose token differs between A and B there: exactly where the two
traces' `Trace.canvas_at(f - 1)` differ (a mask against a token counts). In Debian's chromium, on the page's
renderer alone (tests/renderer.py); the same player in the real app, and its link: tests/test_browser.py."""
from __future__ import annotations

import pytest

from dllm_viz import DecodeConfig, decode
from dllm_viz.core.analysis import divergence, piece
from dllm_viz.core.trace import Trace
from tests import renderer
from tests.renoise_table import TableRenoiser
from tests.sglang.indel_script import Events, ReplayedBlocks
from tests.test_page_js import PROMPT, chromium, model  # noqa: F401 (fixtures)

# Two side canvases and the pair's controls, as the Compare tab lays them out, and the player over them.
PAIR = """() => {
  const box = (id) => { const el = document.createElement('div'); el.id = id;
    el.innerHTML = '<div class="dv-canvas"></div>'; document.body.append(el); return el.firstChild; };
  const host = document.createElement('div'); host.id = 'dv-cmp-player'; document.body.append(host);
  const roots = [box('dv-cmp-canvas-a'), box('dv-cmp-canvas-b')];
  window.__pair = DV.dvPair(host, window.OPTIONS);
  DV.dvPairShow(window.__pair, {a: window.a, b: window.b, roots}, {frame: 0}, 'en');
}"""
L = 8  # an insert/delete block (tests/test_moves_view.py's)
SIDE = """(side) => [...document.querySelectorAll(`#dv-cmp-canvas-${side} .dv-text [data-pos]`)].map((s) =>
  ({cls: s.className, text: s.textContent, title: s.title}))"""


@pytest.fixture(scope="module")
def traces(model):  # noqa: F811
    a = decode(model, [PROMPT], DecodeConfig.preset("balanced", 24, seed=3))[0]
    b = decode(model, [PROMPT], DecodeConfig.preset("quality", 24, seed=4, temperature=2.0))[0]
    revised = decode(model, [PROMPT], DecodeConfig.preset("remdm", 24, seed=3))[0]
    assert len(a.steps) != len(b.steps) and revised.revised  # clamping and take-backs are both exercised
    return a, b, revised


def open_pair(chromium, a: Trace, b: Trace):  # noqa: F811
    page = renderer.open_page(chromium)
    renderer.load(page, a, "a")
    renderer.load(page, b, "b")
    page.evaluate(PAIR)
    return page


def scrub(page, f: int) -> None:
    """The scrubber moved by hand to frame f (an input event, as a drag makes)."""
    page.evaluate("""(f) => { const s = document.querySelector('#dv-cmp-player .dv-scrub'); s.value = String(f);
        s.dispatchEvent(new Event('input', {bubbles: true})); }""", f)


def shown(trace: Trace, f: int) -> list[int | None]:
    return trace.canvas_at(min(f, len(trace.steps)) - 1)


def differing(a: Trace, b: Trace, f: int) -> list[int]:
    ca, cb = shown(a, f), shown(b, f)
    return [p for p in range(len(ca)) if ca[p] != cb[p]]


def check_frame(page, a: Trace, b: Trace, f: int) -> None:
    want = differing(a, b, f)
    for side, trace in (("a", a), ("b", b)):
        spans, canvas = page.evaluate(SIDE, side), shown(trace, f)
        assert page.evaluate(f"() => document.querySelector('#dv-cmp-canvas-{side} .dv-canvas').dataset.frame") \
            == str(min(f, len(trace.steps)))  # each side at f, clamped to its own steps
        if trace.canvas != "renoise":  # a renoising canvas's noise is tokens too, drawn as noise
            assert [p for p, s in enumerate(spans) if "dv-tok" in s["cls"].split()] == \
                [p for p, tok in enumerate(canvas) if tok is not None]
        assert all(spans[p]["text"] == piece(trace, tok) for p, tok in enumerate(canvas) if tok is not None)
        marked = [p for p, s in enumerate(spans) if "dv-diff-step" in s["cls"].split()]
        assert marked == want, (side, f)
        assert all(f"differs at step {f}" in spans[p]["title"] for p in marked), [spans[p]["title"] for p in marked]
    assert page.evaluate("() => JSON.parse(document.querySelector('#dv-cmp-player').dataset.marked)") == want
    assert page.evaluate("(f) => DV.dvPairDiff(window.a, window.b, f)", f) == want


def other_canvases(which: str) -> tuple[Trace, Trace]:
    """Two decodes under different settings of a canvas that moves (insert/delete) or renoises."""
    if which == "moved":
        runs = [decode(ReplayedBlocks(L, Events(word=0.1, delete=0.12, split=0.12, mask=0.06), seed=seed), [[1] * L],
                       DecodeConfig.preset("llada22_indel", 2 * L, block_length=L))[0] for seed in (4, 5)]
    else:
        runs = [decode(TableRenoiser(), [[3, 4, 5]], DecodeConfig(gen_length=18, seed=seed, max_denoising_steps=steps,
                                                                   entropy_bound=0.8, confidence_threshold=2.0))[0]
                for seed, steps in ((1, 6), (2, 4))]
    assert all(r.moved for r in runs) if which == "moved" else all(r.canvas == "renoise" for r in runs)
    return runs[0], runs[1]


@pytest.mark.parametrize("which", ["masked", "revised", "moved", "renoise"])
def test_scrubbing_moves_both_sides_in_step_and_marks_where_they_differ(chromium, traces, which):  # noqa: F811
    a, b, revised = traces
    if which in ("moved", "renoise"):
        a, b = other_canvases(which)
    elif which == "revised":
        b = revised
    page = open_pair(chromium, a, b)
    n = max(len(a.steps), len(b.steps))
    assert page.evaluate("() => document.querySelector('#dv-cmp-player .dv-scrub').max") == str(n)
    seen = set()
    for f in sorted({0, 1, 2, len(a.steps) - 1, len(a.steps), min(n, len(a.steps) + 1), n // 2, n - 1, n}):
        scrub(page, f)
        check_frame(page, a, b, f)
        seen.add(len(differing(a, b, f)))
    assert len(seen) > 1  # the marks change with the step: the check can fail
    # At the end the marks are the server's underlines: the positions whose final token differs.
    assert page.evaluate("() => JSON.parse(document.querySelector('#dv-cmp-player').dataset.marked)") == \
        divergence(a, b).token_differs
    assert page.errors == []
    page.close()


def test_the_buttons_step_both_sides_and_stop_at_the_ends(chromium, traces):  # noqa: F811
    a, b, _ = traces
    page = open_pair(chromium, a, b)
    n = max(len(a.steps), len(b.steps))
    click = lambda cls: page.click(f"#dv-cmp-player .{cls}")  # noqa: E731
    frame = lambda: int(page.evaluate("() => document.querySelector('#dv-cmp-player').dataset.frame"))  # noqa: E731
    click("dv-prev")
    assert frame() == 0
    click("dv-next")
    click("dv-next")
    assert frame() == 2
    check_frame(page, a, b, 2)
    click("dv-last")
    assert frame() == n and page.evaluate("() => document.querySelector('#dv-cmp-player .dv-scrub').value") == str(n)
    check_frame(page, a, b, n)
    click("dv-next")
    assert frame() == n
    click("dv-first")
    assert frame() == 0
    check_frame(page, a, b, 0)
    assert "both at step 0 of" in page.inner_text("#dv-cmp-player .dv-status")
    assert page.locator("#dv-cmp-player .dv-tour-start").count() == 0  # the walkthrough's button is the Playground's
    page.select_option("#dv-cmp-player .dv-speed", "4")
    click("dv-play")  # play runs both to the end
    page.wait_for_function("(n) => document.querySelector('#dv-cmp-player').dataset.frame === String(n)", arg=n,
                           timeout=30_000)
    check_frame(page, a, b, n)
    assert page.errors == []
    page.close()


@pytest.mark.parametrize("which", ["masked", "revised", "moved", "renoise", "same"])
def test_the_pages_divergence_is_the_servers(chromium, traces, which):  # noqa: F811
    """The pair's figures are drawn from the page's own `dvDivergence`, not the server's summary: both agree."""
    a, b, revised = traces
    if which in ("moved", "renoise"):
        a, b = other_canvases(which)
    elif which == "revised":
        b = revised
    elif which == "same":
        b = a
    page = renderer.open_page(chromium)
    renderer.load(page, a, "a")
    renderer.load(page, b, "b")
    got, want = page.evaluate("() => DV.dvDivergence(window.a, window.b)"), divergence(a, b)
    assert (got["first"], got["order"], got["tokens"]) == (want.first_step, want.order_differs, want.token_differs)
    assert (want.first_step is None) == (which == "same") and bool(want.order_differs) == (which != "same")
    assert page.errors == []
    page.close()
