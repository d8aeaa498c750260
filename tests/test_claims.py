"""studies/claims.py: every lesson's and study's prose quotes the measured numbers in every language, and its
claims hold on the measurements: one parametrised test over every check block of dllm_viz/assets/lessons.yaml."""
from __future__ import annotations

import pytest
import yaml

from dllm_viz.studies import claims
from dllm_viz.studies.curve_lessons import load_curve_lessons
from dllm_viz.studies.lessons import LANGS, LESSONS, load_measured

CHECKS = claims.load_checks()


@pytest.mark.parametrize("check", CHECKS, ids=[c.name for c in CHECKS])
def test_the_prose_quotes_the_measurements_and_its_claims_hold(check):
    assert claims.failures(check) == []


def test_every_lesson_and_study_is_checked_and_measured():
    checked = {c.entry for c in CHECKS}
    assert set(LESSONS) | set(load_curve_lessons()) | {"revision_study", "world_studies", "indel_study",
                                                       "renoise_study"} == checked
    assert set(load_measured()) == set(LESSONS)  # every pair measured, nothing else
    for key in LESSONS:  # a pair quotes its numbers and claims what its figures show
        own = [c for c in CHECKS if c.entry == key and c.measured_in == f"lessons:{key}"]
        assert len(own) == 1 and own[0].quotes and own[0].claims, key
    assert all(set(c.prose) == set(LANGS) for c in CHECKS if c.quotes)
    assert len({c.name for c in CHECKS}) == len(CHECKS)


DATA = {"a": {"x": 0.1234, "n": 3}, "b": {"x": 0.25},
        "curve": [{"value": 0.1, "rate": 0.75}, {"value": 0.9, "rate": 1.0}]}


def test_paths_pick_keys_and_points_by_value():
    assert claims.value(DATA, "a.x") == 0.1234 and claims.value(DATA, "curve(0.1).rate") == 0.75
    assert claims.quoted(DATA, "a.x:.2f") == "0.12" and claims.quoted(DATA, "curve(0.9).rate:.0%") == "100%"
    assert claims.holds(DATA, "a.x < b.x") and not claims.holds(DATA, "a.x > b.x")
    assert claims.holds(DATA, "a.n == 3") and claims.holds(DATA, "curve(0.9).rate > curve(0.1).rate + 0.2")
    assert not claims.holds(DATA, "curve(0.9).rate > curve(0.1).rate + 0.3")
    with pytest.raises(ValueError, match="'a.x <'"):
        claims.holds(DATA, "a.x <")


def test_a_wrong_quote_or_a_false_claim_is_reported():
    check = claims.Check(entry="e", measured_in="lessons:", prose={"en": "rate 0.12, then −3.5", "zh": "0.12"},
                         quotes=("a.x:.2f", "a.x:.3f"), claims=("a.x < b.x", "b.x < a.x"))
    found = claims.failures(check, DATA)
    assert found == ["a.x:.3f = 0.123 not in its en prose", "a.x:.3f = 0.123 not in its zh prose", "b.x < a.x is false"]
    minus = claims.Check(entry="e", measured_in="lessons:", prose={"en": "−3.5"}, quotes=("m:.1f",))
    assert claims.failures(minus, {"m": -3.5}) == []  # the prose's minus sign reads as the table's hyphen


def test_a_malformed_check_is_refused_by_name(tmp_path):
    path = tmp_path / "lessons.yaml"
    entry = {"key": "x", "measured": {"en": "a"}, "checks": [{"measured_in": "lessons:x", "quotes": ["a:.1f"]}]}
    path.write_text(yaml.safe_dump({"lessons": [entry]}))
    with pytest.raises(ValueError, match="x.measured@lessons:x quotes in a prose without the languages"):
        claims.load_checks(path)
    entry["checks"] = [{"measured_in": "elsewhere:x", "claims": ["a < 1"]}]
    path.write_text(yaml.safe_dump({"lessons": [entry]}))
    with pytest.raises(ValueError, match="expected a measurement in lessons"):
        claims.load_checks(path)
    entry["checks"] = [{"claims": ["a < 1"]}]
    path.write_text(yaml.safe_dump({"lessons": [entry]}))
    with pytest.raises(ValueError, match="a check of 'x' is malformed"):
        claims.load_checks(path)
