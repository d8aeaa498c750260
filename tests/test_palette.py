"""palette.py: the colour scales are the only colours, and confidence maps onto them on a logit scale."""
from __future__ import annotations

import math

import pytest

from dllm_viz.app.views import palette


def test_scale_colour_hits_the_stops_and_tints_differ():
    for x, colour in palette.CONFIDENCE_SCALE:
        assert palette.scale_color(palette.CONFIDENCE_SCALE, x) == colour
    assert palette.tint(0.05) != palette.tint(0.95)
    assert palette.scale_color(palette.CONFIDENCE_SCALE, math.nan) == palette.CONFIDENCE_SCALE[0][1]


def test_confidence_scale_is_logit_and_symmetric():
    pos = palette.confidence_position
    assert pos(0.5) == pytest.approx(0.5)
    assert pos(0.01) == 0.0 and pos(0.001) == 0.0 and pos(0.99) == 1.0 and pos(1.0) == 1.0
    assert pos(0.1) == pytest.approx(1 - pos(0.9))
    assert all(pos(a) < pos(b) for a, b in zip(palette.CONFIDENCE_TICKS, palette.CONFIDENCE_TICKS[1:]))
    assert math.isnan(pos(math.nan))
    # A small model's typical range still spans distinct tints.
    assert len({palette.tint(c) for c in (0.03, 0.06, 0.12, 0.25)}) == 4


def test_page_css_uses_only_palette_colours():
    import re

    colours = set(re.findall(r"#[0-9a-fA-F]{6}\b", palette.PAGE_CSS))
    assert colours <= set(palette.PALETTE.values())
