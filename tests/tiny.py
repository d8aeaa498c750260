"""Tiny deterministic models for the tests: real torch modules, seeded weights, no global RNG."""
from __future__ import annotations

import torch


class TinyDenoiser(torch.nn.Module):
    """A one-layer bidirectional attention model over a small vocabulary.

    Its logits depend on the whole (unpadded) canvas, so confirmation order matters, and its
    weights come from an explicit generator, so every test sees the same model.
    """

    def __init__(self, vocab: int = 40, dim: int = 16, mask_token_id: int = 0, seed: int = 0, scale: float = 3.0):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.mask_token_id = mask_token_id
        self.name = "tiny"
        self.emb = torch.nn.Parameter(torch.randn(vocab, dim, generator=g))
        self.pos = torch.nn.Parameter(torch.randn(256, dim, generator=g) * 0.5)
        self.qkv = torch.nn.Parameter(torch.randn(dim, 3 * dim, generator=g) / dim**0.5)
        self.out = torch.nn.Parameter(torch.randn(dim, vocab, generator=g) * scale / dim**0.5)
        self.calls = 0

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        self.calls += 1
        B, N = input_ids.shape
        h = self.emb[input_ids] + self.pos[:N]  # (B, N, D)
        q, k, v = (h @ self.qkv).chunk(3, dim=-1)
        att = q @ k.transpose(1, 2) / q.shape[-1] ** 0.5  # (B, N, N)
        if attention_mask is not None:
            att = att.masked_fill(~attention_mask[:, None, :], float("-inf"))
        h = h + att.softmax(-1) @ v
        return h @ self.out  # (B, N, V)


class CharTokenizer:
    """Maps characters of a fixed alphabet to ids 1..; id 0 is the mask token."""

    def __init__(self, alphabet: str = "abcdefghijklmnopqrstuvwxyz .,!?'ABCDEFG"):
        self.alphabet = alphabet

    def encode(self, text: str) -> list[int]:
        return [self.alphabet.index(c) + 1 for c in text if c in self.alphabet]

    def decode(self, ids: list[int]) -> str:
        return "".join(self.alphabet[i - 1] if 0 < i <= len(self.alphabet) else "?" for i in ids)


class ScriptedDenoiser:
    """Returns logits given by a function of (row content, position): a model with known outputs."""

    def __init__(self, logits_fn, mask_token_id: int = 0):
        self.logits_fn = logits_fn
        self.mask_token_id = mask_token_id
        self.calls = 0

    def __call__(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        self.calls += 1
        return self.logits_fn(input_ids)
