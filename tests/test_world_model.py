"""The shipped world model (dllm_viz/assets/world): loads by name, offline, and writes checkable sentences."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch

from dllm_viz import DecodeConfig, assets, decode, load_model
from dllm_viz.world import VOCABULARY, WorldOracle
from dllm_viz.world.language import FIRST_NAMES
from dllm_viz.studies.world_score import WORLD_PROMPTS, correctness, verdict_of, wilson

ROOT = Path(__file__).resolve().parents[1]
ASSETS = assets.path("world")
sys.path.insert(0, str(ROOT / "bench"))
from world_bench import probes  # noqa: E402
from world_edit import canvases, measure  # noqa: E402


@pytest.fixture(scope="module")
def world():
    torch.set_num_threads(1)
    return load_model("world", device="cpu")


def test_load_by_name_and_default_stays_austen(world):
    assert world.name == "world-mdlm"
    assert load_model(device="cpu").name == "austen-mdlm"


def test_every_word_of_the_language_is_one_token(world):
    for word in VOCABULARY:  # every word follows a space somewhere; first names also start a line
        text = word if word in ",." else " " + word
        assert len(world.tokenizer.encode(text)) == 1, word
    for word in FIRST_NAMES:
        assert len(world.tokenizer.encode(word)) == 1, word


def _runs(world, make):
    """The 64 seeded runs of the floor (4 prompts x 16 seeds, prompt + 48 tokens), checked."""
    prompts = [p for p in WORLD_PROMPTS for _ in range(16)]
    traces = decode(world, prompts, [make(s) for _ in WORLD_PROMPTS for s in range(16)], record_candidates=0)
    return traces, correctness(traces)


def test_quality_preset_meets_the_floor_over_64_seeded_runs(world):
    """The issue's floor: at the quality preset, >= 90% of 64 seeded runs (4 prompts x seeds 0-15,
    prompt + 48 tokens) pass the checker. MODEL_CARD's table has the measured rates; the exact-marginal
    oracle passes all 64 (tests/test_world_oracle.py)."""
    traces, c = _runs(world, lambda s: DecodeConfig.preset("quality", 48, seed=s))
    assert c["valid_runs"]["n"] == 64 and c["valid_sentences"]["n"] >= 128
    assert c["valid_runs"]["k"] >= 58, [v.message for t in traces for v in verdict_of(t).violations]
    assert c["broken_entities"]["rate"] <= 0.03  # names drawn one piece at a time stay whole
    prompts = [p for p in WORLD_PROMPTS for _ in range(16)]
    again = decode(world, prompts[:4], [DecodeConfig.preset("quality", 48, seed=0)] * 4, record_candidates=0)
    assert [t.token_ids for t in again] == [traces[0].token_ids] * 4  # deterministic seeds


def test_the_recalled_name_is_learnt_in_both_directions(world):
    """A schedule may confirm the recalled name before the name it recalls (both 1/64 before either is
    seen), so the model must predict each from the other: the pronoun version learnt only one
    direction (MODEL_CARD, "The pronoun version")."""
    found = probes(world, n=40)
    assert found["recall_given_name"] > 0.9 and found["name_given_recall"] > 0.9, found
    assert probes(WorldOracle(), n=10) == {"recall_given_name": 1.0, "name_given_recall": 1.0}


def test_the_model_breaks_names_where_the_perfect_one_does(world):
    """A constant k = 4 tokens per step breaks two-word names for the trained model AND for the
    exact-marginal oracle, which never breaks one at the quality preset: that failure belongs to the
    schedule, not to what the model has learnt."""
    four = lambda s: DecodeConfig.preset("quality", 48, seed=s).replace(top_k=4, decay=1.0)  # noqa: E731
    _, quality = _runs(WorldOracle(), lambda s: DecodeConfig.preset("quality", 48, seed=s))
    assert quality["valid_runs"]["k"] == 64
    for model in (world, WorldOracle()):
        _, rates = _runs(model, four)
        assert rates["broken_entities"]["lo"] > quality["broken_entities"]["hi"], rates["broken_entities"]
        assert rates["valid_runs"]["hi"] < quality["valid_runs"]["lo"]


def test_the_model_can_edit_restores_replaced_tokens_and_keeps_the_others(world):
    """Trained with LLaDA 2.1's editing stream (MODEL_CARD, "Training"), the model declares it can edit,
    and its argmax at a visible position restores a randomly replaced token about as often as the exact
    marginals told where the wrong tokens are, while it rarely changes a right one (an edit rule with
    edit_threshold 0 rewrites every such token; the masked-only model before it changed 9-13% of them)."""
    assert world.can_edit is True
    rows = measure(world, canvases(40), WorldOracle())
    for name, r in rows.items():
        assert r["wrongly_changed"]["rate"] <= 0.02, (name, r)
        assert r["restored"]["rate"] >= r["oracle"]["rate"] - 0.1, (name, r)


def test_the_llada21_preset_runs_on_the_world_model_and_writes_valid_runs(world):
    """It declares can_edit, so the token-editing preset (SGLang's JointThreshold defaults) is not refused;
    its drafts are right, so the rule has nothing to rewrite (bench/world_edit.py: 32 of 32 valid, 0
    rewritten; the masked-only weights, declared able to edit for that measurement, 0 of 32)."""
    from dllm_viz import Trace

    prompts = [p for p in WORLD_PROMPTS for _ in range(2)]
    traces = decode(world, prompts,
                    [DecodeConfig.preset("llada21", 48, seed=s) for _ in WORLD_PROMPTS for s in range(2)],
                    record_candidates=0)
    assert correctness(traces)["valid_runs"]["k"] >= 7
    assert Trace.from_json(traces[0].to_json()).to_json() == traces[0].to_json()


def test_parallel_decoding_breaks_names(world):
    """The speed preset (k0 = L/3) breaks two-word names far more often than the quality preset (k0 = L/6)."""
    prompts = [p for p in WORLD_PROMPTS for _ in range(8)]
    rates = {}
    for preset in ("quality", "speed"):
        configs = [DecodeConfig.preset(preset, 48, seed=s) for _ in WORLD_PROMPTS for s in range(8)]
        rates[preset] = correctness(decode(world, prompts, configs, record_candidates=0))["broken_entities"]
    assert rates["speed"]["lo"] > rates["quality"]["hi"], rates


def test_wilson_interval_brackets_the_rate():
    lo, hi = wilson(58, 64)
    assert lo < 58 / 64 < hi and 0.8 < lo and hi < 0.97
    assert wilson(0, 10)[0] == 0.0 and wilson(10, 10)[1] == 1.0
    with pytest.raises(ValueError, match="successes="):
        wilson(5, 3)


def test_model_card_quotes_the_corpus_stats():
    card = (ASSETS / "MODEL_CARD.md").read_text()
    stats = json.loads((ASSETS / "corpus_stats.json").read_text())
    assert f"{stats['train_sentences']:,}" in card
    assert f"{stats['heldout_verbatim_in_train']:.1%}" in card


def test_readme_and_compare_tab_show_the_measured_lessons():
    """The docs' tables and the Compare tab's world tables are the numbers in dllm_viz/assets/world/lessons.json."""
    from dllm_viz.app.handlers.compare import world_lesson_table
    from dllm_viz.studies.world_lessons import load_world_pairs, pairs_table, summary_table, table

    data = json.loads((ASSETS / "lessons.json").read_text())
    assert summary_table(data) in (ROOT / "docs" / "tour.md").read_text()
    assert pairs_table(data, ("shipped_llada", "shipped_dream", "shipped_fast_dllm")) in (
        ROOT / "docs" / "shipped_samplers.md").read_text()
    rows = lambda md: [line for line in md.splitlines() if line.startswith("| ") and "%" in line]  # noqa: E731
    for key, measured in load_world_pairs().items():  # the Compare tab names the pair by its lesson, in both languages
        assert rows(world_lesson_table(key)) == rows(table(measured)) == rows(world_lesson_table(key, "zh"))
        assert rows(table(measured))
