"""``eb``: the EB-sampler, an entropy-bounded schedule (Ben-Hamu et al., "Accelerated Sampling from Masked
Diffusion Models via Entropy Bounded Unmasking", arXiv 2505.24857; as SGLang ships it for masked models,
sgl-project/sglang, ``python/sglang/srt/dllm/algorithm/eb_sampling.py``, ``EBSampling.run``).

Each step sorts the masks of the current block by the entropy of their raw distribution, lowest first,
and confirms the first one always, then each next one while the entropies of the masks before it sum to
at most `gamma` (nats): ``reveal[0] = True; reveal[j] = cumsum(sorted_entropy)[j - 1] <= gamma``. The sum
of entropies bounds the error of confirming several masks at once (the paper's error proxy), so a step
confirms many positions where the model is sure and one where it is not. It picks by that entropy too
(`rank`), whatever the request's confidence measure (the `eb_sampler` preset shows confidence
"entropy", which orders the same way). The entropy is the RAW distribution's (the article's rule: the
temperature shapes only the token drawn), with the mask token out of the candidates as in SGLang.

Example (four masks with entropies 0.01, 0.5, 0.2, 0.02 nats and gamma 0.15: the sums before each in
sorted order are 0, 0.01, 0.03, 0.23, so three are confirmed, 0.2 among them):

>>> import torch
>>> from dllm_viz.core.rules.eb import reveal_count
>>> reveal_count(torch.tensor([[0.01, 0.5, 0.2, 0.02]]), torch.ones(1, 4, dtype=torch.bool),
...              torch.tensor([0.15])).tolist()
[3]

And a decode with the preset, SGLang's defaults (gamma 0.15, argmax, blocks of 32 where they divide):

>>> from dllm_viz import DecodeConfig, decode, load_model
>>> config = DecodeConfig.preset("eb_sampler", 8)
>>> config.schedule, config.gamma, config.temperature
('eb', 0.15, 0.0)
>>> (trace,) = decode(load_model("tasks"), ["copy : b e a d ="], config)
>>> sum(len(step.selected) for step in trace.steps)
8
"""
from __future__ import annotations

from typing import Any

import torch

from dllm_viz.core.knobs import Knob
from dllm_viz.core.rules.base import Citation, QuotaInputs, Schedule, ShippedPreset

SOURCE = "sgl-project/sglang (after 0.5.23), python/sglang/srt/dllm/algorithm/eb_sampling.py, EBSampling.run"


def reveal_count(entropy: torch.Tensor, eligible: torch.Tensor, gamma: torch.Tensor) -> torch.Tensor:
    """`(A,)` long: how many of each row's eligible positions the EB-sampler confirms, from their
    `entropy (A, G)` (nats), `eligible (A, G)` and `gamma (A,)`: one, then one more for every prefix of the
    sorted entropies (all but the last) whose sum is at most gamma; the caller clamps to the masks left."""
    h = entropy.masked_fill(~eligible, float("inf"))  # (A, G): the others sort last and never fit
    before = torch.sort(h, dim=-1).values.cumsum(-1)[:, :-1]  # (A, G - 1): the sum of the first j, j >= 1
    return 1 + (before <= gamma.unsqueeze(-1)).sum(-1)


def quota(q: QuotaInputs) -> torch.Tensor:
    assert q.positions is not None  # the EB-sampler reads the model: no plan from the config alone
    return reveal_count(q.positions.entropy, q.positions.eligible, q.knobs.gamma)


def rank(q: QuotaInputs) -> torch.Tensor:
    """`(A, G)`: lowest entropy first (the positions `quota` counted)."""
    assert q.positions is not None
    return -q.positions.entropy


def _preset(gen_length: int) -> dict[str, Any]:
    # EBSampling's defaults: gamma 0.15, the argmax of every mask, LLaDA2's 32-position blocks.
    block = 32 if gen_length > 32 and gen_length % 32 == 0 else None
    return dict(schedule="eb", gamma=0.15, temperature=0.0, confidence="entropy", block_length=block)


RULE = Schedule(
    name="eb", order=60, quota=quota, rank=rank, planned=False,
    summary="EB-sampler: the lowest-entropy masks while their entropies sum to at most gamma",
    knobs=(
        Knob(name="gamma", kind="float", default=0.15, column="float32", slider=(0.0, 2.0, 0.01),
             help="eb: the entropy budget (nats): confirm the next lowest-entropy mask while the entropies "
                  "before it sum to at most gamma (>= 0; 0: one per step unless entropies are 0)"),
    ),
    presets={"eb_sampler": ShippedPreset(source=SOURCE, fields=_preset,
                                         note="the lowest-entropy masks while their entropies sum to at most 0.15, "
                                              "at least one; argmax")},
    cite=Citation(repo="sgl-project/sglang", file="python/sglang/srt/dllm/algorithm/eb_sampling.py",
                  function="EBSampling.run", paper="arXiv 2505.24857"),
)
