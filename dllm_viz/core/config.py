"""DecodeConfig: every knob of one decoding request, frozen and validated, plus the presets.

The defaults are the *correct* behaviour of the source article: confidence from the raw logits,
tokens drawn only where the schedule confirms, one generator per request. The teaching switches
(`confidence_from`, `sample_scope`, `rng`) reproduce the mistakes it warns about.

DecodeConfig's fields are the knob table (`core.rules.KNOBS`: the step's own knobs of `core.knobs`,
then each schedule's and revision rule's knobs, declared in their plug-in modules): a knob's spec gives
its field (name, type, default, description) and its validation, so a new knob is one spec entry.
`DecodeConfig.describe()` prints every field with its default and meaning; `help(DecodeConfig)` shows it.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from dllm_viz.core import rules
from dllm_viz.core.knobs import (  # noqa: F401  (the config's constants, importable from here as before)
    BLOCK_SCHEDULES, CACHES, CONFIDENCE_FROM, CONFIDENCES, DRAWN_SOURCES, FLOAT32_MAX, MAX_BUDGET, MAX_COUNT,
    MAX_SEED, MIN_TEMPERATURE, RNG_MODES, SAMPLE_SCOPES, SHORT_CHARS, Knob, bad, check_int, short, validate,
)
from dllm_viz.core.presets import (  # noqa: F401
    CANVAS_PRESETS, PRESETS, REVISION_PRESETS, SHIPPED_PRESETS, Preset, ShippedPreset,
)
from dllm_viz.core.rules.remdm import SIGMAS as REMASK_SIGMAS  # noqa: F401

KNOBS: tuple[Knob, ...] = rules.KNOBS
SCHEDULES = tuple(rules.SCHEDULES)  # the schedule plug-ins, in menu order (`core.rules`)
REVISIONS = tuple(rules.REVISIONS)  # the revision rule plug-ins, "none" first
INDELS = tuple(rules.INDELS)  # the insert/delete rule plug-ins, "none" first
FORWARD_KINDS = ("full", "prefix", "dual")  # what one step's forward was (a cached trace records it per step)


def describe(knobs: tuple[Knob, ...] = KNOBS) -> str:
    """One line per field: name, default, what it means, and which plug-ins read it."""
    lines = []
    for k in knobs:
        owner = rules.OWNER.get(k.name)
        readers = ", ".join(p.name for p in rules.readers(k.name)) if owner else ""
        lines.append(f"    {k.name} = {k.default!r}: {k.help}" + (f" [read by {readers}]" if readers else ""))
    return "\n".join(lines)


def _knob_fields(cls: type) -> type:
    """`cls` as a frozen, keyword-only dataclass whose fields are the knob table, in order."""
    cls.__annotations__ = {k.name: k.annotation for k in KNOBS}
    for k in KNOBS:
        setattr(cls, k.name, dataclasses.field(default=k.default, metadata={"help": k.help, "knob": k}))
    cls.__doc__ = f"{cls.__doc__}\n\n    Fields (from the knob specs):\n{describe()}\n"
    return dataclass(frozen=True, kw_only=True)(cls)


@_knob_fields
class DecodeConfig:
    """How one request is decoded. Keyword-only, frozen; invalid values raise ValueError."""

    def __post_init__(self) -> None:
        validate(self, KNOBS)
        rules.check_requires(self)  # what a chosen rule needs of the other knobs (an insert/delete rule's)

    # ----- derived values -------------------------------------------------------------------
    @property
    def block_size(self) -> int:
        """Positions per block (gen_length when there is one block)."""
        return self.block_length or self.gen_length

    @property
    def num_blocks(self) -> int:
        return self.gen_length // self.block_length if self.block_length else 1

    @property
    def initial_k(self) -> int:
        return self.top_k if self.top_k is not None else max(1, self.gen_length // 4)

    @property
    def revision_adds_steps(self) -> bool:
        """Whether the revision rule may take steps beyond the schedule's plan (WINO's re-drafts,
        joint_threshold's edit-only steps, remdm's loop), so the step count is known only afterwards."""
        return rules.REVISIONS[self.revise].adds_steps(self)

    @property
    def total_steps(self) -> int:
        """The step budget of the step-counted schedules (fixed_steps, linear_time): `steps`, else half
        of each block's positions (at least 1) over every block. The other schedules ignore it."""
        if self.steps is not None:
            return self.steps
        return self.num_blocks * max(1, self.block_size // 2)

    # ----- construction helpers -------------------------------------------------------------
    @classmethod
    def describe(cls) -> str:
        """Every field: its default, its meaning, and the plug-ins that read it."""
        return describe()

    @classmethod
    def preset(cls, name: str, gen_length: int = 64, **overrides: Any) -> DecodeConfig:
        """A config from the article's tuning table (PRESETS) or a reference implementation's own
        rule (SHIPPED_PRESETS, REVISION_PRESETS, and a canvas's: CANVAS_PRESETS); `overrides` replace any field."""
        shipped = {**SHIPPED_PRESETS, **REVISION_PRESETS, **CANVAS_PRESETS}
        if name not in PRESETS and name not in shipped:
            raise bad("preset", name, "one of " + " | ".join([*PRESETS, *shipped]))
        check_int("gen_length", gen_length, 0)
        if name in shipped:
            base = {"gen_length": gen_length, **shipped[name].fields(gen_length)}
        else:
            p = PRESETS[name]
            base = dict(
                gen_length=gen_length,
                schedule="topk_decay",
                top_k=max(1, gen_length // p.top_k_divisor),
                decay=p.decay,
                temperature=p.temperature,
            )
        base.update(overrides)
        return cls.from_dict(base)

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        return _init_names(cls)

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> DecodeConfig:
        """Build from a plain mapping (JSON, UI); an unknown key raises ValueError naming it."""
        if not isinstance(values, dict):
            raise bad("config", values, "a mapping of DecodeConfig field names to values")
        known = set(cls.field_names())
        for key in values:
            if key not in known:
                raise bad(key, values[key], "no such field; known fields: " + ", ".join(sorted(known)))
        values = dict(values)
        if isinstance(values.get("temperature_stages"), list):
            values["temperature_stages"] = tuple(values["temperature_stages"])
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        out = {name: getattr(self, name) for name in self.field_names()}
        if out["temperature_stages"] is not None:
            out["temperature_stages"] = list(out["temperature_stages"])
        return out

    def replace(self, **changes: Any) -> DecodeConfig:
        """A copy with `changes` applied (validated again)."""
        return self.from_dict({**self.to_dict(), **changes})


@lru_cache(maxsize=None)
def _init_names(cls: type) -> tuple[str, ...]:
    """The fields `cls(...)` takes, in order, read once per class (every `from_dict`, `to_dict` and `replace` asks)."""
    return tuple(f.name for f in dataclasses.fields(cls) if f.init)
