from __future__ import annotations

import math

import pytest
import torch

from dllm_viz.core.scoring import CONFIDENCE_IDS, SCORERS, Distribution, score, top_k


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


@pytest.mark.parametrize("V", [4096, 8192, 4104, 1024])
def test_top_k_is_torch_topk(V):
    """`top_k` finds the top candidates among a few strided groups of each row: the same values and ids as
    `torch.topk`, ties (which send it to topk itself), NaN and -inf included, rows many and few."""
    g = torch.Generator().manual_seed(V)
    for trial in range(12):
        M = (1, 31, 32, 70)[trial % 4]
        x = torch.randn(M, 1, V, generator=g) * 3
        if trial % 3 == 0:
            x = (x * 4).round() / 4  # many ties
        if trial % 5 == 0:
            x[..., 7] = float("nan")
        x[..., 0] = float("-inf")
        logp = torch.log_softmax(x, dim=-1)
        for n in (2, 5):
            want, got = torch.topk(logp, n, dim=-1), top_k(logp, n)
            assert torch.equal(got[0].nan_to_num(), want[0].nan_to_num()) and torch.equal(got[1], want[1])


def test_first_max_is_the_logits_argmax_or_none_at_a_tie():
    """`Distribution.first_max` reads the argmax off the top candidate where every row's top log-probability is
    strict; where two distinct logits round to one log-probability it says None (topk may order that tie either
    way), and so does a real tie."""
    g = torch.Generator().manual_seed(3)
    logits = torch.randn(40, 1, 64, generator=g) * 3
    got = Distribution(logits.clone()).first_max
    assert got is not None and torch.equal(got, logits.argmax(-1))
    close = logits.clone()
    close[5, 0, :] = 0.0  # a flat row: log-probabilities near -log(64) ...
    close[5, 0, 9] = torch.nextafter(torch.tensor(0.0), torch.tensor(1.0))  # ... where the least logit step vanishes
    lp = torch.log_softmax(close, dim=-1)
    assert lp[5, 0, 9] == lp[5, 0, 0] and close[5, 0, 9] > close[5, 0, 0]  # distinct logits, one log-probability
    assert Distribution(close).first_max is None
    tied = logits.clone()
    tied[7, 0, 3] = tied[7, 0, 30] = 50.0
    assert Distribution(tied).first_max is None
