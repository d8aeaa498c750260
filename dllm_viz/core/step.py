"""One denoising step, shared by every caller: the playground's `DecodeBatch` and the SGLang plugin.

`denoise_step` is a pure function from what the model predicted at the still-masked positions,
the per-request parameters (`StepParams`), the schedule state (`StepState`) and each request's
uniforms to a typed `StepResult`. Its body reads as the article (sections 2.2, 7):
  (1) the model's distribution at the masked positions (the caller ran the forward and packed them);
  (2) confidence from the RAW distribution, or the source a request asked for (`confidence_for`);
  (3) the schedule picks positions of the current block by that confidence (`schedule_quota`);
  (3') a request with a revision rule (`core.revision`) may then take back decided tokens of the block
      or rewrite them, and the rule sets how many masks the step confirms (`revise`);
  (4) tokens are drawn only there (`draw_chosen`), from softmax(logits / T) after the vocabulary
      filters; the teaching switch `global_draw` draws at every masked position first;
  (5) the caller commits (`core.canvas.commit`: tokens where `selected`, rewrites, re-masks) and keeps
      the next schedule state;
  (6) the StepResult carries what the record needs.

Shapes: A requests (rows), G generated positions per row (right-padded), M masked positions over
all rows, packed row-major (the order of `masked.nonzero()` and of `masked_scatter`), V the
vocabulary. Randomness comes in as `noise (A, 2, G)`: row 0 the inverse-CDF uniform of each
position, row 1 the score of the ``random`` confidence, drawn by the caller from each request's own
generator, so a request's result never depends on its neighbours.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import cached_property
from typing import Callable, Sequence

import torch

from dllm_viz.core import revision as rev
from dllm_viz.core import sampling
from dllm_viz.core.config import CONFIDENCE_FROM, DecodeConfig
from dllm_viz.core.end_of_text import end_of_text_rows, fill_end_of_text
from dllm_viz.core.revision import Plan, RevisionParams, RevisionState
from dllm_viz.core.schedules import SCHEDULE_IDS, QuotaInputs, block_of, next_k, quota, select_top
from dllm_viz.core.scoring import CONFIDENCE_IDS, Distribution, SoftmaxDistribution, score

SOURCE_IDS = {name: i for i, name in enumerate(CONFIDENCE_FROM)}
# Sources computed exactly as the code they cite computes them (`_sampled_raw`): the softmax over the
# whole vocabulary (the mask token included, as a candidate too), in that code's dtype, and the
# positions picked by `torch.topk` over the canvas row as that code lays it out (its tie order).
# Rows with a revision rule follow that rule's own code instead (`core.revision`: WINO's reference).
REFERENCE_SOURCES = ("sampled_raw",)


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
    min_k: torch.Tensor  # (A,) long
    block_size: torch.Tensor  # (A,) long: positions per block (>= 1)
    steps_per_block: torch.Tensor  # (A,) long: fixed_steps / linear_time budget of one block (>= 1)
    restart: torch.Tensor  # (A,) bool: k restarts at top_k in each block
    decay: torch.Tensor  # (A,) float64: topk_decay factor
    threshold: torch.Tensor  # (A,) float64: threshold schedule (the config's float; compared in the confidence's dtype)
    threshold_strict: torch.Tensor  # (A,) bool: the threshold schedule confirms conf > threshold, not >=
    vocab_top_k: torch.Tensor  # (A,) long: 0 = off
    top_p: torch.Tensor  # (A,) float32: 1 = off
    early_stop: torch.Tensor  # (A,) bool: finish once the current block is all end-of-text
    early_stop_threshold: torch.Tensor  # (A,) float32: raw probability of end-of-text it needs
    schedules: frozenset[str]
    measures: frozenset[str]
    sources: frozenset[str]
    reference: torch.Tensor | None = None  # (A,) bool: source in REFERENCE_SOURCES and no revision rule
    prompt_length: torch.Tensor | None = None  # (A,) long: canvas columns before the generated span (0 if None)
    gen_length: torch.Tensor | None = None  # (A,) long: each row's own generated positions
    end_of_text_ids: tuple[int, ...] = ()  # the model's end-of-text ids; none: the early stop never fires
    # The model's mask token: the step takes it out of the candidates itself (a reference row keeps it,
    # see REFERENCE_SOURCES); None when the caller's logits have it at -inf already.
    mask_token_id: int | None = None
    any_early_stop: bool = False  # some row has early_stop (host-side, so the step skips it without a sync)
    any_draw_all: bool = False  # some row has sample_scope="all" (host-side, likewise)
    any_strict: bool = False  # some row has threshold_strict (host-side, likewise)
    any_reference: bool = False  # some row's source is in REFERENCE_SOURCES (host-side, likewise)
    revision: RevisionParams | None = None  # the rows' revision rules; None: no row revises

    @classmethod
    def from_configs(cls, configs: Sequence[DecodeConfig], *, device: torch.device | str = "cpu",
                     end_of_text_ids: tuple[int, ...] = (), mask_token_id: int | None = None,
                     prompt_lengths: Sequence[int] | None = None) -> StepParams:
        """The rows of `configs`, in order; `end_of_text_ids` are the model's (for the early stop),
        `mask_token_id` its mask token, `prompt_lengths` the canvas columns before each row's span."""
        def col(values: list, dtype: torch.dtype = torch.long) -> torch.Tensor:
            return torch.tensor(values, dtype=dtype, device=device)

        cs = list(configs)
        return cls(
            schedule_id=col([SCHEDULE_IDS[c.schedule] for c in cs]),
            measure_id=col([CONFIDENCE_IDS[c.confidence] for c in cs]),
            source_id=col([SOURCE_IDS[c.confidence_from] for c in cs]),
            draw_all=col([c.sample_scope == "all" for c in cs], torch.bool),
            top_k=col([c.initial_k for c in cs]),
            min_k=col([c.min_k for c in cs]),
            block_size=col([max(1, c.block_size) for c in cs]),
            steps_per_block=col([max(1, c.total_steps // c.num_blocks) for c in cs]),
            restart=col([c.block_schedule == "restart" for c in cs], torch.bool),
            decay=col([c.decay for c in cs], torch.float64),
            threshold=col([c.threshold for c in cs], torch.float64),
            threshold_strict=col([c.threshold_strict for c in cs], torch.bool),
            vocab_top_k=col([c.vocab_top_k or 0 for c in cs]),
            top_p=col([c.top_p if c.top_p is not None else 1.0 for c in cs], torch.float32),
            early_stop=col([c.early_stop for c in cs], torch.bool),
            early_stop_threshold=col([c.early_stop_threshold for c in cs], torch.float32),
            schedules=frozenset(c.schedule for c in cs),
            measures=frozenset(c.confidence for c in cs),
            sources=frozenset(c.confidence_from for c in cs),
            reference=col([_follows_reference(c) for c in cs], torch.bool),
            prompt_length=col(list(prompt_lengths) if prompt_lengths is not None else [0] * len(cs)),
            gen_length=col([c.gen_length for c in cs]),
            end_of_text_ids=tuple(end_of_text_ids),
            mask_token_id=mask_token_id,
            any_early_stop=any(c.early_stop for c in cs),
            any_draw_all=any(c.sample_scope == "all" for c in cs),
            any_strict=any(c.threshold_strict for c in cs),
            any_reference=any(_follows_reference(c) for c in cs),
            revision=RevisionParams.from_configs(cs, device=device) if any(c.revise != "none" for c in cs) else None,
        )


def _follows_reference(config: DecodeConfig) -> bool:
    return config.confidence_from in REFERENCE_SOURCES and config.revise == "none"


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
class Packed:
    """The masked positions of one step, packed row-major: M rows."""

    logits: torch.Tensor  # (M, 1, V) float32 raw logits; the mask token is -inf (but in young reference rows)
    masked: torch.Tensor  # (A, G) bool: where the packed rows come from
    rows: torch.Tensor  # (M,) long: request row of each packed position
    noise: torch.Tensor  # (2, M): [0] inverse-CDF uniform, [1] the `random` score
    temperature: torch.Tensor  # (M,) float32
    vocab_top_k: torch.Tensor  # (M,) long
    top_p: torch.Tensor  # (M,) float32
    measure_id: torch.Tensor  # (M,) long
    dtype: torch.dtype = torch.float32  # the dtype the model gave its logits in

    def unpack(self, values: torch.Tensor, fill: float = 0) -> torch.Tensor:
        """`values (M, 1, ...)` back to `(A, G, ...)`."""
        return unpack(values, self.masked, fill)

    def draw(self, where: torch.Tensor, *, with_prob: bool = True) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Tokens (and their sampling probability) at the packed positions where `where (M,)` holds."""
        return sampling.draw(self.logits[where, 0], self.noise[0][where], temperature=self.temperature[where],
                             vocab_top_k=self.vocab_top_k[where], top_p=self.top_p[where], with_prob=with_prob)


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

    @property
    def remaining(self) -> torch.Tensor:  # (A,) masks left after the step (re-masked ones included)
        left = (self.masked & ~self.selected).sum(-1)
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
) -> StepResult:
    """One step for every row. `logits (M, 1, V)` at the masked positions of `masked (A, G)`, packed
    row-major, in the model's dtype (float32 from here on; with `params.mask_token_id` the step takes
    the mask token out of the candidates, in place when the logits are float32 already, else the
    caller did), `noise (A, 2, G)`; `top` raw candidates kept per position.

    Rows with a revision rule also need `current (A, G)`, the tokens entering the step, `valid (A, G)`,
    the row's real positions (None: all), and, when their rule reads them, `seen (K, 1, V)`: the logits at
    `revision_targets(masked, valid, params, state).where`, packed row-major the same way (`targets`: that
    result, when the caller has it)."""
    plan_in = None
    where = targets.block if targets is not None else None  # (A,) and (A, G): each row's block, each position's
    if where is None:  # (the targets found them already, when the caller passed them)
        where = current_block(masked, params, state)
    dtype = logits.dtype
    logits = candidates(logits.float(), masked, params, state, where)  # (1) the mask token is no candidate
    if params.revision is not None:
        plan_in = _revision_inputs(logits, masked, params, state, current, valid, seen, where, targets)
        logits = plan_in.logits
    x = pack(logits, masked, params, state, noise, dtype=dtype)
    raw = Distribution(x.logits, top=top)  # (1) the model's raw distribution at the masked positions
    drawn = global_draw(x, params) if params.any_draw_all else None  # teaching switch: sample everywhere first
    raw_conf = x.unpack(score(raw, x.measure_id, x.noise[1].unsqueeze(1), set(params.measures)))  # (2) (A, G)
    conf = confidence_for(raw_conf, x, params, drawn)  # (2') the source each row ranks by; raw by default
    block, eligible, count, block_step, k = schedule_quota(conf, masked, params, state, where, dtype=dtype)  # (3)
    plan = None
    if plan_in is not None:  # (3') the revision rules: what to take back or rewrite, and how many to confirm
        plan = revise(plan_in, masked, conf, eligible, count, block, block_step, noise[:, 1], params, state)
        count = plan.count
    selected = select_top(conf, eligible, count)  # (A, G)
    if params.any_reference:  # LLaDA's and Fast-dLLM's own torch.topk call, ties included
        selected = reference_pick(conf, eligible, count, params, selected, dtype=dtype)
    tokens = draw_chosen(x, selected, params, drawn)  # (4) (A, G), -1 where not selected
    selected, tokens, count = unplaced_masks(selected, tokens, count, params)  # (4'') a drawn mask places nothing
    selected, tokens, count, stopped = early_stop(raw, masked, block, params, selected, tokens, count)  # (4')
    next_revision = None
    if plan is not None:
        plan, next_revision = _settle(plan, plan_in, selected, conf, stopped, params)
    pause = plan.pause if plan is not None else torch.zeros_like(stopped)
    return StepResult(  # (5) is the caller's commit; (6) the record reads this
        confidence=conf, raw_confidence=raw_conf, selected=selected, tokens=tokens, count=count, block=block,
        next_k=torch.where(pause, k, next_k(k, params.decay, params.min_k)),
        next_block_step=torch.where(pause, block_step, block_step + 1),
        temperature=state.temperature, masked=masked, raw=raw, stopped=stopped,
        revision=plan, next_revision=next_revision,
    )


def pack(logits: torch.Tensor, masked: torch.Tensor, params: StepParams, state: StepState,
         noise: torch.Tensor, *, dtype: torch.dtype = torch.float32) -> Packed:
    """Gather each masked position's row parameters and uniforms beside its logits (`dtype`: the model's)."""
    rows = masked.nonzero(as_tuple=True)[0]  # (M,)
    return Packed(
        logits=logits, masked=masked, rows=rows, noise=noise.permute(1, 0, 2)[:, masked],
        temperature=state.temperature[rows], vocab_top_k=params.vocab_top_k[rows], top_p=params.top_p[rows],
        measure_id=params.measure_id[rows], dtype=dtype,
    )


def candidates(logits: torch.Tensor, masked: torch.Tensor, params: StepParams, state: StepState,
               where: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    """`logits (M, 1, V)` float32 with the mask token out of the candidates (-inf, set in place): a
    denoiser never "unmasks" a position into the mask (MDLM's zero-masking rule).

    Except in reference rows (REFERENCE_SOURCES) for their block's first `block_size` steps: LLaDA's
    and Fast-dLLM's softmax and argmax run over the whole vocabulary, so the mask may be what a
    position predicts there; `unplaced_masks` then places nothing. After as many steps as the block
    has positions the best real token is drawn instead: LLaDA would have left the block with the
    mask in place, Fast-dLLM would loop on for ever; every request here ends with its positions filled.
    Unchanged when `params.mask_token_id` is None (the caller masked it).
    """
    if params.mask_token_id is None:
        return logits
    column = logits[..., params.mask_token_id]  # (M, 1)
    keep = torch.zeros_like(column, dtype=torch.bool)
    if params.any_reference:
        block, _ = where
        block_step = torch.where(block != state.block, 0, state.block_step)  # (A,)
        young = reference_rows(params) & (block_step < params.block_size)  # (A,)
        keep = young[masked.nonzero(as_tuple=True)[0]].view(-1, 1)  # (M, 1)
    logits[..., params.mask_token_id] = torch.where(keep, column, float("-inf"))
    return logits


def reference_rows(params: StepParams) -> torch.Tensor:
    """`(A,)` bool: rows whose confidence source is computed as the code it cites (REFERENCE_SOURCES)."""
    if params.reference is None:
        return torch.zeros_like(params.source_id, dtype=torch.bool)
    return params.reference


def reference_dtype(params: StepParams, logits_dtype: torch.dtype) -> torch.Tensor:
    """`(A,)` bool: rows whose reference computes in float64 (else in the logits' dtype).

    LLaDA's `generate.py` (ML-GSAI/LLaDA at b7e6c35) takes `F.softmax(logits, dim=-1)` in the
    logits' own dtype (float64 was removed in f51cb17) and ranks by it; Fast-dLLM's
    `get_transfer_index` (NVlabs/Fast-dLLM, llada/generate.py) takes it in float64 and compares
    that with the Python float threshold. The threshold schedule is Fast-dLLM's rule, the others LLaDA's.
    """
    return (params.schedule_id == SCHEDULE_IDS["threshold"]) | (logits_dtype == torch.float64)


def unplaced_masks(selected: torch.Tensor, tokens: torch.Tensor, count: torch.Tensor,
                   params: StepParams) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Where a reference row drew the mask token at a chosen position, nothing is placed.

    LLaDA's `x[transfer_index] = x0[transfer_index]` writes the mask back: the position was one of
    the step's picks (its quota is spent) but stays masked. Returns `(selected, tokens, count)` with
    such positions unselected; unchanged when no row can draw the mask.
    """
    if params.mask_token_id is None or not params.any_reference:
        return selected, tokens, count
    wasted = selected & (tokens == params.mask_token_id)  # (A, G)
    return selected & ~wasted, tokens.masked_fill(wasted, -1), count - wasted.sum(-1)


def reference_pick(conf: torch.Tensor, eligible: torch.Tensor, count: torch.Tensor, params: StepParams,
                   selected: torch.Tensor, *, dtype: torch.dtype) -> torch.Tensor:
    """`selected (A, G)` with each reference row's pick redone as its code does it, ties included.

    Both codes rank one canvas row, `prompt + generated` columns, with -inf wherever a position is
    not eligible, by `torch.topk`, whose order among equal values is its own: LLaDA's `generate`
    takes `topk(confidence, k=quota)`; Fast-dLLM's `get_transfer_index` takes `topk` over every
    masked position and keeps the first plus those at or above the threshold (the first `count`
    of that order, `count` counted by `schedule_quota` in the same float64). The row is laid out
    here the same way (`params.prompt_length` columns of -inf, then the row's own `gen_length`), in
    the dtype the code ranks in (`reference_dtype`), so the same call breaks ties the same way.
    """
    rows = reference_rows(params)
    wide = reference_dtype(params, dtype)
    threshold = params.schedule_id == SCHEDULE_IDS["threshold"]
    P = params.prompt_length if params.prompt_length is not None else torch.zeros_like(count)
    G = params.gen_length if params.gen_length is not None else torch.full_like(count, conf.shape[1])
    out = selected.clone()
    for r in rows.nonzero().flatten().tolist():
        p, g, n = int(P[r]), int(G[r]), int(count[r])
        row = torch.full((p + g,), float("-inf"), dtype=torch.float64, device=conf.device)
        row[p:] = conf[r, :g].double().masked_fill(~eligible[r, :g], float("-inf"))
        k = int(eligible[r].sum()) if bool(threshold[r]) else n
        picks = torch.topk(row.to(torch.float64 if bool(wide[r]) else dtype), k).indices[:n] - p  # (n,)
        out[r] = False
        out[r, picks] = True
    return out


@dataclass(frozen=True)
class Drawn:
    """Tokens drawn at every masked position of the `draw_all` rows (the global-sampling switch)."""

    where: torch.Tensor  # (A, G) bool: positions drawn
    tokens: torch.Tensor  # (A, G) long; -1 elsewhere
    prob: torch.Tensor  # (A, G) probability of each under the tempered, filtered distribution; 0 elsewhere


def global_draw(x: Packed, params: StepParams) -> Drawn:
    """Sample at every masked position of the rows with `sample_scope="all"`, before scheduling.

    The article's "global sampling" (2.1, 2.3): wasted work, and with a confidence taken from the
    sampled token, a low-probability draw gets locked in. Each position uses its own uniform, so
    the tokens at the positions finally chosen equal those `draw_chosen` would give.
    """
    A, G = x.masked.shape
    where = x.masked & params.draw_all.unsqueeze(-1)  # (A, G)
    tok, prob = x.draw(where[x.masked])
    tokens = torch.full((A, G), -1, dtype=torch.long, device=where.device).masked_scatter(where, tok)
    return Drawn(where=where, tokens=tokens, prob=torch.zeros(A, G, device=where.device).masked_scatter(where, prob))


# ----- confidence sources ------------------------------------------------------------------------
def _tempered(raw_conf: torch.Tensor, x: Packed, params: StepParams, drawn: Drawn | None) -> torch.Tensor:
    """The same measure on softmax(logits / T): the article's "polluted confidence" (2.2, 5.1)."""
    tempered = Distribution(x.logits / x.temperature.clamp(min=1e-4).view(-1, 1, 1), top=2)
    return x.unpack(score(tempered, x.measure_id, x.noise[1].unsqueeze(1), set(params.measures)))


def _sampled(raw_conf: torch.Tensor, x: Packed, params: StepParams, drawn: Drawn | None) -> torch.Tensor:
    """The probability of the drawn token under the tempered, filtered sampling distribution
    (Dream's ``maskgit_plus``); at T = 0 the filtered, untempered one, whose argmax was drawn."""
    assert drawn is not None  # the config validator ties this source to sample_scope="all"
    return drawn.prob


def _sampled_raw(raw_conf: torch.Tensor, x: Packed, params: StepParams, drawn: Drawn | None) -> torch.Tensor:
    """The RAW probability of the drawn token (LLaDA's ``low_confidence``, Fast-dLLM's threshold),
    computed as the cited code computes it: softmax over the whole vocabulary, the mask token
    included, in that code's dtype (`reference_dtype`), gathered at the drawn token. Float64 out
    (exact for every dtype), so the threshold compares it exactly and the ranking sees its ties.
    Rows with a revision rule (WINO) keep their rule's reference: float64, rounded to float32.
    """
    assert drawn is not None  # the config validator ties this source to sample_scope="all"
    ids = drawn.tokens[x.masked].clamp(min=0).view(-1, 1, 1)  # (M, 1, 1)
    logits = x.logits.double()  # (M, 1, V): a revision rule's rows (WINO): float64, rounded to float32
    logp = logits.gather(-1, ids).squeeze(-1) - torch.logsumexp(logits, dim=-1)  # (M, 1)
    out = logp.exp().float().double()  # (M, 1)
    if params.any_reference:  # the rows computed as LLaDA's or Fast-dLLM's code does
        ref = reference_rows(params)[x.rows]  # (M,)
        wide = reference_dtype(params, x.dtype)[x.rows]  # (M,) True: float64, False: the logits' dtype
        for dtype, where in ((torch.float64, ref & wide), (x.dtype, ref & ~wide)):
            if bool(where.any()):
                p = torch.softmax(x.logits[where].to(dtype), dim=-1).gather(-1, ids[where])  # (m, 1, 1)
                out[where] = p.squeeze(-1).double()
    return x.unpack(out)


def _filtered(raw_conf: torch.Tensor, x: Packed, params: StepParams, drawn: Drawn | None) -> torch.Tensor:
    """The measure on the tempered, top-k/top-p-filtered distribution (Dream's ``topk_margin``,
    ``entropy``; with max_prob, Dream's ``maskgit_plus`` at T = 0)."""
    processed = sampling.process(x.logits[:, 0], x.temperature, x.vocab_top_k, x.top_p)  # (M, V)
    dist = Distribution(processed.unsqueeze(1), top=2)
    return x.unpack(score(dist, x.measure_id, x.noise[1].unsqueeze(1), set(params.measures)))


def _softmax(raw_conf: torch.Tensor, x: Packed, params: StepParams, drawn: Drawn | None) -> torch.Tensor:
    """The measure on torch.softmax(logits): the raw distribution with SGLang's float ops (LowConfidence
    and JointThreshold gather softmax(logits) at the argmax), so that a threshold decides as SGLang's."""
    dist = SoftmaxDistribution(x.logits, top=2)
    return x.unpack(score(dist, x.measure_id, x.noise[1].unsqueeze(1), set(params.measures)))


Source = Callable[[torch.Tensor, Packed, StepParams, "Drawn | None"], torch.Tensor]
SOURCES: dict[str, Source] = {"raw": lambda raw_conf, x, params, drawn: raw_conf, "tempered": _tempered,
                              "sampled": _sampled, "sampled_raw": _sampled_raw, "filtered": _filtered,
                              "softmax": _softmax}
if tuple(SOURCES) != CONFIDENCE_FROM:
    raise ImportError(f"confidence source registry {tuple(SOURCES)} != config.CONFIDENCE_FROM {CONFIDENCE_FROM}")


def confidence_for(raw_conf: torch.Tensor, x: Packed, params: StepParams, drawn: Drawn | None) -> torch.Tensor:
    """The confidence each row's schedule ranks by, `(A, G)`: `raw_conf` unless its source says otherwise."""
    conf = raw_conf
    for name in params.sources - {"raw"}:
        rows = (params.source_id == SOURCE_IDS[name]).unsqueeze(-1)  # (A, 1)
        conf = torch.where(rows, SOURCES[name](raw_conf, x, params, drawn), conf)
    return conf


# ----- schedule and draw -------------------------------------------------------------------------
def current_block(masked: torch.Tensor, params: StepParams, state: StepState) -> tuple[torch.Tensor, torch.Tensor]:
    """Each row's current block `(A,)` and every position's block `(A, G)`.

    The current block is the first one that still holds a mask, unless a revision rule holds the
    previous step's block open (joint_threshold's edit-only steps).
    """
    G = masked.shape[1]
    blocks = block_of(torch.arange(G, device=masked.device), params.block_size)  # (A, G)
    block = torch.where(masked, blocks, G).min(-1).values  # (A,)
    if state.revision is not None and params.revision is not None and params.revision.rules & rev.HOLDS:
        block = torch.where(state.revision.hold, state.block, block)
    return block, blocks


def schedule_quota(conf: torch.Tensor, masked: torch.Tensor, params: StepParams, state: StepState,
                   where: tuple[torch.Tensor, torch.Tensor] | None = None, *,
                   dtype: torch.dtype = torch.float32) -> tuple[torch.Tensor, ...]:
    """The schedule's quota in each row's current block: `(block, eligible (A, G), count, block_step, k)`.

    Entering a new block resets the block's step count (and k, when the request restarts it per block).
    `where` is `current_block(masked, params, state)` when the caller has it. The threshold is
    compared as `torch` compares a tensor with a Python float: in the confidence's dtype, float32
    (so float32(0.9)), but float64 for the reference rows that rank in float64 (Fast-dLLM: there
    0.89999998 is below 0.9); `dtype` is the logits' (`reference_dtype`).
    """
    block, blocks = where if where is not None else current_block(masked, params, state)
    eligible = masked & (blocks == block.unsqueeze(-1))  # (A, G)
    new_block = block != state.block
    block_step = torch.where(new_block, 0, state.block_step)
    k = torch.where(new_block & params.restart, params.top_k, state.k)
    c, threshold = conf.float(), params.threshold.float().unsqueeze(-1)  # (A, G), (A, 1)
    if params.any_reference:
        wide = (reference_rows(params) & reference_dtype(params, dtype)).unsqueeze(-1)  # (A, 1)
        c = torch.where(wide, conf.double(), c.double())
        threshold = torch.where(wide, params.threshold.unsqueeze(-1), threshold.double())
    above = c >= threshold
    if params.any_strict:
        above = torch.where(params.threshold_strict.unsqueeze(-1), c > threshold, above)
    q = QuotaInputs(
        k=k, top_k=params.top_k, min_k=params.min_k, block_step=block_step, block_size=params.block_size,
        steps_per_block=params.steps_per_block, eligible=eligible.sum(-1), above=(eligible & above).sum(-1),
    )
    count = quota(q, params.schedule_id, set(params.schedules))  # (A,)
    return block, eligible, count, block_step, k


# ----- the revision phase ------------------------------------------------------------------------
@dataclass(frozen=True)
class RevisionTargets:
    """Where the rows' revision rules read logits at decided positions, and from which pass."""

    where: torch.Tensor  # (A, G) bool: decided positions of the current block of the rows that read
    hidden: torch.Tensor  # (K,) bool: the position reads a verify pass (itself hidden), else the step's forward
    count: int = 0  # K
    hidden_count: int = 0  # positions read by a verify pass
    hidden_where: torch.Tensor | None = None  # (A, G) bool: those positions (None when there are none)
    # What the targets were found from, for the step to reuse: each row's block and each position's
    # (`current_block`), and the decided positions of each row's current block (`_decided`).
    block: tuple[torch.Tensor, torch.Tensor] | None = None
    decided: torch.Tensor | None = None

    @property
    def any(self) -> bool:
        return self.count > 0


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
    return _targets(_decided(masked, valid, blocks, block), params, (block, blocks))


def _targets(decided: torch.Tensor, params: StepParams,
             block: tuple[torch.Tensor, torch.Tensor] | None = None) -> RevisionTargets:
    rp = params.revision
    assert rp is not None
    if not rp.reads:
        return RevisionTargets(where=torch.zeros_like(decided), hidden=decided.new_zeros(0), block=block,
                               decided=decided)
    if rp.single is not None:  # one rule in every row, and it reads: every decided position, from one pass
        count = int(decided.sum())
        hidden = rp.single in rev.READS_HIDDEN
        return RevisionTargets(where=decided, hidden=torch.full((count,), hidden, device=decided.device),
                               count=count, hidden_count=count if hidden else 0,
                               hidden_where=decided if hidden and count else None, block=block, decided=decided)
    reads_hidden = rp.reading(rev.READS_HIDDEN)  # (A,)
    where = decided & (rp.reading(rev.READS_FORWARD) | reads_hidden).unsqueeze(-1)
    rows = where.nonzero(as_tuple=True)[0]
    hidden = reads_hidden[rows]
    n_hidden = int(hidden.sum()) if rp.rules & rev.READS_HIDDEN else 0
    return RevisionTargets(where=where, hidden=hidden, count=int(rows.shape[0]), hidden_count=n_hidden,
                           hidden_where=where & reads_hidden.unsqueeze(-1) if n_hidden else None, block=block,
                           decided=decided)


def _decided(masked: torch.Tensor, valid: torch.Tensor | None, blocks: torch.Tensor, block: torch.Tensor) -> torch.Tensor:
    """`(A, G)` bool: the visible real positions of each row's current block."""
    decided = ~masked & (blocks == block.unsqueeze(-1))
    return decided if valid is None else decided & valid


@dataclass(frozen=True)
class _RevisionInputs:
    logits: torch.Tensor  # (M, 1, V) the step's logits at the masked positions (penalised where asked)
    current: torch.Tensor  # (A, G) long
    valid: torch.Tensor | None  # (A, G) bool
    seen: rev.Seen | None
    state: RevisionState  # the carried state (counters not yet reset for a new block)
    decided: torch.Tensor  # (A, G) bool: the visible real positions of each row's current block


def _revision_inputs(logits: torch.Tensor, masked: torch.Tensor, params: StepParams, state: StepState,
                     current: torch.Tensor | None, valid: torch.Tensor | None, seen: torch.Tensor | None,
                     where: tuple[torch.Tensor, torch.Tensor], targets: RevisionTargets | None) -> _RevisionInputs:
    """Check what the revision rules need and apply JointThreshold's penalty to both sets of logits."""
    rp = params.revision
    assert rp is not None
    if current is None:
        raise ValueError("current=None is invalid: a step with a revision rule needs the tokens entering it")
    reads = rp.reads
    if reads and targets is not None and targets.decided is not None:
        decided = targets.decided
    else:
        decided = _decided(masked, valid, where[1], where[0])
    if reads and targets is None:
        targets = _targets(decided, params)
    targets = targets if reads else None
    K = targets.count if targets is not None else 0
    if K and (seen is None or seen.shape[0] != K):
        got = None if seen is None else tuple(seen.shape)
        raise ValueError(f"seen with shape {got} is invalid: expected the logits at the {K} decided positions "
                         "that the rows' revision rules read (revision_targets)")
    if rp.any_penalty:
        prev = rev.previous_tokens(current, params.block_size)
        logits = rev.penalize(logits, masked, prev, rp.penalty)
        if K:
            seen = rev.penalize(seen, targets.where, prev, rp.penalty)
    read = None
    if K:
        read = rev.Seen.from_logits(seen, targets.where, current, targets.hidden,  # type: ignore[union-attr]
                                    n_verify=targets.hidden_count)  # type: ignore[union-attr]
    return _RevisionInputs(logits=logits, current=current, valid=valid, seen=read,
                           state=state.revision_state(masked.shape[1]), decided=decided)


def revise(inputs: _RevisionInputs, masked: torch.Tensor, conf: torch.Tensor, eligible: torch.Tensor,
           count: torch.Tensor, block: torch.Tensor, block_step: torch.Tensor, uniform: torch.Tensor,
           params: StepParams, state: StepState) -> Plan:
    """(3') Each revising row's plan: what its rule takes back or rewrites in the current block, and
    how many masks the step confirms (`core.revision`). `uniform (A, G)` is the step's second uniform."""
    rp = params.revision
    assert rp is not None
    st = inputs.state
    if rp.rules & rev.COUNTS:  # a counter that restarts with each block (wino's restarts by block_step == 0)
        st = RevisionState(counter=torch.where(block != state.block, 0, st.counter), hold=st.hold,
                           decided_conf=st.decided_conf)
    seen = inputs.seen
    if seen is None and rp.reads:  # none of those rows has a decided token
        seen = rev.Seen(where=torch.zeros_like(inputs.decided))
    ctx = rev.Context(decided=inputs.decided, eligible=eligible, conf=conf, quota=count,
                      current=inputs.current, uniform=uniform, block_step=block_step,
                      may_remask=rev.guard(block_step, rp.bound), params=rp, state=st, seen=seen)
    return rev.plan(ctx)


def _settle(plan: Plan, inputs: _RevisionInputs, selected: torch.Tensor, conf: torch.Tensor,
            stopped: torch.Tensor, params: StepParams) -> tuple[Plan, RevisionState]:
    """The plan as it stands after the draw and the early stop, and the state carried to the next step.

    A row the early stop finished takes nothing back and holds no block open; each position keeps the
    confidence it was decided with (the schedule's for a confirmation, p(new id) for a rewrite, 0 once
    taken back), while some row's rule reads it (`RevisionParams.keeps_conf`).
    """
    rp = params.revision
    assert rp is not None
    if params.any_early_stop and params.end_of_text_ids:  # else `early_stop` stopped no row
        plan = dataclasses.replace(plan, hold=plan.hold & ~stopped, remasked=plan.remasked & ~stopped.unsqueeze(-1))
    dc = inputs.state.decided_conf
    if rp.keeps_conf:
        dc = torch.where(selected, conf.float(), dc)
        if plan.rewrites:
            dc = torch.where(plan.edited, plan.edit_prob, dc)
        dc = dc.masked_fill(plan.remasked, 0.0)
    return plan, RevisionState(counter=plan.counter, hold=plan.hold, decided_conf=dc)


def draw_chosen(x: Packed, selected: torch.Tensor, params: StepParams, drawn: Drawn | None) -> torch.Tensor:
    """Tokens at the selected positions, `(A, G)` (-1 elsewhere): drawn there, or taken from `drawn`."""
    A, G = selected.shape
    tokens = torch.full((A, G), -1, dtype=torch.long, device=selected.device)
    here = selected
    if drawn is not None:
        here = selected & ~drawn.where
        tokens = torch.where(selected & drawn.where, drawn.tokens, tokens)
    tok, _ = x.draw(here[x.masked], with_prob=False)
    return tokens.masked_scatter(here, tok)


def early_stop(raw: Distribution, masked: torch.Tensor, block: torch.Tensor, params: StepParams,
               selected: torch.Tensor, tokens: torch.Tensor, count: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """The end-of-text early stop (`DecodeConfig.early_stop`, see `core.end_of_text`).

    Rows whose every masked position of the current block predicts end-of-text with raw probability
    >= their threshold finish now: every masked position is selected and gets its raw argmax (the
    end-of-text token, in the current block). Returns `(selected, tokens, count, stopped (A,))`,
    unchanged when no row asks for it.
    """
    stopped = torch.zeros_like(params.early_stop)
    if not params.end_of_text_ids or not params.any_early_stop:
        return selected, tokens, count, stopped
    stopped = end_of_text_rows(raw, masked, block, params.block_size, end_ids=params.end_of_text_ids,
                               enabled=params.early_stop, threshold=params.early_stop_threshold)
    fill = unpack(raw.argmax, masked, -1)  # (A, G) what each masked position predicts
    return (*fill_end_of_text(stopped, masked, selected, tokens, count, fill_tokens=fill), stopped)


def unpack(packed: torch.Tensor, where: torch.Tensor, fill: float = 0) -> torch.Tensor:
    """Scatter `packed (M, 1, ...)` back to `(A, G, ...)` at the True entries of `where (A, G)`.

    Row-major, the order `where.nonzero()` packed them in; `fill` elsewhere.
    """
    A, G = where.shape
    tail = packed.shape[2:]
    out = torch.full((A, G, *tail), fill, dtype=packed.dtype, device=packed.device)
    return out.masked_scatter(where.view(A, G, *[1] * len(tail)).expand(A, G, *tail), packed)
