"""The rule plug-ins: every module of this package that defines `RULE = ...` is registered; no list to keep.

A schedule (`RULE = Schedule(...)`, chosen by `DecodeConfig.schedule`) sets how many masks a step
confirms; a revision rule (`RULE = Revision(...)`, chosen by `DecodeConfig.revise`) what a step may take
back or rewrite; an insert/delete rule (`RULE = InDel(...)`, chosen by `DecodeConfig.indel`) a step whose
positions move (DELETE and SPLIT); a canvas (`RULE = Canvas(...)`, chosen by the model, `canvas_of`) is a kind
of canvas other than the masked one, with its own loop and knobs (the renoise canvas). Each declares its knobs,
what it reads, what it may do to a block, the canvases it
applies to, its citation and a runnable example (`core.rules.base`; docs/rules.md shows how to write
one). From them this module derives the knob table (`KNOBS`: the step's own knobs of `core.knobs.CORE`,
each plug-in kind's knobs after the knob that chooses it, the canvases' knobs last), which knobs each config reads
(`reads`) and the shipped presets the plug-ins bring (`PRESETS`); `DecodeConfig`, the CLI, the serving policy and the
page read them here.
"""
from __future__ import annotations

import dataclasses
import importlib
import pkgutil
from functools import lru_cache
from types import ModuleType
from typing import Any

from dllm_viz.core.knobs import CORE, Knob, short
from dllm_viz.core.rules.base import CANVASES, Canvas, InDel, Plugin, Revision, Schedule, ShippedPreset
from dllm_viz.models.renoiser import is_renoiser

# the knob that chooses -> plug-in type; "canvas" is chosen by the model, not by a knob
KINDS: dict[str, type[Plugin]] = {"schedule": Schedule, "revise": Revision, "indel": InDel, "canvas": Canvas}
MODULES: dict[str, ModuleType] = {}  # plug-in module name -> the module (its docstring holds its example)


def _discover() -> dict[str, dict[str, Plugin]]:
    found: dict[str, list[Plugin]] = {kind: [] for kind in KINDS}
    for info in pkgutil.iter_modules(__path__):
        if info.name == "base" or info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        rule = getattr(module, "RULE", None)
        if rule is None:
            continue
        kind = next((k for k, cls in KINDS.items() if isinstance(rule, cls)), None)
        if kind is None:
            raise ImportError(f"{module.__name__}.RULE is a {type(rule).__name__}: expected one of "
                              + " | ".join(cls.__name__ for cls in KINDS.values()))
        if any(p.name == rule.name for p in found[kind]):
            raise ImportError(f"two {kind} plug-ins are named {rule.name!r} ({module.__name__})")
        if set(rule.canvases) - set(CANVASES):
            raise ImportError(f"{rule.name}: canvases {rule.canvases} are not all in {CANVASES}")
        if kind == "canvas" and (rule.name not in CANVASES or rule.canvases != (rule.name,)):
            raise ImportError(f"canvas plug-in {rule.name!r}: expected a name in {CANVASES} and "
                              f"canvases=({rule.name!r},)")
        found[kind].append(rule)
        MODULES[info.name] = module
    return {kind: {p.name: p for p in sorted(rules, key=lambda p: (p.order, p.name))} for kind, rules in found.items()}


PLUGINS = _discover()
SCHEDULES: dict[str, Schedule] = PLUGINS["schedule"]  # type: ignore[assignment]
REVISIONS: dict[str, Revision] = PLUGINS["revise"]  # type: ignore[assignment]
INDELS: dict[str, InDel] = PLUGINS["indel"]  # type: ignore[assignment]
CANVAS_RULES: dict[str, Canvas] = PLUGINS["canvas"]  # type: ignore[assignment]  # canvas kind -> its plug-in


def _table() -> tuple[Knob, ...]:
    """The whole knob table, in DecodeConfig's order."""
    owned: dict[str, Knob] = {}
    for kind in PLUGINS.values():
        for plugin in kind.values():
            for knob in plugin.owned:
                if knob.name in owned or any(k.name == knob.name for k in CORE):
                    raise ImportError(f"knob {knob.name!r} of {plugin.name!r} is declared twice")
                owned[knob.name] = knob
    out: list[Knob] = []
    for knob in CORE:
        if knob.plugins is None:
            out.append(knob)
            continue
        out.append(dataclasses.replace(knob, choices=tuple(PLUGINS[knob.plugins])))
        out.extend(k for plugin in PLUGINS[knob.plugins].values() for k in plugin.owned)
    out.extend(k for plugin in PLUGINS["canvas"].values() for k in plugin.owned)  # no knob chooses them: last
    for kind in PLUGINS.values():
        for plugin in kind.values():
            missing = [name for name in plugin.knob_names if name not in owned]
            if missing:
                raise ImportError(f"{plugin.name!r} reads knobs {missing} that no plug-in declares")
    return tuple(out)


KNOBS: tuple[Knob, ...] = _table()
KNOB: dict[str, Knob] = {k.name: k for k in KNOBS}
CHOOSERS: dict[str, str] = {k.name: k.plugins for k in CORE if k.plugins}  # knob -> the kind it chooses
OWNER: dict[str, Plugin] = {k.name: p for kind in PLUGINS.values() for p in kind.values() for k in p.owned}
# The presets the plug-ins bring ("as shipped": `core.config.REVISION_PRESETS` holds them).
PRESETS: dict[str, ShippedPreset] = {name: preset for kind in PLUGINS.values() for p in kind.values()
                                     for name, preset in p.presets.items()}
CANVAS_PRESETS: dict[str, ShippedPreset] = {name: preset for p in CANVAS_RULES.values()
                                            for name, preset in p.presets.items()}


def plugin(kind: str, name: str) -> Plugin:
    """The plug-in `name` of `kind` ("schedule" or "revise")."""
    return PLUGINS[kind][name]


def chosen(config: Any) -> tuple[Plugin, ...]:
    """The plug-ins `config` chooses, one per kind."""
    return tuple(PLUGINS[kind][getattr(config, knob)] for knob, kind in CHOOSERS.items())


@lru_cache(maxsize=None)
def _reads(names: tuple[str, ...]) -> frozenset[str]:
    return frozenset(k for kind, name in zip(CHOOSERS.values(), names) for k in PLUGINS[kind][name].knob_names)


def reads(config: Any) -> frozenset[str]:
    """The plug-in knobs `config` reads: those of its schedule and of its revision rule."""
    return _reads(tuple(getattr(config, knob) for knob in CHOOSERS))


def readers(knob: str) -> tuple[Plugin, ...]:
    """The plug-ins that read `knob` (empty for the step's own knobs)."""
    return tuple(p for kind in PLUGINS.values() for p in kind.values() if knob in p.knob_names)


def check_requires(config: Any) -> None:
    """ValueError naming what a rule `config` chooses needs of its other knobs (`Plugin.requires`)."""
    for knob, kind in CHOOSERS.items():
        p = PLUGINS[kind][getattr(config, knob)]
        allowed = p.requires(config) if p.requires is not None else None
        if allowed is not None:
            raise ValueError(f"{knob}={p.name!r} is invalid with these settings: expected {allowed}")


def canvas_of(model: Any) -> str:
    """The kind of canvas `model` writes: "renoise" for a renoising model (`models.renoiser`), else its
    optional `canvas_kind` attribute, "masked" by default."""
    return "renoise" if is_renoiser(model) else getattr(model, "canvas_kind", "masked")


def applies(knob: str) -> tuple[str, ...]:
    """The canvas kinds `knob` applies to: its plug-in's, or (a step's own knob) its spec's."""
    owner = OWNER.get(knob)
    return owner.canvases if owner is not None else KNOB[knob].canvases


MASKED_READS = "the masked canvas's schedules, revision rules and their knobs"  # what a masked canvas reads, in errors


def _knobs_of(canvas: str) -> str:
    """What a canvas reads, said in an error: a canvas plug-in's short list of knobs, or the masked rules."""
    if canvas not in CANVAS_RULES:
        return MASKED_READS
    return ", ".join(k.name for k in KNOBS if canvas in applies(k.name) and k.name not in CHOOSERS)


def check_canvas(config: Any, canvas: str, model: str = "the model") -> None:
    """ValueError when `config` sets something that does not apply to a `canvas` of that kind, named: a rule it
    chooses (a chooser left at its default chooses nothing on a canvas that is not masked), or a knob of another
    canvas set to anything but its default (a renoise knob on a masked model, temperature on a renoise model)."""
    for knob, kind in CHOOSERS.items():
        p = PLUGINS[kind][getattr(config, knob)]
        if canvas in p.canvases or (canvas != "masked" and p.name == KNOB[knob].default):
            continue
        fits = [n for n, q in PLUGINS[kind].items() if canvas in q.canvases]
        allowed = (f"{knob} in {' | '.join(fits)}" if fits else
                   f"{knob}={KNOB[knob].default!r} (the default): no {kind} plug-in applies to it; its knobs are "
                   + _knobs_of(canvas))
        raise ValueError(f"{knob}={p.name!r} is invalid for {model}, whose canvas is {canvas!r}: the rule applies "
                         f"to {' | '.join(p.canvases)} canvases only; expected {allowed}")
    for k in KNOBS:
        if k.name in CHOOSERS or canvas in applies(k.name):
            continue
        value = getattr(config, k.name)
        if value != k.default:
            raise ValueError(f"{k.name}={short(value)} is invalid for {model}, whose canvas is {canvas!r}: the knob "
                             f"applies to {' | '.join(applies(k.name))} canvases only; expected its default "
                             f"{k.default!r} (a {canvas} canvas reads {_knobs_of(canvas)})")
