"""The figures of a renoising trace (app/web/figures_renoise.js), in Debian's chromium (issue 36, item 6).

A renoising canvas is never masked, so the page's figure hosts draw what `views.renoise` computes instead of
the masked figures: in the heatmap's place each step's accepted and renoised positions with every change of a
token and each position's last change, in the order map's place the stability map (the step each position
settled at, how often it changed), and the per-step figure its series (accepted, the entropy sums against the
bound, the mean entropy against the stop's threshold, the temperature, the stable and stopped steps). The
specs' numbers are `stability()` and `series()`'s; the one cursor moves over them as over the masked ones.
A masked trace's figures: tests/test_figures_js.py (unchanged).
"""
from __future__ import annotations

import plotly.graph_objects as go
import pytest

from dllm_viz import DecodeConfig, decode, load_model
from dllm_viz.app.strings import t
from dllm_viz.app.views import renoise as view
from dllm_viz.core.trace import Trace
from tests import renderer
from tests.renoise_table import TableRenoiser
from tests.test_page_js import at, chromium, show  # noqa: F401  (fixtures)


@pytest.fixture(scope="module")
def world() -> Trace:
    """The embedded renoising world model at DiffusionGemma's shipped settings: three canvases, stable steps, stops."""
    (tr,) = decode(load_model("world-renoise"), ["Ana"], DecodeConfig.preset("diffusion_gemma", 48, seed=0))
    assert any(rec.renoise.stopped for rec in tr.steps) and len(tr.canvases) > 1
    return tr


@pytest.fixture(scope="module")
def table() -> Trace:
    """tests/test_renoise_view.py's trace of the table model: its bound renoises accepted tokens."""
    (tr,) = decode(TableRenoiser(), [[3, 4, 5]], DecodeConfig(gen_length=18, seed=1, max_denoising_steps=6,
                                                              entropy_bound=0.8, confidence_threshold=2.0))
    return tr


@pytest.fixture(scope="module")
def forked(world) -> Trace:
    """The world trace forked half-way with another entropy bound and stop threshold: the figure's lines step there."""
    from dllm_viz import fork

    tr = fork(load_model("world-renoise"), world, 5, knobs={"entropy_bound": 0.5, "confidence_threshold": 0.05})
    se, n = view.series(tr), len(tr.steps)
    assert se["bound"] == [world.config.entropy_bound] * 5 + [0.5] * (n - 5)
    assert se["confidence"] == [world.config.confidence_threshold] * 5 + [0.05] * (n - 5)
    return tr


@pytest.fixture(scope="module")
def page(chromium):  # noqa: F811
    page = renderer.open_page(chromium)
    yield page
    assert page.errors == []
    page.close()


def figures(page, trace: Trace, lang: str = "en") -> dict[str, dict]:
    renderer.load(page, trace)
    out = {kind: renderer.figure(page, kind, lang) for kind in ("heatmap", "order", "steps")}
    for spec in out.values():
        go.Figure(spec)  # raises ValueError on any attribute plotly.js does not know
    return out


def named(spec: dict, key: str) -> dict:
    (found,) = [d for d in spec["data"] if d.get("name") == t(key, "en")]
    return found


@pytest.mark.parametrize("which", ["world", "table"])
def test_the_stability_map_is_the_views_stability(page, request, which):
    trace = request.getfixturevalue(which)
    stab, G, w = view.stability(trace), len(trace.token_ids), 8 if len(trace.token_ids) <= 96 else 16
    figs = figures(page, trace)
    order = figs["order"]["data"][0]
    assert figs["order"]["layout"]["title"]["text"] == t("rn_stability_title", "en").replace("\n", "<br>")
    for p in range(G):
        assert order["z"][p // w][p % w] == stab["settled"][p] + 1, p
        assert order["text"][p // w][p % w].split("<br>")[-1] == str(stab["changes"][p]), p
        assert f"last changed at step {stab['last_changed'][p] + 1} · times changed {stab['changes'][p]}" in \
            order["customdata"][p // w][p % w], p
    heat = figs["heatmap"]
    last, changed = named(heat, "rn_last_changed"), named(heat, "rn_changed")
    assert last["x"] == list(range(G)) and [y - 1 for y in last["y"]] == stab["last_changed"]
    assert [changed["x"].count(p) for p in range(G)] == stab["changes"]
    assert all(s - 1 <= stab["last_changed"][p] for p, s in zip(changed["x"], changed["y"]))


@pytest.mark.parametrize("which", ["world", "table"])
def test_the_heatmap_cells_are_each_steps_accepted_and_renoised_positions(page, request, which):
    trace = request.getfixturevalue(which)
    frames, heat = view.frames(trace), figures(page, trace)["heatmap"]
    z, G, lost = heat["data"][0]["z"], len(trace.token_ids), 0
    for s, rec in enumerate(trace.steps):
        span = trace.canvases[rec.block]
        want = [None] * G
        for i in range(span.end - span.start):
            p = span.start + i
            want[p] = 2 if i in rec.renoise.accepted else 1 if p in frames[s + 1]["lost"] else 0
        lost += want.count(1)
        assert z[s] == want, s
    assert lost or which == "world"  # the table model's bound renoises accepted tokens
    n = len(trace.steps)
    assert heat["layout"]["xaxis"]["range"] == [-0.5, G - 0.5] and heat["layout"]["yaxis"]["range"] == [n + 0.5, 0.5]


@pytest.mark.parametrize("which", ["world", "table", "forked"])
def test_the_per_step_figure_is_the_views_series(page, request, which):
    trace = request.getfixturevalue(which)
    se, n = view.series(trace), len(trace.steps)
    steps = figures(page, trace)["steps"]
    steps_1 = list(range(1, n + 1))
    bars = named(steps, "rn_accepted")
    assert bars["type"] == "bar" and bars["x"] == steps_1 and bars["y"] == se["accepted"]
    for key in ("temperature", "sum_less_max", "sum", "bound", "mean_entropy", "confidence"):
        got = named(steps, "rn_" + key)
        assert got["x"] == steps_1 and got["y"] == pytest.approx(se[key], abs=1e-6), key
    symbols = named(steps, "rn_mean_entropy")["marker"]["symbol"]
    assert symbols == ["circle" if c else "circle-open" for c in se["confident"]]
    for key in ("stable", "stopped"):
        flagged = named(steps, "rn_" + key)
        assert flagged["x"] == [s + 1 for s in range(n) if se[key][s]], key
        assert flagged["y"] == [se["accepted"][x - 1] for x in flagged["x"]]
    starts = [s + 1 for s in range(1, n) if se["canvas"][s] != se["canvas"][s - 1]]
    lines = steps["layout"].get("shapes", [])
    assert [shape["x0"] + 0.5 for shape in lines if shape.get("name") != "fork"] == starts
    switched = [(f.step, dict(f.knobs)) for f in trace.forks if f.knobs]  # a fork's switch: a line before its step
    assert [shape["x0"] - 0.5 for shape in lines if shape.get("name") == "fork"] == [s for s, _ in switched]
    assert [a["hovertext"].split(": ", 1)[0] for a in steps["layout"].get("annotations", [])] == \
        [t("fk_at", "en", s=s, what="").split(": ", 1)[0] for s, _ in switched]
    assert steps["layout"]["xaxis2"]["range"] == [0.5, n + 0.5] and steps["layout"]["yaxis3"]["type"] == "log"
    if which == "world":
        assert any(se["stopped"]) and any(se["stable"]) and not all(se["confident"])


def test_the_figures_speak_the_pages_language(page, world):
    en, zh = figures(page, world), figures(page, world, "zh")
    for kind in ("heatmap", "order", "steps"):
        assert en[kind]["layout"]["title"]["text"] != zh[kind]["layout"]["title"]["text"], kind
    assert zh["steps"]["layout"]["title"]["text"] == t("rn_series_title", "zh").replace("\n", "<br>")


CURSORS = """(id) => { const host = document.querySelector(`#${id} .dv-fig-host`), gd = DV.dvFig(host);
  const box = (b) => { const r = b.getBoundingClientRect(); return [r.left, r.top, r.width, r.height]; };
  return {cursor: [...host.querySelectorAll('.dv-ol-cursor')].map(box),
          future: host.querySelectorAll('.dv-ol-future').length, area: DV.dvArea(gd),
          low: DV.dvArea(gd, [0.0, 0.44]), top: DV.dvArea(gd, [0.56, 1.0])}; }"""


@pytest.mark.parametrize("which", ["world", "table"])  # table: a last row of the stability map part empty
def test_the_one_cursor_follows_the_step_over_a_renoising_traces_figures(show, request, which):  # noqa: F811
    trace = request.getfixturevalue(which)
    n, G = len(trace.steps), len(trace.token_ids)
    settled = view.stability(trace)["settled"]
    page = show(trace, frame=0, selected=3)
    page.wait_for_function("() => ['dv-heatmap', 'dv-order', 'dv-steps'].every((id) => "
                           "document.querySelector(`#${id} .dv-fig-host .dv-fig :is(.main-svg, canvas.dv-flat)`))")
    for f in (1, 5, n // 2, n, 2):
        at(page, f, 3)
        heat, order, steps = (page.evaluate(CURSORS, name) for name in ("dv-heatmap", "dv-order", "dv-steps"))
        a, rh = heat["area"], heat["area"]["height"] / n
        row, col = heat["cursor"]  # the step's row, the selected position's column
        assert row[1] == pytest.approx(a["top"] + (f - 1) * rh, abs=1.5) and row[3] == pytest.approx(rh, abs=1.5), f
        assert col[0] == pytest.approx(a["left"] + 3 * a["width"] / G, abs=1.5), f
        # the order map shades the positions not yet holding their final token
        assert order["future"] == sum(s >= f for s in settled), f
        low, cw = steps["low"], steps["low"]["width"] / n
        (box,) = steps["cursor"]
        assert box[0] == pytest.approx(low["left"] + (f - 1) * cw, abs=1.5) and box[2] == pytest.approx(cw, abs=1.5), f
    # a click on the stability map selects that position at the step it settled at
    a = page.evaluate(CURSORS, "dv-order")["area"]
    w, rows, p = 8, -(-G // 8), 13
    x, y = a["left"] + (p % w + 0.5) * a["width"] / w, a["top"] + (p // w + 0.5) * a["height"] / rows
    assert page.evaluate("([x, y]) => DV.dvCellAt(window.__dv, x, y)", [x, y]) == [settled[p] + 1, p]
    assert page.errors == []
