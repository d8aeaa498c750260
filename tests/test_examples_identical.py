"""The shipped example traces (assets/examples/*.json) decode again to the same JSON, byte for byte.

Each example holds its prompt text and its config, so re-decoding it with the embedded model
(as scripts/make_examples.py made it) must give the identical trace. Only what a clock measures
(`wall_time`, and `metrics.tokens_per_second` derived from it) may differ. This pins the
behaviour of the whole decoding path (scoring, schedules, sampling, the step, the record) across
refactors: a change of one token, one confidence digit or one record field fails here.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from dllm_viz import DecodeConfig, decode, load_model

EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "assets" / "examples").glob("*.json"))
TIMING = ("wall_time",)
TIMING_METRICS = ("tokens_per_second",)


def _without_timing(text: str) -> str:
    """The trace JSON with its clock-dependent fields set to 0, re-serialised the way Trace does."""
    data = json.loads(text)
    for key in TIMING:
        data[key] = 0
    for key in TIMING_METRICS:
        data["metrics"][key] = 0
    return json.dumps(data, ensure_ascii=False, allow_nan=False)


@pytest.fixture(scope="module")
def model():
    return load_model(device="cpu")


def test_there_are_examples_to_check():
    assert len(EXAMPLES) >= 5


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_decodes_to_identical_json(model, path):
    stored = path.read_text(encoding="utf-8").rstrip("\n")
    data = json.loads(stored)
    assert data["prompt_text"], f"{path.name} stores no prompt text to re-decode"
    config = DecodeConfig.from_dict(data["config"])
    (trace,) = decode(model, [data["prompt_text"]], config)
    assert trace.prompt_ids == data["prompt_ids"]
    assert _without_timing(trace.to_json()) == _without_timing(stored)
