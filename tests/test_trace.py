from __future__ import annotations

import json
import math

import pytest

from dllm_viz import DecodeConfig, StepRecord, Trace
from dllm_viz.core.trace import ngram_stats


def make_trace():
    rec0 = StepRecord(step=0, block=0, k=2, temperature=1.0, confidence=[0.9, 0.123457, 0.5], argmax=[4, 5, 6],
                      selected=[0, 2], tokens=[4, 7], logprobs=[-0.1, -2.5], candidates=[[4, 5], [5, 4], [6, 7]],
                      candidate_probs=[[0.9, 0.05], [0.12, 0.1], [0.5, 0.2]])
    rec1 = StepRecord(step=1, block=0, k=1, temperature=1.0, confidence=[math.nan, 0.7, math.nan], argmax=[-1, 5, -1],
                      selected=[1], tokens=[5], logprobs=[-0.3], raw_confidence=[math.nan, 0.8, math.nan],
                      candidates=[[], [5, 4], []], candidate_probs=[[], [0.8, 0.1], []])
    return Trace(prompt_ids=[1, 2], token_ids=[4, 5, 7], order=[0, 1, 0], steps=[rec0, rec1],
                 config=DecodeConfig(gen_length=3, temperature_stages=(1.2, 1.0, 0.7)), model="m", wall_time=0.25,
                 vocab={4: "a", 5: "b", 7: "c"}, text="abc", prompt_text="xy", mask_token_id=0)


def test_json_round_trip_is_exact_and_standard():
    t = make_trace()
    s = t.to_json()
    assert Trace.from_json(s).to_json() == s
    data = json.loads(s)  # standard JSON: NaN became null
    assert data["steps"][1]["confidence"] == [None, 0.7, None]
    assert data["format"] == "dllm-viz-trace" and data["version"] == 1
    assert {"selected", "tokens", "confidence", "argmax", "k", "temperature"} <= set(data["steps"][0])
    assert Trace.from_json(s).config == t.config


def test_bad_json_is_a_value_error():
    with pytest.raises(ValueError, match="does not parse"):
        Trace.from_json("{")
    with pytest.raises(ValueError, match="format"):
        Trace.from_json('{"format": "other"}')
    d = json.loads(make_trace().to_json())
    d["version"] = 99
    with pytest.raises(ValueError, match="version"):
        Trace.from_json(json.dumps(d))
    del d["steps"]
    d["version"] = 1
    with pytest.raises(ValueError, match="steps"):
        Trace.from_json(json.dumps(d))


def test_metrics():
    m = make_trace().metrics
    assert m["nfe"] == m["steps"] == 2
    assert m["mean_confidence"] == pytest.approx((0.9 + 0.5 + 0.8) / 3, abs=1e-6)  # raw confidence
    assert m["mean_logprob"] == pytest.approx((-0.1 - 2.5 - 0.3) / 3, abs=1e-6)
    assert m["tokens_per_second"] == 12.0


def test_ngram_stats():
    assert ngram_stats([1, 2, 3, 1, 2, 3]) == {"distinct_1": 0.5, "distinct_2": 0.6, "repeat_3": 0.25}
    assert ngram_stats([]) == {"distinct_1": 0.0, "distinct_2": 0.0, "repeat_3": 0.0}


def test_canvas_at_and_token_text():
    t = make_trace()
    assert t.canvas_at(-1) == [None, None, None]
    assert t.canvas_at(0) == [4, None, 7]
    assert t.token_text(4) == "a" and t.token_text(0) == "[MASK]" and t.token_text(99) == "<99>"
