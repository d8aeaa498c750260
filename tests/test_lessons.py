"""studies/lessons.py and dllm_viz/assets/lessons.yaml: every lesson valid in both languages, measured as its
prose says (what the prose quotes and claims: tests/test_claims.py)."""
from __future__ import annotations

import pytest

from dllm_viz import decode
from dllm_viz.studies.lessons import LANGS
from dllm_viz.app.views.lessons import measured_table
from dllm_viz.studies.lessons import LESSONS, load_lessons, load_measured, measure
from tests.ui_model import make_text_model


def run(prompts, configs, *, on_step=None, record_candidates=5, _model=make_text_model()):
    return decode(_model, prompts, configs, on_step=on_step, record_candidates=record_candidates)


def test_every_lesson_has_both_languages_and_two_different_valid_configs():
    for key, lesson in LESSONS.items():
        a, b = lesson.configs(32, seed=1)
        assert a != b, key
        for lang in LANGS:
            for name in ("title", "look_for", "measured"):
                assert lesson.text(name, lang).strip(), (key, name, lang)


def test_a_malformed_lesson_file_names_the_lesson(tmp_path):
    bad = tmp_path / "lessons.yaml"
    bad.write_text("lessons:\n  - key: x\n    title: {en: a, zh: b}\n    a: {}\n    b: {temprature: 1}\n"
                   "    look_for: {en: a, zh: b}\n    measured: {en: a, zh: b}\n")
    with pytest.raises(ValueError, match="temprature"):
        load_lessons(bad)
    bad.write_text("lessons:\n  - key: x\n    title: {en: a}\n    a: {}\n    b: {}\n"
                   "    look_for: {en: a, zh: b}\n    measured: {en: a, zh: b}\n")
    with pytest.raises(ValueError, match="'x' title"):
        load_lessons(bad)


def test_measure_backs_the_lesson_claims():
    glob = measure(run, LESSONS["global"], ["the ", "a "], range(3), gen_length=16)
    assert glob["same_trace"] == 1.0 and glob["b"]["draws"] > glob["a"]["draws"] == 16
    rng = measure(run, LESSONS["rng"], ["the "], range(3), gen_length=16)
    assert rng["solo_match_a"] == 1.0 and rng["solo_match_b"] < 1.0
    assert "| text equals the same request decoded alone | 100% |" in measured_table(rng)


def test_a_timed_lesson_decodes_each_side_alone_and_measures_the_speed_up():
    calls = []

    def counting(prompts, configs, **kw):
        calls.append(len(prompts))
        return run(prompts, configs, **kw)

    lesson = LESSONS["cache"]
    assert lesson.timed
    # the test model has no cache
    lesson = type(lesson)(**{**lesson.__dict__, "a": {**lesson.b, "temperature": 0.0}, "b": lesson.b})
    m = measure(counting, lesson, ["the ", "a "], range(2), gen_length=16)
    assert calls == [1] * 8  # A then B, one request per call, for each of the 4 runs
    assert m["speedup"] == round(m["b"]["seconds"] / m["a"]["seconds"], 2) and m["a"]["seconds"] > 0
    assert m["tokens_differ"] > 0  # T = 0 against T = 0.7: the texts differ
    assert "| B's time / A's time |" in measured_table(m)


def test_missing_measurements_leave_the_text_alone(tmp_path):
    assert load_measured(tmp_path / "absent.json") == {}


def test_final_logprob_reads_each_position_at_its_last_decision():
    import math

    from dllm_viz import DecodeConfig
    from dllm_viz.studies.lessons import final_logprob, summarise

    plain = run(["the "], [DecodeConfig(gen_length=16, schedule="fixed_steps", steps=8, seed=2)])[0]
    assert final_logprob(plain) == pytest.approx(plain.metrics["mean_logprob"], abs=1e-6)
    cfg = DecodeConfig(gen_length=16, schedule="fixed_steps", steps=8, seed=2, revise="remdm", remask_sigma="rescale",
                       remask_eta=0.9)
    tr = run(["the "], [cfg])[0]
    assert tr.revised
    last: dict[int, float] = {}
    for rec in tr.steps:  # a later confirmation of a position replaces its earlier one
        for pos, lp in zip(rec.selected, rec.logprobs):
            last[pos] = lp
    assert final_logprob(tr) == pytest.approx(math.fsum(last.values()) / len(last), abs=1e-6)
    assert final_logprob(tr) != pytest.approx(tr.metrics["mean_logprob"], abs=1e-6)
    assert "final_logprob" in summarise([tr], revising=True) and "final_logprob" not in summarise([tr])
