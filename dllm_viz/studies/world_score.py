"""Correctness of decoded traces under the world checker, as rates with Wilson confidence intervals
(`dllm_viz.studies.stats`; `wilson`, `rate` and `format_rate` are importable from here too)."""
from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from dllm_viz.studies.stats import format_rate, rate, wilson
from dllm_viz.core.trace import Trace
from dllm_viz.world.checker import Verdict, check
from dllm_viz.world.language import RULES

__all__ = ["WORLD_PROMPTS", "correctness", "fork_verdicts", "format_rate", "rate", "trace_text", "verdict_of", "wilson"]

# Prompts in the world model's language: a sentence start each, from a bare name to half a fact.
WORLD_PROMPTS = ("Tom Lopez of", "Ana", "Mia Berg of New York has 3 cats and", "Sam Wood of Port Royal has")


def trace_text(trace: Trace) -> str:
    """Prompt and generation as one text (what the checker reads)."""
    return (trace.prompt_text or "") + (trace.text or "")


def verdict_of(trace: Trace) -> Verdict:
    return check(trace_text(trace))


def fork_verdicts(parent: Trace, fork: Trace) -> tuple[Verdict, Verdict]:
    """The checker's verdict on a trace of the world model and on a fork of it (`core.fork`), or on any two
    traces of its language: what the change at the fork did to the text's correctness."""
    return verdict_of(parent), verdict_of(fork)


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
