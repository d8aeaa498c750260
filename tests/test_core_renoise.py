"""core.renoise: the settings, and each pure function bit for bit against the transformers object it follows."""
from __future__ import annotations

import math
import random

import pytest
import torch
from transformers.models.diffusion_gemma.generation_diffusion_gemma import (
    DiffusionGemmaGenerationConfig,
    EntropyBoundSampler,
    EntropyBoundSamplerConfig,
    LinearTemperatureScheduleLogitsProcessor,
    StableAndConfidentStoppingCriteria,
)

from dllm_viz.core import renoise as R
from dllm_viz.core.renoise import RenoiseSettings, settings_from


@pytest.mark.parametrize("field, value", [
    ("entropy_bound", 0.0), ("entropy_bound", -0.1), ("entropy_bound", float("nan")), ("entropy_bound", True),
    ("t_min", -0.1), ("t_max", 0.3), ("t_max", float("inf")), ("max_denoising_steps", 0),
    ("max_denoising_steps", 2.0), ("stability_threshold", -1), ("confidence_threshold", -0.5),
    ("canvas_length", 0), ("acceptance_from", "filtered"), ("max_new_tokens", 0), ("seed", -1),
    ("eos_token_ids", [1]), ("eos_token_ids", (-2,)), ("pad_token_id", -1),
])
def test_bad_settings_are_named_value_errors(field, value):
    with pytest.raises(ValueError, match=rf"^{field}=.* is invalid: expected "):
        RenoiseSettings(**{field: value})


def test_t_max_below_t_min_names_the_range_and_a_flat_schedule_is_allowed():
    with pytest.raises(ValueError, match=r"t_max=0.5 is invalid: expected a finite number >= t_min=0.6"):
        RenoiseSettings(t_min=0.6, t_max=0.5)
    with pytest.raises(ValueError, match=r"t_max=0.0 is invalid"):
        RenoiseSettings(t_min=0.0, t_max=0.0)  # temperature 0 at every step: nothing to divide by
    assert RenoiseSettings(t_min=0.7, t_max=0.7).t_max == 0.7  # flat: transformers and SGLang refuse it
    assert RenoiseSettings().with_(entropy_bound=2.0).entropy_bound == 2.0
    with pytest.raises(ValueError, match=r"^entropy_bound=0"):
        RenoiseSettings().with_(entropy_bound=0)


def test_defaults_are_transformers_global_defaults():
    shipped = DiffusionGemmaGenerationConfig._get_default_generation_params()
    expected = {k: v for k, v in shipped.items() if k != "sampler_config"}
    expected["entropy_bound"] = shipped["sampler_config"].entropy_bound
    assert dict(R.TRANSFORMERS_DEFAULTS) == expected
    default = RenoiseSettings()
    assert {k: getattr(default, k) for k in expected} == expected


def test_settings_from_takes_overrides_then_the_checkpoint_then_transformers():
    checkpoint = {"max_denoising_steps": 12, "t_min": None, "entropy_bound": 0.3, "eos_token_id": [1, 7],
                  "pad_token_id": 0}
    s = settings_from(checkpoint, entropy_bound=0.9, seed=4)
    assert (s.max_denoising_steps, s.t_min, s.entropy_bound, s.seed) == (12, 0.4, 0.9, 4)
    assert s.eos_token_ids == (1, 7) and s.pad_token_id == 0
    assert settings_from({"eos_token_id": 3}).eos_token_ids == (3,)
    with pytest.raises(ValueError, match=r"^temperature=\.\.\. is invalid: expected one of entropy_bound"):
        settings_from({}, temperature=1.0)


def test_linear_temperature_is_the_processors_bits():
    rng = random.Random(0)
    for _ in range(400):
        t_min = rng.choice([0.0, 0.1, 0.4, 1 / 3, rng.random()])
        t_max = t_min + rng.choice([0.4, 0.5, 1.2, rng.random() * 2 + 1e-3])
        total = rng.randint(1, 64)
        left = rng.randint(1, total)
        processor = LinearTemperatureScheduleLogitsProcessor(t_min, t_max, total)
        scores = torch.randn(1, 3, 5)
        expected = processor(None, scores, torch.tensor(left, dtype=torch.int32))  # what _denoising_step passes
        temperature = R.linear_temperature(torch.tensor([left]), torch.tensor([total]),
                                           torch.tensor([t_min], dtype=torch.float64),
                                           torch.tensor([t_max], dtype=torch.float64))
        assert temperature.dtype == torch.float32
        assert torch.equal(R.temper(scores, temperature), expected)
    first = R.linear_temperature(torch.tensor([8, 1]), torch.tensor([8, 8]),
                                 torch.tensor([0.4, 0.4], dtype=torch.float64),
                                 torch.tensor([0.8, 0.8], dtype=torch.float64))
    assert first[0].item() == pytest.approx(0.8) and first[1].item() == pytest.approx(0.45)  # never reaches t_min


@pytest.mark.parametrize("scale", [0.1, 1.0, 30.0, 1e4])
def test_token_entropy_is_categoricals_bits(scale):
    g = torch.Generator().manual_seed(1)
    logits = torch.randn(3, 7, 50, generator=g) * scale
    logits[0, 0, :10] = float("-inf")  # banned tokens: p log p must stay 0, not nan
    expected = torch.distributions.Categorical(logits=logits).entropy()
    assert torch.equal(R.token_entropy(logits), expected)
    assert not torch.isnan(expected).any()


def _sampler(bound: float, length: int, vocab: int) -> EntropyBoundSampler:
    return EntropyBoundSampler(EntropyBoundSamplerConfig(entropy_bound=bound), canvas_length=length,
                               vocab_size=vocab, max_denoising_steps=4)


@pytest.mark.parametrize("bound", [0.01, 0.1, 1.0, 3.0, 50.0])
def test_entropy_bound_acceptance_is_accept_canvas(bound):
    g = torch.Generator().manual_seed(2)
    logits = torch.randn(4, 16, 32, generator=g) * torch.tensor([0.5, 2.0, 6.0, 20.0])[:, None, None]
    sampler = _sampler(bound, 16, 32)
    current, proposal = torch.zeros(4, 16, dtype=torch.long), torch.ones(4, 16, dtype=torch.long)
    kept = sampler.accept_canvas(current, proposal, logits, torch.tensor(3))
    ours = R.entropy_bound_accept(R.token_entropy(logits), torch.full((4,), bound, dtype=torch.float64))
    assert torch.equal(ours, sampler.accepted_token_mask) and torch.equal(kept, ours.long())
    assert ours.sum(-1).min() >= 1  # the lowest-entropy position is always accepted


def test_acceptance_reads_each_rows_own_bound():
    entropy = torch.tensor([[0.05, 0.1, 0.2, 0.4]] * 3)
    accepted = R.entropy_bound_accept(entropy, torch.tensor([0.01, 0.12, 10.0], dtype=torch.float64))
    assert accepted.sum(-1).tolist() == [1, 2, 4]  # cumsum - current: 0, .05, .15, .35


def test_draws_are_the_global_generators_at_batch_one():
    probs = torch.softmax(torch.randn(1, 6, 40, generator=torch.Generator().manual_seed(3)) * 3, -1)
    with torch.random.fork_rng():
        torch.manual_seed(11)
        canvas = torch.randint(low=0, high=40, size=(1, 6))  # initialize_canvas
        drawn = torch.multinomial(probs.view(-1, 40), num_samples=1).view(1, 6)  # _denoising_step
        noise = torch.randint(low=0, high=40, size=(1, 6))  # renoise_canvas
    g = torch.Generator().manual_seed(11)
    assert torch.equal(R.uniform_canvas([g], 40, 6, "cpu"), canvas)
    assert torch.equal(R.draw_proposal(probs, [g]), drawn)
    assert torch.equal(R.uniform_canvas([g], 40, 6, "cpu"), noise)


def test_each_row_draws_from_its_own_generator():
    probs = torch.softmax(torch.randn(3, 5, 30, generator=torch.Generator().manual_seed(4)), -1)
    together = R.draw_proposal(probs, [torch.Generator().manual_seed(s) for s in (1, 2, 3)])
    for row, seed in enumerate((1, 2, 3)):
        alone = torch.multinomial(probs[row], 1, generator=torch.Generator().manual_seed(seed)).squeeze(-1)
        assert torch.equal(together[row], alone)
    assert R.uniform_canvas([], 30, 5, "cpu").shape == (0, 5)


def test_renoise_keeps_the_proposal_where_accepted_only():
    proposal, noise = torch.tensor([[1, 2, 3]]), torch.tensor([[7, 8, 9]])
    assert R.renoise(proposal, noise, torch.tensor([[True, False, True]])).tolist() == [[1, 8, 3]]


@pytest.mark.parametrize("thresholds", [(0, 0), (1, 1), (2, 2), (0, 3), (1, 2, 3)])
def test_stop_rule_is_stable_and_confident_criteria(thresholds):
    rows, length, vocab = len(thresholds), 4, 3
    g = torch.Generator().manual_seed(5)
    references = [StableAndConfidentStoppingCriteria(t, 0.9) for t in thresholds]
    history = R.empty_history(torch.tensor(thresholds), rows, length, "cpu")
    fired, argmax = 0, torch.zeros(rows, length, dtype=torch.long)
    for _ in range(16):
        fresh = torch.randint(0, 2, (rows, length), generator=g)
        repeat = torch.rand(rows, 1, generator=g) < 0.6  # a row keeps its argmax canvas: stability builds up
        argmax = torch.where(repeat, argmax, fresh)
        logits = torch.randn(rows, length, vocab, generator=g) * 4
        state = R.stable_and_confident(argmax, R.token_entropy(logits), history, torch.tensor(thresholds),
                                       torch.full((rows,), 0.9, dtype=torch.float64))
        history = state.history
        for row, reference in enumerate(references):
            expected = reference(argmax[row : row + 1], logits[row : row + 1])
            assert bool(state.stable[row] & state.confident[row]) == bool(expected[0])
            fired += bool(expected[0])
    assert fired > 0  # the cases exercise the rule, not only its "continue" branch


def test_zero_confidence_never_stops():
    state = R.stable_and_confident(torch.zeros(1, 2, dtype=torch.long), torch.zeros(1, 2), torch.empty(0, 1, 2).long(),
                                   torch.tensor([0]), torch.tensor([0.0], dtype=torch.float64))
    assert bool(state.stable) and not bool(state.confident)
    assert math.isclose(float(state.mean_entropy), 0.0)
