"""app/handlers/sweep.py called directly (no server): the grid as one batched decode."""
from __future__ import annotations

import pytest

from dllm_viz.app.handlers.playground import Playground
from tests.ui_model import CountingRunner


@pytest.fixture()
def runner() -> CountingRunner:
    return CountingRunner()


@pytest.fixture()
def pg(runner, tmp_path) -> Playground:
    return Playground(runner, export_dir=tmp_path)


def test_sweep_is_one_batched_call_with_fixed_colour_ranges(pg, runner):
    out = pg.sweep.run(sweep_temps=[0.5, 1.0], sweep_divisors=["L/4", "L/2"], sweep_decays=[0.9], sweep_seeds=1,
                   sweep_prompts="a \nthe ", sweep_gen_length=16, lang="zh")
    assert len(runner.calls) == 1
    assert out.sweep_repeat_3.data[0].zmin == 0.0 and out.sweep_repeat_3.data[0].zmax == 0.5
    assert out.sweep_table["headers"][0] == "温度"


def test_sweep_needs_a_value_in_each_axis(pg):
    with pytest.raises(ValueError, match="temperatures"):
        pg.sweep.run(sweep_temps=[], sweep_divisors=["L/4"], sweep_decays=[0.9], sweep_seeds=1, sweep_prompts="a",
                 sweep_gen_length=8, lang="en")


@pytest.mark.parametrize("seeds,says", [(1.5, "sweep_seeds=1.5 is invalid"), (9, "sweep_seeds=9 is invalid"),
                                        (0, "sweep_seeds=0 is invalid")])
def test_sweep_seeds_are_an_integer_of_the_slider(pg, runner, seeds, says):
    with pytest.raises(ValueError, match=says):
        pg.sweep.run(sweep_temps=[0.5], sweep_divisors=["L/4"], sweep_decays=[0.9], sweep_seeds=seeds,
                     sweep_prompts="a", sweep_gen_length=8, lang="en")
    assert runner.calls == []


def test_a_grid_over_the_limit_is_refused_before_anything_is_built(pg, runner, monkeypatch):
    """20,000 prompt lines once meant 19 million configs built in the handler (10.8 GB)."""
    from dllm_viz.app.handlers.sweep_grid import SweepGrid

    monkeypatch.setattr(SweepGrid, "__init__", lambda *a, **k: pytest.fail("a grid over the limit was built"))
    with pytest.raises(ValueError, match="MAX_SWEEP_REQUESTS=1920"):
        pg.sweep.run(sweep_temps=[0.3, 0.6, 0.9, 1.2, 1.5, 2.0], sweep_divisors=["L/8", "L/6", "L/4", "L/3", "L/2"],
                     sweep_decays=[0.85, 0.9, 0.95, 1.0], sweep_seeds=8,
                     sweep_prompts="\n".join(f"prompt {i}" for i in range(20_000)), sweep_gen_length=8, lang="en")
    with pytest.raises(ValueError, match="sweep_topk: 'L/x' is invalid"):
        pg.sweep.run(sweep_temps=[0.5], sweep_divisors=["L/x"], sweep_decays=[0.9], sweep_seeds=1,
                     sweep_prompts="a", sweep_gen_length=8, lang="en")
    assert runner.calls == []
