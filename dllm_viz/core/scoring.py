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
from functools import cached_property, lru_cache
from typing import Callable

import numpy as np
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
    def top_logp(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Top-N log-probabilities and ids, `(..., N)` each, most likely first: found on the logits, a tie to the
        earlier id (`first_top`), where that can be done; else `top_k` of the log-probabilities."""
        ids = first_top(self.logits, self.top_n)
        if ids is None:
            return top_k(self.logp, self.top_n)
        self.__dict__["first_max"] = ids[..., 0]  # the logits' first maximum, whatever the ties
        return self.logp.gather(-1, ids), ids

    @cached_property
    def top(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Top-N probabilities and ids, `(..., N)` each, most likely first."""
        values, ids = self.top_logp
        return values.exp(), ids

    @property
    def argmax(self) -> torch.Tensor:  # (...)
        return self.top[1][..., 0]

    @cached_property
    def first_max(self) -> torch.Tensor | None:
        """`(...)` the first maximum of each row of the logits (`logits.argmax(-1)`), read off the top candidate
        when every row's top log-probability is strictly above its runner-up; None when some row ties there. The
        log-softmax is monotone, so a row's strict top is its logits' only maximum (a tie of the log-probabilities
        may hide distinct logits, and topk's order among ties is not the first index: those rows need argmax)."""
        values, ids = self.top_logp
        if "first_max" in self.__dict__:  # `first_top` found them: its first is the argmax, ties included
            return self.__dict__["first_max"]
        if values.shape[-1] > 1 and not bool((values[..., 0] > values[..., 1]).all()):
            return None
        return ids[..., 0]


def top_k(values: torch.Tensor, n: int) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """`torch.topk(values, n, dim=-1)`: the same values and ids, found on the CPU among a few candidates when
    many rows are long (the kernel copies every row whole; a step asks it of M x V values).

    The last dim's V values fall into 8 strided groups `{j, j + V/8, ...}`; the n + 1 groups of the largest
    maxima hold the n + 1 largest values of their union, and every value outside them is at most the least of
    those maxima. So when those n + 1 values are strictly decreasing (no tie, no NaN), the first n are the n
    largest of the row, each strictly above every other value: topk's answer, unique. Otherwise, and for short
    or few rows, a vocabulary not split in 8, or another device, `torch.topk` itself."""
    V = values.shape[-1]
    M = values.numel() // max(1, V)
    w = V // _GROUPS
    if values.device.type != "cpu" or M < _MIN_ROWS or V < _MIN_VOCAB or V % _GROUPS or w < 4 * (n + 1):
        return torch.topk(values, n, dim=-1)
    x = values.reshape(M, V)
    groups = x.view(M, _GROUPS, w).amax(1).topk(n + 1, dim=-1).indices  # (M, n + 1): the groups kept
    ids = groups.repeat(1, _GROUPS) + _strides(w, n + 1)  # (M, 8 (n + 1)) their members
    top, at = x.gather(1, ids).topk(n + 1, dim=-1)  # (M, n + 1) each
    if not bool((top[:, :-1] > top[:, 1:]).all()):  # a tie or a NaN among them: topk's own order
        return torch.topk(values, n, dim=-1)
    return top[:, :n].reshape(*values.shape[:-1], n), ids.gather(1, at[:, :n]).reshape(*values.shape[:-1], n)


def first_top(values: torch.Tensor, n: int) -> torch.Tensor | None:
    """`(..., n)` the ids of the `n` largest of each row of `values (..., V)`, largest first, a tie to the earlier
    id: the order of a stable descending sort, so the first is `values.argmax(-1)`, the first maximum.

    Found on the CPU by `n` passes of numpy's argmax over a copy of the rows, each pass taking out the one before
    (one thread, V = 1,024: about half of torch.topk's time at 128 rows and more, even at 16; topk copies every row
    into a heap of its own, and its order among ties is its own, which leaves the argmax to be checked for ties).
    None where it does not hold or pay: another device or dtype, values that need a gradient, a vocabulary of
    `_MIN_VOCAB` or more (n passes over it cost more than `top_k`'s groups), or a row whose first found is not
    finite (a NaN, which numpy's argmax takes first) or whose `n`-th is not (it has fewer than `n` above -inf)."""
    V = values.shape[-1]
    if values.device.type != "cpu" or values.dtype not in (torch.float32, torch.float64) or values.requires_grad \
            or V >= _MIN_VOCAB or not 0 < n <= V or values.numel() == 0:
        return None
    x = values.reshape(-1, V).numpy()  # (M, V): a view (a copy when `values` is not contiguous)
    work, M = x.copy(), x.shape[0]
    rows = np.arange(M)
    ids = np.empty((M, n), dtype=np.int64)
    for j in range(n):
        found = ids[:, j] = work.argmax(-1)  # (M,)
        if j + 1 < n:
            work[rows, found] = -np.inf
    # the first found as it is (a NaN), the n-th as the last pass saw it (-inf once a row ran out, which repeats an
    # id): a sum of them all is finite only where each is (an infinite one, or a sum past the dtype, says None too)
    if not math.isfinite(float(x[rows, ids[:, 0]].sum()) + float(work[rows, found].sum())):
        return None
    return torch.from_numpy(ids).view(*values.shape[:-1], n)


# The strided groups of a row; fewer rows, or shorter ones, and topk costs about what the ops around it cost
# (measured on one CPU thread: at V = 1024 about even, at V = 8192 2-3x faster, at V = 126464 2x).
_GROUPS, _MIN_ROWS, _MIN_VOCAB = 8, 32, 4096


@lru_cache(maxsize=64)
def _strides(w: int, kept: int) -> torch.Tensor:
    """`(8 kept,)`: the offset of each group member, `i * w` for i < 8, each repeated `kept` times (made once)."""
    with torch.inference_mode(False):  # a plain tensor, whichever mode first asks for it
        return (torch.arange(_GROUPS) * w).repeat_interleave(kept)


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
            value = SCORERS[name](dist, noise)
            return value if value.dtype == torch.float32 else value.float()
        noise = noise() if callable(noise) else noise
        return SCORERS[name](dist, noise).float().expand(noise.shape)
    noise = noise() if callable(noise) else noise
    measure_id = measure_id() if callable(measure_id) else measure_id
    out = torch.zeros(noise.shape, dtype=torch.float32, device=noise.device)
    for name in present:
        value = SCORERS[name](dist, noise).float()
        out = torch.where((measure_id == CONFIDENCE_IDS[name]).unsqueeze(-1), value, out)
    return out
