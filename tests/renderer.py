"""The page's renderer (views/web.py's RENDERER_JS, with plotly.js) on a blank page in Debian's chromium.

No server and no Gradio: a trace goes in as the chunks the server would send (`views.wire`), and a
test reads back what the renderer made of it (its trace data, a figure's plotly spec, the canvas and
the inspector it drew). tests/test_page_js.py and tests/test_figures_js.py use it; the page in the
real app is tests/test_browser.py's.
"""
from __future__ import annotations

import contextlib
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from playwright import sync_api as playwright

from dllm_viz.app.views import render, wire, web
from dllm_viz.app.views.palette import PAGE_CSS
from dllm_viz.core.trace import Trace

# The renderer's functions the tests call, as `window.DV.<name>`.
EXPORTS = ("dvTraceNew", "dvTraceAdd", "dvCanvasAt", "dvCands", "dvView", "dvShow", "dvShowStatic", "dvHeatmapFig",
           "dvOrderFig", "dvStepsFig", "dvCompareFig", "dvTaskFig", "inspectAt", "paintCanvas", "dvPlot", "dvArea",
           "dvFig", "dvCellAt", "dvTint", "dvG3", "dvResize", "dvPair", "dvPairShow", "dvPairDiff", "dvDivergence",
           "dvPairFit", "dvAfterPaint")
INSTALL = """([code, names]) => { window.DV = new Function(code + "\\nreturn {" + names.join(",") + "};")(); }"""
HOSTS = ("<div id='dv-temperature'><input type='range' min='0' max='2.5' step='0.05' value='{T}'></div>"
         "<div id='dv-canvas'><div class='dv-canvas dv-player'></div></div>"
         f"<div id='dv-inspector'>{render.inspector_host_html()}</div>"
         + "".join(f"<div id='dv-{name}' style='width:700px'>{render.figure_host_html()}</div>"
                   for name in ("heatmap", "order", "steps", "task-curve")))
# A player over the hosts above, as page.js makes the Playground's: window.__dv.
VIEW = """([lang]) => {
  const q = (id) => document.querySelector(`#${id} .dv-fig-host`);
  const hosts = {canvas: document.querySelector('#dv-canvas .dv-canvas'),
                 inspector: document.querySelector('#dv-inspector .dv-insp-host'),
                 heatmap: q('dv-heatmap'), order: q('dv-order'), steps: q('dv-steps'), task: q('dv-task-curve')};
  const temperature = (d) => { const T = parseFloat(document.querySelector('#dv-temperature input').value);
                               return Number.isFinite(T) ? T : d.temperature; };
  window.__dv = DV.dvView(hosts, {strings: window.OPTIONS.strings, theme: window.OPTIONS.theme, lang, temperature});
  document.addEventListener('input', () => window.__dv.inspect());
}"""


@contextlib.contextmanager
def opened() -> Iterator[Any]:
    """A renderer page (`open_page`) in Debian's chromium, for a module's tests; no page error by its end."""
    from tests.test_browser import ARGS, CHROMIUM

    assert Path(CHROMIUM).exists() or shutil.which("chromium"), "chromium is missing: bash scripts/test-deps.sh"
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = open_page(browser)
        yield page
        assert page.errors == []
        browser.close()


@contextlib.contextmanager
def opened_at(origin: str) -> Iterator[Any]:
    """`opened`, the page at `origin`/app/: a made-up origin, where every request answers an empty page."""
    with opened() as page:
        page.route(f"{origin}/**", lambda route: route.fulfill(content_type="text/html", body="<html></html>"))
        page.goto(f"{origin}/app/")
        yield page


def open_page(browser: Any, *, temperature: float = 1.0, width: int = 1200) -> Any:
    """A blank page with the page's CSS, plotly.js, the renderer (window.DV) and its options (window.OPTIONS)."""
    page = browser.new_page(viewport={"width": width, "height": 900})
    page.errors = []
    page.on("pageerror", lambda err: page.errors.append(str(err)))
    page.set_content(f"<style>{PAGE_CSS}</style>{HOSTS.replace('{T}', str(temperature))}")
    page.add_script_tag(path=str(web.PLOTLY_JS))
    page.evaluate(INSTALL, [web.RENDERER_JS, list(EXPORTS)])
    page.evaluate("(o) => { window.OPTIONS = o; }", web.options())
    return page


def load(page: Any, trace: Trace, name: str = "d", chunks: list[dict] | None = None) -> None:
    """Read `trace` into the page as the server sends it (`chunks`: those, or all of it at once) as
    `window[name]`."""
    chunks = wire.chunks(trace) if chunks is None else chunks
    page.evaluate("""([name, chunks]) => { const d = DV.dvTraceNew(window.OPTIONS.theme);
        chunks.forEach((c) => DV.dvTraceAdd(d, c)); window[name] = d; }""", [name, json.loads(wire.dumps(chunks))])


def chunked(trace: Trace, parts: int) -> list[dict]:
    """A finished trace's chunks as a decode in progress sends them: its steps cut into `parts` chunks."""
    n = len(trace.steps)
    enc, cut = wire.encoder_for(trace), [round(i * n / parts) for i in range(parts + 1)]
    return [enc.chunk(trace.steps[a:b], done=wire.done(trace) if b == n else None) for a, b in zip(cut, cut[1:])]


def assert_canvases(page: Any, trace: Trace) -> None:
    """The page's canvas at every frame of the trace loaded as `d` is `Trace.canvas_at` (tokens by text)."""
    from dllm_viz.core.analysis import piece

    n = len(trace.steps)
    got = page.evaluate("(n) => Array.from({length: n + 1}, (_, s) => DV.dvCanvasAt(window.d, s - 1))", n)
    pieces = page.evaluate("() => window.d.pieces")
    for s in range(-1, n):
        want = [None if tok is None else piece(trace, tok) for tok in trace.canvas_at(s)]
        assert [None if i is None else pieces[i] for i in got[s + 1]] == want, s


def show(page: Any, trace: Trace, *, lang: str = "en", frame: int | None = None, selected: int | None = None) -> None:
    """`trace` in a player over the page's hosts (window.__dv), at `frame` (None: the end)."""
    load(page, trace)
    page.evaluate(VIEW, [lang])
    page.evaluate("([f, p]) => DV.dvShow(window.__dv, window.d, {frame: f, selected: p})", [frame, selected])
    page.wait_for_function("() => !window.__dv.later")  # the figures: in tasks of their own after the canvas


def figure(page: Any, kind: str, lang: str = "en", *, names: tuple[str, ...] = ("d",), **opts: Any) -> dict:
    """The plotly spec the renderer makes of the trace(s) loaded as `names`: kind heatmap, order, steps,
    compare (two traces and `cmp`) or task."""
    return page.evaluate("""([kind, names, lang, opts]) => {
        const t = window.OPTIONS.strings[lang], ds = names.map((n) => window[n]);
        const make = {heatmap: () => DV.dvHeatmapFig(ds[0], t, opts), order: () => DV.dvOrderFig(ds[0], t),
                      steps: () => DV.dvStepsFig(ds[0], t, opts),
                      task: () => DV.dvTaskFig(ds[0], t, window.OPTIONS.theme),
                      compare: () => DV.dvCompareFig(ds[0], ds[1], t, opts.cmp)}[kind];
        return JSON.parse(JSON.stringify(make()));
    }""", [kind, list(names), lang, opts])
