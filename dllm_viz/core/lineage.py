"""Where a forked trace branched off its parent, and what changed there (docs/fork_diff_export.md): `ForkPoint`.

A fork (`core.fork`) continues a trace from the state after its first `step` steps, with a change: tokens
forced at positions, positions taken back to [MASK], knobs switched. The forked trace keeps the parent's
first `step` records as they were and lists its fork points in `Trace.forks` (a fork of a fork lists two),
so the trace alone says what its canvas held at every step (`Trace.canvas_at`) and the schema can replay it.

A fork point's change happens between record `step - 1` and record `step`: it is part of the canvas after
step `step - 1` (`Trace.canvas_at(step - 1)`, the page's frame `step`), and a forced token's `order` is
`step - 1` (-1 for a fork at the start: visible from frame 0). This module holds the record only; it
imports nothing of the decoder, so `core.trace` can read it.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dllm_viz.core.knobs import bad

MAX_TOKEN_ID = 2**31 - 1  # as the trace schema: token ids are int32 in every tokenizer we read
DIGEST = re.compile(r"[0-9a-f]{8,64}")  # a parent's digest: hex, as `core.fork.digest` writes it
MAX_FORKS = 64  # fork points one trace may list (a fork of a fork of ...): far above any real lineage


@dataclass(frozen=True)
class ForkPoint:
    """One branch point: the parent it left, the step, and the change made before that step."""

    parent: str  # digest of the parent trace's JSON (`core.fork.digest`): which trace this one left
    step: int  # records [0, step) are the parent's; the change applies before record `step`
    force: tuple[tuple[int, int], ...] = ()  # (position, token id) placed there, by position
    remask: tuple[int, ...] = ()  # positions taken back to [MASK], ascending
    knobs: tuple[tuple[str, Any], ...] = ()  # DecodeConfig fields switched: (name, new value), by name
    was: tuple[tuple[str, Any], ...] = ()  # the same fields' values before the switch

    @property
    def changes_canvas(self) -> bool:
        return bool(self.force or self.remask)

    def apply(self, canvas: list[int | None]) -> None:
        """Make the change on `canvas` (generated positions; None = masked), in place."""
        for pos in self.remask:
            canvas[pos] = None
        for pos, tok in self.force:
            canvas[pos] = tok

    @property
    def switches(self) -> tuple[tuple[str, str, str], ...]:
        """Each knob switched: (name, new value, value before), the values as Python writes them (`repr`)."""
        was = dict(self.was)
        return tuple((k, repr(v), repr(was.get(k))) for k, v in self.knobs)

    def describe(self) -> str:
        """One line: `step 5: force 3=17, remask 8, temperature 0.0 (was 1.0)` (steps 0-based, as records)."""
        parts = [f"force {', '.join(f'{p}={t}' for p, t in self.force)}"] if self.force else []
        parts += [f"remask {', '.join(map(str, self.remask))}"] if self.remask else []
        parts += [f"{k} {new} (was {old})" for k, new, old in self.switches]
        return f"step {self.step}: " + ("; ".join(parts) or "nothing changed")

    def to_dict(self) -> dict[str, Any]:
        return {"parent": self.parent, "step": self.step, "force": [list(f) for f in self.force],
                "remask": list(self.remask), "knobs": dict(self.knobs), "was": dict(self.was)}

    @classmethod
    def from_dict(cls, d: Any, *, path: str = "fork") -> ForkPoint:
        """A fork point from parsed JSON, every field's type checked (ValueError naming it); positions and
        steps are checked against the trace by `check_forks`."""
        if not isinstance(d, dict) or set(d) != {"parent", "step", "force", "remask", "knobs", "was"}:
            raise bad(path, d, "an object with parent, step, force, remask, knobs and was")
        if not isinstance(d["parent"], str) or not DIGEST.fullmatch(d["parent"]):
            raise bad(f"{path}.parent", d["parent"], "the parent's digest: 8 to 64 lowercase hex digits")
        step = _int(f"{path}.step", d["step"], 0, MAX_TOKEN_ID)
        force = d["force"]
        if not isinstance(force, list) or not all(isinstance(f, list) and len(f) == 2 for f in force):
            raise bad(f"{path}.force", force, "a list of [position, token id] pairs")
        pairs = tuple((_int(f"{path}.force[{i}][0]", p, 0, MAX_TOKEN_ID),
                       _int(f"{path}.force[{i}][1]", t, 0, MAX_TOKEN_ID)) for i, (p, t) in enumerate(force))
        if not isinstance(d["remask"], list):
            raise bad(f"{path}.remask", d["remask"], "a list of positions")
        remask = tuple(_int(f"{path}.remask[{i}]", p, 0, MAX_TOKEN_ID) for i, p in enumerate(d["remask"]))
        for key in ("knobs", "was"):
            if not isinstance(d[key], dict) or not all(isinstance(k, str) for k in d[key]):
                raise bad(f"{path}.{key}", d[key], "an object of DecodeConfig fields")
        if set(d["knobs"]) != set(d["was"]):
            raise bad(f"{path}.was", d["was"], f"the fields of {path}.knobs: " + ", ".join(sorted(d["knobs"])))
        point = cls(parent=d["parent"], step=step, force=pairs, remask=remask,
                    knobs=tuple(sorted(_plain(d["knobs"]).items())), was=tuple(sorted(_plain(d["was"]).items())))
        positions = [p for p, _ in point.force] + list(point.remask)
        if len(set(positions)) != len(positions):
            raise bad(f"{path}.remask", list(point.remask), "positions each listed once, not also forced")
        return point


def _plain(values: dict[str, Any]) -> dict[str, Any]:
    """JSON lists as tuples (temperature_stages), so a fork point read back equals the one written."""
    return {k: tuple(v) if isinstance(v, list) else v for k, v in values.items()}


def _int(path: str, v: Any, lo: int, hi: int) -> int:
    if type(v) is not int or not lo <= v <= hi:
        raise bad(path, v, f"an integer in [{lo}, {hi}]")
    return v


def check_forks(forks: list[Any], *, steps: int, gen_length: int, canvas: str = "masked") -> tuple[ForkPoint, ...]:
    """A trace's `forks` read and checked against it: at most `MAX_FORKS`, steps in [0, `steps`] in order,
    positions in [0, `gen_length`); on a renoising `canvas`, knobs only (`core.fork_renoise`)."""
    if not isinstance(forks, list) or len(forks) > MAX_FORKS:
        raise bad("forks", forks, f"a list of at most {MAX_FORKS} fork points")
    out = tuple(ForkPoint.from_dict(f, path=f"forks[{i}]") for i, f in enumerate(forks))
    last = 0
    for i, point in enumerate(out):
        if not last <= point.step <= steps:
            raise bad(f"forks[{i}].step", point.step, f"a step in [{last}, {steps}] (fork points in order, "
                      "none past the trace's last record)")
        last = point.step
        if canvas != "masked" and point.changes_canvas:
            raise bad(f"forks[{i}]", point.to_dict(), "knobs switched only: a renoising canvas has no decided "
                      "position to force or take back")
        for pos in [p for p, _ in point.force] + list(point.remask):
            if not 0 <= pos < gen_length:
                raise bad(f"forks[{i}]", pos, f"positions in [0, {gen_length}) (the generated span)")
    return out


def held(value: Any, forks: tuple[ForkPoint, ...], knob: str) -> Callable[[int], Any]:
    """`knob`'s value in force at each step of a trace, as a function of the step: what the first fork point after
    the step that switched it switched it from, else `value` (the trace's config's, after every fork)."""
    switched = [(point.step, dict(point.was)[knob]) for point in forks if knob in dict(point.was)]

    def at(step: int) -> Any:
        return next((was for s, was in switched if s > step), value)
    return at


def most_steps(value: int, forks: tuple[ForkPoint, ...]) -> int:
    """The largest `max_denoising_steps` a renoising trace's decode ran under: its config's or one a fork point
    switched from; each of those an integer >= 1 (ValueError naming the fork point's field)."""
    out = value
    for i, point in enumerate(forks):
        was = dict(point.was)
        if "max_denoising_steps" in was:
            v = was["max_denoising_steps"]
            if type(v) is not int or v < 1:
                raise bad(f"forks[{i}].was.max_denoising_steps", v, "an integer >= 1 (the steps it ran under)")
            out = max(out, v)
    return out
