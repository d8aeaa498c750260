"""SGLang's confidence (sgl-project/sglang 0.5.23, ``python/sglang/srt/dllm/algorithm/low_confidence.py``,
``LowConfidence.step``; ``joint_threshold.py``, ``JointThreshold.step``): ``torch.softmax(logits)`` gathered
at the argmax, the raw distribution with SGLang's own float ops. It equals the raw confidence but for the
last bits of float32, so that a threshold decides exactly as SGLang's (``confidence_from="softmax"``).

SGLang's loop (``base.py``, ``DllmAlgorithm._run_sync`` and ``_run_fdfo``) runs a forward, then the
algorithm's ``step``, until every block reports done; LowConfidence computes ``done`` from the block it was
given, before its own update (``low_confidence.py`` line 33), so the step that fills a block's last masks
reports "not done" and one more forward runs on the finished block and changes nothing. A config that is
LowConfidence's rule (the threshold schedule, strict, ranking by SGLang's softmax, no revision) is that loop
(`closes_blocks`): its trace marks the step that fills a block (`StepRecord.closing_forward`) and counts that
forward (`Trace.nfe`). JointThreshold closes a block
at a step of its own (a step of the decode), with no forward more.

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


def closes_blocks(config: Any) -> bool:
    """Whether `config` is SGLang's LowConfidence loop, which runs one more forward after each block it fills."""
    return (config.confidence_from == "softmax" and config.revise == "none" and config.schedule == "threshold"
            and config.threshold_strict)


def softmax_confidence(raw_conf: torch.Tensor, x: Packed, params: Any, drawn: Drawn | None) -> torch.Tensor:
    """The measure on torch.softmax(logits), as SGLang computes it, `(A, G)`."""
    dist = SoftmaxDistribution(x.logits, top=2)
    return x.unpack(score(dist, x.measure_id, x.noise[1].unsqueeze(1), set(params.measures)))
