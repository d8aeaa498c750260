"""What the lessons' prose says about the measurements, checked: one format for every lesson and study.

Every entry of ``dllm_viz/assets/lessons.yaml`` (the Compare tab's pairs under ``lessons``, the
revision study, the curve lessons, the world studies) carries its ``checks``: blocks of

    measured_in: <source>:<path>   # the measurement: a file of `SOURCES`, and where in it (dotted)
    prose: <field>                 # the entry's text in every language (default `measured`) ...
    quotes: [<path>:<format>, ...] # ... holds each of these numbers, formatted by the Python spec
    claims: [<path> <op> <path or number> [+|- <number>], ...]   # and these comparisons hold

A path is dotted keys below `measured_in`'s; ``name(v)`` picks from the list ``name`` the point whose
``value`` is v (``constant_k(16)``). The prose is compared with its minus signs (U+2212) read as
hyphens, as the tables print them. ``tests/test_claims.py`` checks every block of every entry, so a
re-measurement that changes a quoted number or breaks a claim fails until the text is rewritten.
"""
from __future__ import annotations

import json
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from dllm_viz import assets
from dllm_viz.studies import curve_lessons, indel_lessons, lessons, renoise_lessons, revision_lessons, world_lessons

LESSONS_PATH = assets.path("lessons.yaml")
# The measurements a claim may read, each loaded whole (the lessons' file by lesson key).
SOURCES: dict[str, Callable[[], Any]] = {
    "lessons": lessons.load_measured,  # assets/lessons.json: the pairs on the embedded model
    "world": lambda: json.loads(world_lessons.WORLD_MEASURED_PATH.read_text()),  # assets/world/lessons.json
    "revision": revision_lessons.load_revision,  # assets/world/revision.json
    "curves": curve_lessons.load_curves,  # assets/tasks/curves.json
    "indel": indel_lessons.load_eval,  # assets/world-indel/indel_eval.json: insert and delete counted
    "renoise": renoise_lessons.load_renoise,  # assets/world-renoise/lessons.json: the renoising decoder's knobs
}
OPS: dict[str, Callable[[float, float], bool]] = {"<": operator.lt, ">": operator.gt, "<=": operator.le,
                                                  ">=": operator.ge, "==": operator.eq}
SEGMENT = re.compile(r"[^.(]+(?:\([^)]*\))?")


@dataclass(frozen=True)
class Check:
    """One block of an entry's ``checks``: where it reads, the prose it quotes in, its quotes and claims."""

    entry: str  # the entry's key, e.g. "polluted", "revision_study"
    measured_in: str  # "<source>:<path>"
    prose: dict[str, str]  # lang -> the text that quotes the numbers ({} when it quotes none)
    quotes: tuple[str, ...] = ()
    claims: tuple[str, ...] = ()
    prose_field: str = "measured"  # which field of the entry `prose` is

    @property
    def name(self) -> str:
        return f"{self.entry}.{self.prose_field}@{self.measured_in}"


def _entries(data: dict[str, Any]) -> list[dict[str, Any]]:
    """Every entry of the lessons file: the pairs, the curve lessons, the single studies."""
    out = [*data.get("lessons", []), *data.get("curve_lessons", [])]
    return out + [{"key": key, **entry} for key, entry in data.items() if isinstance(entry, dict)]


def _field(entry: dict[str, Any], dotted: str) -> dict[str, str]:
    value: Any = entry
    for part in dotted.split("."):
        value = value.get(part, {}) if isinstance(value, dict) else {}
    return dict(value)


def load_checks(path: Path = LESSONS_PATH) -> list[Check]:
    """Every check block of the lessons file, in file order; ValueError on a malformed block."""
    checks = []
    for entry in _entries(yaml.safe_load(path.read_text(encoding="utf-8"))):
        for block in entry.get("checks", []):
            try:
                field = block.get("prose", "measured")
                check = Check(entry=entry["key"], measured_in=block["measured_in"],
                              prose=_field(entry, field) if block.get("quotes") else {}, prose_field=field,
                              quotes=tuple(block.get("quotes", ())), claims=tuple(block.get("claims", ())))
            except (KeyError, TypeError) as err:
                raise ValueError(f"{path.name}: a check of {entry.get('key')!r} is malformed: {err}") from err
            if check.quotes and set(check.prose) != set(lessons.LANGS):
                raise ValueError(f"{path.name}: {check.name} quotes in a prose without the languages {lessons.LANGS}")
            if check.measured_in.partition(":")[0] not in SOURCES:
                raise ValueError(f"{path.name}: {check.name}: expected a measurement in {' | '.join(SOURCES)}")
            checks.append(check)
    return checks


def value(data: Any, path: str) -> Any:
    """The value at the dotted `path` of `data`; ``name(v)`` picks the point of list ``name`` whose value is v."""
    for segment in SEGMENT.findall(path):
        name, _, picked = segment.partition("(")
        data = data[name]
        if picked:
            wanted = float(picked.rstrip(")"))
            data = next(p for p in data if p["value"] == wanted)
    return data


def measurement(measured_in: str) -> Any:
    """What a check reads: its source, loaded, at its path."""
    source, _, path = measured_in.partition(":")
    data = SOURCES[source]()
    return value(data, path) if path else data


def quoted(data: Any, quote: str) -> str:
    """A quote's number as the prose writes it: ``"a.mean_logprob:.2f"`` -> ``"-8.44"``."""
    path, _, spec = quote.rpartition(":")
    return format(value(data, path), spec)


def _operand(data: Any, text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return float(value(data, text))


def holds(data: Any, claim: str) -> bool:
    """Whether ``"left op right"`` (or ``"left op right + c"``, ``- c``) holds on `data`."""
    parts = claim.split()
    if len(parts) not in (3, 5) or parts[1] not in OPS or (len(parts) == 5 and parts[3] not in "+-"):
        raise ValueError(f"claim {claim!r} is invalid: expected 'left op right [+|- number]', "
                         f"op one of {' '.join(OPS)}")
    right = _operand(data, parts[2])
    if len(parts) == 5:
        right += float(parts[4]) if parts[3] == "+" else -float(parts[4])
    return OPS[parts[1]](_operand(data, parts[0]), right)


def failures(check: Check, data: Any | None = None) -> list[str]:
    """What does not hold of `check`: quotes missing from a language of its prose, claims that are false."""
    data = measurement(check.measured_in) if data is None else data
    out = []
    for quote in check.quotes:
        number = quoted(data, quote)
        out += [f"{quote} = {number} not in its {lang} prose" for lang, text in check.prose.items()
                if number not in text.replace("−", "-")]
    out += [f"{claim} is false" for claim in check.claims if not holds(data, claim)]
    return out
