"""serve/engine.py with a renoising model: its groups share the forwards by client (serve/fair.py), as masked rows."""
from __future__ import annotations

import json
import threading

from dllm_viz import DecodeConfig, Engine, decode
from dllm_viz.serve.engine import Fairness
from tests.renoise_table import TableRenoiser

HEAVY = DecodeConfig(gen_length=30, seed=1, max_denoising_steps=8, confidence_threshold=2.0)  # 5 canvases of 6
LIGHT = DecodeConfig(gen_length=18, seed=2, max_denoising_steps=6, confidence_threshold=2.0)  # 3 canvases of 6


def steps_of(trace) -> str:
    d = trace.to_dict()
    return json.dumps([d["token_ids"], d["steps"], d["canvases"], d["order"]])


def test_two_clients_share_the_forwards_of_renoising_groups_and_each_stays_exact():
    """A client with a group of four requests and one with a single request, arriving later (a group of
    its own): each forward steps the least served client's group, so the newcomer takes about four steps
    for each of the heavy group's (equal compute), where stepping every group every time gave it one;
    every trace is the request's alone."""
    model = TableRenoiser()
    heavy_prompts = [[3, 4, 5], [7], [1, 2], [9, 9]]
    expected = [steps_of(decode(model, [p], HEAVY)[0]) for p in heavy_prompts]
    light_expected = steps_of(decode(model, [[6, 6]], LIGHT)[0])
    events: list[str] = []
    first = threading.Event()

    def heard(name: str):
        def on_step(record) -> None:
            events.append(name)
            first.set()
        return on_step

    with Engine(model, max_batch=8, fairness=Fairness(stretch=1.0, min_width=1)) as engine:
        heavy = [engine.submit(p, HEAVY, client="heavy", on_step=heard(f"heavy{i}"))
                 for i, p in enumerate(heavy_prompts)]
        assert first.wait(10)  # the heavy group runs: the light request joins a group of its own
        light = engine.submit([6, 6], LIGHT, client="light", on_step=heard("light"))
        light_trace = light.result(timeout=60)
        traces = [f.result(timeout=60) for f in heavy]
    assert [steps_of(t) for t in traces] == expected and steps_of(light_trace) == light_expected
    start = events.index("light")
    end = len(events) - events[::-1].index("light")
    during = events[start:end]
    light_steps = during.count("light")
    heavy_steps = during.count("heavy0")  # the heavy group's steps while the light request ran
    assert light_steps >= 10
    assert heavy_steps <= light_steps // 4 + 2  # equal compute: a 24-wide group step per four 6-wide light steps
    assert heavy_steps >= light_steps // 4 - 2  # ... and the heavy client is not starved either
