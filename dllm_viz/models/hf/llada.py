"""`llada`: LLaDA (Nie et al. 2025, arXiv:2502.09992), custom code (`trust_remote_code`).

Logits at i predict token i; the mask id comes from `config.mask_token_id` or the tokenizer. Some
releases of its modeling file turn attention *causal* as soon as an attention mask is passed (or
ignore it), so the adapter probes once at load time and, if the mask is not honoured, runs each
group of equally long rows on its own, unpadded (exact, one forward per distinct length).

WINO's shadow block (`logits_shadow`, `models.shadow`) needs a forward that takes a 4-D boolean attention
mask and position ids, as WINO's modified ``modeling_llada.py`` does; the released modeling file takes
neither. `probe_shadow` checks at load time that a shadow row sees what the mask and the ids say
(`can_shadow`); where it does not, WINO's verify runs as per-position canvases and the run facts say so.
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

    def __init__(self, model: nn.Module, *, padding: str = "split", can_shadow: bool = False, **kwargs: Any) -> None:
        super().__init__(model, **kwargs)
        if padding not in self.PADDING_MODES:
            raise ValueError(f"padding={padding!r} is invalid: expected one of {' | '.join(self.PADDING_MODES)}")
        self.padding = padding
        self.can_shadow = can_shadow  # the forward takes WINO's shadow block (`probe_shadow`)

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
        adapter.can_shadow = adapter.probe_shadow()
        return adapter

    @torch.no_grad()
    def probe_shadow(self) -> bool:
        """Whether the forward takes WINO's shadow block: four tokens and one shadow row at position 1 holding
        the token there (so it sees exactly what canvas row 1 sees) give canvas row 1's logits, and the canvas
        rows the plain forward's. A forward that ignores the position ids or the 4-D mask, or refuses them
        (TypeError, ValueError, RuntimeError), fails it; out of memory is raised."""
        from dllm_viz.models.shadow import shadow_inputs

        vocab = self.model.get_input_embeddings().num_embeddings
        ids = (torch.arange(4, device=self.device) * (vocab // 4) + 1).unsqueeze(0)  # (1, 4)
        allowed, positions = shadow_inputs(4, 1, 2, self.device)
        try:
            reference = self.model(ids).logits.float()[0]  # (4, V)
            shadowed = self.model(torch.cat([ids, ids[:, 1:2]], 1), attention_mask=allowed,
                                  position_ids=positions).logits.float()[0]  # (5, V)
        except (TypeError, ValueError, RuntimeError) as err:
            if is_out_of_memory(err):
                raise
            return False
        dtype = next(self.model.parameters()).dtype
        scale = reference.abs().max().clamp_min(torch.finfo(torch.float32).tiny)
        error = float(torch.cat([(shadowed[:4] - reference), (shadowed[4] - reference[1]).unsqueeze(0)]).abs().max()
                      / scale)
        return error <= PROBE_TOLERANCE.get(dtype, max(PROBE_TOLERANCE.values()))

    @torch.no_grad()
    def logits_shadow(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None, rows: torch.Tensor,
                      cols: torch.Tensor, blocks: torch.Tensor, hidden_rows: torch.Tensor,
                      hidden_cols: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """WINO's shadow forward (`models.base.logits_shadow`), one row with a block at a time as WINO calls
        LLaDA: `model(ids + shadow masks, attention_mask=(1, 1, n + b, n + b), position_ids=(n + b,))`."""
        from dllm_viz.models.base import logits_at
        from dllm_viz.models.shadow import by_rows

        if not self.can_shadow:
            raise ValueError(f"{self.name!r} takes no shadow block (its forward takes no position_ids and 4-D mask)")

        def call(ids: torch.Tensor, allowed: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
            logits = self.model(ids.to(self.device), attention_mask=allowed.to(self.device),
                                position_ids=positions.to(self.device)).logits.float()[0]  # (n + b, V)
            return self._clean(logits)

        return by_rows(call, lambda r, c: logits_at(self, input_ids, attention_mask, r, c), self.mask_token_id,
                       input_ids, attention_mask, rows, cols, blocks, hidden_rows, hidden_cols)

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
                        "%g); padded batches run in split mode (one forward per row length)",
                        self.name, error, tolerance)
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

