from __future__ import annotations

import math

import pytest
import torch

from dllm_viz.core.scoring import _MIN_VOCAB, CONFIDENCE_IDS, SCORERS, Distribution, first_top, score, top_k


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


def _stable_top(x: torch.Tensor, n: int) -> torch.Tensor:
    """The ids of the n largest of each row, ties to the earlier id: a stable descending sort's first n."""
    return torch.sort(x, dim=-1, descending=True, stable=True).indices[..., :n]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_first_top_is_a_stable_sorts_first_n(dtype):
    """`first_top`: the n largest ids of each row, largest first, ties to the earlier id (rows many and few, many
    ties, -inf entries, n up to the vocabulary), as a stable descending sort orders them; so its first is the
    argmax."""
    g = torch.Generator().manual_seed(11)
    for trial in range(16):
        M, V = (1, 3, 64, 130)[trial % 4], (5, 64, 713, 1024)[trial // 4]
        x = (torch.randn(M, 1, V, generator=g) * 3).to(dtype)
        if trial % 2:
            x = (x * 2).round() / 2  # many ties
        x[..., 1] = float("-inf")
        for n in sorted({1, 2, min(5, V - 1), V - 1}):  # (one id is -inf: V - 1 above it)
            got = first_top(x, n)
            assert got is not None and got.shape == (M, 1, n) and got.dtype == torch.long
            assert torch.equal(got, _stable_top(x, n))
            assert torch.equal(got[..., 0], x.argmax(-1))
    wide = torch.randn(4, 9, generator=g).t()  # not contiguous: read through a copy, the same answer
    assert torch.equal(first_top(wide, 3), _stable_top(wide, 3))


def test_first_top_says_none_where_it_cannot_answer():
    """None (the caller falls back to `top_k`) for a row with a NaN or with fewer than n values above -inf, a long
    vocabulary, values that need a gradient, a float16 tensor; the input is left as it was."""
    g = torch.Generator().manual_seed(12)
    x = torch.randn(6, 40, generator=g)
    before = x.clone()
    assert first_top(x, 5) is not None and torch.equal(x, before)
    nan = x.clone()
    nan[2, 17] = float("nan")
    assert first_top(nan, 5) is None
    short = x.clone()
    short[4, 3:] = float("-inf")  # three finite values
    assert first_top(short, 3) is not None and first_top(short, 4) is None
    assert first_top(torch.randn(2, _MIN_VOCAB, generator=g), 5) is None
    assert first_top(x.clone().requires_grad_(), 5) is None
    assert first_top(x.half(), 5) is None
    assert first_top(x, 41) is None and first_top(x, 0) is None


@pytest.mark.parametrize("V", [64, _MIN_VOCAB])
def test_first_max_is_the_logits_argmax(V):
    """`Distribution.first_max` is the logits' first maximum. On the CPU below `_MIN_VOCAB` ids (`first_top`) even
    where two distinct logits round to one log-probability or two logits tie; from `top_k` (a longer vocabulary) it
    says None there, since topk may order that tie either way."""
    g = torch.Generator().manual_seed(3)
    logits = torch.randn(40, 1, V, generator=g) * 3
    got = Distribution(logits.clone()).first_max
    assert got is not None and torch.equal(got, logits.argmax(-1))
    close = logits.clone()
    close[5, 0, :] = 0.0  # a flat row: log-probabilities near -log(V) ...
    close[5, 0, 9] = torch.nextafter(torch.tensor(0.0), torch.tensor(1.0))  # ... where the least logit step vanishes
    lp = torch.log_softmax(close, dim=-1)
    assert lp[5, 0, 9] == lp[5, 0, 0] and close[5, 0, 9] > close[5, 0, 0]  # distinct logits, one log-probability
    tied = logits.clone()
    tied[7, 0, 3] = tied[7, 0, 30] = 50.0
    for x in (close, tied):
        dist = Distribution(x)
        if V < _MIN_VOCAB:
            assert torch.equal(dist.first_max, x.argmax(-1))
            values, ids = dist.top_logp  # the log-probabilities at the ids found, most likely first
            assert torch.equal(values, dist.logp.gather(-1, ids)) and bool((values[..., :-1] >= values[..., 1:]).all())
        else:
            assert dist.first_max is None
