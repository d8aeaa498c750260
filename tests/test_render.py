"""render.py: the data page.js draws canvases and the inspector from, facts and compare text: pure
functions of a Trace. What the page draws from the data: tests/test_page_js.py."""
from __future__ import annotations

import copy
import html
import json
import math
import re

import pytest

from dllm_viz import DecodeConfig, decode
from dllm_viz.app.views import render
from dllm_viz.app.strings import t
from dllm_viz.app.views.palette import tint
from dllm_viz.core.analysis import confirmations, divergence, piece
from dllm_viz.core.trace import Trace
from tests.ui_model import make_text_model

PROMPT = "the cat "


@pytest.fixture(scope="module")
def model():
    return make_text_model()


@pytest.fixture(scope="module")
def trace(model) -> Trace:
    return decode(model, [PROMPT], DecodeConfig.preset("balanced", 24, seed=3))[0]


def data_of(html_text: str) -> dict:
    """The data a canvas carries for page.js (its `data-trace` attribute)."""
    return json.loads(html.unescape(re.search(r'data-trace="([^"]*)"', html_text).group(1)))


def test_the_server_writes_no_token_markup_only_the_data_the_page_draws(trace):
    # One renderer for the canvas (page.js): the player and a Compare side carry data, no spans.
    for out in (render.player_html(trace), render.side_canvas_html(trace, "side_a", lang="en", diff={1})):
        assert "data-pos" not in out and 'class="dv-text"></div>' in out
    assert data_of(render.side_canvas_html(trace, "side_a", lang="en", diff={3, 1}))["diff"] == [1, 3]


def test_canvas_data_holds_every_confirmation(trace):
    data = render.canvas_data(trace, lang="en")
    done = confirmations(trace)
    assert data["order"] == trace.order and data["n"] == len(trace.steps) and data["prompt"] == PROMPT
    assert [data["pieces"][i] for i in data["tok"]] == [piece(trace, t) for t in trace.token_ids]
    assert data["tint"] == [tint(c.confidence) for c in done]
    assert data["q"] == [round(math.exp(c.logprob), 3) for c in done]
    assert data["k"] == [rec.k for rec in trace.steps]


def test_player_carries_every_frame_for_the_browser(trace):
    out = render.player_html(trace, lang="zh", frame=1, selected=3, order_width=8)
    data = data_of(out)
    assert data["n"] == len(trace.steps) and data["order"] == trace.order and data["k"] == [r.k for r in trace.steps]
    assert [data["pieces"][i] for i in data["tok"]] == [piece(trace, t) for t in trace.token_ids]
    for rec, guesses in zip(trace.steps, data["guess"]):
        assert [data["pieces"][g] if g >= 0 else None for g in guesses] == [
            piece(trace, a) if a >= 0 else None for a in rec.argmax]
    assert data["t"]["play"] == "▶ 播放"
    assert 'data-frame="1"' in out and 'data-selected="3"' in out
    assert 'data-selected' not in render.player_html(trace)  # None: the page keeps its selection


def test_player_data_holds_each_steps_candidates_for_the_inspector(trace):
    data = render.player_data(trace, lang="en", order_width=8)
    for s, rec in enumerate(trace.steps):
        for pos in range(trace.config.gen_length):
            assert [data["pieces"][i] for i in data["cand"][s][pos]] == [piece(trace, i) for i in rec.candidates[pos]]
            assert data["cprob"][s][pos] == pytest.approx(rec.candidate_probs[pos], abs=5.01e-6)  # 5 decimals
    assert data["block"] == [rec.block for rec in trace.steps] and data["bs"] == trace.config.block_size
    assert DecodeConfig.from_dict(data["link"]["config"]) == trace.config and data["link"]["prompt"] == PROMPT


@pytest.mark.parametrize("cfg", [DecodeConfig.preset("balanced", 24, seed=3),
                                 DecodeConfig(gen_length=16, schedule="threshold", threshold=0.5, seed=1),
                                 DecodeConfig.preset("quality", 24, seed=2, block_length=8)])
def test_ranks_put_each_steps_confirmed_positions_first(model, cfg):
    # The inspector's "rank r of m": the schedule confirms the k best ranked of its block (ties to the
    # lower position), so the positions a step selected hold ranks 1..k, and m counts the running.
    tr = decode(model, [PROMPT], cfg)[0]
    data = render.player_data(tr, lang="en", order_width=8)
    for rec, ranks in zip(tr.steps, data["rank"]):
        assert sorted(ranks[p] for p in rec.selected) == list(range(1, rec.k + 1))
        running = [p for p in range(cfg.gen_length) if p // cfg.block_size == rec.block and not math.isnan(rec.confidence[p])]
        assert sorted(r for r in ranks if r) == list(range(1, len(running) + 1))


def test_threshold_reasons_follow_the_confidence(model):
    tr = decode(model, [PROMPT], DecodeConfig(gen_length=16, schedule="threshold", threshold=0.5, seed=1))[0]
    why = render.player_data(tr, lang="en", order_width=8)["why"]
    for c, reason in zip(confirmations(tr), why):
        assert reason == ("above" if c.confidence >= 0.5 else "floor")
    assert set(render.player_data(decode(model, [PROMPT], DecodeConfig(gen_length=8))[0], lang="en",
                                  order_width=8)["why"]) == {""}


def test_token_text_is_escaped_in_the_data(trace):
    evil = Trace.from_json(trace.to_json())
    evil.vocab[evil.token_ids[0]] = '<script>x</script>"'
    out = render.player_html(evil)
    assert "<script>" not in out and '"<script>x</script>\\""' not in out
    assert '<script>x</script>"' in data_of(out)["pieces"]


def test_rendering_is_pure_and_survives_the_json_round_trip(trace):
    copy_ = Trace.from_json(trace.to_json())
    for f in (0, 2, None):
        assert render.player_html(copy_, frame=f, lang="zh") == render.player_html(trace, frame=f, lang="zh")
    assert render.facts_html(copy_) == render.facts_html(trace)


def test_run_facts_match_metrics(trace):
    facts = dict(render.run_facts(trace))
    assert facts["f_steps"] == str(len(trace.steps))
    assert facts["f_distinct2"] == f"{trace.metrics['distinct_2']:.2f}"


def test_divergence_text_counts_real_steps(model, trace):
    other = decode(model, [PROMPT], trace.config.replace(seed=4, temperature=2.0))[0]
    d = divergence(trace, other)
    text = render.divergence_text(trace, other)
    assert text.startswith(f"Steps: A {len(trace.steps)}, B {len(other.steps)}.")
    assert f"diverge at step {d.first_step + 1}" in text


def test_end_padding_is_keyed_and_in_the_data(trace):
    ended = copy.deepcopy(trace)
    end = 10
    ended.text_end = end  # the first end-of-text token sits at position 10 (rendering reads only this)
    assert t("legend_pad", "en") in render.player_html(ended) and t("legend_pad", "en") not in render.player_html(trace)
    assert render.player_data(ended, lang="en", order_width=8)["end"] == end
    assert render.player_data(trace, lang="en", order_width=8)["end"] == -1


def test_run_facts_report_the_nfe_the_early_stop_saved(trace):
    assert "f_nfe_saved" not in dict(render.run_facts(trace))
    stopped = copy.deepcopy(trace)
    stopped.config = DecodeConfig(gen_length=trace.config.gen_length, schedule="fixed_steps", steps=12)
    stopped.early_stop_step = len(stopped.steps) - 1
    assert dict(render.run_facts(stopped))["f_nfe_saved"] == str(12 - len(stopped.steps)) == str(stopped.nfe_saved)
    stopped.config = DecodeConfig(gen_length=trace.config.gen_length, schedule="threshold")
    assert dict(render.run_facts(stopped))["f_nfe_saved"] == "–"  # the plan depended on the model
