"""Checkable tasks modelled on ParallelBench: list edits and 4x4 grids, each with an exact checker,
a seeded generator and an exact oracle (the accuracy-against-parallelism curves they draw: `dllm_viz.studies.curves`).

Where parallel confirmation breaks depends on the task: copying survives any number of tokens per
step, a shuffle or a Latin square does not, because the tokens confirmed together depend on each
other. Floor 3 of the package, beside `world`: imports nothing above `dllm_viz.models` / `dllm_viz.core`.
"""
from __future__ import annotations

from dllm_viz.tasks.checker import RULES, Verdict, check, check_text
from dllm_viz.tasks.families import GENERATORS, Task, draw, generate, lines, parse, prompts, right_answer
from dllm_viz.tasks.oracle import TaskOracle, answers, total_correlation
from dllm_viz.tasks.vocab import FAMILIES, TOKENS, build_tokenizer, tokenizer

__all__ = ["FAMILIES", "GENERATORS", "RULES", "TOKENS", "Task", "TaskOracle", "Verdict", "answers", "build_tokenizer",
           "check", "check_text", "draw", "generate", "lines", "parse", "prompts", "right_answer", "tokenizer",
           "total_correlation"]
