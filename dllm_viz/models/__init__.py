"""Models: the `Denoiser` protocol, the embedded default model, and local Hugging Face checkpoints.

`load_model()` is the one entry point. Heavy imports (transformers) happen only when a checkpoint
path is given, so importing the package and loading the embedded model stay fast.
"""
from __future__ import annotations

import os
from typing import Any

import torch

from dllm_viz import assets
from dllm_viz.models.base import (
    Denoiser,
    TextTokenizer,
    check_denoiser,
    model_device,
    model_max_length,
    model_name,
    read_config,
    resolve_device,
    resolve_dtype,
)

EMBEDDED = "embedded"  # the kind of the model shipped in dllm_viz/assets/ (and of `dllm_viz.train` outputs)
# Embedded-format models shipped in dllm_viz/assets/ besides the default, by the name `load_model` accepts as
# `path`: a local folder, never the network (the name wins over a folder of that name in the cwd).
SHIPPED = {name: assets.path(name) for name in ("world", "world-indel", "tasks", "world-renoise")}

__all__ = [
    "Denoiser",
    "TextTokenizer",
    "check_denoiser",
    "load_model",
    "model_device",
    "model_max_length",
    "model_name",
]


def load_model(
    path: str | os.PathLike[str] | None = None,
    *,
    device: str | torch.device | None = None,
    dtype: str | torch.dtype | None = None,
    kind: str = "auto",
    device_map: str | dict[str, Any] | None = None,
    trust_remote_code: bool = False,
    chat: bool = False,
    revision: str | None = None,
) -> Denoiser:
    """Load a denoiser; only a Hub id the caller names is ever downloaded.

    Args:
        path: None for the embedded model shipped in dllm_viz/assets/ (never touches the network); a name of
            `SHIPPED` ("world": the checkable-world model in dllm_viz/assets/world; "world-indel": the same
            fine-tuned to edit lengths, LLaDA 2.2's DELETE and SPLIT (docs/indel.md); "world-renoise": a renoising
            world model in DiffusionGemma's architecture, a `Renoiser` (docs/renoise.md); "tasks": the task-families
            model in dllm_viz/assets/tasks, `dllm_viz.tasks`; all offline); a local
            directory: a Hugging Face checkpoint (config.json with a model_type, weights, tokenizer)
            or a model saved in the embedded format by `dllm_viz.train` (its config.json has no
            model_type); or a Hugging Face Hub id "org/name", resolved through the Hugging Face
            cache like `from_pretrained` (HF_HUB_CACHE / HF_HOME; with HF_HUB_OFFLINE=1 only the
            cache is read, and a missing id is a ValueError saying how to download it). A local
            directory wins over a Hub id of the same spelling. See `dllm_viz.models.hub`.
        device: where to run; default CUDA when available, else CPU.
        dtype: torch dtype or name ("bf16", "fp16", "fp32"); default bf16 on CUDA and fp32 elsewhere
            for checkpoints; the embedded model keeps its own default (fp32) when None.
        kind: "auto" detects from config.json (model_type, architectures, auto_map); or force
            "embedded" or one of `dllm_viz.models.hf.ADAPTERS` ("llada", "dream", "masked_lm"), or
            "diffusion_gemma": a renoising model, returned as a `models.renoiser.Renoiser` for
            `core.renoise_decoder.renoise_decode` (detected from model_type; native class, no remote code).
        device_map: e.g. "auto" to spread a large checkpoint over the available devices through
            accelerate; excludes `device`.
        trust_remote_code: allow modeling code shipped inside the checkpoint (LLaDA, Dream).
        chat: encode each prompt as a user turn of the checkpoint's chat template (instruction-tuned
            checkpoints); ValueError when its tokenizer has none.
        revision: with a Hub id, the branch, tag or commit to load (default: main). The commit it
            resolves to is pinned in the model's name, "org/name@<commit>", which every trace records.

    Returns:
        A `Denoiser` with `tokenizer`, `name`, `max_length`, `device` and `mask_token_id`.
    """
    root = name = None
    if isinstance(path, str) and path in SHIPPED:
        path = SHIPPED[path]  # load_model("world") / load_model("tasks"): dllm_viz.world / dllm_viz.tasks
    if path is None and revision is not None:
        raise ValueError(f"revision={revision!r} is invalid without a path: expected revision only with a Hub id")
    if path is not None:
        from dllm_viz.models.hub import resolve_checkpoint  # no Hub library import unless a Hub id is named

        checkpoint = resolve_checkpoint(path, revision=revision)
        root, name = checkpoint.path, checkpoint.name
        if kind == "auto" and "model_type" not in read_config(root):
            kind = EMBEDDED  # Hugging Face configs always name their model_type; ours never does.
    if device_map is not None and (device is not None or kind == EMBEDDED or root is None):
        raise ValueError(
            f"device_map={device_map!r} is invalid with device={device!r}, kind={kind!r}: "
            "expected device_map only for a Hugging Face checkpoint and without device"
        )
    resolved = resolve_device(device)
    if kind == EMBEDDED or root is None:
        return _load_embedded(root, kind=kind, chat=chat, device=resolved, dtype=dtype)

    return _load_checkpoint(root, name=name, kind=kind, device=None if device_map is not None else resolved,
                            dtype=resolve_dtype(dtype, resolved), device_map=device_map,
                            trust_remote_code=trust_remote_code, chat=chat)


def _load_checkpoint(root: os.PathLike[str], *, name: str | None, kind: str, device: torch.device | None,
                     dtype: torch.dtype, device_map: str | dict[str, Any] | None, trust_remote_code: bool,
                     chat: bool) -> Denoiser:
    """`load_model`'s Hugging Face branch: a renoising DiffusionGemma (a `models.renoiser.Renoiser`), else the
    masked adapters of `models.hf` (transformers is imported only here)."""
    if kind == "diffusion_gemma" or (kind == "auto" and read_config(root).get("model_type") == "diffusion_gemma"):
        from dllm_viz.models.diffusion_gemma import load_diffusion_gemma

        return load_diffusion_gemma(root, device=device, dtype=dtype, device_map=device_map, chat=chat, name=name)
    from dllm_viz.models.hf import load_hf

    return load_hf(root, device=device, dtype=dtype, kind=kind, device_map=device_map,
                   trust_remote_code=trust_remote_code, chat=chat, name=name)


def _load_embedded(
    root: os.PathLike[str] | None, *, kind: str, chat: bool, device: torch.device, dtype: str | torch.dtype | None
) -> Denoiser:
    """`load_model`'s embedded-format branch: the shipped model (``root`` None) or a folder `dllm_viz.train` wrote."""
    if kind not in ("auto", EMBEDDED):
        raise ValueError(f"kind={kind!r} is invalid without a path: expected 'auto' or {EMBEDDED!r}")
    if chat:
        raise ValueError(
            "chat=True is invalid for the embedded model: it has no chat template (it is not instruction-tuned)"
        )
    from dllm_viz.models.embedded import load_embedded  # imported only when used

    return load_embedded(device=device, dtype=None if dtype is None else resolve_dtype(dtype, device), path=root)
