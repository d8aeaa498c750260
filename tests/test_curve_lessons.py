"""studies.curve_lessons and its prose in dllm_viz/assets/lessons.yaml: every number the text quotes is the measured one,
in both languages, and the measurements say what the text claims."""
from __future__ import annotations

import pytest
import yaml

from dllm_viz.studies.curve_lessons import LANGS, load_curve_lessons, load_curves, numbers


@pytest.fixture(scope="module")
def measured():
    return numbers(load_curves())


def test_every_quoted_number_is_the_measured_one_in_both_languages(measured):
    lesson = load_curve_lessons()["why_parallel_breaks"]
    assert set(lesson["title"]) == set(lesson["text"]) == set(LANGS)
    for key in lesson["quotes"]:
        for lang in LANGS:
            assert measured[key] in lesson["text"][lang], (key, measured[key], lang)


def test_the_claims_hold_on_the_measurements(measured):
    pct = lambda key: float(measured[key].rstrip("%"))  # noqa: E731
    assert float(measured["copy.bits_all"]) == 0.0 and pct("copy.oracle.all") == pct("copy.model.all") == 100
    assert float(measured["shuffle.bits_all"]) > 1 and float(measured["latin.bits_all"]) > 10
    for family in ("shuffle", "latin"):  # one step breaks them for the perfect model too; one token per step does not
        assert pct(f"{family}.oracle.all") <= 20 and pct(f"{family}.oracle.one") == 100
    assert float(measured["copy.model.t90"]) > 4 and float(measured["shuffle.model.t90"]) < 1.1
    assert pct("sudoku.oracle.all") == 100 > pct("sudoku.model.all")


def test_a_lesson_without_both_languages_is_refused(tmp_path):
    path = tmp_path / "lessons.yaml"
    path.write_text(yaml.safe_dump({"lessons": [], "curve_lessons": [
        {"key": "x", "title": {"en": "t"}, "text": {"en": "a", "zh": "b"}}]}))
    with pytest.raises(ValueError, match="title"):
        load_curve_lessons(path)


def test_the_revision_paragraph_quotes_the_measured_curves_and_its_claims_hold(measured):
    """Issue 32 item 5: the paragraph on the revision rules' curves quotes them, and says what they show."""
    revision = load_curve_lessons()["why_parallel_breaks"]["revision"]
    for key in revision["quotes"]:
        for lang in LANGS:
            assert measured[key] in revision["text"][lang], (key, measured[key], lang)
    pct = lambda key: float(measured[key].rstrip("%"))  # noqa: E731
    num = lambda key: float(measured[key])  # noqa: E731
    # WINO's verify pass only costs where nothing needs taking back
    assert num("copy.model.wino90.tpf") < num("copy.model.thr90.tpf") and pct("copy.model.wino90.rate") == 100
    # it holds a Latin square and a sudoku as the threshold loosens, at fewer tokens per forward
    assert pct("latin.model.wino10.rate") > pct("latin.model.thr10.rate") + 50
    assert pct("sudoku.model.wino10.rate") > pct("sudoku.model.thr10.rate")
    assert num("latin.model.wino10.tpf") < num("latin.model.thr10.tpf")
    # ... but buys no parallelism: the careful plain threshold is as right at about the same tokens per forward
    assert pct("latin.model.thr90.rate") >= pct("latin.model.wino10.rate")
    assert abs(num("latin.model.thr90.tpf") - num("latin.model.wino10.tpf")) < 0.5
    assert pct("latin.oracle.wino10.rate") < pct("latin.oracle.thr90.rate")
    # RCR and ReMDM's counts cost accuracy
    assert pct("shuffle.model.rcr90.rate") < pct("shuffle.model.thr90.rate")
    assert pct("shuffle.oracle.rcr90.rate") < pct("shuffle.oracle.thr90.rate")
    assert pct("latin.oracle.remdm90.rate") < pct("latin.oracle.thr90.rate")


def test_a_revision_paragraph_without_both_languages_is_refused(tmp_path):
    path = tmp_path / "lessons.yaml"
    path.write_text(yaml.safe_dump({"lessons": [], "curve_lessons": [
        {"key": "x", "title": {"en": "t", "zh": "t"}, "text": {"en": "a", "zh": "b"},
         "revision": {"text": {"en": "c"}, "quotes": []}}]}))
    with pytest.raises(ValueError, match="revision text"):
        load_curve_lessons(path)
