"""A renoising decode in the trace (format version 3): the per-step section, the canvases, and the frames.

Version 3 keeps every field of version 2 and adds optional sections by canvas kind: a trace whose
`canvas` is "renoise" (docs/renoise.md) has, at each step, a `renoise` section (`RenoiseSection`: the canvas
the decoder read, the proposal, the accepted positions, the argmax canvas, the entropy acceptance
ranked by, the stop rule's state) and, per canvas, its boundaries (`CanvasSpan`); the masked fields of
a step (confidence, argmax, selected, tokens, logprobs) are left out. A masked trace has neither.

Positions in a section are the canvas's own (0..L-1); a canvas's `start` places it in `token_ids`.
What follows from the record is not written: the renoised positions are those not accepted, the token
each lost is what it held in `read`, the canvas a step wrote is the next step's `read`.

`canvas_at(trace, step)` gives the generated ids after a step (-1: before the first) exactly, from the
record alone, in either direction: finished canvases hold their ids, the canvas being denoised holds
what the next step reads, later canvases nothing yet (None).

Plain Python (lists, no torch): the schema (`trace_schema_renoise`) and the page's views read it.
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

CANVAS_KINDS = ("masked", "renoise")  # `Trace.canvas` (core.rules.base.CANVASES)


@dataclass
class RenoiseSection:
    """What one renoising step did, on its canvas of L positions (`core.renoise_record.RenoiseStep`)."""

    steps_left: int  # transformers' cur_step: N at a canvas's first step, 1 at its N-th (the temperature reads it)
    read: list[int]  # (L,) the canvas the decoder read
    proposal: list[int]  # (L,) the token drawn at every position from softmax(logits / T)
    accepted: list[int]  # (a,) positions whose proposal was kept, ascending; every other one was renoised
    argmax: list[int]  # (L,) argmax of the tempered logits (the draft; a canvas's last one is its output)
    entropy: list[float]  # (L,) nats: the entropy acceptance ranked by (tempered or raw logits), 1e-6 resolution
    mean_entropy: float  # the stop rule's confidence: mean entropy of the tempered logits
    stable: bool  # the argmax canvas equals each of the last `stability_threshold` ones
    confident: bool  # mean_entropy < confidence_threshold
    stopped: bool  # stable and confident: the canvas ends after this step

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RenoiseSection:
        return cls(**d)

    @property
    def renoised(self) -> list[int]:
        """(L - a,) positions given a fresh random token: every position not accepted."""
        kept = set(self.accepted)
        return [i for i in range(len(self.read)) if i not in kept]

    @property
    def lost(self) -> dict[int, int]:
        """Renoised position -> the token it held when the decoder read it (what renoising threw away)."""
        return {i: self.read[i] for i in self.renoised}


SECTION_FIELDS = tuple(f.name for f in fields(RenoiseSection))


@dataclass
class CanvasSpan:
    """One canvas of a renoising trace: where it sits in `token_ids` and which steps denoised it."""

    index: int  # 0-based
    start: int  # its first position in token_ids (index * L)
    end: int  # one past its last (start + L)
    first_step: int  # the trace's index of its first step
    steps: int  # how many steps denoised it (>= 1)
    stop_fired: bool  # the stop rule ended it (else the step budget)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CanvasSpan:
        return cls(**d)

    @property
    def last_step(self) -> int:
        return self.first_step + self.steps - 1


SPAN_FIELDS = tuple(f.name for f in fields(CanvasSpan))


def canvas_at(token_ids: list[int], spans: list[CanvasSpan], sections: list[RenoiseSection],
              step: int) -> list[int | None]:
    """The generated ids after `step` (-1: before the first step; the last step: `token_ids`): every
    canvas whose last step is at most `step` holds its ids, the canvas of step `step + 1` what that step
    reads (the accepted proposals and the noise), every later canvas None."""
    out: list[int | None] = [None] * len(token_ids)
    for span in spans:
        if span.last_step <= step:
            out[span.start:span.end] = token_ids[span.start:span.end]
        elif span.first_step <= step + 1:
            out[span.start:span.end] = sections[step + 1].read
    return out


def changes(token_ids: list[int], spans: list[CanvasSpan], sections: list[RenoiseSection]) -> list[list[int]]:
    """For each generated position, the steps at which it changed (`canvas_at(s) != canvas_at(s - 1)` there),
    in order: at a step that is not its canvas's last, an accepted proposal that differs from the token read,
    or fresh noise; at the last, the canvas's output where it differs from what that step read."""
    out: list[list[int]] = [[] for _ in token_ids]
    for span in spans:
        for s in range(span.first_step, span.last_step + 1):
            before = sections[s].read
            after = sections[s + 1].read if s < span.last_step else token_ids[span.start:span.end]
            for i, (a, b) in enumerate(zip(before, after)):
                if a != b:
                    out[span.start + i].append(s)
    return out


def settled(token_ids: list[int], spans: list[CanvasSpan], sections: list[RenoiseSection]) -> list[int]:
    """`Trace.order` of a renoising trace: per position, the step from which it holds its final token for
    good (its last change; its canvas's first step when it never changed)."""
    first = {p: span.first_step for span in spans for p in range(span.start, span.end)}
    return [steps[-1] if steps else first[p] for p, steps in enumerate(changes(token_ids, spans, sections))]


def metrics(trace: Any) -> dict[str, float]:
    """What a renoising trace says in numbers, beside the n-gram counts (`Trace.metrics` for canvas "renoise"):
    `tokens_per_forward` counts the generated tokens up to the first end-of-text, included (what generate()
    reports when the checkpoint pads after it), per decoder forward."""
    steps = [rec.renoise for rec in trace.steps]
    spans = trace.canvases or []
    wall, n = trace.wall_time, len(steps)
    tokens = trace.text_end + 1 if trace.text_end is not None else len(trace.token_ids)
    accepted = [len(s.accepted) for s in steps]
    return {
        "nfe": n,
        "steps": n,
        "canvases": len(spans),
        "tokens_per_forward": round(tokens / n, 6) if n else 0.0,
        "accepted_per_step": round(sum(accepted) / n, 6) if n else 0.0,
        "stops_fired": sum(span.stop_fired for span in spans),
        "tokens_per_second": round(tokens / wall, 3) if wall > 0 else 0.0,
    }
