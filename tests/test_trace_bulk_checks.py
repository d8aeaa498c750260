"""The 3 MB trace's parse check and page encoding done in bulk give exactly what the one-by-one code gave.

`trace_schema._candidates_ok` and the list checks of `trace_checks` test item types with one
`set(map(type, ...))` pass, and `views.wire` rounds a chunk's floats to millionths as one tensor
(issue 43's 3 MB upload). The old expressions are kept here as references: the bulk code must accept
and refuse exactly the same lists (a refused file's message comes from the same item-by-item check),
and send the same bytes, on the stored examples, a 3 MB trace and malformed copies of it.
"""
from __future__ import annotations

import copy
import json
import math
from itertools import chain

import pytest

from dllm_viz import DecodeConfig, assets, decode
from dllm_viz.app.views import wire
from dllm_viz.core import trace_checks, trace_schema
from dllm_viz.core.trace import Trace
from tests.ui_model import make_text_model

EXAMPLES = sorted(assets.path("examples").glob("*.json"))


def old_candidates_ok(cands: list, probs: list, known_ids: set[int] | None) -> bool:
    """`_candidates_ok` as it was: one generator step per position."""
    if not all(type(ids) is list and type(ps) is list and len(ids) == len(ps) <= trace_schema.MAX_CANDIDATES
               for ids, ps in zip(cands, probs)):
        return False
    ids, ps = list(chain.from_iterable(cands)), list(chain.from_iterable(probs))
    if ids and not (set(map(type, ids)) == {int} and 0 <= min(ids) and max(ids) <= trace_schema.MAX_TOKEN_ID):
        return False
    if known_ids is not None and not known_ids.issuperset(ids):
        return False
    slack = trace_schema.PROB_SLACK
    return not ps or (set(map(type, ps)) <= {float, int} and -slack <= min(ps) and max(ps) <= 1 + slack
                      and (total := sum(ps)) == total)


def old_m6(values) -> list[int]:
    """`wire._m6` as it was: `round` one value at a time."""
    return [round(x * wire.SCALE) if x == x else wire.NAN_CODE for x in values]


@pytest.fixture(scope="module")
def big() -> Trace:
    """About 3 MB as JSON: 240 positions, one confirmed per step, top-5 candidates (bench/ui_bench.py's replay)."""
    cfg = DecodeConfig(gen_length=240, schedule="fixed_steps", steps=240, seed=1)
    return decode(make_text_model(), ["the cat "], cfg)[0]


@pytest.fixture(scope="module")
def big_data(big) -> dict:
    text = big.to_json()
    assert len(text) > 2_500_000
    return json.loads(text)


def _refusal(data: dict) -> str:
    try:
        Trace.from_dict(data)
    except ValueError as err:
        return str(err)
    return "accepted"


def _cell(step: int, key: str, p: int, j: int | None, value):
    def edit(data: dict) -> None:
        row = data["steps"][step][key]
        if j is None:
            row[p] = value
        else:
            row[p][j] = value
    return edit


# Malformed copies of the big trace (step 7: positions 230-239 are still masked, with candidates).
BAD = {
    "bool id": _cell(7, "candidates", 233, 0, True), "float id": _cell(7, "candidates", 233, 1, 2.0),
    "negative id": _cell(7, "candidates", 235, 2, -1), "huge id": _cell(7, "candidates", 235, 0, 10**9),
    "id not in vocab": _cell(7, "candidates", 239, 0, 999_999), "string id": _cell(7, "candidates", 230, 0, "a"),
    "null id": _cell(7, "candidates", 230, 4, None),
    "p above 1": _cell(7, "candidate_probs", 236, 1, 1.5), "p below 0": _cell(7, "candidate_probs", 236, 1, -0.5),
    "p NaN": _cell(7, "candidate_probs", 236, 3, math.nan), "p infinite": _cell(7, "candidate_probs", 236, 3, math.inf),
    "p string": _cell(7, "candidate_probs", 236, 3, "x"), "p bool": _cell(7, "candidate_probs", 236, 3, True),
    "row a number": _cell(7, "candidates", 232, None, 5), "row a tuple": _cell(7, "candidates", 232, None, (1, 2)),
    "probs an object": _cell(7, "candidate_probs", 232, None, {}),
    "row shorter": _cell(7, "candidates", 232, None, [1, 2]),
    "probs shorter": _cell(7, "candidate_probs", 232, None, [0.1]),
    "row too long": lambda d: (_cell(7, "candidates", 232, None, [5] * 65)(d),
                               _cell(7, "candidate_probs", 232, None, [0.01] * 65)(d)),
    "argmax bool": _cell(7, "argmax", 4, None, True), "argmax float": _cell(7, "argmax", 4, None, 3.0),
    "confidence string": _cell(7, "confidence", 4, None, "x"),
    "confidence bool": _cell(7, "confidence", 4, None, False),
    "confidence NaN": _cell(7, "confidence", 4, None, math.nan), "logprob positive": _cell(7, "logprobs", 0, None, 3.0),
    "two bad steps, the first named": lambda d: (_cell(7, "candidates", 233, 0, -4)(d),
                                                 _cell(3, "candidates", 231, 0, 1.5)(d)),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_a_malformed_trace_is_refused_with_the_message_the_one_by_one_checks_give(big_data, name, monkeypatch):
    data = copy.deepcopy(big_data)
    BAD[name](data)
    got = _refusal(data)
    assert got.startswith("trace steps[")
    monkeypatch.setattr(trace_schema, "_candidates_ok", old_candidates_ok)
    assert _refusal(data) == got
    monkeypatch.setattr(trace_schema, "_candidates_ok", lambda *_: False)  # always the item-by-item check
    assert _refusal(data) == got


def test_the_bulk_candidate_check_agrees_with_the_old_one_on_every_step(big_data):
    vocab = {int(i) for i in big_data["vocab"]} if isinstance(big_data.get("vocab"), dict) else None
    for step in big_data["steps"]:
        cands, probs = step["candidates"], step["candidate_probs"]
        for known in (None, vocab):
            assert trace_schema._candidates_ok(cands, probs, known) is old_candidates_ok(cands, probs, known) is True
    cands, probs = big_data["steps"][7]["candidates"], big_data["steps"][7]["candidate_probs"]
    for p, bad in ((230, [True]), (231, 2), (232, [1] * 65), (233, [-1]), (236, (1,)), (235, [1, 2, 3, 4, 5, 6])):
        broken = cands[:p] + [bad] + cands[p + 1:]
        assert trace_schema._candidates_ok(broken, probs, None) is old_candidates_ok(broken, probs, None) is False


@pytest.mark.parametrize("items", [[], [1, 2, 3], [1, True], [1, 2.0], [None, 1], [1, "a"], [-5, 7], [0.5, 1]])
def test_the_list_checks_accept_what_they_accepted(items):
    def old_ints_ok(v, lo, hi):
        return all(type(x) is int for x in v) and not (v and (min(v) < lo or max(v) > hi))

    def outcome(fn):
        try:
            return fn()
        except ValueError as err:
            return str(err)
    got = outcome(lambda: trace_checks.check_ints("x", items, -1, 5))
    assert (got == items) is old_ints_ok(items, -1, 5)
    numbers = outcome(lambda: trace_checks.check_numbers("x", items, 0.0, 1.0))
    values = items
    old_ok = all(type(x) in (float, int) for x in values) and (
        not values or (0.0 <= min(values) and max(values) <= 1.0 and (total := sum(values)) == total))
    assert (numbers is None) is old_ok


@pytest.mark.parametrize("values", [
    [i / 64 for i in range(-64, 65)],
    [k * 5e-7 for k in range(-300, 300)],  # halves of a millionth, where rounding could part
    [2.5e-6, 3.5e-6, -2.5e-6, 0.0000005, -0.0000005, 1.0000005] * 20,
    [math.nan, 0.25, -1e-7, 1, 0, True] * 20,  # NaN, ints and a bool among floats
    [-1e30, 0.5] * 40,  # a log-probability of -1e30: too big for one tensor, rounded one by one
    [math.inf, 0.5] * 40,
])
def test_bulk_millionths_equal_rounding_one_value_at_a_time(values):
    def outcome(fn):
        try:
            return fn()
        except (OverflowError, TypeError) as err:  # an infinity; a column's integer too big for 32 bits
            return type(err)
    assert len(values) >= wire.BULK
    assert outcome(lambda: wire._m6(values)) == outcome(lambda: old_m6(values))
    assert outcome(lambda: wire._m6_column(values)) == outcome(lambda: wire.column(old_m6(values)))


def test_bulk_millionths_keep_refusing_what_is_not_a_number():
    with pytest.raises(TypeError):
        wire._m6([0.5] * 70 + [None])


def _wire_bytes(trace: Trace) -> tuple[str, str]:
    enc = wire.encoder_for(trace)
    streamed = [enc.chunk([rec]) for rec in trace.steps] + [enc.chunk([], done=wire.done(trace))]
    return wire.dumps(wire.chunks(trace)), wire.dumps(streamed)


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_a_stored_example_travels_as_the_same_bytes(path, monkeypatch):
    trace = Trace.from_json(path.read_text(encoding="utf-8"))
    bulk = _wire_bytes(trace)
    monkeypatch.setattr(wire, "_m6_tensor", lambda values: None)  # every value rounded on its own, as before
    assert _wire_bytes(trace) == bulk


def test_the_3mb_trace_travels_as_the_same_bytes(big, monkeypatch):
    bulk = _wire_bytes(big)
    monkeypatch.setattr(wire, "_m6_tensor", lambda values: None)
    assert _wire_bytes(big) == bulk
