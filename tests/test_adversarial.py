"""Attacks that once broke the app, each answered by a ValueError naming the field, and each
followed by a normal request that must still succeed (the service keeps serving).

Uploads: a trace with a huge token text, beyond the size limits, malformed in every field the
figures index, nested deeper than any trace. Requests: out-of-vocabulary prompt ids, floats beyond
float32, huge values that must not be echoed whole, special-token names typed as text, a model
smaller than the candidates a record keeps. Load: random valid requests from concurrent clients,
each bit-identical to the same request decoded alone.
"""
from __future__ import annotations

import json
import math

import pytest

from dllm_viz import DecodeConfig, Engine, decode, load_model
from dllm_viz.app.views import wire
from dllm_viz.core.trace import Trace
from dllm_viz.core.trace_schema import MAX_CELLS, MAX_GEN_LENGTH, MAX_PIECE_CHARS, MAX_TRACE_BYTES
from dllm_viz.serve.fair import Fairness
from tests import stress
from tests.tiny import TinyDenoiser

TIMEOUT = 120  # seconds; a bound against hangs, never a timing assertion
MESSAGE_CHARS = 600  # an error message that echoes a value stays this short (the field list included)
# A config's: a key and a value clipped to a few dozen characters each, plus at most the list of
# DecodeConfig's fields that an unknown key names (each new knob lengthens it).
CONFIG_MESSAGE_CHARS = 200 + len(", ".join(DecodeConfig.field_names()))


@pytest.fixture(scope="module")
def model():
    return load_model(device="cpu")


@pytest.fixture(scope="module")
def engine(model):
    with Engine(model, max_batch=8) as e:
        yield e


@pytest.fixture(scope="module")
def good(model) -> str:
    """A real trace's JSON: every upload attack below is a corruption of it."""
    return decode(model, ["It is a truth "], DecodeConfig.preset("balanced", 16, seed=3))[0].to_json()


def assert_serves(engine: Engine, model) -> None:
    """The next normal request succeeds, and exactly as it would alone."""
    config = DecodeConfig.preset("balanced", 12, seed=7)
    got = engine.submit("Emma said ", config).result(TIMEOUT)
    assert stress.same(got, decode(model, ["Emma said "], config)[0])


def assert_loads(good: str) -> None:
    """The next normal upload loads, and the page's chunks of it are made."""
    trace = Trace.from_json(good)
    assert trace.to_json() == good
    wire.dumps(wire.chunks(trace))


def corrupt(good: str, edit) -> str:
    d = json.loads(good)
    edit(d)
    return json.dumps(d)


# ----- uploads -----------------------------------------------------------------------------------
def test_huge_token_text_is_refused_and_a_long_one_travels_once(good):
    d = json.loads(good)
    key = next(iter(d["vocab"]))
    with pytest.raises(ValueError, match=rf"vocab\[{key}\] has {10 * MAX_PIECE_CHARS} characters.*at most"):
        Trace.from_json(corrupt(good, lambda d: d["vocab"].__setitem__(key, "x" * (10 * MAX_PIECE_CHARS))))
    # Within the limit, a long token text travels to the page once, however often a figure shows it
    # (the figures clip it in every cell: tests/test_figures_js.py).
    trace = Trace.from_json(good)
    trace.vocab = {i: "y" * MAX_PIECE_CHARS for i in trace.vocab}
    text = wire.dumps(wire.chunks(trace))
    assert text.count("y" * MAX_PIECE_CHARS) == 1 and len(text) < len(trace.to_json())
    assert_loads(good)


def test_oversized_file_is_refused_before_parsing(good):
    with pytest.raises(ValueError, match=rf"at most {MAX_TRACE_BYTES}"):
        Trace.from_json(" " * (MAX_TRACE_BYTES + 1))
    with pytest.raises(ValueError, match=rf"at most {MAX_TRACE_BYTES}"):
        Trace.from_json(b"[" * (MAX_TRACE_BYTES + 1))
    assert_loads(good)


def test_sizes_beyond_a_real_decode_are_refused_with_the_limit(good):
    def many_steps(d):  # 8,333 steps of a 16-position decode: each step confirms at least one position
        d["steps"] = d["steps"][:1] * 8333

    with pytest.raises(ValueError, match=r"trace steps=.*at most gen_length=16 steps"):
        Trace.from_json(corrupt(good, many_steps))

    def huge_gen_length(d):
        d["config"]["gen_length"] = 200_000
        d["config"]["top_k"] = 1

    with pytest.raises(ValueError, match=rf"config.gen_length has 200000 positions.*at most {MAX_GEN_LENGTH}"):
        Trace.from_json(corrupt(good, huge_gen_length))

    def many_cells(d):  # 1100 positions x 1000 steps: past the heatmap's cell limit
        G, n = 1100, 1000
        d["config"] = {**d["config"], "gen_length": G, "top_k": 1}
        d["token_ids"], d["order"] = [d["token_ids"][0]] * G, list(range(n)) + [0] * (G - n)
        d["steps"] = [{"step": i, "block": 0, "k": 0, "temperature": 1.0, "confidence": [], "argmax": [],
                       "selected": [], "tokens": [], "logprobs": []} for i in range(n)]

    assert 1100 * 1000 > MAX_CELLS
    with pytest.raises(ValueError, match=rf"steps x gen_length has 1100000 cells.*at most {MAX_CELLS}"):
        Trace.from_json(corrupt(good, many_cells))
    assert_loads(good)


def _another_listed_id(d: dict) -> int:
    """A token id of the trace's vocab other than the one its first step placed: valid alone, wrong there."""
    placed = d["token_ids"][d["steps"][0]["selected"][0]]
    return next(int(i) for i in d["vocab"] if int(i) != placed)


MALFORMED = [  # (what, edit, the field the message must name)
    ("vocab as a list", lambda d: d.__setitem__("vocab", ["a", "b"]), r"trace vocab="),
    ("confidence row too short", lambda d: d["steps"][0]["confidence"].pop(), r"steps\[0\]\.confidence="),
    ("selected of 1e9", lambda d: d["steps"][0]["selected"].__setitem__(0, 10**9),
     r"steps\[0\]\.selected\[0\]=1000000000"),
    ("selected as a float", lambda d: d["steps"][0]["selected"].__setitem__(0, 1.5), r"steps\[0\]\.selected\[0\]=1\.5"),
    ("gen_length not matching the arrays", lambda d: d["config"].__setitem__("gen_length", 20), r"token_ids="),
    ("text as an int", lambda d: d.__setitem__("text", 5), r"trace text=5"),
    ("token id outside the vocab", lambda d: d["token_ids"].__setitem__(0, 10**6), r"token_ids=1000000"),
    ("argmax outside the vocab", lambda d: d["steps"][0]["argmax"].__setitem__(0, 10**6), r"steps\[0\]\.argmax"),
    ("negative candidate", lambda d: d["steps"][0]["candidates"][0].__setitem__(0, -3),
     r"steps\[0\]\.candidates\[0\]\[0\]=-3"),
    ("tokens disagree with token_ids", lambda d: d["steps"][0]["tokens"].__setitem__(0, _another_listed_id(d)),
     r"steps\[0\]\.tokens\[0\]"),
    ("order out of range", lambda d: d["order"].__setitem__(0, 99), r"trace order\[0\]=99"),
    ("step index wrong", lambda d: d["steps"][0].__setitem__("step", 5), r"steps\[0\]\.step=5"),
    ("confidence as a string", lambda d: d["steps"][0]["confidence"].__setitem__(0, "0.5"),
     r"steps\[0\]\.confidence\[0\]='0\.5'"),
    ("probability above 1", lambda d: d["steps"][0]["candidate_probs"][0].__setitem__(0, 7.0),
     r"candidate_probs\[0\]\[0\]=7\.0"),
    # the candidates' one-pass check (trace_schema._candidates_ok) fails, and the item check names the item
    ("candidate outside the vocab", lambda d: d["steps"][0]["candidates"][2].__setitem__(0, 10**6),
     r"steps\[0\]\.candidates\[2\]"),
    ("candidate as a bool", lambda d: d["steps"][0]["candidates"][1].__setitem__(0, True),
     r"candidates\[1\]\[0\]=True"),
    ("candidate probs a list short", lambda d: d["steps"][0]["candidate_probs"][2].pop(),
     r"steps\[0\]\.candidate_probs\[2\]="),
    ("candidate prob as a string", lambda d: d["steps"][0]["candidate_probs"][3].__setitem__(0, "1"),
     r"candidate_probs\[3\]\[0\]='1'"),
    ("temperature overflow", lambda d: d["steps"][0].__setitem__("temperature", 1e300),
     r"steps\[0\]\.temperature=1e\+300"),
    ("a step as a list", lambda d: d["steps"].__setitem__(0, [1, 2]), r"trace steps\[0\]="),
    ("unknown step key", lambda d: d["steps"][0].__setitem__("evil", 1), r"steps\[0\] key='evil'"),
    ("unknown top key", lambda d: d.__setitem__("x" * 5000, 1), r"trace key='xxxx"),
    ("missing field", lambda d: d.pop("order"), r"'order' is missing"),
    ("bad config", lambda d: d["config"].__setitem__("temperature", -1), r"trace config: temperature=-1"),
    ("wall time NaN-like", lambda d: d.__setitem__("wall_time", "soon"), r"trace wall_time='soon'"),
]


@pytest.mark.parametrize("what, edit, field", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_trace_names_the_field(good, what, edit, field):
    with pytest.raises(ValueError, match=field) as err:
        Trace.from_json(corrupt(good, edit))
    assert len(str(err.value)) < MESSAGE_CHARS
    assert_loads(good)


@pytest.mark.parametrize("text, says", [
    ("[" * 100_000 + "]" * 100_000, "nests too deeply"),
    ('{"a": NaN}', "NaN is not a number"),
    ('{"a": Infinity}', "Infinity is not a number"),
    ('{"a": ' + "9" * 5000 + "}", "does not parse"),
    ("{", "does not parse"),
    ('"just a string"', "trace format='just a string'"),
])
def test_unparseable_or_deeply_nested_json_is_a_value_error(good, text, says):
    with pytest.raises(ValueError, match=says):
        Trace.from_json(text)
    assert_loads(good)


def test_overflowing_number_inside_a_trace_is_refused(good):
    text = corrupt(good, lambda d: d.__setitem__("wall_time", "@")).replace('"@"', "1e999")  # parses as inf
    with pytest.raises(ValueError, match=r"wall_time=inf"):
        Trace.from_json(text)
    assert_loads(good)


# ----- requests ----------------------------------------------------------------------------------
def test_out_of_vocabulary_prompt_id_fails_only_its_request(engine, model):
    future = engine.submit([5, 6, model.vocab_size + 3], DecodeConfig(gen_length=8))
    with pytest.raises(ValueError, match=rf"prompt_ids: {model.vocab_size + 3} .*\[0, {model.vocab_size}\)"):
        future.result(TIMEOUT)
    assert_serves(engine, model)


@pytest.mark.parametrize("field, value, says", [
    ("temperature", 1e308, r"temperature=1e\+308 .*3\.40282e\+38"),
    ("temperature", float("inf"), r"temperature=inf"),
    ("temperature", float("nan"), r"temperature=nan"),
    ("temperature", 10**400, r"temperature=.*finite number"),
    ("temperature", 1e-40, r"temperature=1e-40 .*0 \(argmax\) or"),
    ("temperature_stages", [1.0, 1e39, 0.7], r"temperature_stages\[middle\]=1e\+39"),
    ("top_p", 1e39, r"top_p=1e\+39"),
    ("threshold", float("inf"), r"threshold=inf"),
    ("decay", -1e300, r"decay=-1e\+300"),
    ("top_k", 10**30, r"top_k=1000000000000000000000000000000 .*2147483647"),
])
def test_float_overflow_is_refused_naming_the_field(engine, model, field, value, says):
    with pytest.raises(ValueError, match=says):
        DecodeConfig.preset("balanced", 16, **{field: value})
    future = engine.submit("Emma ", {"gen_length": 16, field: value})
    with pytest.raises(ValueError, match=says):
        future.result(TIMEOUT)
    assert_serves(engine, model)


def test_huge_values_are_clipped_in_messages(engine, model):
    big = "v" * 5_000_000
    for values in ({"k" * 100_000: big}, {"schedule": big}, {"temperature": [[[[[big]]]]]}, {"seed": big}):
        with pytest.raises(ValueError) as err:
            DecodeConfig.from_dict(values)
        assert len(str(err.value)) < CONFIG_MESSAGE_CHARS
        with pytest.raises(ValueError) as err:
            engine.submit("Emma ", values).result(TIMEOUT)
        assert len(str(err.value)) < CONFIG_MESSAGE_CHARS
    with pytest.raises(ValueError, match="prompt_ids: 'vvv") as err:
        engine.submit([1, 2, big], DecodeConfig(gen_length=4)).result(TIMEOUT)
    assert len(str(err.value)) < MESSAGE_CHARS
    nested = []
    for _ in range(100_000):
        nested = [nested]
    with pytest.raises(ValueError, match="temperature=") as err:
        DecodeConfig(temperature=nested)
    assert len(str(err.value)) < MESSAGE_CHARS
    assert_serves(engine, model)


def test_special_token_names_typed_in_a_prompt_are_text(engine, model):
    tok = model.tokenizer
    specials = {tok.pad_token_id, tok.eos_token_id, tok.mask_token_id}
    typed = "Emma <pad> said <eos> and <mask> "
    ids = tok.encode(typed)
    assert not specials & set(ids) and tok.decode(ids) == typed
    trace = engine.submit(typed, DecodeConfig.preset("balanced", 8, seed=1)).result(TIMEOUT)
    assert trace.prompt_ids == ids and not specials & set(trace.prompt_ids)
    assert_serves(engine, model)


def test_vocabulary_smaller_than_the_recorded_candidates(engine, model):
    tiny = TinyDenoiser(vocab=4)
    configs = [DecodeConfig(gen_length=6, confidence=c, seed=2) for c in ("max_prob", "margin", "entropy")]
    configs.append(DecodeConfig(gen_length=6, confidence_from="tempered", temperature=1.5))
    traces = decode(tiny, [[1, 2]] * len(configs), configs, record_candidates=5)
    for trace in traces:
        assert all(0 < len(c) <= 4 for rec in trace.steps for c, m in zip(rec.candidates, rec.confidence)
                   if not math.isnan(m))
        assert set(trace.token_ids) <= {1, 2, 3}  # never the mask (id 0)
    with Engine(tiny, max_batch=2, max_length=16, record_candidates=8) as small:
        assert stress.same(small.submit([1, 2], configs[0]).result(TIMEOUT), traces[0])
    assert_serves(engine, model)


# ----- load --------------------------------------------------------------------------------------
def test_random_requests_from_concurrent_clients_match_each_request_alone(model):
    """Exact under load (small: the benchmark runs 200): every schedule, measure, filter, block,
    teaching switch, revision rule and cache, from 8 clients that the engine steps in turns, as
    app.py serves them (`serve.fair`: a forward within 4x its narrowest row), one thread."""
    requests = stress.random_requests(24, seed=13, gen_lengths=(8, 12, 16), rules=True)
    assert {r.config.revise for r in requests} > {"none"} and {r.config.cache for r in requests} > {"none"}
    got = stress.through_engine(model, requests, clients=8, max_batch=8, fairness=Fairness(stretch=4.0, min_width=64))
    want = stress.alone(model, requests)
    failed = [(i, g) for i, g in enumerate(got) if isinstance(g, BaseException)]
    assert not failed
    differ = [i for i, (g, w) in enumerate(zip(got, want)) if not stress.same(g, w)]
    assert differ == [], f"{len(differ)} of {len(requests)} requests differ from the same request alone"
