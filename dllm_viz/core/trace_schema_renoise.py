"""The schema of a renoising trace (format version 3, canvas "renoise"), checked whole before anything reads it.

As for a masked trace (`trace_schema`): every field's type, every list's length against the canvas length,
every id, position and step against the rest of the trace, every size against the limits, and a replay:
the canvases follow one another (canvas c at [c * L, (c + 1) * L) of `token_ids`, its steps consecutive, at
most `max_denoising_steps` of them); within a canvas, what a step accepted is what the next step reads there;
a canvas's ids are its last argmax canvas up to the first end-of-text (`text_end`) and one padding id after
it; a canvas's stop flag is its last step's; `order` is each position's last change (`trace_renoise.settled`).
A problem raises ValueError naming the field (`steps[3].renoise.accepted[1]`).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

from dllm_viz.core.trace_renoise import SECTION_FIELDS, SPAN_FIELDS, CanvasSpan, RenoiseSection, settled
from dllm_viz.core.trace_checks import (
    bad, check_int, check_ints, check_known_ids, check_list, check_number, check_numbers, too_big,
)
from dllm_viz.core.trace_schema import MAX_CELLS, MAX_TOKEN_ID, check_header

MAX_ENTROPY = math.log(MAX_TOKEN_ID + 1) + 1e-3  # nats: no distribution over int32 ids has more
FINISH_REASONS = ("end_of_text", "max_new_tokens")
STEP_KEYS = ("step", "block", "k", "temperature", "renoise")  # a renoising step: no masked field
REQUIRED_RENOISE = ("canvas", "canvases", "finished_by")


def check_renoise_trace_dict(d: dict[str, Any], *, trace_fields: Iterable[str], gen_length: int,
                             canvas_length: int, max_steps: int, budget: Callable[[int], int] | None = None) -> None:
    """Raise ValueError naming the first malformed field of a parsed renoising trace; `gen_length` (the new
    tokens asked for), `canvas_length` (L) and `max_steps` (per canvas) come from its validated config, `budget`
    gives the max_denoising_steps in force at each step (a fork may switch it; None: `max_steps` throughout)."""
    budget = budget if budget is not None else lambda s: max_steps
    known_ids, _ = check_header(d, trace_fields)
    for key in REQUIRED_RENOISE:
        if key not in d:
            raise ValueError(f"trace field {key!r} is missing (a renoising trace has it)")
    if d["finished_by"] not in FINISH_REASONS:
        raise bad("finished_by", d["finished_by"], "one of " + " | ".join(FINISH_REASONS))
    if d["mask_token_id"] is not None:
        raise bad("mask_token_id", d["mask_token_id"], "null: a renoising canvas has no mask token")
    L, most = canvas_length, max(1, math.ceil(gen_length / canvas_length))
    listed = check_list("canvases", d["canvases"], limit=most)
    spans = [_span(f"canvases[{c}]", c, span, L) for c, span in enumerate(listed)]
    if not spans:
        raise bad("canvases", d["canvases"], "at least one canvas")
    tokens = check_ints("token_ids", d["token_ids"], 0, MAX_TOKEN_ID, length=len(spans) * L)
    check_known_ids("token_ids", tokens, known_ids)
    steps = check_list("steps", d["steps"], limit=len(spans) * max_steps)
    if len(steps) * L > MAX_CELLS:
        raise too_big("steps x canvas_length", len(steps) * L, MAX_CELLS, "cells")
    sections = [_step(f"steps[{i}]", i, rec, L, known_ids) for i, rec in enumerate(steps)]
    first = 0
    for c, span in enumerate(spans):
        if span.first_step != first:
            raise bad(f"canvases[{c}].first_step", span.first_step, f"{first}: the canvases' steps follow one another")
        if span.steps > max_steps or span.last_step >= len(steps):
            raise bad(f"canvases[{c}].steps", span.steps, f"at most max_denoising_steps={max_steps}, within the "
                       f"trace's {len(steps)} steps")
        _check_canvas(f"canvases[{c}]", span, sections, steps, budget)
        first += span.steps
    if first != len(steps):
        raise bad("steps", steps, f"{first} steps, those of the canvases (got {len(steps)})")
    _check_end(d, spans, sections, tokens)
    order = check_ints("order", d["order"], 0, max(0, len(steps) - 1), length=len(tokens))
    expected = settled(tokens, spans, sections)
    wrong = next((p for p, (a, b) in enumerate(zip(order, expected)) if a != b), None)
    if wrong is not None:
        raise bad(f"order[{wrong}]", order[wrong], f"{expected[wrong]}, the step position {wrong} last changed at")
    if d.get("early_stop_step") is not None:
        raise bad("early_stop_step", d["early_stop_step"], "null: a renoising decode has no end-of-text early stop")


def _span(path: str, c: int, span: Any, L: int) -> CanvasSpan:
    if not isinstance(span, dict) or set(span) != set(SPAN_FIELDS):
        raise bad(path, span, "an object with " + ", ".join(SPAN_FIELDS))
    check_int(f"{path}.index", span["index"], c, c)
    check_int(f"{path}.start", span["start"], c * L, c * L)
    check_int(f"{path}.end", span["end"], (c + 1) * L, (c + 1) * L)
    check_int(f"{path}.first_step", span["first_step"], 0, MAX_CELLS)
    check_int(f"{path}.steps", span["steps"], 1, MAX_CELLS)
    if type(span["stop_fired"]) is not bool:
        raise bad(f"{path}.stop_fired", span["stop_fired"], "true or false")
    return CanvasSpan.from_dict(span)


def _step(path: str, i: int, rec: Any, L: int, known_ids: set[int] | None) -> RenoiseSection:
    if not isinstance(rec, dict) or set(rec) != set(STEP_KEYS):
        raise bad(path, rec, "an object with " + ", ".join(STEP_KEYS) + " (a renoising step)")
    check_int(f"{path}.step", rec["step"], i, i)
    check_int(f"{path}.block", rec["block"], 0, MAX_CELLS)
    check_number(f"{path}.temperature", rec["temperature"], 0.0, 1e30)
    section, step_path = rec["renoise"], path
    path = f"{path}.renoise"
    if not isinstance(section, dict) or set(section) != set(SECTION_FIELDS):
        raise bad(path, section, "an object with " + ", ".join(SECTION_FIELDS))
    check_int(f"{path}.steps_left", section["steps_left"], 1, MAX_CELLS)
    for key in ("read", "proposal", "argmax"):
        ids = check_ints(f"{path}.{key}", section[key], 0, MAX_TOKEN_ID, length=L)
        check_known_ids(f"{path}.{key}", ids, known_ids)
    accepted = check_ints(f"{path}.accepted", section["accepted"], 0, L - 1, limit=L)
    if any(b <= a for a, b in zip(accepted, accepted[1:])):
        raise bad(f"{path}.accepted", accepted, "positions in ascending order, each once")
    if not accepted:
        raise bad(f"{path}.accepted", accepted, "at least one position (the lowest-entropy one is always accepted)")
    check_int(f"{step_path}.k", rec["k"], len(accepted), len(accepted))
    check_numbers(f"{path}.entropy", section["entropy"], 0.0, MAX_ENTROPY, L)
    check_number(f"{path}.mean_entropy", section["mean_entropy"], 0.0, MAX_ENTROPY)
    for key in ("stable", "confident", "stopped"):
        if type(section[key]) is not bool:
            raise bad(f"{path}.{key}", section[key], "true or false")
    if section["stopped"] != (section["stable"] and section["confident"]):
        raise bad(f"{path}.stopped", section["stopped"], "stable and confident")
    return RenoiseSection.from_dict(section)


def _check_canvas(path: str, span: CanvasSpan, sections: list[RenoiseSection], steps: list[dict],
                  budget: Callable[[int], int]) -> None:
    """A canvas's steps: its own (block), the temperature's steps left falling by one (from the budget in force,
    `budget(step)`, never below one), what one step accepted read by the next, no stop before the last step, the
    last one's stop flag the canvas's, and a canvas the stop did not end ended by its budget."""
    for s in range(span.first_step, span.last_step + 1):
        here = f"steps[{s}]"
        if steps[s]["block"] != span.index:
            raise bad(f"{here}.block", steps[s]["block"], f"{span.index}, the canvas this step denoises")
        left = max(1, budget(s) - (s - span.first_step))  # N at the canvas's first step, one less at each next
        if sections[s].steps_left != left:
            raise bad(f"{here}.renoise.steps_left", sections[s].steps_left, f"{left} (max_denoising_steps less the "
                       "canvas's steps before it)")
        if s < span.last_step:
            if sections[s].stopped:
                raise bad(f"{here}.renoise.stopped", True, "false: a stopped canvas takes no further step")
            now, after = sections[s], sections[s + 1]
            for j, p in enumerate(now.accepted):
                if after.read[p] != now.proposal[p]:
                    raise bad(f"steps[{s + 1}].renoise.read[{p}]", after.read[p],
                               f"{now.proposal[p]}, the proposal step {s} accepted there")
    last = sections[span.last_step]
    if span.stop_fired != last.stopped:
        raise bad(f"{path}.stop_fired", span.stop_fired, f"{str(last.stopped).lower()}, its last step's stop flag")
    end = min(budget(span.last_step), budget(span.last_step + 1))  # (a fork after the last step may lower it)
    if not span.stop_fired and span.steps < end:
        raise bad(f"{path}.steps", span.steps, f"its step budget ({end}) when the stop rule did not end it")


def _check_end(d: dict[str, Any], spans: list[CanvasSpan], sections: list[RenoiseSection], tokens: list[int]) -> None:
    """A canvas's ids are its last argmax, up to the first end-of-text (`text_end`) and one padding id after it;
    the request ended there (end_of_text: the last canvas holds it), or at the length asked for."""
    end = d.get("text_end")
    if end is not None:
        check_int("text_end", end, spans[-1].start, spans[-1].end - 1)
    elif d["finished_by"] == "end_of_text":
        raise bad("text_end", None, "the position of the end-of-text token that ended the request")
    if end is not None and d["finished_by"] != "end_of_text":
        raise bad("finished_by", d["finished_by"], "end_of_text: the trace holds one (text_end)")
    pads: set[int] = set()
    for span in spans:
        argmax = sections[span.last_step].argmax
        for i in range(span.end - span.start):
            p, tok = span.start + i, tokens[span.start + i]
            if end is not None and p > end and tok != argmax[i]:
                pads.add(tok)
            elif tok != argmax[i] and (end is None or p <= end):
                raise bad(f"token_ids[{p}]", tok, f"{argmax[i]}, the last argmax of its canvas")
    if len(pads) > 1:
        raise bad("token_ids", sorted(pads), "one padding id after the end of text")

