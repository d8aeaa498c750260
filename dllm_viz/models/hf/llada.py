"""`llada`: LLaDA (Nie et al. 2025, arXiv:2502.09992), custom code (`trust_remote_code`).

Logits at i predict token i; the mask id comes from `config.mask_token_id` or the tokenizer. Some
releases of its modeling file turn attention *causal* as soon as an attention mask is passed (or
ignore it), so the adapter probes once at load time and, if the mask is not honoured, runs each
group of equally long rows on its own, unpadded (exact, one forward per distinct length).
"""
from __future__ import annotations

import logging
from typing import Any, ClassVar

import torch
from torch import nn

from dllm_viz.models.hf.adapter import HFDenoiser, architectures_of
from dllm_viz.models.hf.tokenizer import HFTokenizer

log = logging.getLogger(__name__)

# LLaDA's reserved mask token, looked up by name in the tokenizer when the config gives no id.
LLADA_MASK_TOKEN = "<|mdm_mask|>"

# Relative logit error under which the padding probe counts the attention mask as honoured.
PROBE_TOLERANCE: dict[torch.dtype, float] = {torch.float32: 1e-3, torch.bfloat16: 3e-2, torch.float16: 1e-2}


def is_out_of_memory(err: BaseException) -> bool:
    """A failed allocation: torch's OutOfMemoryError (CUDA, MPS) or the CPU allocator's RuntimeError."""
    text = str(err).lower()
    return isinstance(err, torch.OutOfMemoryError) or "out of memory" in text or "can't allocate memory" in text


class LLaDADenoiser(HFDenoiser):
    """LLaDA: a bidirectional Llama-style mask predictor; logits at i predict token i.

    `padding` says how padded batches are run: "mask" passes the attention mask to the model,
    "split" runs each group of equally long rows unpadded. `from_loaded` chooses by `probe_padding`.
    """

    kind = "llada"
    max_length_keys = ("max_sequence_length", "max_position_embeddings")
    PADDING_MODES: ClassVar[tuple[str, ...]] = ("mask", "split")
    MODEL_TYPES: ClassVar[tuple[str, ...]] = ("llada", "lladamoe")
    ARCHITECTURES: ClassVar[tuple[str, ...]] = ("LLaDAModelLM", "LLaDAMoEModelLM")

    def __init__(self, model: nn.Module, *, padding: str = "split", **kwargs: Any) -> None:
        super().__init__(model, **kwargs)
        if padding not in self.PADDING_MODES:
            raise ValueError(f"padding={padding!r} is invalid: expected one of {' | '.join(self.PADDING_MODES)}")
        self.padding = padding

    @classmethod
    def matches(cls, config: dict[str, Any]) -> bool:
        names = architectures_of(config)
        return config.get("model_type") in cls.MODEL_TYPES or any(a in cls.ARCHITECTURES for a in names)

    @classmethod
    def find_mask_token_id(cls, config: Any, tokenizer: HFTokenizer | None) -> int | None:
        found = super().find_mask_token_id(config, tokenizer)
        if found is None and tokenizer is not None:
            vocab = tokenizer.hf.get_vocab()
            found = vocab.get(LLADA_MASK_TOKEN)
        return found

    @classmethod
    def from_loaded(cls, model: nn.Module, tokenizer: HFTokenizer | None, *, name: str) -> HFDenoiser:
        adapter = super().from_loaded(model, tokenizer, name=name)
        adapter.padding = "mask" if adapter.probe_padding() else "split"
        return adapter

    @torch.no_grad()
    def probe_padding(self) -> bool:
        """Whether the model's attention mask makes a padded row equal to the same row unpadded.

        Runs three tokens alone and then with one padded token after them. An ignored mask lets the
        pad token change the three; a mask that switches attention to causal (as in some releases)
        changes them too. A TypeError, ValueError or RuntimeError from the masked call (remote code
        that takes no mask, or one of another shape) also counts as "not honoured". Either way the
        fallback to split mode (slower: one forward per row length) is logged with its reason. Out of
        memory is not a verdict on the mask: it is raised, never read as "split".
        """
        vocab = self.model.get_input_embeddings().num_embeddings
        ids = (torch.arange(4, device=self.device) * (vocab // 4)).unsqueeze(0)  # (1, 4) spread over the vocab
        mask = torch.tensor([[1, 1, 1, 0]], device=self.device)  # (1, 4) the last token is padding
        reference = self.model(ids[:, :3]).logits.float()  # (1, 3, V)
        try:
            padded = self.model(ids, attention_mask=mask).logits[:, :3].float()  # (1, 3, V)
        except (TypeError, ValueError, RuntimeError) as err:
            if is_out_of_memory(err):
                raise
            log.warning("%s: the attention-mask probe failed (%s: %s); padded batches run in split mode "
                        "(one forward per row length)", self.name, type(err).__name__, " ".join(str(err).split()))
            return False
        dtype = next(self.model.parameters()).dtype
        scale = reference.abs().max().clamp_min(torch.finfo(torch.float32).tiny)
        error = float((padded - reference).abs().max() / scale)
        tolerance = PROBE_TOLERANCE.get(dtype, max(PROBE_TOLERANCE.values()))
        if error > tolerance:
            log.warning("%s does not honour its attention mask (padding changes a row's logits by %.3g, tolerance "
                        "%g); padded batches run in split mode (one forward per row length)", self.name, error, tolerance)
        return error <= tolerance

    def _logits(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
        if attention_mask is None:
            return self.model(input_ids).logits  # (B, N, V)
        if self.padding == "mask":
            return self.model(input_ids, attention_mask=attention_mask.long()).logits
        # One forward per distinct row length, each group cut to its length: no padding at all.
        lengths = attention_mask.sum(dim=1)  # (B,)
        logits = None
        for length in lengths.unique().tolist():
            if length == 0:
                continue
            rows = (lengths == length).nonzero().squeeze(1)  # (b,)
            part = self.model(input_ids[rows, :length]).logits  # (b, length, V)
            if logits is None:
                logits = part.new_zeros(*input_ids.shape, part.shape[-1])  # (B, N, V) zeros at padding
            logits[rows, :length] = part
        return logits if logits is not None else self.model(input_ids).logits

