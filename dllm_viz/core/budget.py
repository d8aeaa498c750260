"""How much a request asks of the model, checked before anything is allocated for it.

A config is valid on its own (`DecodeConfig` checks each knob against its spec) and can still ask
for more than a model or a server can give: a canvas longer than the model's context, or, through a
revision rule's step budgets, hundreds of thousands of steps. `bound_work(config, prompt_length=...,
max_length=...)` is the one check of that, and every entry point calls it first, before a buffer, a
list or a schedule simulation is sized by the request: `decode`, `Engine.submit`, `renoise_decode`,
the CLI (through `decode`) and the playground's events, links and API (`Budget.check`).

A request's work is counted in positions computed: the width of each forward times the most forwards
it may take. A masked canvas computes its whole row (prompt + gen_length) at each of at most
`revision.max_steps` steps (the schedule's plan and what its revision rule may add); a renoising
request computes one canvas of `canvas_length` at each of at most `max_denoising_steps` steps per
canvas, over `ceil(max_new_tokens / canvas_length)` canvases. A server sets `max_cells` to refuse a
request that would hold the model for minutes; the library leaves it unbounded (a caller of `decode`
pays for their own steps).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from dllm_viz.core import rules
from dllm_viz.core.config import DecodeConfig, short
from dllm_viz.core.knobs import MAX_BUDGET
from dllm_viz.core.renoise import RenoiseSettings
from dllm_viz.core.revision import max_steps
from dllm_viz.core.trace_schema import MAX_GEN_LENGTH, MAX_PROMPT_LENGTH


@dataclass(frozen=True)
class Work:
    """What one request asks of the model, at most."""

    positions: int  # prompt + generated positions: the longest context its forwards read
    steps: int  # the most forwards it may take
    width: int | None = None  # positions each forward computes, when fewer than `positions` (a renoising canvas)

    @property
    def cells(self) -> int:
        """Positions computed over the whole decode, at most: steps x the width of a forward."""
        return self.steps * (self.positions if self.width is None else self.width)


def bound_work(config: DecodeConfig | RenoiseSettings, *, prompt_length: int | None = 0, max_length: int | None = None,
               max_cells: int | None = None) -> Work:
    """The work `config` asks for after a prompt of `prompt_length` tokens, or ValueError naming the bound.
    `prompt_length` None: the prompt is not tokenized yet (a check before the request is made), counted as none,
    and a refusal says the prompt's tokens come on top.

    `config`: a `DecodeConfig` (a masked canvas) or a `RenoiseSettings` whose canvas length is known
    (`renoise_decoder.resolve`). `max_length`: the model's context (prompt + generated positions);
    None when the model states none, and then the trace format's bounds (MAX_GEN_LENGTH generated
    positions, MAX_PROMPT_LENGTH prompt tokens). `max_cells`: the most positions computed one
    request may ask for (a server's bound; None: any).
    """
    known, prompt_length = prompt_length is not None, prompt_length or 0
    if isinstance(config, RenoiseSettings):
        work, generated, knobs = _renoise_work(config, prompt_length)
    elif isinstance(config, DecodeConfig):
        work = Work(positions=prompt_length + config.gen_length, steps=max_steps(config))
        generated, knobs = config.gen_length, _step_knobs(config)
    else:
        raise ValueError(f"config={short(config)} is invalid: expected a DecodeConfig or RenoiseSettings")
    renoise = isinstance(config, RenoiseSettings)
    name = "whole canvases" if renoise else "gen_length"
    note = f" ({knobs})" if renoise else ""
    if max_length is None:
        if generated > MAX_GEN_LENGTH:
            raise ValueError(f"{name}={generated} is invalid: expected at most {MAX_GEN_LENGTH} (the model states "
                             f"no max_length: the trace format's bound){note}")
        if prompt_length > MAX_PROMPT_LENGTH:
            raise ValueError(f"prompt length={prompt_length} is invalid: expected at most {MAX_PROMPT_LENGTH} tokens")
    elif work.positions > max_length:
        asked = f"prompt length + {name} = {prompt_length} + {generated} = {work.positions}" if known else \
            f"{name} = {generated}"
        raise ValueError(f"{asked} is invalid: expected at most the model's max_length={max_length}"
                         f"{'' if known else ', less the prompt tokens'}{note}")
    if max_cells is not None and work.cells > max_cells:
        per = f"{work.width if work.width is not None else work.positions} positions"
        raise ValueError(f"config asks for up to {work.steps} steps x {per} = {work.cells} positions computed: "
                         f"this server runs at most {max_cells} per request; expected fewer steps or positions "
                         f"({knobs})")
    return work


def _renoise_work(settings: RenoiseSettings, prompt_length: int) -> tuple[Work, int, str]:
    """A renoising request's work: whole canvases (generate() keeps them), each up to N steps wide L."""
    L = settings.canvas_length
    if L is None:
        raise ValueError("canvas_length=None is invalid here: expected the resolved canvas length "
                         "(core.renoise_decoder.resolve fills the checkpoint's)")
    canvases = math.ceil(settings.max_new_tokens / L)
    work = Work(positions=prompt_length + canvases * L, steps=canvases * settings.max_denoising_steps, width=L)
    knobs = (f"max_new_tokens={settings.max_new_tokens}, canvas_length={L}, "
             f"max_denoising_steps={settings.max_denoising_steps}; a DecodeConfig's gen_length is max_new_tokens")
    return work, canvases * L, knobs


def _step_knobs(config: DecodeConfig) -> str:
    """The knobs that set a request's step count, named in the message that refuses it: the canvas, its
    blocks, and the step budgets (int knobs bounded by MAX_BUDGET) of the rules it chooses that add
    steps (`extra_steps`)."""
    names = ["gen_length"] + (["block_length"] if config.num_blocks > 1 else [])
    for plugin in rules.chosen(config):
        extra = getattr(plugin, "extra_steps", None)
        if extra is not None and extra(config) > 0:
            names += [n for n in plugin.knob_names if rules.KNOB[n].kind == "int" and rules.KNOB[n].hi == MAX_BUDGET
                      and n not in names]
    return ", ".join(f"{name}={getattr(config, name)}" for name in names)


@dataclass(frozen=True)
class Budget:
    """The bounds a served model checks requests against: `bound_work` with them fixed."""

    max_length: int | None = None  # the model's context; None: the trace format's bounds
    max_cells: int | None = None  # positions computed per request; None: any
    # A DecodeConfig as the model reads it, checked against what it can do (ValueError naming the knob): a
    # renoising model's `RenoiseSettings` (`renoise_batch.renoise_settings`), a masked model's config after
    # `batch.check_config`. None: a masked canvas, the config as it stands.
    resolve: Callable[[DecodeConfig], DecodeConfig | RenoiseSettings] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        for name in ("max_length", "max_cells"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
                raise ValueError(f"{name}={short(value)} is invalid: expected None or an integer >= 1")

    def check(self, config: DecodeConfig | RenoiseSettings, prompt_length: int | None = None) -> Work:
        """`bound_work` of `config` within these bounds (the prompt's tokens, when known, count; None: not yet
        tokenized), as the model reads it (`resolve`)."""
        if self.resolve is not None and isinstance(config, DecodeConfig):
            config = self.resolve(config)
        return bound_work(config, prompt_length=prompt_length, max_length=self.max_length, max_cells=self.max_cells)
