"""app/fork_request.py: a fork's change read from JSON and bounded, each bad value named; a candidate the inspector asks
for read from the trace's own record."""
from __future__ import annotations

import pytest

from dllm_viz import DecodeConfig, decode, load_model
from dllm_viz.app.fork_request import MAX_FORK_CHARS, ForkRequest, page_fork_json, parse_fork_json


@pytest.fixture(scope="module")
def world_trace():
    return decode(load_model("world"), ["Tom Lopez of"], DecodeConfig.preset("quality", 32, seed=3))[0]


def test_a_request_reads_positions_as_object_keys_or_pairs():
    assert parse_fork_json('{"step": 3}') == ForkRequest(step=3)
    got = parse_fork_json('{"step": 2, "force": {"4": 17}, "remask": [1, 2], "knobs": {"temperature": 0}}')
    assert got == ForkRequest(step=2, force={4: 17}, remask=(1, 2), knobs={"temperature": 0})
    assert parse_fork_json('{"step": 2, "force": [[4, 17], [5, 3]]}').force == {4: 17, 5: 3}


@pytest.mark.parametrize("text, match", [
    ("", "expected a JSON object with a step"),
    ("[1]", "expected a JSON object with a step"),
    ("{oops", "fork_json='{oops' is invalid"),
    ('{"step": 1, "what": 2}', "what=2 is invalid: no such field"),
    ('{"step": 1, "force": 3}', "force=3 is invalid"),
    ('{"step": 1, "force": {"x": 3}}', "position 'x' is invalid"),
    ('{"step": 1, "remask": 3}', "remask=3 is invalid"),
    ('{"step": 1, "knobs": [1]}', r"knobs=\[1\] is invalid"),
    ("[" * 100000, "characters: expected at most"),
    ("[" * 5000 + "]" * 5000, "nests too deeply|expected a JSON object"),
])
def test_a_bad_request_is_a_value_error_naming_the_field(text, match):
    with pytest.raises(ValueError, match=match):
        parse_fork_json(text)
    assert MAX_FORK_CHARS < 100000


@pytest.mark.parametrize("text, match", [
    ('{"step": 1, "candidate": [0, 1]}', r"candidate=\[0, 1\] is invalid: expected \[position, step, rank\]"),
    ('{"step": 1, "candidate": [0, 99, 0]}', r"no candidate of rank 0 at position 0 at step 99"),
    ('{"step": 1, "candidate": [0, 1, 9]}', r"no candidate of rank 9 at position 0 at step 1"),
    ('{"step": 1, "candidate": [99, 1, 0]}', r"no candidate of rank 0 at position 99 at step 1"),
])
def test_a_candidate_the_trace_did_not_record_is_a_value_error_naming_it(world_trace, text, match):
    with pytest.raises(ValueError, match=match):
        page_fork_json(text, world_trace)
    assert page_fork_json('{"step": 1}', world_trace) == '{"step": 1}'  # /fork's own request, as it came
