"""A figure of heatmaps and markers drawn on a canvas of ours (app/web/plot2d.js), in Debian's chromium.

A decode's heatmap and its order map are drawn without plotly, from the same spec: every cell in its colour (the
trace's colour scale at its value), an empty cell left empty, a box at every confirmed cell, each cell's text in its
cell; hovering a cell or a box shows the label plotly showed; a figure it cannot draw (a menu) is
plotly's, and a host goes back and forth between the two; a new width draws it again.
"""
from __future__ import annotations

import pytest

from dllm_viz import DecodeConfig, decode
from tests import renderer
from tests.ui_model import make_text_model


@pytest.fixture(scope="module")
def page():
    with renderer.opened() as page:
        yield page


@pytest.fixture(scope="module")
def trace():
    return decode(make_text_model(), ["the cat "], DecodeConfig.preset("balanced", 48, seed=5))[0]


# The heatmap as drawn: who drew it, its spec's cells and boxes, and the canvas's pixel (r, g, b) at the middle of
# each cell (a little above it), in device pixels of the canvas (its css px times its scale).
DRAWN = """() => { const gd = document.querySelector('#dv-heatmap .dv-fig'), f = gd.__dvFlat;
  if (!f) return {flat: false, svg: !!gd.querySelector('.main-svg')};
  const canvas = gd.querySelector('canvas.dv-flat'), k = canvas.width / f.width, g = canvas.getContext('2d');
  const heat = gd.data[0], boxes = gd.data[1];
  const px = (x, y) => Array.from(g.getImageData(Math.floor(f.at.X(x) * k), Math.floor(f.at.Y(y) * k), 1, 1).data
    .slice(0, 3));
  return {flat: true, svg: !!gd.querySelector('.main-svg'), width: f.width, z: heat.z, scale: heat.colorscale,
          zmin: heat.zmin, zmax: heat.zmax, x: heat.x, y: heat.y, plot: gd.layout.plot_bgcolor,
          pixels: heat.y.map((y) => heat.x.map((x) => px(x, y - 0.3))),  // (off the grid line through its middle)
          boxes: boxes.x.map((x, j) => [x, boxes.y[j]]), box: boxes.marker.color,
          boxPixels: boxes.x.map((x, j) => { const r = boxes.marker.size / 2;
            return px(x - r / (f.at.X(1) - f.at.X(0)), boxes.y[j]); })};
}"""
# The label shown with the pointer over the cell (x, y) of the heatmap (`dx`: css px right of the cell's middle),
# then with the pointer gone; null where none shows.
HOVER = """async ([x, y, dx]) => { const gd = document.querySelector('#dv-heatmap .dv-fig'), f = gd.__dvFlat;
  const r = gd.getBoundingClientRect(), at = {clientX: r.left + f.at.X(x) + dx, clientY: r.top + f.at.Y(y)};
  gd.dispatchEvent(new MouseEvent('mousemove', {...at, bubbles: true}));
  const tip = gd.querySelector('.dv-flat-tip'), shown = tip && tip.style.display !== 'none' ? tip.innerText : null;
  gd.dispatchEvent(new MouseEvent('mouseleave', {bubbles: false}));
  return [shown, tip ? tip.style.display : null]; }"""


def rgb(hex_colour: str) -> list[int]:
    return [int(hex_colour[i:i + 2], 16) for i in (1, 3, 5)]


def scale_at(scale: list, v: float) -> list[float]:
    """The colour scale's colour at v in [0, 1], interpolated in RGB between its stops (plotly's, palette's)."""
    for (x0, c0), (x1, c1) in zip(scale, scale[1:]):
        if v <= x1:
            w = (v - x0) / (x1 - x0) if x1 > x0 else 0.0
            return [a + w * (b - a) for a, b in zip(rgb(c0), rgb(c1))]
    return [float(c) for c in rgb(scale[-1][1])]


def assert_cells(drawn: dict) -> tuple[int, int]:
    """Every cell of the drawn heatmap (DRAWN) not under a box in its colour, an empty one the plots' background;
    returns how many of each."""
    boxed = set(map(tuple, drawn["boxes"]))
    filled = empty = 0
    for j, row in enumerate(drawn["z"]):
        for i, v in enumerate(row):
            got = drawn["pixels"][j][i]
            if (drawn["x"][i], drawn["y"][j]) in boxed:
                continue  # a box over its middle
            if v is None:
                assert got == rgb(drawn["plot"]), (i, j)
                empty += 1
                continue
            want = scale_at(drawn["scale"], (v - drawn["zmin"]) / (drawn["zmax"] - drawn["zmin"]))
            assert max(abs(a - b) for a, b in zip(got, want)) <= 6, (i, j, got, want)  # a 256-colour table: 1/255 off
            filled += 1
    return filled, empty


def test_every_cell_is_drawn_in_its_colour_and_an_empty_one_is_left_empty(page, trace):
    renderer.show(page, trace)
    drawn = page.evaluate(DRAWN)
    assert drawn["flat"] and not drawn["svg"]  # ours: no plotly element in it
    assert drawn["width"] == 700  # the host's width (renderer.HOSTS)
    label = page.evaluate("() => document.querySelector('#dv-heatmap canvas.dv-flat').getAttribute('aria-label')")
    assert label.startswith("Confidence per step and position")  # its title, for a screen reader
    filled, empty = assert_cells(drawn)
    assert filled > 48 and empty > 0
    # a box at every confirmed cell: its outline (left edge) in the box colour
    assert len(drawn["boxes"]) == sum(len(s.selected) for s in trace.steps)
    assert all(max(abs(a - b) for a, b in zip(px, rgb(drawn["box"]))) <= 40 for px in drawn["boxPixels"])


def test_a_dense_heatmap_is_one_image_of_its_cells(page):
    dense = decode(make_text_model(), ["the cat "], DecodeConfig.preset("balanced", 136, seed=5))[0]
    renderer.show(page, dense)
    drawn = page.evaluate(DRAWN)
    assert page.evaluate("() => document.querySelector('#dv-heatmap .dv-fig').data[0].zsmooth") == "fast"  # dvCells
    filled, empty = assert_cells(drawn)
    assert filled > 136 and empty > 0


def test_each_colour_scale_is_drawn_in_its_own_colours_though_its_table_is_made_once(page, trace):
    # plot2d.js makes a scale's 256 colours once and keeps them by the scale: another scale gets its own, and the
    # first, drawn again, the same colours as before.
    renderer.show(page, trace)
    first = page.evaluate(DRAWN)
    turn = """() => { const gd = document.querySelector('#dv-heatmap .dv-fig'), f = gd.__dvFlat;
      const fig = JSON.parse(JSON.stringify(f.fig));
      fig.data[0].colorscale = fig.data[0].colorscale.map(([x, c]) => [1 - x, c]).reverse();
      f.draw(gd, fig, f.width); }"""
    page.evaluate(turn)
    turned = page.evaluate(DRAWN)
    assert turned["scale"] != first["scale"] and turned["pixels"] != first["pixels"]
    assert_cells(turned)
    page.evaluate(turn)  # the first scale again
    again = page.evaluate(DRAWN)
    assert again["scale"] == first["scale"] and again["pixels"] == first["pixels"]


def test_hovering_a_cell_or_a_box_shows_its_label_and_leaving_hides_it(page, trace):
    renderer.show(page, trace)
    pos = next(p for p in range(48) if trace.order[p] == 1)  # confirmed at step 2: a cell at step 1 before it
    label, after = page.evaluate(HOVER, [pos, 2, 0])
    assert label.startswith(f"step 2 · position {pos}") and "confirmed" in label, label  # the box's own label
    assert after == "none"
    label, _ = page.evaluate(HOVER, [pos, 1, 0])
    assert label.startswith(f"step 1 · position {pos}") and "argmax" in label and "confirmed" not in label, label
    done = next(p for p in range(48) if trace.order[p] == 0)
    assert page.evaluate(HOVER, [done, 2, 0])[0] is None  # confirmed before: an empty cell has no label


def test_a_figure_it_cannot_draw_is_plotlys_and_a_host_goes_back_and_forth(page, trace):
    renderer.show(page, trace)
    back = """(menus) => { const host = document.querySelector('#dv-heatmap .dv-fig-host');
      const t = window.OPTIONS.strings.en;
      const fig = DV.dvHeatmapFig(window.d, t); fig.__kind = 'heatmap';
      if (menus) fig.layout.updatemenus = [{type: 'buttons', buttons: [{label: 'x', method: 'restyle', args: [{}]}]}];
      const gd = DV.dvPlot(host, fig);
      return {flat: !!gd.__dvFlat, svg: !!gd.querySelector('.main-svg'), figs: host.querySelectorAll('.dv-fig').length,
              canvas: !!gd.querySelector('canvas.dv-flat'),
              z: JSON.stringify(gd.data[0].z) === JSON.stringify(fig.data[0].z)}; }"""
    assert page.evaluate(back, True) == {"flat": False, "svg": True, "figs": 1, "canvas": False, "z": True}
    assert page.evaluate(back, False) == {"flat": True, "svg": False, "figs": 1, "canvas": True, "z": True}


def test_a_new_width_draws_it_again(page, trace):
    renderer.show(page, trace)
    page.evaluate("() => { document.getElementById('dv-heatmap').style.width = '460px'; }")
    page.wait_for_function("() => document.querySelector('#dv-heatmap .dv-fig').__dvFlat.width === 460")
    width = page.evaluate("() => document.querySelector('#dv-heatmap canvas.dv-flat').getBoundingClientRect().width")
    page.evaluate("() => { document.getElementById('dv-heatmap').style.width = '700px'; }")
    page.wait_for_function("() => document.querySelector('#dv-heatmap .dv-fig').__dvFlat.width === 700")
    assert width == pytest.approx(460, abs=1)


# The order map as drawn: its spec's cell texts by (row, column), and each text line drawn with the cell it lies in
# (from where it was drawn: plot2d.js's record), then the label hovering cell (row, column) shows.
ORDER = """() => { const gd = document.querySelector('#dv-order .dv-fig'), f = gd.__dvFlat, heat = gd.data[0];
  const X = f.at.X, Y = f.at.Y, cw = X(1) - X(0), rh = Y(1) - Y(0);
  const cellOf = (x) => [Math.round(((x.top + x.bottom) / 2 - Y(0)) / rh),
                         Math.round(((x.left + x.right) / 2 - X(0)) / cw)];
  return {text: heat.text, z: heat.z, drawn: f.texts.filter((x) => x.cell).map((x) => [x.text, ...cellOf(x)])}; }"""


def test_the_order_maps_cell_texts_are_drawn_in_their_cells_as_text(page, trace):
    import html

    renderer.show(page, trace)
    order = page.evaluate(ORDER)
    want = sorted([line, r, c] for r, row in enumerate(order["text"]) for c, text in enumerate(row)
                  if text and order["z"][r][c] is not None for line in html.unescape(text).split("<br>"))
    assert want and sorted(order["drawn"]) == want  # every line in its cell, entities decoded (plotly showed &quot;)
    r, c = next((r, c) for r, row in enumerate(order["z"]) for c, v in enumerate(row) if v is not None)
    label = page.evaluate("""([r, c]) => { const gd = document.querySelector('#dv-order .dv-fig'), f = gd.__dvFlat;
      const b = gd.getBoundingClientRect();
      const at = {clientX: b.left + f.at.X(c), clientY: b.top + f.at.Y(r), bubbles: true};
      gd.dispatchEvent(new MouseEvent('mousemove', at));
      return gd.querySelector('.dv-flat-tip').innerText; }""", [r, c])
    assert label.startswith(f"position {r * 8 + c} · step"), label


def test_a_label_is_shown_as_text_never_as_markup(page, trace):
    renderer.show(page, trace)
    tip = page.evaluate("""() => { const host = document.querySelector('#dv-heatmap .dv-fig-host');
      const fig = DV.dvHeatmapFig(window.d, window.OPTIONS.strings.en); fig.__kind = 'heatmap';
      const heat = fig.data[0], j = heat.z.findIndex((row) => row.some((v) => v !== null));
      const i = heat.z[j].findIndex((v) => v !== null);
      heat.customdata[j][i] = "'&lt;b&gt;x&lt;/b&gt;'<img src=x onerror=\\"window.__dvPwned = 1\\"><br>two";
      const gd = DV.dvPlot(host, fig), f = gd.__dvFlat, b = gd.getBoundingClientRect();
      const at = {clientX: b.left + f.at.X(heat.x[i]), clientY: b.top + f.at.Y(heat.y[j]), bubbles: true};
      gd.dispatchEvent(new MouseEvent('mousemove', at));
      const el = gd.querySelector('.dv-flat-tip');
      return {text: el.innerText, tags: [...el.querySelectorAll('*')].map((e) => e.tagName)}; }""")
    assert tip["text"].endswith("'<b>x</b>'\ntwo") and set(tip["tags"]) == {"BR"}, tip  # an escaped token: as written
    assert page.evaluate("() => window.__dvPwned") is None


def test_a_narrow_order_map_clips_a_token_whole_never_inside_an_entity(page, trace):
    import html

    renderer.show(page, trace)
    cut = page.evaluate("""() => { const host = document.createElement('div');
      host.style.width = '380px';  // 4 characters a cell
      document.body.appendChild(host);
      const fig = DV.dvOrderFig(window.d, window.OPTIONS.strings.en); fig.__kind = 'order';
      fig.data[0].text[0][0] = '.&quot;&lt;ab';  // a cell's text as figures.js writes it (dvCellText: escaped)
      const gd = DV.dvPlot(host, fig), out = [gd.data[0].text[0][0], gd.__dvFlat.texts.filter((x) => x.cell)[0].text];
      host.remove(); return out; }""")
    assert cut[0].endswith("…") and "&" not in html.unescape(cut[0]), cut  # clipped whole: no "&q…"
    assert cut[1] == html.unescape(cut[0]), cut  # and drawn as text
