"""A chart of bars, lines and markers drawn on a canvas of ours (app/web/chart2d.js), in Debian's chromium.

The per-step figure and Compare's order figure are drawn without plotly, from the same spec: every bar to its
value in its colour, the temperature line through its steps, a mark at every point, the fork's line and mark, the
shaded columns where two orders differ; the legend under the plots names every trace, and a click on a key hides its
trace (the plot without it) and a second shows it again; hovering a point, a bar or the fork's mark shows its label;
the plots lie where the overlay's cursor and a click's step put them; a narrow figure's legend wraps inside it; a
renoising trace's per-step figure (a log axis, stars, a symbol a point) likewise; a figure it cannot draw (a number
format, a symbol it does not paint) is plotly's.
"""
from __future__ import annotations

import pytest

from dllm_viz import DecodeConfig, decode, load_model
from tests import renderer
from tests.ui_model import make_text_model


@pytest.fixture(scope="module")
def page():
    with renderer.opened() as page:
        yield page


@pytest.fixture(scope="module")
def trace():
    return decode(make_text_model(), ["the cat "], DecodeConfig.preset("balanced", 48, seed=5))[0]


# The figure in host `id` as drawn: who drew it, its spec's traces, the canvas's pixel (r, g, b) at given points of
# given axes (`at`: [[xref, yref, x, y], ...], values), its legend's entries and every text with its box.
DRAWN = """([id, at]) => { const gd = document.querySelector(`#${id} .dv-fig`), f = gd.__dvFlat;
  if (!f) return {flat: false, svg: !!gd.querySelector('.main-svg')};
  const canvas = gd.querySelector('canvas.dv-flat'), k = canvas.width / f.width, g = canvas.getContext('2d');
  const px = (x, y) => Array.from(g.getImageData(Math.floor(x * k), Math.floor(y * k), 1, 1).data.slice(0, 3));
  return {flat: true, svg: !!gd.querySelector('.main-svg'), width: f.width, height: gd.layout.height,
          data: gd.data.map((t) => ({type: t.type, name: t.name, x: t.x, y: t.y, visible: t.visible ?? true,
                                     colour: (t.marker && t.marker.color) || (t.line && t.line.color)})),
          pixels: at.map(([xr, yr, x, y]) => px(f.axes[xr].at(x), f.axes[yr].at(y))),
          legend: f.legend.map((e) => [e.i, gd.data[e.i].name]),
          texts: f.texts.map((t) => [t.text, t.left, t.top, t.right, t.bottom]),
          paper: gd.layout.paper_bgcolor, plot: gd.layout.plot_bgcolor}; }"""
# The label shown with the pointer at (x, y) of axes (xref, yref), values (or css px of the figure where xref is
# null), then with the pointer gone; null where none shows.
HOVER = """async ([id, xr, yr, x, y]) => { const gd = document.querySelector(`#${id} .dv-fig`), f = gd.__dvFlat;
  const r = gd.getBoundingClientRect(), X = xr ? f.axes[xr].at(x) : x, Y = yr ? f.axes[yr].at(y) : y;
  gd.dispatchEvent(new MouseEvent('mousemove', {clientX: r.left + X, clientY: r.top + Y, bubbles: true}));
  const tip = gd.querySelector('.dv-flat-tip'), shown = tip && tip.style.display !== 'none' ? tip.innerText : null;
  gd.dispatchEvent(new MouseEvent('mouseleave', {bubbles: false}));
  return [shown, tip ? tip.style.display : null]; }"""
# A click on the legend key of trace `name` in host `id` (its 'click' replaced: another event there).
KEY = """([id, name]) => { const gd = document.querySelector(`#${id} .dv-fig`), f = gd.__dvFlat;
  const e = f.legend.find((x) => gd.data[x.i].name === name), r = gd.getBoundingClientRect();
  gd.dispatchEvent(new MouseEvent('click', {clientX: r.left + (e.left + e.right) / 2,
                                            clientY: r.top + (e.top + e.bottom) / 2, bubbles: true})); }"""
# Compare's order figure of traces `a` and `b` drawn into the per-step host.
COMPARE = """() => { const t = window.OPTIONS.strings.en, cmp = DV.dvDivergence(window.a, window.b);
  const fig = DV.dvCompareFig(window.a, window.b, t, cmp); fig.__kind = 'compare';
  DV.dvPlot(document.querySelector('#dv-steps .dv-fig-host'), fig); return cmp; }"""


def rgb(colour: str) -> list[int]:
    return [int(colour[i:i + 2], 16) for i in (1, 3, 5)]


def near(got: list[int], want: list[float], tol: int = 8) -> bool:
    return max(abs(a - b) for a, b in zip(got, want)) <= tol


def inside(drawn: dict) -> list:
    """The texts of a drawn figure that lie outside it (none should)."""
    return [t for t in drawn["texts"] if t[1] < -1 or t[3] > drawn["width"] + 1 or t[2] < -1
            or t[4] > drawn["height"] + 1]


def test_the_per_step_figure_is_drawn_on_a_canvas_every_bar_and_step_in_its_place(page, trace):
    renderer.show(page, trace)
    n = len(trace.steps)
    spec = page.evaluate(DRAWN, ["dv-steps", []])
    assert spec["flat"] and not spec["svg"]  # ours: no plotly element in it
    bars, temps = spec["data"][0], spec["data"][1]
    assert bars["type"] == "bar" and bars["y"] == [len(s.selected) for s in trace.steps]
    # each bar's middle in the bar colour; above the tallest bar's top, the plot's background
    at = [["x", "y", s, k / 2] for s, k in zip(bars["x"], bars["y"])]
    at += [["x", "y2", s, t] for s, t in zip(temps["x"], temps["y"])]  # on the temperature line, at each step
    drawn = page.evaluate(DRAWN, ["dv-steps", at])
    assert all(near(px, rgb(bars["colour"])) for px in drawn["pixels"][:n])
    assert all(near(px, rgb(temps["colour"]), 24) for px in drawn["pixels"][n:])
    # the legend names every trace in its order, and every text lies inside the figure
    assert [name for _, name in drawn["legend"]] == ["k", "temperature", "schedule's confidence",
                                                     "raw p(drawn token)", "mean"]
    assert {"k (confirmed)", "temperature", "confidence", "step"} <= {t[0] for t in drawn["texts"]}
    assert inside(drawn) == []
    # the plots where the overlay puts its cursor and a click its step: step s in the s-th column of each area
    cols = page.evaluate("""(n) => { const gd = document.querySelector('#dv-steps .dv-fig'), f = gd.__dvFlat;
      const r = gd.getBoundingClientRect();
      return [[0.56, 1.0], [0.0, 0.44]].map((dom, i) => { const a = DV.dvArea(gd, dom), X = f.axes[i ? 'x2' : 'x'];
        const Y = f.axes[i ? 'y3' : 'y'];
        return {top: Math.abs(Y.lo + r.top - a.top) < 0.5 && Math.abs(Y.hi + r.top - a.bottom) < 0.5,
                cols: Array.from({length: n}, (_, s) => Math.floor((X.at(s + 1) + r.left - a.left) / a.width * n))}; });
    }""", n)
    assert cols == [{"top": True, "cols": list(range(n))}] * 2


def test_hovering_a_dot_a_bar_or_the_forks_mark_shows_its_label(page, trace):
    renderer.load(page, trace)
    page.evaluate("""() => { window.d.switches = [{step: 2, knobs: [['temperature', '1.5', '1.0']]}];
      DV.dvShow(window.__dv, window.d, {}); }""")
    page.wait_for_function("() => !window.__dv.later")
    spec = page.evaluate(DRAWN, ["dv-steps", []])
    dots, bars = spec["data"][2], spec["data"][0]
    label, after = page.evaluate(HOVER, ["dv-steps", "x2", "y3", dots["x"][0], dots["y"][0]])
    assert "position" in label and ("schedule's confidence" in label or "raw p" in label), label
    assert after == "none"
    label, _ = page.evaluate(HOVER, ["dv-steps", "x", "y", 1, bars["y"][0] / 2])
    assert label == f"step 1 · k = {bars['y'][0]}", label
    mark = next(t for t in page.evaluate(DRAWN, ["dv-steps", []])["texts"] if t[0] == "fork")
    label, _ = page.evaluate(HOVER, ["dv-steps", None, None, (mark[1] + mark[3]) / 2, (mark[2] + mark[4]) / 2])
    assert "2" in label and "temperature 1.5" in label and "1.0" in label, label  # t.fk_at: after which step, what
    # the fork's dashed line between steps 2 and 3 over both plots (the line's colour somewhere on it)
    line = page.evaluate("""() => { const gd = document.querySelector('#dv-steps .dv-fig'), f = gd.__dvFlat;
      const g = gd.querySelector('canvas').getContext('2d'), k = gd.querySelector('canvas').width / f.width;
      const x = Math.floor(f.axes.x2.at(2.5) * k), out = [];
      for (let y = Math.floor(f.box.t * k); y < (f.box.t + f.box.h) * k; y += 2) {  // the 3 pixels across it
        const p = g.getImageData(x - 1, y, 3, 1).data; out.push([0, 4, 8].map((i) => [p[i], p[i + 1], p[i + 2]])); }
      return [out, gd.layout.shapes[0].line.color]; }""")
    inked = [any(near(px, rgb(line[1]), 60) for px in row) for row in line[0]]
    assert len(line[0]) / 4 < sum(inked) < len(line[0])  # dashed: a part of it inked, not all


def test_a_legend_click_hides_its_trace_and_a_second_shows_it_again(page, trace):
    renderer.show(page, trace)
    spec = page.evaluate(DRAWN, ["dv-steps", []])
    bars = spec["data"][0]
    at = [["x", "y", s, k / 2] for s, k in zip(bars["x"], bars["y"])]
    page.evaluate(KEY.replace("'click'", "'mousemove'"), ["dv-steps", "k"])
    assert page.evaluate("() => document.querySelector('#dv-steps .dv-fig').style.cursor") == "pointer"  # a key
    page.evaluate(KEY, ["dv-steps", "k"])
    hidden = page.evaluate(DRAWN, ["dv-steps", at])
    assert hidden["data"][0]["visible"] == "legendonly"
    assert all(near(px, rgb(hidden["plot"]), 30) for px in hidden["pixels"])  # no bar there (a grid line at most)
    assert [name for _, name in hidden["legend"]][0] == "k"  # its key stays, faded
    label, _ = page.evaluate(HOVER, ["dv-steps", "x", "y", 1, bars["y"][0] / 2])
    assert label is None or "k =" not in label  # nor its hover
    page.evaluate(KEY, ["dv-steps", "k"])
    shown = page.evaluate(DRAWN, ["dv-steps", at])
    assert shown["data"][0]["visible"] is True
    assert all(near(px, rgb(bars["colour"])) for px in shown["pixels"])


def test_compares_order_figure_marks_each_sides_step_and_shades_where_they_differ(page):
    model = make_text_model()
    a = decode(model, ["the cat "], DecodeConfig.preset("balanced", 40, seed=1))[0]
    b = decode(model, ["the cat "], DecodeConfig.preset("balanced", 40, seed=1).replace(temperature=1.6))[0]
    renderer.load(page, a, "a")
    renderer.load(page, b, "b")
    cmp = page.evaluate(COMPARE)
    assert cmp["order"], "the two orders should differ somewhere"
    spec = page.evaluate(DRAWN, ["dv-steps", []])
    side_a, side_b = spec["data"]
    assert side_a["y"] == [o + 1 for o in a.order] and side_b["y"] == [o + 1 for o in b.order]
    line = None if cmp["first"] is None else cmp["first"] + 1  # the first divergence's line: drawn over the marks
    # each side's mark where the two differ (a circle of A's colour, a cross of B's) at its own step
    differ = [p for p in cmp["order"] if line not in (side_a["y"][p], side_b["y"][p])]
    at = [["x", "y", p, side_a["y"][p]] for p in differ] + [["x", "y", p, side_b["y"][p]] for p in differ]
    # the shaded column of such a position, at a step neither side marks there
    free = [(p, s) for p in differ for s in range(1, max(side_a["y"] + side_b["y"]) + 1)
            if s not in (side_a["y"][p], side_b["y"][p], line)]
    at += [["x", "y", p, s] for p, s in free]
    drawn = page.evaluate(DRAWN, ["dv-steps", at])
    k = len(differ)
    assert spec["flat"] and all(near(px, rgb(side_a["colour"]), 40) for px in drawn["pixels"][:k])
    assert all(near(px, rgb(side_b["colour"]), 40) for px in drawn["pixels"][k:2 * k])
    shade = [0.9 * c + 0.1 * d for c, d in zip(rgb(drawn["plot"]), rgb("#dc2626"))]  # 10% of the diverge colour
    grid = rgb("#eef0f4")  # (a grid line through it)
    assert differ and free and all(near(px, shade, 12) or near(px, grid, 12) for px in drawn["pixels"][2 * k:])
    assert [name for _, name in drawn["legend"]] == ["A", "B"] and inside(drawn) == []
    if line is not None:
        assert f"step {line}" in {t[0] for t in drawn["texts"]}  # the first divergence's line, named


def test_a_narrow_figures_legend_wraps_inside_it(page, trace):
    renderer.show(page, trace)
    wide = page.evaluate(DRAWN, ["dv-steps", []])
    page.evaluate("() => { document.getElementById('dv-steps').style.width = '330px'; }")
    page.wait_for_function("() => document.querySelector('#dv-steps .dv-fig').__dvFlat.width === 330")
    narrow = page.evaluate(DRAWN, ["dv-steps", []])
    page.evaluate("() => { document.getElementById('dv-steps').style.width = '700px'; }")
    tops = sorted({round(t[2]) for t in narrow["texts"] if t[0] in {name for _, name in narrow["legend"]}})
    assert len(tops) > 1 and narrow["height"] >= wide["height"]  # rows of keys (the figure grown where they need it)
    assert inside(narrow) == []


def test_a_figure_it_cannot_draw_is_plotlys(page, trace):
    renderer.show(page, trace)
    fallback = """(kind) => { const host = document.querySelector('#dv-steps .dv-fig-host');
      const fig = DV.dvStepsFig(window.d, window.OPTIONS.strings.en); fig.__kind = 'steps';
      if (kind === 'symbol') fig.data[2].marker = {...fig.data[2].marker, symbol: 'triangle-up'};
      if (kind === 'format') fig.data[0].hovertemplate = '%{y:.1f}';
      const gd = DV.dvPlot(host, fig);
      return {flat: !!gd.__dvFlat, svg: !!gd.querySelector('.main-svg'),
              figs: host.querySelectorAll('.dv-fig').length}; }"""
    assert page.evaluate(fallback, "symbol") == {"flat": False, "svg": True, "figs": 1}
    assert page.evaluate(fallback, "format") == {"flat": False, "svg": True, "figs": 1}
    assert page.evaluate(fallback, "plain") == {"flat": True, "svg": False, "figs": 1}


def test_a_renoising_traces_per_step_figure_its_log_axis_and_stars(page):
    """The renoising canvas's per-step figure: entropies on a log axis labelled in powers of ten, a star at each
    step whose stop fired, a mark at each mean entropy (open or filled point by point: its line runs through both,
    so the pixels do not tell them apart), nine keys."""
    tr = decode(load_model("world-renoise"), ["Ana"], DecodeConfig.preset("diffusion_gemma", 48))[0]
    renderer.show(page, tr)
    spec = page.evaluate(DRAWN, ["dv-steps", []])
    assert spec["flat"] and not spec["svg"] and len(spec["legend"]) == 9 and inside(spec) == []
    mean = next(t for t in spec["data"] if t["name"] == "mean tempered entropy")
    stars = next(t for t in spec["data"] if t["name"] == "stop fired")
    points = [[x, y] for x, y in zip(mean["x"], mean["y"]) if y and y > 0]
    at = [["x2", "y3", x, y] for x, y in points] + [["x", "y", x, y] for x, y in zip(stars["x"], stars["y"])]
    drawn = page.evaluate(DRAWN, ["dv-steps", at])
    # each mean's mark in its colour at its place on the log axis (an open mark: its ring, a pixel beside the middle)
    ring = page.evaluate("""(pts) => { const gd = document.querySelector('#dv-steps .dv-fig'), f = gd.__dvFlat;
      const c = gd.querySelector('canvas'), g = c.getContext('2d'), k = c.width / f.width;
      return pts.map(([x, y]) => { const px = f.axes.x2.at(x), py = f.axes.y3.at(y), out = [];
        for (let dx = -5; dx <= 5; dx++) { const p = g.getImageData(Math.floor((px + dx) * k), Math.floor(py * k), 1, 1)
          .data; out.push([p[0], p[1], p[2]]); } return out; }); }""", points)
    assert all(any(near(px, rgb(mean["colour"]), 40) for px in row) for row in ring)
    assert stars["x"] and all(near(px, rgb(stars["colour"]), 40) for px in drawn["pixels"][len(points):])
    # the log axis: its ticks powers of ten, raised (plotly's exponentformat "power"), each where its value lies
    labels = {t[0] for t in drawn["texts"]}
    assert "1" in labels and "10\u207b\u00b9" in labels and "10\u207b\u00b2" in labels
    span = page.evaluate("""() => { const a = document.querySelector('#dv-steps .dv-fig').__dvFlat.axes.y3;
      return [a.at(1), a.at(0.1), a.at(0.01)]; }""")
    assert span[0] < span[1] < span[2] and abs((span[2] - span[1]) - (span[1] - span[0])) < 0.5  # a decade each
