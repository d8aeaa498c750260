"""studies/revision_lessons.py: the revision rules counted on the world model and its oracle, at matched NFE,
and docs/revision.md's table of them (what the study's prose quotes and claims: tests/test_claims.py)."""
from __future__ import annotations

import pytest

from dllm_viz import decode
from dllm_viz.app.views.lessons import study_md
from dllm_viz.studies import revision_lessons as rl
from dllm_viz.core.schedules import planned_steps
from dllm_viz.world.oracle import WorldOracle

LANGS = ("en", "zh")


def runner(model):
    def run(prompts, configs, *, on_step=None, record_candidates=0):
        return decode(model, prompts, configs, record_candidates=record_candidates, on_step=on_step)
    return run


@pytest.fixture(scope="module")
def small():
    """Two decoders over one prompt and two seeds: the oracle that edits, and one that does not."""
    return rl.measure_all({"editor": (runner(WorldOracle(can_edit=True)), True),
                           "plain": (runner(WorldOracle()), False)},
                          prompts=["Tom Lopez of"], seeds=range(2), log=lambda _: None)


def test_every_rule_is_measured_and_a_rule_that_adds_forwards_gets_a_matched_monotone_row(small):
    for regime in rl.REGIMES:
        rows = small["decoders"]["editor"][regime]
        assert set(rows) == set(rl.RULES)
        base = rows["monotone"]["nfe"]
        for rule, row in rows.items():
            assert row["valid_runs"]["n"] == 2 and {"broken_entities", "wrong_sums", "remasked", "edited"} <= set(row)
            far = abs(row["nfe"] - base) > rl.NFE_SLACK
            assert ("matched" in row) == far, (regime, rule)
            if far:  # top-k decay planned to spend about the rule's forwards, decoded for real
                m = row["matched"]
                cfg = rl.matched_config(row["nfe"], 0)
                assert (cfg.top_k, cfg.decay) == (m["top_k"], m["decay"]) and cfg.revise == "none"
                assert abs(planned_steps(cfg) - row["nfe"]) <= 1.5 and m["nfe"] == planned_steps(cfg)
        assert rows["wino"]["nfe"] > base  # the verify pass is a forward
    # a model that cannot edit gets no editing row, and says why
    assert "skipped" in small["decoders"]["plain"]["threshold"]["editing"]


def test_the_configs_are_the_regime_with_the_rule_on_top():
    cfg = rl.config("threshold", "wino", 3)
    assert ((cfg.schedule, cfg.threshold, cfg.revise, cfg.verify_threshold, cfg.seed)
            == ("threshold", 0.9, "wino", 0.9, 3))
    k4 = rl.config("k4", "editing", 0)
    assert (k4.schedule, k4.top_k, k4.decay, k4.revise) == ("topk_decay", 4, 1.0, "joint_threshold")
    assert rl.config("k4", "monotone", 0).revise == "none"


def test_the_table_reads_the_measurements(small):
    text = rl.table(small, "threshold", rl.ENGLISH_HEADER)
    assert text.count("\n") == 1 + len(rl.RULES) * 2 and "+ WINO" in text and "cannot edit" in text


# ----- the shipped study --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def shipped():
    data, text = rl.load_revision(), rl.load_study_text()
    assert data and text, "dllm_viz/assets/world/revision.json and lessons.yaml's revision_study are shipped"
    return data, text


def test_the_study_is_shown_in_both_languages(shipped):
    _, text = shipped
    for lang in LANGS:
        md = study_md(lang)
        assert text["text"][lang] in md and md.count("| ") > 20
    assert "world model" in study_md("en") and "世界模型" in study_md("zh")


def test_the_docs_show_the_measured_study_and_lessons(shipped):
    from pathlib import Path

    from dllm_viz.studies.lessons import load_measured

    readme = (Path(__file__).resolve().parents[1] / "docs" / "revision.md").read_text(encoding="utf-8")
    assert rl.readme_table(shipped[0]) in readme
    measured = load_measured()
    for key in ("revise_rcr", "revise_remdm"):
        assert f"{measured[key]['b']['final_logprob']:.2f}" in readme
    assert f"against {measured['revise_rcr']['a']['final_logprob']:.2f}" in readme
