"""Reading a finished `Trace`: who was confirmed when, where two runs part ways, tempered shares.

Pure functions of stored records (no model, no HTML): the playground's canvas and figures, the
lessons' measurements and the tests all read a trace through these. Steps are 0-based records
here; the UI shows them 1-based.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from dllm_viz.core.config import DecodeConfig
from dllm_viz.core.schedules import planned_quotas
from dllm_viz.core.trace import Trace

# Probabilities are floored here before the logarithm of the tempering formula; the page's
# in-browser re-tempering reads the same constant (render writes it into the inspector's HTML).
P_FLOOR = 1e-30


@dataclass(frozen=True)
class Confirmation:
    """How one generated position was confirmed."""

    step: int  # 0-based record index
    token: int
    confidence: float  # what the schedule ranked by
    raw_confidence: float  # from the raw logits (same as `confidence` unless a teaching switch)
    logprob: float  # raw log-probability of `token`


def confirmations(trace: Trace) -> list[Confirmation | None]:
    """One entry per generated position (None if the trace never confirmed it)."""
    out: list[Confirmation | None] = [None] * trace.config.gen_length
    for rec in trace.steps:
        for pos, tok, lp in zip(rec.selected, rec.tokens, rec.logprobs):
            out[pos] = Confirmation(rec.step, tok, rec.confidence[pos], rec.raw[pos], lp)
    return out


@dataclass(frozen=True)
class Event:
    """One decision about one generated position (a revision rule may take a decision back or rewrite it)."""

    step: int  # 0-based record index
    kind: str  # "confirm" (mask -> token), "edit" (token -> token), "remask" (token -> mask), "force" (a fork's token)
    token: int | None  # what the position holds after it; None once re-masked
    before: int | None  # what it held before; None when it was masked
    prob: float  # confirm: raw p of the token; edit: raw p of the new id; remask: the rule's score (NaN: a fork's)
    before_prob: float | None = None  # edit: raw p of the old id at that step


def events(trace: Trace) -> list[list[Event]]:
    """Every decision of each position, in order (within a step: taken back, rewritten, confirmed, as
    `Trace.history` orders them; a step never does two of them to one position). A decode whose
    confirmations are final has exactly one "confirm" per position."""
    out: list[list[Event]] = [[] for _ in range(trace.config.gen_length)]
    held: list[int | None] = [None] * trace.config.gen_length
    for rec in trace.steps:
        _fork_events(trace, rec.step, out, held)
        for pos, tok, score in zip(rec.remasked or (), rec.remasked_tokens or (), rec.remask_probs or ()):
            out[pos].append(Event(rec.step, "remask", None, tok, score))
            held[pos] = None
        edits = zip(rec.edited or (), rec.edited_from or (), rec.edited_to or (), rec.edit_probs or (),
                    rec.edit_from_probs or ())
        for pos, old, new, p_new, p_old in edits:
            out[pos].append(Event(rec.step, "edit", new, old, p_new, p_old))
            held[pos] = new
        for pos, tok, lp in zip(rec.selected, rec.tokens, rec.logprobs):
            out[pos].append(Event(rec.step, "confirm", tok, held[pos], math.exp(lp)))
            held[pos] = tok
    _fork_events(trace, len(trace.steps), out, held)
    return out


def _fork_events(trace: Trace, step: int, out: list[list[Event]], held: list[int | None]) -> None:
    """The changes of the fork points (`Trace.forks`) made before record `step`: at step `step - 1`, a
    "remask" for each position taken back and a "force" for each token forced (no probability: NaN)."""
    for fork in trace.forks:
        if fork.step != step:
            continue
        for pos in fork.remask:
            out[pos].append(Event(step - 1, "remask", None, held[pos], math.nan))
            held[pos] = None
        for pos, tok in fork.force:
            out[pos].append(Event(step - 1, "force", tok, held[pos], math.nan))
            held[pos] = tok


def frame_count(trace: Trace) -> int:
    """Largest frame: the number of steps (frame f = the canvas after f steps)."""
    return len(trace.steps)


def piece(trace: Trace, token_id: int) -> str:
    """Printable text of one token: whitespace made visible where it would vanish."""
    text = trace.token_text(token_id)
    if text == "":
        return "∅"
    return text.replace("\n", "↵").replace("\t", "⇥")


def prompt_text(trace: Trace) -> str:
    """The prompt as text (the stored text, else its tokens joined)."""
    if trace.prompt_text is not None:
        return trace.prompt_text
    return "".join(trace.token_text(i) for i in trace.prompt_ids)


def tempered_from_top(probs: list[float], temperature: float) -> list[float]:
    """p_i^(1/T) renormalised over the given candidates; T = 0 puts all mass on the first.

    Exact for shares among the candidates: p_i^(1/T) / p_j^(1/T) needs no other token.
    """
    if not probs:
        return []
    if temperature <= 0:
        return [1.0 if i == 0 else 0.0 for i in range(len(probs))]
    logs = [math.log(max(p, P_FLOOR)) / temperature for p in probs]
    top = max(logs)
    w = [math.exp(v - top) for v in logs]
    z = sum(w)
    return [v / z for v in w]


@dataclass(frozen=True)
class Divergence:
    """Where two traces of the same prompt part ways."""

    first_step: int | None  # 0-based first step whose confirmed set differs; None = identical orders
    order_differs: list[int]  # positions confirmed at a different step
    token_differs: list[int]  # positions holding a different final token


def divergence(a: Trace, b: Trace) -> Divergence:
    if a.config.gen_length != b.config.gen_length:
        raise ValueError(
            f"gen_length={b.config.gen_length} of B is invalid: expected the same as A ({a.config.gen_length})"
        )
    first = None
    for s in range(max(len(a.steps), len(b.steps))):
        sa = set(a.steps[s].selected) if s < len(a.steps) else None
        sb = set(b.steps[s].selected) if s < len(b.steps) else None
        if sa != sb:
            first = s
            break
    order = [p for p, (x, y) in enumerate(zip(a.order, b.order)) if x != y]
    tokens = [p for p, (x, y) in enumerate(zip(a.token_ids, b.token_ids)) if x != y]
    return Divergence(first, order, tokens)


def k_sequence(config: DecodeConfig, limit: int = 64) -> list[int] | None:
    """Positions each step will confirm (`schedules.planned_quotas`); None for threshold.

    Shows why a knob has no effect: with top_k = 8 every decay in [0.88, 0.99] gives 8, 7, 6, ...
    on the way down to the floor. At most `limit` steps are listed.
    """
    quotas = planned_quotas(config)
    return None if quotas is None else list(quotas[:limit])
