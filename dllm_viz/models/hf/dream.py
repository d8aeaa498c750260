"""`dream`: Dream (Ye et al. 2025), custom code, initialised from an autoregressive model, so its logits
at i predict token i + 1. The adapter shifts them back (`unshift_logits`) so that every adapter keeps
the decoder's convention: logits at i predict token i."""
from __future__ import annotations

from typing import Any, ClassVar

import torch

from dllm_viz.models.hf.adapter import HFDenoiser, architectures_of


def unshift_logits(logits: torch.Tensor) -> torch.Tensor:
    """Re-align next-token logits (i predicts i + 1) to the decoder's convention (i predicts i).

    The logits for token i are the model's output at i - 1. Position 0 has no predecessor and copies
    position 0's output, as Dream's own sampler does; it is always a prompt position anyway.
    """
    return torch.cat([logits[:, :1], logits[:, :-1]], dim=1)  # (B, N, V)


class DreamDenoiser(HFDenoiser):
    """Dream: a bidirectional Qwen2-style model whose logits at i predict token i + 1 (undone here)."""

    kind = "dream"
    MODEL_TYPES: ClassVar[tuple[str, ...]] = ("dream",)
    ARCHITECTURES: ClassVar[tuple[str, ...]] = ("DreamModel",)

    @classmethod
    def matches(cls, config: dict[str, Any]) -> bool:
        model_type = str(config.get("model_type", "")).lower()
        return model_type in cls.MODEL_TYPES or any(a in cls.ARCHITECTURES for a in architectures_of(config))

    def _logits(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
        if attention_mask is None:
            raw = self.model(input_ids).logits  # (B, N, V)
        else:
            batch, length = input_ids.shape
            # Dream takes a (B, 1, N, N) bool mask, True where a query may attend to a key. Every query,
            # padded ones included, sees exactly the real keys: a query that sees nothing would turn
            # attention into NaN. Right padding keeps Dream's default positions 0..N-1 correct.
            pairs = attention_mask[:, None, None, :].expand(batch, 1, length, length)  # (B, 1, N, N)
            raw = self.model(input_ids, attention_mask=pairs).logits
        return unshift_logits(raw)
