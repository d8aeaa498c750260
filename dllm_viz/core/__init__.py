"""The decoding core (floor 2): config, schedules, scoring, sampling, the step, the decoder, traces.

No UI and no serving; imports only `dllm_viz.models` below it (docs/architecture.md). Importing
the package imports none of its modules: `from dllm_viz.core.config import DecodeConfig`.
"""
