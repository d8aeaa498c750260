from __future__ import annotations

import math

import torch

from dllm_viz.core.scoring import CONFIDENCE_IDS, SCORERS, Distribution, score


def test_measures_on_known_distributions():
    probs = torch.tensor([[[0.7, 0.2, 0.1, 0.0], [0.25, 0.25, 0.25, 0.25]]])  # (1, 2, 4)
    dist = Distribution(probs.log())
    noise = torch.tensor([[0.3, 0.6]])
    assert torch.allclose(SCORERS["max_prob"](dist, noise), torch.tensor([[0.7, 0.25]]))
    assert torch.allclose(SCORERS["margin"](dist, noise), torch.tensor([[0.5, 0.0]]), atol=1e-6)
    h = -(0.7 * math.log(0.7) + 0.2 * math.log(0.2) + 0.1 * math.log(0.1))
    assert torch.allclose(SCORERS["entropy"](dist, noise), torch.tensor([[1 - h / math.log(4), 0.0]]), atol=1e-6)
    assert torch.equal(SCORERS["random"](dist, noise), noise)


def test_score_picks_a_measure_per_row():
    logits = torch.randn(2, 3, 5, generator=torch.Generator().manual_seed(1))
    dist, noise = Distribution(logits), torch.rand(2, 3, generator=torch.Generator().manual_seed(2))
    ids = torch.tensor([CONFIDENCE_IDS["margin"], CONFIDENCE_IDS["random"]])
    out = score(dist, ids, noise, {"margin", "random"})
    assert torch.allclose(out[0], SCORERS["margin"](dist, noise)[0]) and torch.equal(out[1], noise[1])
