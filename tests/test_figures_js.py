"""The figures of a trace (app/web/figures.js), made by the page's renderer from the chunks the server sends.

Each figure is a plotly spec, a pure function of the trace: these tests read it back from chromium
(tests/renderer.py), check it against plotly's schema (the Python package's, the same plotly.js) and
against the trace's own numbers. The renderer's trace data itself is checked first against `Trace`:
what was confirmed when, the canvas at every step, each position's decisions, the ranks the schedule
used. The canvas and the inspector: tests/test_page_js.py.
"""
from __future__ import annotations

import math

import plotly.graph_objects as go
import pytest

from dllm_viz import DecodeConfig, decode, load_model
from dllm_viz.app.strings import t
from dllm_viz.app.views.markup import html_literal
from dllm_viz.app.views.palette import confidence_position, tint
from dllm_viz.core.analysis import events, piece
from dllm_viz.core.trace import Trace
from tests import renderer
from tests.ui_model import make_text_model


@pytest.fixture(scope="module")
def page():
    with renderer.opened() as page:
        yield page


@pytest.fixture(scope="module")
def model():
    return make_text_model()


@pytest.fixture(scope="module")
def trace(model) -> Trace:
    return decode(model, ["the cat "], DecodeConfig.preset("balanced", 32, seed=5))[0]


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


def valid(spec: dict) -> dict:
    go.Figure(spec)  # raises ValueError on any attribute plotly.js does not know
    return spec


def data_of(page, name: str = "d", keys: tuple[str, ...] = ()) -> dict:
    """Fields of the renderer's trace data `window[name]` (typed arrays as lists)."""
    return page.evaluate("""([n, keys]) => { const plain = (v) => (ArrayBuffer.isView(v) ? Array.from(v)
        : Array.isArray(v) ? v.map(plain) : v);
        return Object.fromEntries(keys.map((k) => [k, plain(window[n][k])])); }""",
                         [name, list(keys)])


# ----- the trace in the page --------------------------------------------------------------------------
@pytest.mark.parametrize("which", ["trace", "remasked", "edited"])
def test_the_pages_trace_is_the_trace(page, request, which):
    tr = request.getfixturevalue(which)
    renderer.load(page, tr)
    d = data_of(page, keys=("n", "G", "order", "k", "block", "pieces", "tok", "tint", "rank", "why"))
    pieces = d["pieces"]
    assert (d["n"], d["G"], d["k"], d["block"]) == (len(tr.steps), tr.config.gen_length, [r.k for r in tr.steps],
                                                   [r.block for r in tr.steps])
    assert d["order"] == tr.order and [pieces[i] for i in d["tok"]] == [piece(tr, i) for i in tr.token_ids]
    for s in range(-1, len(tr.steps)):  # the canvas after every step, as the trace says
        shown = page.evaluate("(s) => DV.dvCanvasAt(window.d, s)", s)
        assert [None if i is None else pieces[i] for i in shown] == [None if c is None else piece(tr, c)
                                                                     for c in tr.canvas_at(s)], s
    history = page.evaluate("() => window.d.events.map((evs) => evs.map((e) => [e[0], e[1], e[2], e[6]]))")
    kinds = {"confirm": "c", "edit": "e", "remask": "r"}
    for pos, evs in enumerate(events(tr)):
        assert history[pos] == [[e.step, kinds[e.kind], -1 if e.token is None else pieces.index(piece(tr, e.token)),
                                 -1 if e.before is None else pieces.index(piece(tr, e.before))] for e in evs], pos
    for s, rec in enumerate(tr.steps):  # the rank the schedule saw, in the step's block (ties: lower position)
        eligible = sorted((p for p in range(tr.config.gen_length) if p // tr.config.block_size == rec.block
                           and not math.isnan(rec.confidence[p])), key=lambda p: (-rec.confidence[p], p))
        assert [p for _, p in sorted((r, p) for p, r in enumerate(d["rank"][s]) if r)] == eligible, s
    last = {p: evs[-1] for p, evs in enumerate(events(tr)) if evs}
    assert d["tint"] == [tint(tr.steps[last[p].step].confidence[p] if last[p].kind == "confirm" else last[p].prob)
                         if p in last and last[p].kind != "remask" else "" for p in range(tr.config.gen_length)]


def test_a_threshold_trace_says_why_each_position_was_confirmed(page, model):
    tr = decode(model, ["the cat "], DecodeConfig(gen_length=16, schedule="threshold", threshold=0.5, seed=1))[0]
    renderer.load(page, tr)
    why = data_of(page, keys=("why",))["why"]
    conf = {p: rec.confidence[p] for rec in tr.steps for p in rec.selected}
    assert why == ["above" if conf[p] >= 0.5 else "floor" for p in range(16)]
    strict = decode(model, ["the cat "], tr.config.replace(threshold_strict=True))[0]
    renderer.load(page, strict)
    conf = {p: rec.confidence[p] for rec in strict.steps for p in rec.selected}
    assert data_of(page, keys=("why",))["why"] == ["above" if conf[p] > 0.5 else "floor" for p in range(16)]


# ----- the heatmap ------------------------------------------------------------------------------------
def test_heatmap_cells_are_the_schedule_confidence(page, trace):
    renderer.load(page, trace)
    spec = valid(renderer.figure(page, "heatmap"))
    heat, boxes = spec["data"]
    assert heat["y"] == list(range(1, len(trace.steps) + 1))
    for row, rec in zip(heat["z"], trace.steps):  # on the logit colour scale, gaps where confirmed
        assert row == [None if math.isnan(c) else round(confidence_position(c), 4) for c in rec.confidence]
    for row, rec in zip(heat["customdata"], trace.steps):  # hover shows the real confidence
        assert all(h.startswith(f"{c:.3f}") for h, c in zip(row, rec.confidence) if h)
        assert not any("raw" in h for h in row)  # the schedule ranked by raw confidence: said once
    assert heat["colorbar"]["ticktext"][0] == "0.01" and heat["colorbar"]["ticktext"][-1] == "0.99"
    assert sorted(boxes["x"]) == list(range(32))  # every position boxed once, at the step that confirmed it
    assert all(trace.order[x] + 1 == y for x, y in zip(boxes["x"], boxes["y"]))


def test_heatmap_title_names_polluted_confidence(page, model):
    tr = decode(model, ["a "], DecodeConfig(gen_length=8, temperature=2.0, confidence_from="tempered"))[0]
    renderer.load(page, tr)
    fig = valid(renderer.figure(page, "heatmap"))
    assert "tempered" in fig["layout"]["title"]["text"]
    shown = [(h, c, r) for rec in tr.steps for h, c, r in zip(fig["data"][0]["customdata"][rec.step], rec.confidence,
                                                              rec.raw) if h]
    assert shown and all(h.startswith(f"{c:.3f}") and h.endswith(f"(raw {r:.3f})") for h, c, r in shown)


def test_heatmap_of_a_cached_decode_with_drift_has_a_drift_view(page):
    config = DecodeConfig(gen_length=16, block_length=8, schedule="threshold", threshold=0.9, temperature=0.0,
                          cache="dual", cache_drift=True)
    (cached,) = decode(load_model("world"), ["Tom Lopez of"], config)
    renderer.load(page, cached)
    fig = valid(renderer.figure(page, "heatmap", "zh"))
    heat, boxes, drift = fig["data"]
    assert drift["visible"] is False and drift["name"] == "drift"
    buttons = fig["layout"]["updatemenus"][0]["buttons"]
    assert [b["label"] for b in buttons] == ["置信度", "缓存偏差"]
    assert [b["args"][0]["visible"] for b in buttons] == [[True, True, False], [False, True, True]]
    for rec, row in zip(cached.steps, drift["z"]):
        expected = [None if rec.exact_confidence is None or math.isnan(e) or math.isnan(c) else round(abs(c - e), 4)
                    for c, e in zip(rec.confidence, rec.exact_confidence or [math.nan] * 16)]
        assert row == pytest.approx(expected, abs=1e-9)
    assert any(v is not None for row in drift["z"] for v in row)
    renderer.load(page, decode(load_model("world"), ["Tom Lopez of"], config.replace(cache_drift=False))[0])
    plain = valid(renderer.figure(page, "heatmap"))
    assert len(plain["data"]) == 2 and "updatemenus" not in plain["layout"]


def test_compare_heatmaps_share_height_and_scale(page, model, trace):
    other = decode(model, ["the cat "], DecodeConfig(gen_length=32, schedule="threshold", threshold=0.9))[0]
    rows = max(len(trace.steps), len(other.steps))
    renderer.load(page, trace, "a")
    renderer.load(page, other, "b")
    a = valid(renderer.figure(page, "heatmap", names=("a",), rows=rows, side="side_a"))
    b = valid(renderer.figure(page, "heatmap", names=("b",), rows=rows, side="side_b"))
    assert a["layout"]["height"] == b["layout"]["height"]
    assert a["layout"]["yaxis"]["range"] == b["layout"]["yaxis"]["range"]
    assert (a["data"][0]["zmin"], a["data"][0]["zmax"]) == (b["data"][0]["zmin"], b["data"][0]["zmax"])
    assert a["layout"]["title"]["text"].startswith("A · ") and b["layout"]["title"]["text"].startswith("B · ")


def test_heatmap_marks_each_token_taken_back_or_rewritten_at_its_step(page, remasked, edited):
    for tr, kind, old_ids, new_ids in ((remasked, "remasked", "remasked_tokens", None),
                                       (edited, "edited", "edited_from", "edited_to")):
        renderer.load(page, tr)
        spec = valid(renderer.figure(page, "heatmap"))
        assert len(spec["data"]) == 3  # the heat, the confirmed boxes, one kind of revision
        marks = spec["data"][2]
        expect = [(p, rec.step + 1) for rec in tr.steps for p in getattr(rec, kind) or ()]
        assert sorted(zip(marks["x"], marks["y"])) == sorted(expect)
        rec = next(r for r in tr.steps if getattr(r, kind))  # the hover names the old token (and the new one)
        label = next(h for x, y, h in zip(marks["x"], marks["y"], marks["customdata"])
                     if (x, y) == (getattr(rec, kind)[0], rec.step + 1))
        assert repr(html_literal(piece(tr, getattr(rec, old_ids)[0]))) in label
        if new_ids:
            assert repr(html_literal(piece(tr, getattr(rec, new_ids)[0]))) in label
        assert "×" in spec["layout"]["title"]["text"]


def test_heatmap_of_a_rule_that_took_nothing_back_has_no_marks(page, model):
    tr = decode(model, ["a "], DecodeConfig(gen_length=8, revise="rcr", schedule="fixed_steps", steps=8))[0]
    assert not tr.revised
    renderer.load(page, tr)
    assert len(valid(renderer.figure(page, "heatmap"))["data"]) == 2


# ----- the order map -------------------------------------------------------------------------------------
def cell_text(piece_text: str) -> str:
    """An order-map cell's token: the piece clipped to 6 characters (5 and an ellipsis), then escaped."""
    return html_literal(piece_text if len(piece_text) <= 6 else piece_text[:5] + "…")


def test_order_map_cells_hold_the_confirmation_step(page, trace):
    renderer.load(page, trace)
    spec = valid(renderer.figure(page, "order"))
    z, text = spec["data"][0]["z"], spec["data"][0]["text"]
    assert len(z) == 4 and all(len(r) == 8 for r in z)
    for pos in range(32):
        r, c = divmod(pos, 8)
        assert z[r][c] == trace.order[pos] + 1
        assert text[r][c] == cell_text(piece(trace, trace.token_ids[pos]))
    assert not any("×" in cell for row in text for cell in row)
    assert spec["layout"]["title"]["text"] == "Unmasking order (colour = step confirmed)"


def test_order_map_counts_decisions_and_colours_the_last(page, remasked, edited):
    for tr in (remasked, edited):
        renderer.load(page, tr)
        heat = valid(renderer.figure(page, "order"))["data"][0]
        decisions = tr.decisions
        assert max(decisions) > 1
        for pos in range(tr.config.gen_length):
            r, c = divmod(pos, 8)
            assert heat["z"][r][c] == tr.order[pos] + 1  # the step it was LAST decided
            assert heat["text"][r][c].startswith(cell_text(piece(tr, tr.token_ids[pos])))  # the final token
            assert heat["text"][r][c].endswith(f"×{decisions[pos]}") == (decisions[pos] > 1)
            hist = tr.history[pos]  # the hover lists every decision (the earlier ones counted past eight)
            hover = heat["customdata"][r][c]
            assert hover.count("<br>") == 1 + min(len(hist), 8) - (len(hist) <= 8)
            assert f"{decisions[pos]}×" in hover


def test_a_revised_order_map_title_is_as_narrow_as_the_heatmap_title(page, remasked):
    renderer.load(page, remasked)
    for lang in ("en", "zh"):
        order = renderer.figure(page, "order", lang)["layout"]
        heat = renderer.figure(page, "heatmap", lang)["layout"]
        lines, widest = order["title"]["text"].split("<br>"), max(map(len, heat["title"]["text"].split("<br>")))
        assert len(lines) == 2 and max(map(len, lines)) <= widest, (lang, lines)
        assert order["margin"]["t"] >= heat["margin"]["t"]


# ----- the per-step figure ---------------------------------------------------------------------------------
def test_steps_plot_shows_k_temperature_and_confirmed_confidence(page, model):
    cfg = DecodeConfig(gen_length=24, top_k=6, temperature_stages=(1.2, 1.0, 0.7), seed=2)
    tr = decode(model, ["x "], cfg)[0]
    renderer.load(page, tr)
    bars, line, conf, rawp, mean = valid(renderer.figure(page, "steps"))["data"]
    assert bars["y"] == [rec.k for rec in tr.steps] and sum(bars["y"]) == 24
    assert line["y"] == [rec.temperature for rec in tr.steps] and line["y"][0] == 1.2 and line["y"][-1] == 0.7
    assert len(conf["y"]) == len(rawp["y"]) == 24
    drawn = [math.exp(lp) for rec in tr.steps for lp in rec.logprobs]
    assert rawp["y"] == [round(confidence_position(p), 4) for p in drawn]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_steps_plot_marks_where_a_fork_switched_knobs(page, model, trace, lang):
    from dllm_viz import fork

    renderer.load(page, trace)
    plain = valid(renderer.figure(page, "steps"))["layout"]
    assert not plain.get("shapes") and not plain.get("annotations")  # a decode: nothing marked
    forked = fork(model, fork(model, trace, 3, knobs={"temperature": 0.0}), 6, knobs={"top_k": 2})
    renderer.load(page, forked)
    layout = valid(renderer.figure(page, "steps", lang))["layout"]
    assert [(s["x0"], s["x1"], s["xref"]) for s in layout["shapes"]] == [(3.5, 3.5, "x2"), (6.5, 6.5, "x2")]
    marks = layout["annotations"]
    assert [m["text"] for m in marks] == [t("fk_mark", lang)] * 2
    knob = lambda k, new: t("fk_knob", lang, knob=k, new=new, old=repr(getattr(trace.config, k)))  # noqa: E731
    assert [m["hovertext"] for m in marks] == [t("fk_at", lang, s=3, what=knob("temperature", "0.0")),
                                               t("fk_at", lang, s=6, what=knob("top_k", "2"))]
    import json

    d = json.loads(forked.to_json())  # a trace file's own words in a fork point: text in the hover, never markup
    d["forks"][0]["knobs"], d["forks"][0]["was"] = {'<a href="x">k</a>': "<b>1</b>"}, {'<a href="x">k</a>': 0}
    renderer.load(page, Trace.from_json(json.dumps(d)))
    hover = valid(renderer.figure(page, "steps", lang))["layout"]["annotations"][0]["hovertext"]
    assert "<a " not in hover and "<b>" not in hover and "&lt;a href=&quot;x&quot;&gt;k&lt;/a&gt;" in hover


def test_steps_plot_adds_revisions_per_step_under_a_rule(page, remasked, edited, trace):
    renderer.load(page, trace)
    assert len(valid(renderer.figure(page, "steps"))["data"]) == 5  # no rule: the figure as it was
    for tr in (remasked, edited):
        renderer.load(page, tr)
        series = valid(renderer.figure(page, "steps"))["data"][5]
        assert series["x"] == [rec.step + 1 for rec in tr.steps]
        assert series["y"] == [len(rec.remasked or ()) + len(rec.edited or ()) for rec in tr.steps]
        assert sum(series["y"]) > 0 and series["yaxis"] == "y"


def test_steps_plot_says_where_a_verify_pass_ran(page, model):
    tr = decode(model, ["the cat "], DecodeConfig.preset("wino", 24))[0]
    renderer.load(page, tr)
    series = valid(renderer.figure(page, "steps"))["data"][5]
    two = [h for rec, h in zip(tr.steps, series["customdata"]) if rec.forwards == 2]
    assert two and all("2 forwards" in h for h in two)


# ----- Compare, the task curve, what every figure shares ---------------------------------------------------
def test_compare_orders_shades_each_differing_position(page, model, trace):
    from dllm_viz.core.analysis import divergence

    other = decode(model, ["the cat "], trace.config.replace(temperature=2.0, seed=9))[0]
    d = divergence(trace, other)
    renderer.load(page, trace, "a")
    renderer.load(page, other, "b")
    spec = valid(renderer.figure(page, "compare", names=("a", "b"),
                                 cmp={"first": d.first_step, "order": d.order_differs}))
    rects = [s for s in spec["layout"]["shapes"] if s["type"] == "rect"]  # a run of neighbours: one rectangle
    shaded = [p for s in rects for p in range(round(s["x0"] + 0.5), round(s["x1"] + 0.5))]
    assert sorted(shaded) == d.order_differs and d.order_differs
    assert len(rects) == 1 + sum(q - p > 1 for p, q in zip(d.order_differs, d.order_differs[1:]))
    assert spec["data"][0]["y"] == [o + 1 for o in trace.order] and spec["data"][1]["y"] == [o + 1 for o in other.order]
    assert [s["y0"] for s in spec["layout"]["shapes"] if s["type"] == "line"] == [d.first_step + 1]


def _points(*rows):
    return [{"value": v, "tpf": x, "rate": r, "lo": r - 0.1, "hi": min(1, r + 0.1)} for v, x, r in rows]


CURVES = {"model": _points((0.9, 1.0, 0.9), (0.5, 2.0, 0.5), (0.1, 4.0, 0.1)),
          "oracle": _points((0.9, 1.0, 1.0), (0.5, 1.5, 0.6), (0.1, 4.0, 0.2)), "revision": {}, "aup": [90.0, 100.0]}


def _task(page, tr: Trace, curves: dict | None, threshold: float = 0.7, rule: str = "none") -> None:
    renderer.load(page, tr)
    page.evaluate("([task, th, rule]) => Object.assign(window.d, {task, threshold: th, revise: rule})",
                  [None if curves is None else {"family": "shuffle", "curves": curves}, threshold, rule])


def test_the_task_curve_marks_where_the_threshold_puts_the_trace(page, trace):
    from dllm_viz.tasks.oracle import TaskOracle
    from tests.test_task_view import _trace

    real = _trace(TaskOracle(), "shuffle : b e a d =", schedule="threshold", threshold=0.7)
    renderer.load(page, real)
    assert page.evaluate("() => window.d.task.family") == "shuffle"  # the page has its family's curves
    valid(renderer.figure(page, "task"))
    _task(page, trace, CURVES)
    zh = valid(renderer.figure(page, "task", "zh"))
    markers = [d for d in zh["data"] if d["mode"] == "markers"]
    assert [(m["x"][0], round(m["y"][0], 6)) for m in markers] == [(1.5, 70.0), (1.25, 80.0)]
    assert "正确" in zh["layout"]["yaxis"]["title"]["text"]
    assert t("fig_task_aup", "zh", m="90", o="100") in zh["layout"]["title"]["text"]
    _task(page, trace, {**CURVES, "aup": [None, 100.0]})  # d3LLM's get_aup refused the model's curve: no score
    title = valid(renderer.figure(page, "task"))["layout"]["title"]["text"]
    assert t("fig_task_aup", "en", m=t("aup_refused", "en"), o="100") in title and "<br>" in title  # a line of its own
    _task(page, trace, None)
    empty = valid(renderer.figure(page, "task"))
    assert empty["data"] == [] and "tasks model" in empty["layout"]["annotations"][0]["text"]


def test_revision_curves_sit_beside_the_threshold_curves_and_mark_the_traces_rule(page, trace):
    """Each revision rule's threshold curve (the model's shown, the oracle's a legend click away); the
    markers follow the slider on the curve of the trace's own rule."""
    wino = _points((0.9, 0.5, 0.95), (0.5, 1.0, 0.7), (0.1, 2.0, 0.3))
    curves = {**CURVES, "revision": {"model": {"threshold_wino": wino}, "oracle": {"threshold_wino": wino}}}
    _task(page, trace, curves)
    plain = valid(renderer.figure(page, "task"))
    lines = [d for d in plain["data"] if d["mode"] == "lines+markers"]
    assert [d["name"] for d in lines] == ["tasks model", "exact oracle", "tasks model + WINO", "exact oracle + WINO"]
    assert lines[2]["visible"] is True and lines[3]["visible"] == "legendonly"
    assert lines[2]["x"] == [0.5, 1.0, 2.0] and lines[2]["y"] == pytest.approx([95.0, 70.0, 30.0])
    assert len([d for d in plain["data"] if d["mode"] == "markers"]) == 2  # no rule: the threshold markers only
    _task(page, trace, curves, rule="wino")
    own = valid(renderer.figure(page, "task"))
    markers = [(m["x"][0], round(m["y"][0], 6)) for m in own["data"] if m["mode"] == "markers"]
    assert markers[2:] == [pytest.approx((0.75, 82.5)), pytest.approx((0.75, 82.5))]  # halfway from 0.9 to 0.5
    assert [d for d in own["data"] if d.get("name") == "exact oracle + WINO"][0]["visible"] is True


@pytest.mark.parametrize("kind", ["heatmap", "order", "steps"])
def test_figures_are_pure_state_their_ranges_and_speak_the_pages_language(page, trace, kind):
    # The page maps a click to (step, position) and draws the cursor from these ranges and margins alone.
    renderer.load(page, trace, "a")
    renderer.load(page, Trace.from_json(trace.to_json()), "b")
    en, again, zh = (renderer.figure(page, kind, lang, names=(n,))
                     for n, lang in (("a", "en"), ("b", "en"), ("a", "zh")))
    assert en == again and en["layout"]["title"]["text"] != zh["layout"]["title"]["text"]
    n, G = len(trace.steps), trace.config.gen_length
    layout = en["layout"]
    assert all(layout[axis].get("automargin") is False for axis in layout if axis.startswith(("xaxis", "yaxis")))
    ranges = {"heatmap": ([-0.5, G - 0.5], [n + 0.5, 0.5]), "order": ([-0.5, 7.5], [3.5, -0.5]),
              "steps": ([0.5, n + 0.5], None)}[kind]
    assert layout["xaxis"]["range"] == ranges[0] and (ranges[1] is None or layout["yaxis"]["range"] == ranges[1])


def test_an_empty_generation_draws_without_error(page, model):
    renderer.load(page, decode(model, ["a"], DecodeConfig(gen_length=0))[0])
    for kind in ("heatmap", "order", "steps"):
        valid(renderer.figure(page, kind))


def test_a_hostile_vocabulary_is_text_in_every_figure(page, model):
    """Token texts are whatever a trace file's author wrote: in plotly labels (which read <b>, <a href>
    as markup) they arrive escaped, never as a tag."""
    import json

    from tests.test_markup import EVIL

    tr = decode(model, ["the cat "], DecodeConfig(gen_length=16, revise="remdm", remask_sigma="rescale", remask_eta=0.9,
                                                  schedule="fixed_steps", steps=8, seed=3))[0]
    d = json.loads(tr.to_json())
    d["vocab"] = {k: EVIL[i % len(EVIL)] for i, k in enumerate(d["vocab"])}
    evil = Trace.from_json(json.dumps(d))
    renderer.load(page, evil, "a")
    renderer.load(page, evil, "b")
    specs = [renderer.figure(page, k, names=("a",)) for k in ("heatmap", "order", "steps")]
    specs.append(renderer.figure(page, "compare", names=("a", "b"), cmp={"first": None, "order": []}))
    text = json.dumps([[t.get("customdata"), t.get("text")] for spec in specs for t in spec["data"]],
                      ensure_ascii=False)
    assert "<img" not in text and "<a " not in text and "<script" not in text.lower() and "&lt;" in text
    order = specs[1]["data"][0]  # a cell's token clipped before it is escaped: no entity cut in half
    for r, row in enumerate(order["text"]):
        for c, cell in enumerate(row):
            pos = r * 8 + c
            if pos < 16 and evil.order[pos] >= 0:
                assert cell.split("<br>")[0] == cell_text(piece(evil, evil.token_ids[pos]))
