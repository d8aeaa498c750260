"""One denoising step, shared by every caller: the playground's `DecodeBatch` and the SGLang plugin.

`denoise_step` is a pure function from what the model predicted at the still-masked positions,
the per-request parameters (`StepParams`), the schedule state (`StepState`) and each request's
uniforms to a typed `StepResult`. Its body reads as the article (sections 2.2, 7):
  (1) the model's distribution at the masked positions (the caller ran the forward and packed them;
      the mask token is no candidate);
  (2) confidence from the RAW distribution, or the source a request asked for (`core.sources`);
  (3) the schedule (a plug-in of `core.rules`) sets how many positions of the current block to
      confirm, and they are picked by that confidence (or by the schedule's own score);
  (3') a request with a revision rule (`core.revision`) may then take back decided tokens of the block
      or rewrite them, and the rule sets how many masks the step confirms;
  (4) tokens are drawn only there, from softmax(logits / T) after the vocabulary filters; the teaching
      switch `global_draw` draws at every masked position first; the early stop may finish a row;
  (5) the caller commits (`core.canvas.commit`: tokens where `selected`, rewrites, re-masks) and keeps
      the next schedule state;
  (6) the StepResult carries what the record needs.
What reproduces a reference implementation's ties, dtypes and candidates (LLaDA's, Fast-dLLM's code)
is applied around these steps by `params.quirks` (`core.references`), a no-op for every other row.

Shapes: A requests (rows), G generated positions per row (right-padded), M masked positions over
all rows, packed row-major (the order of `masked.nonzero()` and of `masked_scatter`), V the
vocabulary. Randomness comes in as `noise (A, 2, G)`: row 0 the inverse-CDF uniform of each
position, row 1 the score of the ``random`` confidence, drawn by the caller from each request's own
generator, so a request's result never depends on its neighbours.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Sequence

import torch

from dllm_viz.core.config import DecodeConfig
from dllm_viz.core.end_of_text import end_of_text_rows, fill_end_of_text
from dllm_viz.core.packed import Drawn, Packed, draw_chosen, global_draw, pack, unpack
from dllm_viz.core.references import NONE, Quirks
from dllm_viz.core.revision import (
    Plan, RevisionParams, RevisionState, RevisionTargets, Whole, decided_in, revise, revision_inputs, settle,
    targets_of,
)
from dllm_viz.core.rules.base import Columns, Positions, QuotaInputs, select_top
from dllm_viz.core.schedules import SCHEDULE_IDS, block_of, current_block, next_k, quota, rank, schedule_knobs
from dllm_viz.core.scoring import CONFIDENCE_IDS, Distribution, entropy_nats, score
from dllm_viz.core.sources import SOURCE_IDS, confidence_for

__all__ = ["Packed", "RevisionTargets", "StepParams", "StepResult", "StepState", "denoise_step", "pack",
           "revision_targets", "unpack"]


@dataclass(frozen=True)
class StepParams:
    """Every request's decoding parameters, one row per request (`(A,)` tensors), built once.

    The name sets (`schedules`, `measures`, `sources`) let the step skip what no row uses.
    """

    schedule_id: torch.Tensor  # (A,) long: index into config.SCHEDULES
    measure_id: torch.Tensor  # (A,) long: index into config.CONFIDENCES
    source_id: torch.Tensor  # (A,) long: index into config.CONFIDENCE_FROM
    draw_all: torch.Tensor  # (A,) bool: sample_scope == "all" (draw at every masked position first)
    top_k: torch.Tensor  # (A,) long: initial k
    block_size: torch.Tensor  # (A,) long: positions per block (>= 1)
    steps_per_block: torch.Tensor  # (A,) long: fixed_steps / linear_time budget of one block (>= 1)
    restart: torch.Tensor  # (A,) bool: k restarts at top_k in each block
    knobs: Columns  # the schedules' knobs (`knobs.decay`, `knobs.min_k`, `knobs.threshold`, ...)
    vocab_top_k: torch.Tensor  # (A,) long: 0 = off
    top_p: torch.Tensor  # (A,) float32: 1 = off
    early_stop: torch.Tensor  # (A,) bool: finish once the current block is all end-of-text
    early_stop_threshold: torch.Tensor  # (A,) float32: raw probability of end-of-text it needs
    schedules: frozenset[str]
    measures: frozenset[str]
    sources: frozenset[str]
    quirks: Quirks = NONE  # the rows that follow a reference implementation's own code (core.references)
    end_of_text_ids: tuple[int, ...] = ()  # the model's end-of-text ids; none: the early stop never fires
    # The model's mask token: the step takes it out of the candidates itself (a reference row keeps it,
    # see `core.references.llada`); None when the caller's logits have it at -inf already.
    mask_token_id: int | None = None
    # The model's edit tokens (DELETE, SPLIT of a model trained to edit lengths): no candidate either, in
    # every row (only an insert/delete rule writes them, `core.indel_rows`); () for the other models.
    edit_token_ids: tuple[int, ...] = ()
    any_early_stop: bool = False  # some row has early_stop (host-side, so the step skips it without a sync)
    any_draw_all: bool = False  # some row has sample_scope="all" (host-side, likewise)
    greedy: bool = False  # every row draws at temperature 0 throughout (host-side: the draws are argmaxes)
    any_restart: bool = True  # some row restarts k in each block (host-side: else k carries on, no pick)
    least_block: int = 1  # the smallest block size of the rows (host-side: a step no wider has one block)
    revision: RevisionParams | None = None  # the rows' revision rules; None: no row revises

    @classmethod
    def from_configs(cls, configs: Sequence[DecodeConfig], *, device: torch.device | str = "cpu",
                     end_of_text_ids: tuple[int, ...] = (), mask_token_id: int | None = None,
                     prompt_lengths: Sequence[int] | None = None, edit_token_ids: tuple[int, ...] = ()) -> StepParams:
        """The rows of `configs`, in order; `end_of_text_ids` are the model's (for the early stop),
        `mask_token_id` its mask token, `prompt_lengths` the canvas columns before each row's span,
        `edit_token_ids` its edit tokens (never drawn here)."""
        def col(values: list, dtype: torch.dtype = torch.long) -> torch.Tensor:
            return torch.tensor(values, dtype=dtype, device=device)

        cs = list(configs)
        return cls(
            schedule_id=col([SCHEDULE_IDS[c.schedule] for c in cs]),
            measure_id=col([CONFIDENCE_IDS[c.confidence] for c in cs]),
            source_id=col([SOURCE_IDS[c.confidence_from] for c in cs]),
            draw_all=col([c.sample_scope == "all" for c in cs], torch.bool),
            top_k=col([c.initial_k for c in cs]),
            block_size=col([max(1, c.block_size) for c in cs]),
            steps_per_block=col([max(1, c.total_steps // c.num_blocks) for c in cs]),
            restart=col([c.block_schedule == "restart" for c in cs], torch.bool),
            knobs=schedule_knobs(cs, device=device),
            vocab_top_k=col([c.vocab_top_k or 0 for c in cs]),
            top_p=col([c.top_p if c.top_p is not None else 1.0 for c in cs], torch.float32),
            early_stop=col([c.early_stop for c in cs], torch.bool),
            early_stop_threshold=col([c.early_stop_threshold for c in cs], torch.float32),
            schedules=frozenset(c.schedule for c in cs),
            measures=frozenset(c.confidence for c in cs),
            sources=frozenset(c.confidence_from for c in cs),
            quirks=Quirks.of(cs, prompt_lengths=list(prompt_lengths) if prompt_lengths is not None else [0] * len(cs),
                             device=device),
            end_of_text_ids=tuple(end_of_text_ids),
            mask_token_id=mask_token_id,
            edit_token_ids=tuple(edit_token_ids),
            any_early_stop=any(c.early_stop for c in cs),
            any_draw_all=any(c.sample_scope == "all" for c in cs),
            greedy=all(c.temperature == 0 and c.temperature_stages is None for c in cs),
            any_restart=any(c.block_schedule == "restart" for c in cs),
            least_block=min((max(1, c.block_size) for c in cs), default=1),
            revision=RevisionParams.from_configs(cs, device=device, prompt_lengths=prompt_lengths)
            if any(c.revise != "none" for c in cs) else None,
        )

    def position_blocks(self, G: int) -> torch.Tensor:
        """`(A, G)` long: the block of each of the first G generated positions of each row (`block_of`), made once
        per width and read by every step of these rows (never written)."""
        made = self.__dict__.setdefault("_position_blocks", {})  # beside the frozen fields, as cached_property does
        if G not in made:
            made[G] = block_of(torch.arange(G, device=self.block_size.device), self.block_size)
        return made[G]


@dataclass(frozen=True)
class StepState:
    """Schedule state entering a step, one row per request."""

    k: torch.Tensor  # (A,) long: topk_decay's current k
    block_step: torch.Tensor  # (A,) long: steps taken in `block`
    block: torch.Tensor  # (A,) long: block of the previous step (0 at the start)
    temperature: torch.Tensor  # (A,) float32: temperature in force for this step's draws
    revision: RevisionState | None = None  # what the rows' revision rules carry; None: the initial state

    @classmethod
    def initial(cls, params: StepParams, temperature: torch.Tensor) -> StepState:
        """The state of requests that have taken no step yet."""
        zero = torch.zeros_like(params.top_k)
        return cls(k=params.top_k.clone(), block_step=zero, block=zero.clone(), temperature=temperature)

    def revision_state(self, G: int) -> RevisionState:
        """The rows' revision state, initial when none was carried in."""
        if self.revision is not None:
            return self.revision
        return RevisionState.initial(self.k.shape[0], G, device=self.k.device)


@dataclass(frozen=True)
class StepResult:
    """What one step decided, one row per request. Record-only fields are computed on access."""

    confidence: torch.Tensor  # (A, G) the confidence the schedule ranked by (0 where not masked)
    raw_confidence: torch.Tensor  # (A, G) the same measure on the raw distribution
    selected: torch.Tensor  # (A, G) bool: positions confirmed this step
    tokens: torch.Tensor  # (A, G) long: ids placed at `selected`; -1 elsewhere
    count: torch.Tensor  # (A,) long: positions confirmed (the schedule's quota)
    block: torch.Tensor  # (A,) long: block decoded this step
    next_k: torch.Tensor  # (A,) long: topk_decay's k for the next step
    next_block_step: torch.Tensor  # (A,) long: steps taken in `block` after this one
    temperature: torch.Tensor  # (A,) float32: temperature of this step's draws
    masked: torch.Tensor  # (A, G) bool: positions that were masked entering the step
    raw: Distribution  # the raw distribution at the packed positions, (M, 1, V)
    stopped: torch.Tensor  # (A,) bool: rows the end-of-text early stop finished this step
    # The revision phase (None when no row revises): what it took back and rewrote, `Plan` fields
    # (A, G) and (A,), with `hold` final; and the state the rules carry into the next step.
    revision: Plan | None = None
    next_revision: RevisionState | None = None
    # (M, 1, 1) at temperature 0 (no rule placing tokens of its own): the raw log-probability of each packed
    # position's argmax, which is the token the step places wherever it places one; None otherwise.
    greedy_logp: torch.Tensor | None = None

    @property
    def remaining(self) -> torch.Tensor:  # (A,) masks left after the step (re-masked ones included)
        left = (self.masked > self.selected).sum(-1)  # (masked and not selected: one op on bools)
        return left if self.revision is None else left + self.revision.remasked.sum(-1)

    @property
    def finished(self) -> torch.Tensor:  # (A,) bool: nothing left to do (no mask, no block held open)
        done = self.remaining == 0
        return done if self.revision is None else done & ~self.revision.hold

    @property
    def decided(self) -> torch.Tensor:  # (A, G) bool: positions given a token this step (confirmed or rewritten)
        return self.selected if self.revision is None else self.selected | self.revision.edited

    def next_state(self, temperature: torch.Tensor) -> StepState:
        return StepState(k=self.next_k, block_step=self.next_block_step, block=self.block, temperature=temperature,
                         revision=self.next_revision)

    @cached_property
    def argmax(self) -> torch.Tensor:  # (A, G) raw argmax at masked positions; -1 elsewhere
        return unpack(self.raw.argmax, self.masked, -1)

    @cached_property
    def logprobs(self) -> torch.Tensor:  # (A, G) raw log-probability of `tokens` (0 where not masked)
        ids = self.tokens[self.masked].clamp(min=0).view(-1, 1, 1)  # (M, 1, 1)
        return unpack(self.raw.logp.gather(-1, ids).squeeze(-1), self.masked)

    def candidates(self, n: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The top-`n` raw probabilities and ids at each position, `(A, G, n)` each."""
        top_p, top_i = self.raw.top  # (M, 1, N) each
        return unpack(top_p, self.masked)[..., :n], unpack(top_i, self.masked)[..., :n]


# ----- the step ----------------------------------------------------------------------------------
def denoise_step(
    logits: torch.Tensor,
    masked: torch.Tensor,
    params: StepParams,
    state: StepState,
    noise: torch.Tensor,
    *,
    top: int = 2,
    current: torch.Tensor | None = None,
    valid: torch.Tensor | None = None,
    seen: torch.Tensor | None = None,
    targets: RevisionTargets | None = None,
    coins: object | None = None,
) -> StepResult:
    """One step for every row. `logits (M, 1, V)` at the masked positions of `masked (A, G)`, packed
    row-major, in the model's dtype (float32 from here on; with `params.mask_token_id` the step takes
    the mask token out of the candidates, in place when the logits are float32 already, else the
    caller did), `noise (A, 2, G)`; `top` raw candidates kept per position.

    Rows with a revision rule also need `current (A, G)`, the tokens entering the step, `valid (A, G)`,
    the row's real positions (None: all), and, when their rule reads them, `seen (K, 1, V)`: the logits at
    `revision_targets(masked, valid, params, state).where`, packed row-major the same way (`targets`: that
    result, when the caller has it). `coins` (`core.revision.Coins`): the rows' own uniforms per position and
    token, for a rule that draws them (ReMDM's sampler)."""
    ref, dtype, rp = params.quirks, logits.dtype, params.revision  # ref: the reference quirks (core.references)
    where = targets.block if targets is not None and targets.block is not None else current_block(masked, params, state)
    block, blocks = where  # (A,) each row's current block, (A, G) each position's
    moved = block != state.block  # (A,) bool: a new block
    block_step = torch.where(moved, 0, state.block_step)  # (A,) a new block starts at 0
    keep = ref.keeps_mask(masked, lambda: block_step < params.block_size)  # a young reference row's mask stays
    logits = mask_out(logits, params.mask_token_id, keep, params.edit_token_ids)  # (1) float32, no mask, no edit token
    plan_in = None
    if rp is not None:  # the revision rules' inputs; their own adjustment of the logits (a penalty)
        plan_in = revision_inputs(logits, masked, rp, params.block_size, state.revision_state(masked.shape[1]),
                                  current, valid, seen, where, targets)
        logits = plan_in.logits
    x = pack(logits, masked, params, state, noise, dtype=dtype)
    raw = Distribution(x.logits, top=top)  # (1) the model's raw distribution at the masked positions
    drawn = global_draw(x, params.draw_all, with_prob="sampled" in params.sources) if params.any_draw_all else None
    raw_conf = x.unpack(score(raw, lambda: x.measure_id, lambda: x.noise[1].unsqueeze(1),  # (2) (A, G), noise if read
                              set(params.measures)))
    conf = confidence_for(raw_conf, x, params, drawn)  # (2') the source each row ranks by; raw by default
    one_block = rp is None and params.least_block >= masked.shape[1]  # no wider than a block, none held: block 0
    eligible = masked if one_block else masked & (blocks == block.unsqueeze(-1))  # (A, G) the current block's masks
    k = torch.where(moved & params.restart, params.top_k, state.k) if params.any_restart else state.k
    q = QuotaInputs(k=k, top_k=params.top_k, block_step=block_step, block_size=params.block_size,
                    steps_per_block=params.steps_per_block, eligible=eligible.sum(-1), knobs=params.knobs,
                    positions=Positions(eligible=eligible, conf=conf, wide=ref.wide(dtype),
                                        entropy_of=lambda: x.unpack(entropy_nats(raw))))
    count = quota(q, params.schedule_id, set(params.schedules))  # (3) how many, by each row's schedule
    plan = None
    if plan_in is not None:  # (3') the revision rules: what to take back or rewrite, and how many to confirm
        whole = Whole(masked=masked, block_size=params.block_size, steps_per_block=params.steps_per_block, x=x,
                      coins=coins, mask_token_id=params.mask_token_id)
        plan = revise(plan_in, rp, conf, eligible, count, block, state.block, block_step, noise[:, 1], whole)
        count = plan.count if plan.owns is None else torch.where(plan.owns, 0, plan.count)
    chosen = select_top(rank(conf, q, params.schedule_id, set(params.schedules)), eligible, count)  # (3) which
    selected = ref.pick(chosen, conf, eligible, count, dtype)  # (a reference row: its code's own torch.topk)
    tokens = draw_chosen(x, selected, drawn, raw.first_max if params.greedy else None)  # (4) (A, G), -1 elsewhere
    selected, tokens, count = ref.placed(selected, tokens, count, params.mask_token_id)  # a drawn mask places nothing
    # a rule that owns the step: its choice and tokens, not (3)'s and (4)'s
    if plan is not None and plan.owns is not None:
        own = plan.owns.unsqueeze(-1)
        selected = torch.where(own, plan.chosen, selected)
        tokens = torch.where(own, plan.chosen_tokens, tokens)
        count = torch.where(plan.owns, plan.chosen.sum(-1), count)
    selected, tokens, count, stopped = early_stop(raw, masked, block, params, selected, tokens, count)  # (4')
    next_revision = None
    if plan is not None:
        may_stop = params.any_early_stop and bool(params.end_of_text_ids)  # else `early_stop` stopped no row
        plan, next_revision = settle(plan, plan_in, selected, conf, stopped if may_stop else None, rp)
    later, after = next_k(k, params.knobs.decay, params.knobs.min_k), block_step + 1
    if plan is not None:  # a rule that pauses a row keeps its schedule where it was
        later, after = torch.where(plan.pause, k, later), torch.where(plan.pause, block_step, after)
    return StepResult(  # (5) is the caller's commit; (6) the record reads this
        confidence=conf, raw_confidence=raw_conf, selected=selected, tokens=tokens, count=count, block=block,
        next_k=later, next_block_step=after,
        temperature=state.temperature, masked=masked, raw=raw, stopped=stopped,
        revision=plan, next_revision=next_revision, greedy_logp=_greedy_logp(raw, params, plan, drawn),
    )


def _greedy_logp(raw: Distribution, params: StepParams, plan: Plan | None, drawn: Drawn | None) -> torch.Tensor | None:
    """`StepResult.greedy_logp`: `(M, 1, 1)` the top candidate's log-probability, when every token the step places
    is an argmax of the logits `raw` was made from (every row at temperature 0, no global draw, no revision plan;
    the early stop fills the raw argmax). The log-softmax is monotone, so a first maximum of the logits has the
    largest log-probability, which is the top candidate's whatever the ties: no gather of the drawn ids needed."""
    if not params.greedy or drawn is not None or plan is not None:
        return None
    return raw.top_logp[0][..., :1]


def mask_out(logits: torch.Tensor, mask_token_id: int | None, keep: torch.Tensor | None = None,
             edit_token_ids: tuple[int, ...] = ()) -> torch.Tensor:
    """`logits (M, 1, V)` as float32 (a copy only when they are not) with the mask token out of the candidates
    (-inf, set in place): a denoiser never "unmasks" a position into the mask (MDLM's zero-masking rule). Where
    `keep (M, 1)` holds it stays (a reference row whose code keeps it, `core.references.llada`). Unchanged when
    `mask_token_id` is None (the caller masked it). The `edit_token_ids` (DELETE and SPLIT of a model that
    edits lengths) leave the candidates everywhere: a rule whose positions stay cannot write them."""
    logits = logits if logits.dtype == torch.float32 else logits.float()
    if keep is None or mask_token_id is None:  # one fill of every id that leaves (no per-row exception)
        out = (*edit_token_ids, *(() if mask_token_id is None else (mask_token_id,)))
        return logits.index_fill_(-1, _ids(out, logits.device), float("-inf")) if out else logits
    if edit_token_ids:
        logits.index_fill_(-1, _ids(edit_token_ids, logits.device), float("-inf"))
    logits[..., mask_token_id] = torch.where(keep, logits[..., mask_token_id], float("-inf"))  # (M, 1)
    return logits


@lru_cache(maxsize=64)
def _ids(ids: tuple[int, ...], device: torch.device) -> torch.Tensor:
    """`ids` as a long tensor on `device`, made once (`mask_out` fills them every step)."""
    with torch.inference_mode(False):  # a plain tensor, whichever mode first asks for it
        return torch.tensor(ids, dtype=torch.long, device=device)


def revision_targets(masked: torch.Tensor, valid: torch.Tensor | None, params: StepParams,
                     state: StepState) -> RevisionTargets:
    """Where the step will need logits at decided positions (`seen`): the caller runs the forward there
    (joint_threshold, a model that can edit) or a verify pass with each of them hidden (wino)."""
    rp = params.revision
    A, G = masked.shape
    if rp is None or not rp.reads:
        none = torch.zeros(A, G, dtype=torch.bool, device=masked.device)
        return RevisionTargets(where=none, hidden=torch.zeros(0, dtype=torch.bool, device=masked.device))
    block, blocks = current_block(masked, params, state)
    return targets_of(decided_in(masked, valid, blocks, block), rp, (block, blocks))


def early_stop(raw: Distribution, masked: torch.Tensor, block: torch.Tensor, params: StepParams,
               selected: torch.Tensor, tokens: torch.Tensor, count: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """The end-of-text early stop (`DecodeConfig.early_stop`, see `core.end_of_text`).

    Rows whose every masked position of the current block predicts end-of-text with raw probability
    >= their threshold finish now: every masked position is selected and gets its raw argmax (the
    end-of-text token, in the current block). Returns `(selected, tokens, count, stopped (A,))`,
    unchanged when no row asks for it.
    """
    if not params.end_of_text_ids or not params.any_early_stop:
        return selected, tokens, count, no_stop(params)
    stopped = end_of_text_rows(raw, masked, block, params.block_size, end_ids=params.end_of_text_ids,
                               enabled=params.early_stop, threshold=params.early_stop_threshold)
    fill = unpack(raw.argmax, masked, -1)  # (A, G) what each masked position predicts
    return (*fill_end_of_text(stopped, masked, selected, tokens, count, fill_tokens=fill), stopped)


def no_stop(params: StepParams) -> torch.Tensor:
    """`(A,)` False: no row stops early, the rows' constant (made once, beside the frozen fields; never written)."""
    made = params.__dict__
    if "_no_stop" not in made:
        made["_no_stop"] = torch.zeros_like(params.early_stop)
    return made["_no_stop"]
