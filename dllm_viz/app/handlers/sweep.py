"""The Sweep tab's handlers: the grid's widgets to a `sweep.SweepGrid`, one batched decode with a
progress bar, and one heatmap per metric on fixed colour ranges."""
from __future__ import annotations

import concurrent.futures
import itertools
from collections.abc import Callable
from typing import Any

from dllm_viz.app.views import figures, task as task_view, world as world_view
from dllm_viz.app.handlers.adapters import integral
from dllm_viz.app.strings import t
from dllm_viz.app.handlers.outputs import SweepShown, keep
from dllm_viz.app.handlers.asking import Ticket, asking
from dllm_viz.app.handlers.seats import Seats
from dllm_viz.app.handlers.sweep_grid import (
    MAX_SWEEP_SEEDS,
    METRICS,
    SweepGrid,
    SweepResult,
    check_grid_size,
    run_sweep,
    total_steps,
)
from dllm_viz.core.budget import Budget
from dllm_viz.core.config import short
from dllm_viz.core.decoder import Runner
from dllm_viz.core.trace import Trace

PROGRESS_EVERY = 0.25  # seconds between progress-bar updates during a sweep
# Colour range per sweep metric, fixed so that small differences look small: (low, high) or a
# function of gen_length for the step count.
SWEEP_RANGES: dict[str, Callable[[int], tuple[float, float]]] = {
    "nfe": lambda g: (1.0, float(max(2, g))), "repeat_3": lambda g: (0.0, 0.5),
    "distinct_2": lambda g: (0.5, 1.0), "mean_logprob": lambda g: (-10.0, 0.0),
}
TABLE_COLUMNS = ("temperature", "top_k", "decay", "runs")  # the table's columns before the metrics


def _number(name: str, value: Any) -> float:
    """A ticked temperature or decay (the grid's configs check its range)."""
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{name}: {short(value)} is invalid: expected a number") from None


def _divisor(value: Any) -> int:
    """A ticked top_k box, "L/4", as its divisor 4."""
    text = str(value).removeprefix("L/")
    if not text.isdigit() or len(text) > 4:
        raise ValueError(f"sweep_topk: {short(value)} is invalid: expected L/d with d one of the boxes")
    return int(text)


def checked_scores(trace: Trace) -> dict[str, float]:
    """A checkable model's columns for one run: the share of its complete sentences the world checker
    accepts, or whether a task prompt's answer is right; nothing for a model no checker reads."""
    if world_view.is_checked(trace):
        v = world_view.verdict(trace)
        return {"valid_sentences": v.valid_sentences / v.sentences if v.sentences else 0.0}
    v = task_view.verdict(trace)
    return {} if v is None else {"right_answers": float(v.ok)}


class SweepHandlers:
    """The Sweep tab's events; `runner_for(model_pick)` decodes with the model on show, within
    `budget_for(model_pick)`."""

    def __init__(self, runner_for: Callable[[str | None], Runner], *,
                 budget_for: Callable[[str | None], Budget] = lambda pick: Budget(),
                 canvas_for: Callable[[str | None], str] = lambda pick: "masked",
                 seats: Seats | None = None) -> None:
        self.runner_for = runner_for
        self.budget_for = budget_for
        self.canvas_for = canvas_for  # the canvas the picked model writes: the grid's knobs are the masked canvas's
        self.seats = seats if seats is not None else Seats()  # a sweep holds one of the page's decode seats

    def run(self, *, sweep_temps: list[float], sweep_divisors: list[str], sweep_decays: list[float], sweep_seeds: int,
            sweep_prompts: str, sweep_gen_length: int, lang: str, model_pick: str | None = None,
            progress: Callable[..., Any] | None = None) -> SweepShown:
        """Run the grid as one batched decode of the picked model, reporting progress per batched step;
        a checkable model's runs are scored by its checker (`checked_scores`). The grid's knobs (temperature, top_k,
        decay) are the masked canvas's: on a model of another canvas the sweep is a ValueError before any decode."""
        runner = self.runner_for(model_pick)
        canvas = self.canvas_for(model_pick)
        if canvas != "masked":
            raise ValueError(f"model_pick={model_pick!r} is invalid for the Sweep: its canvas is {canvas!r}, and "
                             "the grid's knobs (temperature, top_k, decay) are the masked canvas's; expected a masked "
                             "model")
        lines = tuple(p for p in (sweep_prompts or "").splitlines() if p.strip())
        for name, values in (("sweep_temps", sweep_temps), ("sweep_topk", sweep_divisors),
                             ("sweep_decays", sweep_decays), ("sweep_prompts", lines)):
            if not values:
                raise ValueError(t("err_empty_grid", lang, v=t(name, lang)))
        seeds = integral(sweep_seeds)
        if isinstance(seeds, bool) or not isinstance(seeds, int) or not 1 <= seeds <= MAX_SWEEP_SEEDS:
            raise ValueError(f"sweep_seeds={short(seeds)} is invalid: expected an integer in [1, {MAX_SWEEP_SEEDS}]")
        # The size first, from the lengths alone: nothing is built for a grid over the limit.
        check_grid_size(temperatures=len(sweep_temps), divisors=len(sweep_divisors), decays=len(sweep_decays),
                        seeds=seeds, prompts=len(lines))
        grid = SweepGrid(
            temperatures=tuple(sorted(_number("sweep_temps", x) for x in sweep_temps)),
            divisors=tuple(sorted((_divisor(d) for d in sweep_divisors), reverse=True)),  # k grows →
            decays=tuple(sorted(_number("sweep_decays", x) for x in sweep_decays)), seeds=tuple(range(seeds)),
            prompts=lines, gen_length=integral(sweep_gen_length),
        )
        first = grid.config(grid.temperatures[0], grid.divisors[0], grid.decays[0], 0)
        self.budget_for(model_pick).check(first)  # one gen_length for the whole grid
        _, configs, _ = grid.requests()
        total = max(1, total_steps(configs))  # (each config's schedule simulated: bounded above)
        done = itertools.count(1)  # request-steps finished; next() is atomic under the GIL
        finished = [0]

        def on_step(i: int, rec: Any) -> None:  # may run in the engine's worker thread
            finished[0] = next(done)

        def sweep() -> SweepResult:  # every sweep is one client of the engine: sweeps wait for each other, not decodes
            seat = self.seats.take(None)  # counted with the page's decodes: a start waits behind it
            try:
                with asking(Ticket(client=("sweep", None))):
                    return run_sweep(runner, grid, on_step=on_step, score=checked_scores)
            finally:
                seat.release()

        if progress is None:
            return self.view(sweep(), lang=lang)
        # Gradio's progress bar can only be updated from the handler's own thread, so the decode
        # runs in a helper thread and this one reports until it finishes.
        with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="dllm-viz-sweep") as pool:
            future = pool.submit(sweep)
            while True:
                progress(min(1.0, finished[0] / total), desc=f"{finished[0]}/{total}")
                try:
                    result = future.result(timeout=PROGRESS_EVERY)
                    break
                except concurrent.futures.TimeoutError:
                    continue
        return self.view(result, lang=lang)

    def view(self, result: SweepResult | None, *, lang: str) -> SweepShown:
        """A finished sweep's heatmaps, table and summary (KEEP everywhere without one)."""
        if result is None:
            return keep(SweepShown)
        g = result.grid
        figs = {
            metric: figures.sweep_heatmap(result.table(metric), g.temperatures, g.divisors,
                                          title=t(f"m_{metric}", lang), lang=lang, reverse=lower_better,
                                          zrange=SWEEP_RANGES[metric](g.gen_length))
            for metric, lower_better in METRICS.items()
        }
        columns = [*TABLE_COLUMNS, *METRICS, *result.checks]
        headers = [t(f"m_{c}", lang) if c in METRICS else t(f"col_{c}", lang) for c in columns]
        table = {"headers": headers, "data": [[r[c] for c in columns] for r in result.rows]}
        summary = t("sweep_done", lang, n=g.size, s=result.wall_time, model=result.model)
        for name in result.checks:  # a checkable model: its checker's verdict over the whole grid
            values = [r[name] for r in result.rows if r[name] is not None]
            summary += " " + t(f"sweep_mean_{name}", lang, v=sum(values) / len(values) if values else 0.0)
        return SweepShown(sweep_state=result, sweep_nfe=figs["nfe"], sweep_repeat_3=figs["repeat_3"],
                          sweep_distinct_2=figs["distinct_2"], sweep_mean_logprob=figs["mean_logprob"],
                          sweep_table=table, sweep_summary=summary)
