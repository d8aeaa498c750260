"""A figure fitted to the width it is drawn at (app/web/fit.js), in Debian's chromium.

Plotly neither wraps a title nor grows a figure for a legend that wraps: in a phone's column the per-step figure of a
renoising trace lost its last legend entries under its bottom edge and the long titles ran past its right edge.
Drawn by `dvPlot` (which fits each figure first) into a column 300 px wide and one 700 px wide, the same figures:
every text of the figure lies inside its box, the title above its plots, and the plots keep the size the figure
states (the overlay's cursor is placed from the layout); where nothing needs to wrap, the figure is as stated.
"""
from __future__ import annotations

import re

import pytest

from dllm_viz import DecodeConfig, decode, load_model
from dllm_viz.core.trace import Trace
from tests import renderer

# Where a drawn figure `gd` lies and what it wrote, in viewport px, whoever drew it: plotly (its elements) or
# plot2d.js (its canvas, and where it wrote each text: `__dvFlat`). {box, plot, texts: [[text, rect]], title: rect}.
BOXES = """const boxes = (gd) => {
  const flat = gd.__dvFlat;
  if (!flat) {
    const texts = [...gd.querySelectorAll('text')]
      .filter((e) => e.textContent.trim() && e.getBoundingClientRect().width);
    return {box: gd.querySelector('.main-svg').getBoundingClientRect(),
            plot: gd.querySelector('.cartesianlayer .bg, .nsewdrag').getBoundingClientRect(),
            texts: texts.map((e) => [e.textContent, e.getBoundingClientRect()]),
            title: gd.querySelector('.gtitle').getBoundingClientRect()};
  }
  const box = gd.querySelector('canvas.dv-flat').getBoundingClientRect(), b = flat.box;
  const at = (r) => ({left: box.left + r.left, right: box.left + r.right, top: box.top + r.top,
                      bottom: box.top + r.bottom});
  const titles = flat.texts.filter((x) => x.title).map(at);
  return {box, plot: at({left: b.l, right: b.l + b.w, top: b.t, bottom: b.t + b.h}),
          texts: flat.texts.map((x) => [x.text, at(x)]),
          title: {top: Math.min(...titles.map((r) => r.top)), bottom: Math.max(...titles.map((r) => r.bottom))}};
};"""
# Draw the figure `kind` of window.d ("zh" or "en" strings) into a new column `width` px wide; returns what was
# stated (height, margins, title), what was drawn, and every text of the figure outside its box or, for the
# title, below the top of its plots.
DRAW = """([kind, width, lang]) => {
  """ + BOXES + """
  const t = window.OPTIONS.strings[lang], make = {heatmap: DV.dvHeatmapFig, order: DV.dvOrderFig, steps: DV.dvStepsFig};
  const stated = make[kind](window.d, t), host = document.createElement('div');
  host.style.width = width + 'px';
  document.body.appendChild(host);
  const fig = make[kind](window.d, t);
  fig.__kind = kind;
  const gd = DV.dvPlot(host, fig), {box, plot, texts, title} = boxes(gd);
  const outside = texts.filter(([, r]) =>
    r.left < box.left - 1 || r.right > box.right + 1 || r.top < box.top - 1 || r.bottom > box.bottom + 1);
  const out = {stated: {height: stated.layout.height, t: stated.layout.margin.t, b: stated.layout.margin.b,
                        title: stated.layout.title.text},
               drawn: {height: gd.layout.height, t: gd.layout.margin.t, b: gd.layout.margin.b,
                       title: gd.layout.title.text, box: box.height},
               outside: outside.map(([text]) => text), flat: !!gd.__dvFlat, titleOverPlot: title.bottom > plot.top + 1};
  host.remove();
  return out;
}"""


@pytest.fixture(scope="module")
def page():
    with renderer.opened() as page:
        yield page


@pytest.fixture(scope="module")
def renoising() -> Trace:
    return decode(load_model("world-renoise"), ["Ana"], DecodeConfig.preset("diffusion_gemma", 48))[0]


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("kind", ["heatmap", "order", "steps"])
def test_in_a_narrow_column_every_text_of_a_renoising_traces_figure_is_inside_it(page, renoising, kind, lang):
    renderer.load(page, renoising)
    fig = page.evaluate(DRAW, [kind, 300, lang])
    assert fig["outside"] == [] and not fig["titleOverPlot"], fig
    assert fig["flat"]  # drawn on a canvas of ours: the heatmap and the order map by plot2d.js, the other by chart2d.js
    stated, drawn = fig["stated"], fig["drawn"]
    # the plots keep their stated size: the figure grew by what its margins took more
    assert drawn["height"] - drawn["t"] - drawn["b"] == stated["height"] - stated["t"] - stated["b"]
    assert drawn["box"] == pytest.approx(drawn["height"], abs=1)
    # the title's words are all there, in order, in more rows where they did not fit
    words = lambda title: re.sub(r"<br>|\s", "", title)  # noqa: E731
    assert words(drawn["title"]) == words(stated["title"])
    assert drawn["title"].count("<br>") >= stated["title"].count("<br>")
    if kind == "steps":  # nine legend entries, one a row at this width: the figure grew under its plots
        assert drawn["b"] > stated["b"]


@pytest.mark.parametrize("kind", ["heatmap", "order", "steps"])
def test_where_everything_fits_the_figure_is_as_stated(page, renoising, kind):
    renderer.load(page, renoising)
    fig = page.evaluate(DRAW, [kind, 1400, "en"])
    stated, drawn = fig["stated"], fig["drawn"]
    assert fig["outside"] == [] and {k: drawn[k] for k in stated} == stated


# Compare's A and B figures of one kind drawn into two columns `width` px wide, B's title made longer; with `level`
# through `dvPairFit` (page.js's Compare). Returns each plot's top below its column's top, and each title's rows.
PAIR = """([kind, width, level]) => {
  """ + BOXES + """
  const t = window.OPTIONS.strings.en, make = {heatmap: DV.dvHeatmapFig, steps: DV.dvStepsFig};
  const figs = ['side_a', 'side_b'].map((side) => make[kind](window.d, t, {side}));
  figs[1].layout.title.text += ' and a few more words that make this title wrap once more';
  const hosts = figs.map(() => { const h = document.createElement('div'); h.style.width = width + 'px';
    document.body.appendChild(h); return h; });
  if (level) DV.dvPairFit(figs, hosts);
  const out = figs.map((fig, i) => { fig.__kind = kind; const gd = DV.dvPlot(hosts[i], fig);
    const {plot} = boxes(gd);
    return {top: Math.round(plot.top - hosts[i].getBoundingClientRect().top),
            rows: gd.layout.title.text.split('<br>').length}; });
  hosts.forEach((h) => h.remove());
  return out;
}"""


@pytest.mark.parametrize("kind", ["heatmap", "steps"])
def test_compares_two_figures_keep_their_plots_level_whatever_their_titles_wrap_to(page, renoising, kind):
    renderer.load(page, renoising)
    a, b = page.evaluate(PAIR, [kind, 420, True])
    assert b["rows"] > a["rows"] and a["top"] == b["top"]  # A's title given B's room: the plots start level
    a, b = page.evaluate(PAIR, [kind, 420, False])
    assert b["top"] > a["top"]  # (each fitted alone, B's plots would start lower)


# A figure of `kind` drawn into a column 700 px wide and seen there (two frames), then, in one task, the column made
# 300 px wide and the figure drawn again; returns the width it was drawn at in that task, and two frames later.
SEEN = """async ([kind]) => {
  const t = window.OPTIONS.strings.en, make = {heatmap: DV.dvHeatmapFig, order: DV.dvOrderFig, steps: DV.dvStepsFig};
  const frame = () => new Promise((done) => requestAnimationFrame(() => setTimeout(done, 0)));
  const drawn = () => { const fig = make[kind](window.d, t); fig.__kind = kind; return DV.dvPlot(host, fig); };
  const host = document.createElement('div');
  host.style.width = '700px';
  document.body.appendChild(host);
  const gd = drawn();
  await frame(); await frame();
  host.style.width = '300px';
  drawn();
  const inTask = gd.__dvFlat.width;
  await frame(); await frame();
  const later = gd.__dvFlat.width;
  host.remove();
  return [inTask, later];
}"""


@pytest.mark.parametrize("kind", ["heatmap", "order", "steps"])
def test_a_figure_of_ours_is_drawn_at_the_width_last_seen_and_again_once_it_changes(page, renoising, kind):
    """dvFit takes a figure of ours at the width its ResizeObserver last saw, so a figure drawn in the task that
    changes the page does not lay the page out first (a decode's last step: its canvas, then its heatmap); the
    observer draws it again at the new width at the next frame."""
    renderer.load(page, renoising)
    assert page.evaluate(SEEN, [kind]) == [700, 300]


# Compare's two figures of `kind` fitted (`dvPairFit`) and drawn into columns 700 px wide and seen there (two
# frames); then, in one task, the columns made 300 px wide and a new pair fitted; then again two frames later.
# Returns the title rows each fit gave the pair.
PAIR_SEEN = """async ([kind]) => {
  const t = window.OPTIONS.strings.en, make = {heatmap: DV.dvHeatmapFig, steps: DV.dvStepsFig};
  const frame = () => new Promise((done) => requestAnimationFrame(() => setTimeout(done, 0)));
  const figs = () => ['side_a', 'side_b'].map((side) => make[kind](window.d, t, {side}));
  const hosts = [0, 1].map(() => { const h = document.createElement('div'); h.style.width = '700px';
    document.body.appendChild(h); return h; });
  const rows = (fitted) => fitted[0].__dvTitleRows;
  const first = DV.dvPairFit(figs(), hosts);
  first.forEach((fig, i) => { fig.__kind = kind; DV.dvPlot(hosts[i], fig); });
  await frame(); await frame();
  hosts.forEach((h) => { h.style.width = '300px'; });
  const inTask = rows(DV.dvPairFit(figs(), hosts));
  await frame(); await frame();
  const later = rows(DV.dvPairFit(figs(), hosts));
  hosts.forEach((h) => h.remove());
  return [rows(first), inTask, later];
}"""


@pytest.mark.parametrize("kind", ["heatmap", "steps"])
def test_a_compares_pair_is_fitted_at_the_width_its_figures_were_last_seen(page, renoising, kind):
    """dvPairFit gives the pair's titles the room of the width their figures were last seen at, as dvFit draws
    them: a compare's end fits and draws its heatmaps in the task that changed the page without laying it out."""
    renderer.load(page, renoising)
    wide, in_task, later = page.evaluate(PAIR_SEEN, [kind])
    assert in_task == wide and later > wide  # (at 300 px the title wraps into more rows)
