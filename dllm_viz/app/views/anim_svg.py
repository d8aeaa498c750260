"""The animation as one SVG file (docs/fork_diff_export.md): each distinct shape of the scene written once, shown in the
frames that hold it by a discrete `visibility` animation that loops with the whole animation (SMIL, which
browsers play in an image element too). Text is the file's own (searchable, sharp at any zoom), in the fonts the
viewer has: the boxes were measured with the raster's (`anim_raster.Fonts`), so another font may spill a
little past them. Deterministic: the same scene gives the same text.
"""
from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

from dllm_viz.app.views.anim_raster import Fonts, fit
from dllm_viz.app.views.anim_scene import Box, Line, Poly, Scene, Shape, Text

FAMILY = "DejaVu Sans, WenQuanYi Micro Hei, Noto Sans CJK SC, sans-serif"


def _timeline(scene: Scene) -> tuple[dict[Shape, list[int]], list[int]]:
    """Each distinct shape (in the order first drawn) with the frames it is in; every frame's start (ms)."""
    where: dict[Shape, list[int]] = {}
    for i, shapes in enumerate(scene.frames):
        for s in shapes:
            frames = where.setdefault(s, [])
            if not frames or frames[-1] != i:
                frames.append(i)
    starts = [0]
    for ms in scene.durations[:-1]:
        starts.append(starts[-1] + ms)
    return where, starts


def _animate(parent: ET.Element, frames: list[int], starts: list[int], total: int, count: int) -> bool:
    """Give `parent` a `visibility` switched at the starts of the runs of `frames` (none when in every
    frame); whether it got one."""
    if len(frames) == count:
        return False
    shown = set(frames)
    times, values = [], []
    for i in range(count):
        v = "visible" if i in shown else "hidden"
        if not values or values[-1] != v:
            times.append(starts[i] / total)
            values.append(v)
    keys = ";".join(f"{x:.6f}".rstrip("0").rstrip(".") or "0" for x in times)
    ET.SubElement(parent, "animate", attributeName="visibility", calcMode="discrete", dur=f"{total}ms",
                  repeatCount="indefinite", keyTimes=keys, values=";".join(values))
    return True


def _element(s: Shape, fonts: Fonts) -> ET.Element:
    if isinstance(s, Box):
        el = ET.Element("rect", x=str(s.x0), y=str(s.y0), width=str(s.x1 - s.x0), height=str(s.y1 - s.y0),
                        fill=s.fill or "none")
        if s.outline:
            el.set("stroke", s.outline)
            el.set("stroke-width", str(s.width))
        if s.dashed:
            el.set("stroke-dasharray", "4 3")
        return el
    if isinstance(s, Text):
        font = fonts.font(s.text, s.small)
        ascent, _ = font.getmetrics()
        el = ET.Element("text", x=str(s.x), y=str(s.y + ascent), fill=s.fill)
        el.set("font-size", str(font.size))
        el.set("xml:space", "preserve")
        el.text = fit(font, s.text, s.clip)
        return el
    if isinstance(s, Line):
        el = ET.Element("line", x1=str(s.x0), y1=str(s.y0), x2=str(s.x1), y2=str(s.y1), stroke=s.fill)
        el.set("stroke-width", str(s.width))
        return el
    if isinstance(s, Poly):
        return ET.Element("polygon", points=" ".join(f"{x},{y}" for x, y in s.points), fill=s.fill or "none",
                          stroke=s.outline or "none")
    raise TypeError(f"unknown shape {s!r}")  # pragma: no cover - the scene makes only these


def svg(scene: Scene, fonts: Any, title: str = "dllm-viz") -> bytes:
    """The whole animation as SVG text (UTF-8)."""
    where, starts = _timeline(scene)
    total, count = sum(scene.durations), len(scene.frames)
    root = ET.Element("svg", xmlns="http://www.w3.org/2000/svg", width=str(scene.width), height=str(scene.height),
                      viewBox=f"0 0 {scene.width} {scene.height}")
    root.set("font-family", FAMILY)
    ET.SubElement(root, "title").text = title
    ET.SubElement(root, "rect", width=str(scene.width), height=str(scene.height), fill=scene.background)
    for shape, frames in where.items():
        el = _element(shape, fonts)
        if _animate(el, frames, starts, total, count) and frames[0] != 0:
            el.set("visibility", "hidden")
        root.append(el)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n"
