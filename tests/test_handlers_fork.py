"""app/handlers/fork.py: the /fork request parsed and bounded; on the world model, the checker's verdict on both."""
from __future__ import annotations

import json

import pytest

from dllm_viz import DecodeConfig, Trace, decode, load_model
from dllm_viz.app.handlers.fork import MAX_FORK_CHARS, ForkRequest, parse_fork_json
from dllm_viz.app.handlers.playground import ModelChoice, Playground
from dllm_viz.app.serve import make_forker
from dllm_viz.world import check


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


def serving(model) -> Playground:
    """A page that runs `model` alone, its picker entry able to fork (`make_forker`)."""
    run = lambda prompts, configs, **kw: decode(model, prompts, configs, **kw)  # noqa: E731
    return Playground(run, models={model.name: ModelChoice(run=run, prompts=("Ana",), name=model.name,
                                                           fork=make_forker(model))})


def test_on_the_world_model_the_api_returns_both_verdicts():
    world = load_model("world")
    pg = serving(world)
    trace = decode(world, ["Tom Lopez of"], DecodeConfig.preset("quality", 32, seed=3))[0]
    pos = next(p for p, tok in enumerate(trace.canvas_at(2)) if tok is None)
    text, fork_json, verdicts = pg.fork(trace.to_json(), json.dumps({"step": 3, "force": {str(pos): 7}}))
    fork = Trace.from_json(fork_json)
    got = json.loads(verdicts)
    for side, tr in (("parent", trace), ("fork", fork)):
        v = check(tr.prompt_text + tr.text)
        assert got[side] == {"valid": v.valid, "sentences": v.sentences, "valid_sentences": v.valid_sentences,
                             "rules": sorted(v.rules())}
    assert text == fork.text and fork.token_ids[pos] == 7
    with pytest.raises(ValueError, match="model='tiny-chars' is invalid for a fork here: .*world-mdlm"):
        from tests.ui_model import make_text_model

        tiny = make_text_model()
        other = decode(tiny, ["the cat "], DecodeConfig.preset("balanced", 8))[0]
        pg.fork(other.to_json(), '{"step": 1}')


def test_a_renoising_trace_forks_through_the_api_with_knobs_and_a_forced_token_is_refused_by_name():
    model = load_model("world-renoise")
    pg = serving(model)
    trace = decode(model, ["Ana"], DecodeConfig.preset("diffusion_gemma", 32, seed=1))[0]
    text, fork_json, verdicts = pg.fork(trace.to_json(), json.dumps({"step": 4, "knobs": {"entropy_bound": 1.0}}))
    fork = Trace.from_json(fork_json)
    assert verdicts == "null" and text == fork.text  # the world checker reads the masked world model's text only
    assert fork.steps[:4] == trace.steps[:4] and fork.config.entropy_bound == 1.0 and fork.forks[0].step == 4
    with pytest.raises(ValueError, match=r"^force=\{3: 7\} is invalid on a renoising trace"):
        pg.fork(trace.to_json(), json.dumps({"step": 4, "force": {"3": 7}}))
