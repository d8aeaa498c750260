"""handlers_sweep.py called directly (no server): the grid as one batched decode."""
from __future__ import annotations

import pytest

from dllm_viz.app.playground import Playground
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
