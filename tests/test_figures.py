"""figures.py: the Sweep tab's Plotly figures, valid plotly, showing the table's numbers.

The figures of a trace are drawn in the page from the trace: tests/test_figures_js.py.
"""
from __future__ import annotations

import json

import plotly.graph_objects as go

from dllm_viz.app.views import figures


def valid(fig: go.Figure) -> dict:
    """The figure's dict, after checking it against plotly's schema (figures skip validation when built)."""
    spec = json.loads(fig.to_json())
    go.Figure(spec)  # raises ValueError on any attribute plotly.js does not know
    return spec


def test_sweep_heatmap_has_one_panel_per_decay():
    table = {0.9: [[1.0, 2.0], [3.0, 4.0]], 0.95: [[5.0, 6.0], [7.0, 8.0]]}
    spec = valid(figures.sweep_heatmap(table, [0.5, 1.0], [4, 6], title="steps"))
    assert [d["z"] for d in spec["data"]] == [table[0.9], table[0.95]]
    assert spec["data"][0]["x"] == ["L/4", "L/6"] and spec["data"][0]["y"] == ["T=0.5", "T=1"]
    assert spec["data"][1]["xaxis"] == "x2"


def test_sweep_colour_range_is_fixed_when_given():
    table = {0.9: [[0.0, 0.01]]}
    spec = valid(figures.sweep_heatmap(table, [1.0], [4, 6], title="r", zrange=(0.0, 0.5)))
    assert (spec["data"][0]["zmin"], spec["data"][0]["zmax"]) == (0.0, 0.5)
    assert spec["data"][0]["text"] == [["0", "0.01"]]
