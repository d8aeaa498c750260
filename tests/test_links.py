"""links.py: a view's link holds what decides its trace and where the visitor looked; reading one
back gives the same config, and a malformed one names its parameter. Opening one: handlers_play."""
from __future__ import annotations

import json

import pytest

from dllm_viz import DecodeConfig, Trace, decode
from dllm_viz.app.links import link_fields, parse_link
from dllm_viz.app.handlers.outputs import KEEP
from dllm_viz.app.handlers.playground import Playground
from tests.ui_model import CountingRunner, make_text_model


@pytest.fixture(scope="module")
def trace():
    cfg = DecodeConfig.preset("quality", 24, seed=7, temperature_stages=(1.2, 1.0, 0.7))
    return decode(make_text_model(), ["the cat "], cfg)[0]


def query_of(trace, **more) -> dict[str, str]:
    fields = link_fields(trace)
    return {"model": fields["model"], "prompt": fields["prompt"], "config": json.dumps(fields["config"]),
            **{k: str(v) for k, v in more.items()}}


def test_a_link_holds_the_config_in_short_and_reads_back_the_same(trace):
    fields = link_fields(trace)
    assert fields["prompt"] == "the cat " and fields["model"] == trace.model
    assert "confidence_from" not in fields["config"] and fields["config"]["seed"] == 7  # defaults left out
    link = parse_link(query_of(trace, step=2, pos=5, tab="compare", lesson="rng"))
    assert link.config == trace.config and (link.step, link.pos, link.tab, link.lesson) == (2, 5, "compare", "rng")
    assert parse_link({}).config is None  # no link: nothing to open


def test_a_compare_link_carries_the_step_both_sides_show(trace):
    # page.js's copyLink writes cmp_step (the pair player's frame) beside the lesson; reading it back gives it.
    link = parse_link(query_of(trace, tab="compare", lesson="rng", cmp_step=4))
    assert (link.tab, link.lesson, link.cmp_step) == ("compare", "rng", 4)
    assert parse_link(query_of(trace, tab="compare", lesson="rng")).cmp_step is None  # none: both at their ends
    assert parse_link(query_of(trace, tab="compare", cmp_step=0)).cmp_step == 0


@pytest.mark.parametrize(("query", "named"), [
    ({"config": "{oops"}, "link config="), ({"config": "[1]"}, "link config="),
    ({"config": '{"temperature": "hot"}'}, "temperature="), ({"config": "{}", "step": "-1"}, "link step="),
    ({"config": "{}", "pos": "x"}, "link pos="), ({"config": "{}", "tab": "sweep"}, "link tab="),
    ({"config": "{}", "lesson": "nope"}, "link lesson="), ({"config": "{}", "prompt": "x" * 5000}, "link prompt"),
    ({"tab": "compare", "cmp_step": "-2"}, "link cmp_step='-2' is invalid: expected an integer >= 0"),
    ({"tab": "compare", "cmp_step": "two"}, "link cmp_step='two' is invalid: expected an integer >= 0"),
    ({"tab": "compare", "cmp_step": "1.5"}, "link cmp_step="), ({"cmp_step": "3"}, "link cmp_step=3 .*tab=compare"),
])
def test_a_malformed_link_names_its_parameter(query, named):
    with pytest.raises(ValueError, match=named):
        parse_link(query)


def test_opening_a_link_decodes_it_once_at_its_step_and_position(trace, tmp_path):
    runner = CountingRunner()
    pg = Playground(runner, export_dir=tmp_path)
    assert list(pg.play.open_link(query={}, lang="en"))[0].trace is KEEP and runner.calls == []
    with pytest.raises(ValueError, match="link cmp_step="):  # refused before anything decodes
        list(pg.play.open_link(query=query_of(trace, tab="compare", cmp_step=-1), lang="en"))
    assert runner.calls == []
    *live, final = pg.play.open_link(query=query_of(trace, step=2, pos=5), lang="en")
    assert len(runner.calls) == 1
    assert final.trace.trace.token_ids == trace.token_ids and final.trace.trace.order == trace.order
    assert (final.canvas["ref"], final.canvas["frame"], final.canvas["selected"]) == (final.trace.handle, 2, 5)
    first = (live or [final])[0]
    assert first.knobs.temperature == trace.config.temperature and first.knobs.stages_on is True
    assert first.prompt == "the cat "


def test_a_forks_link_holds_the_settings_its_decode_started_with_and_its_fork_points():
    from dllm_viz import fork, load_model

    world = load_model("world")
    tr = decode(world, ["Tom Lopez of"], DecodeConfig.preset("quality", 32, seed=3))[0]
    first = fork(world, tr, 2, force={5: 7})
    out = fork(world, first, 4, remask=[5], knobs={"temperature": 0.0})
    fields = link_fields(out)
    assert DecodeConfig.from_dict(fields["config"]) == tr.config  # not the switched one: the fork points switch it
    assert fields["forks"] == [{"step": 2, "force": [[5, 7]], "remask": [], "knobs": {}},
                               {"step": 4, "force": [], "remask": [5], "knobs": {"temperature": 0.0}}]
    link = parse_link({**query_of(out), "forks": json.dumps(fields["forks"])})
    assert [(f.step, f.force, f.remask, f.knobs) for f in link.forks] == [
        (2, {5: 7}, (), {}), (4, {}, (5,), {"temperature": 0.0})]
    assert "forks" not in link_fields(tr)  # a trace of no fork: no fork points in its link
    d = json.loads(out.to_json())  # a trace file whose fork point switched what no setting is: it loads, with no link
    d["forks"][1]["knobs"], d["forks"][1]["was"] = {"no_such_knob": 1}, {"no_such_knob": 0}
    assert link_fields(Trace.from_json(json.dumps(d))) is None


@pytest.mark.parametrize(("forks", "named"), [
    ("{oops", r"link forks='\{oops' is invalid: expected a JSON list of 1 to 8"),
    ("[]", "link forks='\\[\\]' is invalid"), ('{"step": 1}', "link forks="),
    (json.dumps([{"step": 1}] * 9), "expected a JSON list of 1 to 8"),
    ('[{"step": 1}, {"step": -1, "force": 3}]', r"link forks\[1\]: force=3 is invalid"),
    ('[{"what": 1}]', r"link forks\[0\]: "), ("[" * 100 + "]" * 100, "link forks="),
])
def test_a_malformed_fork_list_names_the_parameter(forks, named):
    with pytest.raises(ValueError, match=named):
        parse_link({"config": "{}", "forks": forks})


FORKS = json.dumps([{"step": 1, "remask": [0]}])


@pytest.mark.parametrize(("query", "named"), [
    ({"tab": "compare", "forks": FORKS, "pair": "lesson"}, "link pair='lesson' is invalid: expected one of fork"),
    ({"tab": "compare", "pair": "fork"}, "link pair=fork is invalid: the Compare tab .* of a fork's link"),
    ({"forks": FORKS, "pair": "fork"}, "link pair=fork is invalid"),
    ({"tab": "compare", "forks": FORKS, "pair": "fork", "lesson": "rng"}, "naming no lesson and no configs"),
    ({"tab": "compare", "forks": FORKS, "pair": "fork", "a": "{}"}, "naming no lesson and no configs"),
])
def test_a_fork_pair_link_is_a_forks_compare_tab_and_nothing_else(query, named):
    assert parse_link({"config": "{}", "tab": "compare", "forks": FORKS, "pair": "fork"}).pair == "fork"
    with pytest.raises(ValueError, match=named):
        parse_link({"config": "{}", **query})


def test_opening_a_forks_link_makes_the_fork_again_at_its_step_and_position():
    from dllm_viz import fork, load_model
    from tests.test_handlers_fork import serving

    world = load_model("world")
    pg = serving(world)
    tr = decode(world, ["Tom Lopez of"], DecodeConfig.preset("quality", 32, seed=3))[0]
    out = fork(world, fork(world, tr, 2, force={5: 7}), 4, remask=[5], knobs={"temperature": 0.0})
    fields = link_fields(out)
    query = {**query_of(out), "forks": json.dumps(fields["forks"]), "step": "3", "pos": "5"}
    views = list(pg.open_page(query=query, lang="en", session="s"))
    last = views[-1]
    got = last.trace.trace
    assert got.token_ids == out.token_ids and [r.to_dict() for r in got.steps] == [r.to_dict() for r in out.steps]
    assert [(p.step, p.force, p.remask, p.knobs) for p in got.forks] == \
        [(p.step, p.force, p.remask, p.knobs) for p in out.forks]
    assert (last.canvas["frame"], last.canvas["selected"]) == (3, 5)
    assert last.knobs.temperature == 0.0 and "Forked** after step 4" in last.banner
    # with pair=fork the page then asks for the fork beside the trace it left (page.js presses the fork pair's button):
    # the link's own decode on side A, the fork made again on side B
    assert parse_link({**query, "tab": "compare", "pair": "fork"}).pair == "fork"
    a, b = pg.fork_pair(trace=last.trace, lang="en", session="s").compare.cmp_traces
    assert a.trace.token_ids == tr.token_ids and [r.to_dict() for r in a.trace.steps] == [r.to_dict() for r in tr.steps]
    assert b.handle == last.trace.handle and b.trace is got
