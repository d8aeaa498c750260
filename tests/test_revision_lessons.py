"""revision_lessons.py: the revision rules counted on the world model and its oracle, at matched NFE; the
study's prose quotes the measured numbers in both languages, and its claims hold."""
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
    assert (cfg.schedule, cfg.threshold, cfg.revise, cfg.verify_threshold, cfg.seed) == ("threshold", 0.9, "wino", 0.9, 3)
    k4 = rl.config("k4", "editing", 0)
    assert (k4.schedule, k4.top_k, k4.decay, k4.revise) == ("topk_decay", 4, 1.0, "joint_threshold")
    assert rl.config("k4", "monotone", 0).revise == "none"


def test_numbers_and_tables_read_the_measurements(small):
    n = rl.numbers(small)
    row = small["decoders"]["editor"]["threshold"]["wino"]
    assert n["editor.threshold.wino.valid"] == f"{100 * row['valid_runs']['rate']:.0f}%"
    assert n["editor.threshold.wino.nfe"] == f"{row['nfe']:.1f}"
    assert n["editor.threshold.wino.matched.valid"] == f"{100 * row['matched']['valid_runs']['rate']:.0f}%"
    assert "plain.threshold.editing.valid" not in n
    text = rl.table(small, "threshold", rl.ENGLISH_HEADER)
    assert text.count("\n") == 1 + len(rl.RULES) * 2 and "+ WINO" in text and "cannot edit" in text


# ----- the shipped study --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def shipped():
    data, text = rl.load_revision(), rl.load_study_text()
    assert data and text, "dllm_viz/assets/world/revision.json and lessons.yaml's revision_study are shipped"
    return data, text, rl.numbers(data)


def test_the_study_prose_quotes_the_measured_numbers_in_both_languages(shipped):
    data, text, n = shipped
    assert text["quotes"]
    for key in text["quotes"]:
        for lang in LANGS:
            assert n[key] in text["text"][lang], (key, n[key], lang)
    for lang in LANGS:
        md = study_md(lang)
        assert text["text"][lang] in md and md.count("| ") > 20
    assert "world model" in study_md("en") and "世界模型" in study_md("zh")


def test_the_study_says_where_taking_back_does_not_help(shipped):
    """The claims of the prose, on the measurements: a rule that helps beats the monotone decoder given
    the same forwards, outside its interval; one that does not is said not to."""
    data, _, _ = shipped
    model, oracle = data["decoders"]["model"], data["decoders"]["oracle"]
    # at threshold 0.9 the oracle is already right: nothing to take back
    assert oracle["threshold"]["monotone"]["valid_runs"]["rate"] == 1.0
    # ReMDM's counts force extra confirmations under a threshold: worse than monotone at its own NFE
    for d in (model, oracle):
        cap = d["threshold"]["remdm_cap"]
        assert cap["valid_runs"]["hi"] < cap["matched"]["valid_runs"]["lo"]
    # WINO and editing at threshold 0.9 are not better than monotone at the same NFE (the intervals overlap)
    for rule in ("wino", "editing"):
        w = model["threshold"][rule]
        assert w["valid_runs"]["lo"] <= w["matched"]["valid_runs"]["hi"], rule
    # at four tokens per step editing repairs part of what breaks, less than confirming fewer per step does
    ed, mono = model["k4"]["editing"], model["k4"]["monotone"]
    assert ed["broken_entities"]["hi"] < mono["broken_entities"]["lo"] and ed["valid_runs"]["lo"] > mono["valid_runs"]["hi"]
    assert ed["valid_runs"]["hi"] < ed["matched"]["valid_runs"]["lo"]
    assert oracle["k4"]["wino"]["valid_runs"]["rate"] < oracle["k4"]["wino"]["matched"]["valid_runs"]["rate"] == 1.0
    # the perfect editor cannot mend a broken name: the names stay broken at four tokens per step
    ed, mono = oracle["k4"]["editing"], oracle["k4"]["monotone"]
    assert ed["edited"] > 0 and ed["broken_entities"]["rate"] >= mono["broken_entities"]["rate"]


def test_the_readme_shows_the_measured_study_and_lessons(shipped):
    from pathlib import Path

    from dllm_viz.studies.lessons import load_measured

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    assert rl.readme_table(shipped[0]) in readme
    measured = load_measured()
    for key in ("revise_rcr", "revise_remdm"):
        assert f"{measured[key]['b']['final_logprob']:.2f}" in readme
    assert f"against {measured['revise_rcr']['a']['final_logprob']:.2f}" in readme
