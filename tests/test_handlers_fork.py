"""app/handlers/fork.py: on the world model, the /fork API's checker verdict on both; the inspector's fork
(`Playground.fork_here`): a candidate the trace recorded, forked as core.fork does, shown as a loaded trace. (The
request itself: tests/test_fork_request.py.)"""
from __future__ import annotations

import json

import pytest

from dllm_viz import DecodeConfig, Trace, decode, fork, load_model
from dllm_viz.app.handlers.adapters import parse_config_json
from dllm_viz.app.handlers.playground import ModelChoice, Playground
from dllm_viz.app.serve import make_forker
from dllm_viz.world import check


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


# ----- the inspector's fork (`Playground.fork_here`) ------------------------------------------------------------------
@pytest.fixture(scope="module")
def world():
    return load_model("world")


@pytest.fixture(scope="module")
def world_trace(world) -> Trace:
    return decode(world, ["Tom Lopez of"], DecodeConfig.preset("quality", 32, seed=3))[0]


def test_the_inspectors_fork_is_core_forks_shown_as_a_loaded_trace_with_its_change_selected(world, world_trace):
    pg = serving(world)
    shown = pg.traces.add("s", world_trace)
    assert pg.can_fork(world_trace) and pg.forking_models() == (world.name,)  # the page offers the buttons
    f = 3
    pos = next(p for p, tok in enumerate(world_trace.canvas_at(f - 1)) if tok is None)  # masked on that canvas
    out = pg.fork_here(fork_request=json.dumps({"step": f, "candidate": [pos, f, 1]}), trace=shown, lang="en",
                       session="s")
    token = world_trace.steps[f].candidates[pos][1]
    expected = fork(world, world_trace, f, force={pos: token})
    got = out.trace.trace
    assert got.token_ids == expected.token_ids and got.forks == expected.forks
    assert [r.to_dict() for r in got.steps] == [r.to_dict() for r in expected.steps]  # (NaN: None)
    assert out.canvas["ref"] == out.trace.handle and out.canvas["selected"] == pos
    assert pg.traces.entry("s", out.trace.handle) is not None  # the page reads it by its handle
    differ = sum(a != b for a, b in zip(world_trace.token_ids, got.token_ids))
    assert out.banner == out.trace.banner("en") and f"Forked** after step {f}" in out.banner
    assert f"{differ} of {len(got.token_ids)} positions" in out.banner and repr(world.tokenizer.decode([token])) in \
        out.banner.replace("\\", "")
    assert out.trace.banner("zh") != out.banner and f"第 {f} 步之后" in out.trace.banner("zh")
    # a decided position taken back from the end: the trace again, that position decided anew
    end = len(got.steps)
    back = pg.fork_here(fork_request=json.dumps({"step": end, "remask": [pos]}), trace=out.trace, lang="en",
                        session="s")
    assert back.trace.trace.forks[-1].remask == (pos,) and back.trace.trace.forks[0] == got.forks[0]
    assert back.canvas["selected"] == pos
    # the banner's link: the fork beside the trace it left, in Compare (no decode), A the parent
    assert "(#dv-open-fork-pair)" in out.banner
    paired = pg.fork_pair(trace=out.trace, lang="en", session="s")
    a, b = paired.compare.cmp_traces
    assert (a.handle, a.trace, b.handle, b.trace) == (shown.handle, world_trace, out.trace.handle, got)
    assert paired.compare.cmp_canvas_b["diff"] == [p for p in range(len(got.token_ids))
                                                   if got.token_ids[p] != world_trace.token_ids[p]]
    assert paired.lesson_key is None and "A fork beside the trace it left" in paired.lesson_text
    for box, tr in ((paired.cmp_a, world_trace), (paired.cmp_b, got)):  # their settings, as Compare reads them
        assert parse_config_json(box, gen_length=tr.config.gen_length, seed=tr.config.seed) == tr.config
    assert b.parent is None and back.trace.parent.handle == out.trace.handle  # one level: no chain of traces kept
    again = pg.relabel(lang="zh", trace=out.trace, temperature=0.7, cmp_traces=paired.compare.cmp_traces,
                       sweep_state=None, lesson_key=None, model_pick=world.name, banner=out.banner)
    assert again.banner == out.trace.banner("zh") and again.lesson_text.startswith("### 分叉与原轨迹并排")
    with pytest.raises(ValueError, match="fork_pair: the trace on show is no fork made on this page"):
        pg.fork_pair(trace=shown, lang="en", session="s")


def test_the_inspectors_switch_forks_with_a_setting_changed_and_selects_where_the_text_first_differs(world,
                                                                                                   world_trace):
    """The inspector's switch row sends `{"step": f, "knobs": {name: value}}`: the fork is core.fork's with that setting
    from step f on, its banner names the switch, and the position selected is the first that ends otherwise. A fixed
    setting or a value out of range: a ValueError naming it (the page's gr.Error), the trace on show kept."""
    pg = serving(world)
    shown = pg.traces.add("s", world_trace)
    out = pg.fork_here(fork_request=json.dumps({"step": 2, "knobs": {"temperature": 0.0}}), trace=shown, lang="en",
                       session="s")
    expected = fork(world, world_trace, 2, knobs={"temperature": 0.0})
    got = out.trace.trace
    assert got.token_ids == expected.token_ids and got.forks == expected.forks and got.config.temperature == 0.0
    differ = [p for p, (a, b) in enumerate(zip(world_trace.token_ids, got.token_ids)) if a != b]
    assert out.canvas["selected"] == (differ[0] if differ else 0)
    assert "temperature" in out.banner and "Forked** after step 2" in out.banner
    for change, match in (({"gen_length": 8}, "gen_length"), ({"temperature": -1}, "temperature=-1 is invalid"),
                          ({"schedule": "nope"}, "schedule='nope' is invalid")):
        with pytest.raises(ValueError, match=match):
            pg.fork_here(fork_request=json.dumps({"step": 2, "knobs": change}), trace=shown, lang="en", session="s")
    assert pg.traces.entry("s", shown.handle) is not None


@pytest.mark.parametrize("request_text, match", [
    ('{"step": 99, "force": {"0": 5}}', r"step=99 is invalid: expected a step in \[0, "),
    ('{"step": 1, "force": {"999": 5}}', "999"),
    ("{oops", "fork_json='{oops' is invalid"),
])
def test_a_bad_fork_request_is_a_value_error_and_the_trace_on_show_stays(world, world_trace, request_text, match):
    pg = serving(world)
    shown = pg.traces.add("s", world_trace)
    with pytest.raises(ValueError, match=match):
        pg.fork_here(fork_request=request_text, trace=shown, lang="en", session="s")
    assert pg.traces.entry("s", shown.handle) is not None


def test_a_trace_this_server_cannot_fork_offers_no_fork():
    from tests.ui_model import make_text_model

    tiny = make_text_model()
    world = load_model("world")
    pg = serving(world)
    other = pg.traces.add("s", decode(tiny, ["the cat "], DecodeConfig.preset("balanced", 8))[0])
    assert not pg.can_fork(other.trace)
    for shown in (other, None):
        with pytest.raises(ValueError, match="fork_request: the trace on show cannot be forked here: .*world-mdlm"):
            pg.fork_here(fork_request='{"step": 1}', trace=shown, lang="en", session="s")


def test_a_renoising_trace_forks_from_the_page_by_a_setting_and_a_forced_token_is_refused_by_name():
    """A renoising canvas forks by its knobs alone (the inspector offers it the settings' row, no candidate): the fork
    is core.fork's with that setting; a forced token is refused by name, the trace on show kept."""
    renoise = load_model("world-renoise")
    rn = serving(renoise)
    trace = decode(renoise, ["Ana"], DecodeConfig.preset("diffusion_gemma", 16, seed=1))[0]
    shown = rn.traces.add("s", trace)
    assert rn.can_fork(shown.trace) and rn.forking_models() == (renoise.name,)
    out = rn.fork_here(fork_request=json.dumps({"step": 2, "knobs": {"entropy_bound": 1.0}}), trace=shown, lang="en",
                       session="s")
    expected = fork(renoise, trace, 2, knobs={"entropy_bound": 1.0})
    got = out.trace.trace
    assert got.token_ids == expected.token_ids and got.forks == expected.forks and got.config.entropy_bound == 1.0
    assert "entropy_bound" in out.banner and out.trace.parent.handle == shown.handle
    with pytest.raises(ValueError, match=r"force=\{3: 7\} is invalid on a renoising trace"):
        rn.fork_here(fork_request=json.dumps({"step": 2, "force": {"3": 7}}), trace=shown, lang="en", session="s")
    assert rn.traces.entry("s", shown.handle) is not None
