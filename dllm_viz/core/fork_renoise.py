"""Fork a renoising trace at a step (docs/fork_diff_export.md, docs/renoise.md): continue it from the exact state
after its first `step` steps with knobs switched: the entropy bound, the temperatures, the stop rule's thresholds,
where acceptance reads its entropy, the steps per canvas, the seed.

`core.fork.fork` checks the request and calls `fork_renoise` for a trace of canvas "renoise". The state is rebuilt
as for a masked trace, by a deterministic replay: the trace's request decoded again alone (`RenoiseBatch`, its own
generator seeded from the trace's seed) reaches, after `step` steps, the same canvas, self-conditioning, stop history
and generator state; each replayed step is checked against the trace's record (the same proposals, acceptances,
argmax canvas and stop). Then the knobs switch on the batch (`RenoiseBatch.reconfigure`) and the decode goes on.

What a fork cannot do here: force a token or take a position back. A renoising canvas holds no decided position:
every step writes every position of its canvas (an accepted proposal or fresh noise) and the next step reads it all
again, so a token placed at a step would be one more proposal the next step may renoise. Nor can it change the
canvas length (the group's cache is that long) or the new tokens asked for (`core.fork.FIXED`).

The stop rule compares the argmax canvas with the last `stability_threshold` ones: a fork that raises the threshold
half-way through a canvas needs the canvases before the switch, so the replay keeps a history as deep as the largest
threshold any of the trace's configs and the fork's asks for (a deeper history changes no verdict).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from dllm_viz.core import rules
from dllm_viz.core.budget import bound_work
from dllm_viz.core.config import DecodeConfig
from dllm_viz.core.lineage import ForkPoint
from dllm_viz.core.renoise_batch import RenoiseBatch, renoise_settings
from dllm_viz.core.renoise_decoder import prompt_ids
from dllm_viz.core.renoise_trace import resolved_config
from dllm_viz.core.trace import StepRecord, Trace
from dllm_viz.models.base import model_max_length, model_name

# What a replayed step must have done as the record says, field by field of its `renoise` section (ids and flags:
# exact on any machine that reproduces the decode; the entropies are floats and are not compared).
CHECKED = ("read", "proposal", "accepted", "argmax", "stopped")


def fork_renoise(model: Any, trace: Trace, step: int, *, chain: Sequence[DecodeConfig], lineage: Sequence[ForkPoint],
                 was: dict[str, Any], parent: str, on_step: Callable[[StepRecord], None] | None = None,
                 max_cells: int | None = None) -> Trace:
    """Continue the renoising `trace` from the state after its first `step` steps under `chain[-1]`.

    `chain`: the configs in force from the start (`chain[0]`, the trace's initial config), after each of the parent's
    fork points `lineage` (those at `step` or before), and the fork's own (`chain[-1]`); `was`: the fork's switched
    fields' old values (none: the fork is the trace itself); `parent`: the trace's digest. Raises ValueError naming
    what is wrong: a model that is not the trace's renoising one, a knob the model's defaults refuse, a canvas past
    the model's context or work past `max_cells`, a trace this model does not reproduce."""
    if rules.canvas_of(model) != "renoise":
        raise ValueError(f"model={model_name(model)!r} is invalid: expected a renoising model (the trace's "
                         f"{trace.model!r}; a fork replays the trace's first steps)")
    prompt = prompt_ids(model, trace.prompt_ids)  # the ids checked against this model's vocabulary
    settings = [renoise_settings(model, c) for c in chain]  # a knob the checkpoint refuses: ValueError naming it
    bound_work(settings[-1], prompt_length=len(prompt), max_length=model_max_length(model), max_cells=max_cells)
    config = resolved_config(chain[-1], settings[-1])  # every knob at the value that will run
    batch = RenoiseBatch(model, capacity=1, history_depth=max(s.stability_threshold for s in settings))
    slot = batch.add(0, prompt, chain[0], prompt_text=trace.prompt_text)
    for i in range(step + 1):
        for point in lineage:
            if point.step == i:
                _switch(batch, slot.config.replace(**dict(point.knobs)), "seed" in dict(point.knobs))
        if i < step:
            _check_replay(trace, _next_record(batch, i), i)
    point = ForkPoint(parent=parent, step=step, knobs=tuple((k, getattr(config, k)) for k in sorted(was)),
                      was=tuple(sorted(was.items())))
    if was:
        _switch(batch, config, "seed" in was)
    while batch.active():
        for rec in batch.step().values():
            if on_step is not None:
                on_step(rec)
    out = batch.trace(0)
    return replace(out, steps=[*trace.steps[:step], *slot.records[step:]],
                   vocab=dict(sorted({**trace.vocab, **out.vocab}.items())), forks=(*lineage, point))


def _switch(batch: RenoiseBatch, config: DecodeConfig, seeded: bool) -> None:
    """Slot 0 of `batch` decodes under `config` from its next step; a new seed starts its stream again from it."""
    batch.reconfigure(0, config)
    if seeded:
        batch.slots[0].generator.manual_seed(config.seed)


def _next_record(batch: RenoiseBatch, i: int) -> StepRecord:
    """Slot 0's next record: a switch that left its canvas no step to take ends the canvas with none, and the
    next canvas's first step is the record."""
    while batch.active():
        out = batch.step()
        if 0 in out:
            return out[0]
    raise ValueError(f"trace is invalid for a fork: replayed on this model it ends before its step {i}; expected a "
                     "trace this model reproduces (decoded by it alone, on this kind of machine)")


def _check_replay(trace: Trace, rec: StepRecord, i: int) -> None:
    """The replayed step `i` did what the trace's record says, else a ValueError saying where they part."""
    have, got = trace.steps[i].renoise, rec.renoise
    assert have is not None and got is not None  # both renoising records (the trace's schema, the batch)
    for name in CHECKED:
        a, b = getattr(have, name), getattr(got, name)
        if a != b:
            at = next((p for p, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b))) \
                if isinstance(a, list) and isinstance(b, list) else None
            where = f"{name}[{at}]: the trace has {a[at] if at is not None and at < len(a) else a!r}, the replay " \
                    f"{b[at] if at is not None and at < len(b) else b!r}"
            raise ValueError(f"trace is invalid for a fork: replayed on this model it parts from its record at step "
                             f"{i} ({where}); expected a trace this model reproduces (decoded by it alone, on this "
                             "kind of machine)")
    if trace.steps[i].block != rec.block:
        raise ValueError(f"trace is invalid for a fork: replayed on this model its step {i} is on canvas {rec.block}, "
                         f"the record's on canvas {trace.steps[i].block}; expected a trace this model reproduces")
