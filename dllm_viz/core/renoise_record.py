"""What a renoising decode records: a typed record per step, per canvas and per request (docs/renoise.md).

Trace format version 3 is built from these (`core.renoise_trace`: the canvas the decoder read, the
proposal, the accepted and renoised positions, entropy per position, the temperature, the stop rule's
state; per canvas its boundaries). Tensors are on the CPU; L is the canvas length.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from dllm_viz.core.renoise import RenoiseSettings

FINISH_REASONS = ("end_of_text", "max_new_tokens")


@dataclass(frozen=True)
class RenoiseStep:
    """One denoising step of one request (`_denoising_step` in transformers)."""

    step: int  # 0-based step within the canvas
    steps_left: int  # transformers' `cur_step`: N at the first step, 1 at the N-th (the schedule reads it)
    temperature: float  # the float32 temperature the logits were divided by
    read: torch.Tensor  # (L,) long: the canvas the decoder read
    proposal: torch.Tensor  # (L,) long: the token drawn at every position from softmax(logits / T)
    accepted: torch.Tensor  # (L,) bool: positions whose proposal was kept (entropy-bound acceptance)
    written: torch.Tensor  # (L,) long: the canvas after acceptance and renoise (the next step's `read`)
    argmax: torch.Tensor  # (L,) long: argmax of the tempered logits (the draft; the last one is the output)
    entropy: torch.Tensor  # (L,) float32: the entropy acceptance ranked by (tempered or raw logits)
    mean_entropy: float  # the stop rule's confidence: mean entropy of the tempered logits
    stable: bool  # the argmax canvas equals each of the last `stability_threshold` ones
    confident: bool  # mean_entropy < confidence_threshold
    stopped: bool  # stable and confident: the canvas ends after this step

    @property
    def renoised(self) -> torch.Tensor:
        """(L,) bool: positions given a fresh uniform token (every position not accepted)."""
        return ~self.accepted

    @property
    def lost(self) -> torch.Tensor:
        """(L,) long: the token each renoised position held before this step, -1 where accepted."""
        return torch.where(self.accepted, torch.full_like(self.read, -1), self.read)


@dataclass(frozen=True)
class RenoiseCanvas:
    """One canvas: the steps that denoised it and the ids it appended."""

    index: int  # 0-based canvas of the request
    start: int  # offset of the canvas in the request's generated ids
    steps: tuple[RenoiseStep, ...]
    ids: torch.Tensor  # (L,) long: the last argmax canvas, end-of-text padding applied (what was appended)
    stop_fired: bool  # the stop rule ended it (at its last step too), not the step budget

    @property
    def end(self) -> int:
        return self.start + int(self.ids.shape[0])


@dataclass(frozen=True)
class RenoiseResult:
    """A finished renoising request."""

    prompt_ids: tuple[int, ...]
    token_ids: tuple[int, ...]  # every generated id, whole canvases as generate() keeps them (pads included)
    canvases: tuple[RenoiseCanvas, ...]
    settings: RenoiseSettings  # canvas_length resolved
    model: str
    finished_by: str  # one of FINISH_REASONS
    forwards: int  # decoder forward passes this request took (generate()'s `decoder_forward_passes`)
    wall_time: float  # seconds, the whole batch's decode
    text: str | None = None  # the generated ids decoded, cut at the first end-of-text, when a tokenizer exists

    @property
    def tokens_per_forward(self) -> float:
        """Generated tokens that are not padding per decoder forward, as generate() reports it."""
        pad = self.settings.pad_token_id
        tokens = sum(1 for i in self.token_ids if i != pad) if pad is not None else len(self.token_ids)
        return tokens / self.forwards if self.forwards else 0.0

    def canvas_at(self, canvas: int, step: int) -> torch.Tensor:
        """(L,) the canvas the decoder read at `step` of `canvas`; step == len(steps) gives the output."""
        frames = self.canvases[canvas]
        if not 0 <= step <= len(frames.steps):
            raise ValueError(f"step={step!r} is invalid: expected an integer in [0, {len(frames.steps)}]")
        return frames.ids if step == len(frames.steps) else frames.steps[step].read
