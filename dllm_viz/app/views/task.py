"""What the playground shows for a trace of a task prompt (`dllm_viz.tasks`): the checker's marks per
answer token, a run fact, whether the answer is a 4x4 grid, and where the trace sits on the measured
accuracy-against-parallelism curves (``dllm_viz/assets/tasks/curves.json``, `bench/parallel_tasks.py`).

Pure functions of a `Trace` (no model calls), like `world_view`. They apply to traces whose prompt
states a task and whose answer has the task's length (any model: the tasks model, the oracle, a
checkpoint); for every other trace they return no marks and no fact, so the other playgrounds are
unchanged.
"""
from __future__ import annotations

import functools
import html
import json
from pathlib import Path
from typing import Any

from dllm_viz.core.config import DecodeConfig
from dllm_viz.core.trace import Trace
from dllm_viz.tasks import Task, Verdict, check, parse
from dllm_viz.tasks.families import GRID_FAMILIES
from dllm_viz.studies.curve_lessons import CURVES_PATH, load_curve_lessons
from dllm_viz.studies.curves import refused

MODEL_NAMES = ("tasks-mdlm",)  # models whose prompts are tasks: the picker fills in their examples


def fit_config(prompt: Any, config: DecodeConfig) -> DecodeConfig:
    """The config a task prompt decodes with: exactly its answer's tokens (gen_length = the answer's
    length, one block, at most that many fixed steps), the other settings unchanged. A prompt that
    states no task (or is not text) keeps ``config``. The tasks model answers in exactly that many
    tokens: it never learnt to fill a longer canvas."""
    try:
        length = parse(prompt).answer_length
    except ValueError:
        return config
    steps = None if config.steps is None else min(config.steps, length)
    return config.replace(gen_length=length, block_length=None, steps=steps)


def task_of(trace: Trace | None) -> Task | None:
    """The task the trace's prompt states, when its answer span has the task's length; else None."""
    if trace is None or not trace.prompt_text:
        return None
    try:
        task = parse(trace.prompt_text)
    except ValueError:
        return None
    return task if task.answer_length == trace.config.gen_length else None


def verdict(trace: Trace | None) -> Verdict | None:
    """The checker's verdict on the whole answer; None for a trace that is not a task's."""
    task = task_of(trace)
    return None if task is None else check(task, [trace.token_text(t).strip() for t in trace.token_ids])


def token_rules(trace: Trace | None) -> list[str]:
    """Per answer position, the rule its token breaks ("" when none, and everywhere for other traces)."""
    if trace is None:
        return []
    v = verdict(trace)
    marks = [""] * len(trace.token_ids)
    for cell in (v.cells if v is not None else ()):
        if 0 <= cell < len(marks):
            marks[cell] = v.rule
    return marks


def grid_cells(trace: Trace | None) -> tuple[str, ...] | None:
    """The puzzle's 16 cells ("_" when empty) when the trace answers a Latin square or sudoku; else None."""
    task = task_of(trace)
    return task.cells if task is not None and task.family in GRID_FAMILIES else None


def answer_fact(trace: Trace | None) -> str | None:
    """"✓" for a right answer, "✗" and the first rule broken for a wrong one; None for other traces."""
    v = verdict(trace)
    return None if v is None else ("✓" if v.ok else f"✗ {v.rule}")


def inspector_lines(trace: Trace, position: int) -> str:
    """A Markdown line naming the rule the token at ``position`` breaks ("" when none or not a task)."""
    v = verdict(trace)
    if v is None or position not in v.cells:
        return ""
    return f"- checker: **{v.rule}**: {html.escape(v.message)}"


@functools.lru_cache(maxsize=4)
def _curves(path: str) -> dict[str, Any]:
    return json.loads(Path(path).read_text()) if Path(path).is_file() else {}


def curves(path: Path = CURVES_PATH) -> dict[str, Any]:
    """The measured curves (empty when the file is absent), read once."""
    return _curves(str(path))


def curve_data(family: str) -> dict[str, Any] | None:
    """What the page's task curve (web/figures.js) draws of `family`'s measured curves: the threshold
    curves of the model and the oracle, those with each revision rule, and the two AUPs; None when
    the family was not measured (an AUP that d3LLM's get_aup refuses is None)."""
    fam = (curves().get("families") or {}).get(family)
    if fam is None:
        return None
    keep = lambda pts: [{k: p[k] for k in ("value", "tpf", "rate", "lo", "hi")} for p in pts]  # noqa: E731
    revision = {decoder: {knob: keep(pts) for knob, pts in knobs.items()}
                for decoder, knobs in (fam.get("revision") or {}).items()}
    return {"model": keep(fam["model"]["threshold"]), "oracle": keep(fam["oracle"]["threshold"]), "revision": revision,
            "aup": [None if refused(fam["aup"][d]["threshold"]) is not None else fam["aup"][d]["threshold"]
                    for d in ("model", "oracle")]}  # None: d3LLM's get_aup refused the curve (`curves.refused`)


def on_curve(points: list[dict[str, Any]], threshold: float) -> tuple[float, float]:
    """(tokens per forward, right answers %) at ``threshold`` on a measured threshold curve, linear
    between the two measured thresholds around it (held flat beyond the ends)."""
    pts = sorted(points, key=lambda p: p["value"])
    if threshold <= pts[0]["value"]:
        return pts[0]["tpf"], 100 * pts[0]["rate"]
    for lo, hi in zip(pts, pts[1:]):
        if threshold <= hi["value"]:
            w = (threshold - lo["value"]) / (hi["value"] - lo["value"])
            return (lo["tpf"] + w * (hi["tpf"] - lo["tpf"]), 100 * (lo["rate"] + w * (hi["rate"] - lo["rate"])))
    return pts[-1]["tpf"], 100 * pts[-1]["rate"]


CURVE_LESSON = "why_parallel_breaks"  # the lesson shown under the curve view (assets/lessons.yaml, curve_lessons)


def curve_lesson_md(lang: str) -> str:
    """The lesson "why parallel decoding breaks" in `lang`: its paragraph on the bound
    and the measured rates, then its paragraph on the revision rules' curves; "" when the file has none."""
    lesson = _curve_lessons().get(CURVE_LESSON)
    if lesson is None:
        return ""
    parts = [f"**{lesson['title'][lang]}**", lesson["text"][lang]]
    if "revision" in lesson:
        parts.append(lesson["revision"]["text"][lang])
    return "\n\n".join(parts)


@functools.lru_cache(maxsize=1)
def _curve_lessons() -> dict[str, dict[str, Any]]:
    return load_curve_lessons()
