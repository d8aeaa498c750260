"""A checkable world: a small synthetic language, its generator and its checker.

Every sentence of the language can be verified by a program (`check`), so a decoding choice
that breaks a sentence shows up as a countable error instead of a shift in log-probability.
Floor 3 of the package: imports nothing above `dllm_viz.models` / `dllm_viz.core`.
"""
from __future__ import annotations

from dllm_viz.world.checker import Verdict, Violation, check, token_violations
from dllm_viz.world.generator import generate, sample_facts, sentence, space_size
from dllm_viz.world.language import RULES, SLOTS, VOCABULARY, Facts
from dllm_viz.world.oracle import WorldOracle

__all__ = ["RULES", "SLOTS", "VOCABULARY", "Facts", "Verdict", "Violation", "check", "generate", "sample_facts",
           "sentence", "space_size", "token_violations", "WorldOracle"]
