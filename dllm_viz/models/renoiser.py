"""The model protocol the renoising decoder relies on (docs/renoise.md; `core.renoise_decoder`).

A renoising model (DiffusionGemma, block-autoregressive uniform-noise diffusion) is two passes over
one set of weights: an *encoder* that reads the context (the prompt, then each finished canvas) into
an exact key-value cache, and a *decoder* that reads a whole canvas of `L` tokens against that cache,
plus the previous step's logits (self-conditioning), and predicts every position of the canvas.
Unlike a masked `Denoiser` (models.base) there is no mask token: every position always holds a token.

Rows are requests; a batch of prompts of different lengths is left-padded (`attention` False on the
padding), as transformers' `generate()` takes it. Positions are shared by the batch, counted from the
first column (padding included), as `generate()` counts them: rotary attention sees only differences
of positions, so a padded row reads what it reads alone, to float rounding.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import torch

from dllm_viz.models.base import TextTokenizer


@dataclass(frozen=True)
class RenoiseContext:
    """What the encoder has read for a batch: the cache and the masks a canvas after it needs.

    The cache is the model's own object and is updated in place by `Renoiser.encode`: a context is
    valid until the next `encode` or `select` on it returns its successor.
    """

    cache: Any  # the encoder's exact key-value cache (opaque to the decoder), one row per request
    attention: torch.Tensor  # (B, T) bool: True on the context's real tokens, False on left padding
    length: int  # T: columns read so far (padding included); the next canvas sits at [T, T + L)
    canvas_length: int  # L: the canvas the masks were built for
    masks: Any = None  # the decoder's attention masks for a canvas at [T, T + L) (opaque); None after select

    @property
    def rows(self) -> int:
        return int(self.attention.shape[0])


@runtime_checkable
class Renoiser(Protocol):
    """A renoising model as the decoder sees it.

    Required:
        name (str), vocab_size (int: the ids a uniform canvas draws from), canvas_length (int: the
        checkpoint's own L), device (torch.device), tokenizer (`TextTokenizer` | None);
        generation_defaults() -> dict: the checkpoint's generation settings by `RenoiseSettings`
            name (None where unset; `core.renoise.settings_from` fills transformers' defaults);
        encode(ids (B, n) long, attention (B, n) bool, context | None, *, canvas_length) -> context:
            read n more columns into the cache (the prompt when `context` is None, else a finished
            canvas) and prepare the masks for the canvas after them;
        denoise(canvas (B, L) long, context, self_conditioning (B, L, V) | None) -> (B, L, V) float32:
            the decoder's raw logits at every canvas position; `self_conditioning` is the previous
            step's tempered logits (None at a canvas's first step);
        select(context, rows (k,) long) -> context: keep only those rows (requests that finished
            leave the batch between canvases); `encode` must follow before the next `denoise`.
    """

    name: str
    vocab_size: int
    canvas_length: int
    device: torch.device
    tokenizer: TextTokenizer | None

    def generation_defaults(self) -> dict[str, Any]: ...

    def encode(self, ids: torch.Tensor, attention: torch.Tensor, context: RenoiseContext | None, *,
               canvas_length: int) -> RenoiseContext: ...

    def denoise(self, canvas: torch.Tensor, context: RenoiseContext,
                self_conditioning: torch.Tensor | None) -> torch.Tensor: ...

    def select(self, context: RenoiseContext, rows: torch.Tensor) -> RenoiseContext: ...


def is_renoiser(model: Any) -> bool:
    """Whether `model` follows the renoising protocol (rather than the masked `Denoiser` one)."""
    return all(callable(getattr(model, name, None)) for name in ("encode", "denoise", "select", "generation_defaults"))
