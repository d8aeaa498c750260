"""dllm-viz: play with and visualise masked-diffusion LM decoding."""
from __future__ import annotations

from dllm_viz.core.config import PRESETS, DecodeConfig
from dllm_viz.core.decoder import DecodeBatch, decode
from dllm_viz.core.diff import TraceDiff, diff
from dllm_viz.core.fork import fork
from dllm_viz.core.trace import StepRecord, Trace

__all__ = ["PRESETS", "DecodeBatch", "DecodeConfig", "StepRecord", "Trace", "TraceDiff", "decode", "diff", "fork",
           "load_model", "Engine", "export_animation"]
__version__ = "0.1.0"


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
