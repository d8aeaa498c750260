"""lessons.py and dllm_viz/assets/lessons.yaml: every lesson valid in both languages; the prose follows the measurements."""
from __future__ import annotations

import operator

import pytest

from dllm_viz import decode
from dllm_viz.studies.lessons import LANGS
from dllm_viz.app.views.lessons import measured_table
from dllm_viz.studies.lessons import LESSONS, LESSONS_PATH, MEASURED_PATH, load_lessons, load_measured, measure
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
    lesson = type(lesson)(**{**lesson.__dict__, "a": {**lesson.b, "temperature": 0.0}, "b": lesson.b})  # the test model has no cache
    m = measure(counting, lesson, ["the ", "a "], range(2), gen_length=16)
    assert calls == [1] * 8  # A then B, one request per call, for each of the 4 runs
    assert m["speedup"] == round(m["b"]["seconds"] / m["a"]["seconds"], 2) and m["a"]["seconds"] > 0
    assert m["tokens_differ"] > 0  # T = 0 against T = 0.7: the texts differ
    assert "| B's time / A's time |" in measured_table(m)


def test_the_cache_lesson_on_the_world_model_shows_what_the_cache_breaks():
    from dllm_viz.studies.world_lessons import load_world_pairs

    pair = load_world_pairs()["cache"]["variants"]
    a, b = pair["A"], pair["B"]
    assert a["steps"] == b["steps"]  # equal NFE: one token per step on both sides
    assert a["valid_runs"]["hi"] < b["valid_runs"]["lo"]  # the dual cache's runs fall outside the exact rate's interval
    assert a["runs_breaking"]["sum"]["rate"] > 0.3 > b["runs_breaking"]["sum"]["rate"]


def test_missing_measurements_leave_the_text_alone(tmp_path):
    assert load_measured(tmp_path / "absent.json") == {}


def _value(measured: dict, ref: str) -> float:
    try:
        return float(ref)
    except ValueError:
        value = measured
        for part in ref.split("."):
            value = value[part]
        return value


OPS = {"<": operator.lt, ">": operator.gt, "==": operator.eq, "<=": operator.le, ">=": operator.ge}


def test_what_to_look_for_matches_what_the_measurements_show():
    # Every lesson's "what to look for" makes claims about its figures; each is checked against
    # dllm_viz/assets/lessons.json, so the text cannot promise a picture the data does not draw.
    measured = load_measured()
    assert set(measured) == set(LESSONS)
    for key, lesson in LESSONS.items():
        assert lesson.claims, key
        for claim in lesson.claims:
            left, op, right = claim.split()
            assert OPS[op](_value(measured[key], left), _value(measured[key], right)), (key, claim)


# Numbers each lesson's prose quotes, as (field in dllm_viz/assets/lessons.json, format). Re-measuring with
# another model fails here until the text is rewritten.
QUOTED = {
    "polluted": [("a.first_step_spread", "{:.3f}"), ("b.first_step_spread", "{:.3f}"), ("same_step_share", "{:.0%}"),
                 ("b.mean_confidence", "{:.3f}"), ("a.mean_confidence", "{:.3f}"), ("b.mean_logprob", "{:.2f}"),
                 ("a.mean_logprob", "{:.2f}")],
    "global": [("b.draws", "{:.0f}"), ("a.draws", "{:.0f}")],
    "lock_in": [("b.mean_logprob", "{:.2f}"), ("a.mean_logprob", "{:.2f}"), ("b.low_p_share", "{:.0%}"),
                ("a.low_p_share", "{:.0%}"), ("b.repeat_3", "{:.2%}"), ("b.distinct_2", "{:.3f}"),
                ("a.distinct_2", "{:.3f}"), ("same_step_share", "{:.0%}")],
    "rng": [("b.mean_logprob", "{:.2f}"), ("a.mean_logprob", "{:.2f}")],
    "staged": [("b.mean_logprob", "{:.2f}"), ("a.mean_logprob", "{:.2f}"), ("b.repeat_3", "{:.2%}")],
    "threshold": [("b.steps", "{:.0f}"), ("a.steps", "{:.0f}"), ("b.mean_confidence", "{:.3f}"),
                  ("a.mean_confidence", "{:.3f}"), ("b.mean_logprob", "{:.2f}"), ("a.mean_logprob", "{:.2f}"),
                  ("b.low_p_share", "{:.0%}"), ("a.low_p_share", "{:.0%}")],
    **{key: [("a.mean_logprob", "{:.2f}"), ("b.mean_logprob", "{:.2f}"), ("a.repeat_3", "{:.2%}"), ("b.repeat_3", "{:.2%}"),
             ("a.distinct_2", "{:.3f}"), ("b.distinct_2", "{:.3f}"), ("a.draws", "{:.0f}"), ("b.draws", "{:.0f}")]
       for key in ("shipped_llada", "shipped_dream", "shipped_fast_dllm")},
    "cache": [("tokens_differ", "{:.1f}"), ("same_step_share", "{:.0%}"), ("a.mean_logprob", "{:.2f}"),
              ("b.mean_logprob", "{:.2f}"), ("a.seconds", "{:.3f}"), ("b.seconds", "{:.3f}"), ("speedup", "{:.2f}")],
    **{key: [("b.revisions", "{:.1f}"), ("b.draws", "{:.1f}"), ("b.final_logprob", "{:.2f}"), ("a.final_logprob", "{:.2f}"),
             ("b.mean_logprob", "{:.2f}"), ("b.repeat_3", "{:.2%}"), ("a.repeat_3", "{:.2%}"), ("b.distinct_2", "{:.3f}"),
             ("a.distinct_2", "{:.3f}")]
       for key in ("revise_rcr", "revise_remdm")},
}


def test_lesson_prose_quotes_the_measured_numbers_in_both_languages():
    assert MEASURED_PATH.is_file() and LESSONS_PATH.is_file()
    measured = load_measured()
    assert set(QUOTED) == set(LESSONS)
    for key, quotes in QUOTED.items():
        for lang in LANGS:
            text = LESSONS[key].text("measured", lang).replace("−", "-")
            for field, fmt in quotes:
                assert fmt.format(_value(measured[key], field)) in text, (key, lang, field)


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
