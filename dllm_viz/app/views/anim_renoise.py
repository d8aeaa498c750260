"""A renoising trace's canvas, frame by frame, as shapes: what the animation export encodes for a canvas that is
never masked (docs/renoise.md, "Views"; the masked canvas's frames are `anim_scene`'s).

Frame f (0 <= f <= steps) is what step f + 1 reads, the last frame the output, as the page's player shows it
(`web/canvas.js` `paintRenoise`, states from `views.renoise.frames`): noise in a dashed box in faint italics, an
accepted proposal in a box outlined in the accent colour (thicker at the step that accepted it), a final token
plain, a canvas not begun as an empty dashed box, a position renoised after holding an accepted token framed in
red; above, the step counter and what the step accepted, in the chosen language; below, the key. As for a
masked trace, every position keeps one box width over the whole animation.
"""
from __future__ import annotations

from typing import Any

from dllm_viz.app.strings import t
from dllm_viz.app.views import renoise as renoise_view
from dllm_viz.app.views.anim_scene import (WHITE, AnimationSpec, Box, Layout, Measure, Scene, Shape, Text, mix,
                                           status)
from dllm_viz.app.views.palette import PALETTE
from dllm_viz.core.analysis import piece
from dllm_viz.core.trace import Trace

EMPTY_TEXT = "▢"  # a position of a canvas not begun (the page's)


def _text(trace: Trace, token: int | None) -> str:
    return EMPTY_TEXT if token is None else piece(trace, token)


def _frame(trace: Trace, spec: AnimationSpec, lay: Layout, f: int, frame: dict[str, Any],
           key: list[Shape]) -> list[Shape]:
    """Frame f's shapes: the status line, the prompt, every position, the key (the same in every frame)."""
    c, th = PALETTE, round(spec.font_size * 1.5)  # a token box's height
    out: list[Shape] = []
    fresh = 0
    for p, cell in enumerate(lay.cells):
        state, text = frame["state"][p], _text(trace, frame["token"][p])
        x0, y0, x1, y1 = cell.x, cell.y, cell.x + cell.w, cell.y + th
        if state in (renoise_view.EMPTY, renoise_view.NOISE):  # the page's dv-mask: dashed, faint
            lost = p in frame["lost"]
            out.append(Box(x0, y0, x1, y1, c["mask_bg"], c["remask"] if lost else c["mask_border"],
                           2 if lost else 1, dashed=not lost))
            out.append(Text(x0 + 3, y0 + 2, text, mix(c["ghost"], 0.75, c["mask_bg"]), clip=cell.w - 6))
            continue
        if state == renoise_view.ACCEPTED:
            out.append(Box(x0, y0, x1, y1, c["mask_bg"], c["accent"]))
            if frame["since"][p] == f - 1:  # accepted at the step before this frame: outlined, as a new token
                fresh += 1
                out.append(Box(x0 - 1, y0 - 1, x1 + 1, y1 + 1, None, c["accent"], 2))
            out.append(Text(x0 + 3, y0 + 2, text, c["text"], clip=cell.w - 6))
            continue
        faded = trace.text_end is not None and p >= trace.text_end  # final: plain, the end padding faded
        out.append(Text(x0 + 3, y0 + 2, text, mix(c["text"], 0.35) if faded else c["text"], clip=cell.w - 6))
    head = [Text(x, y, text, c["muted"]) for x, y, text in lay.prompt]
    return [status(trace, spec, lay, f, fresh, ("rn_start", "rn_after_step")), *head, *out, *key]


def _key(spec: AnimationSpec, lay: Layout, measure: Measure) -> list[Shape]:
    """The key below the text: each state as the canvas draws it, the mark of a lost token, a new acceptance."""
    c, s = PALETTE, spec.font_size
    y, h = lay.text_bottom + round(s * 0.8), round(s * 0.8)
    legend = renoise_view.legend(spec.lang) | {"new": t("rn_new", spec.lang)}
    samples = (("noise", c["mask_bg"], c["mask_border"], 1, True), ("accepted", c["mask_bg"], c["accent"], 1, False),
               ("new", c["mask_bg"], c["accent"], 2, False), ("final", WHITE, c["mask_border"], 1, False),
               ("empty", c["mask_bg"], c["mask_border"], 1, True), ("lost", c["mask_bg"], c["remask"], 2, False))
    x, out = lay.pad, []
    for name, fill, outline, width, dashed in samples:  # (name, the sample box as the canvas draws that state)
        label = legend[name]
        if x + h + 10 + measure.width(label, True) > spec.width - lay.pad and x > lay.pad:  # wrap the key
            x, y = lay.pad, y + round(s * 1.3)
        out.append(Box(x, y + 1, x + h + 4, y + h + 5, fill, outline, width, dashed))
        x += h + 10
        out.append(Text(x, y, label, c["muted"], small=True))
        x += measure.width(label, True) + 18
    return out


def scene(trace: Trace, spec: AnimationSpec, measure: Measure) -> Scene:
    """Every frame of a renoising `trace` (frame f: what step f + 1 reads), each shown `spec.step_ms` in
    `frames_per_step` frames, the last one held `spec.hold_ms` longer."""
    frames = renoise_view.frames(trace)
    shown = [{_text(trace, fr["token"][p]) for fr in frames} for p in range(len(trace.token_ids))]
    lay = Layout(trace, spec, measure, shown)
    key = _key(spec, lay, measure)
    height = max(lay.height, max(b.y1 for b in key if isinstance(b, Box)) + spec.font_size)  # every row of the key
    out: list[tuple[Shape, ...]] = []
    durations: list[int] = []
    for f, frame in enumerate(frames):
        out += [tuple(_frame(trace, spec, lay, f, frame, key))] * spec.frames_per_step
        durations += [spec.frame_ms] * spec.frames_per_step
    durations[-1] += spec.hold_ms
    return Scene(width=spec.width, height=height, frames=tuple(out), durations=tuple(durations))
