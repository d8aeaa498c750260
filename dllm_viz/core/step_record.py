"""One denoising step of one request, as a trace records it (`StepRecord`), and the rounding of its floats.

Floats are kept at 1e-6 resolution (`quantize`), applied once when a record is made, so what is in
memory is exactly what the JSON says. `core.trace` gathers the records of a decode into a `Trace`.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any, ClassVar, Sequence

import torch

from dllm_viz.core.trace_renoise import RenoiseSection


def quantize(values: Any) -> list:
    """Round to 6 decimals; NaN stays NaN. Applied once, when a record is made. A float64 tensor (of any
    shape: nested lists out) is rounded by a few tensor ops to the very numbers Python's `round` gives."""
    if not isinstance(values, list):
        return _quantize_tensor(values)
    return [v if math.isnan(v) else round(v, 6) for v in values]


def _quantize_tensor(x: Any) -> list:
    """`[round(v, 6) for v in x]` as nested lists, for a float64 tensor `x` (`rounded`)."""
    return rounded(x).tolist()


def quantize_many(tensors: Sequence[torch.Tensor]) -> list[list]:
    """`quantize` of each float tensor (any float dtype, any shape; nested lists out), rounded in one pass."""
    flat = torch.cat([t.reshape(-1) for t in tensors]).double() if len(tensors) > 1 else tensors[0].reshape(-1).double()
    out = rounded(flat).split([t.numel() for t in tensors])
    return [o.view(t.shape).tolist() for o, t in zip(out, tensors)]


def rounded(x: torch.Tensor) -> torch.Tensor:
    """`x` (float64) rounded to 6 decimals as Python's `round` does, as a new tensor. ``rint(x * 1e6) / 1e6`` is
    Python's round wherever ``x * 1e6`` is not within 1e-6 of a half-integer and |x| < 1000 (the product's
    error is far below that; the division of two exact doubles is correctly rounded, as is `round`'s
    decimal-to-double step); the other entries, infinities included, go through `round` itself (NaN stays NaN)."""
    y = x * 1e6
    r = y.round()
    out = r / 1e6
    risky = (x.abs() >= 1000) | ((y - r).abs() > 0.5 - 1e-6)  # (NaN: neither)
    if bool(risky.any()):
        out[risky] = out.new_tensor([round(v, 6) for v in x[risky].tolist()])
    return out


class PackedCandidates:
    """The raw candidates of the rows of one step (or of every step a `Later` flushed), packed at their masked
    positions as the step computed them: `ids (M, n)`, `probs (M, n)` (CPU tensors, never written after). A record
    keeps its share (`Unread`) and reads it as lists the first time its `candidates` or `candidate_probs` is
    read: the pack is rounded and converted once for all its records, so a decode pays the conversion only for
    the candidates someone reads (every one of them once, when a trace is written or drawn)."""

    __slots__ = ("ids", "probs", "starts", "none", "_lists")

    def __init__(self, ids: torch.Tensor, probs: torch.Tensor, n_masked: list[int]) -> None:
        """`ids`, `probs` `(M, n)`: the candidates of rows with `n_masked` masked positions each, row after row."""
        self.ids, self.probs = ids, probs
        self.starts = list(itertools.accumulate([0] + n_masked))  # each row's first packed position
        self.none: list = []  # a visible position's candidates in the pack's records (one object: fewer to collect)
        self._lists: tuple[list, list] | None = None

    def share(self, row: int) -> Unread:
        """Row `row`'s candidates, to leave packed in its record (`StepRecord.unread`)."""
        return Unread(self, self.starts[row], self.starts[row + 1])

    def lists(self) -> tuple[list[list[int]], list[list[float]]]:
        """`(ids, probs)` as nested lists, the probabilities rounded (`quantize`); made once."""
        if self._lists is None:
            self._lists = (self.ids.tolist(), quantize_many([self.probs])[0])
        return self._lists


class Unread:
    """A record's candidates not read yet: its pack and its rows in it, `start:stop` (its masked positions' in
    order, the record's `argmax` >= 0 marking them)."""

    __slots__ = ("pack", "start", "stop")

    def __init__(self, pack: PackedCandidates, start: int, stop: int) -> None:
        self.pack, self.start, self.stop = pack, start, stop


def candidate_ids(records: Sequence[StepRecord]) -> set[int]:
    """Every id among the records' candidates, read from their packs where they are still packed (no lists made)."""
    seen: set[int] = set()
    packed = []
    for rec in records:
        value = rec.__dict__.get("candidates")
        if isinstance(value, Unread):
            packed.append(value.pack.ids[value.start:value.stop].reshape(-1))
        else:
            for cands in value or ():
                seen.update(cands)
    if packed:
        seen.update(torch.cat(packed).unique().tolist())
    return seen


class _Candidates:
    """The descriptor of `StepRecord.candidates` and `.candidate_probs`: a value set is kept as it is; an `Unread`
    share is made into both lists (`[]` at the positions that were not masked) when either is first read."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, rec: Any, owner: type | None = None) -> Any:
        if rec is None:
            return None  # the field's default
        value = rec.__dict__.get(self.name)
        if isinstance(value, Unread):
            ids, ps = value.pack.lists()
            j = value.start
            none = value.pack.none
            cands, probs = [none] * len(rec.argmax), [none] * len(rec.argmax)
            for p, m in enumerate(rec.argmax):
                if m >= 0:
                    cands[p], probs[p] = ids[j], ps[j]
                    j += 1
            rec.__dict__.update(candidates=cands, candidate_probs=probs)
            value = rec.__dict__[self.name]
        return value

    def __set__(self, rec: Any, value: Any) -> None:
        if isinstance(rec.__dict__.get(self.name), Unread):  # the other of the two keeps its values
            getattr(rec, self.name)
        rec.__dict__[self.name] = value


def _nan_to_none(values: list[float]) -> list[float | None]:
    return [None if math.isnan(v) else v for v in values]


def _none_to_nan(values: list[float | None]) -> list[float]:
    return [math.nan if v is None else float(v) for v in values]


@dataclass
class StepRecord:
    """One denoising step of one request. Positions are relative to the generated span."""

    step: int  # 0-based step index of this request
    block: int  # block being decoded
    k: int  # positions confirmed this step
    temperature: float  # temperature in force for the draws of this step
    confidence: list[float]  # (gen_length,) confidence the schedule ranked by; NaN where not masked
    argmax: list[int]  # (gen_length,) raw argmax at masked positions; -1 elsewhere
    selected: list[int]  # (k,) positions confirmed, most confident first
    tokens: list[int]  # (k,) ids placed at `selected`
    logprobs: list[float]  # (k,) raw log-probability of those ids
    raw_confidence: list[float] | None = None  # (gen_length,) raw confidence, when the schedule used another
    # (gen_length, N) top raw candidates and their raw probabilities; [] where not masked. The decoder leaves them
    # packed (`Unread`) until read: set `unread(...)`, and reading either gives lists as a set value would.
    candidates: list[list[int]] | None = _Candidates()  # type: ignore[assignment]
    candidate_probs: list[list[float]] | None = _Candidates()  # type: ignore[assignment]
    # Version 2 (the revision rules, docs/revision.md), each None when the step has none of it (and then
    # left out of the JSON).
    # Taken back: positions returned to [MASK], the ids they held, and what decided it (the rule's score:
    # ReMDM the re-masking probability sigma, RCR the confidence the token was decided with, WINO the
    # probability of the token in the verify pass, where it did not see itself).
    remasked: list[int] | None = None  # (r,) positions
    remasked_tokens: list[int] | None = None  # (r,) the ids they held
    remask_probs: list[float] | None = None  # (r,) the rule's score
    # Rewritten (token to token): position, old id, new id, and the raw probabilities of both at this step.
    edited: list[int] | None = None  # (e,) positions
    edited_from: list[int] | None = None  # (e,) old ids
    edited_to: list[int] | None = None  # (e,) new ids (the raw argmax)
    edit_probs: list[float] | None = None  # (e,) raw probability of the new id (what cleared edit_threshold)
    edit_from_probs: list[float] | None = None  # (e,) raw probability of the old id
    forwards: int | None = None  # forward passes of this step when not 1 (0: ReMDM reused the step before's
    #                              p_x0; 2: a verify pass of its own ran, WINO's per-position canvases)
    # SGLang's LowConfidence loop (`core.references.sglang.closes_blocks`): True at the step that fills a block's
    # last masks, after which SGLang runs one more forward on the finished block (its `done` is computed
    # before the step's update) that changes nothing. Counted in `Trace.nfe`; None elsewhere.
    closing_forward: bool | None = None

    # A decode with an approximate cache (`core.cache`, docs/cache.md), each None otherwise (and then left out):
    forward_kind: str | None = None  # what the forward was: "full", or a window of the "prefix" / "dual" cache
    computed: int | None = None  # positions it computed (a full forward: the whole row, prompt included)
    forward_time: float | None = None  # seconds it took
    # ... and with cache_drift, at the steps whose forward was a window: the same step on the exact forward.
    drift: float | None = None  # largest |confidence - exact confidence| over the positions scored
    drift_selected: bool | None = None  # the exact forward would confirm another set of positions
    drift_tokens: bool | None = None  # where this step confirmed, the exact forward would draw another token
    exact_confidence: list[float] | None = None  # (gen_length,) the exact forward's confidence; NaN where not scored

    # Version 3: optional per-step sections by kind, each None when the step has none (and then left out).
    # An insert/delete rule's step (`core.indel_record`, docs/indel.md): {"edits": [[position, kind, old token], ...],
    # "source": (gen_length,) this step's position -> the last step's position of its token, -1 for a new mask}.
    indel: dict[str, Any] | None = None
    # A renoising step (`core.trace_renoise`, docs/renoise.md): its section, and none of the masked fields
    # (confidence ... logprobs are [] in memory, absent in JSON); `block` is its canvas, `k` the positions it accepted.
    renoise: RenoiseSection | None = None

    # Written only when not None (a later optional field joins this tuple): the revision fields, the
    # cache's and the sections. A version-1 trace has none of them, a version-2 trace no section.
    SECTIONS: ClassVar[tuple[str, ...]] = ("indel", "renoise")
    OPTIONAL: ClassVar[tuple[str, ...]] = ("remasked", "remasked_tokens", "remask_probs", "edited", "edited_from",
                                           "edited_to", "edit_probs", "edit_from_probs", "forwards", "closing_forward",
                                           "forward_kind", "computed", "forward_time", "drift", "drift_selected",
                                           "drift_tokens", "exact_confidence", *SECTIONS)

    MASKED: ClassVar[tuple[str, ...]] = ("confidence", "argmax", "selected", "tokens", "logprobs")  # a masked step's

    def unread(self, share: Unread) -> None:
        """Leave the candidates packed (`share`) until first read."""
        self.__dict__["candidates"] = self.__dict__["candidate_probs"] = share

    def to_dict(self) -> dict[str, Any]:
        _ = self.candidates  # packed candidates read into lists
        if self.renoise is not None:  # a renoising step: its section, no masked field
            return {"step": self.step, "block": self.block, "k": self.k, "temperature": self.temperature,
                    "renoise": self.renoise.to_dict()}
        d = {k: v for k, v in self.__dict__.items() if v is not None or k not in self.OPTIONAL}
        d["confidence"] = _nan_to_none(self.confidence)
        for key in ("raw_confidence", "exact_confidence"):
            if getattr(self, key) is not None:
                d[key] = _nan_to_none(getattr(self, key))
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> StepRecord:
        d = dict(d)
        if d.get("renoise") is not None:
            d["renoise"] = RenoiseSection.from_dict(d["renoise"])
            return cls(**d, **{key: [] for key in cls.MASKED})
        d["confidence"] = _none_to_nan(d["confidence"])
        for key in ("raw_confidence", "exact_confidence"):
            if d.get(key) is not None:
                d[key] = _none_to_nan(d[key])
        return cls(**d)

    @property
    def raw(self) -> list[float]:
        """Raw confidence whatever the schedule used."""
        return self.raw_confidence if self.raw_confidence is not None else self.confidence

    @property
    def revisions(self) -> int:
        """Tokens taken back or rewritten at this step."""
        return len(self.remasked or ()) + len(self.edited or ())

    @property
    def source(self) -> list[int] | None:
        """This step's position -> the last step's position of its token (-1: a new mask); None when no
        position moved (a step without an "indel" section)."""
        return self.indel["source"] if self.indel is not None else None
