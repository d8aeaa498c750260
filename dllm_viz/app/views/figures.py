"""The Sweep tab's Plotly figures: heatmaps of a measured grid (no model calls).

The figures of a trace (the heatmap, the order map, the per-step figure, Compare's and the task
curve) are drawn in the page from the trace itself (`app/web/figures.js`); these are the sweep's
tables, computed on the server from many traces. Figures are built as plain dicts and wrapped with
`go.Figure(..., _validate=False)`: plotly's per-property validation cost about 60 ms per figure on
the target CPU; the dicts below use only documented plotly.js attributes.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go

from dllm_viz.app.strings import t
from dllm_viz.app.views.palette import CONFIDENCE_SCALE, PALETTE, plotly_scale

FONT = "Inter, ui-sans-serif, system-ui, -apple-system, Segoe UI, sans-serif"
GRID = "#eef0f4"
_AXIS = {"gridcolor": GRID, "zerolinecolor": GRID, "linecolor": "#d1d5db", "ticks": "", "automargin": True}
TEMPLATE: dict[str, Any] = {  # our light theme; replaces plotly's default template (web/figures.js: the same)
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
        "dragmode": False,
        "margin": {"l": 50, "r": 20, "t": 44, "b": 44},
        "legend": {"orientation": "h", "yanchor": "top", "y": -0.28, "xanchor": "left", "x": 0},
    }
    return go.Figure({"data": data, "layout": {**base, **layout}}, _validate=False)


def _axis(title: str, **extra: Any) -> dict[str, Any]:
    return {"title": {"text": title}, **extra}


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
