"""dllm-viz: play with and visualise masked-diffusion LM decoding."""
from __future__ import annotations

from dllm_viz.core.config import PRESETS, DecodeConfig
from dllm_viz.core.decoder import DecodeBatch, decode
from dllm_viz.core.diff import TraceDiff, diff
from dllm_viz.core.fork import fork
from dllm_viz.core.trace import StepRecord, Trace

__all__ = ["PRESETS", "DecodeBatch", "DecodeConfig", "StepRecord", "Trace", "TraceDiff", "decode", "diff", "fork",
           "load_model", "Engine"]
__version__ = "0.1.0"


def __getattr__(name: str):
    # Lazy: importing the package must not import transformers or start an engine thread.
    if name == "load_model":
        from dllm_viz.models import load_model

        return load_model
    if name == "Engine":
        from dllm_viz.serve.engine import Engine

        return Engine
    raise AttributeError(f"module 'dllm_viz' has no attribute {name!r}")
