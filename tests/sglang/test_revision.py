"""SGLang's own JointThreshold and LowConfidence against dllm-viz's presets (run by tests/test_sglang_env.py).

The same scripted block-causal model drives SGLang's classes and the dllm-viz plugin through
SGLang's real `DllmAlgorithm.run` loops (FDFO and synchronous). The model's logits depend only on
the ids of the block and what precedes it, so if every forward of every request sees the same ids,
the same logits went in and the same ids came out, step by step. JointThreshold has two code paths
(`_step_per_row`, and `joint_threshold_update_step_vectorized` in its FDFO and shared-state forms);
each is compared. The mask token's logit is -inf in this model: dllm-viz never makes it a candidate
(docs/shipped_samplers.md), and SGLang's argmax then cannot pick it either.
"""
from __future__ import annotations

import pytest
import torch
from sglang.srt.dllm.algorithm import algo_name_to_cls
from sglang.srt.dllm.config import DllmConfig

from dllm_viz import DecodeConfig, decode
from dllm_viz.serve.policy import Policy, block_seed, request_seed
from tests.sglang.harness import Request, block_forwards, make_algorithm, serve, sglang_steps
from tests.sglang.scripted import MASK_ID, CausalScript, ScriptedDenoiser

L = 8


class MaskFreeScript(CausalScript):
    """The scripted model with the mask token never predicted (logit -inf)."""

    def logits(self, tokens: torch.Tensor) -> torch.Tensor:
        out = super().logits(tokens)
        out[..., MASK_ID] = float("-inf")
        return out


class EditingDenoiser(ScriptedDenoiser):
    """The playground's view of the script, as a model that predicts at visible positions too."""

    can_edit = True


def sglang_algorithm(name: str, config: dict, *, fdfo: bool, max_running: int = 4):
    dllm = DllmConfig(algorithm=name, algorithm_config=config, block_size=L, mask_id=MASK_ID,
                      max_running_requests=max_running, first_done_first_out_mode=fdfo)
    return algo_name_to_cls[name](dllm)


def requests(*, aligned: bool = False) -> list[Request]:
    """Requests of several lengths joining at different rounds; `aligned`: prompts fill whole blocks."""
    if aligned:
        return [Request(rid="a", prompt=[3, 4, 5, 6, 7, 8, 9, 10], blocks=3),
                Request(rid="b", prompt=[11] * 16, blocks=2, arrival=1),
                Request(rid="c", prompt=[2, 9] * 4, blocks=2, arrival=3)]
    return [Request(rid="a", prompt=[3, 4, 5, 6, 7, 8, 9, 10], blocks=3),
            Request(rid="b", prompt=[11, 12, 13], blocks=2, arrival=1),
            Request(rid="c", prompt=[2] * 16, blocks=1, arrival=2),
            Request(rid="d", prompt=[5, 9, 21, 30, 1], blocks=2, arrival=4)]


def run_both(algorithm, policy: Policy, script: CausalScript, *, fdfo: bool, aligned: bool = False):
    """SGLang's algorithm and the plugin running `policy`, on the same requests; their requests back."""
    theirs, ours = requests(aligned=aligned), requests(aligned=aligned)
    serve(algorithm, script, theirs, max_running=3)
    serve(make_algorithm(policy, fdfo=fdfo, max_running=4), script, ours, max_running=3)
    return theirs, ours


def assert_same_steps(theirs: list[Request], ours: list[Request]) -> int:
    """Every forward saw the same ids on both sides, and the outputs agree; returns the forwards compared."""
    compared = 0
    for a, b in zip(theirs, ours):
        assert block_forwards(b) == block_forwards(a), a.rid
        assert b.output == a.output and MASK_ID not in a.output, a.rid
        compared += len(a.forwards)
    return compared


def rewrites(req: Request) -> int:
    """Positions that changed a second time within a block: token-to-token edits."""
    count = 0
    for seen in block_forwards(req):
        changed: set[int] = set()
        for before, after in zip(seen, seen[1:]):
            diff = {j for j, (x, y) in enumerate(zip(before, after)) if x != y}
            count += len(diff & changed)
            changed |= diff
    return count


JOINT = {  # SGLang's algorithm_config and the same rule as a dllm-viz preset
    "defaults": ({}, {}),
    "edits": ({"threshold": 0.3, "edit_threshold": 0.25, "max_post_edit_steps": 3},
              {"threshold": 0.3, "edit_threshold": 0.25, "max_post_edit_steps": 3}),
}
PATHS = {  # JointThreshold's code paths: (vectorized_decoding, fdfo)
    "per_row_fdfo": (False, True), "per_row_sync": (False, False),
    "vectorized_fdfo": (True, True), "vectorized_shared": (True, False),
}


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("knobs", JOINT)
def test_llada21_is_sglang_joint_threshold_step_by_step(path, knobs):
    vectorized, fdfo = PATHS[path]
    theirs_cfg, ours_cfg = JOINT[knobs]
    script = MaskFreeScript(seed=1, scale=2.0)
    algorithm = sglang_algorithm("JointThreshold", {**theirs_cfg, "vectorized_decoding": vectorized}, fdfo=fdfo)
    policy = Policy.from_decode_config(DecodeConfig.preset("llada21", L, **ours_cfg))
    theirs, ours = run_both(algorithm, policy, script, fdfo=fdfo)
    assert assert_same_steps(theirs, ours) > 30
    assert sum(rewrites(r) for r in theirs) > 0  # token-to-token edits happened, and were the same


@pytest.mark.parametrize("path", PATHS)
def test_the_repetition_penalty_is_sglang_s_on_whole_blocks(path):
    vectorized, fdfo = PATHS[path]
    script = MaskFreeScript(seed=2, scale=2.0)
    knobs = {"threshold": 0.4, "edit_threshold": 0.2, "max_post_edit_steps": 4, "penalty_lambda": 1.5}
    algorithm = sglang_algorithm("JointThreshold", {**knobs, "vectorized_decoding": vectorized}, fdfo=fdfo)
    policy = Policy.from_decode_config(DecodeConfig.preset("llada21", L, **knobs))
    theirs, ours = run_both(algorithm, policy, script, fdfo=fdfo, aligned=True)
    assert assert_same_steps(theirs, ours) > 20
    # the penalty changes the decode: without it SGLang gives other ids
    plain = requests(aligned=True)
    serve(sglang_algorithm("JointThreshold", {**knobs, "penalty_lambda": 0}, fdfo=True), script, plain, max_running=3)
    assert [r.output for r in plain] != [r.output for r in theirs]


@pytest.mark.parametrize("fdfo", [True, False], ids=["fdfo", "sync"])
@pytest.mark.parametrize("threshold", [None, 0.6])
def test_sglang_low_confidence_preset_is_sglang_low_confidence(fdfo, threshold):
    script = MaskFreeScript(seed=3, scale=3.0)
    config = {} if threshold is None else {"threshold": threshold}
    overrides = {} if threshold is None else {"threshold": threshold}
    policy = Policy.from_decode_config(DecodeConfig.preset("sglang_low_confidence", L, **overrides))
    theirs, ours = run_both(sglang_algorithm("LowConfidence", config, fdfo=fdfo), policy, script, fdfo=fdfo)
    assert assert_same_steps(theirs, ours) > 20
    confirmed = [len(step) for r in theirs for block in sglang_steps(r) for step in block]
    assert min(confirmed) == 1 and max(confirmed) > 1  # the fallback and the threshold both decided steps


def test_decode_runs_sglang_joint_threshold_block_by_block():
    """The playground itself (`decode`, one call per SGLang block) against SGLang's class."""
    script = MaskFreeScript(seed=4, scale=2.0)
    knobs = {"threshold": 0.3, "edit_threshold": 0.25, "max_post_edit_steps": 3}
    reqs = requests()
    serve(sglang_algorithm("JointThreshold", knobs, fdfo=True), script, reqs, max_running=3)
    policy = Policy.from_decode_config(DecodeConfig.preset("llada21", L, **knobs))
    model = EditingDenoiser(script)
    for req in reqs:
        committed, mine = list(req.prompt), []
        for _ in range(req.blocks):
            start = (len(committed) // L) * L
            masks, offset = L - (len(committed) - start), len(committed) - start
            config = policy.block_config(masks, seed=block_seed(request_seed(req.rid), start))
            (trace,) = decode(model, [committed], config, record_candidates=0)
            block = [committed[start:] + [MASK_ID] * masks]
            block += [committed[start:] + [MASK_ID if t is None else t for t in trace.canvas_at(rec.step)]
                      for rec in trace.steps]
            mine.append(block)  # the block before each step and after it; the last step changes nothing
            assert block[-1] == block[-2] and len(block[-1]) == L and offset + masks == L
            committed += trace.token_ids
        assert [b[:-1] for b in mine] == block_forwards(req), req.rid  # each forward saw the ids before a step
        assert committed[len(req.prompt):] == req.output, req.rid
