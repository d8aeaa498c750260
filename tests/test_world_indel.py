"""The shipped world-indel model (dllm_viz/assets/world-indel) with the insert/delete rule (issue 37).

Decoded by bench/indel_world.py's standalone loop over core.indel (until the rule is wired into decode):
the floor of valid runs with `llada22_indel`, and the counted lesson (first drafts with a word missing or
doubled, InDel against the same loop with DELETE and SPLIT banned). The figures are the model card's.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from dllm_viz import assets, load_model

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import indel_world  # noqa: E402

CARD = assets.path("world-indel")


@pytest.fixture(scope="module")
def model():
    return load_model("world-indel", device="cpu")


def test_the_model_declares_its_edit_tokens_and_the_old_one_is_refused(model):
    tokens = indel_world.check_model(model)
    assert model.tokenizer.decode([tokens.delete, tokens.split]) == "<delete><split>"
    assert load_model("world", device="cpu").tokenizer.encode("Tom Lopez of") == model.tokenizer.encode("Tom Lopez of")
    with pytest.raises(ValueError, match="delete_token_id=None, split_token_id=None is invalid"):
        indel_world.decode_blocks(load_model("world", device="cpu"), [[3]])


def test_llada22_indel_meets_the_floor_over_64_seeded_runs(model):
    runs = indel_world.floor(model, temperature=0.7)
    valid = sum(r.valid for r in runs)
    assert valid >= 58, f"{valid} of 64 valid"  # 90%
    recorded = json.loads((CARD / "indel_eval.json").read_text())["floor"]["draws at T = 0.7"]["valid_runs"]["k"]
    assert valid == recorded
    greedy = indel_world.floor(model)
    assert sum(r.valid for r in greedy) >= 58


def test_the_counted_lesson_insert_and_delete_fix_what_rewriting_cannot(model):
    recorded = json.loads((CARD / "indel_eval.json").read_text())["lesson"]
    for kind in ("missing", "extra"):
        counts = {}
        for rule in ("indel", "joint_threshold"):
            runs = indel_world.lesson(model, kind, ban_edits=rule == "joint_threshold")
            counts[rule] = indel_world.summary(runs)["valid_runs"]
            assert counts[rule]["k"] == recorded[kind][rule]["valid_runs"]["k"], (kind, rule)
        assert counts["indel"]["lo"] > counts["joint_threshold"]["hi"], (kind, counts)  # Wilson intervals apart
        if kind == "extra":
            assert sum(r.ops["delete"] > 0 for r in runs) == 0  # the banned rule never deletes
