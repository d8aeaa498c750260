"""Plotly figures of a decode, pure functions of a `Trace` (no model calls).

Steps are shown 1-based (step 1 = the first forward pass); colours come from `palette`, so the
canvas tints and the figures agree; the trace is read through `core.analysis`. The playground's
figures state their axis ranges: page.js maps a step or a position to pixels with them to draw the
shared cursor, and maps a click back to a cell.

Figures are built as plain dicts and wrapped with `go.Figure(..., _validate=False)`: plotly's
per-property validation cost about 60 ms per figure on the target CPU, a quarter of the budget
from slider release to updated figures; the dicts below use only documented plotly.js attributes.

Each figure declares margins wide enough for its colour bar, tick labels and legend (measured in
chromium at 700 px and at the page's 390 px columns, both languages; `tests/test_browser.py` checks
that none grows). Gradio lets plotly grow a margin that is too small, but the growth costs a second
full draw in the browser: a 64-position heatmap drawn from scratch in about 30 ms instead of
65-110 ms (plotly.js in chromium, the same figure with and without room for its colour bar).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go

from dllm_viz.app.views import figures_revision
from dllm_viz.app.strings import t
from dllm_viz.app.views.markup import html_literal
from dllm_viz.app.views.palette import (
    CONFIDENCE_SCALE,
    CONFIDENCE_TICKS,
    DRIFT_SCALE,
    ORDER_SCALE,
    PALETTE,
    confidence_position,
    plotly_scale,
)
from dllm_viz.app.views.task import on_curve
from dllm_viz.studies.curves import REVISION_KNOBS
from dllm_viz.core.analysis import confirmations, divergence, events, piece
from dllm_viz.core.trace import Trace

FONT = "Inter, ui-sans-serif, system-ui, -apple-system, Segoe UI, sans-serif"
GRID = "#eef0f4"
_AXIS = {"gridcolor": GRID, "zerolinecolor": GRID, "linecolor": "#d1d5db", "ticks": "", "automargin": True}
TEMPLATE: dict[str, Any] = {  # our light theme; replaces plotly's default template
    "layout": {
        "paper_bgcolor": PALETTE["card"],
        "plot_bgcolor": PALETTE["card"],
        "font": {"family": FONT, "size": 12, "color": PALETTE["text"]},
        "xaxis": _AXIS,
        "yaxis": _AXIS,
        "hoverlabel": {"font": {"family": "ui-monospace, monospace"}},
        "colorway": [PALETTE["side_a"], PALETTE["side_b"], PALETTE["accent"], PALETTE["k"]],
    }
}


def _figure(data: list[dict[str, Any]], title: str, height: int, **layout: Any) -> go.Figure:
    base = {
        "template": TEMPLATE,
        "title": {"text": title, "font": {"size": 14}, "x": 0.01, "xanchor": "left"},
        "height": height,
        "dragmode": False,  # a click selects a cell (page.js); no zoom box to get lost in
        "margin": {"l": 50, "r": 20, "t": 44, "b": 44},
        # Legends sit under the x axis title, so they never cover the figure title.
        "legend": {"orientation": "h", "yanchor": "top", "y": -0.28, "xanchor": "left", "x": 0},
    }
    return go.Figure({"data": data, "layout": {**base, **layout}}, _validate=False)


LABEL_CHARS = 24  # a token's text in a hover label, clipped: the figures repeat it in every cell


def _piece(trace: Trace, token_id: int) -> str:
    """`analysis.piece`, clipped to LABEL_CHARS (never a whole long token text copied per cell) and
    escaped: plotly.js reads `<b>`, `<a href>` and friends in labels as markup, and a trace's
    vocabulary is whatever its author wrote."""
    text = piece(trace, token_id)
    return html_literal(text if len(text) <= LABEL_CHARS else text[: LABEL_CHARS - 1] + "…")


def _axis(title: str, **extra: Any) -> dict[str, Any]:
    return {"title": {"text": title}, **extra}


def _colorbar(title: str, **extra: Any) -> dict[str, Any]:
    return {"title": {"text": title, "side": "right"}, "thickness": 12, "len": 0.9, **extra}


def _scaled(row: Sequence[float]) -> list[float | None]:
    """Confidences as positions on the colour scale (logit, see render.confidence_position); NaN -> gap.

    Four decimals: 1e-4 of the scale is far below a colour step, and a 240-step trace's heatmap
    is sent to (and copied inside) the browser on every event, so its size is latency.
    """
    return [None if math.isnan(v) else round(confidence_position(v), 4) for v in row]


# Tick marks that label the scaled confidence axes and colour bars with the real confidences.
CONFIDENCE_AXIS = {
    "tickvals": [round(confidence_position(c), 6) for c in CONFIDENCE_TICKS],
    "ticktext": [f"{c:g}" for c in CONFIDENCE_TICKS],
}


def _titled(title: str, side: str | None, lang: str) -> str:
    """A figure's title, its line breaks as Plotly writes them (a phone's 390 px fits short lines only)."""
    return (f"{t(side, lang)} · {title}" if side else title).replace("\n", "<br>")


def confidence_heatmap(trace: Trace, *, lang: str = "en", rows: int | None = None, side: str | None = None) -> go.Figure:
    """Step x position heatmap of the confidence the schedule ranked by; confirmed cells boxed.

    Empty cells are positions already confirmed. Hover shows the argmax guess and its raw
    confidence; the boxes are the positions confirmed at that step, with the token drawn. Under a
    revision rule, × marks a token taken back at that step and ◇ one rewritten (`figures_revision`).
    `rows` (>= the step count) gives two heatmaps of a comparison the same height and scale;
    `side` ("side_a" / "side_b") labels it.
    """
    G, n = trace.config.gen_length, len(trace.steps)
    rows = max(n, rows or 0, 1)
    polluted = trace.config.confidence_from != "raw"  # only then does the raw confidence differ
    hover = [
        [
            f"{c:.3f} · argmax {_piece(trace, a)!r}" + (f" (raw {r:.3f})" if polluted else "")
            if a >= 0 and not math.isnan(c) else ""
            for c, r, a in zip(rec.confidence, rec.raw, rec.argmax)
        ]
        for rec in trace.steps
    ]
    where = f"{t('axis_step', lang)} %{{y}} · {t('axis_position', lang)} %{{x}}<br>"
    heat = {
        "type": "heatmap", "name": "confidence",
        "z": [_scaled(rec.confidence) for rec in trace.steps],  # (n, G) on the logit colour scale
        "x": list(range(G)), "y": list(range(1, n + 1)), "customdata": hover,
        "zmin": 0, "zmax": 1, "colorscale": plotly_scale(CONFIDENCE_SCALE), "xgap": 1, "ygap": 1,
        "hoverongaps": False, "colorbar": _colorbar(t("axis_confidence", lang), **CONFIDENCE_AXIS),
        "hovertemplate": where + "%{customdata}<extra></extra>",
    }
    xs, ys, labels = [], [], []
    for rec in trace.steps:
        for pos, tok, lp in zip(rec.selected, rec.tokens, rec.logprobs):
            xs.append(pos)
            ys.append(rec.step + 1)
            labels.append(f"{_piece(trace, tok)!r} · raw p {math.exp(lp):.3f}")
    boxes = {
        "type": "scatter", "mode": "markers", "x": xs, "y": ys, "customdata": labels,
        "name": t("confirmed_marker", lang), "showlegend": False,
        "marker": {"symbol": "square-open", "size": max(4, min(12, 520 // max(G, 1))),
                   "color": PALETTE["accent"], "line": {"width": 2}},
        "hovertemplate": where + t("confirmed_marker", lang) + " %{customdata}<extra></extra>",
    }
    if trace.config.confidence_from == "raw":
        title = t("fig_heatmap", lang)
    else:
        title = t("fig_heatmap_polluted", lang, src=trace.config.confidence_from)
    marks = []
    if trace.config.revise != "none":
        marks = figures_revision.heatmap_marks(trace, lang, where)
        title += " · " + t("rv_heatmap_key", lang)
    data, extra = [heat, boxes, *marks], {}
    drift = _drift_layer(trace, where, lang)
    if drift is not None:  # a cached decode with the drift diagnostic: a second view of the same cells
        data.append(drift)
        kept = [True] * len(marks)  # the boxes and the revision marks show in both views
        views = [("heat_confidence", [True, True, *kept, False]), ("heat_drift", [False, True, *kept, True])]
        extra["updatemenus"] = [{
            "type": "buttons", "direction": "right", "showactive": True, "x": 1.0, "xanchor": "right",
            "y": 1.0, "yanchor": "bottom", "pad": {"b": 4}, "font": {"size": 11},
            "buttons": [{"label": t(key, lang), "method": "restyle", "args": [{"visible": shown}]} for key, shown in views],
        }]
    return _figure(
        data, _titled(title, side, lang), height=max(256, min(476, 106 + 16 * rows)),
        margin={"l": 50, "r": 108, "t": 60, "b": 44},  # t: a title of two lines; r: the colour bar with its title
        xaxis=_axis(t("axis_position", lang), range=[-0.5, G - 0.5], showgrid=False),
        yaxis=_axis(t("axis_step", lang), range=[rows + 0.5, 0.5], dtick=max(1, rows // 8)), **extra,
    )


def _drift_layer(trace: Trace, where: str, lang: str) -> dict[str, Any] | None:
    """The heatmap's drift view (issue 31): at each cached step checked against the exact forward,
    |confidence - exact confidence| per cell; None when no step was checked."""
    if not any(rec.exact_confidence is not None for rec in trace.steps):
        return None
    z, hover = [], []
    for rec in trace.steps:
        exact = rec.exact_confidence or [math.nan] * len(rec.confidence)
        z.append([None if math.isnan(e) or math.isnan(c) else round(abs(c - e), 4)
                  for c, e in zip(rec.confidence, exact)])
        hover.append(["" if math.isnan(e) or math.isnan(c) else t("tip_drift", lang, c=f"{c:.3f}", e=f"{e:.3f}")
                      for c, e in zip(rec.confidence, exact)])
    top = max((v for row in z for v in row if v is not None), default=0.0)
    return {
        "type": "heatmap", "name": "drift", "visible": False, "z": z, "customdata": hover,
        "x": list(range(trace.config.gen_length)), "y": list(range(1, len(trace.steps) + 1)),
        "zmin": 0, "zmax": max(top, 1e-3), "colorscale": plotly_scale(DRIFT_SCALE), "xgap": 1, "ygap": 1,
        "hoverongaps": False, "colorbar": _colorbar(t("axis_drift", lang)),
        "hovertemplate": where + "%{customdata}<extra></extra>",
    }


def order_width(gen_length: int) -> int:
    """Cells per row of the unmasking-order map: 8, or 16 past 96 positions."""
    return 8 if gen_length <= 96 else 16


def order_map(trace: Trace, *, lang: str = "en", width: int | None = None) -> go.Figure:
    """The generated span laid out in rows of `width` (see `order_width`); each cell coloured
    by the step that last decided it (`Trace.order`: confirmed, or rewritten by a revision rule)
    and labelled with its final token. Under a revision rule a cell decided n > 1 times says ×n,
    and its hover lists the position's history (`figures_revision.history_label`)."""
    G, n = trace.config.gen_length, max(1, len(trace.steps))
    width = width or order_width(G)
    rows = max(1, math.ceil(G / width))
    z: list[list[int | None]] = [[None] * width for _ in range(rows)]
    text = [[""] * width for _ in range(rows)]
    hover = [[""] * width for _ in range(rows)]
    revising = trace.config.revise != "none"
    history = events(trace) if revising else None
    for pos, conf in enumerate(confirmations(trace)):
        if conf is None:
            continue
        r, c = divmod(pos, width)
        tok = _piece(trace, trace.token_ids[pos])
        z[r][c] = trace.order[pos] + 1
        text[r][c] = tok if len(tok) <= 6 else tok[:5] + "…"
        hover[r][c] = (f"{t('axis_position', lang)} {pos} · {t('axis_step', lang)} {trace.order[pos] + 1}"
                       f"<br>{tok!r} · {conf.confidence:.3f}")
        if history is not None:
            decided = sum(e.kind != "remask" for e in history[pos])
            if decided > 1:
                text[r][c] += f"<br>×{decided}"
            hover[r][c] = (f"{t('axis_position', lang)} {pos} · {t('rv_decided', lang, n=decided)}<br>"
                           + figures_revision.history_label(trace, history[pos], lang))
    heat = {
        "type": "heatmap", "z": z, "text": text, "customdata": hover, "texttemplate": "%{text}",
        "textfont": {"size": 11}, "colorscale": plotly_scale(ORDER_SCALE), "zmin": 1, "zmax": n,
        "xgap": 2, "ygap": 2, "hoverongaps": False, "colorbar": _colorbar(t("axis_step", lang)),
        "hovertemplate": "%{customdata}<extra></extra>",
    }
    return _figure(
        [heat], _titled(t("fig_order_revised" if revising else "fig_order", lang), None, lang),
        height=max(180, min(420, (96 + 40 * rows) if revising else (80 + 34 * rows))),  # 96: a title of two lines
        margin={"l": 50, "r": 88, "t": 60 if revising else 44, "b": 44},  # t: the revised title's two lines
        xaxis={"showticklabels": False, "showgrid": False, "zeroline": False, "range": [-0.5, width - 0.5]},
        yaxis=_axis(t("axis_position", lang), range=[rows - 0.5, -0.5], showgrid=False,
                    tickvals=list(range(rows)), ticktext=[str(r * width) for r in range(rows)]),
    )


def steps_plot(trace: Trace, *, lang: str = "en", side: str | None = None) -> go.Figure:
    """Two panels over the steps. Top: positions confirmed (k, bars) and the temperature in force
    (line). Bottom: each confirmed token's confidence as the schedule saw it (dots) and the raw
    probability of the token actually drawn (crosses), with the per-step mean.

    The two bottom series agree at temperature 0 with raw max-prob confidence; a gap shows
    sampling at work, and a low raw p under a high schedule confidence is the "lock-in" of the
    article's wrong variants. Under a revision rule the top panel adds the tokens each step took
    back or rewrote (`figures_revision.revisions_series`), on the k axis.
    """
    steps = [rec.step + 1 for rec in trace.steps]
    temps = [rec.temperature for rec in trace.steps]
    step = t("axis_step", lang)
    xs, conf, rawp, labels, means = [], [], [], [], []
    for rec in trace.steps:
        vals = [rec.confidence[p] for p in rec.selected]
        for pos, tok, lp in zip(rec.selected, rec.tokens, rec.logprobs):
            xs.append(rec.step + 1)
            conf.append(rec.confidence[pos])
            rawp.append(math.exp(lp))
            labels.append(f"{t('axis_position', lang)} {pos} · {_piece(trace, tok)!r}")
        means.append(sum(vals) / len(vals) if vals else None)
    # The lower panel uses the heatmap's logit scale; hover shows the real values.
    conf_hover = [f"{lab}<br>{t('schedule_conf', lang)} {c:.3f}" for lab, c in zip(labels, conf)]
    rawp_hover = [f"{lab}<br>{t('raw_token_p', lang)} {p:.3g}" for lab, p in zip(labels, rawp)]
    mean_hover = [f"{t('mean', lang)} {m:.3f}" if m is not None else "" for m in means]
    conf, rawp = _scaled(conf), _scaled(rawp)
    means = [None if m is None else round(confidence_position(m), 6) for m in means]
    hover = "%{customdata}<extra></extra>"
    data = [
        {"type": "bar", "x": steps, "y": [rec.k for rec in trace.steps], "name": "k", "xaxis": "x", "yaxis": "y",
         "marker": {"color": PALETTE["k"]}, "hovertemplate": f"{step} %{{x}} · k = %{{y}}<extra></extra>"},
        {"type": "scatter", "x": steps, "y": temps, "xaxis": "x", "yaxis": "y2", "name": t("axis_temperature", lang),
         "mode": "lines+markers", "line": {"color": PALETTE["temperature"], "width": 2, "shape": "hv"},
         "hovertemplate": f"{step} %{{x}} · T = %{{y}}<extra></extra>"},
        {"type": "scatter", "mode": "markers", "x": xs, "y": conf, "customdata": conf_hover, "xaxis": "x2", "yaxis": "y3",
         "name": t("schedule_conf", lang), "hovertemplate": hover,
         "marker": {"color": PALETTE["raw"], "size": 7, "opacity": 0.75}},
        {"type": "scatter", "mode": "markers", "x": xs, "y": rawp, "customdata": rawp_hover, "xaxis": "x2", "yaxis": "y3",
         "name": t("raw_token_p", lang), "hovertemplate": hover,
         "marker": {"color": PALETTE["tempered"], "size": 6, "symbol": "x", "opacity": 0.9,
                    "line": {"color": PALETTE["temperature"], "width": 1}}},
        {"type": "scatter", "mode": "lines", "x": steps, "y": means, "xaxis": "x2", "yaxis": "y3",
         "name": t("mean", lang), "line": {"color": PALETTE["accent"], "width": 2}, "customdata": mean_hover,
         "hovertemplate": hover},
    ]
    if trace.config.revise != "none":
        data.append(figures_revision.revisions_series(trace, lang))
    span = [0.5, max(1, len(steps)) + 0.5]
    return _figure(
        data, _titled(t("fig_steps", lang), side, lang), height=520,
        margin={"l": 56, "r": 50, "t": 44, "b": 176},  # b: its legend wraps to 3 lines in a 390 px column
        xaxis={"anchor": "y", "matches": "x2", "showticklabels": False, "range": span, **_AXIS},
        yaxis=_axis(t("axis_k", lang), domain=[0.56, 1.0], rangemode="tozero"),
        yaxis2=_axis(t("axis_temperature", lang), overlaying="y", side="right", showgrid=False,
                     range=[0, 1.15 * max(temps + [1.0])]),
        xaxis2=_axis(step, anchor="y3", range=span),
        yaxis3=_axis(t("axis_confidence", lang), domain=[0.0, 0.44], range=[-0.03, 1.03], **CONFIDENCE_AXIS),
        legend={"orientation": "h", "yanchor": "top", "y": -0.16, "xanchor": "left", "x": 0},
    )


def compare_orders(a: Trace, b: Trace, *, lang: str = "en") -> go.Figure:
    """Confirmation step per position for A and B; positions where they differ shaded."""
    d = divergence(a, b)
    G = a.config.gen_length
    where = f"{t('axis_position', lang)} %{{x}} · {t('axis_step', lang)} %{{y}} · %{{customdata}}"
    data = [
        {"type": "scatter", "mode": "markers", "x": list(range(G)), "y": [o + 1 for o in trace.order],
         "name": t(side, lang), "customdata": [_piece(trace, i) for i in trace.token_ids],
         "marker": {"color": PALETTE[side], "symbol": symbol, "size": 8, "opacity": 0.85},
         "hovertemplate": where + "<extra>%{fullData.name}</extra>"}
        for side, trace, symbol in (("side_a", a, "circle"), ("side_b", b, "x"))
    ]
    shapes = [
        {"type": "rect", "xref": "x", "yref": "paper", "x0": p - 0.5, "x1": p + 0.5, "y0": 0, "y1": 1,
         "fillcolor": PALETTE["diverge"], "opacity": 0.10, "line": {"width": 0}, "layer": "below"}
        for p in d.order_differs
    ]
    annotations = []
    if d.first_step is not None:
        y = d.first_step + 1
        shapes.append({"type": "line", "xref": "paper", "yref": "y", "x0": 0, "x1": 1, "y0": y, "y1": y,
                       "line": {"color": PALETTE["diverge"], "dash": "dash", "width": 1.5}})
        annotations.append({"xref": "paper", "yref": "y", "x": 0, "y": y, "xanchor": "left", "yanchor": "bottom",
                            "showarrow": False, "text": f"{t('axis_step', lang)} {y}",
                            "font": {"color": PALETTE["diverge"]}})
    return _figure(
        data, t("fig_compare", lang), height=320, shapes=shapes, annotations=annotations,
        margin={"l": 50, "r": 20, "t": 44, "b": 96},
        xaxis=_axis(t("axis_position", lang), range=[-0.5, G - 0.5]),
        yaxis=_axis(t("axis_step", lang), autorange="reversed"),
    )


def sweep_heatmap(
    table: dict[float, list[list[float]]],
    temperatures: Sequence[float],
    divisors: Sequence[int],
    *,
    title: str,
    lang: str = "en",
    reverse: bool = False,
    zrange: tuple[float, float] | None = None,
) -> go.Figure:
    """One heatmap per decay, side by side: rows temperature, columns initial top_k = L / d.

    `table[decay][i][j]` is the value at temperatures[i], divisors[j]; `reverse` flips the colour
    scale for metrics where lower is better (repetition), so the cool end always means "better".
    `zrange` fixes the colour scale (the sweep passes one per metric, so 0.00 against 0.01 stays
    one colour instead of the two ends of an auto-scaled range); None scales to the values.
    """
    decays = list(table)
    cols = max(1, len(decays))
    gap = 0.04
    w = (1 - gap * (cols - 1)) / cols
    values = [v for d in decays for row in table[d] for v in row if v is not None and not math.isnan(v)]
    lo, hi = zrange if zrange is not None else ((min(values), max(values)) if values else (0.0, 1.0))
    scale = plotly_scale(CONFIDENCE_SCALE)
    if reverse:
        scale = [[round(1 - x, 6), c] for x, c in reversed(scale)]
    x = [f"L/{d}" for d in divisors]
    y = [f"T={v:g}" for v in temperatures]
    data, layout, annotations = [], {}, []
    for i, d in enumerate(decays):
        suffix = "" if i == 0 else str(i + 1)
        data.append({
            "type": "heatmap", "z": table[d], "x": x, "y": y, "xaxis": f"x{suffix}", "yaxis": "y",
            "zmin": lo, "zmax": hi if hi > lo else lo + 1, "colorscale": scale, "xgap": 2, "ygap": 2,
            "text": [[f"{v:.3g}" for v in row] for row in table[d]], "texttemplate": "%{text}",
            "showscale": i == cols - 1, "colorbar": {"thickness": 12, "len": 0.9},
            "hovertemplate": "%{y} · top_k %{x}<br>%{z:.3f}<extra></extra>",
        })
        x0 = i * (w + gap)
        layout[f"xaxis{suffix}"] = _axis(t("top_k", lang), domain=[x0, x0 + w], anchor="y")
        annotations.append({"xref": "paper", "yref": "paper", "x": x0 + w / 2, "y": 1.0, "yanchor": "bottom",
                            "showarrow": False, "text": f"{t('decay', lang)} {d:g}"})
    return _figure(data, title, height=max(220, 100 + 36 * len(temperatures)), annotations=annotations,
                   yaxis={"autorange": "reversed"}, margin={"l": 60, "r": 80, "t": 64, "b": 44}, **layout)


def task_curve(curves: dict[str, Any], family: str | None, threshold: float, *, lang: str = "en",
               rule: str = "none") -> go.Figure:
    """Right answers against tokens per forward on the measured threshold curves of ``family`` (the tasks
    model solid, the exact oracle dashed; `bench/parallel_tasks.py`), each with a marker where the
    threshold slider's value puts it (`task_view.on_curve`). Beside them the threshold with each revision
    rule (`studies.curves.REVISION_KNOBS`: the model's dotted, the oracle's in the legend, a click away);
    the trace's own `rule` gets markers too. Without a family or measurements: a note."""
    fam = (curves.get("families") or {}).get(family or "")
    if fam is None:
        return _figure([], t("fig_task_curve", lang), height=260, annotations=[
            {"text": t("task_curve_none", lang), "showarrow": False, "x": 0.5, "y": 0.5, "xref": "paper",
             "yref": "paper"}], xaxis={"visible": False}, yaxis={"visible": False})
    data = []

    def curve(pts: list[dict[str, Any]], name: str, line: dict[str, Any], marked: bool, **extra: Any) -> None:
        pts = sorted(pts, key=lambda p: p["tpf"])
        data.append({"type": "scatter", "mode": "lines+markers", "x": [p["tpf"] for p in pts],
                     "y": [100 * p["rate"] for p in pts], "name": name, "line": line,
                     "customdata": [p["value"] for p in pts],
                     "hovertemplate": f"{name} · {t('threshold', lang)} %{{customdata}}: %{{y:.0f}}%<extra></extra>",
                     "error_y": {"type": "data", "symmetric": False, "thickness": 1, "width": 3,
                                 "array": [100 * (p["hi"] - p["rate"]) for p in pts],
                                 "arrayminus": [100 * (p["rate"] - p["lo"]) for p in pts]}, **extra})
        if marked:
            x, y = on_curve(pts, threshold)
            data.append({"type": "scatter", "mode": "markers", "x": [x], "y": [y], "showlegend": False,
                         "marker": {"color": line["color"], "size": 14, "symbol": "circle-open", "line": {"width": 3}},
                         "hovertemplate": f"{t('threshold', lang)} {threshold:g}: %{{x:.2f}}, %{{y:.0f}}%<extra></extra>"})

    for decoder, name, colour, dash in (("model", t("task_model", lang), PALETTE["side_a"], "solid"),
                                        ("oracle", t("task_oracle", lang), PALETTE["side_b"], "dash")):
        curve(fam[decoder]["threshold"], name, {"color": colour, "dash": dash}, True)
    revision = fam.get("revision") or {}
    for knob, colour in zip(REVISION_KNOBS, (PALETTE["edit"], PALETTE["remask"], PALETTE["accent"])):
        own = f"threshold_{rule}" == knob
        for decoder, dash, shown in (("model", "dot", True), ("oracle", "dashdot", "legendonly")):
            if knob in revision.get(decoder, {}):
                name = t(f"task_{decoder}", lang) + " + " + t(f"rv_rule_{knob.removeprefix('threshold_')}", lang)
                curve(revision[decoder][knob], name, {"color": colour, "dash": dash, "width": 1.5}, own,
                      visible=True if own else shown)
    aup = fam["aup"]
    aups = t("fig_task_aup", lang, m=f"{aup['model']['threshold']:.0f}", o=f"{aup['oracle']['threshold']:.0f}")
    return _figure(data, f"{t('fig_task_curve', lang)} · {family}<br>{aups}", height=380 if revision else 340,
                   margin={"l": 56, "r": 20, "t": 64, "b": 136 if revision else 96},
                   xaxis=_axis(t("axis_tpf", lang), rangemode="tozero"),
                   yaxis=_axis(t("axis_right", lang), range=[-5, 105]))
