"""dllm-viz: play with and visualise masked-diffusion LM decoding."""
from __future__ import annotations

from dllm_viz.core.config import PRESETS, DecodeConfig
from dllm_viz.core.decoder import DecodeBatch, decode
from dllm_viz.core.diff import TraceDiff, diff
from dllm_viz.core.fork import fork
from dllm_viz.core.trace import StepRecord, Trace, register_viewer

__all__ = ["PRESETS", "DecodeBatch", "DecodeConfig", "StepRecord", "Trace", "TraceDiff", "decode", "diff", "fork",
           "load_model", "Engine", "export_animation", "show"]
__version__ = "0.1.0"


def show(trace: Trace, *, lang: str = "en", frame: int | None = None, selected: int = 0):
    """`trace` in a notebook widget (anywidget): the canvas player, inspector, heatmap and order map,
    offline; also `trace.show()`. Needs the [notebook] extra: `pip install dllm-viz[notebook]`.
    See dllm_viz.app.notebook.show for the options."""
    try:  # plotly (and anywidget, asked for by the widget itself): only when called
        from dllm_viz.app.notebook import show as notebook_show
    except ImportError as err:
        if (err.name or "").startswith("dllm_viz"):
            raise
        raise ImportError(f"dllm_viz.show needs {err.name} (the [notebook] extra): "
                          "pip install dllm-viz[notebook]") from err

    return notebook_show(trace, lang=lang, frame=frame, selected=selected)


register_viewer(show)


def __getattr__(name: str):
    # Lazy: importing the package must not import transformers or start an engine thread.
    if name == "load_model":
        from dllm_viz.models import load_model

        return load_model
    if name == "Engine":
        from dllm_viz.serve.engine import Engine

        return Engine
    if name == "export_animation":  # the playground's views and Pillow: the [app] extra
        from dllm_viz.app.views.animation import export_animation

        return export_animation
    raise AttributeError(f"module 'dllm_viz' has no attribute {name!r}")
