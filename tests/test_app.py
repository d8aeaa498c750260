"""app.py: the served app's bounds (sweeps through the shared engine, connections, sessions, the log)."""
from __future__ import annotations

import app
from dllm_viz.app.sweep import MAX_SWEEP_REQUESTS, SWEEP_CHUNK, SweepGrid, run_sweep
from dllm_viz.app.ui import SWEEP_DECAYS, SWEEP_DIVISORS, SWEEP_TEMPERATURES
from dllm_viz.serve.engine import Engine
from tests.ui_model import make_text_model


def test_the_widgets_largest_sweep_runs_through_the_shared_engine():
    """Every box ticked, 8 seeds, two prompts: 1920 requests, which once got "engine queue is full"
    on an idle server (MAX_QUEUE = 512); the sweep now submits SWEEP_CHUNK at a time."""
    assert SWEEP_CHUNK <= app.MAX_QUEUE
    grid = SweepGrid(temperatures=SWEEP_TEMPERATURES, divisors=SWEEP_DIVISORS, decays=SWEEP_DECAYS,
                     seeds=tuple(range(8)), prompts=("the cat ", "a dog "), gen_length=8)
    assert grid.size == MAX_SWEEP_REQUESTS
    model = make_text_model()
    with Engine(model, max_batch=app.MAX_BATCH, max_queue=app.MAX_QUEUE) as engine:
        result = run_sweep(app.make_runner(model, engine), grid)
        assert engine.stats()["rejected"] == 0
    assert len(result.rows) == len(grid.cells) and all(r["runs"] == 16 for r in result.rows)
