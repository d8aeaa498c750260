"""core/rules/eb.py: the EB-sampler, exact against SGLang's EBSampling rewritten from its file
(tests/reference_eb.py)."""
from __future__ import annotations

import pytest
import torch

from dllm_viz import DecodeConfig, decode, load_model
from dllm_viz.core.rules.eb import reveal_count
from dllm_viz.serve.policy import Policy
from tests.reference_eb import eb_sampling
from tests.tiny import TinyDenoiser

GAMMAS = (0.0, 0.05, 0.15, 0.6, 3.0)


def steps_of(trace) -> list[list[tuple[int, int]]]:
    return [sorted(zip(rec.selected, rec.tokens)) for rec in trace.steps]


@pytest.fixture(scope="module")
def world():
    return load_model("world")


@pytest.fixture(scope="module")
def tasks():
    return load_model("tasks")


def _case(model, prompt, G, block, gamma):
    config = DecodeConfig.preset("eb_sampler", G, block_length=block if block != G else None, gamma=gamma)
    (trace,) = decode(model, [prompt], config)
    tokens, ref = eb_sampling(model, model.tokenizer.encode(prompt) if isinstance(prompt, str) else prompt,
                              gen_length=G, block_length=block, gamma=gamma)
    return trace, tokens, ref


@pytest.mark.parametrize("gamma", GAMMAS)
@pytest.mark.parametrize("G, block", [(24, 24), (24, 8), (32, 16)])
def test_eb_sampler_is_sglangs_step_for_step_on_the_world_model(world, gamma, G, block):
    for prompt in ("Tom Lopez of", "Mia Berg of New York has 3 cats and"):
        trace, tokens, ref = _case(world, prompt, G, block, gamma)
        assert steps_of(trace) == ref and trace.token_ids == tokens, (prompt, gamma)


@pytest.mark.parametrize("gamma", GAMMAS)
def test_eb_sampler_is_sglangs_step_for_step_on_the_tasks_model_and_a_random_one(tasks, gamma):
    for prompt in ("copy : b e a d =", "sort : k d h a f ="):
        trace, tokens, ref = _case(tasks, prompt, 16, 8, gamma)
        assert steps_of(trace) == ref and trace.token_ids == tokens, (prompt, gamma)
    tiny = TinyDenoiser(scale=2.0, seed=3)  # flat distributions: entropies near log V, sums past gamma early
    trace, tokens, ref = _case(tiny, [5, 6, 7], 12, 6, gamma)
    assert steps_of(trace) == ref and trace.token_ids == tokens


def test_the_cases_have_teeth(world):
    """The grid above holds steps that confirm one, several, and a whole block: gamma decides."""
    counts = {g: [len(s) for s in _case(world, "Tom Lopez of", 24, 8, g)[2]] for g in GAMMAS}
    assert max(counts[0.0]) < max(counts[0.6]) <= max(counts[3.0])
    assert len(counts[0.0]) > len(counts[0.15]) > len(counts[3.0])
    assert any(1 < n < 8 for n in counts[0.15] + counts[0.6])


def test_reveal_count_is_one_then_the_prefixes_within_gamma():
    h = torch.tensor([[0.01, 0.5, 0.2, 0.02], [0.3, 0.3, 0.3, 0.3], [0.0, 0.0, 0.0, 0.0]])
    eligible = torch.tensor([[True] * 4, [True] * 4, [True, True, False, False]])
    assert reveal_count(h, eligible, torch.tensor([0.15, 0.15, 0.0])).tolist() == [3, 1, 3]  # clamped to 2 later
    assert reveal_count(h, eligible, torch.tensor([0.0, 1.0, 0.0])).tolist()[:2] == [1, 4]


def test_the_entropy_is_the_raw_distributions_whatever_the_temperature(world):
    """The article's rule: temperature shapes the drawn token only, never which positions the EB-sampler picks."""
    cold = DecodeConfig.preset("eb_sampler", 24, gamma=0.3)
    hot = cold.replace(temperature=1.7, seed=5)
    (a,), (b,) = decode(world, ["Tom Lopez of"], cold), decode(world, ["Tom Lopez of"], hot)
    assert [rec.selected for rec in a.steps][:1] == [rec.selected for rec in b.steps][:1]  # same first picks


def test_gamma_is_validated_named_and_carried_by_the_cli_and_the_policy():
    with pytest.raises(ValueError, match=r"gamma=-0.1 is invalid: expected a finite number in \[0.0, "):
        DecodeConfig(schedule="eb", gamma=-0.1)
    policy = Policy.from_decode_config(DecodeConfig.preset("eb_sampler", 64))
    assert policy.to_mapping()["gamma"] == 0.15 and policy.to_mapping()["schedule"] == "eb"
    assert Policy.from_yaml(policy.to_yaml()) == policy
    from dllm_viz.cli import build_parser, config_from_args
    args = build_parser().parse_args(["generate", "--prompt", "x", "--schedule", "eb", "--gamma", "0.4"])
    assert config_from_args(args).gamma == 0.4


def test_the_sglang_plugin_adapter_confirms_what_decode_confirms():
    from tests.sglang.scripted import CausalScript
    from tests.test_serve_blocks import L, _requests, playground, serve

    policy = Policy(block_size=L, schedule="eb", gamma=0.4, temperature=0.0, confidence="entropy")
    reqs = _requests()
    serve(policy, CausalScript(seed=2), reqs, with_sampling_info=False)
    for r in reqs:
        blocks, output = playground(policy, CausalScript(seed=2), r)
        assert r.steps == blocks and r.output == output
    assert any(len(step) > 1 for r in reqs for block in r.steps for step in block)
