"""core.fork: a trace continued from any step with a change, from the exact state it had there.

The floor: a fork with nothing changed is the trace itself, token for token and step for step (on the
world model, over schedules, revision rules, a cache, the shared-RNG switch, the early stop). Then each
change does what it says, the lineage round-trips through JSON and the schema, and bad input is a
ValueError naming it.
"""
from __future__ import annotations

import dataclasses
import math

import pytest

from dllm_viz import DecodeConfig, Trace, decode, diff, fork, load_model
from dllm_viz.core.analysis import events
from dllm_viz.core.fork import FIXED, digest, initial_config
from dllm_viz.core.lineage import ForkPoint
from dllm_viz.studies.world_score import fork_verdicts, verdict_of
from dllm_viz.world import check
from tests.ui_model import make_text_model

PROMPT = "Tom Lopez of"
WALL_CLOCK = ("forward_time",)  # a record's only field that is not a function of the state


@pytest.fixture(scope="module")
def world():
    return load_model("world")


def records(trace: Trace) -> list[dict]:
    return [{k: v for k, v in rec.to_dict().items() if k not in WALL_CLOCK} for rec in trace.steps]


def assert_same_decode(a: Trace, b: Trace) -> None:
    assert records(a) == records(b)
    assert (a.token_ids, a.order, a.text, a.text_end, a.early_stop_step) == \
        (b.token_ids, b.order, b.text, b.text_end, b.early_stop_step)


CONFIGS = {
    "quality": DecodeConfig.preset("quality", 32, seed=3),
    "remdm": DecodeConfig.preset("remdm", 32, seed=1),
    "threshold_blocks": DecodeConfig.preset("quality", 32, seed=6, schedule="threshold", threshold=0.5, block_length=8),
    "dual_cache": DecodeConfig.preset("quality", 32, seed=2, cache="dual", block_length=8),
    "shared_rng": DecodeConfig.preset("balanced", 32, seed=4, rng="shared"),
    "early_stop": DecodeConfig.preset("quality", 32, seed=5, early_stop=True),
}
FAST = ("quality", "remdm")  # the others in the slow tier (tests/conftest.py)


@pytest.mark.parametrize("name", FAST)
def test_a_fork_with_nothing_changed_is_the_trace_itself(world, name):
    trace = decode(world, [PROMPT], CONFIGS[name])[0]
    n = len(trace.steps)
    for step in sorted({0, 1, n // 2, n - 1, n}):
        out = fork(world, trace, step)
        assert_same_decode(out, trace)
        assert out.forks == (ForkPoint(parent=digest(trace), step=step),)
        assert diff(trace, out).same


@pytest.mark.parametrize("name", [n for n in CONFIGS if n not in FAST])
def test_a_fork_with_nothing_changed_is_the_trace_itself_on_every_kind_of_decode(world, name):
    test_a_fork_with_nothing_changed_is_the_trace_itself(world, name)


def test_a_forced_token_stands_from_its_step_and_the_decode_goes_on_around_it(world):
    trace = decode(world, [PROMPT], CONFIGS["quality"])[0]
    step = 4
    before = trace.canvas_at(step - 1)
    pos = next(p for p, tok in enumerate(before) if tok is None)
    tok = next(i for i in range(3, 700) if i != trace.token_ids[pos])
    seen = []
    out = fork(world, trace, step, force={pos: tok}, on_step=seen.append)
    assert records(out)[:step] == records(trace)[:step]  # the parent's records, as they were
    assert [r.step for r in seen] == list(range(step, len(out.steps)))  # on_step: the continuation's records
    assert out.token_ids[pos] == tok and out.order[pos] == step - 1
    assert out.canvas_at(step - 2) == trace.canvas_at(step - 2)  # the change is part of the state entering `step`
    assert out.canvas_at(step - 1)[pos] == tok
    assert all(pos not in rec.selected for rec in out.steps[step:])  # never confirmed again: it was not masked
    assert math.isnan(out.steps[step].confidence[pos])  # the step's forward read it as a visible token
    assert out.vocab[tok] == world.tokenizer.decode([tok])
    assert ("force", tok) in [(e.kind, e.token) for e in events(out)[pos]]
    assert out.revised and (step - 1, "force", tok) in out.history[pos]
    d = diff(trace, out)
    assert (d.first.step, d.first.position, d.first.kind, d.first.a, d.first.b) == (step, pos, "forced", None, tok)
    again = Trace.from_json(out.to_json())  # the lineage survives JSON and the schema's replay
    assert again.to_json() == out.to_json() and again.forks == out.forks


def test_a_position_taken_back_is_decided_again(world):
    trace = decode(world, [PROMPT], CONFIGS["quality"])[0]
    step = len(trace.steps) // 2
    pos = next(p for p, tok in enumerate(trace.canvas_at(step - 1)) if tok is not None)
    out = fork(world, trace, step, remask=[pos])
    assert out.canvas_at(step - 1)[pos] is None and trace.canvas_at(step - 1)[pos] is not None
    again = [rec.step for rec in out.steps[step:] if pos in rec.selected]
    assert len(again) == 1 and out.order[pos] == again[0]
    assert not math.isnan(out.steps[step].confidence[pos])  # scored again as a mask
    Trace.from_json(out.to_json())


def test_a_fork_at_the_end_that_takes_a_token_back_continues(world):
    trace = decode(world, [PROMPT], CONFIGS["quality"])[0]
    n = len(trace.steps)
    out = fork(world, trace, n, remask=[0, 5])
    assert len(out.steps) > n and out.steps[n].k >= 1
    assert {0, 5} <= {p for rec in out.steps[n:] for p in rec.selected}


def test_a_switched_knob_holds_from_the_step_on(world):
    trace = decode(world, [PROMPT], CONFIGS["quality"])[0]
    step = 3
    out = fork(world, trace, step, knobs={"temperature": 0.0, "seed": 3})  # the seed: unchanged, not listed
    assert [r.temperature for r in out.steps[:step]] == [r.temperature for r in trace.steps[:step]]
    assert {r.temperature for r in out.steps[step:]} == {0.0}
    assert out.config == trace.config.replace(temperature=0.0) and initial_config(out) == trace.config
    assert out.forks[-1].knobs == (("temperature", 0.0),) and out.forks[-1].was == (("temperature", 0.7),)
    assert diff(trace, out).config == {"temperature": (0.7, 0.0)}


def test_a_new_seed_reseeds_the_request_stream_at_the_step(world):
    trace = decode(world, [PROMPT], CONFIGS["quality"])[0]
    a = fork(world, trace, 2, knobs={"seed": 11})
    b = fork(world, trace, 2, knobs={"seed": 11})
    assert_same_decode(a, b)  # deterministic
    assert records(a)[2:] != records(trace)[2:]


def test_a_fork_of_a_fork_replays_its_lineage(world):
    trace = decode(world, [PROMPT], CONFIGS["remdm"])[0]
    first = fork(world, trace, 3, knobs={"temperature": 0.5})
    vis = next(p for p, tok in enumerate(first.canvas_at(7)) if tok is not None)
    second = fork(world, first, 8, remask=[vis])
    assert [f.step for f in second.forks] == [3, 8] and second.forks[1].parent == digest(first)
    assert_same_decode(fork(world, second, 10), second)  # replayed through both fork points
    back = fork(world, second, 2)  # before the first fork point: the lineage drops both
    assert back.forks == (ForkPoint(parent=digest(second), step=2),)
    assert_same_decode(back, trace)
    Trace.from_json(second.to_json())


def test_the_world_checker_judges_both(world):
    trace = decode(world, [PROMPT], CONFIGS["quality"])[0]
    pos = next(p for p, tok in enumerate(trace.canvas_at(1)) if tok is None)
    out = fork(world, trace, 2, force={pos: world.tokenizer.encode(" cats")[0]})
    parent, child = fork_verdicts(trace, out)
    assert parent == check(trace.prompt_text + trace.text) == verdict_of(trace)
    assert child == check(out.prompt_text + out.text)


@pytest.mark.parametrize("kwargs, match", [
    (dict(step=99), r"step=99 is invalid: expected a step in \[0, "),
    (dict(step=-1), "step=-1 is invalid"),
    (dict(step=1.5), "step=1.5 is invalid"),
    (dict(step=2, force={3: 713}), r"token id 713 at position 3 is invalid: expected an id in \[0, 713\)"),
    (dict(step=2, force={3: 2}), "other than the mask id 2"),
    (dict(step=2, force={32: 5}), r"force: position 32 is invalid: expected a position in \[0, 32\)"),
    (dict(step=2, remask=[-1]), "remask: position -1 is invalid"),
    (dict(step=0, remask=[0]), "remask: position 0 is invalid: it is masked at step 0"),
    (dict(step=2, knobs={"gen_length": 16}), "gen_length=16 is invalid at a fork"),
    (dict(step=2, knobs={"temperature": -1}), "temperature=-1 is invalid"),
    (dict(step=2, knobs={"temprature": 1.0}), "temprature=1.0 is invalid: expected no such field"),
    (dict(step=2, knobs={"revise": "token_edit"}), "revise="),
])
def test_bad_input_is_a_value_error_naming_it(world, kwargs, match):
    trace = decode(world, [PROMPT], CONFIGS["quality"])[0]
    step = kwargs.pop("step")
    with pytest.raises(ValueError, match=match):
        fork(world, trace, step, **kwargs)


def test_force_over_the_same_token_and_remask_of_a_forced_position_are_refused(world):
    trace = decode(world, [PROMPT], CONFIGS["quality"])[0]
    pos, tok = trace.steps[0].selected[0], trace.steps[0].tokens[0]
    with pytest.raises(ValueError, match=f"position {pos} already holds token {tok}"):
        fork(world, trace, 1, force={pos: tok})
    with pytest.raises(ValueError, match="also forced"):
        fork(world, trace, 1, force={pos: 5}, remask=[pos])


def test_fixed_knobs_are_named():
    assert {"gen_length", "block_length", "cache", "rng"} <= set(FIXED)


def test_another_model_or_one_that_does_not_reproduce_the_trace_is_refused(world):
    tiny = make_text_model(cached=False)
    trace = decode(tiny, ["the cat "], DecodeConfig.preset("balanced", 16, seed=1))[0]
    with pytest.raises(ValueError, match="model='world-mdlm' is invalid: expected the trace's own model 'tiny-chars'"):
        fork(world, trace, 2)
    other = make_text_model(seed=1, cached=False)  # the same name, other weights
    with pytest.raises(ValueError, match="replayed on this model it parts from its record at step 0"):
        fork(other, trace, 3)
    assert_same_decode(fork(tiny, trace, 3), trace)


def test_the_schema_refuses_a_lineage_that_does_not_replay(world):
    trace = decode(world, [PROMPT], CONFIGS["quality"])[0]
    pos = next(p for p, tok in enumerate(trace.canvas_at(2)) if tok is None)
    out = fork(world, trace, 3, force={pos: 7})
    good = out.to_dict()

    def read(**change):
        d = {**good, "forks": [{**good["forks"][0], **change}]}
        return Trace.from_dict(d)

    read()
    with pytest.raises(ValueError, match=r"forks\[0\].step"):
        read(step=len(out.steps) + 1)
    with pytest.raises(ValueError, match=r"forks\[0\].parent"):
        read(parent="not hex")
    with pytest.raises(ValueError, match="order|token_ids"):
        read(force=[])  # the forked token is then left to no one
    with pytest.raises(ValueError, match=r"forks\[0\].remask"):
        read(remask=[pos])  # masked entering step 3: nothing to take back
    with pytest.raises(ValueError, match=r"forks\[0\]"):
        read(force=[[len(out.token_ids), 7]])
    with pytest.raises(ValueError, match=r"forks\[0\].was"):
        read(knobs={"temperature": 0.0})
    assert dataclasses.replace(out, forks=()).to_dict().keys() == trace.to_dict().keys()  # no lineage, no key
