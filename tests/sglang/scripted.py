"""A block-causal scripted model both sides of the equivalence tests can run (torch only).

The logits at absolute position p depend on p and on the committed tokens before p, never on
what follows. That is what SGLang's block-causal models see (the committed prefix and the
current block), and it makes the playground's full canvas (which also holds later, still masked
blocks) give the same logits, so the two decoders can be compared step by step. Committed
tokens feed back into the logits, so the order of confirmation matters.
"""
from __future__ import annotations

import torch

VOCAB = 48
MASK_ID = VOCAB - 1  # a special token at the end of the vocabulary, as in LLaDA2 and SDAR
MAX_POSITIONS = 512
CONTEXTS = 61


class CausalScript:
    """`logits(tokens (B, N)) -> (B, N, V)`: a seeded position table plus a context table."""

    def __init__(self, seed: int = 0, scale: float = 2.5) -> None:
        g = torch.Generator().manual_seed(seed)
        self.position = torch.randn(MAX_POSITIONS, VOCAB, generator=g) * scale  # (P, V)
        self.context = torch.randn(CONTEXTS, VOCAB, generator=g) * scale  # (C, V)

    def logits(self, tokens: torch.Tensor) -> torch.Tensor:
        B, N = tokens.shape
        known = torch.where(tokens == MASK_ID, 0, tokens)  # (B, N)
        weights = torch.arange(1, N + 1)  # (N,)
        before = torch.cumsum(known * weights, dim=-1) - known * weights  # (B, N): strictly before p
        logits = self.position[:N].unsqueeze(0) + self.context[before % CONTEXTS]  # (B, N, V)
        return logits


class ScriptedDenoiser:
    """The playground's view of `CausalScript` (the `Denoiser` protocol)."""

    mask_token_id = MASK_ID
    name = "causal-script"

    def __init__(self, script: CausalScript) -> None:
        self.script = script

    def __call__(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        return self.script.logits(input_ids)
