"""Fork a trace at a step: continue it from the exact state after its first `step` steps, with a change
(docs/fork_diff_export.md): tokens forced at positions, positions taken back to [MASK], knobs switched.

The state is rebuilt by a deterministic replay: the decoder is a function of the model, the prompt, the
config and the seed (every random number comes from the request's own generator, `core.decoder`), so the
trace's request decoded again alone reaches, after `step` steps, the same canvas, generator state,
schedule state, revision state and cache that the trace's decode had there. Each replayed step is
checked against the trace's record (the same decisions, `core.diff`); a trace this model does not
reproduce (another model, another machine's floats, a request decoded in a batch with the shared-RNG
switch) is refused by name rather than forked from a state it never had. Then the change is made on
the batch's buffers and the decode goes on in the same `DecodeBatch`, the step counter where it was.

Floor (tests/test_fork.py): a fork of a seeded trace at any step with nothing changed is the trace
itself, token for token and step for step.

A forced token is recorded as decided before the fork's step (`order` = step - 1) with no model
probability; a revision rule that ranks decided tokens by the confidence they were decided with (RCR)
reads 1.0 for it, so the rule does not take the user's token back first. Changing the canvas drops the
request's approximate key-value cache: its next step is a full forward (a cache kept from before the
change would hold keys of tokens no longer there).

The forked trace keeps the parent's first `step` records as they were and lists its lineage in
`Trace.forks` (`core.lineage.ForkPoint`: the parent's digest, the step, the change).

A renoising trace forks with knobs switched only (`core.fork_renoise`: its canvas holds no decided position to
force or take back); this module checks the request and hands it over.
"""
from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import torch

from dllm_viz.core.batch import DecodeBatch
from dllm_viz.core.budget import bound_work
from dllm_viz.core.config import DecodeConfig, short
from dllm_viz.core.decoder import encode_prompt, request_generator
from dllm_viz.core.diff import step_differences
from dllm_viz.core.fork_renoise import fork_renoise
from dllm_viz.core.lineage import ForkPoint
from dllm_viz.core.trace import StepRecord, Trace
from dllm_viz.models.base import check_denoiser, model_max_length, model_name

# Knobs a fork cannot switch: they fix the canvas (its length, its blocks, whether its positions move: an
# insert/delete rule's block state is its own), the cache's state, or which stream the random numbers come from. Every
# other DecodeConfig field may change at a fork (seed: the request's generator is seeded again at the fork's step).
FIXED = ("gen_length", "block_length", "cache", "cache_refresh", "cache_drift", "rng", "indel")
FIXED_RENOISE = ("gen_length", "canvas_length")  # a renoising canvas: the new tokens asked for, each canvas's length


def digest(trace: Trace) -> str:
    """A trace's identity in a fork's lineage: the first 16 hex digits of the SHA-256 of its JSON."""
    return hashlib.sha256(trace.to_json().encode("utf-8")).hexdigest()[:16]


def initial_config(trace: Trace) -> DecodeConfig:
    """The config a trace's decode started with: its config with every fork point's switch undone."""
    config = trace.config
    for point in reversed(trace.forks):
        config = config.replace(**dict(point.was))
    return config


def fork(model: Any, trace: Trace, step: int, *, force: Mapping[int, int] | None = None, remask: Sequence[int] = (),
         knobs: Mapping[str, Any] | None = None, record_candidates: int | None = None,
         on_step: Callable[[StepRecord], None] | None = None, max_cells: int | None = None) -> Trace:
    """Continue `trace` from the state after its first `step` steps (0 <= step <= its steps), with a change.

    `force` {position: token id} places tokens (on masks or over visible tokens), `remask` takes visible
    positions back to [MASK], `knobs` {field: value} switches DecodeConfig fields (not those of `FIXED`);
    with none of them the fork is the trace itself; a renoising trace takes knobs only (not those of
    `FIXED_RENOISE`, `core.fork_renoise`). `record_candidates` (default: as many as the trace
    kept) and `on_step` (called with each new record) are `decode`'s. The canvas is checked against the
    model's context and the continuation's work (what the switched knobs may add) against `max_cells` (a
    server's bound, `core.budget`; the replay is the trace's own steps) before anything is allocated.
    Raises ValueError naming what is wrong: a step past the end, a position outside the generated span, a
    token id outside the vocabulary, a knob that is fixed or invalid, a canvas or work past the bounds, a
    trace this model does not reproduce.
    """
    if not isinstance(trace, Trace):
        raise ValueError(f"trace={short(trace)} is invalid: expected a Trace")
    n = len(trace.steps)
    if type(step) is not int or not 0 <= step <= n:
        raise ValueError(f"step={short(step)} is invalid: expected a step in [0, {n}] (the trace has {n} steps; "
                         f"a fork at {n} continues after its last)")
    if model_name(model) != trace.model:
        raise ValueError(f"model={model_name(model)!r} is invalid: expected the trace's own model {trace.model!r} "
                         "(a fork replays the trace's first steps)")
    lineage = tuple(p for p in trace.forks if p.step <= step)  # the parent's own fork points up to here
    start = initial_config(trace)
    renoising = trace.canvas == "renoise"
    config, was = _switched(config_at(start, lineage), knobs, FIXED_RENOISE if renoising else FIXED)
    if renoising:
        for name, change in (("force", force), ("remask", remask)):
            if change:
                raise ValueError(f"{name}={short(change)} is invalid on a renoising trace: expected none (every step "
                                 "writes every position of its canvas, an accepted proposal or noise, so none is "
                                 "decided to force or take back); switch knobs instead")
        chain = [config_at(start, lineage[:j]) for j in range(len(lineage) + 1)] + [config]
        return fork_renoise(model, trace, step, chain=chain, lineage=lineage, was=was, parent=digest(trace),
                            on_step=on_step, max_cells=max_cells)
    check_denoiser(model)
    prompt = encode_prompt(model, trace.prompt_ids)  # the ids checked against this model's vocabulary
    bound_work(config, prompt_length=len(prompt), max_length=model_max_length(model), max_cells=max_cells)
    width = max(1, len(prompt) + start.gen_length)
    if was:  # the new config checked as a request joining a batch is, before any forward runs
        DecodeBatch(model, capacity=1, max_length=width, record_candidates=0).add(0, prompt, config,
                                                                                  request_generator(config))
    batch = DecodeBatch(model, capacity=1, max_length=width,
                        record_candidates=_candidates(trace) if record_candidates is None else record_candidates)
    slot = batch.add(0, prompt, start, request_generator(start), trace.prompt_text)
    shared = request_generator(start) if start.rng == "shared" else None
    for i in range(step + 1):
        for point in lineage:
            if point.step == i:
                shared = _apply(batch, point, i, shared)
        if i < step:
            _check_replay(trace, batch.step(shared)[0], i)
    point = _point(trace, batch, step, model, force, remask, config, was)
    shared = _apply(batch, point, step, shared)
    while batch.active():
        for rec in batch.step(shared).values():
            if on_step is not None:
                on_step(rec)
    out = batch.trace(0)
    vocab = {**trace.vocab, **out.vocab, **_texts(model, [tok for _, tok in point.force])}
    return replace(out, steps=[*trace.steps[:step], *slot.records[step:]], vocab=dict(sorted(vocab.items())),
                   forks=(*lineage, point))


def config_at(start: DecodeConfig, lineage: Sequence[ForkPoint]) -> DecodeConfig:
    """The config in force after the fork points `lineage` switched their knobs, from `start`."""
    for point in lineage:
        if point.knobs:
            start = start.replace(**dict(point.knobs))
    return start


def _switched(config: DecodeConfig, knobs: Mapping[str, Any] | None,
              fixed: Sequence[str] = FIXED) -> tuple[DecodeConfig, dict[str, Any]]:
    """The config after the switch and the switched fields' old values (the fields whose value changes); the
    `fixed` fields may not switch."""
    if knobs is None:
        return config, {}
    if not isinstance(knobs, Mapping):
        raise ValueError(f"knobs={short(knobs)} is invalid: expected a mapping of DecodeConfig fields to values")
    held = sorted(set(knobs) & set(fixed))
    if held:
        raise ValueError(f"knobs: {held[0]}={short(knobs[held[0]])} is invalid at a fork: expected a knob that "
                         f"keeps the canvas and its random stream (not {', '.join(fixed)})")
    new = config.replace(**knobs)  # an unknown field or a bad value: DecodeConfig's ValueError, naming it
    was = {k: getattr(config, k) for k in sorted(knobs) if getattr(new, k) != getattr(config, k)}
    return (new, was) if was else (config, {})


def _point(trace: Trace, batch: DecodeBatch, step: int, model: Any, force: Mapping[int, int] | None,
           remask: Sequence[int], config: DecodeConfig, was: dict[str, Any]) -> ForkPoint:
    """The fork point, its change checked against the state at `step` (ValueError naming what is wrong)."""
    G, mask = trace.config.gen_length, batch.mask_id
    P = int(batch.gen_start[0])
    span = batch.canvas[0, P:P + G].tolist()
    force = dict(force or {})
    end = _vocab(model, batch) if force else 0
    for pos, tok in force.items():
        _position("force", pos, G)
        if type(tok) is not int or not 0 <= tok < end or tok == mask:
            raise ValueError(f"force: token id {short(tok)} at position {pos} is invalid: expected an id in "
                             f"[0, {end}) (the model's vocabulary) other than the mask id {mask}")
        if span[pos] == tok:
            raise ValueError(f"force: position {pos} already holds token {tok} at step {step}: expected another id")
    if isinstance(remask, (str, bytes)) or not isinstance(remask, Sequence):
        raise ValueError(f"remask={short(remask)} is invalid: expected a list of positions")
    for pos in remask:
        _position("remask", pos, G)
        if span[pos] == mask:
            raise ValueError(f"remask: position {pos} is invalid: it is masked at step {step}; expected a visible "
                             "position")
        if pos in force:
            raise ValueError(f"remask: position {pos} is invalid: it is also forced; expected one change a position")
    if len(set(remask)) != len(remask):
        raise ValueError(f"remask={short(list(remask))} is invalid: expected each position once")
    return ForkPoint(parent=digest(trace), step=step, force=tuple(sorted(force.items())), remask=tuple(sorted(remask)),
                     knobs=tuple((k, getattr(config, k)) for k in sorted(was)), was=tuple(sorted(was.items())))


def _vocab(model: Any, batch: DecodeBatch) -> int:
    """The model's vocabulary size: `vocab_size` when it states one, else the width of its logits on slot 0."""
    size = getattr(model, "vocab_size", None)
    if isinstance(size, int) and not isinstance(size, bool) and size > 0:
        return size
    n = batch.slots[0].length
    with torch.inference_mode():
        return int(model(batch.canvas[:1, :n], batch.attention[:1, :n]).shape[-1])  # (1, n, V)


def _position(what: str, pos: Any, G: int) -> None:
    if type(pos) is not int or not 0 <= pos < G:
        raise ValueError(f"{what}: position {short(pos)} is invalid: expected a position in [0, {G}) "
                         "(the generated span)")


def _apply(batch: DecodeBatch, point: ForkPoint, step: int, shared: torch.Generator | None) -> torch.Generator | None:
    """Make a fork point's change on slot 0 of `batch` before its step `step`: the knobs, then the canvas."""
    slot = batch.slots[0]
    if point.knobs:
        config = slot.config.replace(**dict(point.knobs))
        batch.reconfigure(0, config)
        if "seed" in dict(point.knobs):  # a new seed: the request's stream starts again from it here
            slot.generator.manual_seed(config.seed)
            if shared is not None:
                shared.manual_seed(config.seed)
    if not point.changes_canvas:
        return shared
    pos = torch.tensor([p for p, _ in point.force] + list(point.remask), dtype=torch.long, device=batch.device)
    ids = torch.tensor([t for _, t in point.force] + [batch.mask_id] * len(point.remask), dtype=torch.long,
                       device=batch.device)
    back = ids == batch.mask_id
    P, G = int(batch.gen_start[0]), slot.config.gen_length
    batch.canvas[0, P + pos] = ids
    batch.order[0, pos] = torch.where(back, -1, step - 1)
    batch.decided_conf[0, pos] = torch.where(back, 0.0, 1.0)
    slot.remaining = int((batch.canvas[0, P:P + G] == batch.mask_id).sum())
    slot.replanned = True  # its canvas left its config's plan: never a plain row (core.plain)
    batch.caches.drop(0)  # its keys were computed from tokens no longer there: the next forward refreshes
    return shared


def _check_replay(trace: Trace, rec: StepRecord, i: int) -> None:
    """The replayed step `i` made the trace's decisions, else a ValueError saying where they part."""
    replayed = replace(trace, steps=[*trace.steps[:i], rec], forks=())
    original = replace(trace, steps=trace.steps[: i + 1], forks=())
    found = [d for d in step_differences(original, replayed, i) if d.kind != "another_stop"]
    if found:
        d = found[0]
        raise ValueError(f"trace is invalid for a fork: replayed on this model it parts from its record at step {i}"
                         f", position {d.position} ({d.kind}: the trace has {d.a!r}, the replay {d.b!r}); expected a "
                         "trace this model reproduces (decoded by it alone, on this kind of machine)")


def _candidates(trace: Trace) -> int:
    """How many raw candidates per position the trace kept (0 when none)."""
    return max((len(c) for rec in trace.steps for c in rec.candidates or ()), default=0)


def _texts(model: Any, ids: list[int]) -> dict[int, str]:
    tok = getattr(model, "tokenizer", None)
    return {} if tok is None else {i: tok.decode([i]) for i in ids}
