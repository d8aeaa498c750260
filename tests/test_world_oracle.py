"""The world language's exact-marginal denoiser: a proper distribution that agrees with the generator,
and what the article's presets do to a model that knows the language perfectly."""
from __future__ import annotations

import pytest
import torch

from dllm_viz import DecodeConfig, decode
from dllm_viz.world import SLOTS, generate
from dllm_viz.world.language import VOCABULARY
from dllm_viz.world.oracle import SENTENCE, WorldOracle
from dllm_viz.studies.world_score import WORLD_PROMPTS, correctness


@pytest.fixture(scope="module")
def oracle():
    return WorldOracle()


def test_tokenizer_round_trips_the_generator(oracle):
    text = "\n".join(generate(3, 7))
    ids = oracle.tokenizer.encode(text)
    assert len(ids) == 3 * SENTENCE - 1 and oracle.tokenizer.decode(ids).strip() == text
    with pytest.raises(ValueError, match="text:"):
        oracle.tokenizer.encode("Tom Lopez of Paris")


def test_marginals_are_distributions_and_know_each_masked_word(oracle):
    """Mask one word of a generated sentence: words tied to the rest come back with probability 1,
    the free choices (city words) with their share of the cities that fit the other word."""
    text = generate(1, 3)[0]
    ids = torch.tensor([oracle.tokenizer.encode(text)])
    free = {SLOTS.index("city1"), SLOTS.index("city2")}
    for i in range(ids.shape[1]):
        canvas = ids.clone()
        canvas[0, i] = oracle.mask_token_id
        p = oracle(canvas).softmax(-1)[0, i]
        assert torch.isclose(p.sum(), torch.tensor(1.0), atol=1e-5)
        assert p[ids[0, i]] > 0.1, (i, SLOTS[i])
        if i not in free:
            assert p[ids[0, i]] > 0.999, (i, SLOTS[i])
    empty = torch.full((1, 2 * SENTENCE), oracle.mask_token_id)
    p = oracle(empty).softmax(-1)[0]
    first = [oracle.tokenizer.ids[w] for w in ("Tom", "Ana")]
    assert torch.allclose(p[0, first], torch.tensor([1 / 64, 1 / 64]), atol=1e-6)  # 64 people
    assert torch.allclose(p[SENTENCE], p[0], atol=1e-6)  # sentences are independent


def _rates(oracle, preset: str, seeds: int = 16):
    prompts = [p for p in WORLD_PROMPTS for _ in range(seeds)]
    configs = [DecodeConfig.preset(preset, 48, seed=s) for _ in WORLD_PROMPTS for s in range(seeds)]
    return correctness(decode(oracle, prompts, configs, record_candidates=0))


def test_a_perfect_model_passes_at_the_quality_preset_and_breaks_names_at_speed(oracle):
    """The language is built so that confirming the most confident words first, a few per step, never
    draws two tied words together (language.py); the speed preset's 16 words per step does."""
    quality, speed = _rates(oracle, "quality"), _rates(oracle, "speed")
    assert quality["valid_runs"]["k"] >= 0.9 * 64, quality["valid_runs"]  # measured: 64 / 64
    assert quality["broken_entities"]["k"] == 0
    assert speed["broken_entities"]["lo"] > quality["broken_entities"]["hi"]
    assert speed["valid_runs"]["rate"] <= 0.1


def test_logits_hidden_in_one_pass_equals_one_canvas_per_position():
    """The oracle's own verify pass (WINO) gives the numbers of the generic one (a canvas per position)."""
    from dllm_viz.models import base

    class Plain:  # the same oracle seen through __call__ only: base.logits_hidden's fallback
        def __init__(self, oracle):
            self.oracle, self.mask_token_id, self.vocab_size = oracle, oracle.mask_token_id, oracle.vocab_size

        def __call__(self, ids, attention_mask=None):
            return self.oracle(ids, attention_mask)

    for editor in (False, True):
        oracle = WorldOracle(can_edit=editor)
        ids = torch.tensor([oracle.tokenizer.encode(t) for t in generate(2, 5)[:1] * 2])  # (2, N)
        ids[1, [1, 5, 8]] = oracle.mask_token_id  # a canvas with masks
        ids[0, 0] = oracle.tokenizer.ids["Ana"]  # and a word its sentence contradicts
        rows = torch.tensor([0, 0, 0, 1, 1])
        cols = torch.tensor([0, 1, 9, 2, 5])
        fast = oracle.logits_hidden(ids, None, rows, cols)
        slow = base.logits_hidden(Plain(oracle), ids, None, rows, cols)
        assert torch.equal(fast, slow)


def test_the_editing_oracle_keeps_a_word_its_sentence_allows_and_rewrites_one_it_rules_out():
    """can_edit: at a visible word, the posterior under LLaDA 2.1's noise (a word replaced with probability
    edit_noise): a contradicted first name predicts the name its recall implies; a free choice the rest
    does not fix (a first name alone) keeps its word."""
    editor, plain = WorldOracle(can_edit=True), WorldOracle()
    text = generate(1, 3)[0]
    ids = torch.tensor([editor.tokenizer.encode(text)])
    first = SLOTS.index("first")
    right = int(ids[0, first])
    assert editor(ids).argmax(-1)[0, first] == right and plain(ids).argmax(-1)[0, first] == right
    wrong = ids.clone()
    wrong[0, first] = next(i for w, i in editor.tokenizer.ids.items() if w in ("Tom", "Ana") and i != right)
    assert editor(wrong).argmax(-1)[0, first] == right  # the rest of the sentence implies the right name
    hidden = editor.logits_hidden(wrong, None, torch.tensor([0]), torch.tensor([first])).softmax(-1)[0]
    assert hidden[right] > 0.999  # WINO's verify pass: the name the rest implies
    alone = torch.full_like(ids, editor.mask_token_id)
    alone[0, first] = wrong[0, first]  # a first name and nothing else: 1 of 64, any is possible
    p = editor(alone).softmax(-1)[0, first]
    eps, W, q = editor.edit_noise, len(VOCABULARY), 1 / 64  # q: each of the 64 first names, x hidden
    kept = (q * eps / W + q * (1 - eps)) / (eps / W + q * (1 - eps))
    assert p.argmax() == wrong[0, first] and abs(float(p[wrong[0, first]]) - kept) < 1e-5 and kept > 0.95
    assert editor.logits_hidden(alone, None, torch.tensor([0]), torch.tensor([first])).softmax(-1)[0].max() < 0.1
    with pytest.raises(ValueError, match="edit_noise"):
        WorldOracle(can_edit=True, edit_noise=0.0)
    masked = wrong.clone()
    masked[0, 2:] = editor.mask_token_id  # masked positions: the editor is the oracle
    assert torch.equal(editor(masked)[0, 2:], plain(masked)[0, 2:])
