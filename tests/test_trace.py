from __future__ import annotations

import json
import math
import re

import pytest

from dllm_viz import DecodeConfig, StepRecord, Trace, assets
from dllm_viz.core.schedules import planned_steps
from dllm_viz.core import trace as trace_module
from dllm_viz.core.trace import first_end_of_text, ngram_stats

ORJSON = trace_module.orjson  # (tests switch it off)


def make_trace():
    rec0 = StepRecord(step=0, block=0, k=2, temperature=1.0, confidence=[0.9, 0.123457, 0.5], argmax=[4, 5, 6],
                      selected=[0, 2], tokens=[4, 7], logprobs=[-0.1, -2.5], candidates=[[4, 5], [5, 4], [6, 7]],
                      candidate_probs=[[0.9, 0.05], [0.12, 0.1], [0.5, 0.2]])
    rec1 = StepRecord(step=1, block=0, k=1, temperature=1.0, confidence=[math.nan, 0.7, math.nan], argmax=[-1, 5, -1],
                      selected=[1], tokens=[5], logprobs=[-0.3], raw_confidence=[math.nan, 0.8, math.nan],
                      candidates=[[], [5, 4], []], candidate_probs=[[], [0.8, 0.1], []])
    return Trace(prompt_ids=[1, 2], token_ids=[4, 5, 7], order=[0, 1, 0], steps=[rec0, rec1],
                 config=DecodeConfig(gen_length=3, temperature_stages=(1.2, 1.0, 0.7)), model="m", wall_time=0.25,
                 vocab={1: "x", 2: "y", 4: "a", 5: "b", 6: "d", 7: "c"}, text="abc", prompt_text="xy", mask_token_id=0)


def test_json_round_trip_is_exact_and_standard():
    t = make_trace()
    s = t.to_json()
    assert Trace.from_json(s).to_json() == s
    data = json.loads(s)  # standard JSON: NaN became null
    assert data["steps"][1]["confidence"] == [None, 0.7, None]
    assert data["format"] == "dllm-viz-trace" and data["version"] == 2
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
    assert m["steps"] == 2
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


def test_first_end_of_text():
    assert first_end_of_text([4, 9, 5, 9, 9], 9) == 1
    assert first_end_of_text([4, 5], 9) is None and first_end_of_text([4, 9], None) is None
    assert first_end_of_text([4, 8, 9], (9, 8)) == 1 and first_end_of_text([4, 5], ()) is None


def test_end_of_text_fields_round_trip_and_stay_out_of_older_traces():
    plain = make_trace()
    data = json.loads(plain.to_json())
    assert "text_end" not in data and "early_stop_step" not in data and "nfe_saved" not in data["metrics"]
    ended = make_trace()
    # A consistent trace (from_json checks each step's tokens against token_ids): 9 is the end of text.
    ended.token_ids, ended.text_end, ended.early_stop_step = [4, 9, 7], 1, 1
    ended.steps[1].tokens, ended.vocab[9] = [9], "<eos>"
    s = ended.to_json()
    back = Trace.from_json(s)
    assert back.to_json() == s and (back.text_end, back.early_stop_step) == (1, 1)
    # The n-gram figures describe the text, not its end padding.
    assert back.metrics["distinct_1"] == ngram_stats([4])["distinct_1"] == 1.0
    assert ngram_stats([4, 9, 9])["distinct_1"] < 1.0


def test_nfe_saved_is_planned_minus_taken_when_the_early_stop_fired():
    t = make_trace()
    t.config = DecodeConfig(gen_length=3, schedule="fixed_steps", steps=3)
    assert t.nfe_saved is None  # it did not fire
    t.early_stop_step = 1
    assert planned_steps(t.config) == 3 and t.nfe == 2
    assert t.nfe_saved == 1 and t.metrics["nfe_saved"] == 1
    t.config = DecodeConfig(gen_length=3, schedule="threshold")
    assert t.nfe_saved is None and "nfe_saved" not in t.metrics  # threshold: the plan depends on the model


# ----- format version 2: tokens taken back and rewritten (issue 28) -------------------------------
EXAMPLES = sorted(assets.path("examples").glob("*.json"))
# The examples written before format 2 stay as they were written: the old files that must keep loading.
V1_EXAMPLES = [p for p in EXAMPLES if json.loads(p.read_text(encoding="utf-8"))["version"] == 1]


def make_revised_trace() -> Trace:
    """Three positions over four steps: 0 confirmed, taken back, confirmed again; 2 rewritten."""
    G = 3
    nan = math.nan

    def rec(step, k, selected, tokens, **kw):
        return StepRecord(step=step, block=0, k=k, temperature=0.0, confidence=[0.5] * G, argmax=[4] * G,
                          selected=selected, tokens=tokens, logprobs=[-0.5] * k, **kw)

    steps = [
        rec(0, 2, [0, 2], [4, 6]),
        rec(1, 0, [], [], remasked=[0], remasked_tokens=[4], remask_probs=[0.3], forwards=2),
        rec(2, 2, [1, 0], [5, 7], edited=[2], edited_from=[6], edited_to=[4], edit_probs=[0.8], edit_from_probs=[0.1]),
        rec(3, 0, [], []),
    ]
    steps[1].confidence = [0.4, 0.4, nan]
    config = DecodeConfig(gen_length=G, revise="rcr", schedule="fixed_steps", steps=2)
    return Trace(prompt_ids=[1], token_ids=[7, 5, 4], order=[2, 2, 2], steps=steps, config=config, model="m",
                 vocab={1: "x", 4: "a", 5: "b", 6: "c", 7: "d"}, mask_token_id=0)


def test_version_2_round_trip_history_and_canvas():
    t = make_revised_trace()
    s = t.to_json()
    assert Trace.from_json(s).to_json() == s
    data = json.loads(s)
    assert data["version"] == 2 and data["steps"][1]["remasked"] == [0] and "edited" not in data["steps"][1]
    assert "remasked" not in data["steps"][0]  # a step with no revision writes none of the new fields
    assert t.nfe == 5 and t.metrics["remasked"] == 1 and t.metrics["edited"] == 1
    assert [t.canvas_at(s) for s in range(-1, 3)] == [[None] * 3, [4, None, 6], [None, None, 6], [7, 5, 4]]
    assert t.history[0] == [(0, "confirm", 4), (1, "remask", None), (2, "confirm", 7)]
    assert t.history[2] == [(0, "confirm", 6), (2, "edit", 4)]
    assert t.decisions == [2, 1, 2] and t.revised


def test_the_shipped_examples_keep_version_1_files():
    assert len(V1_EXAMPLES) >= 5, [p.name for p in EXAMPLES]


@pytest.mark.parametrize("path", V1_EXAMPLES, ids=[p.stem for p in V1_EXAMPLES])
def test_version_1_files_still_load(path):
    text = path.read_text(encoding="utf-8")
    t = Trace.from_json(text)
    assert not t.revised and t.decisions == [1] * len(t.token_ids) and t.config.revise == "none"
    assert t.canvas_at(len(t.steps) - 1) == t.token_ids


def parse_both(text, monkeypatch):
    """Trace.from_json(text) with orjson (which the app's install pins) and with the standard library alone: each
    a Trace, or the ValueError's message."""
    assert ORJSON is not None  # requirements.txt installs it: the fast path is the one tested here
    out = []
    for parser in (ORJSON, None):
        monkeypatch.setattr(trace_module, "orjson", parser)
        try:
            out.append(Trace.from_json(text))
        except ValueError as err:
            out.append(str(err))
    return out


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_a_trace_reads_alike_with_orjson_and_without(path, monkeypatch):
    text = path.read_text(encoding="utf-8")
    fast, plain = parse_both(text, monkeypatch)
    assert fast.to_json() == plain.to_json() == Trace.from_json(text).to_json()
    fast_bytes, _ = parse_both(text.encode("utf-8"), monkeypatch)
    assert fast_bytes.to_json() == plain.to_json()


@pytest.mark.parametrize("edit, says", [
    (lambda s: s.replace('"wall_time": 0.25', '"wall_time": NaN'), "NaN is not a number a trace"),
    (lambda s: s.replace('"wall_time": 0.25', '"wall_time": -Infinity'), "-Infinity is not a number"),
    (lambda s: s.replace('"wall_time": 0.25', '"wall_time": 1e999'), "wall_time"),
    (lambda s: s.replace('"mask_token_id": 0', '"mask_token_id": ' + "9" * 25), "mask_token_id"),
    (lambda s: s.replace('"mask_token_id": 0', '"mask_token_id": ' + "9" * 5000), "does not parse"),
    (lambda s: s[:-1], "does not parse"),
    (lambda s: s.replace('"model": "m"', '"model": "\\ud800"'), None),  # a lone surrogate: only `json` reads it
])
def test_what_orjson_does_not_parse_reads_as_the_standard_library_reads_it(edit, says, monkeypatch):
    text = edit(make_trace().to_json())
    assert text != make_trace().to_json()
    fast, plain = parse_both(text, monkeypatch)
    if says is None:  # read by the standard library, alike
        assert fast.to_json() == plain.to_json()
    else:  # refused, alike
        assert isinstance(fast, str) and isinstance(plain, str), (fast, plain)
        assert re.search(says, fast) and re.search(says, plain), (fast, plain)


def test_version_1_files_may_not_carry_version_2_fields():
    d = json.loads(V1_EXAMPLES[0].read_text(encoding="utf-8"))
    d["steps"][0]["remasked"] = []
    with pytest.raises(ValueError, match=r"steps\[0\] key='remasked'"):
        Trace.from_json(json.dumps(d))


def _corrupt(edit):
    d = json.loads(make_revised_trace().to_json())
    edit(d)
    return json.dumps(d)


MALFORMED_V2 = [  # (what, edit, the field the message must name)
    ("take back a masked position", lambda d: d["steps"][1].__setitem__("remasked", [1]),
     r"steps\[1\]\.remasked\[0\]=1"),
    ("take back the wrong id", lambda d: d["steps"][1].__setitem__("remasked_tokens", [5]),
     r"steps\[1\]\.remasked_tokens\[0\]=5.*expected 4"),
    ("tokens without positions", lambda d: d["steps"][0].__setitem__("remasked_tokens", [4]),
     r"steps\[0\]\.remasked_tokens=.*null when remasked is"),
    ("remask prob above 1", lambda d: d["steps"][1].__setitem__("remask_probs", [3.0]),
     r"steps\[1\]\.remask_probs\[0\]=3\.0"),
    ("remask lists of other lengths", lambda d: d["steps"][1].__setitem__("remask_probs", [0.1, 0.2]),
     r"steps\[1\]\.remask_probs=.*1 items"),
    ("rewrite to the same id", lambda d: d["steps"][2].__setitem__("edited_to", [6]), r"steps\[2\]\.edited_to\[0\]=6"),
    ("rewrite from the wrong id", lambda d: d["steps"][2].__setitem__("edited_from", [5]),
     r"steps\[2\]\.edited_from\[0\]=5"),
    ("rewrite a masked position", lambda d: d["steps"][2].__setitem__("edited", [1]), r"steps\[2\]\.edited\[0\]=1"),
    ("rewrite outside the canvas", lambda d: d["steps"][2].__setitem__("edited", [7]), r"steps\[2\]\.edited\[0\]=7"),
    ("rewrite to an id outside the vocab", lambda d: d["steps"][2].__setitem__("edited_to", [99]),
     r"steps\[2\]\.edited_to"),
    ("edit probs missing", lambda d: d["steps"][2].pop("edit_probs"), r"steps\[2\]\.edit_probs=None"),
    ("three forwards", lambda d: d["steps"][1].__setitem__("forwards", 3), r"steps\[1\]\.forwards=3"),
    ("confirm a visible position", lambda d: d["steps"][2].__setitem__("selected", [1, 2]),
     r"steps\[2\]\.selected\[1\]=2"),
    ("order not the last decision", lambda d: d["order"].__setitem__(2, 0), r"order\[2\]=0.*expected 2"),
    ("result not what the steps leave", lambda d: d["token_ids"].__setitem__(2, 6), r"token_ids\[2\]=6"),
    ("more steps than the rule allows", lambda d: d["steps"].extend(
        [dict(d["steps"][3], step=i) for i in range(4, 40)]), r"at most \d+ steps for revision='rcr'"),
]


@pytest.mark.parametrize("what, edit, field", MALFORMED_V2, ids=[m[0] for m in MALFORMED_V2])
def test_malformed_version_2_traces_name_the_field(what, edit, field):
    with pytest.raises(ValueError, match=field):
        Trace.from_json(_corrupt(edit))


# ----- a cached decode's per-step fields (issue 31) ------------------------------------------------
@pytest.fixture(scope="module")
def cached_json():
    from dllm_viz import decode, load_model

    config = DecodeConfig(gen_length=16, block_length=8, schedule="threshold", threshold=0.9, temperature=0.0,
                          cache="dual", cache_drift=True)
    (trace,) = decode(load_model("world"), ["Tom Lopez of"], config)
    return trace.to_json()


def test_cached_fields_round_trip_and_stay_out_of_uncached_traces(cached_json):
    assert Trace.from_json(cached_json).to_json() == cached_json
    steps = json.loads(cached_json)["steps"]
    assert steps[0]["forward_kind"] == "full" and "drift" not in steps[0]  # a refresh is the exact forward
    window = next(s for s in steps if s["forward_kind"] == "dual")
    assert window["computed"] == 8 and isinstance(window["drift_selected"], bool)
    assert len(window["exact_confidence"]) == 16 and None in window["exact_confidence"]
    plain = make_trace().to_json()
    assert not {"forward_kind", "computed", "forward_time", "drift",
                "exact_confidence"} & set(json.loads(plain)["steps"][0])


def _edited(text: str, edit) -> str:
    d = json.loads(text)
    edit(d)
    return json.dumps(d)


def _window(d: dict) -> dict:
    return next(s for s in d["steps"] if s["forward_kind"] == "dual")


@pytest.mark.parametrize("edit, field", [
    (lambda d: d["steps"][0].__setitem__("forward_kind", "half"),
     r"steps\[0\]\.forward_kind='half'.*full \| prefix \| dual"),
    (lambda d: d["steps"][0].__setitem__("computed", 3), r"steps\[0\]\.computed=3"),  # a full forward computes the row
    (lambda d: _window(d).__setitem__("computed", 0), r"\.computed=0"),
    (lambda d: _window(d).__setitem__("forward_time", -1), r"\.forward_time=-1"),
    (lambda d: _window(d).__setitem__("drift", 2.0), r"\.drift=2\.0"),
    (lambda d: _window(d).__setitem__("drift_tokens", 1), r"\.drift_tokens=1.*true or false"),
    (lambda d: _window(d)["exact_confidence"].pop(), r"\.exact_confidence="),
    (lambda d: _window(d).pop("drift_selected"), r"\.drift_selected=None.*present with the other drift fields"),
    (lambda d: d["steps"][0].__setitem__("drift", 0.1), r"steps\[0\]\.drift=0\.1.*null at a full forward"),
    (lambda d: d["steps"][1].pop("forward_kind"), r"steps\[1\]\.computed=.*null"),
    (lambda d: d["config"].__setitem__("cache", "none"), r"steps\[0\]\.forward_kind='full'.*cache='none'"),
])
def test_malformed_cache_fields_name_the_field(cached_json, edit, field):
    with pytest.raises(ValueError, match=field):
        Trace.from_json(_edited(cached_json, edit))


def test_a_cached_trace_without_forward_kinds_is_refused(cached_json):
    def strip(d):
        for s in d["steps"]:
            for key in ("forward_kind", "computed", "forward_time", "drift", "drift_selected", "drift_tokens",
                        "exact_confidence"):
                s.pop(key, None)
    with pytest.raises(ValueError, match=r"steps\[0\]\.forward_kind=None.*the trace's config has a cache"):
        Trace.from_json(_edited(cached_json, strip))


def test_cache_facts_add_up(cached_json):
    trace = Trace.from_json(cached_json)
    facts = trace.cache_facts
    assert facts["refreshes"] + facts["windows"] == trace.nfe and facts["refreshes"] == 2
    assert facts["positions_full"] == trace.nfe * (len(trace.prompt_ids) + 16)
    assert facts["positions_computed"] == facts["refreshes"] * (len(trace.prompt_ids) + 16) + 8 * facts["windows"]
    full = [s.forward_time for s in trace.steps if s.forward_kind == "full"]
    windows = [s.forward_time for s in trace.steps if s.forward_kind == "dual"]
    assert facts["seconds_saved"] == pytest.approx(sum(full) / len(full) * len(windows) - sum(windows), abs=1e-5)
    assert facts["drift_max"] == max(s.drift for s in trace.steps if s.drift is not None)
    changed = [s for s in trace.steps if s.drift_selected or s.drift_tokens]
    assert facts["drift_changed_steps"] == len(changed) >= max(facts["drift_selected_steps"],
                                                               facts["drift_tokens_steps"])
    assert make_trace().cache_facts is None and "positions_computed" not in make_trace().metrics


def test_sglang_low_confidence_counts_the_forward_sglang_runs_on_each_finished_block():
    """SGLang's LowConfidence computes `done` before its update, so one more forward runs on each block it
    filled (`core.references.sglang.closes_blocks`): the step that fills a block is marked, and NFE counts
    it; JointThreshold closes with a step of its own, and a plain threshold has no such forward."""
    from dllm_viz import decode
    from tests.tiny import TinyDenoiser

    model = TinyDenoiser()
    (low,) = decode(model, [[3, 4]], DecodeConfig.preset("sglang_low_confidence", 64))
    marked = [rec.step for rec in low.steps if rec.closing_forward]
    last_of_block = [rec.step for rec, nxt in zip(low.steps, low.steps[1:] + [None])
                     if nxt is None or nxt.block != rec.block]
    assert marked == last_of_block and len(marked) == 2  # two blocks of 32
    assert low.nfe == len(low.steps) + 2 == low.metrics["nfe"]
    again = Trace.from_json(low.to_json())
    assert again.nfe == low.nfe and [r.closing_forward for r in again.steps] == [r.closing_forward for r in low.steps]
    (plain,) = decode(model, [[3, 4]], DecodeConfig.preset("sglang_low_confidence", 64, threshold_strict=False))
    assert not any(rec.closing_forward for rec in plain.steps) and plain.nfe == len(plain.steps)
    data = json.loads(low.to_json())
    data["steps"][0]["closing_forward"] = False
    with pytest.raises(ValueError, match="closing_forward"):
        Trace.from_dict(data)


def test_quantize_of_a_tensor_is_python_s_round_number_for_number():
    """The record rounds whole tensors at once (`trace._quantize_tensor`): the very floats `round(v, 6)` gives,
    near-ties, NaN, infinities, signed zeros and large values included."""
    import torch

    from dllm_viz.core.trace import quantize

    g = torch.Generator().manual_seed(0)
    x = torch.cat([torch.rand(4000, generator=g).float().double(), torch.randn(4000, generator=g).double() * 7,
                   torch.tensor([float("nan"), float("inf"), -float("inf"), 0.0, -0.0, -1e-9, 5e-7, 1.5e-6, 2.5e-6,
                                 0.1234565, 1234.5678905, -1e30, 999.9999995])])
    expected = [v if math.isnan(v) else round(v, 6) for v in x.tolist()]
    got = quantize(x)
    assert all(a == b or (math.isnan(a) and math.isnan(b)) for a, b in zip(got, expected))
    assert [math.copysign(1, a) for a in got[8004:8006]] == [math.copysign(1, b) for b in expected[8004:8006]]
    assert quantize(x.view(-1, 1)[:4]) == [[v] for v in expected[:4]]
