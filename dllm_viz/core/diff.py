"""Where two traces of the same prompt part (docs/fork_diff_export.md): the first step and position, labelled, and every
later difference counted by kind.

Two decoders that should agree (an engine and its reference, a fork and its parent, a setting and its
neighbour) are compared step by step, section by section: what each trace did at step i is read from
its records by one function per section of a step (`SECTIONS`), and a section that neither trace has
at that step says nothing. A new kind of step (a renoising canvas's accept/renoise, an insert/delete
phase) is one more section function appended to `SECTIONS` with its kinds in `KINDS`; nothing else
changes. Decisions are compared, not floats: two implementations whose confidences differ in the
sixth digit but confirm the same tokens at the same steps do not differ here.

Kinds, in the order they are reported within a step:
  forced            a fork point (`Trace.forks`) forced a token or took one back before this step in one
                    trace only, or did it differently (a, b: the id forced, "mask" for a position taken back,
                    None for nothing changed there); or switched a knob (position None, `knob`: its name;
                    a, b: the values, None where that trace did not switch it)
  another_selection a position confirmed at this step in one trace only (a, b: the id, None: not confirmed)
  another_token     a position confirmed at this step in both, with another token (a, b: the ids)
  taken_back        a position a revision rule took back to [MASK] at this step in one trace only (the id
                    it held, None: not taken back)
  another_rewrite   a position a revision rule rewrote at this step in one trace only, or to another id
                    (the new id, None: not rewritten)
  another_stop      one trace took its last step here and the other went on, or both stopped here for
                    another reason (position None; a, b: "end", "early_stop" (the end-of-text early stop
                    fired) or None (went on))
  another_acceptance  (a renoising canvas, docs/renoise.md) a position whose proposal this step accepted in one
                    trace only (a, b: the id accepted, None: renoised there)
  another_proposal  a position this step accepted in both, with another proposal (a, b: the ids)
Positions are 0-based in the generated span; steps are 0-based records (the page shows step i + 1).
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from dllm_viz.core.trace import StepRecord, Trace

KINDS = ("forced", "another_selection", "another_token", "taken_back", "another_rewrite", "another_stop",
         "another_acceptance", "another_proposal")
MASK = "mask"  # what a "forced" difference says of a position its fork point took back


@dataclass(frozen=True)
class Difference:
    """One thing the two traces did differently at one step."""

    step: int  # 0-based record
    position: int | None  # generated position; None for what concerns the whole step (a stop, a knob)
    kind: str  # one of KINDS
    a: Any  # what A did there (a token id; None: nothing there), per kind (module docstring)
    b: Any  # what B did there
    knob: str | None = None  # a switched knob's name ("forced" at position None)

    def to_dict(self) -> dict[str, Any]:
        out = {"step": self.step, "position": self.position, "kind": self.kind, "a": self.a, "b": self.b}
        return out | ({"knob": self.knob} if self.knob is not None else {})


@dataclass(frozen=True)
class TraceDiff:
    """`diff(a, b)`: the first difference, every difference, their counts by kind, and the settings that differ."""

    first: Difference | None  # None: the two traces made the same decisions at every step
    differences: tuple[Difference, ...]  # in step order, then the order of KINDS, then position
    steps: tuple[int, int]  # the steps each trace took
    config: dict[str, tuple[Any, Any]] = field(default_factory=dict)  # DecodeConfig fields that differ: (A, B)
    models: tuple[str, str] = ("", "")

    @property
    def same(self) -> bool:
        return self.first is None

    @property
    def counts(self) -> dict[str, int]:
        """Differences by kind, every kind listed (0 when none), in the order of KINDS."""
        found = Counter(d.kind for d in self.differences)
        return {kind: found.get(kind, 0) for kind in KINDS}

    @property
    def steps_differing(self) -> int:
        return len({d.step for d in self.differences})

    def at(self, step: int) -> list[Difference]:
        """The differences at one step (what the page marks at that step)."""
        return [d for d in self.differences if d.step == step]

    def to_dict(self) -> dict[str, Any]:
        return {"same": self.same, "first": None if self.first is None else self.first.to_dict(),
                "counts": self.counts, "steps": list(self.steps), "steps_differing": self.steps_differing,
                "models": list(self.models), "config": {k: list(v) for k, v in self.config.items()},
                "differences": [d.to_dict() for d in self.differences]}

    def __str__(self) -> str:
        """A terse line in identifiers (the sentences, in each language: `app.views.diff.summary`)."""
        if self.first is None:
            return f"same decisions at every step ({self.steps[0]} steps)"
        f = self.first
        at = "" if f.position is None else f", position {f.position}"
        counts = ", ".join(f"{k} {n}" for k, n in self.counts.items() if n)
        what = f.kind + (f" {f.knob}" if f.knob is not None else "")
        return f"first difference: step {f.step}{at}: {what} (A {f.a!r}, B {f.b!r}); all: {counts}"


class DifferentPrompts(ValueError):
    """`diff` was given traces of two prompts: there is nothing to compare position by position."""


# A section reads one step of both traces and yields its differences (position, kind, a, b, knob).
Found = Iterator[tuple[int | None, str, Any, Any, str | None]]
Section = Callable[[Trace, Trace, int], Found]


def _record(trace: Trace, step: int) -> StepRecord | None:
    return trace.steps[step] if step < len(trace.steps) else None


def forks_section(a: Trace, b: Trace, step: int) -> Found:
    """The fork points' changes made before `step` (`Trace.forks`): forced tokens, positions taken back, knobs."""
    def change(trace: Trace) -> tuple[dict[int, int | str], dict[str, Any]]:
        canvas: dict[int, int | str] = {}
        knobs: dict[str, Any] = {}
        for fork in trace.forks:
            if fork.step == step:
                canvas.update({pos: MASK for pos in fork.remask} | dict(fork.force))
                knobs.update(fork.knobs)
        return canvas, knobs

    (ca, ka), (cb, kb) = change(a), change(b)
    for name in sorted(ka.keys() | kb.keys()):
        if name not in ka or name not in kb or ka[name] != kb[name]:
            yield None, "forced", ka.get(name), kb.get(name), name
    for pos in sorted(ca.keys() | cb.keys()):
        if pos not in ca or pos not in cb or ca[pos] != cb[pos]:
            yield pos, "forced", ca.get(pos), cb.get(pos), None


def stop_section(a: Trace, b: Trace, step: int) -> Found:
    """One trace took its last step here and the other went on, or they stopped here for other reasons
    (the end-of-text early stop in one only). Past one trace's end nothing more is reported."""
    def end(trace: Trace) -> str | None:
        if trace.early_stop_step == step:
            return "early_stop"
        return "end" if step == len(trace.steps) - 1 else None

    if _record(a, step) is not None and _record(b, step) is not None and end(a) != end(b):
        yield None, "another_stop", end(a), end(b), None


def _positions(section: Callable[[StepRecord], dict[int, int]], kinds: tuple[str, str] | str) -> Section:
    """A section from a reader `record -> {position: id}`: a position in one only is kinds[0], in both with
    another id kinds[1] (a single kind: both)."""
    only, other = (kinds, kinds) if isinstance(kinds, str) else kinds

    def compare(a: Trace, b: Trace, step: int) -> Found:
        ra, rb = _record(a, step), _record(b, step)
        if ra is None or rb is None:  # past one trace's end: its stop was reported at its last step
            return
        da, db = section(ra), section(rb)
        for pos in sorted(da.keys() | db.keys()):
            if pos not in da or pos not in db:
                yield pos, only, da.get(pos), db.get(pos), None
            elif da[pos] != db[pos]:
                yield pos, other, da[pos], db[pos], None

    compare.__name__ = f"{section.__name__}_section"
    return compare


# Each reader returns {} for a record without its fields (a kind of step that has no such section).
def confirmed(rec: StepRecord) -> dict[int, int]:
    return dict(zip(getattr(rec, "selected", None) or (), getattr(rec, "tokens", None) or ()))


def taken_back(rec: StepRecord) -> dict[int, int]:
    return dict(zip(getattr(rec, "remasked", None) or (), getattr(rec, "remasked_tokens", None) or ()))


def rewritten(rec: StepRecord) -> dict[int, int]:
    return dict(zip(getattr(rec, "edited", None) or (), getattr(rec, "edited_to", None) or ()))


def accepted(trace: Trace, rec: StepRecord) -> dict[int, int]:
    """A renoising step's accepted positions (generated positions: its canvas's start on) and their proposals."""
    section = getattr(rec, "renoise", None)
    if section is None or not trace.canvases:
        return {}
    start = trace.canvases[rec.block].start
    return {start + i: section.proposal[i] for i in section.accepted}


def renoise_section(a: Trace, b: Trace, step: int) -> Found:
    """What a renoising step accepted: a position accepted in one trace only, or in both with another proposal
    (a position either accepts or renoises: a renoised position is one the other trace's acceptance names)."""
    ra, rb = _record(a, step), _record(b, step)
    if ra is None or rb is None:
        return
    da, db = accepted(a, ra), accepted(b, rb)
    for pos in sorted(da.keys() | db.keys()):
        if pos not in da or pos not in db:
            yield pos, "another_acceptance", da.get(pos), db.get(pos), None
        elif da[pos] != db[pos]:
            yield pos, "another_proposal", da[pos], db[pos], None


# The sections of a step, in the order a step happens (a fork's change before it, then its decisions).
SECTIONS: list[Section] = [
    forks_section,
    _positions(confirmed, ("another_selection", "another_token")),
    _positions(taken_back, "taken_back"),
    _positions(rewritten, "another_rewrite"),
    stop_section,
    renoise_section,
]


def step_differences(a: Trace, b: Trace, step: int) -> list[Difference]:
    """Every difference at one step, section by section."""
    return [Difference(step, pos, kind, x, y, knob)
            for section in SECTIONS for pos, kind, x, y, knob in section(a, b, step)]


def check_same_prompt(a: Trace, b: Trace) -> None:
    """Raise `DifferentPrompts` (a ValueError) unless both traces decode the same prompt ids on a canvas
    of the same length."""
    if a.prompt_ids != b.prompt_ids:
        at = next((i for i, (x, y) in enumerate(zip(a.prompt_ids, b.prompt_ids)) if x != y),
                  min(len(a.prompt_ids), len(b.prompt_ids)))
        raise DifferentPrompts(
            f"prompt_ids are invalid: A's ({len(a.prompt_ids)} ids) and B's ({len(b.prompt_ids)} ids) part at "
            f"prompt id {at}; expected two traces of the same prompt")
    if a.config.gen_length != b.config.gen_length:
        raise DifferentPrompts(f"gen_length={b.config.gen_length} of B is invalid: expected A's "
                               f"{a.config.gen_length} (two canvases of the same length)")


def diff(a: Trace, b: Trace) -> TraceDiff:
    """Compare two traces of the same prompt step by step (`SECTIONS`); `DifferentPrompts` (a ValueError)
    for traces of different prompts or canvas lengths."""
    if not isinstance(a, Trace) or not isinstance(b, Trace):
        raise ValueError(f"a, b: got {type(a).__name__} and {type(b).__name__}: expected two Trace objects")
    if a.canvas != b.canvas:  # a masked step and a renoising one decide different things
        raise ValueError(f"b.canvas={b.canvas!r} is invalid: expected A's {a.canvas!r} (two traces of one kind of "
                         "canvas)")
    check_same_prompt(a, b)
    found: list[Difference] = []
    for step in range(max(len(a.steps), len(b.steps)) + 1):  # + 1: fork points after the last record
        found += step_differences(a, b, step)
    ca, cb = a.config.to_dict(), b.config.to_dict()
    config = {k: (ca[k], cb[k]) for k in ca if ca[k] != cb[k]}
    return TraceDiff(first=found[0] if found else None, differences=tuple(found), steps=(len(a.steps), len(b.steps)),
                     config=config, models=(a.model, b.model))
