"""Fast-dLLM's threshold decoding (NVlabs/Fast-dLLM, ``llada/generate.py``, ``get_transfer_index`` with
``threshold``), a fork of LLaDA's `generate` (`llada`: the mask token as a candidate, a drawn mask placing
nothing), computing otherwise:
  - ``F.softmax(logits.to(torch.float64), dim=-1)``: the confidence in float64, compared in float64 with
    the Python float threshold (there 0.89999998 is below 0.9; `Positions.clears` in its `wide` rows);
  - ``torch.topk`` over every masked position of the canvas row, then the first plus those at or above
    the threshold: the first `count` of that order (`llada.pick` with `ranks_all`).

Example:

>>> from dllm_viz import DecodeConfig
>>> from dllm_viz.core.references import follows
>>> follows(DecodeConfig.preset("fast_dllm", 64)).name, follows(DecodeConfig.preset("dream", 64))
('fast_dllm', None)
"""
from __future__ import annotations

from typing import Any

from dllm_viz.core.references.llada import Reference


def _follows(config: Any) -> bool:
    return config.confidence_from == "sampled_raw" and config.revise == "none" and config.schedule == "threshold"


REFERENCE = Reference(name="fast_dllm", follows=_follows, wide=lambda dtype: True, ranks_all=True,
                      source="NVlabs/Fast-dLLM, llada/generate.py, get_transfer_index(threshold=...)")
