"""SGLang's own forward count against the SGLang presets' NFE (issue 40, item 3; run by tests/test_sglang_env.py).

SGLang 0.5.23's `DllmAlgorithm._run_sync` runs a forward, then `step`, and stops when `step`
reports every block done; `LowConfidence.step` computes `done` from the block it was given, before
its own update (low_confidence.py line 33). So the step that fills a block's last masks reports
"not done", and one more forward runs on the finished block, changes nothing and reports done
(FDFO mode: one more `run` round, the same forward). A block filled in S steps costs S + 1 forwards.
`JointThreshold` needs no extra forward: its closing step is a step of the decode.

The presets count SGLang's forwards, the extra one included: the step that fills a block is marked
`closing_forward` in the trace and `Trace.nfe` counts it (`core.references.sglang.closes_blocks`).
`decode` runs each SGLang block with `Policy.block_config`, as the plugin does.
"""
from __future__ import annotations

import pytest

from dllm_viz import DecodeConfig, decode
from dllm_viz.serve.policy import Policy, block_seed, request_seed
from tests.sglang.harness import Request, block_forwards, serve, sglang_steps
from tests.sglang.scripted import MASK_ID, ScriptedDenoiser
from tests.sglang.test_revision import EditingDenoiser, MaskFreeScript, sglang_algorithm

L = 8


def requests() -> list[Request]:
    return [Request(rid="a", prompt=[3, 4, 5, 6, 7, 8, 9, 10], blocks=3),
            Request(rid="b", prompt=[11, 12, 13], blocks=2, arrival=1),
            Request(rid="c", prompt=[5, 9, 21, 30, 1], blocks=2, arrival=2)]


def served(name: str, knobs: dict, *, fdfo: bool, seed: int) -> list[Request]:
    """SGLang's algorithm over the requests; synchronous mode one request at a time, so that no finished
    request rides along in a batch (those forwards are the batch's, not the request's)."""
    reqs = requests()
    serve(sglang_algorithm(name, knobs, fdfo=fdfo), MaskFreeScript(seed=seed, scale=3.0), reqs,
          max_running=3 if fdfo else 1)
    return reqs


def decode_nfe(preset: str, knobs: dict, req: Request, model) -> list[int]:
    """Per SGLang block, the NFE of `decode` running it as the plugin does; the closing forward, where the
    trace counts one, is marked on the block's last step only."""
    policy = Policy.from_decode_config(DecodeConfig.preset(preset, L, **knobs))
    committed, out = list(req.prompt), []
    for _ in range(req.blocks):
        start = (len(committed) // L) * L
        masks = L - (len(committed) - start)
        (trace,) = decode(model, [committed], policy.block_config(masks, seed=block_seed(request_seed(req.rid), start)),
                          record_candidates=0)
        out.append(trace.nfe)
        marked = [rec.step for rec in trace.steps if rec.closing_forward]
        assert marked == ([len(trace.steps) - 1] if preset == "sglang_low_confidence" else []), marked
        committed += trace.token_ids
    assert committed[len(req.prompt):] == req.output, req.rid  # the same tokens: the preset is the algorithm
    return out


@pytest.mark.parametrize("fdfo", [True, False], ids=["fdfo", "sync"])
def test_sglang_low_confidence_runs_one_forward_more_per_block_than_its_steps(fdfo):
    for req in served("LowConfidence", {}, fdfo=fdfo, seed=3):
        forwards, steps = block_forwards(req), sglang_steps(req)
        assert [len(f) for f in forwards] == [len(s) + 1 for s in steps], req.rid
        assert all(MASK_ID in f[-2] and MASK_ID not in f[-1] for f in forwards)  # the last forward sees a full block


@pytest.mark.parametrize("fdfo", [True, False], ids=["fdfo", "sync"])
def test_sglang_low_confidence_preset_counts_sglang_s_forwards(fdfo):
    for req in served("LowConfidence", {}, fdfo=fdfo, seed=3):
        assert decode_nfe("sglang_low_confidence", {}, req, ScriptedDenoiser(MaskFreeScript(seed=3, scale=3.0))) == \
            [len(f) for f in block_forwards(req)], req.rid


@pytest.mark.parametrize("fdfo", [True, False], ids=["fdfo", "sync"])
def test_llada21_preset_counts_sglang_s_forwards(fdfo):
    knobs = {"threshold": 0.3, "edit_threshold": 0.25, "max_post_edit_steps": 3}
    for req in served("JointThreshold", knobs, fdfo=fdfo, seed=4):
        assert decode_nfe("llada21", knobs, req, EditingDenoiser(MaskFreeScript(seed=4, scale=3.0))) == \
            [len(f) for f in block_forwards(req)], req.rid
