"""The renoising decode behind `decode` and the engine: requests in slots, stepped in groups (docs/renoise.md).

`RenoiseBatch` has the slot interface of the masked `DecodeBatch` (`add`, `active`, `step`, `trace`,
`release`), so `decode` and the continuous-batching `Engine` run a renoising model as they run a masked
one: a request joins at a step boundary, streams a `StepRecord` per step (with its version-3 `renoise`
section) and leaves when its last canvas is done, its `Trace` then ready. The requests admitted at one
boundary with the same canvas length form a group (`core.renoise_decoder.RenoiseGroup`): one exact
encoder cache and one decoder forward per step for all of them. Groups step side by side (`units`: one
forward each); a group is the unit of failure (`atomic`: its rows share a cache, so a step that raises
fails its requests, and no other). Every request draws from its own generator, on the model's device.

Bad settings are `ValueError`s naming the setting, raised by `add` before anything is allocated: a
renoise knob out of range, a masked-only knob or rule (`rules.check_canvas`), a value that is valid
alone but not with the checkpoint's defaults (t_max below its t_min), a request longer than the model
(`core.budget`).
"""
from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch

from dllm_viz.core import rules
from dllm_viz.core.budget import Work, bound_work
from dllm_viz.core.config import DecodeConfig
from dllm_viz.core.renoise import RenoiseSettings, settings_for
from dllm_viz.core.renoise_decoder import RenoiseGroup, generator_for, prompt_ids, result_of
from dllm_viz.core.renoise_trace import step_record, trace_of
from dllm_viz.core.trace import StepRecord, Trace
from dllm_viz.models.base import model_max_length, model_name
from dllm_viz.models.renoiser import Renoiser


def renoise_settings(model: Renoiser, config: DecodeConfig, defaults: dict | None = None) -> RenoiseSettings:
    """The settings `config` asks for on the renoising `model` whose generation defaults are `defaults` (read
    from it when None), its canvas length resolved, or a ValueError naming the knob (a masked-only one, a value
    the checkpoint's defaults refuse): what `RenoiseBatch.add` checks first, and a server before it starts
    anything (`core.budget.bound_work` then bounds its work)."""
    rules.check_canvas(config, "renoise", repr(model_name(model)))
    settings = settings_for(config, model.generation_defaults() if defaults is None else defaults)
    return settings if settings.canvas_length is not None else settings.with_(canvas_length=model.canvas_length)


@dataclass
class RenoiseSlot:
    """The request in one slot."""

    config: DecodeConfig
    settings: RenoiseSettings  # resolved against the model (canvas length included)
    prompt_ids: list[int]
    generator: torch.Generator  # the request's own, on the model's device
    prompt_text: str | None = None
    records: list[StepRecord] = field(default_factory=list)
    group: RenoiseGroup | None = None  # None until its first step
    start: float = field(default_factory=time.perf_counter)
    index: int = -1  # its slot (the request's id in its group)

    @property
    def done(self) -> bool:
        return self.group is not None and self.group.progress[self.index].finished_by != ""

    @property
    def length(self) -> int:
        """Positions one of its steps computes (its canvas; a masked slot's is its whole row): its forward's width."""
        return int(self.settings.canvas_length or 0)

    @property
    def step(self) -> int:
        """Steps it has taken."""
        return len(self.records)


class RenoiseBatch:
    """Slots of renoising requests, stepped in groups (see module doc). `capacity` bounds the slots;
    `record_candidates` and `device` are `DecodeBatch`'s arguments, unused here (a renoising step keeps no
    candidates; it runs on the model's device). `history_depth`: the least depth of its groups' stop histories
    (`RenoiseGroup`'s `depth`; a fork's replay)."""

    atomic = True  # a unit of `units()` fails together (its rows share one cache)

    def __init__(self, model: Renoiser, *, capacity: int, max_length: int | None = None,
                 record_candidates: int = 5, device: torch.device | str | None = None, history_depth: int = 0) -> None:
        self.model, self.capacity, self.history_depth = model, capacity, history_depth
        self.max_length = max_length if max_length is not None else model_max_length(model)
        self.slots: dict[int, RenoiseSlot] = {}
        self.defaults = model.generation_defaults()  # the checkpoint's generation config, read once

    # ----- slots ----------------------------------------------------------------------------
    def settings(self, config: DecodeConfig) -> RenoiseSettings:
        """The settings `config` asks for on this model (ValueError naming a bad one)."""
        return renoise_settings(self.model, config, self.defaults)

    def check(self, prompt: list[int], settings: RenoiseSettings) -> Work:
        """What the request asks of the model (`core.budget`: its prompt and whole canvases against the model's
        context), or ValueError naming the bound."""
        return bound_work(settings, prompt_length=len(prompt), max_length=self.max_length)

    def prepare(self, prompt: Sequence[int] | str, config: DecodeConfig) -> tuple[list[int], RenoiseSettings]:
        """A request's prompt ids and settings, checked against the model before it takes a place (ValueError
        naming what is wrong): what `Engine.submit` runs in the caller's thread."""
        ids = prompt_ids(self.model, prompt)
        settings = self.settings(config)
        self.check(ids, settings)
        return ids, settings

    def add(self, index: int, prompt: list[int], config: DecodeConfig, generator: torch.Generator | None = None,
            prompt_text: str | None = None) -> RenoiseSlot:
        """Place a request in slot `index` (free); it joins a group at its first step. `generator` is ignored:
        the request's own is made on the model's device from its seed."""
        settings = self.settings(config)
        self.check(prompt, settings)
        slot = RenoiseSlot(config=config, settings=settings, prompt_ids=list(prompt), index=index,
                           generator=generator_for(settings, self.model.device), prompt_text=prompt_text)
        self.slots[index] = slot
        return slot

    def reconfigure(self, index: int, config: DecodeConfig) -> None:
        """Decode slot `index` under `config` from its next step on, its canvas, generator and steps as they are
        (a fork's switch, `core.fork_renoise`). ValueError naming a bad knob, or a canvas length not the slot's."""
        slot = self.slots[index]
        settings = self.settings(config)
        if settings.canvas_length != slot.settings.canvas_length:
            raise ValueError(f"canvas_length={settings.canvas_length} is invalid here: expected the request's "
                             f"{slot.settings.canvas_length} (its canvases are that long)")
        self.check(slot.prompt_ids, settings)
        slot.config, slot.settings = config, settings
        if slot.group is not None:
            slot.group.reconfigure(index, settings)

    def release(self, index: int) -> RenoiseSlot:
        """Free slot `index`; a request still decoding leaves its group (frozen until its canvas ends)."""
        slot = self.slots.pop(index)
        if slot.group is not None and not slot.done:
            slot.group.drop(index)
        return slot

    def active(self) -> list[int]:
        return sorted(i for i, s in self.slots.items() if not s.done)

    def units(self) -> list[list[int]]:
        """The active slots as the forwards that step them: one list per group, and the slots that have not yet
        stepped by canvas length (each becomes a group at its first step)."""
        groups: dict[int, list[int]] = {}
        pending: dict[int, list[int]] = {}
        for i in self.active():
            s = self.slots[i]
            if s.group is None:
                pending.setdefault(s.settings.canvas_length, []).append(i)  # type: ignore[arg-type]
            else:
                groups.setdefault(id(s.group), []).append(i)
        return [*groups.values(), *pending.values()]

    # ----- the step -------------------------------------------------------------------------
    @torch.inference_mode()
    def step(self, shared: torch.Generator | None = None, *, rows: Sequence[int] | None = None, records: bool = True
             ) -> dict[int, StepRecord]:
        """One step of every group that holds one of the active slots `rows` (default: all); the slots of `rows`
        that have not stepped yet form their groups first (the encoder reads their prompts). Each slot's new
        record. `shared` is ignored (a renoising request always draws from its own generator), and so is `records`
        (its records are made as it goes)."""
        wanted = self.active() if rows is None else sorted(set(rows))
        stray = [i for i in wanted if i not in self.slots or self.slots[i].done]
        if stray:
            raise ValueError(f"rows={list(wanted)!r} is invalid: slot(s) {stray} hold no unfinished request")
        fresh = [i for i in wanted if self.slots[i].group is None]
        by_length: dict[int, list[int]] = {}
        for i in fresh:
            by_length.setdefault(self.slots[i].settings.canvas_length, []).append(i)  # type: ignore[arg-type]
        for length, requests in by_length.items():
            self._group(requests, length)
        groups = {id(self.slots[i].group): self.slots[i].group for i in wanted}
        out: dict[int, StepRecord] = {}
        for group in groups.values():
            assert group is not None
            canvas = group.index  # (the step that ends a canvas moves the group on to the next)
            for r, step in group.step():
                if r in self.slots:  # (a released request's row is frozen: it never steps)
                    out[r] = step_record(step, len(self.slots[r].records), canvas)
        for r, record in out.items():
            self.slots[r].records.append(record)
        return out

    def _group(self, requests: list[int], length: int) -> None:
        """A new group of the slots `requests` (all of canvas length `length`): the encoder reads their prompts."""
        size = max(requests) + 1
        prompts: list[list[int]] = [[] for _ in range(size)]
        settings: list[RenoiseSettings] = [RenoiseSettings() for _ in range(size)]
        generators: list[torch.Generator] = [self.slots[requests[0]].generator] * size
        for i in requests:
            slot = self.slots[i]
            prompts[i], settings[i], generators[i] = slot.prompt_ids, slot.settings, slot.generator
        group = RenoiseGroup(self.model, prompts, settings, requests, length, generators, self.history_depth)
        for i in requests:
            self.slots[i].group = group

    # ----- results --------------------------------------------------------------------------
    def trace(self, index: int) -> Trace:
        """The finished trace of slot `index` (call before `release`)."""
        s = self.slots[index]
        assert s.group is not None and s.done, "the request has not finished"
        wall = round(time.perf_counter() - s.start, 6)
        result = result_of(self.model, s.prompt_ids, s.settings, s.group.progress[index], wall)
        return trace_of(self.model, result, s.records, s.config, prompt_text=s.prompt_text)


def decode_renoise(model: Renoiser, prompts: Sequence[Sequence[int] | str], configs: Sequence[DecodeConfig], *,
                   on_step: Callable[[int, StepRecord], None] | None = None) -> list[Trace]:
    """`decode` on a renoising model: every prompt together (grouped by canvas length), one Trace each."""
    ids = [prompt_ids(model, p) for p in prompts]
    batch = RenoiseBatch(model, capacity=len(ids))
    for p, c in zip(ids, configs):  # every request's settings and work before any takes a slot
        batch.check(p, batch.settings(c))
    for i, (p, c, raw) in enumerate(zip(ids, configs, prompts)):
        batch.add(i, p, c, prompt_text=raw if isinstance(raw, str) else None)
    while batch.active():
        for unit in batch.units():
            for i, record in batch.step(rows=unit).items():
                if on_step is not None:
                    on_step(i, record)
    return [batch.trace(i) for i in range(len(ids))]
