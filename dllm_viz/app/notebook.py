"""A trace in a notebook: `dllm_viz.show(trace)` (or `trace.show()`) returns an anywidget.

The widget draws the playground's canvas player, inspector, heatmap and order map with the page's own
renderer (`views.web.RENDERER_JS`: its ES module, `esm`) and plotly.js from the `plotly` package (a
synced text the module imports as a module of its own, `plotly_js`): nothing is fetched, so it works
offline, in Jupyter, JupyterLab, VS Code and Colab alike. The trace travels as the page reads it
(`views.wire`'s chunks). The glue (`web/widget.js`) makes its own elements inside the widget's output
and looks nothing up on the page, so several widgets never share a cursor. `frame` and `selected` are
synced both ways: scrub the player and Python reads them; set them from Python and the player moves.

anywidget is the `[notebook]` extra: importing this module needs only what the page's renderer needs
(plotly); `show` asks for anywidget when it is called, and names the extra when it is missing.
"""
from __future__ import annotations

import functools
import re
from typing import Any

from dllm_viz.app.strings import LANGS
from dllm_viz.app.views import web, wire
from dllm_viz.app.views.palette import PAGE_CSS
from dllm_viz.core.trace import Trace

INSTALL_HINT = "pip install dllm-viz[notebook]"
# The widget's own layout: the canvas and the inspector side by side when there is room, then the
# figures; the walkthrough belongs to the playground's page.
WIDGET_CSS = """
.dv-widget { display: grid; grid-template-columns: minmax(0, 3fr) minmax(220px, 2fr); gap: 12px;
  color: #1f2933; font-family: Inter, ui-sans-serif, system-ui, -apple-system, Segoe UI, sans-serif; }
.dv-widget .dv-w-heatmap, .dv-widget .dv-w-order { grid-column: 1 / -1; }
.dv-widget .dv-tour-start { display: none; }
@media (max-width: 700px) { .dv-widget { grid-template-columns: minmax(0, 1fr); } }
"""


def _top_level_rules(css: str) -> list[str]:
    """`css`'s top-level rules and at-rule blocks, comments dropped, each with its braces."""
    css = re.sub(r"/\*.*?\*/", "", css, flags=re.S)
    rules, depth, start = [], 0, 0
    for i, ch in enumerate(css):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                rules.append(css[start:i + 1].strip())
                start = i + 1
    return rules


@functools.cache
def css() -> str:
    """The page's CSS for the renderer's own classes (`.dv-*`; not the page's ids, Gradio's classes, its
    phone layout or the walkthrough), and the widget's layout."""
    def ours(rule: str) -> bool:
        selector = rule.split("{", 1)[0]
        return selector.lstrip().startswith(".dv-") and "#" not in selector and ".dv-tour" not in selector
    return "\n".join(rule for rule in _top_level_rules(PAGE_CSS) if ours(rule)) + WIDGET_CSS


@functools.cache
def esm() -> str:
    """The widget's ES module: the page's renderer, then the glue (`web/widget.js`)."""
    return web.RENDERER_JS + "\n" + (web.WEB / "widget.js").read_text(encoding="utf-8")


@functools.cache
def plotly_js() -> str:
    """plotly.js, from the `plotly` package: the widget makes it into a module of its own (widget.js)."""
    return web.PLOTLY_JS.read_text(encoding="utf-8")


def state(trace: Trace, *, lang: str = "en", frame: int | None = None, selected: int = 0) -> dict[str, Any]:
    """The widget's synced values for `trace`: its chunks (JSON text), the renderer's options in `lang`,
    the cursor (`frame`: steps shown, None: the last; `selected`: a generated position)."""
    if not isinstance(trace, Trace):
        raise TypeError(f"trace must be a dllm_viz.Trace, got {type(trace).__name__}")
    if lang not in LANGS:
        raise ValueError(f"lang must be one of {', '.join(LANGS)}, got {lang!r}")
    steps, length = len(trace.steps), len(trace.token_ids)
    frame = steps if frame is None else frame
    if not 0 <= frame <= steps:
        raise ValueError(f"frame must be in [0, {steps}] (the trace's steps), got {frame}")
    if not 0 <= selected < max(1, length):
        raise ValueError(f"selected must be in [0, {length - 1}] (a generated position), got {selected}")
    options = {"strings": {lang: web.strings(lang)}, "theme": web.theme()}
    return {"chunks": wire.dumps(wire.chunks(trace)), "options": options, "lang": lang, "frame": frame,
            "selected": selected}


@functools.cache
def widget_class() -> type:
    """The anywidget class (made on first use: anywidget is the [notebook] extra)."""
    try:
        import anywidget
        import traitlets
    except ImportError as err:
        raise ImportError(f"dllm_viz.show needs anywidget (the [notebook] extra): {INSTALL_HINT}") from err

    class TraceWidget(anywidget.AnyWidget):
        """One trace in a player: canvas, inspector, heatmap and order map (`dllm_viz.show`)."""

        _esm = traitlets.Unicode(esm()).tag(sync=True)
        _css = traitlets.Unicode(css()).tag(sync=True)
        _plotly = traitlets.Unicode(plotly_js()).tag(sync=True)
        chunks = traitlets.Unicode("[]").tag(sync=True)  # views.wire's chunks, as JSON text
        options = traitlets.Dict().tag(sync=True)  # the renderer's strings (one language) and theme
        lang = traitlets.Unicode("en").tag(sync=True)
        frame = traitlets.Int(0).tag(sync=True)  # steps shown (0: the empty canvas)
        selected = traitlets.Int(0).tag(sync=True)  # the position the inspector shows

    TraceWidget.__qualname__ = "TraceWidget"
    return TraceWidget


def show(trace: Trace, *, lang: str = "en", frame: int | None = None, selected: int = 0) -> Any:
    """`trace` in a notebook widget: the canvas player, the inspector, the heatmap and the order map.

    `lang`: the widget's language (`app.strings.LANGS`); `frame`: the step to open at (None: the last);
    `selected`: the position the inspector opens on. The widget's `frame` and `selected` follow the player."""
    values = state(trace, lang=lang, frame=frame, selected=selected)
    return widget_class()(**values)

