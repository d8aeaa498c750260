"""A grid over temperature x initial top_k (x decay), several seeds and prompts, as ONE batched decode.

This regenerates the article's tuning table (section 4.2) from measurement: every cell is decoded
for every (seed, prompt), all requests go to the runner in a single call (the decoder batches them
and lets each leave when done), and the traces are reduced to one table per metric.
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import product
from typing import Any

from dllm_viz.core.config import DecodeConfig
from dllm_viz.core.decoder import Runner
from dllm_viz.core.schedules import planned_steps
from dllm_viz.core.trace import StepRecord, Trace

# Metrics of the sweep, as named in `Trace.metrics`; the flag says whether lower is better.
METRICS: dict[str, bool] = {"nfe": True, "repeat_3": True, "distinct_2": False, "mean_logprob": False}


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
        for name in ("temperatures", "divisors", "decays", "seeds", "prompts"):
            values = tuple(getattr(self, name))
            if not values:
                raise ValueError(f"{name}={values!r} is invalid: expected at least one value")
            object.__setattr__(self, name, values)
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
    rows: list[dict[str, Any]]  # one per cell: temperature, divisor, top_k, decay, runs, metric means
    wall_time: float  # seconds for the single batched decode

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
    run: Runner, grid: SweepGrid, *, on_step: Callable[[int, StepRecord], None] | None = None
) -> SweepResult:
    """Decode the whole grid in ONE call to `run`, then average each cell's metrics."""
    prompts, configs, cell_of = grid.requests()
    start = time.perf_counter()
    traces = run(prompts, configs, on_step=on_step, record_candidates=0)  # candidates unused here
    wall = time.perf_counter() - start
    if len(traces) != len(configs):
        raise RuntimeError(f"runner returned {len(traces)} traces for {len(configs)} requests")
    per_cell: list[list[Trace]] = [[] for _ in grid.cells]
    for c, trace in zip(cell_of, traces):
        per_cell[c].append(trace)
    rows = []
    for (temp, d, decay), group in zip(grid.cells, per_cell):
        metrics = [tr.metrics for tr in group]
        row: dict[str, Any] = {
            "temperature": temp, "divisor": d, "top_k": max(1, grid.gen_length // d), "decay": decay,
            "runs": len(group),
        }
        for name in METRICS:
            row[name] = round(math.fsum(m[name] for m in metrics) / len(metrics), 4)
        rows.append(row)
    return SweepResult(grid=grid, rows=rows, wall_time=wall)
