"""The `rcr` preset against MDPO's Running Confidence Remasking (issue 40).

MDPO (autonomousvision/mdpo) has no licence, so `tests/mdpo/rcr.py` is a clean re-implementation of
`diffusion_generate(rcr=True)` at temperature 0 (checked against the original function by
bench/crosscheck_originals.py: identical on every case it runs, docs/as_shipped.md). The same model
runs both; the canvas after every step must agree, and the forwards.

The preset (`revise="rcr_shipped"`, docs/as_shipped.md) does what the original does: MaskGIT's linear
split of each block's steps (`get_num_transfer_tokens_maskgit`: 64 masks in 24 steps go 3, 3, 2, 3, 3,
2, ...); one running confidence over the whole sequence, so that a later block's step takes back earlier
blocks' tokens; and, as `test_llada.py --rcr` runs it, the top-p 0.95 nucleus before the softmax, so that
a position is ranked by the renormalised maximum; ties fall as `torch.topk` breaks them over the canvas
row. The one divergence (the prompt stays as given where MDPO would re-mask it at ties of confidence 1.0)
is kept out of these cases (`compare` checks that the original never touches the prompt in them).
"""
from __future__ import annotations

import pytest

from dllm_viz import DecodeConfig, decode
from tests.as_shipped import NoMaskTiny, canvases, first_difference
from tests.mdpo.rcr import maskgit_linear_quotas, rcr_generate

PROMPTS = [[5, 6, 7], [1, 2, 3, 4, 5, 6], [9]]
MODELS = {"tiny-3": dict(seed=0, scale=3.0), "tiny-4": dict(seed=1, scale=4.0), "tiny-3b": dict(seed=1, scale=3.0)}
SHIPPED_TOP_P = 0.95  # test_llada.py's --top_p default, passed to diffusion_generate with --rcr


def compare(model_key: str, prompt: list[int], *, gen: int, steps: int, block: int, top_p: float | None,
            shipped: bool = False, **model_knobs) -> None:
    """The original and the preset on the same model, step by step. `shipped`: the preset as it is
    (its own top-p); else the preset with `top_p` set to the original's."""
    model = NoMaskTiny(**(MODELS.get(model_key) or model_knobs))
    tokens, run = rcr_generate(model, prompt, mask_id=0, steps=steps, gen_length=gen, block_length=block, top_p=top_p)
    assert all(row[:len(prompt)] == prompt for row in run.rows)  # the prompt is never taken back in these cases
    overrides = {} if shipped else {"top_p": top_p}
    config = DecodeConfig.preset("rcr", gen, steps=steps, block_length=None if block == gen else block, **overrides)
    (trace,) = decode(model, [prompt], config)
    theirs = [row[len(prompt):] for row in run.rows]
    mine = canvases(trace)
    assert mine == theirs, first_difference(mine, theirs, [0] * gen, 0)
    assert (trace.token_ids, trace.nfe) == (tokens, run.forwards)


def pairs(models=("tiny-3", "tiny-4")) -> list[tuple[str, list[int]]]:
    return [(m, p) for m in models for p in PROMPTS]


# Each difference from a plain split on (model, prompt) pairs: MaskGIT's split (64 in 24), the running confidence
# across two blocks, the shipped nucleus (on models whose prompts stay, see the last test), and saturated
# confidences (ties at 1.0 reach later blocks' masks; the fill then reaches -inf positions, torch.topk's order).
CASES = {
    "divide": [(m, p, dict(gen=g, steps=s, block=g, top_p=None)) for m, p in pairs() for g, s in ((64, 32), (32, 16))],
    "split": [(m, p, dict(gen=64, steps=24, block=64, top_p=None)) for m, p in pairs()],
    "across": [(m, p, dict(gen=64, steps=32, block=32, top_p=None)) for m, p in pairs()],
    "nucleus": [(m, p, dict(gen=64, steps=32, block=64, top_p=SHIPPED_TOP_P, shipped=True))
                for m, p in pairs(("tiny-3", "tiny-3b"))],
    "saturated": [("saturated", p, dict(gen=64, steps=24, block=32, top_p=None, seed=2, scale=30.0))
                  for p in PROMPTS[:2]],
}
def params(picks: dict[str, slice]) -> list:
    """pytest params of the chosen cases of each kind."""
    return [pytest.param(m, p, knobs, id=f"{kind}-{m}-prompt{len(p)}-{knobs['gen']}-{knobs['steps']}")
            for kind, cut in picks.items() for m, p, knobs in CASES[kind][cut]]


def test_maskgit_linear_split():
    assert maskgit_linear_quotas(64, 24)[:6] == [3, 3, 2, 3, 3, 2]  # the example
    assert maskgit_linear_quotas(64, 32) == [2] * 32 and sum(maskgit_linear_quotas(37, 11)) == 37
    assert maskgit_linear_quotas(5, 8) == [1, 1, 0, 1, 1, 0, 1, 0]  # fewer masks than steps: steps that fill none


FAST = {"divide": slice(0, 3), "split": slice(0, 1), "across": slice(1, 2), "nucleus": slice(3, 4),
        "saturated": slice(0, 1)}


@pytest.mark.parametrize("model_key,prompt,knobs", params(FAST))
def test_rcr_preset_is_mdpo_step_by_step(model_key, prompt, knobs):
    compare(model_key, prompt, **knobs)


@pytest.mark.parametrize("model_key,prompt,knobs", [
    case for case in params({kind: slice(None) for kind in CASES}) if case not in params(FAST)])
def test_rcr_preset_is_mdpo_step_by_step_over_the_grid(model_key, prompt, knobs):
    """The rest of the grid (tests/conftest.py puts it in the slow tier)."""
    compare(model_key, prompt, **knobs)


@pytest.mark.parametrize("top_p,model", [(None, dict(seed=2, scale=30.0)), (SHIPPED_TOP_P, dict(seed=2, scale=2.5))],
                         ids=["float32-saturated", "shipped-nucleus"])
def test_mdpo_takes_back_prompt_tokens_at_ties_of_confidence_one(top_p, model):
    """What the preset does not reproduce, by design (dllm-viz never edits a prompt): MDPO reads a position never
    filled as confidence 1.0, the prompt included, so once fewer tokens than the take-back's count sit
    below 1.0, `topk(largest=False)` picks prompt positions among the ties at 1.0; the next step refills
    them with the model's argmax (MDPO returns the generated part only). Ties at 1.0 come from a float32
    softmax that saturates, and, with the shipped nucleus (top_p 0.95), from every position whose top
    token has probability above 0.95 (its nucleus is that token alone, renormalised to 1.0)."""
    prompt = [5, 6, 7]
    _, run = rcr_generate(NoMaskTiny(**model), prompt, mask_id=0, steps=32, gen_length=64, block_length=64, top_p=top_p)
    assert any(i < len(prompt) for back in run.taken_back for i in back)
    assert any(row[:3] != prompt for row in run.rows)
    _, calm = rcr_generate(NoMaskTiny(**MODELS["tiny-3"]), prompt, mask_id=0, steps=32, gen_length=64,
                           block_length=64, top_p=top_p)
    assert not any(i < len(prompt) for back in calm.taken_back for i in back)


def test_rcr_preset_keeps_the_prompt_where_mdpo_remasks_it_and_agrees_until_then():
    """The one divergence the preset names: where MDPO takes a prompt token back at a tie of confidence 1.0,
    the prompt stays as given. Up to that step the canvases agree; the trace is valid throughout."""
    from dllm_viz import Trace

    prompt, model = [5, 6, 7], NoMaskTiny(seed=2, scale=2.5)
    _, run = rcr_generate(model, prompt, mask_id=0, steps=32, gen_length=64, block_length=64, top_p=SHIPPED_TOP_P)
    touched = next(i for i, row in enumerate(run.rows) if row[:3] != prompt)
    (trace,) = decode(model, [prompt], DecodeConfig.preset("rcr", 64, steps=32))
    mine, theirs = canvases(trace), [row[len(prompt):] for row in run.rows]
    assert mine[:touched] == theirs[:touched] and len(mine) == len(theirs) == 32
    assert trace.prompt_ids == prompt and 0 not in trace.token_ids
    assert Trace.from_json(trace.to_json()).to_json() == trace.to_json()


def test_rcr_shipped_gives_a_request_its_own_trace_in_a_mixed_batch():
    """MDPO's loop per row (its own torch.topk over its own canvas row) beside other rules and other
    lengths: each request's trace is the one it gets alone."""
    model = NoMaskTiny(**MODELS["tiny-4"])
    configs = [DecodeConfig.preset("rcr", 64, steps=24, block_length=32, top_p=None),
               DecodeConfig.preset("rcr_counted", 32), DecodeConfig.preset("rcr", 32, steps=16),
               DecodeConfig.preset("llada", 16)]
    prompts = [[5, 6, 7], [1, 2], [9], [4, 4, 4, 4]]
    together = decode(model, prompts, configs)
    for prompt, config, trace in zip(prompts, configs, together):
        (alone,) = decode(model, [prompt], config)
        assert canvases(trace) == canvases(alone) and trace.nfe == alone.nfe
