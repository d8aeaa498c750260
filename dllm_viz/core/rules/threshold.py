"""``threshold``: every mask of the block whose confidence >= threshold, and at least min_k
(NVlabs/Fast-dLLM, ``llada/generate.py``, ``get_transfer_index`` with ``threshold``).

`threshold_strict` compares > instead of >= (SGLang's LowConfidence and JointThreshold, WINO). The
confidence is compared as torch compares a tensor with a Python float: in float32, but in float64 in the
rows that follow Fast-dLLM's own code (`core.references.fast_dllm`), where 0.89999998 is below 0.9.

Example (three masks above 0.5, one below; then none above, so min_k = 1):

>>> import torch
>>> from dllm_viz.core.rules.base import Columns, Positions, QuotaInputs
>>> from dllm_viz.core.rules.threshold import quota
>>> def q(conf):
...     knobs = Columns({"threshold": torch.tensor([0.5], dtype=torch.float64),
...                      "min_k": torch.tensor([1])}, {})
...     where = Positions(eligible=torch.ones(1, 4, dtype=torch.bool), conf=torch.tensor([conf]))
...     one = torch.tensor([1])
...     return QuotaInputs(k=one, top_k=one, block_step=one, block_size=one * 4, steps_per_block=one,
...                        eligible=one * 4, knobs=knobs, positions=where)
>>> quota(q([0.9, 0.6, 0.5, 0.2])).tolist(), quota(q([0.4, 0.3, 0.2, 0.1])).tolist()
([3], [1])
"""
from __future__ import annotations

import torch

from dllm_viz.core.knobs import Knob
from dllm_viz.core.rules.base import Citation, QuotaInputs, Schedule


def quota(q: QuotaInputs) -> torch.Tensor:
    assert q.positions is not None  # the threshold reads the model: no plan from the config alone
    k = q.knobs
    strict = k.threshold_strict if k.any("threshold_strict") else None
    above = q.positions.clears(k.threshold, strict).sum(-1)  # (A,)
    return torch.maximum(above, k.min_k)


RULE = Schedule(
    name="threshold", order=30, quota=quota, planned=False,
    summary="every mask whose confidence clears the threshold, at least min_k (Fast-dLLM)",
    knobs=(
        Knob(name="threshold", kind="float", default=0.9, lo_open=True, hi=1.0, column="float64",
             slider=(0.05, 1.0, 0.01),
             help="threshold schedule: confirm every position with confidence >= threshold"),
        Knob(name="threshold_strict", kind="bool", default=False, column="bool",
             help="threshold schedule: confirm confidence > threshold (SGLang, WINO), not >="),
        "min_k",
    ),
    cite=Citation(repo="NVlabs/Fast-dLLM", file="llada/generate.py", function="get_transfer_index"),
)
