"""What the as-shipped tests (issue 40) share: models both sides can run, and per-step canvases.

Each original (ReMDM vendored in tests/remdm/; MDPO's RCR, WINO and d3LLM's AUP re-implemented in
tests/mdpo/, tests/wino/, tests/d3llm/) runs through a thin adapter on the same model as
`dllm_viz.decode`, and the two are compared step by step: the canvas after every step (the ids,
the mask id where a position is masked), from which each step's confirmations and take-backs
follow. The models' logits are a function of what they are given, so the same canvas in means
the same logits in on both sides.
"""
from __future__ import annotations

import math

import torch

NEVER = -1e4  # the mask token's logit in these models (as the embedded ones): never a candidate


class NoMaskTiny(torch.nn.Module):
    """`tests.tiny.TinyDenoiser` with the mask token's logit at -1e4, as a trained LLaDA and the
    embedded models give it (the originals leave the mask token in their softmax and argmax)."""

    def __init__(self, **kwargs) -> None:
        super().__init__()
        from tests.tiny import TinyDenoiser

        self.inner = TinyDenoiser(**kwargs)
        self.mask_token_id, self.name = self.inner.mask_token_id, "tiny-no-mask"

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        return self.inner(input_ids, attention_mask).index_fill(-1, torch.tensor([self.mask_token_id]), NEVER)


class AttentionTiny(torch.nn.Module):
    """One bidirectional attention layer over token and position embeddings, with LLaDA's inputs.

    `forward(input_ids (B, N), attention_mask=None | (B, N) bool keys | (B, 1, N, N) bool
    query-by-key, position_ids=None | (N,) | (B, N))` -> logits `(B, N, V)` (float32). A row's
    logits are a function of its token, its position id and the (token, position id) pairs it may
    attend to, and nothing else (no convolution, no other row): WINO's shadow block, a copy of the
    block whose row i attends to everything but the token at i and to the other copies, means here
    what it means on LLaDA, and differs from the canvas with position i masked. Seeded weights.
    """

    def __init__(self, vocab: int = 40, dim: int = 16, mask_token_id: int = 0, seed: int = 0, scale: float = 3.0):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.mask_token_id, self.name = mask_token_id, "attention-tiny"
        self.emb = torch.nn.Parameter(torch.randn(vocab, dim, generator=g))
        self.pos = torch.nn.Parameter(torch.randn(512, dim, generator=g) * 0.5)
        self.qkv = torch.nn.Parameter(torch.randn(dim, 3 * dim, generator=g) / dim**0.5)
        self.out = torch.nn.Parameter(torch.randn(dim, vocab, generator=g) * scale / dim**0.5)
        self.calls: list[dict] = []  # per call: the input shape and mask kind (what a decoder gave the model)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                position_ids: torch.Tensor | None = None) -> torch.Tensor:
        B, N = input_ids.shape
        kind = "none" if attention_mask is None else f"{attention_mask.dim()}d"
        self.calls.append({"shape": (B, N), "mask": kind, "positions": position_ids is not None})
        pos = torch.arange(N) if position_ids is None else position_ids.reshape(-1, N)
        h = self.emb[input_ids] + self.pos[pos]  # (B, N, D)
        q, k, v = (h @ self.qkv).chunk(3, dim=-1)
        att = q @ k.transpose(1, 2) / math.sqrt(q.shape[-1])  # (B, N, N)
        if attention_mask is not None:
            allowed = attention_mask[:, None, :] if attention_mask.dim() == 2 else attention_mask[:, 0]
            att = att.masked_fill(~allowed.bool(), float("-inf"))
        h = h + att.softmax(-1) @ v
        logits = h @ self.out  # (B, N, V)
        return logits.index_fill(-1, torch.tensor([self.mask_token_id]), NEVER)


class TableModel:
    """Logits that depend on the generated position only, never on the canvas: `table (G, V)` after
    `prompt_length` positions (zeros elsewhere). For distributions over thousands of seeds."""

    def __init__(self, table: torch.Tensor, prompt_length: int = 0, mask_token_id: int = 0) -> None:
        self.table, self.P, self.mask_token_id, self.name = table.float(), prompt_length, mask_token_id, "table"

    def __call__(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        B, N = input_ids.shape
        out = torch.zeros(B, N, self.table.shape[1])
        out[:, self.P: self.P + self.table.shape[0]] = self.table
        return out.index_fill(-1, torch.tensor([self.mask_token_id]), NEVER)


def canvases(trace) -> list[list[int]]:
    """The generated canvas after each step of a dllm-viz trace, the mask id where masked."""
    mask = trace.mask_token_id
    return [[mask if t is None else t for t in trace.canvas_at(rec.step)] for rec in trace.steps]


def changes(before: list[int], after: list[int], mask: int) -> dict[str, list[int]]:
    """What a step did, from the canvases around it: positions confirmed, taken back, rewritten."""
    pairs = list(enumerate(zip(before, after)))
    return {"confirmed": [i for i, (a, b) in pairs if a == mask and b != mask],
            "remasked": [i for i, (a, b) in pairs if a != mask and b == mask],
            "rewritten": [i for i, (a, b) in pairs if mask not in (a, b) and a != b]}


def first_difference(ours: list[list[int]], theirs: list[list[int]], start: list[int], mask: int) -> str | None:
    """Where two per-step canvas sequences part (both start from `start`), for the assertion message."""
    before = start
    for i, (a, b) in enumerate(zip(ours, theirs)):
        if a != b:
            return (f"step {i}: dllm-viz {changes(before, a, mask)} != original {changes(before, b, mask)}"
                    f" (of {len(theirs)} original steps)")
        before = b
    if len(ours) != len(theirs):
        return f"dllm-viz took {len(ours)} steps, the original {len(theirs)}"
    return None
