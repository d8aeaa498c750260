"""A renoising decode as a `Trace` (format version 3): its step records, its canvases, its config as it ran.

`core.renoise_decoder` keeps tensors (`RenoiseStep`, `RenoiseResult`); the trace keeps plain lists
(`core.trace_renoise`): `step_record` turns one step into a `StepRecord` with its `renoise` section as the
step happens (a live view streams them), `trace_of` a finished request into its `Trace`, whose config is
the `DecodeConfig` that ran: every renoise knob resolved (the checkpoint's generation config, else
transformers' defaults), so that decoding it again on the same model gives the same trace.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dllm_viz.core.config import DecodeConfig
from dllm_viz.core.renoise import SPECS, RenoiseSettings
from dllm_viz.core.renoise_record import RenoiseResult, RenoiseStep
from dllm_viz.core.trace import StepRecord, Trace, first_end_of_text, quantize
from dllm_viz.core.trace_renoise import CanvasSpan, RenoiseSection, settled


def step_record(step: RenoiseStep, index: int, canvas: int) -> StepRecord:
    """The trace's record of `step`, the request's `index`-th step, on its canvas `canvas`."""
    accepted = step.accepted.nonzero().squeeze(1).tolist()
    section = RenoiseSection(
        steps_left=step.steps_left, read=step.read.tolist(), proposal=step.proposal.tolist(), accepted=accepted,
        argmax=step.argmax.tolist(), entropy=quantize(step.entropy.double().tolist()),
        mean_entropy=round(float(step.mean_entropy), 6), stable=bool(step.stable), confident=bool(step.confident),
        stopped=bool(step.stopped))
    return StepRecord(step=index, block=canvas, k=len(accepted), temperature=round(float(step.temperature), 6),
                      confidence=[], argmax=[], selected=[], tokens=[], logprobs=[], renoise=section)


def resolved_config(config: DecodeConfig, settings: RenoiseSettings) -> DecodeConfig:
    """`config` with every renoise knob at the value that ran (`settings`, the canvas length resolved)."""
    return config.replace(**{knob.name: getattr(settings, knob.name) for knob in SPECS})


def trace_of(model: Any, result: RenoiseResult, records: Sequence[StepRecord], config: DecodeConfig, *,
             prompt_text: str | None = None, wall_time: float | None = None) -> Trace:
    """The `Trace` of a finished request (`records`: its steps as `step_record` made them, in order)."""
    spans, first = [], 0
    for c in result.canvases:
        spans.append(CanvasSpan(index=c.index, start=c.start, end=c.end, first_step=first, steps=len(c.steps),
                                stop_fired=c.stop_fired))
        first += len(c.steps)
    tokens = list(result.token_ids)
    sections = [rec.renoise for rec in records]
    vocab: dict[int, str] = {}
    tok = getattr(model, "tokenizer", None)
    if tok is not None:
        seen = set(result.prompt_ids) | set(tokens)
        for s in sections:
            seen.update(s.read, s.proposal, s.argmax)  # type: ignore[union-attr]
        vocab = {i: tok.decode([i]) for i in sorted(seen)}
    return Trace(
        prompt_ids=list(result.prompt_ids), token_ids=tokens, order=settled(tokens, spans, sections),  # type: ignore[arg-type]
        steps=list(records), config=resolved_config(config, result.settings), model=result.model,
        wall_time=result.wall_time if wall_time is None else wall_time, vocab=vocab, text=result.text,
        prompt_text=prompt_text, mask_token_id=None, text_end=first_end_of_text(tokens, result.settings.eos_token_ids),
        canvas="renoise", canvases=spans, finished_by=result.finished_by,
    )
