"""Rates with 95% Wilson score intervals: how the correctness studies (world, tasks) report a share of runs."""
from __future__ import annotations

import math
from typing import Any


def wilson(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval for a binomial rate (95% by default); (0, 1) when n == 0.

    Better than the normal approximation at small n and at rates near 0 or 1, which is where
    lesson rates live (Wilson 1927; Brown, Cai & DasGupta 2001).
    """
    if not (isinstance(successes, int) and isinstance(n, int) and 0 <= successes <= n):
        raise ValueError(f"successes={successes!r}, n={n!r}: expected integers with 0 <= successes <= n")
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def rate(successes: int, n: int) -> dict[str, Any]:
    """``{"k", "n", "rate", "lo", "hi"}``, rounded for JSON."""
    lo, hi = wilson(successes, n)
    return {"k": successes, "n": n, "rate": round(successes / n, 4) if n else 0.0, "lo": round(lo, 4),
            "hi": round(hi, 4)}


def format_rate(r: dict[str, Any]) -> str:
    """``"87% [79, 92]"``: the rate and its 95% Wilson interval, in percent."""
    return f"{r['rate']:.0%} [{r['lo'] * 100:.0f}, {r['hi'] * 100:.0f}]"
