"""Held-out evaluation of a run: the ELBO (bits per character and per token), masked-token accuracy at
fixed mask ratios, and what the run's objective adds (`Objective.probe`)."""

from __future__ import annotations

import math

import torch

from dllm_viz.models.embedded import EmbeddedDenoiser
from dllm_viz.train.config import TrainConfig
from dllm_viz.train.data import heldout_batches
from dllm_viz.train.objectives import objective_for
from dllm_viz.train.objectives.masked import diffusion_loss, mask_tokens
from dllm_viz.train.pairs import Rows
from dllm_viz.train.precision import autocast

EVAL_MASK_RATIOS = (0.15, 0.5, 0.85, 1.0)


@torch.no_grad()
def evaluate(
    model: EmbeddedDenoiser, tokens: torch.Tensor | Rows, chars_per_token: float, cfg: TrainConfig, *, n_t: int = 8
) -> dict[str, float]:
    """Held-out ELBO (bits/char, bits/token) and masked-token accuracy at fixed mask ratios.

    Windows (or pairs, whose answer tokens alone are scored) are fixed and the generator is re-seeded,
    so successive evaluations compare like with like.
    """
    was_training = model.training
    model.eval()
    device = model.device
    gen = torch.Generator().manual_seed(1234)
    nats, count = 0.0, 0
    correct = {r: 0 for r in EVAL_MASK_RATIOS}
    total = {r: 0 for r in EVAL_MASK_RATIOS}
    for batch in heldout_batches(tokens, cfg):
        chunk = batch.x  # (b, N)
        maskable = torch.ones_like(chunk, dtype=torch.bool) if batch.maskable is None else batch.maskable
        keys = None if batch.real is None else batch.real.to(device)
        for j in range(n_t):  # midpoint rule in t: an ELBO estimate with low variance
            t = torch.full((chunk.shape[0],), (j + 0.5) / n_t)
            noisy, masked = mask_tokens(chunk, t, model.mask_token_id, gen)
            noisy, masked = torch.where(maskable, noisy, chunk), masked & maskable
            with autocast(cfg.bf16, device):
                logits = model(noisy.to(device), keys).float().cpu()
            nats += diffusion_loss(logits, chunk, masked, t).item() * chunk.numel() / n_t
        count += int(maskable.sum())
        for r in EVAL_MASK_RATIOS:
            t = torch.full((chunk.shape[0],), r)
            noisy, masked = mask_tokens(chunk, t, model.mask_token_id, gen)
            noisy, masked = torch.where(maskable, noisy, chunk), masked & maskable
            with autocast(cfg.bf16, device):
                pred = model(noisy.to(device), keys).argmax(-1).cpu()
            correct[r] += int(((pred == chunk) & masked).sum())
            total[r] += int(masked.sum())
    bits_per_token = nats / count / math.log(2)
    out = {"bits_per_token": bits_per_token, "bits_per_char": bits_per_token / chars_per_token}
    out.update({f"acc@{r:g}": correct[r] / max(1, total[r]) for r in EVAL_MASK_RATIOS})
    out.update(objective_for(cfg).probe(model, tokens, cfg, gen))
    model.train(was_training)
    return out
