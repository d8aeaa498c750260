"""The canvas around the step: what `denoise_step` reads from each request's canvas row, and what it
writes back. The one copy of the glue, called by both callers of the step:
`core.batch.DecodeBatch` (the playground, `decode`, the engine) and `serve.blocks.advance_blocks`
(the SGLang plugin's blocks).

A caller holds one canvas row per request, `(A, N + 1)`: the request's ids, then one scratch column
past its longest row (`N`), which receives what a row does not have. A request generates a span of
its row: `length` positions from `start` (the prompt's end in the playground, the first masked
position of a block in SGLang). Per step, in the order of the article's loop (sections 2.2, 7):

  `Spans.read`        the span's current ids, `(A, G)` (G = the longest span; the scratch column
                      pads the shorter ones);
  `step_logits`       the model's logits at the masked positions as it gave them (its dtype, the
                      mask id's own logit): the step takes the mask out of the candidates itself
                      (`step.candidates`), but where a reference sampler's rule keeps it;
  `candidate_logits`  logits a revision rule reads at decided positions: float32, the mask id at -inf;
  `draw_noise`        `(A, 2, G)` uniforms, `(2, length)` from each request's own generator;
  `step_temperature`  `(A,)` temperature of the step: constant, or each request's staged value;
  `RowSet`            the rows' `StepParams` (and their spans), built once per set of rows;
  `commit`            the span after the step, from the `StepResult` (and the confirmation order);
  `Spans.write`       the span written back into the canvas rows.

End-of-text ids follow one rule for both (`core.end_of_text.end_of_text_ids`): the decoder reads
them off the model, the plugin off its policy, which carries the model's (`Policy.for_model`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Generic, Sequence, TypeVar

import torch
import torch.nn.functional as F

from dllm_viz.core.config import DecodeConfig
from dllm_viz.core.schedules import temperature_at
from dllm_viz.core.step import StepParams, StepResult

T = TypeVar("T")


@dataclass(frozen=True)
class Spans:
    """Where each row's generated span lies in its canvas row `(A, N + 1)`."""

    pos: torch.Tensor  # (A, G) long: canvas column of each span position; N (the scratch column) past its end
    valid: torch.Tensor  # (A, G) bool: g < the row's span length
    full: bool = False  # every row's span is G long (`valid` is True throughout)

    @classmethod
    def at(cls, start: torch.Tensor, length: torch.Tensor, scratch: int) -> Spans:
        """Spans of `length (A,)` positions from column `start (A,)`; `scratch` is the column N."""
        G = int(length.max()) if length.numel() else 0
        g = torch.arange(G, device=start.device)  # (G,)
        valid = g < length.unsqueeze(-1)  # (A, G)
        return cls(pos=torch.where(valid, start.unsqueeze(-1) + g, scratch), valid=valid,
                   full=bool((length == G).all()))

    def masked(self, span: torch.Tensor, mask_id: int) -> torch.Tensor:
        """`(A, G)` bool: where `span (A, G)` (`read`) holds the mask, within each row's span."""
        return span == mask_id if self.full else (span == mask_id) & self.valid

    @property
    def width(self) -> int:
        """G: the longest span."""
        return self.pos.shape[1]

    def read(self, rows: torch.Tensor) -> torch.Tensor:
        """`rows (A, N + 1)` at the span positions: `(A, G)` (the scratch column past a span's end)."""
        return rows.gather(1, self.pos)

    def write(self, rows: torch.Tensor, span: torch.Tensor) -> torch.Tensor:
        """`rows (A, N + 1)` with `span (A, G)` written at the span positions (a new tensor).

        Past a span's end the writes land in the scratch column, which nothing reads.
        """
        return rows.scatter(1, self.pos, span.to(rows.dtype))

    def write_(self, rows: torch.Tensor, span: torch.Tensor) -> None:
        """`write` into `rows (A, N + 1)` themselves (a view of the caller's buffer), `span (A, G)` of their dtype."""
        rows.scatter_(1, self.pos, span)


def step_logits(logits: torch.Tensor) -> torch.Tensor:
    """The step's input from the model's `logits (M, V)` at the masked positions: `(M, 1, V)`, as the
    model gave them. `denoise_step` makes them float32 and sets the mask id to -inf (in place when
    they are float32 already: pass the caller's own fresh tensor), except in the rows of a sampler
    whose code keeps the mask in its softmax (`step.REFERENCE_SOURCES`), and it reads their dtype."""
    return logits.unsqueeze(1)


def candidate_logits(logits: torch.Tensor, mask_id: int, edit_ids: tuple[int, ...] = ()) -> torch.Tensor:
    """The step's input from the model's `logits (M, V)` at the masked positions: `(M, 1, V)` float32,
    the mask id at -inf: a denoiser never "unmasks" a position into the mask (MDLM's zero-masking rule).

    `logits` must be the caller's own fresh tensor (a gather, a model's output): when it is float32
    already it is edited in place rather than copied (it is M x V floats, tens of MB on a full batch).
    A model's edit tokens `edit_ids` (DELETE, SPLIT) go too: a rewrite in place never writes them.
    """
    out = logits.float().unsqueeze(1)  # (M, 1, V)
    out[..., mask_id] = float("-inf")
    if edit_ids:
        out[..., list(edit_ids)] = float("-inf")
    return out


def reads_uniforms(config: DecodeConfig) -> bool:
    """Whether a request's steps read the uniforms `draw_noise` draws: a draw at temperature > 0 (now or at a
    later stage), the ``random`` confidence, a revision or insert/delete rule, or the shared stream (whose order
    its neighbours read too). A request that reads none draws none (its generator is left as it was, whatever
    its neighbours are): its tokens, at temperature 0 and ranked by a measure of the logits, are the same."""
    return (config.temperature > 0 or config.temperature_stages is not None or config.confidence == "random"
            or config.revise != "none" or config.indel != "none" or config.rng == "shared")


def draw_noise(generators: Sequence[torch.Generator | None], lengths: Sequence[int],
               device: torch.device | str = "cpu") -> torch.Tensor:
    """`(A, 2, G)` uniforms: row a draws `torch.rand(2, lengths[a])` from `generators[a]`, zero-padded; a row
    whose rule draws its own coins instead (`Coins`), or that reads no uniform (`reads_uniforms`), has None there
    and gets zeros, drawing nothing.

    Row 0 of each is the inverse-CDF uniform of each position, row 1 the score of the ``random``
    confidence. A request draws the same amount every step whatever it selects and whatever its
    neighbours are, so its stream, and so its trace, is its own (the article's per-request
    generator, section 5.4). Drawn on the CPU: a seed means the same tokens on every device.
    """
    G = max(lengths, default=0)
    if all(gen is None for gen in generators):  # no row draws (every row greedy, say): zeros at once
        return torch.zeros(len(lengths), 2, G, device=device)
    if len(lengths) == 1 and lengths[0] == G and generators[0] is not None:  # one row: drawn in its shape, no stack
        out = torch.rand(1, 2, G, generator=generators[0])  # (the same uniforms as `rand(2, G)`, in the same order)
        return out if out.device == torch.device(device) else out.to(device, non_blocking=True)
    rows = [(torch.rand(2, n, generator=gen) if n == G else F.pad(torch.rand(2, n, generator=gen), (0, G - n)))
            if gen is not None else torch.zeros(2, G) for gen, n in zip(generators, lengths)]
    if not rows:
        return torch.zeros(0, 2, 0, device=device)
    out = rows[0].unsqueeze(0) if len(rows) == 1 else torch.stack(rows)
    return out if out.device == torch.device(device) else out.to(device, non_blocking=True)


class Coins:
    """The uniforms a rule draws itself, per position and token (ReMDM's sampler, `core.rules.remdm_shipped`):
    row a's from its own generator, in the order asked, float64 on the CPU (a seed means the same coins on
    every device; `torch.rand` on a CPU generator gives the same values in row chunks as at once, so a rule
    asks for a few positions at a time and never holds a step's (positions, V) at once)."""

    def __init__(self, generators: Sequence[torch.Generator | None]) -> None:
        self.generators = list(generators)

    def draw(self, row: int, n: int, vocab: int) -> torch.Tensor:
        """`(n, vocab)` float64: the next uniforms of row `row`'s stream."""
        gen = self.generators[row]
        if gen is None:
            raise ValueError(f"row={row} is invalid: its rule draws no coins of its own")
        return torch.rand((n, vocab), dtype=torch.float64, generator=gen)


def constant_temperature(configs: Sequence[DecodeConfig], device: torch.device | str = "cpu") -> torch.Tensor | None:
    """`(A,)` temperatures when no row stages its temperature (then every step reuses them), else None."""
    if any(c.temperature_stages is not None for c in configs):
        return None
    return torch.tensor([c.temperature for c in configs], dtype=torch.float32, device=device)


def step_temperature(configs: Sequence[DecodeConfig], steps: Sequence[int], left: Sequence[int],
                     device: torch.device | str = "cpu") -> torch.Tensor:
    """`(A,)` temperature of this step: `temperature_at(config, step, confirmed fraction)` per row.

    `steps` are the steps each row has taken (of its generation, or of its block in SGLang), `left`
    its masks entering the step; the confirmed fraction is `1 - left / gen_length`.
    """
    return torch.tensor(
        [temperature_at(c, s, 1 - n / max(1, c.gen_length)) for c, s, n in zip(configs, steps, left)],
        dtype=torch.float32, device=device,
    )


@dataclass(frozen=True)
class RowSet:
    """What stays fixed while the same requests step together: their parameters and spans."""

    spans: Spans
    params: StepParams  # (A,) rows, in row order
    temperature: torch.Tensor | None  # (A,) when no row stages its temperature, else None (per step)

    @classmethod
    def build(cls, configs: Sequence[DecodeConfig], spans: Spans, *, end_of_text_ids: tuple[int, ...],
              device: torch.device | str, mask_id: int | None = None,
              prompt_lengths: Sequence[int] | None = None, edit_ids: tuple[int, ...] = ()) -> RowSet:
        """`mask_id`: the step takes it out of the candidates (`step_logits`); `prompt_lengths`: the
        text before each span (a reference sampler ranks the whole canvas row, `step.reference_pick`)."""
        params = StepParams.from_configs(configs, device=device, end_of_text_ids=end_of_text_ids,
                                         mask_token_id=mask_id, prompt_lengths=prompt_lengths,
                                         edit_token_ids=edit_ids)
        return cls(spans=spans, params=params, temperature=constant_temperature(configs, device))

    def temperature_at(self, configs: Sequence[DecodeConfig], steps: Sequence[int],
                       left: Callable[[], Sequence[int]]) -> torch.Tensor:
        """`(A,)` this step's temperature: the constant one, or the staged values (`step_temperature`;
        `left()`, the masks each row has left, is asked only then)."""
        if self.temperature is not None:
            return self.temperature
        return step_temperature(configs, steps, left(), self.params.top_k.device)


class PerRows(Generic[T]):
    """One value (a `RowSet`) per set of rows, rebuilt only when the set changes.

    The set is the tuple of per-request objects in row order (a `Slot`, a `BlockState`), compared
    by identity: a new request, a finished one or a new block makes a new set. The objects are
    held, so their identities cannot be reused while the value is cached.
    """

    def __init__(self) -> None:
        self._members: tuple[object, ...] | None = None
        self._value: T | None = None
        self.builds = 0  # how often a value was built (tests check that steady steps reuse it)

    def get(self, members: Sequence[object], build: Callable[[], T]) -> T:
        members = tuple(members)
        old = self._members
        if old is None or len(old) != len(members) or any(a is not b for a, b in zip(old, members)):
            self._value, self._members = build(), members
            self.builds += 1
        return self._value  # type: ignore[return-value]

    def clear(self) -> None:
        self._members, self._value = None, None


@dataclass(frozen=True)
class Committed:
    """A span after one step."""

    # (A, G) ids: the step's tokens where it decided, the mask id where it took back, the old ids elsewhere
    span: torch.Tensor
    order: torch.Tensor | None  # (A, G) long: the step each position was last decided at (-1: masked)


def commit(result: StepResult, span: torch.Tensor, *, order: torch.Tensor | None = None,
           step: torch.Tensor | int | None = None, mask_id: int | None = None) -> Committed:
    """What a step writes into each request's span: the one place a canvas changes.

    `span (A, G)` holds the ids entering the step; `result.tokens` replace them where
    `result.selected` (article step 5), and, when a revision rule ran (`result.revision`), its
    rewrites replace visible ids and the positions it took back return to `mask_id`. With `order (A, G)` and `step (A,)`
    (each row's step number; an int: every row's), the order records `step` where the step decided a token
    (confirmed or rewrote) and -1 where it took one back.
    """
    plan = result.revision
    if plan is not None and mask_id is None:
        raise ValueError("mask_id is invalid: expected the mask token id, to write back what a revision rule took back")
    tokens = result.tokens if result.tokens.dtype == span.dtype else result.tokens.to(span.dtype)
    new_span = torch.where(result.selected, tokens, span)  # (A, G)
    decided = result.selected
    if plan is not None:  # rewrites and re-masks touch visible positions, confirmations masked ones: disjoint
        if plan.rewrites:  # (else `edited` is False throughout)
            new_span = torch.where(plan.edited, plan.edit_tokens.to(span.dtype), new_span)
            decided = decided | plan.edited
        new_span = new_span.masked_fill(plan.remasked, mask_id)
    new_order = None
    if order is not None:
        if step is None:
            raise ValueError("step is invalid: expected each row's step number (A,) with order")
        if isinstance(step, int):  # every row at the same step: one fill
            new_order = order.masked_fill(decided, step)  # (A, G)
        else:
            new_order = torch.where(decided, step.to(order.dtype).unsqueeze(-1), order)  # (A, G)
        if plan is not None:
            new_order = new_order.masked_fill(plan.remasked, -1)
    return Committed(span=new_span, order=new_order)
