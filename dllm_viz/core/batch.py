"""The batched step: fixed slot buffers, and one denoising step over the occupied slots (`DecodeBatch`).

Each step reads like the article (sections 2.2, 7):
  (1) one forward pass over every unfinished request;
  (2) confidence from the RAW logits at masked positions (the mask token never a candidate);
  (3) the schedule picks positions in the current block by that confidence;
  (4) tokens are drawn only there, from softmax(logits / T) after the vocabulary filters;
  (5) commit; (6) record.
Steps (2)-(4) are `dllm_viz.core.step.denoise_step`, the step core the SGLang plugin runs too,
and the glue around it (reading the spans, the noise, the temperature, the parameters, the commit)
is `dllm_viz.core.canvas`, which the plugin calls too; this module owns the buffers, the forward
and the trace.

`DecodeBatch` holds fixed slot buffers (canvas, attention mask, schedule state) so that the same
step serves `decode` (`core.decoder`: all requests start together) and the continuous-batching engine
(requests join and leave between steps). Randomness: every step, each request draws ``torch.rand(2, G)``
from its own generator (G = its gen_length): row 0 holds the inverse-CDF uniform of each position, row 1
the score of the ``random`` confidence. That fixed consumption makes a request's trace independent
of its neighbours, of the batch size and of which positions were chosen.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Sequence

import torch

from dllm_viz.core import indel_decode, rules
from dllm_viz.core.cache import CacheStore, Drift, RowsForward, drift, exact_logits
from dllm_viz.core.canvas import (
    Coins, PerRows, RowSet, Spans, candidate_logits, commit, draw_noise, reads_uniforms, step_logits,
)
from dllm_viz.core.config import DecodeConfig
from dllm_viz.core.end_of_text import end_of_text_ids
from dllm_viz.core.forward import step_forward
from dllm_viz.core.indel_rows import BlockMemory, Carried, check_row, declared_edit_ids
from dllm_viz.core.plain import PlainRows, plain_rows, plain_step
from dllm_viz.core.record import Later, step_records
from dllm_viz.core.revision import RevisionState
from dllm_viz.core.step import StepResult, StepState, denoise_step, revision_targets
from dllm_viz.core.step_record import candidate_ids
from dllm_viz.core.trace import StepRecord, Trace, first_end_of_text
from dllm_viz.models.base import Denoiser, can_edit, check_cache, model_device, model_name, shadow_kind


@dataclass
class Slot:
    """Host-side bookkeeping of the request in one slot."""

    config: DecodeConfig
    prompt_ids: list[int]
    generator: torch.Generator
    prompt_text: str | None = None
    step: int = 0
    remaining: int = 0
    start: float = field(default_factory=time.perf_counter)
    records: list[StepRecord] = field(default_factory=list)
    early_stop_step: int | None = None  # the step the end-of-text early stop finished it at
    hold: bool = False  # its revision rule keeps the current block open with no mask left
    indel: BlockMemory | None = None  # its insert/delete rule's state, while it steps outside the rows' set
    # switched or edited between steps (a fork's point: `reconfigure`, `core.fork`): its canvas no longer follows
    # its config's plan from the start, so it never steps as a plain row (`core.plain`)
    replanned: bool = False

    @property
    def length(self) -> int:
        return len(self.prompt_ids) + self.config.gen_length

    @property
    def done(self) -> bool:
        return self.remaining == 0 and not self.hold


@dataclass(frozen=True)
class _Rows:
    """The slots of a run of steps: where they lie in the buffers, and their `RowSet`."""

    idx: torch.Tensor  # (A,) slot indices, in row order, on the device
    at: torch.Tensor | slice  # the same as an index of the state buffers: a slice (views, no gather) when 0..A-1
    n: int  # longest prompt + gen_length: the forward's width
    set: RowSet  # spans in the canvas, StepParams, constant temperature
    shadow: torch.Tensor | None = None  # (A,) bool: rows whose verify reads WINO's shadow block (None: no row)
    coins: list[bool] | None = None  # rows whose rule draws its own coins (`canvas.Coins`; None: no row)
    quiet: tuple[bool, ...] = ()  # rows that draw no uniform: theirs (`canvas.Coins`) or none read (`reads_uniforms`)
    # The rows are slots 0..A-1 and none keeps a cache (which may hold its canvas rows): the step reads
    # and writes the canvas buffer's rows in place, no copy of them.
    in_place: bool = False
    views: _Views | None = None  # with `in_place`: the rows of the buffers the step reads, as views made once
    plain: PlainRows | None = None  # with `in_place`: the rows' plans, when every row is plain (`core.plain`)


@dataclass(frozen=True)
class _Views:
    """The stepping rows of the buffers (slots 0..A-1), as views: the step reads them without indexing again."""

    canvas: torch.Tensor  # (A, N + 1)
    ids: torch.Tensor  # (A, n): the forward's width
    attention: torch.Tensor  # (A, n)
    order: torch.Tensor  # (A, G)
    k: torch.Tensor  # (A,)
    block_step: torch.Tensor  # (A,)
    block: torch.Tensor  # (A,)


def check_config(model: Denoiser, config: DecodeConfig, end_ids: tuple[int, ...] | None = None) -> Any:
    """What `config` asks of `model` itself, whatever the prompt, or a ValueError naming the knob: an end-of-text
    token for early_stop (`end_ids`: the model's, found when None), a model that can edit for an editing rule,
    that can edit lengths for an insert/delete rule (its edit tokens, else None), a cache it runs, knobs of its
    canvas (`rules.check_canvas`). What `DecodeBatch.add` checks first, and a server before it starts anything."""
    name = repr(model_name(model))
    if config.early_stop and not (end_of_text_ids(model) if end_ids is None else end_ids):
        raise ValueError(f"early_stop=True is invalid for {name}: the model has no end-of-text token "
                         "(eos_token_id); expected early_stop=False")
    if rules.REVISIONS[config.revise].edits and not can_edit(model):
        raise ValueError(
            f"revise={config.revise!r} is invalid for {name}: the model cannot edit (it was not trained to predict "
            "at visible positions; can_edit is False); expected a model with can_edit=True, or revise in "
            + " | ".join(n for n, p in rules.REVISIONS.items() if not p.edits))
    rules.check_canvas(config, rules.canvas_of(model), name)
    tokens = check_row(config, model, name)  # a model that can edit lengths
    check_cache(model, config.cache)
    return tokens


class DecodeBatch:
    """Fixed-capacity slot buffers and the batched step over the occupied slots."""

    atomic = False  # a failed step can be retried on part of the slots (`step(rows=...)`)

    def __init__(
        self,
        model: Denoiser,
        *,
        capacity: int,
        max_length: int,
        record_candidates: int = 5,
        device: torch.device | str | None = None,
    ) -> None:
        if not isinstance(record_candidates, int) or record_candidates < 0:
            raise ValueError(f"record_candidates={record_candidates!r}: expected an integer >= 0")
        self.model = model
        self.mask_id = int(model.mask_token_id)
        self.end_ids = end_of_text_ids(model)  # cut the text, drive the early stop
        self.shadow = shadow_kind(model)  # how it takes WINO's shadow block (None: per-position canvases)
        self.device = torch.device(device) if device is not None else model_device(model)
        self.capacity, self.max_length = capacity, max_length
        self.record_candidates = record_candidates
        # A step whose caller reads no record (`step(records=False)`): a plain step's records are made later,
        # with all the others (`core.record.Later`): at `trace`, or before a record is made another way.
        self.later = Later(record_candidates)
        self._later_ok = False  # the step in progress may leave its records for later
        S, dev, long = capacity, self.device, torch.long
        # One scratch column past max_length receives writes for positions a row does not have.
        self.canvas = torch.zeros(S, max_length + 1, dtype=long, device=dev)  # (S, N+1)
        self.attention = torch.zeros(S, max_length, dtype=torch.bool, device=dev)  # (S, N)
        # (S, N): the step each generated position was last decided at (-1: masked), from column 0
        # (generated position g of a slot is column g here, column prompt length + g in the canvas).
        self.order = torch.full((S, max_length), -1, dtype=long, device=dev)
        # Where each slot's generated span lies, and its schedule state (S,) each; the requests'
        # parameters are `StepParams` rows, built once per set of stepping slots (`_rows`).
        z = lambda: torch.zeros(S, dtype=long, device=dev)  # noqa: E731
        self.gen_start, self.gen_len = z(), z()
        self.k, self.block_step, self.block = z(), z(), z()
        # What the revision rules carry between steps (core.revision.RevisionState), per slot.
        self.rev_counter, self.rev_hold = z(), torch.zeros(S, dtype=torch.bool, device=dev)
        self.decided_conf = torch.zeros(S, max_length, dtype=torch.float32, device=dev)  # (S, N) from column 0
        self.slots: dict[int, Slot] = {}
        # The logits at its masks of each slot whose rule reuses them at its next step (ReMDM's p_x0 cache).
        self.reused: dict[int, torch.Tensor] = {}
        self._row_sets: PerRows[_Rows] = PerRows()
        # The insert/delete rows (`core.indel_decode`): their rule's state; the model's edit tokens.
        self.indel_rows = Carried()
        # edit ids: no plain candidate
        self.edit_ids, self.edit_tokens, self.n_indel = declared_edit_ids(model), None, 0
        self.caches = CacheStore()  # the approximate key-value cache each cached request holds (core.cache)

    # ----- slots ----------------------------------------------------------------------------
    def add(self, index: int, prompt_ids: list[int], config: DecodeConfig, generator: torch.Generator,
            prompt_text: str | None = None) -> Slot:
        """Place a request in slot `index` (free), resetting that slot's buffers."""
        slot = Slot(config=config, prompt_ids=prompt_ids, generator=generator, prompt_text=prompt_text,
                    remaining=config.gen_length)
        if slot.length > self.max_length:
            raise ValueError(
                f"prompt length + gen_length = {slot.length} exceeds the model's max_length={self.max_length}"
            )
        tokens = check_config(self.model, config, self.end_ids)
        P, G, c = len(prompt_ids), config.gen_length, config
        row = torch.full((self.max_length + 1,), self.mask_id, dtype=torch.long)
        row[:P] = torch.tensor(prompt_ids, dtype=torch.long)
        self.canvas[index] = row.to(self.device)
        self.attention[index] = torch.arange(self.max_length, device=self.device) < slot.length
        self.order[index] = -1
        self.gen_start[index], self.gen_len[index] = P, G
        self.k[index], self.block_step[index], self.block[index] = c.initial_k, 0, 0
        self.rev_counter[index], self.rev_hold[index], self.decided_conf[index] = 0, False, 0.0
        self.slots[index] = slot
        self.caches.drop(index)
        self.reused.pop(index, None)
        if tokens is not None:
            self.edit_tokens, self.n_indel = tokens, self.n_indel + 1
        return slot

    def reconfigure(self, index: int, config: DecodeConfig) -> None:
        """Decode slot `index` under `config` from its next step on, in the state it is in (canvas, generator,
        step count, schedule state): a fork's switch of a knob (`core.fork`, which checks `config` first)."""
        self.flush()
        self.slots[index].config = config
        self.slots[index].replanned = True
        self._row_sets.clear()  # the rows' parameters are built again at the next step

    def release(self, index: int) -> Slot:
        """Free slot `index`; returns what it held."""
        self.flush()
        self.caches.drop(index)
        self.reused.pop(index, None)
        self.n_indel -= self.slots[index].config.indel != "none"
        return self.slots.pop(index)

    def active(self) -> list[int]:
        return sorted(i for i, s in self.slots.items() if not s.done)

    def units(self) -> list[list[int]]:
        """The active slots as the forwards that step them: one, over all of them."""
        return [active] if (active := self.active()) else []

    # ----- the step -------------------------------------------------------------------------
    def step(self, shared: torch.Generator | None = None, *, rows: Sequence[int] | None = None,
             records: bool = True) -> dict[int, StepRecord]:
        """One denoising step for every unfinished slot, or for the slots `rows` only (the others
        wait: their state, generators included, is untouched); returns each slot's new record. With
        `records=False` the caller reads none: a plain step returns none, and its records are made later
        (at `trace`), all at once with the other steps' (`core.record.Later`). Runs in inference mode (a
        caller that steps in a loop may enter it once around the loop, as `decode` does)."""
        if not torch.is_inference_mode_enabled():
            with torch.inference_mode():
                return self.step(shared, rows=rows, records=records)
        idx_list = self.active()
        if rows is not None:
            wanted = sorted(set(rows))
            stray = [i for i in wanted if i not in idx_list]
            if stray:
                raise ValueError(f"rows={list(rows)!r} is invalid: slot(s) {stray} hold no unfinished request; "
                                 f"expected a subset of the active slots {idx_list}")
            idx_list = wanted
        if not idx_list:
            return {}
        self._later_ok = not records
        try:
            if self.n_indel:  # rows whose rule moves positions step apart, beside the others (core.indel_decode)
                return indel_decode.step_rows(self, idx_list, shared, self._step)
            return self._step(idx_list, shared)
        except BaseException:  # a step that raises keeps none of its caches: a retry plans the same forwards
            self.caches.discard()
            raise

    def _step(self, idx_list: list[int], shared: torch.Generator | None) -> dict[int, StepRecord]:
        """The step of the rows `idx_list` whose positions stay (`denoise_step`)."""
        slots = [self.slots[i] for i in idx_list]
        r = self._rows(idx_list, slots)
        if (out := plain_step(self, r, idx_list, slots, later=self._later_ok)) is not None:
            return out  # every row plain: its schedule state known on the host (`core.plain`)
        spans, idx, at = r.set.spans, r.idx, r.at

        # (1) one forward pass for every stepping request, right-padded to the longest. Only masked
        # positions need a distribution: their logits come packed, M rows in row-major order (the
        # order of `masked_scatter`), so vocabulary-wide work (the output head included, for a model
        # with `logits_at`) shrinks as the canvas fills.
        v = r.views if r.in_place else None
        canvas = v.canvas if v is not None else self.canvas.index_select(0, idx)  # (A, N + 1)
        current = spans.read(canvas)  # (A, G)
        masked = spans.masked(current, self.mask_id)  # (A, G)
        G, params = spans.width, r.set.params
        revision = None
        if params.revision is not None:  # what no row's rule reads stays the plan's constant (no gather)
            rp, c = params.revision, params.revision.constants(G, self.device)
            revision = RevisionState(counter=self.rev_counter[at],
                                     hold=self.rev_hold[at] if rp.holds else c.no,
                                     decided_conf=self.decided_conf[at, :G] if rp.keeps_conf else c.zero)
        state = StepState(k=self.k[at] if v is None else v.k, block=self.block[at] if v is None else v.block,
                          block_step=self.block_step[at] if v is None else v.block_step,
                          temperature=r.set.temperature_at([s.config for s in slots], [s.step for s in slots],
                                                           lambda: [s.remaining for s in slots]),
                          revision=revision)
        targets = revision_targets(masked, spans.valid, params, state) if params.revision is not None else None
        ids, attention = (v.ids, v.attention) if v is not None else (canvas[:, : r.n], self.attention[at, : r.n])
        reused = [a for a, i in enumerate(idx_list) if i in self.reused]  # rows that run no forward (ReMDM's cache)
        fwd, seen, verified = step_forward(self.model, self.caches, self.mask_id, idx_list, [s.config for s in slots],
                                           [len(s.prompt_ids) for s in slots], ids, attention, spans, masked, targets,
                                           r.shadow, r.set.params.block_size, self.edit_ids,
                                           {a: self.reused[idx_list[a]] for a in reused})
        coins = r.coins  # (A,) bool | None: rows whose rule draws its own coins, and none of the step's uniforms
        noise = draw_noise([None if r.quiet[a] else shared
                            if (s.config.rng == "shared" and shared is not None) else s.generator
                            for a, s in enumerate(slots)], [s.config.gen_length for s in slots], self.device)

        # (2) confidence, (3) the schedule's choice, (3') revisions, (4) the draw: the step core.
        own_coins = Coins([s.generator if c else None for c, s in zip(coins, slots)]) if coins else None
        result = denoise_step(step_logits(fwd.logits), fwd.scored, params, state, noise,  # the step masks the mask id
                              top=self.record_candidates, current=current, valid=spans.valid, seen=seen,
                              targets=targets, coins=own_coins)
        keep = _reused_next(result, masked, fwd.logits, idx_list)  # kept once the step succeeds
        drifts = self._drift(fwd, result, r, state, noise, slots, ids, attention, spans.pos)

        # (5) commit, and keep the schedule state.
        done = commit(result, current, order=self.order[at, :G] if v is None else v.order,
                      step=_step_numbers(slots, self.device), mask_id=self.mask_id)
        if r.in_place:  # nothing read the rows since the forward: they take the span where they lie
            spans.write_(canvas, done.span)
        else:
            self.canvas.index_copy_(0, idx, spans.write(canvas, done.span))
        self.order[at, :G] = done.order
        self.k[at], self.block_step[at], self.block[at] = result.next_k, result.next_block_step, result.block
        if result.next_revision is not None:
            nr = result.next_revision
            self.rev_counter[at] = nr.counter
            if result.revision.holds:  # type: ignore[union-attr]  # (else False throughout, as it was)
                self.rev_hold[at] = nr.hold
            if nr.decided_conf is not revision.decided_conf:  # type: ignore[union-attr]  # (else unchanged)
                self.decided_conf[at, :G] = nr.decided_conf

        # (6) record, with one device-to-host transfer per tensor. A window scored only part of the masks:
        # the ones it left unscored are still to do.
        remaining = result.remaining if fwd.scored is masked else result.remaining + (masked & ~fwd.scored).sum(-1)
        if self._later_ok and Later.keeps(result, fwd, drifts, slots, reused):
            self.later.add(slots, result, remaining)
            records = {}
        else:
            self.flush()
            records = step_records(slots, idx_list, result, current, verified, remaining, fwd, drifts,
                                   candidates=self.record_candidates, reused=reused)
        self.caches.commit()
        for i in idx_list:
            self.reused.pop(i, None)
        self.reused.update(keep)
        return records

    def _drift(self, fwd: RowsForward, result: StepResult, r: _Rows, state: StepState, noise: torch.Tensor,
               slots: list[Slot], ids: torch.Tensor, attention: torch.Tensor, pos: torch.Tensor) -> Drift | None:
        """The cache drift diagnostic (`DecodeConfig.cache_drift`): the same step on the exact logits of
        the rows whose forward was a window; None when no row asks for it this step."""
        want = [a for a, (s, f) in enumerate(zip(slots, fwd.forwards))
                if s.config.cache_drift and f is not None and f.kind != "full"]
        if not want:
            return None
        exact = step_logits(exact_logits(self.model, fwd, want, ids, attention, pos))  # masked by the step, as above
        again = denoise_step(exact, fwd.scored, r.set.params, state, noise, top=1)
        exact_candidates = candidate_logits(exact.squeeze(1), self.mask_id, self.edit_ids)
        return drift(result, again, exact_candidates, r.set.params, state, noise)

    def _rows(self, idx_list: list[int], slots: list[Slot]) -> _Rows:
        """The stepping slots' parameters and canvas geometry, rebuilt only when the set changes."""
        def build() -> _Rows:
            idx = torch.tensor(idx_list, device=self.device)
            spans = Spans.at(self.gen_start[idx], self.gen_len[idx], scratch=self.max_length)
            shadowed = [self.shadow is not None and rules.REVISIONS[s.config.revise].shadow(s.config) for s in slots]
            coins = [rules.REVISIONS[s.config.revise].coins(s.config) for s in slots]
            at = slice(0, len(idx_list)) if idx_list == list(range(len(idx_list))) else idx
            n, G = max(s.length for s in slots), spans.width
            in_place = isinstance(at, slice) and all(s.config.cache == "none" for s in slots)
            views = _Views(canvas=self.canvas[at], ids=self.canvas[at, :n], attention=self.attention[at, :n],
                           order=self.order[at, :G], k=self.k[at], block_step=self.block_step[at],
                           block=self.block[at]) if in_place else None
            row_set = RowSet.build([s.config for s in slots], spans, end_of_text_ids=self.end_ids, device=self.device,
                                   mask_id=self.mask_id, edit_ids=self.edit_ids,
                                   prompt_lengths=[len(s.prompt_ids) for s in slots])
            return _Rows(idx=idx, at=at, n=n, set=row_set,
                         shadow=torch.tensor(shadowed, device=self.device) if any(shadowed) else None,
                         coins=coins if any(coins) else None,
                         quiet=tuple(c or not reads_uniforms(s.config) for c, s in zip(coins, slots)),
                         in_place=in_place, views=views,
                         plain=plain_rows([s.config for s in slots], in_place=in_place,
                                          reference=row_set.params.quirks.any, width=G, device=self.device))

        return self._row_sets.get(slots, build)

    # ----- results --------------------------------------------------------------------------
    def flush(self) -> None:
        """Make the records of the steps kept for later (`records_later`) into their slots' `records`."""
        self.later.flush()

    def trace(self, index: int) -> Trace:
        """The finished trace of slot `index` (call before `release`)."""
        self.flush()
        s = self.slots[index]
        P, G = len(s.prompt_ids), s.config.gen_length
        token_ids = self.canvas[index, P : P + G].tolist()
        order = self.order[index, :G].tolist()
        tok = getattr(self.model, "tokenizer", None)
        vocab, text = {}, None
        if tok is not None:
            seen = set(s.prompt_ids) | set(token_ids)
            for rec in s.records:
                seen.update(i for i in rec.argmax if i >= 0)
                seen.update(rec.tokens)  # a confirmed token may be taken back or rewritten later
                seen.update(rec.edited_to or ())
                seen.update(rec.edited_from or ())
            seen |= candidate_ids(s.records)
            vocab = {i: tok.decode([i]) for i in sorted(seen)}
        end = first_end_of_text(token_ids, self.end_ids)  # the text stops there; the rest is end padding
        if tok is not None:
            text = tok.decode(token_ids[:end])
        return Trace(
            prompt_ids=s.prompt_ids, token_ids=token_ids, order=order, steps=s.records, config=s.config,
            model=model_name(self.model),
            wall_time=round(time.perf_counter() - s.start, 6), vocab=vocab, text=text,
            prompt_text=s.prompt_text, mask_token_id=self.mask_id, text_end=end, early_stop_step=s.early_stop_step,
        )


def _step_numbers(slots: list[Slot], device: torch.device) -> torch.Tensor | int:
    """Each slot's step number, `(A,)`; one int when they share it (`decode`'s rows start together)."""
    numbers = [s.step for s in slots]
    return numbers[0] if numbers.count(numbers[0]) == len(numbers) else torch.tensor(numbers, device=device)


def _reused_next(result: StepResult, masked: torch.Tensor, logits: torch.Tensor,
                 idx_list: list[int]) -> dict[int, torch.Tensor]:
    """slot -> the logits `(m, V)` at its masks that its next step reuses (`Plan.reuse`: nothing changed, so
    the canvas and its masks are the same; ReMDM's p_x0 cache), from the step's packed `logits (M, ...)`."""
    plan = result.revision
    if plan is None or plan.reuse is None:
        return {}
    at = masked.flatten().cumsum(0).sub(1).view(masked.shape)  # (A, G) each mask's packed row
    return {idx_list[a]: logits[at[a][masked[a]]].clone() for a, k in enumerate(plan.reuse.tolist()) if k}
