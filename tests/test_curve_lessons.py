"""studies.curve_lessons and its prose in dllm_viz/assets/lessons.yaml: both languages, the revision paragraph
too (what the prose quotes and claims of the curves: tests/test_claims.py)."""
from __future__ import annotations

import pytest
import yaml

from dllm_viz.studies.curve_lessons import LANGS, load_curve_lessons, load_curves


def test_the_shipped_lesson_has_both_languages_and_reads_the_shipped_curves():
    lesson = load_curve_lessons()["why_parallel_breaks"]
    assert set(lesson["title"]) == set(lesson["text"]) == set(lesson["revision"]["text"]) == set(LANGS)
    assert {"copy", "shuffle", "latin", "sudoku"} <= set(load_curves()["families"])


def test_a_lesson_without_both_languages_is_refused(tmp_path):
    path = tmp_path / "lessons.yaml"
    path.write_text(yaml.safe_dump({"lessons": [], "curve_lessons": [
        {"key": "x", "title": {"en": "t"}, "text": {"en": "a", "zh": "b"}}]}))
    with pytest.raises(ValueError, match="title"):
        load_curve_lessons(path)


def test_a_revision_paragraph_without_both_languages_is_refused(tmp_path):
    path = tmp_path / "lessons.yaml"
    path.write_text(yaml.safe_dump({"lessons": [], "curve_lessons": [
        {"key": "x", "title": {"en": "t", "zh": "t"}, "text": {"en": "a", "zh": "b"},
         "revision": {"text": {"en": "c"}}}]}))
    with pytest.raises(ValueError, match="revision text"):
        load_curve_lessons(path)
