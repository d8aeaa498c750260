"""Serving: the continuous-batching `engine`, the `policy` a serving engine runs, and the SGLang plugin.

`dllm_viz.serve.sglang` is the only integration for now. This package module imports nothing heavy:
SGLang loads every installed `sglang.srt.plugins` entry point in each of its processes, so the
entry point below must stay cheap for users who have dllm-viz installed but never pick its
algorithm, and must fail with a readable message on an SGLang release we have not verified.
"""
from __future__ import annotations

# The one place the supported SGLang release is pinned: scripts/sglang_env.sh reads this line,
# the plugin refuses any other version. Bump it only after tests/sglang/ pass against the new one.
SGLANG_VERSION = "0.5.23"

# The name users pass to `--dllm-algorithm`; SGLang looks algorithms up by this key.
ALGORITHM_NAME = "DllmVizPolicy"


def installed_sglang_version() -> str | None:
    """The installed SGLang distribution's version, or None when SGLang is not installed."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("sglang")
    except PackageNotFoundError:
        return None


def check_sglang_version(found: str | None) -> None:
    """Raise RuntimeError unless `found` is the pinned SGLANG_VERSION (the message says what to do)."""
    if found == SGLANG_VERSION:
        return
    what = "SGLang is not installed" if found is None else f"found sglang=={found}"
    raise RuntimeError(
        f"dllm-viz's SGLang plugin ({ALGORITHM_NAME}) supports sglang=={SGLANG_VERSION} only; {what}. "
        f"Install sglang=={SGLANG_VERSION}, or a dllm-viz release that supports your SGLang; "
        f"the {ALGORITHM_NAME} algorithm is not registered."
    )


def register_sglang() -> None:
    """Entry point of the `sglang.srt.plugins` group: add the algorithm to SGLang's registry.

    SGLang calls this in every process (launcher, scheduler, workers) before it resolves
    `--dllm-algorithm`. The version check comes first, before anything imports SGLang internals.
    """
    check_sglang_version(installed_sglang_version())
    from dllm_viz.serve.sglang import register

    register()
