"""A fork's change as JSON (docs/fork_diff_export.md): what `/fork` is sent, what the inspector's fork buttons send
(`page_fork_json`: a candidate the trace recorded) and what a fork's link lists (`links`), parsed and bounded
(`MAX_FORK_CHARS`); a bad value raises ValueError naming it. No model and no Gradio here: `handlers.fork` and
`Playground.fork_here` fork with it.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from dllm_viz.core.config import short
from dllm_viz.core.trace import Trace

MAX_FORK_CHARS = 65536  # a change: a step, a few positions, a few knobs
KEYS = ("step", "force", "remask", "knobs")


@dataclass(frozen=True)
class ForkRequest:
    """A fork's change as the API sends it: `{"step": 5, "force": {"3": 17}, "remask": [8], "knobs": {...}}`."""

    step: int
    force: dict[int, int] = field(default_factory=dict)  # position -> token id
    remask: tuple[int, ...] = ()
    knobs: dict[str, Any] = field(default_factory=dict)  # DecodeConfig fields switched


def parse_fork_json(text: str | None) -> ForkRequest:
    """A `ForkRequest` from JSON (ValueError naming the field for anything else). `force` is an object
    {position: id} (positions as strings, JSON's keys) or a list of [position, id] pairs."""
    text = (text or "").strip()
    if len(text) > MAX_FORK_CHARS:
        raise ValueError(f"fork_json has {len(text)} characters: expected at most {MAX_FORK_CHARS}")
    try:
        values = json.loads(text or "null")
    except RecursionError:
        raise ValueError("fork_json nests too deeply: expected one JSON object (step, force, remask, knobs)") from None
    except json.JSONDecodeError as err:
        raise ValueError(f"fork_json={text[:80]!r} is invalid: expected a JSON object ({err})") from None
    if not isinstance(values, dict) or "step" not in values:
        raise ValueError(f"fork_json={text[:80]!r} is invalid: expected a JSON object with a step, and any of "
                         "force, remask, knobs")
    return fork_request(values)


def fork_request(values: dict[str, Any]) -> ForkRequest:
    """A `ForkRequest` from a parsed JSON object with a step (`parse_fork_json`'s, one of a link's `forks`), each field
    checked (ValueError naming it)."""
    if "step" not in values:
        raise ValueError(f"fork_json={short(values)} is invalid: expected a JSON object with a step, and any of force, "
                         "remask, knobs")
    extra = sorted(set(values) - set(KEYS))
    if extra:
        raise ValueError(f"fork_json: {extra[0]}={short(values[extra[0]])} is invalid: no such field; known fields: "
                         + ", ".join(KEYS))
    force = values.get("force") or {}
    if isinstance(force, dict):
        pairs = list(force.items())
    elif isinstance(force, list) and all(isinstance(p, list) and len(p) == 2 for p in force):
        pairs = [tuple(p) for p in force]
    else:
        raise ValueError(f"force={short(force)} is invalid: expected an object {{position: token id}} or a list of "
                         "[position, token id] pairs")
    remask, knobs = values.get("remask") or [], values.get("knobs") or {}
    if not isinstance(remask, list):
        raise ValueError(f"remask={short(remask)} is invalid: expected a list of positions")
    if not isinstance(knobs, dict):
        raise ValueError(f"knobs={short(knobs)} is invalid: expected an object of DecodeConfig fields")
    return ForkRequest(step=values["step"], force={_position(p): t for p, t in pairs}, remask=tuple(remask),
                       knobs=knobs)


def page_fork_json(text: str | None, trace: Trace) -> str:
    """The inspector's change (`Playground.fork_here`) as `/fork`'s JSON: a `"candidate": [position, s, rank]` is the
    candidate of that rank the trace recorded at that position at its step s, forced there (its token id: the page
    holds token texts, two ids may share one); the rest of the request is `/fork`'s own. ValueError names what is
    wrong."""
    text = (text or "").strip()
    if len(text) > MAX_FORK_CHARS or "candidate" not in text:
        return text  # (`parse_fork_json` bounds and reads it)
    try:
        values = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return text
    if not isinstance(values, dict) or "candidate" not in values:
        return text
    where = values.pop("candidate")
    if not (isinstance(where, list) and len(where) == 3 and all(type(x) is int for x in where)):
        raise ValueError(f"candidate={short(where)} is invalid: expected [position, step, rank], three integers")
    pos, step, rank = where
    n = len(trace.steps)
    cands = trace.steps[step].candidates if 0 <= step < n else None
    if not cands or not 0 <= pos < len(cands) or not 0 <= rank < len(cands[pos]):
        raise ValueError(f"candidate={where} is invalid: the trace recorded no candidate of rank {rank} at position "
                         f"{pos} at step {step} (it has {n} steps)")
    force = values.get("force") if isinstance(values.get("force"), dict) else {}
    values["force"] = {**force, str(pos): cands[pos][rank]}
    return json.dumps(values)


def _position(value: Any) -> Any:
    """A position written as a JSON key ("3") as the integer it names; another integer as it came (the fork
    checks its range)."""
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) < 10:
        return int(value)
    if type(value) is not int:
        raise ValueError(f"force: position {short(value)} is invalid: expected a position (an integer)")
    return value
