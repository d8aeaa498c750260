"""The canvas as the page draws it, frame by frame, as shapes: what the animation export encodes
(docs/fork_diff_export.md).

A pure function of a `Trace` and `AnimationSpec`: frame f (0 <= f <= steps) is the canvas after f steps,
as the page's player shows it (`web/canvas.js`): the prompt in grey, each decided token on the tint of the
confidence it was decided with (`palette.tint`), a still-masked position as a dashed box holding the next
forward's argmax guess in faint text, the tokens confirmed at the frame's step outlined, a token rewritten
marked (double underline, a diamond), a position taken back at the frame's step framed in red with a
cross, a token a fork forced underlined, the end padding faded, the world or task checker's rejected
tokens underlined in red; above, the step counter in the chosen language; below, the key. One change
from the page: every position keeps one box width over the whole animation (the widest token it ever
holds), so the text does not reflow from frame to frame; a longer guess is clipped to it.

Shapes are plain tuples (`Box`, `Text`, `Line`, `Poly`), so identical shapes in consecutive frames are
found by equality (the SVG writer keeps one element per run). `anim_raster` draws them with Pillow;
`anim_svg` writes them as SVG. Sizes are pixels.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, NamedTuple

from dllm_viz.app.strings import LANGS, t
from dllm_viz.app.views import task as task_view, world as world_view
from dllm_viz.app.views.palette import PALETTE, scale_tint, tint
from dllm_viz.core.analysis import events, piece
from dllm_viz.core.trace import Trace

WHITE = "#ffffff"


@dataclass(frozen=True, kw_only=True)
class AnimationSpec:
    """How the animation looks and moves. Invalid values raise ValueError naming the field."""

    lang: str = "en"  # the language of the labels (a module of app/strings)
    step_ms: int = 450  # how long each step's canvas shows (the page's 1x speed)
    frames_per_step: int = 1  # frames each step's canvas is written as (a fixed-rate format wants several)
    hold_ms: int = 2000  # how much longer the last frame stays before the animation loops
    width: int = 960  # pixels; the height follows from the text
    font_size: int = 16  # the tokens' text; labels are smaller

    def __post_init__(self) -> None:
        if self.lang not in LANGS:
            raise ValueError(f"lang={self.lang!r} is invalid: expected one of {', '.join(LANGS)}")
        for name, lo, hi in (("step_ms", 20, 60_000), ("frames_per_step", 1, 60), ("hold_ms", 0, 600_000),
                             ("width", 240, 4096), ("font_size", 8, 64)):
            value = getattr(self, name)
            if type(value) is not int or not lo <= value <= hi:
                raise ValueError(f"{name}={value!r} is invalid: expected an integer in [{lo}, {hi}]")
        if self.step_ms // self.frames_per_step < 20:
            raise ValueError(f"frames_per_step={self.frames_per_step} is invalid: expected at most "
                             f"{self.step_ms // 20} (a frame lasts at least 20 ms at step_ms={self.step_ms})")

    @property
    def frame_ms(self) -> int:
        return self.step_ms // self.frames_per_step


class Box(NamedTuple):
    x0: int
    y0: int
    x1: int
    y1: int
    fill: str | None
    outline: str | None = None
    width: int = 1
    dashed: bool = False


class Text(NamedTuple):
    x: int  # left
    y: int  # top
    text: str
    fill: str
    small: bool = False  # a label (status line, key) rather than a token
    clip: int = 0  # clip the text to this width (0: none)


class Line(NamedTuple):
    x0: int
    y0: int
    x1: int
    y1: int
    fill: str
    width: int = 1


class Poly(NamedTuple):
    points: tuple[tuple[int, int], ...]
    fill: str | None
    outline: str | None = None


Shape = Box | Text | Line | Poly


@dataclass(frozen=True)
class Scene:
    """The frames as shapes on a `width` x `height` card, and how long each one shows (ms)."""

    width: int
    height: int
    frames: tuple[tuple[Shape, ...], ...]
    durations: tuple[int, ...]
    background: str = WHITE


class Measure:
    """Text widths and heights, from the fonts the raster draws with (`anim_raster.Fonts`)."""

    def __init__(self, fonts: Any) -> None:
        self.fonts = fonts

    def width(self, text: str, small: bool = False) -> int:
        return math.ceil(self.fonts.font(text, small).getlength(text))


def mix(colour: str, alpha: float, under: str = WHITE) -> str:
    """`colour` at opacity `alpha` over `under` (the page's CSS opacity, flattened)."""
    a = [int(colour[i:i + 2], 16) for i in (1, 3, 5)]
    b = [int(under[i:i + 2], 16) for i in (1, 3, 5)]
    return "#" + "".join(f"{round(alpha * x + (1 - alpha) * y):02x}" for x, y in zip(a, b))


@dataclass(frozen=True)
class _Cell:
    x: int
    y: int
    w: int


class Layout:
    """Where the prompt and every generated position sit: one box per position, one width for all frames (the
    widest of the texts `shown[p]` position p ever holds)."""

    def __init__(self, trace: Trace, spec: AnimationSpec, measure: Measure, shown: list[set[str]]) -> None:
        s = spec.font_size
        self.pad, self.gap, self.row = s, max(2, s // 4), round(s * 2.1)
        self.status_h = round(s * 1.9)
        x, y = self.pad, self.pad + self.status_h
        right = spec.width - self.pad
        self.prompt: list[tuple[int, int, str]] = []
        for tok in trace.prompt_ids:  # the prompt, token by token, wrapped like the generated text
            text = piece(trace, tok)
            w = measure.width(text)
            if x + w > right and x > self.pad:
                x, y = self.pad, y + self.row
            self.prompt.append((x, y, text))
            x += w
        x += self.gap
        self.cells: list[_Cell] = []
        for texts in shown:
            w = max([measure.width(text) for text in texts] + [s]) + 6  # 3 px inside on each side
            w = min(w, right - self.pad)
            if x + w > right and x > self.pad:
                x, y = self.pad, y + self.row
            self.cells.append(_Cell(x, y, w))
            x += w + self.gap
        self.text_bottom = y + self.row
        self.height = self.text_bottom + round(s * 2.6) + self.pad  # the key below the text


def _state(history: list[Any], f: int) -> Any:
    """A position's last event before frame f (None: never decided yet)."""
    last = None
    for e in history:
        if e.step < f:
            last = e
        else:
            break
    return last


def _frame(trace: Trace, spec: AnimationSpec, lay: Layout, f: int, history: list[list[Any]],
           bad: list[str], measure: Measure) -> list[Shape]:
    """Frame f's shapes: the status line, the prompt, every position, the key."""
    n, s = len(trace.steps), spec.font_size
    c = PALETTE
    out: list[Shape] = []
    ghost = trace.steps[f].argmax if f < n else None
    fresh = 0
    th = round(s * 1.5)  # a token box's height
    for p, cell in enumerate(lay.cells):
        e = _state(history[p], f)
        x0, y0, x1, y1 = cell.x, cell.y, cell.x + cell.w, cell.y + th
        if e is None or e.kind == "remask":
            taken = e is not None and e.step == f - 1
            out.append(Box(x0, y0, x1, y1, c["mask_bg"], c["remask"] if taken else c["mask_border"],
                           2 if taken else 1, dashed=not taken))
            g = ghost[p] if ghost is not None else -1
            if g >= 0:
                out.append(Text(x0 + 3, y0 + 2, piece(trace, g), mix(c["ghost"], 0.75, c["mask_bg"]), clip=cell.w - 6))
            if taken:  # the page's "×" before a position taken back at this step
                out += [Line(x0 - 4, y0 - 4, x0 + 3, y0 + 3, c["remask"], 2),
                        Line(x0 - 4, y0 + 3, x0 + 3, y0 - 4, c["remask"], 2)]
            continue
        conf = trace.steps[e.step].confidence[p] if e.kind == "confirm" else e.prob
        bg = WHITE if e.kind == "force" or math.isnan(conf) else tint(conf)
        faded = trace.text_end is not None and p >= trace.text_end
        ink = mix(c["text"], 0.35) if faded else c["text"]
        out.append(Box(x0, y0, x1, y1, mix(bg, 0.35) if faded else bg))
        out.append(Text(x0 + 3, y0 + 2, piece(trace, e.token), ink, clip=cell.w - 6))
        if e.kind == "confirm" and e.step == f - 1:
            fresh += 1
            out.append(Box(x0 - 1, y0 - 1, x1 + 1, y1 + 1, None, c["accent"], 2))
        if e.kind == "edit":  # double underline and a diamond before it
            out += [Line(x0, y1 + 1, x1, y1 + 1, c["edit"]), Line(x0, y1 + 3, x1, y1 + 3, c["edit"]),
                    Poly(((x0 - 4, y0 + 4), (x0, y0), (x0 + 4, y0 + 4), (x0, y0 + 8)), None, c["edit"])]
        if e.kind == "force":
            out.append(Line(x0, y1 + 2, x1, y1 + 2, c["accent"], 2))
        if bad[p]:
            out.append(Line(x0, y1 - 2, x1, y1 - 2, c["diverge"], 3))
    head = [Text(x, y, text, c["muted"]) for x, y, text in lay.prompt]
    return [status(trace, spec, lay, f, fresh), *head, *out, *_key(trace, spec, lay, measure)]


def status(trace: Trace, spec: AnimationSpec, lay: Layout, f: int, fresh: int,
           words: tuple[str, str] = ("start", "after_step")) -> Text:
    """The line above frame f: the step counter, what the step did (`words`: the strings of the start and of a
    step, a renoising canvas's its own), and the end."""
    n, lang = len(trace.steps), spec.lang
    now = t(words[0], lang) if f == 0 else t(words[1], lang, s=f, k=trace.steps[f - 1].k, new=fresh)
    if f == n and n > 0:
        now += " · " + t("finished", lang)
    return Text(lay.pad, lay.pad, t("step_of", lang, f=f, n=n) + " · " + now, PALETTE["muted"], small=True)


def _key(trace: Trace, spec: AnimationSpec, lay: Layout, measure: Measure) -> list[Shape]:
    """The key below the text: the confidence scale, a token confirmed at the step, a revised trace's marks."""
    lang, s, c = spec.lang, spec.font_size, PALETTE
    y = lay.text_bottom + round(s * 0.8)
    h = round(s * 0.8)
    x = lay.pad
    out: list[Shape] = []
    label = f"{t('legend_conf', lang)}: {t('legend_low', lang)}"
    out.append(Text(x, y, label, c["muted"], small=True))
    x += measure.width(label, True) + 6
    for i in range(40):  # the scale in 40 steps
        out.append(Box(x + 4 * i, y + 2, x + 4 * i + 4, y + 2 + h, scale_tint((i + 0.5) / 40)))
    x += 166
    out.append(Text(x, y, t("legend_high", lang), c["muted"], small=True))
    x += measure.width(t("legend_high", lang), True) + 18
    out.append(Box(x, y + 1, x + h + 4, y + h + 5, tint(0.9), c["accent"], 2))
    x += h + 10
    out.append(Text(x, y, t("legend_new", lang), c["muted"], small=True))
    x += measure.width(t("legend_new", lang), True) + 18
    if trace.revised:
        out.append(Box(x, y + 1, x + h + 4, y + h + 5, c["mask_bg"], c["remask"], 2))
        x += h + 10
        out.append(Text(x, y, t("legend_remasked", lang), c["muted"], small=True))
        x += measure.width(t("legend_remasked", lang), True) + 18
        out.append(Line(x, y + h + 2, x + h + 4, y + h + 2, c["edit"]))
        out.append(Line(x, y + h + 4, x + h + 4, y + h + 4, c["edit"]))
        x += h + 10
        out.append(Text(x, y, t("legend_edited", lang), c["muted"], small=True))
    return out


def scene(trace: Trace, spec: AnimationSpec, measure: Measure) -> Scene:
    """Every frame of `trace` (frame f: after f steps), each shown `spec.step_ms` in `frames_per_step`
    frames, the last one held `spec.hold_ms` longer."""
    history = events(trace)
    lay = Layout(trace, spec, measure, [{piece(trace, e.token) for e in evs if e.token is not None} for evs in history])
    bad = (task_view.token_rules(trace) if task_view.task_of(trace) else world_view.token_rules(trace))
    frames: list[tuple[Shape, ...]] = []
    durations: list[int] = []
    n = len(trace.steps)
    for f in range(n + 1):
        shapes = tuple(_frame(trace, spec, lay, f, history, bad, measure))
        frames += [shapes] * spec.frames_per_step
        durations += [spec.frame_ms] * spec.frames_per_step
    durations[-1] += spec.hold_ms
    return Scene(width=spec.width, height=lay.height, frames=tuple(frames), durations=tuple(durations))

