"""app/views/renoise.py: what the page draws of a renoising trace, as data (issue 36, item 6): the frames'
states (noise, accepted, final, not begun) with the token a renoised position lost, the stability map, the
per-step series, and their words in both languages."""
from __future__ import annotations

import pytest

from dllm_viz import DecodeConfig, decode
from dllm_viz.app.strings import LANGS
from dllm_viz.app.views import renoise as view
from dllm_viz.core.trace import Trace
from tests.renoise_table import TableRenoiser


@pytest.fixture(scope="module")
def trace() -> Trace:
    (tr,) = decode(TableRenoiser(), [[3, 4, 5]], DecodeConfig(gen_length=18, seed=1, max_denoising_steps=6,
                                                              entropy_bound=0.8, confidence_threshold=2.0))
    return tr


def test_each_frame_is_what_its_step_reads_with_every_positions_state(trace):
    frames = view.frames(trace)
    assert len(frames) == len(trace.steps) + 1
    for f, frame in enumerate(frames):
        assert frame["token"] == trace.canvas_at(f - 1)  # scrubbing reads one frame, either way
        for p, state in enumerate(frame["state"]):
            span = next(s for s in trace.canvases if s.start <= p < s.end)
            if f == len(trace.steps) or span.last_step < f:
                assert view.STATES[state] == "final"
            elif span.first_step > f:
                assert view.STATES[state] == "empty" and frame["token"][p] is None
            else:  # the canvas step f reads: accepted at the step before (same canvas), else noise
                before = trace.steps[f - 1] if f > span.first_step else None
                accepted = before is not None and (p - span.start) in before.renoise.accepted
                assert view.STATES[state] == ("accepted" if accepted else "noise")
                if accepted:
                    assert frame["token"][p] == before.renoise.proposal[p - span.start]
                    assert frame["since"][p] is not None and frame["since"][p] <= f - 1
                else:
                    assert frame["since"][p] is None


def test_a_renoised_position_shows_the_accepted_token_it_lost(trace):
    frames = view.frames(trace)
    lost = [(f, p, tok) for f, frame in enumerate(frames) for p, tok in frame["lost"].items()]
    assert lost  # the table model's bound lets accepted tokens be renoised later
    for f, p, tok in lost:
        assert frames[f - 1]["state"][p] == view.ACCEPTED and frames[f - 1]["token"][p] == tok
        assert frames[f]["state"][p] == view.NOISE
        assert trace.steps[f - 1].renoise.lost[p - trace.canvases[trace.steps[f - 1].block].start] == tok


def test_since_counts_a_run_of_acceptances_of_the_same_token(trace):
    frames = view.frames(trace)
    runs = 0
    for f in range(2, len(frames)):
        for p, since in enumerate(frames[f]["since"]):
            if since is not None and since < f - 1:  # accepted before the previous step too, the same token
                runs += 1
                assert frames[f - 1]["state"][p] == view.ACCEPTED and frames[f - 1]["token"][p] == frames[f]["token"][p]
                assert frames[f - 1]["since"][p] == since
    assert runs > 0


def test_the_stability_map_counts_when_and_how_often_each_position_changed(trace):
    m = view.stability(trace)
    frames = view.frames(trace)
    for p in range(len(trace.token_ids)):
        changed = [f - 1 for f in range(1, len(frames)) if frames[f]["token"][p] != frames[f - 1]["token"][p]
                   and frames[f - 1]["token"][p] is not None]
        span = next(s for s in trace.canvases if s.start <= p < s.end)
        assert m["changes"][p] == len(changed)
        assert m["last_changed"][p] == (changed[-1] if changed else span.first_step)
    assert m["settled"] == trace.order and max(m["changes"]) > 1


def test_the_series_puts_the_bound_against_the_sums_acceptance_compared(trace):
    s = view.series(trace)
    n = len(trace.steps)
    assert all(len(v) == n for v in s.values())
    assert s["accepted"] == [rec.k for rec in trace.steps] and s["bound"] == [0.8] * n
    assert all(a <= b + 1e-5 for a, b in zip(s["sum_less_max"], s["bound"]))  # what the bound admitted
    assert any(total > bound for total, bound, k in zip(s["sum"], s["bound"], s["accepted"]) if k < 6)
    assert s["temperature"][0] == pytest.approx(0.8) and s["temperature"][1] < s["temperature"][0]
    assert s["stopped"] == [rec.renoise.stopped for rec in trace.steps]
    assert s["canvas"] == [rec.block for rec in trace.steps]


def test_words_in_both_languages(trace):
    frames = view.frames(trace)
    for lang in LANGS:
        legend = view.legend(lang)
        assert set(legend) == {*view.STATES, "lost"} and all(legend.values())
        assert all(view.labels(lang).values())
        f = next(f for f, fr in enumerate(frames) if fr["lost"])
        p = next(iter(frames[f]["lost"]))
        tip = view.tooltip(trace, frames[f], p, f, lang)
        assert trace.token_text(frames[f]["lost"][p]) in tip and str(f - 1) in tip
    assert view.legend("en")["noise"] != view.legend("zh")["noise"]


def test_a_masked_trace_is_refused():
    from dllm_viz import load_model

    (masked,) = decode(load_model("tasks"), ["copy : a ="], DecodeConfig(gen_length=4))
    with pytest.raises(ValueError, match="expected a renoising trace"):
        view.frames(masked)
