"""Confidence from a predicted distribution: the signal the schedule ranks positions by.

The article's first rule (sections 2.1-2.3): confidence for scheduling comes from the RAW logits.
`Distribution` wraps logits once and caches what the measures need, so the decoder can score the
raw distribution and, for the teaching switch, a tempered one with the same code.

Measures (all in [0, 1], higher = more confident):
- ``max_prob``: p(argmax), the LLaDA "low_confidence" remasking score.
- ``margin``: p(top1) - p(top2), which separates "sure" from "torn between two".
- ``entropy``: 1 - H(p) / log V, a whole-distribution measure.
- ``random``: a uniform draw from the request's generator; LLaDA's "random" remasking baseline.
"""
from __future__ import annotations

import math
from functools import cached_property
from typing import Callable

import torch

from dllm_viz.core.knobs import CONFIDENCES


class Distribution:
    """Softmax of `logits` `(..., V)` with cached log-probs, probs and top candidates."""

    def __init__(self, logits: torch.Tensor, top: int = 2) -> None:
        self.logits = logits
        # At least two (margin needs the runner-up), at most the vocabulary: a model with fewer
        # tokens than the candidates a trace records (a 4-token toy, say) keeps them all.
        self.top_n = min(max(2, top), logits.shape[-1])

    @cached_property
    def logp(self) -> torch.Tensor:  # (..., V)
        return torch.log_softmax(self.logits, dim=-1)

    @cached_property
    def probs(self) -> torch.Tensor:  # (..., V)
        return self.logp.exp()

    @cached_property
    def top(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Top-N probabilities and ids, `(..., N)` each, most likely first."""
        values, ids = torch.topk(self.logp, self.top_n, dim=-1)
        return values.exp(), ids

    @property
    def argmax(self) -> torch.Tensor:  # (...)
        return self.top[1][..., 0]


Scorer = Callable[[Distribution, torch.Tensor], torch.Tensor]


def max_prob(dist: Distribution, noise: torch.Tensor) -> torch.Tensor:
    return dist.top[0][..., 0]


def margin(dist: Distribution, noise: torch.Tensor) -> torch.Tensor:
    top = dist.top[0]
    return top[..., 0] - top[..., 1]


def entropy_nats(dist: Distribution) -> torch.Tensor:
    """The entropy H(p) in nats, `(...)`; 0 * log 0 is 0: masked-out (-inf) tokens contribute nothing."""
    return -(dist.probs * dist.logp.nan_to_num(neginf=0.0)).sum(-1)


def entropy(dist: Distribution, noise: torch.Tensor) -> torch.Tensor:
    return 1.0 - entropy_nats(dist) / math.log(dist.logits.shape[-1])


def random(dist: Distribution, noise: torch.Tensor) -> torch.Tensor:
    return noise


SCORERS: dict[str, Scorer] = {"max_prob": max_prob, "margin": margin, "entropy": entropy, "random": random}
if tuple(SCORERS) != CONFIDENCES:
    raise ImportError(f"scorer registry {tuple(SCORERS)} != config.CONFIDENCES {CONFIDENCES}")
CONFIDENCE_IDS = {name: i for i, name in enumerate(CONFIDENCES)}


def score(dist: Distribution, measure_id: torch.Tensor | Callable[[], torch.Tensor],
          noise: torch.Tensor | Callable[[], torch.Tensor], present: set[str]) -> torch.Tensor:
    """Confidence `(B, L)`: row b uses measure CONFIDENCES[measure_id[b]]; only `present` are computed.
    `measure_id` and `noise` may be callables giving them: `measure_id` is read only when more than one measure
    is present, a callable `noise` only when ``random`` is (each measure of `dist` has its shape, `(B, L)`)."""
    if len(present) == 1:  # every row's measure
        (name,) = present
        if callable(noise) and name != "random":
            return SCORERS[name](dist, noise).float()
        noise = noise() if callable(noise) else noise
        return SCORERS[name](dist, noise).float().expand(noise.shape)
    noise = noise() if callable(noise) else noise
    measure_id = measure_id() if callable(measure_id) else measure_id
    out = torch.zeros(noise.shape, dtype=torch.float32, device=noise.device)
    for name in present:
        value = SCORERS[name](dist, noise).float()
        out = torch.where((measure_id == CONFIDENCE_IDS[name]).unsqueeze(-1), value, out)
    return out
