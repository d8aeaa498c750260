"""Accuracy against parallelism: the knobs that trade steps for tokens per step, the curve's points
from decoded traces, and d3LLM's AUP. Pure functions: decoding happens in `bench/parallel_tasks.py`.

A knob is a schedule with one setting swept (`KNOBS`): the confidence threshold, a constant k
(top-k with decay 1) or top-k decay (the article's rule with decay 0.9, from k0). A point of a curve
is one setting over the benchmark's prompts (`PROMPTS_PER_FAMILY` tasks of a family, seeded by
`PROMPT_SEED`): its parallelism is the answer tokens written per forward pass (all runs' tokens over
all runs' forwards, d3LLM's "tokens per forward", TPF) and its accuracy the share of runs the checker
accepts, with a 95% Wilson interval.

AUP (Accuracy Under Parallelism) is d3LLM's score of such a curve (Qian et al. 2026, "d3LLM:
Ultra-Fast Diffusion LLM using Pseudo-Trajectory Distillation", ICML; the definition as the
hao-ai-lab blog "Two Goals in One dLLM" states it, and `get_aup` in hao-ai-lab/d3LLM's
`AUP_leaderboard/aup_utils.py`): with the points sorted by parallelism ``rho_1 <= ... <= rho_m`` (a
stable sort: points of equal parallelism keep their order and stay apart, a zero-width trapezoid) and
accuracies ``y_i`` in percent,

  - the curve is **refused** when its accuracy at the highest parallelism is more than ``y_min_offset``
    (5) points below its first: ``y_1 - y_m > 5`` (get_aup asserts it; the last point against the first,
    not the lowest one). A refused curve has no AUP: it is stored and shown as refused, with the reason;
  - otherwise the points below ``y_1 - 5`` are left out (a middle point, silently, as get_aup does), and

    AUP = rho_1 * y_1 + 1/2 * sum_{i>=2} (rho_i - rho_{i-1}) * (y_i W(y_i) + y_{i-1} W(y_{i-1})),
    W(y) = min(exp(-alpha * (1 - y / y_max)), 1), alpha = 3,

``y_max`` being the best accuracy reached on the task (here: by any knob, model or oracle). A curve
that keeps its accuracy as parallelism grows scores its area, weighted down as it loses accuracy; one
that ends more than 5 points below where it started is not scored at all.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from dllm_viz.core.config import DecodeConfig
from dllm_viz.studies.stats import rate
from dllm_viz.core.trace import Trace
from dllm_viz.tasks.checker import Verdict, check
from dllm_viz.tasks.families import Task, parse
from dllm_viz.tasks.oracle import total_correlation

PROMPT_SEED = 0  # the benchmark's prompts: families.prompts(family, PROMPTS_PER_FAMILY, PROMPT_SEED)
PROMPTS_PER_FAMILY = 64
TEMPERATURE = 1.0  # every curve draws from the distribution (model or oracle) at the confirmed positions
AUP_ALPHA = 3.0  # d3LLM's penalty factor
AUP_DROP = 5.0  # d3LLM's y_min_offset: a curve ending more than this below its first point is refused, and
#                middle points below it are left out


@dataclass(frozen=True)
class Knob:
    """One schedule setting swept along a curve."""

    key: str
    label: str  # what the figure's legend says
    values: tuple[float, ...]  # the settings, from the most careful to the most parallel
    make: Callable[[Task, float, int], DecodeConfig]  # (task, setting, seed) -> config


def _threshold(task: Task, value: float, seed: int, **revision: Any) -> DecodeConfig:
    return DecodeConfig(gen_length=task.answer_length, schedule="threshold", threshold=value, min_k=1,
                        temperature=TEMPERATURE, seed=seed, **revision)


def _revising(**revision: Any) -> Callable[[Task, float, int], DecodeConfig]:
    """The threshold knob with a revision rule (core/revision.py) on top."""
    def make(task: Task, value: float, seed: int) -> DecodeConfig:
        return _threshold(task, value, seed, **revision)
    return make


def _topk(decay: float) -> Callable[[Task, float, int], DecodeConfig]:
    def make(task: Task, value: float, seed: int) -> DecodeConfig:
        return DecodeConfig(gen_length=task.answer_length, schedule="topk_decay", top_k=int(value), decay=decay,
                            min_k=1, temperature=TEMPERATURE, seed=seed)
    return make


KNOBS: dict[str, Knob] = {
    k.key: k for k in (
        Knob("threshold", "confidence threshold", (0.9, 0.7, 0.5, 0.3, 0.1), _threshold),
        Knob("constant_k", "constant k (top-k, decay 1)", (1, 2, 4, 8, 16), _topk(1.0)),
        Knob("topk_decay", "top-k decay (decay 0.9, from k0)", (1, 2, 4, 8, 16), _topk(0.9)),
    )
}
# The threshold knob with each revision rule that takes back what it confirmed (the lesson "why parallel decoding
# breaks"): RCR, ReMDM (sigma cap, eta 0.02: its counts confirm one more mask per token taken back) and WINO (verify
# 0.9; its verify pass is a forward, so it counts in the tokens per forward). Token editing is left
# out: the tasks model was not trained to edit. Measured beside the schedule knobs, never in their AUP's y_max.
REVISION_KNOBS: dict[str, Knob] = {
    k.key: k for k in (
        Knob("threshold_rcr", "threshold + RCR (re-mask the weakest)", KNOBS["threshold"].values,
             _revising(revise="rcr")),
        Knob("threshold_remdm", "threshold + ReMDM (cap, eta 0.02)", KNOBS["threshold"].values,
             _revising(revise="remdm", remask_sigma="cap", remask_eta=0.02)),
        Knob("threshold_wino", "threshold + WINO (draft, verify 0.9)", KNOBS["threshold"].values,
             _revising(revise="wino", verify_threshold=0.9)),
    )
}
ALL_KNOBS: dict[str, Knob] = {**KNOBS, **REVISION_KNOBS}


def verdict_of(trace: Trace) -> Verdict:
    """The checker's verdict on a decoded task: the prompt parsed, the answer read as words."""
    return check(parse(trace.prompt_text or ""), (trace.text or "").split())


@dataclass(frozen=True)
class Point:
    """One setting of one knob over a set of runs."""

    knob: str
    value: float
    runs: int
    right: int  # runs the checker accepts
    tokens: int  # answer tokens written, all runs
    forwards: int  # forward passes, all runs

    @property
    def tpf(self) -> float:
        """Tokens per forward pass."""
        return self.tokens / self.forwards if self.forwards else 0.0

    @property
    def accuracy(self) -> dict[str, Any]:
        """``{"k", "n", "rate", "lo", "hi"}`` with the 95% Wilson interval."""
        return rate(self.right, self.runs)

    def to_dict(self) -> dict[str, Any]:
        return {"knob": self.knob, "value": self.value, "tpf": round(self.tpf, 4), "tokens": self.tokens,
                "forwards": self.forwards, **self.accuracy}


def point(knob: str, value: float, traces: Sequence[Trace]) -> Point:
    """The point of ``knob`` at ``value`` from the runs decoded with it."""
    if knob not in ALL_KNOBS:
        raise ValueError(f"knob={knob!r} is invalid: expected one of {' | '.join(ALL_KNOBS)}")
    return Point(knob, value, len(traces), sum(verdict_of(t).ok for t in traces),
                 sum(len(t.token_ids) for t in traces), sum(t.nfe for t in traces))


def bound_bits(trace: Trace) -> float:
    """ParallelBench's lower bound along one decode, in bits: the conditional total correlation of the
    answer tokens each step confirmed together, given the tokens confirmed before it, summed over the
    steps, under the task's true distribution (uniform over its right answers; `oracle.total_correlation`).
    Zero for a decode that confirmed one token per step, or only independent tokens together."""
    task = parse(trace.prompt_text or "")
    visible: list[int | None] = [None] * task.answer_length
    bits = 0.0
    for record in trace.steps:
        chosen = [p for p in record.selected if p < task.answer_length]
        if len(chosen) > 1:  # drawn from the forward of the canvas entering the step
            bits += total_correlation(task, visible, chosen)
        for p in record.remasked or ():  # a revision rule's take-backs, then its rewrites (Trace.canvas_at)
            if p < task.answer_length:
                visible[p] = None
        for p, token in [*zip(record.edited or (), record.edited_to or ()), *zip(record.selected, record.tokens)]:
            if p < task.answer_length:
                visible[p] = token
    return bits


class Refused(ValueError):
    """d3LLM's `get_aup` refuses the curve: its accuracy at the highest parallelism is more than
    `y_min_offset` points below its first. The message is the reason (what a stored curve keeps)."""


def aup(curve: Sequence[tuple[float, float]], y_max: float, *, alpha: float = AUP_ALPHA,
        drop: float = AUP_DROP) -> float:
    """d3LLM's AUP of ``(tpf, accuracy in percent)`` points, as `get_aup` computes it (the module
    docstring). Raises `Refused` for a curve get_aup refuses, ValueError for points no curve has."""
    if not curve:
        raise ValueError("curve: expected at least one (tpf, accuracy) point")
    if not all(rho > 0 and 0 <= y <= 100 for rho, y in curve):
        raise ValueError(f"curve={list(curve)[:4]!r}: expected tpf > 0 and accuracy in [0, 100]")
    if not 0 < y_max <= 100 or y_max < max(y for _, y in curve):
        raise ValueError(f"y_max={y_max!r} is invalid: expected the best accuracy, in (0, 100]")
    points = sorted(curve, key=lambda p: p[0])  # stable: equal parallelism keeps its order, apart
    first, last = points[0][1], points[-1][1]
    if first - last > drop:
        raise Refused(f"refused by d3LLM's get_aup: accuracy falls from {first:.1f}% at {points[0][0]:.2f} tokens "
                      f"per forward to {last:.1f}% at {points[-1][0]:.2f}, more than y_min_offset={drop:g} points")
    kept = [(rho, y) for rho, y in points if y >= first - drop]

    def weighted(y: float) -> float:
        return y * min(math.exp(-alpha * (1 - y / y_max)), 1.0)

    area = kept[0][0] * kept[0][1]
    for (r0, y0), (r1, y1) in zip(kept, kept[1:]):
        area += 0.5 * (r1 - r0) * (weighted(y1) + weighted(y0))
    return area


def scored(curve: Sequence[tuple[float, float]], y_max: float) -> float | dict[str, str]:
    """What a curves file stores for a curve: its AUP rounded to 2 decimals, or ``{"refused": reason}``."""
    try:
        return round(aup(curve, y_max), 2)
    except Refused as err:
        return {"refused": str(err)}


def refused(value: Any) -> str | None:
    """The reason a stored AUP (`scored`) was refused, or None for a score."""
    return value.get("refused") if isinstance(value, dict) else None


def aup_label(value: Any, refused_word: str = "refused") -> str:
    """A stored AUP as a figure title or a table cell says it: the score to 0 decimals, or `refused_word`."""
    return refused_word if refused(value) is not None else f"{value:.0f}"


def curve_points(points: Sequence[Point]) -> list[tuple[float, float]]:
    """``(tpf, accuracy %)`` of points, as `aup` takes them."""
    return [(p.tpf, 100.0 * p.right / p.runs) for p in points if p.runs and p.forwards]
