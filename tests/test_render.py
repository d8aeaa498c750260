"""render.py: canvas and player HTML, inspector, facts and compare text are pure functions of a Trace."""
from __future__ import annotations

import copy
import math
import re

import pytest

from dllm_viz import DecodeConfig, decode
from dllm_viz.app import render
from dllm_viz.app.i18n import t
from dllm_viz.app.palette import tint
from dllm_viz.core.analysis import confirmations, divergence, piece, tempered_from_top
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
        guess = piece(trace, rec.argmax[pos])
        m = re.search(rf'data-pos="{pos}" title="[^"]*">([^<]*)</span>', html)
        assert m is not None and m.group(1) == render.html.escape(guess)


def test_confirmed_tokens_are_tinted_by_their_confidence(trace):
    html = render.canvas_html(trace)
    done = confirmations(trace)
    for pos, conf in enumerate(done):
        assert f'data-pos="{pos}" style="background:{tint(conf.confidence)}"' in html


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


def test_inspector_uses_the_stored_candidates_of_the_confirming_step(trace):
    pos = trace.steps[1].selected[0]
    insp = render.inspect(trace, pos, 2, 0.5)  # frame 2: the canvas after step 2, which confirmed `pos`
    rec = trace.steps[1]
    assert insp.step == 1
    assert insp.raw == rec.candidate_probs[pos]
    assert insp.candidates == [piece(trace, i) for i in rec.candidates[pos]]
    assert insp.tempered == pytest.approx(tempered_from_top(rec.candidate_probs[pos], 0.5))
    assert insp.explanation.startswith("**Confirmed at step 2**")


def test_inspector_never_tells_the_future(trace):
    # A position still masked on the canvas of frame f shows the next forward pass's prediction and
    # says it is confirmed later, but not at which step nor which token.
    for f in range(len(trace.steps)):
        for pos in range(trace.config.gen_length):
            if trace.order[pos] < f:
                continue
            text = render.inspect(trace, pos, f, 1.0).explanation
            assert "Confirmed at" not in text and "Drew" not in text
            assert repr(piece(trace, trace.token_ids[pos])) not in text
            assert f"Still masked after step {f}" in text and "confirmed at a later step" in text


def test_inspector_shows_an_earlier_confirmation_as_such(trace):
    pos = trace.steps[0].selected[0]
    late = render.inspect(trace, pos, len(trace.steps), 1.0)
    assert late.step == 0
    if len(trace.steps) > 1:
        assert late.explanation.startswith("Confirmed earlier, at step 1")


def test_inspector_threshold_reason(model):
    tr = decode(model, [PROMPT], DecodeConfig(gen_length=16, schedule="threshold", threshold=0.5, seed=1))[0]
    rec = tr.steps[0]
    pos = rec.selected[0]
    text = render.inspect(tr, pos, 1, 1.0).explanation
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
    assert facts["f_steps"] == str(len(trace.steps))
    assert facts["f_distinct2"] == f"{trace.metrics['distinct_2']:.2f}"


def test_divergence_text_counts_real_steps(model, trace):
    other = decode(model, [PROMPT], trace.config.replace(seed=4, temperature=2.0))[0]
    d = divergence(trace, other)
    text = render.divergence_text(trace, other)
    assert text.startswith(f"Steps: A {len(trace.steps)}, B {len(other.steps)}.")
    assert f"diverge at step {d.first_step + 1}" in text


def test_player_carries_every_frame_for_the_browser(trace):
    import html as html_lib
    import json
    import re

    out = render.player_html(trace, lang="zh", frame=1, selected=3, order_width=8)
    data = json.loads(html_lib.unescape(re.search(r'data-trace="([^"]*)"', out).group(1)))
    assert data["n"] == len(trace.steps) and data["order"] == trace.order and data["k"] == [r.k for r in trace.steps]
    assert [data["pieces"][i] for i in data["tok"]] == [piece(trace, t) for t in trace.token_ids]
    for rec, guesses in zip(trace.steps, data["guess"]):
        assert [data["pieces"][g] if g >= 0 else None for g in guesses] == [
            piece(trace, a) if a >= 0 else None for a in rec.argmax]
    assert data["t"]["play"] == "▶ 播放"
    assert 'data-frame="1"' in out and 'data-selected="3"' in out
    assert out.count("data-pos=") == trace.config.gen_length


def test_inspector_note_never_contradicts_the_confidence_source(model):
    for src, scope in (("raw", "selected"), ("tempered", "selected"), ("sampled", "all")):
        tr = decode(model, [PROMPT], DecodeConfig(gen_length=8, temperature=1.5, confidence_from=src, sample_scope=scope))[0]
        note = render.inspector_note(tr, render.inspect(tr, 0, 0, 1.5), "en")
        assert ("never sees the tempered numbers" in note) == (src == "raw")




def test_end_padding_is_dimmed_keyed_and_inspectable(trace):
    ended = copy.deepcopy(trace)
    end = 10
    ended.text_end = end  # the first end-of-text token sits at position 10 (rendering reads only this)
    html = render.canvas_html(ended)
    assert spans(html, "dv-pad") == [str(p) for p in range(end, ended.config.gen_length)]
    assert t("legend_pad", "en") in html and t("legend_pad", "en") not in render.canvas_html(trace)
    player = render.player_html(ended)
    assert spans(player, "dv-pad") == spans(html, "dv-pad") and t("legend_pad", "en") in player
    assert render.player_data(ended, lang="en", order_width=8)["end"] == end
    assert render.player_data(trace, lang="en", order_width=8)["end"] == -1
    insp = render.inspect(ended, end + 1, len(ended.steps), 1.0)  # a padding position is still inspected
    assert insp.position == end + 1


def test_run_facts_report_the_nfe_the_early_stop_saved(trace):
    assert "f_nfe_saved" not in dict(render.run_facts(trace))
    stopped = copy.deepcopy(trace)
    stopped.config = DecodeConfig(gen_length=trace.config.gen_length, schedule="fixed_steps", steps=12)
    stopped.early_stop_step = len(stopped.steps) - 1
    assert dict(render.run_facts(stopped))["f_nfe_saved"] == str(12 - len(stopped.steps)) == str(stopped.nfe_saved)
    stopped.config = DecodeConfig(gen_length=trace.config.gen_length, schedule="threshold")
    assert dict(render.run_facts(stopped))["f_nfe_saved"] == "–"  # the plan depended on the model
