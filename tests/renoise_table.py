"""A renoiser whose logits for a row depend on that row only, bit for bit: the loop's batching checked exactly.

The tiny DiffusionGemma (tests/diffusion_gemma_tiny.py) is transformers' own model, whose float kernels
give a row slightly different bits in another batch; this one does no matmul across rows.
"""
from __future__ import annotations

import torch


class TableRenoiser:
    """A renoiser whose logits for a row depend on that row only, bit for bit (no matmul across rows):
    a token table, a per-position bias, the row's context sum and its self-conditioning. It lets the
    loop's batching be checked exactly, which float kernels of a real model do not guarantee."""

    name, vocab_size, canvas_length, device, tokenizer = "table", 24, 6, torch.device("cpu"), None

    def __init__(self, self_conditioning: float = 0.5) -> None:
        g = torch.Generator().manual_seed(0)
        self.table = torch.randn(self.vocab_size, self.vocab_size, generator=g) * 4
        self.bias = torch.randn(64, self.vocab_size, generator=g)
        self.weight = self_conditioning
        self.calls: list[int] = []  # rows of each denoise call

    def generation_defaults(self) -> dict:
        return {}

    def encode(self, ids, attention, context, *, canvas_length):
        from dllm_viz.models.renoiser import RenoiseContext

        memory = (ids * attention).sum(-1) if context is None else context.cache + (ids * attention).sum(-1)
        full = attention if context is None else torch.cat([context.attention, attention], 1)
        return RenoiseContext(cache=memory, attention=full, length=full.shape[1], canvas_length=canvas_length,
                              masks=True)

    def denoise(self, canvas, context, self_conditioning):
        self.calls.append(canvas.shape[0])
        logits = self.table[canvas] + self.bias[: canvas.shape[1]] + (context.cache % 5)[:, None, None] * 0.25
        if self_conditioning is not None:
            logits = logits + self.weight * torch.softmax(self_conditioning, -1)
        return logits

    def select(self, context, rows):
        from dllm_viz.models.renoiser import RenoiseContext

        return RenoiseContext(cache=context.cache[rows], attention=context.attention[rows], length=context.length,
                              canvas_length=context.canvas_length)
