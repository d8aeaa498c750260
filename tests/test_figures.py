"""figures.py: Plotly figures are pure functions of a Trace, valid plotly, and show the trace's numbers."""
from __future__ import annotations

import json
import math

import plotly.graph_objects as go
import pytest

from dllm_viz import DecodeConfig, decode
from dllm_viz.app.views import figures
from dllm_viz.app.views.markup import html_literal
from dllm_viz.app.views.palette import confidence_position
from dllm_viz.core.analysis import piece
from dllm_viz.core.trace import Trace
from tests.ui_model import make_text_model


@pytest.fixture(scope="module")
def model():
    return make_text_model()


@pytest.fixture(scope="module")
def trace(model) -> Trace:
    return decode(model, ["the cat "], DecodeConfig.preset("balanced", 32, seed=5))[0]


def valid(fig: go.Figure) -> dict:
    """The figure's dict, after checking it against plotly's schema (figures skip validation when built)."""
    spec = json.loads(fig.to_json())
    go.Figure(spec)  # raises ValueError on any attribute plotly.js does not know
    return spec


def test_heatmap_cells_are_the_schedule_confidence(trace):
    spec = valid(figures.confidence_heatmap(trace))
    heat, boxes = spec["data"]
    assert heat["y"] == list(range(1, len(trace.steps) + 1))
    for row, rec in zip(heat["z"], trace.steps):  # on the logit colour scale, gaps where confirmed
        assert row == [None if math.isnan(c) else round(confidence_position(c), 4) for c in rec.confidence]
    for row, rec in zip(heat["customdata"], trace.steps):  # hover shows the real confidence
        assert all(h.startswith(f"{c:.3f}") for h, c in zip(row, rec.confidence) if h)
        assert not any("raw" in h for h in row)  # the schedule ranked by raw confidence: said once
    assert heat["colorbar"]["ticktext"][0] == "0.01" and heat["colorbar"]["ticktext"][-1] == "0.99"
    # Every position is boxed exactly once, at the step that confirmed it.
    assert sorted(boxes["x"]) == list(range(32))
    assert all(trace.order[x] + 1 == y for x, y in zip(boxes["x"], boxes["y"]))
    assert len(heat["customdata"]) == len(trace.steps)


def test_heatmap_title_names_polluted_confidence(model):
    tr = decode(model, ["a "], DecodeConfig(gen_length=8, temperature=2.0, confidence_from="tempered"))[0]
    fig = figures.confidence_heatmap(tr)
    assert "tempered" in fig.layout.title.text
    # the hover then shows both numbers: what the schedule ranked by, and the raw confidence
    shown = [(h, c, r) for rec in tr.steps for h, c, r in zip(fig.data[0].customdata[rec.step], rec.confidence, rec.raw) if h]
    assert shown and all(h.startswith(f"{c:.3f}") and h.endswith(f"(raw {r:.3f})") for h, c, r in shown)


def test_order_map_cells_hold_the_confirmation_step(trace):
    spec = valid(figures.order_map(trace, width=8))
    z, text = spec["data"][0]["z"], spec["data"][0]["text"]
    assert len(z) == 4 and all(len(r) == 8 for r in z)
    for pos in range(32):
        r, c = divmod(pos, 8)
        assert z[r][c] == trace.order[pos] + 1
        assert text[r][c].startswith(piece(trace, trace.token_ids[pos])[:5])


def test_steps_plot_shows_k_temperature_and_confirmed_confidence(model):
    cfg = DecodeConfig(gen_length=24, top_k=6, temperature_stages=(1.2, 1.0, 0.7), seed=2)
    tr = decode(model, ["x "], cfg)[0]
    spec = valid(figures.steps_plot(tr))
    bars, line, conf, rawp, mean = spec["data"]
    assert bars["y"] == [rec.k for rec in tr.steps] and sum(bars["y"]) == 24
    assert line["y"] == [rec.temperature for rec in tr.steps]
    assert line["y"][0] == 1.2 and line["y"][-1] == 0.7
    assert len(conf["y"]) == len(rawp["y"]) == 24
    drawn = [math.exp(lp) for rec in tr.steps for lp in rec.logprobs]
    assert rawp["y"] == [round(confidence_position(p), 4) for p in drawn]


def test_compare_orders_shades_each_differing_position(model, trace):
    other = decode(model, ["the cat "], trace.config.replace(temperature=2.0, seed=9))[0]
    spec = valid(figures.compare_orders(trace, other))
    differs = [p for p in range(32) if trace.order[p] != other.order[p]]
    rects = [s for s in spec["layout"]["shapes"] if s["type"] == "rect"]
    assert sorted(int(s["x0"] + 0.5) for s in rects) == differs
    assert spec["data"][0]["y"] == [o + 1 for o in trace.order]


def test_sweep_heatmap_has_one_panel_per_decay():
    table = {0.9: [[1.0, 2.0], [3.0, 4.0]], 0.95: [[5.0, 6.0], [7.0, 8.0]]}
    spec = valid(figures.sweep_heatmap(table, [0.5, 1.0], [4, 6], title="steps"))
    assert [d["z"] for d in spec["data"]] == [table[0.9], table[0.95]]
    assert spec["data"][0]["x"] == ["L/4", "L/6"] and spec["data"][0]["y"] == ["T=0.5", "T=1"]
    assert spec["data"][1]["xaxis"] == "x2"


def test_figures_are_pure_and_translated(trace):
    copy = Trace.from_json(trace.to_json())
    for fn in (figures.confidence_heatmap, figures.order_map, figures.steps_plot):
        assert fn(copy).to_json() == fn(trace).to_json()
        assert fn(trace, lang="zh").layout.title.text != fn(trace, lang="en").layout.title.text


def test_empty_generation_draws_without_error(model):
    tr = decode(model, ["a"], DecodeConfig(gen_length=0))[0]
    for fn in (figures.confidence_heatmap, figures.order_map, figures.steps_plot):
        valid(fn(tr))


def test_playground_figures_state_the_ranges_the_page_maps_clicks_with(trace):
    # page.js turns a click into (step, position) and draws the cursor from these ranges alone.
    n, G = len(trace.steps), trace.config.gen_length
    heat = valid(figures.confidence_heatmap(trace))["layout"]
    assert heat["xaxis"]["range"] == [-0.5, G - 0.5] and heat["yaxis"]["range"] == [n + 0.5, 0.5]
    order = valid(figures.order_map(trace))["layout"]
    w = figures.order_width(G)
    assert order["xaxis"]["range"] == [-0.5, w - 0.5] and order["yaxis"]["range"] == [-(-G // w) - 0.5, -0.5]
    steps = valid(figures.steps_plot(trace))["layout"]
    assert steps["xaxis"]["range"] == steps["xaxis2"]["range"] == [0.5, n + 0.5]


def test_compare_heatmaps_share_height_and_scale(model, trace):
    other = decode(model, ["the cat "], DecodeConfig(gen_length=32, schedule="threshold", threshold=0.9))[0]
    rows = max(len(trace.steps), len(other.steps))
    a = valid(figures.confidence_heatmap(trace, rows=rows, side="side_a"))
    b = valid(figures.confidence_heatmap(other, rows=rows, side="side_b"))
    assert a["layout"]["height"] == b["layout"]["height"] and a["layout"]["yaxis"]["range"] == b["layout"]["yaxis"]["range"]
    assert (a["data"][0]["zmin"], a["data"][0]["zmax"]) == (b["data"][0]["zmin"], b["data"][0]["zmax"])
    assert a["layout"]["title"]["text"].startswith("A · ") and b["layout"]["title"]["text"].startswith("B · ")


def test_sweep_colour_range_is_fixed_when_given():
    table = {0.9: [[0.0, 0.01]]}
    spec = valid(figures.sweep_heatmap(table, [1.0], [4, 6], title="r", zrange=(0.0, 0.5)))
    assert (spec["data"][0]["zmin"], spec["data"][0]["zmax"]) == (0.0, 0.5)
    assert spec["data"][0]["text"] == [["0", "0.01"]]


def test_heatmap_of_a_cached_decode_with_drift_has_a_drift_view():
    from dllm_viz import load_model

    config = DecodeConfig(gen_length=16, block_length=8, schedule="threshold", threshold=0.9, temperature=0.0,
                          cache="dual", cache_drift=True)
    (cached,) = decode(load_model("world"), ["Tom Lopez of"], config)
    fig = valid(figures.confidence_heatmap(cached, lang="zh"))
    heat, boxes, drift = fig["data"]
    assert drift["visible"] is False and drift["name"] == "drift"
    buttons = fig["layout"]["updatemenus"][0]["buttons"]
    assert [b["label"] for b in buttons] == ["置信度", "缓存偏差"]
    assert [b["args"][0]["visible"] for b in buttons] == [[True, True, False], [False, True, True]]
    for rec, row in zip(cached.steps, drift["z"]):
        expected = [None if rec.exact_confidence is None or math.isnan(e) or math.isnan(c) else round(abs(c - e), 4)
                    for c, e in zip(rec.confidence, rec.exact_confidence or [math.nan] * 16)]
        assert row == expected
    assert any(v is not None for row in drift["z"] for v in row)
    plain = valid(figures.confidence_heatmap(decode(load_model("world"), ["Tom Lopez of"],
                                                    config.replace(cache_drift=False))[0]))
    assert len(plain["data"]) == 2 and "updatemenus" not in plain["layout"]


# ----- confirmations taken back (issue 28) -------------------------------------------------------
@pytest.fixture(scope="module")
def remasked(model) -> Trace:
    """ReMDM at a large sigma on the tiny model: tokens taken back at many steps."""
    cfg = DecodeConfig(gen_length=24, schedule="fixed_steps", steps=12, revise="remdm", remask_sigma="rescale",
                       remask_eta=0.9, seed=3)
    tr = decode(model, ["the cat "], cfg)[0]
    assert any(rec.remasked for rec in tr.steps)
    return tr


@pytest.fixture(scope="module")
def edited() -> Trace:
    """Token editing (JointThreshold) on a tiny model that declares it can edit: tokens rewritten."""
    editor = make_text_model()
    editor.can_edit = True
    cfg = DecodeConfig(gen_length=24, schedule="threshold", threshold=0.3, temperature=0.0, block_length=8,
                       revise="joint_threshold")
    tr = decode(editor, ["the cat "], cfg)[0]
    assert any(rec.edited for rec in tr.steps)
    return tr


def test_heatmap_marks_each_token_taken_back_or_rewritten_at_its_step(remasked, edited):
    for tr, kind, old_ids, new_ids in ((remasked, "remasked", "remasked_tokens", None),
                                       (edited, "edited", "edited_from", "edited_to")):
        spec = valid(figures.confidence_heatmap(tr))
        assert len(spec["data"]) == 3  # the heat, the confirmed boxes, one kind of revision
        marks = spec["data"][2]
        expect = [(p, rec.step + 1) for rec in tr.steps for p in getattr(rec, kind) or ()]
        assert sorted(zip(marks["x"], marks["y"])) == sorted(expect)
        # the hover names the old token (and the new one of a rewrite)
        rec = next(r for r in tr.steps if getattr(r, kind))
        label = next(h for x, y, h in zip(marks["x"], marks["y"], marks["customdata"])
                     if (x, y) == (getattr(rec, kind)[0], rec.step + 1))
        assert repr(html_literal(piece(tr, getattr(rec, old_ids)[0]))) in label
        if new_ids:
            assert repr(html_literal(piece(tr, getattr(rec, new_ids)[0]))) in label
        assert "×" in spec["layout"]["title"]["text"]


def test_heatmap_of_a_rule_that_took_nothing_back_has_no_marks(model):
    tr = decode(model, ["a "], DecodeConfig(gen_length=8, revise="rcr", schedule="fixed_steps", steps=8))[0]
    assert not tr.revised
    assert len(valid(figures.confidence_heatmap(tr))["data"]) == 2


def test_order_map_counts_decisions_and_colours_the_last(remasked, edited):
    for tr in (remasked, edited):
        heat = valid(figures.order_map(tr, width=8))["data"][0]
        decisions = tr.decisions
        assert max(decisions) > 1
        for pos in range(tr.config.gen_length):
            r, c = divmod(pos, 8)
            assert heat["z"][r][c] == tr.order[pos] + 1  # the step it was LAST decided
            assert heat["text"][r][c].startswith(html_literal(piece(tr, tr.token_ids[pos]))[:5])  # the final token
            assert heat["text"][r][c].endswith(f"×{decisions[pos]}") == (decisions[pos] > 1)
            # the hover lists every decision (the earlier ones counted past eight)
            events = tr.history[pos]
            hover = heat["customdata"][r][c]
            assert hover.count("<br>") == 1 + min(len(events), 8) - (len(events) <= 8)
            assert f"{decisions[pos]}×" in hover


def test_a_revised_order_map_title_is_as_narrow_as_the_heatmap_title(remasked):
    # The heatmap's title fits a 390 px phone (tests/test_browser.py, FITS); the revised order map's,
    # longer, breaks into lines no longer than the heatmap's, with room above the cells for them.
    for lang in ("en", "zh"):
        order = valid(figures.order_map(remasked, lang=lang))["layout"]
        heat = valid(figures.confidence_heatmap(remasked, lang=lang))["layout"]
        lines, widest = order["title"]["text"].split("<br>"), max(map(len, heat["title"]["text"].split("<br>")))
        assert len(lines) == 2 and max(map(len, lines)) <= widest, (lang, lines)
        assert order["margin"]["t"] >= heat["margin"]["t"]


def test_order_map_of_final_confirmations_keeps_its_labels(trace):
    spec = valid(figures.order_map(trace, width=8))
    assert not any("×" in cell for row in spec["data"][0]["text"] for cell in row)
    assert spec["layout"]["title"]["text"] == figures.t("fig_order", "en")


def test_steps_plot_adds_revisions_per_step_under_a_rule(remasked, edited, trace):
    assert len(valid(figures.steps_plot(trace))["data"]) == 5  # no rule: the figure as it was
    for tr in (remasked, edited):
        series = valid(figures.steps_plot(tr))["data"][5]
        assert series["x"] == [rec.step + 1 for rec in tr.steps]
        assert series["y"] == [len(rec.remasked or ()) + len(rec.edited or ()) for rec in tr.steps]
        assert sum(series["y"]) > 0 and series["yaxis"] == "y"


def test_steps_plot_says_where_a_verify_pass_ran(model):
    tr = decode(model, ["the cat "], DecodeConfig.preset("wino", 24))[0]
    series = valid(figures.steps_plot(tr))["data"][5]
    two = [h for rec, h in zip(tr.steps, series["customdata"]) if rec.forwards == 2]
    assert two and all("2 forwards" in h for h in two)


def test_revision_figures_are_pure_and_translated(remasked, edited):
    for tr in (remasked, edited):
        copy = Trace.from_json(tr.to_json())
        for fn in (figures.confidence_heatmap, figures.order_map, figures.steps_plot):
            assert fn(copy).to_json() == fn(tr).to_json()
            zh = json.loads(fn(tr, lang="zh").to_json())
            assert "taken back" not in json.dumps(zh, ensure_ascii=False)
