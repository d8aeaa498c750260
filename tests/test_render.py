"""render.py: canvas HTML, inspector, facts and compare diff are pure functions of a Trace."""
from __future__ import annotations

import math
import re

import pytest

from dllm_viz import DecodeConfig, decode
from dllm_viz.app import render
from dllm_viz.core.trace import Trace
from tests.ui_model import make_text_model

PROMPT = "the cat "


@pytest.fixture(scope="module")
def model():
    return make_text_model()


@pytest.fixture(scope="module")
def trace(model) -> Trace:
    return decode(model, [PROMPT], DecodeConfig.preset("balanced", 24, seed=3))[0]


def spans(html: str, cls: str) -> list[str]:
    """data-pos of every span whose class list contains `cls`."""
    return re.findall(rf'<span class="[^"]*\b{cls}\b[^"]*" data-pos="(\d+)"', html)


def test_canvas_counts_follow_the_trace_at_every_frame(trace):
    G = trace.config.gen_length
    for f in range(len(trace.steps) + 1):
        html = render.canvas_html(trace, f)
        confirmed = sum(rec.k for rec in trace.steps[:f])
        assert len(spans(html, "dv-tok")) == confirmed
        assert len(spans(html, "dv-mask")) == G - confirmed
        assert len(spans(html, "dv-new")) == (trace.steps[f - 1].k if f else 0)
        assert sorted(map(int, spans(html, "dv-tok") + spans(html, "dv-mask"))) == list(range(G))


def test_new_tokens_are_the_ones_selected_at_that_step(trace):
    for f in range(1, len(trace.steps) + 1):
        html = render.canvas_html(trace, f)
        assert sorted(map(int, spans(html, "dv-new"))) == sorted(trace.steps[f - 1].selected)


def test_ghosts_show_the_argmax_of_the_next_forward_pass(trace):
    f = 1
    html = render.canvas_html(trace, f)
    rec = trace.steps[f]
    for pos in map(int, spans(html, "dv-mask")):
        guess = render.piece(trace, rec.argmax[pos])
        m = re.search(rf'data-pos="{pos}" title="[^"]*">([^<]*)</span>', html)
        assert m is not None and m.group(1) == render.html.escape(guess)


def test_confirmed_tokens_are_tinted_by_their_confidence(trace):
    html = render.canvas_html(trace)
    done = render.confirmations(trace)
    for pos, conf in enumerate(done):
        assert f'data-pos="{pos}" style="background:{render.tint(conf.confidence)}"' in html


def test_canvas_frame_is_clamped_and_none_means_the_end(trace):
    n = len(trace.steps)
    assert render.canvas_html(trace, None) == render.canvas_html(trace, n) == render.canvas_html(trace, n + 5)
    assert render.canvas_html(trace, -3) == render.canvas_html(trace, 0)


def test_token_text_is_html_escaped(trace):
    evil = Trace.from_json(trace.to_json())
    tok = evil.token_ids[0]
    evil.vocab[tok] = "<script>x</script>"
    html = render.canvas_html(evil)
    assert "<script>" not in html and "&lt;script&gt;" in html


def test_rendering_is_pure_and_survives_the_json_round_trip(trace):
    copy = Trace.from_json(trace.to_json())
    for f in (0, 2, None):
        assert render.canvas_html(copy, f, lang="zh") == render.canvas_html(trace, f, lang="zh")
    assert render.facts_html(copy) == render.facts_html(trace)


def test_scale_colour_hits_the_stops_and_tints_differ():
    for x, colour in render.CONFIDENCE_SCALE:
        assert render.scale_color(render.CONFIDENCE_SCALE, x) == colour
    assert render.tint(0.05) != render.tint(0.95)
    assert render.scale_color(render.CONFIDENCE_SCALE, math.nan) == render.CONFIDENCE_SCALE[0][1]


def test_confidence_scale_is_logit_and_symmetric():
    pos = render.confidence_position
    assert pos(0.5) == pytest.approx(0.5)
    assert pos(0.01) == 0.0 and pos(0.001) == 0.0 and pos(0.99) == 1.0 and pos(1.0) == 1.0
    assert pos(0.1) == pytest.approx(1 - pos(0.9))
    assert all(pos(a) < pos(b) for a, b in zip(render.CONFIDENCE_TICKS, render.CONFIDENCE_TICKS[1:]))
    assert math.isnan(pos(math.nan))
    # A small model's typical range still spans distinct tints.
    assert len({render.tint(c) for c in (0.03, 0.06, 0.12, 0.25)}) == 4


def test_tempered_from_top_matches_the_formula():
    probs = [0.5, 0.3, 0.2]
    for temp in (0.5, 1.0, 2.0):
        w = [p ** (1 / temp) for p in probs]
        assert render.tempered_from_top(probs, temp) == pytest.approx([x / sum(w) for x in w])
    assert render.tempered_from_top(probs, 0.0) == [1.0, 0.0, 0.0]
    hot = render.tempered_from_top(probs, 100.0)
    assert max(hot) - min(hot) < 0.01


def test_inspector_uses_the_stored_candidates(trace):
    pos = trace.steps[1].selected[0]
    insp = render.inspect(trace, pos, 1, 0.5)
    rec = trace.steps[1]
    assert insp.step == 1
    assert insp.raw == rec.candidate_probs[pos]
    assert insp.candidates == [render.piece(trace, i) for i in rec.candidates[pos]]
    assert insp.tempered == pytest.approx(render.tempered_from_top(rec.candidate_probs[pos], 0.5))
    assert insp.explanation.startswith("**Confirmed at step 2**")


def test_inspector_explains_a_position_that_waits(trace):
    rec = trace.steps[0]
    waiting = next(p for p in range(trace.config.gen_length) if p not in rec.selected)
    insp = render.inspect(trace, waiting, 0, 1.0, lang="en")
    assert "Still masked after step 1" in insp.explanation
    assert f"k = {rec.k}" in insp.explanation
    # Later frames show the step at which it was confirmed instead.
    late = render.inspect(trace, waiting, len(trace.steps), 1.0)
    assert late.step == trace.order[waiting]
    if trace.order[waiting] < len(trace.steps) - 1:
        assert late.explanation.startswith(f"Confirmed earlier, at step {trace.order[waiting] + 1}")


def test_inspector_threshold_reason(model):
    tr = decode(model, [PROMPT], DecodeConfig(gen_length=16, schedule="threshold", threshold=0.5, seed=1))[0]
    rec = tr.steps[0]
    pos = rec.selected[0]
    text = render.inspect(tr, pos, 0, 1.0).explanation
    expected = "confidence ≥ threshold 0.5" if rec.confidence[pos] >= 0.5 else "min_k floor"
    assert expected in text


def test_inspector_rejects_bad_input(trace):
    with pytest.raises(ValueError, match="position=99"):
        render.inspect(trace, 99, 0, 1.0)
    with pytest.raises(ValueError, match="temperature=-1"):
        render.inspect(trace, 0, 0, -1.0)


def test_inspector_html_has_one_row_per_candidate(trace):
    insp = render.inspect(trace, 0, 0, 0.7)
    html = render.inspector_html(insp, "zh")
    assert html.count('class="dv-insp-row"') == len(insp.candidates)
    assert "加温后" in html
    assert sum(insp.raw_share) == pytest.approx(1) and insp.top_mass == pytest.approx(sum(insp.raw))
    for share, raw in zip(insp.raw_share, insp.raw):
        assert f"<span>{share:.0%} · p = {raw:.3f}</span>" in html


def test_run_facts_match_metrics(trace):
    facts = dict(render.run_facts(trace))
    assert facts["f_nfe"] == str(len(trace.steps))
    assert facts["f_steps"] == str(len(trace.steps))
    assert facts["f_distinct2"] == f"{trace.metrics['distinct_2']:.2f}"


def test_divergence_of_identical_and_different_runs(model, trace):
    same = decode(model, [PROMPT], trace.config)[0]
    d = render.divergence(trace, same)
    assert d.first_step is None and d.order_differs == [] and d.token_differs == []
    other = decode(model, [PROMPT], trace.config.replace(seed=4, temperature=2.0))[0]
    d = render.divergence(trace, other)
    first = next(s for s in range(len(trace.steps)) if set(trace.steps[s].selected) != set(other.steps[s].selected))
    assert d.first_step == first
    assert d.order_differs == [p for p in range(24) if trace.order[p] != other.order[p]]
    assert f"diverge at step {first + 1}" in render.divergence_text(trace, other)


def test_divergence_needs_equal_lengths(model, trace):
    short = decode(model, [PROMPT], DecodeConfig(gen_length=8))[0]
    with pytest.raises(ValueError, match="gen_length=8"):
        render.divergence(trace, short)
