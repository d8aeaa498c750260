"""Held-out evaluation of a run: the model in eval mode, a generator seeded the same every time, and the
figures of the run's objective (`Objective.heldout_figures`: the ELBO in bits per character and per
token, masked-token accuracy at fixed mask ratios, and what the objective adds)."""

from __future__ import annotations

import torch

from dllm_viz.models.embedded import EmbeddedDenoiser
from dllm_viz.train.config import TrainConfig
from dllm_viz.train.objectives import objective_for
from dllm_viz.train.pairs import Rows

EVAL_SEED = 1234  # the held-out masks and replacements: the same at every evaluation


@torch.no_grad()
def evaluate(
    model: EmbeddedDenoiser, tokens: torch.Tensor | Rows, chars_per_token: float, cfg: TrainConfig, *, n_t: int = 8
) -> dict[str, float]:
    """Held-out ELBO (bits/char, bits/token) and masked-token accuracy at fixed mask ratios, and the
    figures the recipe's objective adds (the masked objective's, `objectives.masked`, for the first two).

    Windows (or pairs, whose answer tokens alone are scored) are fixed and the generator is re-seeded,
    so successive evaluations compare like with like. ``n_t``: noise levels of the ELBO's midpoint rule.
    """
    was_training = model.training
    model.eval()
    gen = torch.Generator().manual_seed(EVAL_SEED)
    out = objective_for(cfg).heldout_figures(model, tokens, chars_per_token, cfg, gen, n_t=n_t)
    model.train(was_training)
    return out
