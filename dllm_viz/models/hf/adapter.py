"""The adapters' shared base: `HFDenoiser` validates a call, moves it to the model's device and returns
float32 logits; each convention (`masked_lm`, `llada`, `dream`) is a subclass in its own module.

Also the small readers of token ids from configs and tokenizers that every adapter uses.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar

import torch
from torch import nn
from transformers import AutoModel

from dllm_viz.models.base import NEVER_LOGIT, check_inputs
from dllm_viz.models.hf.tokenizer import HFTokenizer


def first_int(*candidates: Any) -> int | None:
    """The first candidate that is a token id; a list (several EOS ids) gives its first entry."""
    for value in candidates:
        if isinstance(value, (list, tuple)) and value:
            value = value[0]
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
    return None


def all_ints(*candidates: Any) -> tuple[int, ...]:
    """Every token id among the candidates (lists flattened), first occurrence first."""
    out: list[int] = []
    for value in candidates:
        for item in value if isinstance(value, (list, tuple)) else [value]:
            if isinstance(item, int) and not isinstance(item, bool) and item >= 0 and item not in out:
                out.append(item)
    return tuple(out)


def config_int(config: Any, keys: Iterable[str]) -> int | None:
    """The first of a loaded config's ``keys`` that holds a token id (or a length)."""
    return first_int(*(getattr(config, key, None) for key in keys))


def architectures_of(config: dict[str, Any]) -> list[str]:
    """The class names a raw config.json dict lists under ``architectures``."""
    return [a for a in config.get("architectures") or [] if isinstance(a, str)]


class HFDenoiser(nn.Module):
    """Base adapter: validates a call, moves it to the model's device, returns float32 logits.

    Subclasses set `kind`, say which configs they `match`, how to find the mask id, and implement
    `_logits(input_ids, attention_mask)`; `attention_mask` reaches them only when a row is padded.
    """

    kind: ClassVar[str] = ""
    auto_class: ClassVar[Any] = AutoModel
    max_length_keys: ClassVar[tuple[str, ...]] = ("max_position_embeddings",)
    # Whether a generated padding token ends the text too (instruction-tuned diffusion models pad the
    # unused tail of the canvas, e.g. Dream with <|endoftext|> beside its <|im_end|>).
    padding_ends_text: ClassVar[bool] = True
    # No approximate key-value cache (Fast-dLLM's prefix or dual cache; `base.check_cache` reads this): the adapters run
    # the checkpoint's own modeling code, whose forward takes a whole canvas.
    cache_note: ClassVar[str] = (
        "Hugging Face checkpoints run their own modeling code, which offers no forward over a window of the "
        "canvas against cached keys (Fast-dLLM ships modified modeling files for LLaDA and Dream to get one)"
    )

    def __init__(
        self,
        model: nn.Module,
        *,
        mask_token_id: int,
        tokenizer: HFTokenizer | None = None,
        name: str = "",
        max_length: int | None = None,
        eos_token_id: int | None = None,
        pad_token_id: int | None = None,
        vocab_size: int | None = None,
        end_of_text_ids: tuple[int, ...] | None = None,
    ) -> None:
        super().__init__()
        self.model = model.eval()
        self.mask_token_id = mask_token_id
        self.tokenizer = tokenizer
        self.name = name or type(model).__name__
        self.max_length = max_length
        self.eos_token_id = eos_token_id
        # Every id that ends a text (EOS first): the text is cut at the first, the early stop fills with them.
        self.end_of_text_ids: tuple[int, ...] = (
            end_of_text_ids if end_of_text_ids is not None else all_ints(eos_token_id)
        )
        self.pad_token_id = pad_token_id
        # Ids the tokenizer can write. Checkpoints round their output matrix up for speed (LLaDA has 126464
        # rows, Qwen-based Dream 152064): rows past the tokenizer's tokens are never drawn.
        self.vocab_size = vocab_size
        # Ids that are never drawn into a text (a masked LM's [CLS], [SEP], [PAD], ...): NEVER_LOGIT.
        self.never_token_ids: tuple[int, ...] = ()

    # --- which checkpoints, and what to read from them -------------------------------------------

    @classmethod
    def matches(cls, config: dict[str, Any]) -> bool:
        """Whether a raw config.json dict follows this adapter's convention."""
        raise NotImplementedError

    @classmethod
    def find_mask_token_id(cls, config: Any, tokenizer: HFTokenizer | None) -> int | None:
        hf = tokenizer.hf if tokenizer is not None else None
        return first_int(getattr(config, "mask_token_id", None), getattr(hf, "mask_token_id", None))

    @classmethod
    def context_limit(cls, model: nn.Module, tokenizer: HFTokenizer | None) -> int | None:
        """The longest input the checkpoint accepts, from its config (and the tokenizer's own cap)."""
        limit = config_int(model.config, cls.max_length_keys)
        tokenizer_cap = getattr(tokenizer.hf, "model_max_length", None) if tokenizer is not None else None
        # Tokenizers without a stated limit report a huge sentinel (int(1e30)); ignore those.
        if isinstance(tokenizer_cap, int) and 0 < tokenizer_cap < 10**9:
            limit = tokenizer_cap if limit is None else min(limit, tokenizer_cap)
        return limit

    @classmethod
    def from_loaded(cls, model: nn.Module, tokenizer: HFTokenizer | None, *, name: str) -> HFDenoiser:
        """Wrap a loaded model; ValueError when no mask token id can be found."""
        config = model.config
        mask_id = cls.find_mask_token_id(config, tokenizer)
        if mask_id is None:
            raise ValueError(
                f"mask_token_id=None is invalid for {name!r} ({cls.kind}): expected a mask token in the "
                "config (mask_token_id) or the tokenizer (mask_token)"
            )
        hf = tokenizer.hf if tokenizer is not None else None
        # The tokenizer first: config ids are often template defaults. A BERT-style encoder without
        # an EOS has no end-of-text token: its [SEP] separates segments and is never drawn.
        eos = first_int(getattr(hf, "eos_token_id", None), getattr(config, "eos_token_id", None))
        pad = first_int(getattr(hf, "pad_token_id", None), getattr(config, "pad_token_id", None))
        generation = getattr(model, "generation_config", None)
        ends = all_ints(eos, getattr(config, "eos_token_id", None), getattr(generation, "eos_token_id", None),
                         pad if cls.padding_ends_text else None)
        return cls(
            model,
            mask_token_id=mask_id,
            tokenizer=tokenizer,
            name=name,
            max_length=cls.context_limit(model, tokenizer),
            eos_token_id=eos,
            pad_token_id=pad,
            vocab_size=len(tokenizer) if tokenizer is not None else None,
            end_of_text_ids=tuple(i for i in ends if i != mask_id),
        )

    # --- the call --------------------------------------------------------------------------------

    @property
    def device(self) -> torch.device:
        """Where inputs go: the input embeddings' device (the first shard under a device_map)."""
        embeddings = self.model.get_input_embeddings() if hasattr(self.model, "get_input_embeddings") else None
        if embeddings is not None:
            return embeddings.weight.device
        return next(self.model.parameters()).device

    @torch.no_grad()
    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        """input_ids (B, N), attention_mask (B, N) bool right-padded -> float32 logits (B, N, V)."""
        return self._clean(self._logits(*self._inputs(input_ids, attention_mask)).float())  # (B, N, V)

    @torch.no_grad()
    def logits_at(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None, rows: torch.Tensor,
                  cols: torch.Tensor) -> torch.Tensor:
        """`forward(input_ids, attention_mask)[rows, cols]`, `(M, V)` float32, the same numbers: the positions are
        gathered in the checkpoint's dtype first, so the float32 copy covers only the M positions the decoder
        reads (on a GPU at LLaDA's vocabulary the copy of a whole canvas cost about 1 ms a step)."""
        logits = self._logits(*self._inputs(input_ids, attention_mask))  # (B, N, V), the checkpoint's dtype
        return self._clean(logits[rows.to(logits.device), cols.to(logits.device)].float())  # (M, V)

    def _inputs(self, input_ids: torch.Tensor,
                attention_mask: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The ids on the model's device, and the mask where some position is padding (None otherwise)."""
        check_inputs(input_ids, attention_mask, max_length=self.max_length)
        ids = input_ids.to(self.device, torch.long)
        mask = None
        if attention_mask is not None and not bool(attention_mask.all()):
            mask = attention_mask.to(self.device)
        return ids, mask

    def _clean(self, logits: torch.Tensor) -> torch.Tensor:
        """`logits (..., V)` float32 with the ids no token stands for, and those never drawn, at NEVER_LOGIT."""
        if self.vocab_size is not None and logits.shape[-1] > self.vocab_size:
            logits[..., self.vocab_size :] = NEVER_LOGIT  # padding rows: no token stands for them
        if self.never_token_ids:
            logits[..., torch.tensor(self.never_token_ids, device=logits.device)] = NEVER_LOGIT
        return logits

    def _logits(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
        raise NotImplementedError

    def extra_repr(self) -> str:
        return (
            f"kind={self.kind!r}, name={self.name!r}, mask_token_id={self.mask_token_id}, "
            f"max_length={self.max_length}"
        )
