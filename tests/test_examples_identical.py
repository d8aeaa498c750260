"""The shipped example traces (dllm_viz/assets/examples/*.json) decode again to the same trace.

Each example holds its prompt text, its config and its model's name, so re-decoding it with that
model (as scripts/make_examples.py made it: the world model or the embedded one) must give the
same trace. This pins the behaviour of the
whole decoding path (scoring, schedules, sampling, the step, the record) across refactors.

What is compared exactly: every token id, every selection and its order, every step count, every
string and the trace's whole structure (keys, list lengths, which values are null). What is
compared with a tolerance: floats (confidences, probabilities, log-probabilities, metrics). The
examples were recorded on one CPU; another CPU's kernels (AVX-512 against AVX2, another blocking)
round the last bits of a float32 matrix product differently, so a recorded probability can move
by a few 1e-6 (seen: up to 5e-6 on an Intel Xeon) while every token and selection stays the same.
`FLOAT_ABS + FLOAT_REL * |x|` is ten times that, still a hundred times below anything a change of
the decoding path moves. Only what a clock measures (`wall_time`, `metrics.tokens_per_second`)
is not compared.

The examples are version-1 files (issue 28 made the format version 2): a fresh decode must equal
the stored file once the stored one is read as version 2 says, i.e. with the version number and
the config's fields that version 1 did not have at their defaults, and nothing else changed.
"""
from __future__ import annotations

import json
import math
from typing import Any

import pytest

from dllm_viz import DecodeConfig, assets, decode, load_model
from dllm_viz.core.trace import PLAIN_VERSION as VERSION  # a decode without a per-step section writes this

EXAMPLES = sorted(assets.path("examples").glob("*.json"))
TIMING = ("wall_time",)
TIMING_METRICS = ("tokens_per_second",)
FLOAT_ABS = 5e-5  # absolute tolerance on a recorded float (they are stored at 1e-6 resolution)
FLOAT_REL = 1e-5  # plus this share of its size (log-probabilities reach -20)


def _without_timing(data: dict) -> dict:
    """The trace dict with its clock-dependent fields set to 0."""
    data = dict(data, metrics=dict(data["metrics"]))
    for key in TIMING:
        data[key] = 0
    for key in TIMING_METRICS:
        data["metrics"][key] = 0
    return data


def differences(a: Any, b: Any, path: str = "") -> list[str]:
    """Where two parsed JSON values differ: floats beyond the tolerance, anything else at all."""
    if type(a) is not type(b):
        return [f"{path}: {a!r} ({type(a).__name__}) != {b!r} ({type(b).__name__})"]
    if isinstance(a, float):
        return [] if math.isclose(a, b, rel_tol=FLOAT_REL, abs_tol=FLOAT_ABS) else [f"{path}: {a!r} != {b!r}"]
    if isinstance(a, dict):
        if a.keys() != b.keys():
            return [f"{path}: keys {sorted(a.keys() ^ b.keys())} in one only"]
        return [d for k in a for d in differences(a[k], b[k], f"{path}.{k}")]
    if isinstance(a, list):
        if len(a) != len(b):
            return [f"{path}: length {len(a)} != {len(b)}"]
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in differences(x, y, f"{path}[{i}]")]
    return [] if a == b else [f"{path}: {a!r} != {b!r}"]


MODELS = {"austen-mdlm": None, "world-mdlm": "world"}  # a trace's model name -> load_model's path


@pytest.fixture(scope="module")
def models():
    return {}


def model_of(models: dict, name: str):
    assert name in MODELS, f"an example of an unknown model {name!r}"
    if name not in models:
        models[name] = load_model(MODELS[name], device="cpu")
    return models[name]


def test_there_are_examples_to_check():
    assert len(EXAMPLES) >= 5
    # The page opens on the first: the world model's (its checker shows which sentences hold).
    assert json.loads(EXAMPLES[0].read_text(encoding="utf-8"))["model"] == "world-mdlm"


def test_the_comparison_is_exact_for_tokens_and_tolerant_for_floats_only():
    base = {"token_ids": [1, 2], "steps": [{"selected": [0, 1], "confidence": [0.5, None]}], "p": -8.123456}
    assert differences(base, json.loads(json.dumps(base))) == []
    near = {**base, "p": -8.123456 + 4e-5}
    assert differences(base, near) == []
    assert differences(base, {**base, "p": -8.123456 + 5e-4})  # beyond the tolerance
    assert differences(base, {**base, "token_ids": [1, 3]})
    assert differences(base, {**base, "steps": [{"selected": [1, 0], "confidence": [0.5, None]}]})
    assert differences(base, {**base, "steps": [{"selected": [0, 1], "confidence": [0.5, 0.5]}]})  # null vs number
    assert differences({"k": 1}, {"k": 1.0})  # an int where a float was is a change of structure
    assert differences(base, {**base, "extra": 1})


def as_current_version(stored: dict) -> dict:
    """A version-1 trace dict as version 2 writes it: the version, and the config's new fields at their
    defaults (the only differences between the formats for a decode that takes nothing back)."""
    assert stored["version"] in (1, VERSION)
    return dict(stored, version=VERSION, config=DecodeConfig.from_dict(stored["config"]).to_dict())


def test_a_stored_example_differs_from_version_2_by_version_and_new_defaults_only():
    stored = next(d for d in (json.loads(p.read_text(encoding="utf-8")) for p in EXAMPLES) if d["version"] == 1)
    upgraded = as_current_version(stored)
    new_fields = set(upgraded["config"]) - set(stored["config"])
    assert new_fields and "revise" in new_fields and upgraded["config"]["revise"] == "none"
    assert {k: v for k, v in upgraded["config"].items() if k in stored["config"]} == stored["config"]


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_decodes_to_the_same_trace(models, path):
    stored = as_current_version(json.loads(path.read_text(encoding="utf-8")))
    assert stored["prompt_text"], f"{path.name} stores no prompt text to re-decode"
    config = DecodeConfig.from_dict(stored["config"])
    (trace,) = decode(model_of(models, stored["model"]), [stored["prompt_text"]], config)
    assert trace.prompt_ids == stored["prompt_ids"]
    fresh = json.loads(trace.to_json())
    assert fresh["token_ids"] == stored["token_ids"] and fresh["order"] == stored["order"]
    assert [s["selected"] for s in fresh["steps"]] == [s["selected"] for s in stored["steps"]]
    diffs = differences(_without_timing(fresh), _without_timing(stored))
    assert not diffs, f"{len(diffs)} differences, first: {diffs[:5]}"
