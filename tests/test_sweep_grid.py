"""app/handlers/sweep_grid.py: the grid is one batched decode and each cell averages its own runs."""
from __future__ import annotations

import pytest

from dllm_viz import DecodeConfig, decode
from dllm_viz.app.handlers.sweep_grid import (
    MAX_SWEEP_REQUESTS, METRICS, SweepGrid, check_grid_size, run_sweep, total_steps,
)
from tests.ui_model import make_text_model


class Runner:
    def __init__(self):
        self.model, self.calls = make_text_model(), []

    def __call__(self, prompts, configs, *, on_step=None, record_candidates=5):
        self.calls.append(len(prompts))
        return decode(self.model, prompts, configs, on_step=on_step, record_candidates=record_candidates)


def grid(**kw):
    base = dict(temperatures=(0.5, 1.0), divisors=(4, 2), decays=(0.9,), seeds=(0, 1), prompts=("a ", "the "),
                gen_length=16)
    return SweepGrid(**base | kw)


def test_the_grid_goes_to_run_in_chunks_with_the_same_result():
    run = Runner()
    result = run_sweep(run, grid())
    assert run.calls == [2 * 2 * 1 * 2 * 2]  # 16 requests: one call
    assert len(result.rows) == 4 and all(r["runs"] == 4 for r in result.rows)
    steps: list[int] = []
    chunked = run_sweep(run, grid(), chunk=5, on_step=lambda i, rec: steps.append(i))
    assert run.calls[1:] == [5, 5, 5, 1]  # a shared engine's queue holds at most `chunk` of them
    assert chunked.rows == result.rows
    assert sorted(set(steps)) == list(range(16))  # on_step numbers requests across the whole grid
    with pytest.raises(ValueError, match="chunk=0"):
        run_sweep(run, grid(), chunk=0)


def test_grid_size_is_refused_naming_the_limit_before_any_config_is_built(monkeypatch):
    """A 20,000-line prompt box once meant 19 million DecodeConfigs built before the engine refused."""
    def built(*args, **kwargs):
        raise AssertionError("a config was built for a grid over the limit")

    monkeypatch.setattr(SweepGrid, "config", built)
    lines = tuple(f"prompt {i} " for i in range(20_000))
    with pytest.raises(ValueError, match=rf"20000 prompts = 2400000 requests is invalid: "
                                         rf"expected at most MAX_SWEEP_REQUESTS={MAX_SWEEP_REQUESTS}"):
        grid(temperatures=(0.3, 0.6, 0.9, 1.2, 1.5, 2.0), divisors=(8, 6, 4, 3, 2), decays=(0.9, 1.0), prompts=lines)
    assert check_grid_size(temperatures=6, divisors=5, decays=4, seeds=8, prompts=2) == MAX_SWEEP_REQUESTS
    with pytest.raises(ValueError, match="MAX_SWEEP_REQUESTS"):
        check_grid_size(temperatures=6, divisors=5, decays=4, seeds=8, prompts=3)


def test_a_cell_is_the_mean_of_its_own_runs():
    run = Runner()
    g = grid()
    result = run_sweep(run, g)
    prompts, configs, cell_of = g.requests()
    traces = decode(run.model, prompts, configs, record_candidates=0)
    for c, row in enumerate(result.rows):
        nfe = [tr.metrics["nfe"] for tr, cc in zip(traces, cell_of) if cc == c]
        assert row["nfe"] == pytest.approx(sum(nfe) / len(nfe), abs=1e-4)
    table = result.table("nfe")
    assert table[0.9][0] == [r["nfe"] for r in result.rows[:2]]
    with pytest.raises(ValueError, match="metric='nope'"):
        result.table("nope")


def test_empty_axes_and_bad_divisors_name_the_field():
    with pytest.raises(ValueError, match="temperatures"):
        grid(temperatures=())
    with pytest.raises(ValueError, match="divisors"):
        grid(divisors=(0,))


def test_total_steps_counts_planned_steps_or_an_upper_bound():
    cfgs = [DecodeConfig.preset("balanced", 16), DecodeConfig(gen_length=16, schedule="threshold")]
    assert total_steps(cfgs) == len(decode(make_text_model(), ["a "], cfgs[0])[0].steps) + 16
    assert set(METRICS) == {"nfe", "repeat_3", "distinct_2", "mean_logprob"}
