"""The shipped world-indel model (dllm_viz/assets/world-indel) with the insert/delete rule, through `decode()`.

`dllm_viz.studies.indel_lessons` (bench/indel_world.py) measures the floor of valid runs with `llada22_indel`
and the counted lesson (first drafts with a word missing or doubled, InDel against JointThreshold); the
figures are recorded in the model's `indel_eval.json`, which the lesson's prose quotes (tests/test_claims.py).
Here they are measured again and must be the recorded ones.
"""
from __future__ import annotations

import json

import pytest

from dllm_viz import DecodeConfig, assets, decode, load_model
from dllm_viz.studies import indel_lessons
from dllm_viz.studies.indel_lessons import FirstDraft, draft, floor, lesson, summary

RECORDED = json.loads(assets.path("world-indel", "indel_eval.json").read_text())


@pytest.fixture(scope="module")
def model():
    return load_model("world-indel", device="cpu")


def test_the_model_declares_its_edit_tokens_and_the_world_model_is_refused(model):
    assert model.tokenizer.decode([model.delete_token_id, model.split_token_id]) == "<delete><split>"
    assert load_model("world").tokenizer.encode("Tom Lopez of") == model.tokenizer.encode("Tom Lopez of")
    with pytest.raises(ValueError, match="cannot edit lengths"):
        decode(load_model("world"), ["Tom"], DecodeConfig.preset("llada22_indel", 16))


def test_llada22_indel_meets_the_floor_over_64_seeded_runs(model):
    for label, temperature in (("argmax", 0.0), ("draws", indel_lessons.TEMPERATURE)):
        valid = summary(floor(model, temperature=temperature))["valid_runs"]
        assert valid["n"] == 64 and valid["k"] >= 58, (label, valid)  # 90%
        assert valid == RECORDED["floor"][label]["valid_runs"], label


def test_the_first_forward_proposes_the_draft_and_the_decode_starts_from_it(model):
    tok = model.tokenizer
    prompt = indel_lessons.WORLD_PROMPTS[0]
    wrong = draft(tok, prompt, 7, "missing")
    assert len(wrong) == len(draft(tok, prompt, 7, "none")) - 1
    assert len(draft(tok, prompt, 7, "extra")) == len(wrong) + 2
    wrapped = FirstDraft(model, {tuple(tok.encode(prompt)): wrong})
    (trace,) = decode(wrapped, [prompt], DecodeConfig.preset("llada21", 48), record_candidates=0)
    assert trace.canvas_at(0)[: len(wrong)] == wrong  # the first step writes the draft, certain
    assert wrapped.name == model.name and wrapped.mask_token_id == model.mask_token_id


@pytest.mark.slow
def test_the_counted_lesson_insert_and_delete_fix_what_rewriting_cannot(model):
    for kind in indel_lessons.KINDS:
        counts = {rule: summary(lesson(model, kind, rule))["valid_runs"] for rule in indel_lessons.RULES}
        assert counts == {rule: RECORDED["lesson"][kind][rule]["valid_runs"] for rule in counts}, kind
        if kind != "none":
            assert counts["indel"]["lo"] > counts["joint_threshold"]["hi"], (kind, counts)  # Wilson intervals apart
