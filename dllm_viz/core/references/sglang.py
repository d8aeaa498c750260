"""SGLang's confidence (sgl-project/sglang 0.5.23, ``python/sglang/srt/dllm/algorithm/low_confidence.py``,
``LowConfidence.step``; ``joint_threshold.py``, ``JointThreshold.step``): ``torch.softmax(logits)`` gathered
at the argmax, the raw distribution with SGLang's own float ops. It equals the raw confidence but for the
last bits of float32, so that a threshold decides exactly as SGLang's (``confidence_from="softmax"``).

Example:

>>> import torch
>>> from dllm_viz.core.references.sglang import SoftmaxDistribution
>>> SoftmaxDistribution(torch.tensor([[0.0, 0.0]])).top[0].tolist()
[[0.5, 0.5]]
"""
from __future__ import annotations

from functools import cached_property
from typing import Any

import torch

from dllm_viz.core.packed import Drawn, Packed
from dllm_viz.core.scoring import Distribution, score


class SoftmaxDistribution(Distribution):
    """The same distribution with its probabilities from `torch.softmax(logits)` rather than
    `exp(log_softmax(logits))`: the float ops of SGLang's LowConfidence and JointThreshold, which
    gather softmax(logits) at the argmax. The two agree up to the last bit of float32; a threshold
    that must decide exactly as SGLang does (confidence_from="softmax") reads this one."""

    @cached_property
    def probs(self) -> torch.Tensor:  # (..., V)
        return torch.softmax(self.logits, dim=-1)

    @cached_property
    def top(self) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.topk(self.probs, self.top_n, dim=-1)


def softmax_confidence(raw_conf: torch.Tensor, x: Packed, params: Any, drawn: Drawn | None) -> torch.Tensor:
    """The measure on torch.softmax(logits), as SGLang computes it, `(A, G)`."""
    dist = SoftmaxDistribution(x.logits, top=2)
    return x.unpack(score(dist, x.measure_id, x.noise[1].unsqueeze(1), set(params.measures)))
