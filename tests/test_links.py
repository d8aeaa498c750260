"""links.py: a view's link holds what decides its trace and where the visitor looked; reading one
back gives the same config, and a malformed one names its parameter. Opening one: handlers_play."""
from __future__ import annotations

import json

import pytest

from dllm_viz import DecodeConfig, decode
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
