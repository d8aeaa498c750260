"""Correctness of decoded traces under the world checker, as rates with Wilson confidence intervals."""
from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

from dllm_viz.core.trace import Trace
from dllm_viz.world.checker import Verdict, check
from dllm_viz.world.language import RULES

# Prompts in the world model's language: a sentence start each, from a bare name to half a fact.
WORLD_PROMPTS = ("Tom Lopez of", "Ana", "Mia Berg of New York has 3 cats and", "Sam Wood of Port Royal has")


def trace_text(trace: Trace) -> str:
    """Prompt and generation as one text (what the checker reads)."""
    return (trace.prompt_text or "") + (trace.text or "")


def verdict_of(trace: Trace) -> Verdict:
    return check(trace_text(trace))


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


def correctness(traces: Sequence[Trace]) -> dict[str, Any]:
    """Rates over runs: valid runs (at least one complete sentence, no violation: `Verdict.valid`),
    valid complete sentences, broken two-word names, and how many runs break each rule."""
    verdicts = [verdict_of(tr) for tr in traces]
    rules = Counter(rule for v in verdicts for rule in v.rules())
    return {
        "valid_runs": rate(sum(v.valid for v in verdicts), len(verdicts)),
        "valid_sentences": rate(sum(v.valid_sentences for v in verdicts), sum(v.sentences for v in verdicts)),
        "broken_entities": rate(sum(v.broken_entities for v in verdicts), sum(v.entities for v in verdicts)),
        "runs_breaking": {rule: rate(rules.get(rule, 0), len(verdicts)) for rule in RULES},
    }


def format_rate(r: dict[str, Any]) -> str:
    """``"87% [79, 92]"``: the rate and its 95% Wilson interval, in percent."""
    return f"{r['rate']:.0%} [{r['lo'] * 100:.0f}, {r['hi'] * 100:.0f}]"
