"""The world language's exact-marginal denoiser: a proper distribution that agrees with the generator,
and what the article's presets do to a model that knows the language perfectly."""
from __future__ import annotations

import pytest
import torch

from dllm_viz import DecodeConfig, decode
from dllm_viz.world import SLOTS, generate
from dllm_viz.world.oracle import SENTENCE, WorldOracle
from dllm_viz.world.score import WORLD_PROMPTS, correctness


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
