"""The page's renderer: its scripts (`app/web/*.js`) and what it is given once.

The renderer draws every view of a trace (the canvas, the inspector, the heatmap, the order map, the
per-step figure, Compare's figures, the task curve) from the chunks of `views.wire` and a DOM element
per view, with plotly.js; it knows nothing of Gradio. `RENDERER_JS` is it alone (what a notebook
widget or an animation export runs, with `options()` and plotly.js beside it); `PAGE_JS` adds the
walkthrough and `page.js`, the glue to the Gradio page (run as the canvas's `js_on_load`).

`options()` is what the renderer is given once: the strings it writes, in every language (a language
switch asks the server for nothing), the theme (`views.palette`: scales, colours, the inspector's
bars, playback), and the walkthrough's steps. plotly.js comes from the `plotly` package
(`PLOTLY_JS`), served by the app itself: nothing is fetched from elsewhere.
"""
from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

import plotly

from dllm_viz.app.strings import LANGS, STRINGS, t
from dllm_viz.app.views import palette, render
from dllm_viz.core import rules
from dllm_viz.core.analysis import P_FLOOR
from dllm_viz.core.config import DecodeConfig
from dllm_viz.core.fork import FIXED, FIXED_RENOISE

WEB = Path(__file__).resolve().parents[1] / "web"  # the page's .js files (package data)
# One job each, in order: the trace from its chunks, the canvas, the inspector, the figures' specs, their
# dense layers as images, a figure of heatmaps and markers drawn without plotly, a figure fitted to its width, the
# player and its linked views, Compare's pair in step;
# then the page's own: the walkthrough, the links that reopen a view, a trace's answers streamed from the server, the
# glue to Gradio, and what the page starts itself as an event starts.
RENDERER_FILES = ("trace.js", "canvas.js", "inspector.js", "figures.js", "figures_renoise.js", "raster.js", "plot2d.js",
                  "chart2d.js", "fit.js", "views.js", "pair.js")
PAGE_FILES = (*RENDERER_FILES, "tour.js", "links.js", "reads.js", "page.js", "start.js")
PLOTLY_JS = Path(plotly.__file__).resolve().parent / "package_data" / "plotly.min.js"

# Inspector bars: a share s is drawn BAR_SCALE * s percent wide (the label fits beside it), never
# narrower than MIN_BAR percent.
BAR_SCALE = 70.0
MIN_BAR = 0.5
SPEEDS = (0.5, 1, 2, 4)  # playback speed choices; 1x = FRAME_MS per frame
FRAME_MS = 450
# The walkthrough, by the canvas of the trace on show (`Trace.canvas`): what each step rings, and its text (strings).
# A renoising canvas is never masked: its steps speak of noise, acceptance by an entropy bound and renoising, and ring
# its per-step figure where a masked trace's inspector (whose words are a masked canvas's) is rung.
TOUR = {
    "masked": (("#dv-canvas .dv-text", "tour_canvas"), ("#dv-canvas .dv-controls", "tour_player"),
               ("#dv-heatmap", "tour_heatmap"), ("#dv-order", "tour_order"), ("#dv-knobs-main", "tour_knobs"),
               ("#dv-inspector", "tour_inspector")),
    "renoise": (("#dv-canvas .dv-text", "tour_rn_canvas"), ("#dv-canvas .dv-controls", "tour_player"),
                ("#dv-heatmap", "tour_rn_heatmap"), ("#dv-order", "tour_rn_order"), ("#dv-steps", "tour_rn_steps"),
                ("#dv-knobs-main", "tour_rn_knobs")),
}
# The strings the renderer writes: these keys, and every key with one of these prefixes.
STRING_KEYS = ("step_of", "start", "after_step", "finished", "play", "pause", "frame", "stop", "raw", "tempered",
               "threshold", "mean", "confirmed_marker", "schedule_conf", "raw_token_p", "aup_refused")
STRING_PREFIXES = ("tip_", "rule_", "insp_", "rv_", "legend_", "ctl_", "tour_", "live_of", "live_queued", "fig_",
                   "axis_", "heat_", "task_", "side_", "mv_", "rn_", "fk_")


def _read(names: tuple[str, ...]) -> str:
    return "\n".join((WEB / name).read_text(encoding="utf-8") for name in names)


RENDERER_JS = _read(RENDERER_FILES)
PAGE_JS = _read(PAGE_FILES)


def string_keys() -> list[str]:
    """The strings the renderer reads: those its scripts name, and the labels of the knobs a fork may switch (the
    inspector's settings row names each as its widget does, `switchable`)."""
    knobs = {name for canvas in SWITCH_FIXED for name in switchable(canvas)}
    return [key for key in STRINGS if key in STRING_KEYS or key.startswith(STRING_PREFIXES) or key in knobs]


def strings(lang: str) -> dict[str, str]:
    """The renderer's strings in `lang` (templates: `{name}` is filled in by the page)."""
    return {key: t(key, lang) for key in string_keys()}


def theme() -> dict[str, Any]:
    """Colours and constants the renderer draws with (`views.palette`, the inspector's bars, playback)."""
    scale = lambda s: [[x, c] for x, c in s]  # noqa: E731
    return {"confidence": scale(palette.CONFIDENCE_SCALE), "order": scale(palette.ORDER_SCALE),
            "drift": scale(palette.DRIFT_SCALE), "palette": dict(palette.PALETTE), "strength": palette.TINT_STRENGTH,
            "range": list(palette.CONFIDENCE_RANGE), "ticks": list(palette.CONFIDENCE_TICKS),
            "bars": [BAR_SCALE, MIN_BAR, P_FLOOR], "frameMs": FRAME_MS, "speeds": list(SPEEDS)}


@functools.cache
def options(forks: tuple[str, ...] = ()) -> dict[str, Any]:
    """Everything the renderer is given once: {strings: {lang: table}, theme, tour: {canvas: [[target, key], ...]},
    forks: the models whose traces the page's inspector forks (the server runs them: `Playground.fork_here`; none in
    a notebook), switchable: the settings such a fork may switch, by canvas: {canvas: {name: default}}}."""
    return {"strings": {lang: strings(lang) for lang in LANGS}, "theme": theme(),
            "tour": {canvas: [list(x) for x in steps] for canvas, steps in TOUR.items()}, "forks": list(forks),
            "switchable": {canvas: switchable(canvas) for canvas in SWITCH_FIXED}}


SWITCH_FIXED = {"masked": FIXED, "renoise": FIXED_RENOISE}  # what a fork of a trace of that canvas keeps (core.fork)


def switchable(canvas: str = "masked") -> dict[str, Any]:
    """The settings a fork of a trace of `canvas` may switch at its step, {name: default}: the knobs that apply to that
    canvas (`rules.applies`) but those a fork keeps (`core.fork.FIXED`, `FIXED_RENOISE`), in the knob table's order,
    the seed (every canvas's) last: the canvas's own come first, and the page's row picks the first by default."""
    defaults, fixed = DecodeConfig().to_dict(), SWITCH_FIXED[canvas]
    names = [k.name for k in rules.KNOBS if k.name not in fixed and canvas in rules.applies(k.name)]
    return {name: defaults[name] for name in sorted(names, key=lambda name: name == "seed")}


def keys_used() -> set[str]:
    """The string keys the scripts name literally (`t.key`, `t["key"]`): tests check each is shipped."""
    text = PAGE_JS
    return set(re.findall(r"\bt\.([a-z][a-z0-9_]*)", text)) | set(re.findall(r"""\bt\[["']([a-z0-9_]+)["']\]""", text))


def plotly_head() -> str:
    """The script element that loads plotly.js from the app itself (the file is a static path: `ui`);
    the URL is relative to the page, which also holds behind a proxy's path."""
    return render.script_html(f"gradio_api/file={PLOTLY_JS.as_posix()}")
