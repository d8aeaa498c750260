"""The SGLang plugin against the real SGLang (run by tests/test_sglang_env.py in .venv-sglang).

Named invariants:
- the plugin's steps through SGLang's real `DllmAlgorithm.run` (FDFO and synchronous) confirm the
  same positions with the same tokens, step by step, as `dllm_viz.decode` with `Policy.block_config`;
- a multi-block playground config (`Policy.to_decode_config`, block_schedule="restart") decodes
  exactly like SGLang when decoding is argmax;
- a block is reported done only after a forward has seen its final tokens; input_ids stay in place;
- a request's tokens depend on its seed (or request id) only, never on its neighbours.
"""
from __future__ import annotations

from importlib.metadata import entry_points

import pytest
import torch
from sglang.srt.sampling.sampling_params import TOP_K_ALL, SamplingParams

from dllm_viz import decode
from dllm_viz.serve import ALGORITHM_NAME, SGLANG_VERSION, check_sglang_version, installed_sglang_version
from dllm_viz.serve.sglang import DllmVizPolicy, request_policy
from dllm_viz.serve.policy import Policy, block_seed, request_seed
from tests.sglang.harness import (
    Request, block_forwards, make_algorithm, playground_steps, serve, sglang_steps,
)
from tests.sglang.scripted import MASK_ID, CausalScript, ScriptedDenoiser

L = 8  # block size of these tests (LLaDA2 uses 32, SDAR 4)

POLICIES = {
    "topk_decay": Policy(block_size=L, schedule="topk_decay", top_k=4, decay=0.7, min_k=1, temperature=0.0),
    "topk_decay_sampled": Policy(block_size=L, schedule="topk_decay", top_k=3, decay=0.9, temperature=1.1,
                                 top_p=0.9),
    "fixed_steps_staged": Policy(block_size=L, schedule="fixed_steps", steps_per_block=3,
                                 temperature_stages=(1.3, 1.0, 0.6), confidence="margin"),
    "threshold_entropy": Policy(block_size=L, schedule="threshold", threshold=0.6, min_k=1, temperature=0.8,
                                confidence="entropy", vocab_top_k=5),
    "adaptive_random": Policy(block_size=L, schedule="adaptive", top_k=4, temperature=0.9, confidence="random"),
}


def requests() -> list[Request]:
    """Several requests of different lengths, aligned and unaligned prompts, joining at different rounds."""
    return [
        Request(rid="req-a", prompt=[3, 4, 5, 6, 7, 8, 9, 10], blocks=3),
        Request(rid="req-b", prompt=[11, 12, 13], blocks=2, arrival=1),
        Request(rid="req-c", prompt=[2] * 16, blocks=1, arrival=2),
        Request(rid="req-d", prompt=[5, 9, 21, 30, 1], blocks=2, arrival=4),
        Request(rid="req-e", prompt=[7] * 8, blocks=1, arrival=5),
    ]


@pytest.fixture(scope="module")
def script() -> CausalScript:
    return CausalScript(seed=0)


def test_pinned_sglang_is_installed_and_others_are_refused():
    assert installed_sglang_version() == SGLANG_VERSION
    check_sglang_version(SGLANG_VERSION)
    with pytest.raises(RuntimeError, match=f"supports sglang=={SGLANG_VERSION} only; found sglang==0.5.22"):
        check_sglang_version("0.5.22")
    with pytest.raises(RuntimeError, match="SGLang is not installed"):
        check_sglang_version(None)


def test_entry_point_registers_the_algorithm_in_sglang():
    from sglang.srt.dllm.algorithm import algo_name_to_cls, get_algorithm_cls
    from sglang.srt.plugins import load_plugins

    ours = [ep for ep in entry_points(group="sglang.srt.plugins") if ep.value == "dllm_viz.serve:register_sglang"]
    assert len(ours) == 1, (
        'pyproject.toml must declare [project.entry-points."sglang.srt.plugins"] '
        'dllm_viz = "dllm_viz.serve:register_sglang"')
    algo_name_to_cls.pop(ALGORITHM_NAME, None)
    load_plugins()
    assert get_algorithm_cls(ALGORITHM_NAME) is DllmVizPolicy
    assert DllmVizPolicy.__name__ == ALGORITHM_NAME


def test_policy_is_read_from_sglangs_config(tmp_path):
    import yaml
    from sglang.srt.dllm.config import DllmConfig

    policy = POLICIES["threshold_entropy"]
    path = policy.save(tmp_path / "policy.yaml")
    mapping = yaml.safe_load(path.read_text()) or {}  # what DllmConfig.from_server_args does with the file
    config = DllmConfig(algorithm=ALGORITHM_NAME, algorithm_config=mapping, block_size=mapping["block_size"],
                        mask_id=MASK_ID, max_running_requests=4, first_done_first_out_mode=True)
    assert DllmVizPolicy(config).policy == policy
    for fdfo in (True, False):
        algorithm = make_algorithm(POLICIES["fixed_steps_staged"], fdfo=fdfo)
        assert algorithm.policy == POLICIES["fixed_steps_staged"]
        assert algorithm.fdfo is fdfo and algorithm.block_size == L and algorithm.mask_id == MASK_ID


def _config(extra: dict, block_size: int = L):
    from sglang.srt.dllm.config import DllmConfig

    return DllmConfig(algorithm=ALGORITHM_NAME, algorithm_config={"block_size": block_size, **extra},
                      block_size=block_size, mask_id=MASK_ID, max_running_requests=2)


def test_bad_policy_keys_and_block_size_mismatch_raise_naming_them():
    with pytest.raises(ValueError, match="schedul=1 is invalid: expected no such policy key"):
        DllmVizPolicy(_config({"schedul": 1}))
    with pytest.raises(ValueError, match="top_k=0 is invalid"):
        DllmVizPolicy(_config({"top_k": 0}))
    config = _config({})
    config.block_size = 4  # what SGLang would run if the YAML and the model disagreed
    with pytest.raises(ValueError, match="block_size=8 in the policy is invalid"):
        DllmVizPolicy(config)
    # Without block_size in the YAML, the policy takes SGLang's block size.
    from sglang.srt.dllm.config import DllmConfig

    plain = DllmConfig(algorithm=ALGORITHM_NAME, algorithm_config={}, block_size=4, mask_id=MASK_ID,
                       max_running_requests=1)
    assert DllmVizPolicy(plain).policy.block_size == 4


@pytest.mark.parametrize("name", list(POLICIES))
@pytest.mark.parametrize("fdfo", [True, False], ids=["fdfo", "sync"])
def test_steps_match_the_playground_step_by_step(script, name, fdfo):
    policy = POLICIES[name]
    reqs = requests()
    runner = serve(make_algorithm(policy, fdfo=fdfo), script, reqs, max_running=3)
    assert runner.batches and all(len(ptrs) == 1 for _, ptrs in runner.batches)  # input_ids written in place
    for req in reqs:
        expected_steps, expected_output = playground_steps(policy, script, req, L)
        assert sglang_steps(req) == expected_steps, req.rid
        assert req.output == expected_output, req.rid
        assert MASK_ID not in req.output


@pytest.mark.parametrize("fdfo", [True, False], ids=["fdfo", "sync"])
def test_a_block_is_done_only_after_a_forward_saw_its_final_tokens(script, fdfo):
    policy = POLICIES["topk_decay"]
    reqs = requests()
    serve(make_algorithm(policy, fdfo=fdfo), script, reqs, max_running=3)
    for req in reqs:
        for seen, steps in zip(block_forwards(req), sglang_steps(req)):
            assert MASK_ID not in seen[-1]
            if fdfo:  # one forward per step plus the one that sees the finished block
                assert len(seen) == len(steps) + 1


@pytest.mark.parametrize("name", ["topk_decay", "fixed_steps_staged", "threshold_entropy", "adaptive_random"])
def test_multi_block_playground_config_decodes_like_sglang_at_argmax(script, name):
    policy = POLICIES[name].replace(temperature=0.0, temperature_stages=None)
    reqs = [Request(rid="r1", prompt=list(range(1, 9)), blocks=3), Request(rid="r2", prompt=[4] * 16, blocks=2)]
    serve(make_algorithm(policy, fdfo=True), script, reqs)
    model = ScriptedDenoiser(script)
    for req in reqs:
        config = policy.to_decode_config(num_blocks=req.blocks)
        assert config.block_schedule == "restart" and config.block_length == L
        (trace,) = decode(model, [req.prompt], config, record_candidates=0)
        if policy.confidence == "random":  # scores come from the generator: one per block in SGLang
            continue
        assert trace.token_ids == req.output
        flat = [step for block in sglang_steps(req) for step in block]
        mine = [sorted((g % L, t) for g, t in zip(rec.selected, rec.tokens)) for rec in trace.steps]
        assert mine == flat


@pytest.mark.parametrize("fdfo", [True, False], ids=["fdfo", "sync"])
def test_literal_mask_ids_in_the_prompt_are_never_rewritten(script, fdfo):
    reqs = [Request(rid="lit", prompt=[1, MASK_ID, 2], blocks=2), Request(rid="plain", prompt=[4, 5], blocks=1)]
    serve(make_algorithm(POLICIES["topk_decay_sampled"], fdfo=fdfo), script, reqs)
    lit = reqs[0]
    first_block = block_forwards(lit)[0]
    assert all(ids[:3] == [1, MASK_ID, 2] for ids in first_block)
    assert len(lit.output) == 2 * L - 3 and MASK_ID not in lit.output
    assert sum(len(step) for step in sglang_steps(lit)[0]) == L - 3


def test_single_block_sampling_matches_one_playground_call(script):
    policy = POLICIES["topk_decay_sampled"]
    req = Request(rid="solo", prompt=list(range(1, 9)), blocks=1)
    serve(make_algorithm(policy, fdfo=True), script, [req])
    seed = block_seed(request_seed(req.rid), len(req.prompt))
    (trace,) = decode(ScriptedDenoiser(script), [req.prompt], policy.to_decode_config(num_blocks=1, seed=seed))
    assert trace.token_ids == req.output


def _tokens(script, policy, reqs, **kw) -> dict[str, list[int]]:
    serve(make_algorithm(policy, fdfo=True), script, reqs, **kw)
    return {r.rid: r.output for r in reqs}


def test_same_request_id_same_tokens_and_neighbours_change_nothing(script):
    policy = POLICIES["topk_decay_sampled"].replace(temperature=1.5, top_p=None)
    alone = _tokens(script, policy, [Request(rid="x", prompt=[1, 2, 3], blocks=3)])
    again = _tokens(script, policy, [Request(rid="x", prompt=[1, 2, 3], blocks=3)])
    crowd = _tokens(script, policy, [Request(rid="n1", prompt=[9] * 8, blocks=2),
                                     Request(rid="x", prompt=[1, 2, 3], blocks=3, arrival=1),
                                     Request(rid="n2", prompt=[4, 4], blocks=1)])
    other = _tokens(script, policy, [Request(rid="y", prompt=[1, 2, 3], blocks=3)])
    assert alone["x"] == again["x"] == crowd["x"]
    assert other["y"] != alone["x"]  # at temperature 1.5 over 21 positions, another stream differs


def test_explicit_seeds_decide_with_deterministic_inference(script):
    policy = POLICIES["topk_decay_sampled"].replace(temperature=1.5, top_p=None)
    a = _tokens(script, policy, [Request(rid="a", prompt=[1, 2, 3], blocks=2, seed=7)], deterministic=True)
    b = _tokens(script, policy, [Request(rid="b", prompt=[1, 2, 3], blocks=2, seed=7),
                                 Request(rid="c", prompt=[5], blocks=1, seed=8)], deterministic=True)
    c = _tokens(script, policy, [Request(rid="a", prompt=[1, 2, 3], blocks=2, seed=8)], deterministic=True)
    assert a["a"] == b["b"]  # the seed, not the request id, decides
    assert a["a"] != c["a"]
    req = Request(rid="a", prompt=[1, 2, 3], blocks=2, seed=7)
    assert playground_steps(policy, script, req, L, deterministic=True)[1] == a["a"]


def test_request_sampling_parameters_reach_the_draws(script):
    policy = POLICIES["topk_decay_sampled"]
    reqs = [
        Request(rid="greedy", prompt=[1, 2, 3], blocks=2, temperature=0.0),
        Request(rid="warm", prompt=[1, 2, 3], blocks=2, temperature=0.7, top_k=6, top_p=0.8),
        Request(rid="default", prompt=[1, 2, 3], blocks=2),
    ]
    serve(make_algorithm(policy, fdfo=True), script, reqs)
    effective = {
        "greedy": policy.replace(temperature=0.0, temperature_stages=None),
        "warm": policy.replace(temperature=0.7, vocab_top_k=6, top_p=0.8),
        "default": policy,
    }
    for req in reqs:
        # float32 round trip, as SGLang's sampling tensors store them
        eff = effective[req.rid]
        eff = eff.replace(temperature=float(torch.tensor(eff.temperature)),
                          top_p=None if eff.top_p is None else float(torch.tensor(eff.top_p)))
        assert playground_steps(eff, script, req, L)[1] == req.output, req.rid


def test_request_policy_mapping():
    policy = Policy(block_size=L, temperature=1.2, temperature_stages=(1.2, 1.0, 0.7))
    sp = SamplingParams(temperature=0.0)  # SGLang's normalisation: T=1, top_k=1
    greedy = request_policy(policy, temperature=sp.temperature, top_p=sp.top_p, top_k=sp.top_k)
    assert greedy.temperature == 0.0 and greedy.temperature_stages is None
    neutral = SamplingParams()
    assert request_policy(policy, temperature=neutral.temperature, top_p=neutral.top_p, top_k=neutral.top_k) == policy
    warm = request_policy(policy, temperature=0.5, top_p=0.9, top_k=12)
    assert (warm.temperature, warm.temperature_stages, warm.top_p, warm.vocab_top_k) == (0.5, None, 0.9, 12)
    ignore = policy.replace(request_sampling="ignore")
    assert request_policy(ignore, temperature=0.5, top_p=0.9, top_k=1) == ignore
    assert request_policy(policy, temperature=1.0, top_p=1.0, top_k=TOP_K_ALL) is policy


def test_validate_request_refuses_features_it_would_ignore():
    from types import SimpleNamespace

    assert DllmVizPolicy.validate_request(SimpleNamespace(sampling_params=SamplingParams(temperature=0.7))) is None
    too_hot = SamplingParams()
    too_hot.temperature = float("inf")  # past SGLang's own check: the plugin still refuses, not crashes
    assert "temperature=inf" in DllmVizPolicy.validate_request(SimpleNamespace(sampling_params=too_hot))
    message = DllmVizPolicy.validate_request(SimpleNamespace(sampling_params=SamplingParams(min_p=0.1, regex="a+")))
    assert message is not None and "min_p" in message and "regex" in message
