"""app/views/lessons.py: the studies' tables in the page's language, the same numbers as on the command line."""
from __future__ import annotations

from dllm_viz.app.strings import LANGS, t
from dllm_viz.app.views.lessons import measured_table, study_md, world_table
from dllm_viz.studies import lessons, revision_lessons, world_lessons


def test_the_lessons_languages_are_the_pages():
    assert lessons.LANGS == LANGS


def test_a_lessons_table_names_its_rows_in_each_language_and_keeps_the_numbers():
    measured = lessons.load_measured()["rng"]
    plain = lessons.table(measured)
    assert "| mean_logprob |" in plain and "| solo_match |" in plain  # the command line names the fields
    numbers = lambda md: [line.split("|")[2:] for line in md.splitlines() if line.startswith("| ")][1:]  # noqa: E731
    for lang in LANGS:
        shown = measured_table(measured, lang)
        assert t("mt_logprob", lang) in shown and t("mt_solo", lang) in shown
        assert numbers(shown) == numbers(plain)


def test_the_world_tables_english_is_the_command_lines():
    study = world_lessons.load_world_measured()["parallel"]
    assert world_table(study, "en") == world_lessons.table(study)
    assert world_table(study, "zh") != world_table(study, "en") and t("wt_broken", "zh") in world_table(study, "zh")


def test_the_revision_study_reads_in_each_language():
    data = revision_lessons.load_revision()
    for lang in LANGS:
        md = study_md(lang, data)
        assert t("rt_regime_k4", lang) in md and revision_lessons.load_study_text()["text"][lang] in md
    assert study_md("en", {}) == ""


def test_the_indel_study_shows_its_prose_and_table_in_both_languages():
    from dllm_viz.app.views.lessons import indel_study_md
    from dllm_viz.studies.indel_lessons import load_eval

    data = load_eval()
    for lang in ("en", "zh"):
        md = indel_study_md(lang)
        rate = data["lesson"]["missing"]["joint_threshold"]["valid_runs"]
        assert md.count("\n|") == 2 + 3 and f"{rate['rate']:.0%} [{rate['lo'] * 100:.0f}, {rate['hi'] * 100:.0f}]" in md
    assert indel_study_md("en", data={}) == ""
