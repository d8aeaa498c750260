"""WINO's `decoding_wino` (Feng-Hong/WINO-DLLM, ``LLaDA/decoding.py``), down to its float ops and ties, for
the rows of the ``wino`` preset (`revise="wino"` with WINO's verify pass, `verify_pass="shadow"`, on the
threshold schedule with LLaDA's draw and raw probability, `confidence_from="sampled_raw"`):

  - ``prob = softmax(logits.to(torch.float64))`` gathered at the argmax: the drafts' confidence in float64,
    compared in float64 with the Python float threshold (``draft_score > threshold``; `Positions.clears` in
    its `wide` rows), and the verify probabilities likewise (`core.seen.Seen`, `core.rules.wino`);
  - more drafts than WINO's cap: ``torch.topk`` over its row, the canvas then the shadow block (its
    `tail`); none above the threshold: ``torch.argmax`` (the first maximum); the verify's take-back, when
    too many fall below its threshold, ``torch.topk(largest=False)`` over the same row (`verify_pick`).

The mask token is no candidate here (WINO leaves it in its softmax and argmax; the models it runs give it
no probability, and a drafted mask would leave a "decided" mask in the block).

Example:

>>> from dllm_viz import DecodeConfig
>>> from dllm_viz.core.references import follows
>>> follows(DecodeConfig.preset("wino", 64)).name, follows(DecodeConfig.preset("wino_canvases", 64))
('wino', None)
"""
from __future__ import annotations

from typing import Any

import torch

from dllm_viz.core.references.llada import Reference


def _follows(config: Any) -> bool:
    return (config.revise == "wino" and config.verify_pass == "shadow" and config.schedule == "threshold"
            and config.confidence_from == "sampled_raw")


REFERENCE = Reference(name="wino", follows=_follows, wide=lambda dtype: True, ranks_all=False,
                      source="Feng-Hong/WINO-DLLM, LLaDA/decoding.py, decoding_wino()", keeps_mask=False,
                      tail=lambda config: config.block_size, first_max=True)


def verify_pick(score: torch.Tensor, pool: torch.Tensor, count: torch.Tensor, rows: list[int],
                prompt_length: torch.Tensor, gen_length: torch.Tensor, block_size: torch.Tensor,
                block: torch.Tensor) -> torch.Tensor:
    """`(A, G)` bool: in each of `rows`, the `count` positions of `pool` with the lowest `score`, as WINO's
    ``torch.topk(verify_score, k, largest=False)`` picks them: over its row of the canvas (+inf) and the
    shadow block, where shadow row j holds the verify probability of the block's position j."""
    out = torch.zeros_like(pool)
    host = torch.stack([prompt_length, gen_length, block_size, block, count]).tolist()
    for r in rows:
        p, g, b, blk, n = (column[r] for column in host)
        if n <= 0:
            continue
        lo = blk * b
        row = torch.full((p + g + b,), float("inf"), dtype=torch.float64, device=score.device)
        hi = min(g, lo + b)
        row[p + g:p + g + hi - lo] = score[r, lo:hi].double().masked_fill(~pool[r, lo:hi], float("inf"))
        picks = torch.topk(row, n, largest=False).indices - (p + g) + lo  # (n,) generated positions
        out[r, picks] = True
    return out
