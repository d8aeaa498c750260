"""A grid over temperature x initial top_k (x decay), several seeds and prompts, as ONE batched decode.

This regenerates the article's tuning table (section 4.2) from measurement: every cell is decoded
for every (seed, prompt), the requests go to the runner in calls of at most `SWEEP_CHUNK` (the
decoder batches each call and lets each request leave when done), and each call's traces are
reduced to their metrics at once, so a sweep holds metrics, never a thousand traces.

Bounds: a grid is at most `MAX_SWEEP_REQUESTS` requests, checked from the axis lengths before any
config is built (a 20,000-line prompt box once meant 19 million configs); the page's widgets
(6 temperatures x 5 divisors x 4 decays x 8 seeds) on two prompts are exactly that many.
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import product
from typing import Any

from dllm_viz.core.config import DecodeConfig, short
from dllm_viz.core.decoder import Runner
from dllm_viz.core.schedules import planned_steps
from dllm_viz.core.trace import StepRecord, Trace

# Metrics of the sweep, as named in `Trace.metrics`; the flag says whether lower is better.
METRICS: dict[str, bool] = {"nfe": True, "repeat_3": True, "distinct_2": False, "mean_logprob": False}
MAX_SWEEP_SEEDS = 8  # seeds per cell (the page's slider goes this far)
MAX_SWEEP_REQUESTS = 1920  # requests in one grid: every box of the page ticked (120 cells) x 8 seeds x 2 prompts
SWEEP_CHUNK = 128  # requests per call to the runner: what one sweep holds in the engine's queue at a time
AXES = ("temperatures", "divisors", "decays", "seeds", "prompts")


def check_grid_size(**lengths: int) -> int:
    """The number of requests of a grid with these axis lengths (names in AXES); ValueError naming
    the limit when it exceeds MAX_SWEEP_REQUESTS. Cheap: call it before building any axis or config."""
    total = math.prod(lengths[name] for name in AXES)
    if total > MAX_SWEEP_REQUESTS:
        sizes = " x ".join(f"{lengths[name]} {name}" for name in AXES)
        raise ValueError(f"sweep grid of {sizes} = {total} requests is invalid: expected at most "
                         f"MAX_SWEEP_REQUESTS={MAX_SWEEP_REQUESTS} (untick some values, or use fewer seeds or prompts)")
    return total


@dataclass(frozen=True, kw_only=True)
class SweepGrid:
    """The cells (temperature x top_k divisor x decay) and the runs per cell (seeds x prompts)."""

    temperatures: tuple[float, ...]  # sampling temperatures (rows)
    divisors: tuple[int, ...]  # initial top_k = max(1, gen_length // d) (columns)
    decays: tuple[float, ...]  # one table per decay
    seeds: tuple[int, ...]  # each cell runs every seed ...
    prompts: tuple[str, ...]  # ... on every prompt
    gen_length: int = 64
    base: DecodeConfig = field(default_factory=DecodeConfig)  # other knobs (min_k, confidence, ...)

    def __post_init__(self) -> None:
        for name in AXES:
            values = getattr(self, name)
            if not isinstance(values, (tuple, list)):
                raise ValueError(f"{name}={short(values)} is invalid: expected a tuple of values")
            if not values:
                raise ValueError(f"{name}={values!r} is invalid: expected at least one value")
        check_grid_size(**{name: len(getattr(self, name)) for name in AXES})  # before any config is built
        for name in AXES:
            object.__setattr__(self, name, tuple(getattr(self, name)))
        for d in self.divisors:
            if isinstance(d, bool) or not isinstance(d, int) or d < 1:
                raise ValueError(f"divisors: {d!r} is invalid: expected an integer >= 1")
        for seed in self.seeds:  # DecodeConfig validates temperatures, decays, gen_length and seeds
            self.config(self.temperatures[0], self.divisors[0], self.decays[0], seed)
        self.cell_configs(self.seeds[0])

    @property
    def cells(self) -> list[tuple[float, int, float]]:
        """(temperature, divisor, decay) for every cell, decay outermost."""
        return [(temp, d, decay) for decay, temp, d in product(self.decays, self.temperatures, self.divisors)]

    def config(self, temperature: float, divisor: int, decay: float, seed: int) -> DecodeConfig:
        return self.base.replace(
            gen_length=self.gen_length, schedule="topk_decay", temperature=temperature,
            top_k=max(1, self.gen_length // divisor), decay=decay, seed=seed, temperature_stages=None,
        )

    def cell_configs(self, seed: int) -> list[DecodeConfig]:
        return [self.config(temp, d, decay, seed) for temp, d, decay in self.cells]

    def requests(self) -> tuple[list[str], list[DecodeConfig], list[int]]:
        """Prompts, configs and the cell index of every request."""
        prompts, configs, cell_of = [], [], []
        for c, (temp, d, decay) in enumerate(self.cells):
            for seed, prompt in product(self.seeds, self.prompts):
                prompts.append(prompt)
                configs.append(self.config(temp, d, decay, seed))
                cell_of.append(c)
        return prompts, configs, cell_of

    @property
    def size(self) -> int:
        return len(self.cells) * len(self.seeds) * len(self.prompts)


@dataclass
class SweepResult:
    grid: SweepGrid
    rows: list[dict[str, Any]]  # one per cell: temperature, divisor, top_k, decay, runs, metric and check means
    wall_time: float  # seconds for the decodes (every call to the runner)
    model: str = ""  # the model the traces name (the one on show when the sweep ran)
    checks: tuple[str, ...] = ()  # checker columns of a checkable model (`score`'s names), after the metrics

    def table(self, metric: str) -> dict[float, list[list[float]]]:
        """`{decay: [[value at (temperature i, divisor j)]]}` for a heatmap."""
        if metric not in METRICS:
            raise ValueError(f"metric={metric!r} is invalid: expected one of {' | '.join(METRICS)}")
        g = self.grid
        index = {(r["temperature"], r["divisor"], r["decay"]): r[metric] for r in self.rows}
        return {
            decay: [[index[(temp, d, decay)] for d in g.divisors] for temp in g.temperatures]
            for decay in g.decays
        }


def total_steps(configs: Sequence[DecodeConfig]) -> int:
    """Steps the batch will run in all (planned where known, else gen_length as an upper bound)."""
    return sum(n if (n := planned_steps(c)) is not None else c.gen_length for c in configs)


def run_sweep(
    run: Runner, grid: SweepGrid, *, on_step: Callable[[int, StepRecord], None] | None = None,
    chunk: int = SWEEP_CHUNK, score: Callable[[Trace], dict[str, float]] | None = None,
) -> SweepResult:
    """Decode the grid in calls of at most `chunk` requests to `run`, then average each cell's metrics.

    `on_step(i, record)` numbers requests across the whole grid (`i` indexes `grid.requests()`).
    Each call's traces are reduced to their metrics before the next call, so memory does not grow
    with the grid, and a shared engine's queue holds at most `chunk` of this sweep's requests.
    `score(trace)` adds a checkable model's columns (a share per run: valid sentences, a right
    answer), averaged per cell like the metrics; a trace it cannot judge adds nothing.
    """
    if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1:
        raise ValueError(f"chunk={short(chunk)} is invalid: expected an integer >= 1")
    prompts, configs, cell_of = grid.requests()
    per_cell: list[list[dict[str, float]]] = [[] for _ in grid.cells]
    checked: list[list[dict[str, float]]] = [[] for _ in grid.cells]
    model = ""
    start = time.perf_counter()
    for lo in range(0, len(configs), chunk):
        hi = min(len(configs), lo + chunk)
        hook = None if on_step is None else (lambda i, rec, lo=lo: on_step(lo + i, rec))
        traces: list[Trace] = run(prompts[lo:hi], configs[lo:hi], on_step=hook, record_candidates=0)  # no candidates
        if len(traces) != hi - lo:
            raise RuntimeError(f"runner returned {len(traces)} traces for {hi - lo} requests")
        for c, trace in zip(cell_of[lo:hi], traces):
            per_cell[c].append({name: trace.metrics[name] for name in METRICS})
            checked[c].append(score(trace) if score is not None else {})
            model = model or trace.model
        del traces
    wall = time.perf_counter() - start
    checks = tuple(dict.fromkeys(name for cell in checked for scores in cell for name in scores))
    rows = []
    for (temp, d, decay), metrics, scores in zip(grid.cells, per_cell, checked):
        row: dict[str, Any] = {
            "temperature": temp, "divisor": d, "top_k": max(1, grid.gen_length // d), "decay": decay,
            "runs": len(metrics),
        }
        for name in METRICS:
            row[name] = round(math.fsum(m[name] for m in metrics) / len(metrics), 4)
        for name in checks:
            values = [x[name] for x in scores if name in x]
            row[name] = round(math.fsum(values) / len(values), 4) if values else None
        rows.append(row)
    return SweepResult(grid=grid, rows=rows, wall_time=wall, model=model, checks=checks)
