"""The shipped world model (assets/world): loads by name, offline, and writes checkable sentences."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from dllm_viz import DecodeConfig, decode, load_model
from dllm_viz.world import VOCABULARY
from dllm_viz.world.language import FEMALE, MALE
from dllm_viz.world.score import WORLD_PROMPTS, correctness, verdict_of, wilson

ASSETS = Path(__file__).resolve().parents[1] / "assets" / "world"


@pytest.fixture(scope="module")
def world():
    torch.set_num_threads(1)
    return load_model("world", device="cpu")


def test_load_by_name_and_default_stays_austen(world):
    assert world.name == "world-mdlm"
    assert load_model(device="cpu").name == "austen-mdlm"


def test_every_word_of_the_language_is_one_token(world):
    for word in VOCABULARY:  # first names only ever start a line; every other word follows a space
        text = word if word in ",." or word in FEMALE + MALE else " " + word
        assert len(world.tokenizer.encode(text)) == 1, word


def _runs(world, make):
    """The 64 seeded runs of the floor (4 prompts x 16 seeds, prompt + 48 tokens), checked."""
    prompts = [p for p in WORLD_PROMPTS for _ in range(16)]
    traces = decode(world, prompts, [make(s) for _ in WORLD_PROMPTS for s in range(16)], record_candidates=0)
    return traces, correctness(traces)


def test_quality_preset_over_64_seeded_runs(world):
    """What the shipped model reaches at the quality preset (MODEL_CARD: 9% valid runs, 28% valid
    sentences, no broken sum, 0.4% broken names).

    The issue's floor, >= 90% of runs passing the checker, is NOT reached: the model never learnt
    the tense copy (has ... has), and the preset confirms up to 8 tokens per step, so coupled
    words (the two animals, the two cities) are drawn in one step (see the next test)."""
    traces, c = _runs(world, lambda s: DecodeConfig.preset("quality", 48, seed=s))
    assert c["valid_runs"]["n"] == 64 and c["valid_sentences"]["n"] >= 128
    assert c["broken_entities"]["rate"] <= 0.03  # names drawn one piece at a time stay whole
    assert c["runs_breaking"]["grammar"]["k"] <= 3  # the template is learnt
    assert c["runs_breaking"]["sum"]["k"] <= 3  # so are the sums
    assert c["valid_sentences"]["rate"] >= 0.2
    prompts = [p for p in WORLD_PROMPTS for _ in range(16)]
    again = decode(world, prompts[:4], [DecodeConfig.preset("quality", 48, seed=0)] * 4, record_candidates=0)
    assert [t.token_ids for t in again] == [traces[0].token_ids] * 4  # deterministic seeds


def test_one_token_per_step_keeps_every_rule_but_the_tense_copy(world):
    """At the quality preset's temperature with k = 1, the coupled words the preset draws in one step
    agree: what the model knows, apart from what parallel decoding breaks. Its one unlearnt rule
    is the tense copy, a fair coin repeated later in the sentence: nearly every violation left
    (MODEL_CARD)."""
    traces, one = _runs(world, lambda s: DecodeConfig.preset("quality", 48, seed=s).replace(top_k=1, decay=1.0))
    _, quality = _runs(world, lambda s: DecodeConfig.preset("quality", 48, seed=s))
    for rule in ("grammar", "entity", "recall", "distinct"):
        assert one["runs_breaking"][rule]["k"] == 0, rule
    assert one["runs_breaking"]["sum"]["k"] <= 3
    for rule in ("recall", "distinct"):  # what drawing several coupled words in one step breaks
        assert quality["runs_breaking"][rule]["lo"] > one["runs_breaking"][rule]["hi"], rule
    found = [v for tr in traces for v in verdict_of(tr).violations]
    tense = [v for v in found if v.message.startswith("tense:")]
    assert len(tense) >= 0.9 * len(found), [v.message for v in found if v not in tense]  # MODEL_CARD: 66 of 69


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
    """The README table and the Compare tab's world tables are the numbers in assets/world/lessons.json."""
    from dllm_viz.app.playground import world_lesson_table
    from dllm_viz.app.world_lessons import load_world_pairs, pairs_table, summary_table, table

    data = json.loads((ASSETS / "lessons.json").read_text())
    readme = (ASSETS.parents[1] / "README.md").read_text()
    assert summary_table(data) in readme
    assert pairs_table(data, ("shipped_llada", "shipped_dream", "shipped_fast_dllm")) in readme
    parallel = data["studies"]["parallel"]["variants"]
    assert parallel["k=48"]["broken_entities"]["rate"] > parallel["k=1"]["broken_entities"]["rate"]
    for key, measured in load_world_pairs().items():
        assert world_lesson_table(key) == table(measured)
