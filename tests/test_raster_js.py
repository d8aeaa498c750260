"""Dense marker layers drawn as one image (app/web/raster.js) in a figure plotly draws, in Debian's chromium.

The page's figures are drawn on canvases of ours (plot2d.js, chart2d.js); plotly draws the others, and all of them
where `window.__dvFlatOff` says so (`bench/ui_bench.py --plotly`), as here. Its per-step figure's dots are then
painted into one image per subplot (plotly would draw an SVG element per point); what the figure shows and says on hover
stays: the image has a mark at every point, each point's trace still hovers with its label, the legend keeps its
keys, and a legend click hides a layer from the image.
"""
from __future__ import annotations


import pytest

from dllm_viz import DecodeConfig, decode
from tests import renderer
from tests.ui_model import make_text_model


@pytest.fixture(scope="module")
def page():
    with renderer.opened() as page:
        page.evaluate("() => { window.__dvFlatOff = true; }")  # every figure plotly's
        yield page


@pytest.fixture(scope="module")
def trace():
    return decode(make_text_model(), ["the cat "], DecodeConfig.preset("balanced", 48, seed=5))[0]


DRAWN = """(kind) => { const gd = document.querySelector(`#dv-${kind} .dv-fig`);
  return {data: gd.data.map((t) => ({mode: t.mode, name: t.name, n: t.x ? t.x.length : 0, legend: t.showlegend,
                                     group: t.legendgroup || null, visible: t.visible ?? true})),
          images: (gd.layout.images || []).map((i) => [i.xref, i.yref, i.source.slice(0, 22)]),
          paths: gd.querySelectorAll('.scatterlayer .point').length,
          legend: [...gd.querySelectorAll('.legendtext')].map((e) => e.textContent)}; }"""
# The label plotly shows hovering (x, y) of subplot `sub` in figure `kind`.
HOVER = """async ([kind, x, y, sub]) => { const gd = document.querySelector(`#dv-${kind} .dv-fig`);
  Plotly.Fx.hover(gd, {xval: x, yval: y}, sub); await new Promise((r) => setTimeout(r, 150));
  const out = [...gd.querySelectorAll('.hoverlayer .hovertext')].map((e) => e.textContent);
  Plotly.Fx.unhover(gd); return out; }"""
# The painted image of a figure's subplot `i`: how many of its pixels are opaque.
INKED = """async ([kind, i]) => { const gd = document.querySelector(`#dv-${kind} .dv-fig`);
  const img = new Image(); img.src = gd.layout.images[i].source; await img.decode();
  const c = document.createElement('canvas'); c.width = img.width; c.height = img.height;
  const g = c.getContext('2d'); g.drawImage(img, 0, 0);
  return g.getImageData(0, 0, c.width, c.height).data.filter((v, j) => j % 4 === 3 && v > 0).length; }"""


def test_the_per_step_dots_are_one_image_with_their_keys_and_hover(page, trace):
    renderer.show(page, trace)
    drawn = page.evaluate(DRAWN, "steps")
    modes = [(d["mode"], d["name"], d["legend"]) for d in drawn["data"]]
    # the dots and the mean over them hover from their traces; each keeps its key in the legend, beside it
    assert [m[0] for m in modes] == [None, "lines+markers", "none", "markers", "none", "markers", "none", "lines"]
    assert modes[3][1] == modes[2][1] and modes[5][1] == modes[4][1] and modes[7][1] == modes[6][1]
    assert drawn["legend"] == ["k", "temperature", "schedule's confidence", "raw p(drawn token)", "mean"]
    assert [i[:2] for i in drawn["images"]] == [["x2 domain", "y3 domain"]]
    assert drawn["paths"] == len(trace.steps)  # the temperature line's own markers, one a step: plotly's
    x, y = page.evaluate("() => { const t = document.querySelector('#dv-steps .dv-fig').data[2]; "
                         "return [t.x[0], t.y[0]]; }")
    label = " ".join(page.evaluate(HOVER, ["steps", x, y, "x2y3"]))
    assert "position" in label and ("schedule's confidence" in label or "raw p" in label), label  # a dot's own label
    before = page.evaluate(INKED, ["steps", 0])
    source = "() => document.querySelector('#dv-steps .dv-fig').layout.images[0].source"
    old = page.evaluate(source)
    page.locator("#dv-steps .legend .traces", has_text="schedule's confidence").locator(".legendtoggle").click()
    page.wait_for_function(f"(old) => ({source})() !== old", arg=old)  # its image painted again
    hidden = page.evaluate(DRAWN, "steps")["data"]
    assert hidden[2]["visible"] is False and hidden[3]["visible"] == "legendonly"  # its hover with it
    assert page.evaluate(INKED, ["steps", 0]) < before


def test_a_figure_not_laid_out_keeps_plotlys_markers(page, trace):
    renderer.load(page, trace)
    spec = page.evaluate("""() => { const host = document.createElement('div');  // hidden: no width
        host.style.display = 'none'; document.body.appendChild(host);
        const fig = DV.dvHeatmapFig(window.d, window.OPTIONS.strings.en); fig.__kind = 'heatmap';
        const gd = DV.dvPlot(host, fig), modes = gd.data.map((t) => t.mode || null); host.remove(); return modes; }""")
    assert spec == [None, "markers"]
