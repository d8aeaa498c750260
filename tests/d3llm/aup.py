"""d3LLM's AUP as `get_aup` computes it: a clean re-implementation (tests/d3llm/README.md).

Re-implemented from hao-ai-lab/d3LLM at e5bfcac, `AUP_leaderboard/aup_utils.py`; the repository has
no licence, so none of its code is copied here.

    points sorted by rho (stable: equal rho keep their order), y in percent;
    refused when y_1 - y_m > y_min_offset (the LAST point, at the highest rho, against the first);
    kept: the points with y >= y_1 - y_min_offset (a middle point below is dropped silently);
    AUP = rho_1 y_1 + sum_i (rho_i - rho_{i-1}) (y_i W(y_i) + y_{i-1} W(y_{i-1})) / 2,
    W(y) = min(exp(-alpha (1 - y / y_max)), 1).
"""
from __future__ import annotations

import math


class Refused(AssertionError):
    """get_aup refuses the curve (the original raises AssertionError with the same reason)."""


def weight(y: float, y_max: float, alpha: float = 3.0) -> float:
    return min(math.exp(-alpha * (1 - y / y_max)), 1.0)


def get_aup(rho: list[float], y: list[float], y_max: float, alpha: float = 3.0, y_min_offset: float = 5.0) -> float:
    if len(rho) != len(y) or not rho:
        raise Refused("rho and y must be non-empty and of the same length")
    if any(r <= 0 for r in rho):
        raise Refused("all rho must be positive")
    points = sorted(zip(rho, y), key=lambda p: p[0])
    first, last = points[0][1], points[-1][1]
    if first - last > y_min_offset:
        raise Refused(f"accuracy degradation too large: {first} at the lowest parallelism, {last} at the highest "
                      f"(more than y_min_offset={y_min_offset} below)")
    kept = [(r, a) for r, a in points if a >= first - y_min_offset]
    area = kept[0][0] * kept[0][1]
    for (r0, a0), (r1, a1) in zip(kept, kept[1:]):
        area += 0.5 * (r1 - r0) * (a1 * weight(a1, y_max, alpha) + a0 * weight(a0, y_max, alpha))
    return area
