"""core/analysis.py: reading a finished trace (confirmations, divergence, tempered shares, k per step)."""
from __future__ import annotations

import pytest

from dllm_viz import DecodeConfig, decode
from dllm_viz.core import analysis
from tests.ui_model import make_text_model

PROMPT = "the cat "


@pytest.fixture(scope="module")
def model():
    return make_text_model()


@pytest.fixture(scope="module")
def trace(model):
    return decode(model, [PROMPT], DecodeConfig.preset("balanced", 24, seed=3))[0]


def test_every_position_is_confirmed_once_at_its_order_step(trace):
    done = analysis.confirmations(trace)
    assert all(c is not None for c in done)
    assert [c.step for c in done] == trace.order
    assert [c.token for c in done] == trace.token_ids


def test_tempered_shares_follow_the_formula():
    probs = [0.5, 0.3, 0.2]
    for temp in (0.5, 1.0, 2.0):
        w = [p ** (1 / temp) for p in probs]
        assert analysis.tempered_from_top(probs, temp) == pytest.approx([x / sum(w) for x in w])
    assert analysis.tempered_from_top(probs, 0.0) == [1.0, 0.0, 0.0]
    hot = analysis.tempered_from_top(probs, 100.0)
    assert max(hot) - min(hot) < 0.01
    assert analysis.tempered_from_top([0.0, 1.0], 1.0)[0] == pytest.approx(analysis.P_FLOOR)


def test_identical_runs_never_diverge_and_different_runs_diverge_where_the_sets_differ(model, trace):
    same = decode(model, [PROMPT], trace.config)[0]
    d = analysis.divergence(trace, same)
    assert d.first_step is None and d.order_differs == [] and d.token_differs == []
    other = decode(model, [PROMPT], trace.config.replace(seed=4, temperature=2.0))[0]
    d = analysis.divergence(trace, other)
    first = next(s for s in range(len(trace.steps)) if set(trace.steps[s].selected) != set(other.steps[s].selected))
    assert d.first_step == first
    assert d.order_differs == [p for p in range(24) if trace.order[p] != other.order[p]]


def test_divergence_needs_equal_lengths(model, trace):
    short = decode(model, [PROMPT], DecodeConfig(gen_length=8))[0]
    with pytest.raises(ValueError, match="gen_length=8"):
        analysis.divergence(trace, short)


@pytest.mark.parametrize("cfg", [
    DecodeConfig.preset("balanced", 64), DecodeConfig(gen_length=48, schedule="fixed_steps", steps=12),
    DecodeConfig(gen_length=32, schedule="adaptive", top_k=6, block_length=16),
    DecodeConfig.preset("speed", 40, min_k=2),
])
def test_k_sequence_sums_to_gen_length_and_matches_a_decode(model, cfg):
    ks = analysis.k_sequence(cfg, limit=10**6)
    assert sum(ks) == cfg.gen_length
    assert ks == [rec.k for rec in decode(model, ["a "], cfg)[0].steps]


def test_decay_has_a_dead_zone_at_small_top_k():
    # With top_k = 8 the floor of k * decay is 7 for every decay in [0.88, 0.99]: the sequences agree.
    seqs = {tuple(analysis.k_sequence(DecodeConfig(gen_length=64, top_k=8, decay=d))) for d in (0.88, 0.9, 0.95, 0.99)}
    assert len(seqs) == 1
    assert analysis.k_sequence(DecodeConfig(gen_length=64, schedule="threshold")) is None


@pytest.mark.parametrize("rule", ["remdm", "joint_threshold"])
def test_events_replay_every_revision_with_its_ids_and_probabilities(rule):
    editor = make_text_model()
    editor.can_edit = True
    cfg = (DecodeConfig(gen_length=24, schedule="fixed_steps", steps=12, revise="remdm", remask_sigma="rescale",
                        remask_eta=0.9, seed=3) if rule == "remdm" else
           DecodeConfig(gen_length=24, schedule="threshold", threshold=0.3, temperature=0.0, block_length=8,
                        revise="joint_threshold"))
    tr = decode(editor, [PROMPT], cfg)[0]
    evs = analysis.events(tr)
    assert any(e.kind != "confirm" for pos in evs for e in pos)
    # the kinds and steps are Trace.history's, and replaying the events gives canvas_at at every step
    assert [[(e.step, e.kind, e.token) for e in pos] for pos in evs] == tr.history
    for step in range(-1, len(tr.steps)):
        held = [next((e.token for e in reversed(pos) if e.step <= step), None) for pos in evs]
        assert held == tr.canvas_at(step), step
    for pos in evs:
        for prev, e in zip([None, *pos], pos):
            assert e.before == (prev.token if prev else None)  # what it held before: the previous event's result
            assert 0.0 <= e.prob <= 1.0
            assert (e.before_prob is not None) == (e.kind == "edit")
    rec = next(r for r in tr.steps if r.remasked or r.edited)
    if rule == "remdm":
        e = next(e for e in evs[rec.remasked[0]] if e.step == rec.step)
        assert (e.kind, e.before, e.prob) == ("remask", rec.remasked_tokens[0], rec.remask_probs[0])
    else:
        e = next(e for e in evs[rec.edited[0]] if e.step == rec.step)
        assert (e.before, e.token, e.prob, e.before_prob) == (rec.edited_from[0], rec.edited_to[0], rec.edit_probs[0],
                                                              rec.edit_from_probs[0])


def test_events_of_final_confirmations_are_one_confirm_each(trace):
    evs = analysis.events(trace)
    assert all(len(pos) == 1 and pos[0].kind == "confirm" for pos in evs)
    assert [pos[0].step for pos in evs] == trace.order
