"""The optimiser of a run: AdamW with weight decay on matrices only, and its learning-rate schedule."""

from __future__ import annotations

import math

import torch
from torch import nn

from dllm_viz.train.config import TrainConfig


def make_optimizer(model: nn.Module, cfg: TrainConfig) -> torch.optim.AdamW:
    """AdamW (betas 0.9, 0.98) at ``cfg.lr``: ``weight_decay`` on the weight matrices; none on vectors
    (norms, biases) and on the local mixing convolution (parameters named ``mix``)."""
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2 or "mix" in n]
    decay = [p for n, p in model.named_parameters() if not (p.dim() < 2 or "mix" in n)]
    groups = [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=cfg.lr, betas=(0.9, 0.98))


def lr_at(step: int, cfg: TrainConfig) -> float:
    """Linear warm-up then cosine decay to ``min_lr_ratio * lr``."""
    if step < cfg.warmup:
        return cfg.lr * (step + 1) / cfg.warmup
    progress = min(1.0, (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup))
    return cfg.lr * (cfg.min_lr_ratio + (1 - cfg.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * progress)))
