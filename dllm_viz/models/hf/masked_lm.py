"""`masked_lm`: any `AutoModelForMaskedLM` (BERT, RoBERTa, ModernBERT and the diffusion chat models
fine-tuned from it). Logits at i predict token i; the mask id is the tokenizer's mask token."""
from __future__ import annotations

from typing import Any

import torch
from torch import nn
from transformers import AutoModelForMaskedLM
from transformers.models.auto.modeling_auto import MODEL_FOR_MASKED_LM_MAPPING_NAMES

from dllm_viz.models.hf.adapter import HFDenoiser, architectures_of, config_int, first_int
from dllm_viz.models.hf.tokenizer import HFTokenizer


class MaskedLMDenoiser(HFDenoiser):
    """Any `AutoModelForMaskedLM`: one bidirectional forward, logits at i predict token i."""

    kind = "masked_lm"
    auto_class = AutoModelForMaskedLM
    padding_ends_text = False  # [PAD] is a special token, never drawn (see from_loaded)

    @classmethod
    def matches(cls, config: dict[str, Any]) -> bool:
        names = architectures_of(config)
        if names:
            return any(a.endswith("ForMaskedLM") for a in names)
        return config.get("model_type") in MODEL_FOR_MASKED_LM_MAPPING_NAMES

    @classmethod
    def from_loaded(cls, model: nn.Module, tokenizer: HFTokenizer | None, *, name: str) -> HFDenoiser:
        """The adapter, with every special token of the tokenizer but end-of-text never drawn."""
        adapter = super().from_loaded(model, tokenizer, name=name)
        if tokenizer is not None:
            rows = config_int(model.config, ("vocab_size",))  # the logits' width
            special = set(tokenizer.hf.all_special_ids) - set(adapter.end_of_text_ids)
            adapter.never_token_ids = tuple(sorted(i for i in special if rows is None or 0 <= i < rows))
        return adapter

    @classmethod
    def find_mask_token_id(cls, config: Any, tokenizer: HFTokenizer | None) -> int | None:
        # The tokenizer owns [MASK] for encoders; configs rarely name it.
        hf = tokenizer.hf if tokenizer is not None else None
        return first_int(getattr(hf, "mask_token_id", None), getattr(config, "mask_token_id", None))

    @classmethod
    def context_limit(cls, model: nn.Module, tokenizer: HFTokenizer | None) -> int | None:
        limit = super().context_limit(model, tokenizer)
        # RoBERTa-family position ids start after the padding index, so that many rows of the
        # position table can never be used by real tokens.
        for module_name, module in model.named_modules():
            if (
                module_name.endswith("position_embeddings")
                and isinstance(module, nn.Embedding)
                and module.padding_idx is not None
                and limit is not None
            ):
                return min(limit, module.num_embeddings - module.padding_idx - 1)
        return limit

    def _logits(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
        mask = None if attention_mask is None else attention_mask.long()
        return self.model(input_ids=input_ids, attention_mask=mask).logits  # (B, N, V)
