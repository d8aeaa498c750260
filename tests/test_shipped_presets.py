"""The `llada`, `dream` and `fast_dllm` presets follow the shipped rules they name (issue 16).

At temperature 0 each preset must be token-identical, step by step, to a plain re-implementation
written here from the rule (not from dllm_viz's code):
  LLaDA     generate(): per block, get_num_transfer_tokens' quotas; rank masked positions of the
            block by the float64 softmax probability of the token drawn (the argmax at T = 0).
  Dream     _sample() with alg="maskgit_plus": top-p on the logits, probs = softmax; rank by the
            probability of the drawn token under those probs; step i unmasks
            int(m * (1 - t[i+1] / t[i])) of the m masks left, t = linspace(1, 1e-3, steps + 1).
  Fast-dLLM get_transfer_index(threshold): LLaDA's draw and probability, then the most confident
            position of the block plus every other one whose probability >= threshold.
At T > 0 the draws are random, so the tests check distributions on a model with known logits,
thousands of seeds in one batch: the token behind each position's ranking statistic is drawn
from the rule's distribution (softmax(logits / T), or its top-p nucleus for Dream), the statistic
equals the rule's probability of that token exactly, and the schedule picks by it.
"""
from __future__ import annotations

import math
import subprocess
import sys

import pytest
import torch

from dllm_viz import DecodeConfig, decode
from dllm_viz.core.config import REVISION_PRESETS, SHIPPED_PRESETS
from dllm_viz.core.schedules import planned_steps
from dllm_viz.serve.policy import Policy
from tests.tiny import ScriptedDenoiser, TinyDenoiser

PROMPTS = [[5, 6, 7], [1, 2, 3, 4, 5, 6], [9]]


def _forward(model, canvas: list[int]) -> torch.Tensor:
    """`(N, V)` float64 logits with the mask token removed from the candidates (as dllm-viz does)."""
    logits = model(torch.tensor([canvas]))[0].detach().double().clone()
    logits[:, model.mask_token_id] = -math.inf
    return logits


def llada_reference(model, prompt, gen_length, steps, block_length):
    mask, P = model.mask_token_id, len(prompt)
    x = list(prompt) + [mask] * gen_length
    blocks = gen_length // block_length
    per_block, chosen_by_step = steps // blocks, []
    for b in range(blocks):
        lo, hi = P + b * block_length, P + (b + 1) * block_length
        m = sum(x[i] == mask for i in range(lo, hi))
        for q in [m // per_block + (1 if i < m % per_block else 0) for i in range(per_block)]:
            p = torch.softmax(_forward(model, x), dim=-1)
            drawn = {i: int(p[i].argmax()) for i in range(lo, hi) if x[i] == mask}
            ranked = sorted(drawn, key=lambda i: (-float(p[i, drawn[i]]), i))[:q]
            for i in ranked:
                x[i] = drawn[i]
            chosen_by_step.append(sorted(i - P for i in ranked))
    return x[P:], chosen_by_step


def dream_top_p(logits: torch.Tensor, top_p: float) -> torch.Tensor:
    """Dream's nucleus: drop a token once the mass of the tokens before it exceeds top_p."""
    ordered, idx = torch.sort(logits, descending=True)
    cumulative = torch.softmax(ordered, -1).cumsum(-1)
    drop = torch.zeros_like(cumulative, dtype=torch.bool)
    drop[1:] = cumulative[:-1] > top_p
    return logits.masked_fill(torch.zeros_like(drop).scatter(0, idx, drop), -math.inf)


def dream_reference(model, prompt, gen_length, steps, top_p):
    mask, P = model.mask_token_id, len(prompt)
    x = list(prompt) + [mask] * gen_length
    t = torch.linspace(1, 1e-3, steps + 1)  # float32, as Dream
    chosen_by_step = []
    for i in range(steps):
        logits = _forward(model, x).float()
        masked = [j for j in range(P, P + gen_length) if x[j] == mask]
        best = {}
        for j in masked:
            probs = torch.softmax(dream_top_p(logits[j], top_p), -1)
            best[j] = (float(probs.max()), int(probs.argmax()))
        n = int(torch.tensor(float(len(masked))) * (1 - t[i + 1] / t[i])) if i < steps - 1 else len(masked)
        ranked = sorted(masked, key=lambda j: (-best[j][0], j))[:n]
        for j in ranked:
            x[j] = best[j][1]
        chosen_by_step.append(sorted(j - P for j in ranked))
    return x[P:], chosen_by_step


def fast_dllm_reference(model, prompt, gen_length, block_length, threshold):
    mask, P = model.mask_token_id, len(prompt)
    x = list(prompt) + [mask] * gen_length
    chosen_by_step = []
    for b in range(gen_length // block_length):
        lo, hi = P + b * block_length, P + (b + 1) * block_length
        while any(x[i] == mask for i in range(lo, hi)):
            p = torch.softmax(_forward(model, x), dim=-1)
            drawn = {i: int(p[i].argmax()) for i in range(lo, hi) if x[i] == mask}
            conf = {i: float(p[i, drawn[i]]) for i in drawn}
            ranked = sorted(drawn, key=lambda i: (-conf[i], i))
            chosen = [ranked[0]] + [i for i in ranked[1:] if conf[i] >= threshold]
            for i in chosen:
                x[i] = drawn[i]
            chosen_by_step.append(sorted(i - P for i in chosen))
    return x[P:], chosen_by_step


def _steps(trace) -> list[list[int]]:
    return [sorted(rec.selected) for rec in trace.steps]


@pytest.mark.parametrize("prompt", PROMPTS)
def test_llada_preset_is_token_identical_to_the_rule_at_t0(prompt):
    model = TinyDenoiser(scale=4.0)
    config = DecodeConfig.preset("llada", 16, seed=1)
    (trace,) = decode(model, [prompt], config)
    tokens, chosen = llada_reference(model, prompt, 16, steps=16, block_length=16)
    assert (trace.token_ids, _steps(trace)) == (tokens, chosen)
    # Semi-autoregressive, two per step, as LLaDA's README runs it.
    config = DecodeConfig.preset("llada", 16, steps=8, block_length=8)
    (trace,) = decode(model, [prompt], config)
    assert (trace.token_ids, _steps(trace)) == llada_reference(model, prompt, 16, steps=8, block_length=8)


@pytest.mark.parametrize("prompt", PROMPTS)
def test_dream_preset_is_token_identical_to_the_rule_at_t0(prompt):
    model = TinyDenoiser(scale=4.0)
    config = DecodeConfig.preset("dream", 16, temperature=0.0, seed=2)
    (trace,) = decode(model, [prompt], config)
    tokens, chosen = dream_reference(model, prompt, 16, steps=16, top_p=0.95)
    assert (trace.token_ids, _steps(trace)) == (tokens, chosen)
    assert len(trace.steps) == planned_steps(config) == 16
    assert [] in chosen  # Dream's schedule spends some forwards confirming nothing
    (fewer,) = decode(model, [prompt], config.replace(steps=5, top_p=0.6))
    assert (fewer.token_ids, _steps(fewer)) == dream_reference(model, prompt, 16, steps=5, top_p=0.6)


@pytest.mark.parametrize("prompt", PROMPTS)
def test_fast_dllm_preset_is_token_identical_to_the_rule_at_t0(prompt):
    model = TinyDenoiser(scale=9.0)  # peaked: several positions clear 0.9 in one step
    config = DecodeConfig.preset("fast_dllm", 64)
    assert config.block_length == 32
    (trace,) = decode(model, [prompt], config)
    tokens, chosen = fast_dllm_reference(model, prompt, 64, block_length=32, threshold=0.9)
    assert (trace.token_ids, _steps(trace)) == (tokens, chosen)
    assert max(len(c) for c in chosen) > 1


# ----- T > 0: distributions on a model with known logits ------------------------------------------
V = 7  # id 0 is the mask token
TABLE = torch.tensor([  # (G, V) logits of the three generated positions, whatever the canvas holds
    [0.0, 2.5, 1.0, 0.2, -1.0, 0.4, -0.5],
    [0.0, 0.3, 0.1, 1.9, 0.8, -0.7, 1.2],
    [0.0, 4.0, -1.0, 0.5, 0.0, -2.0, 1.5],  # one dominant token: raw p > 0.9
], dtype=torch.float64)
N = 3000  # seeds, decoded in one batch


def _known_model(prompt_length: int) -> ScriptedDenoiser:
    def logits(ids: torch.Tensor) -> torch.Tensor:
        out = torch.zeros(ids.shape[0], ids.shape[1], V)
        out[:, prompt_length : prompt_length + 3] = TABLE.float()
        return out

    return ScriptedDenoiser(logits)


def _first_steps(name: str, **overrides) -> list:
    model = _known_model(prompt_length=1)
    configs = [DecodeConfig.preset(name, 3, seed=s, **overrides) for s in range(N)]
    return [trace.steps[0] for trace in decode(model, [[4]] * N, configs, record_candidates=0)]


def _token_of(statistic: float, probs: torch.Tensor) -> int:
    """The one token whose rule probability is `statistic` (the table's probabilities are distinct)."""
    hits = [v for v in range(1, V) if abs(float(probs[v]) - statistic) < 2e-6]
    assert len(hits) == 1, (statistic, probs)
    return hits[0]


def _check_frequencies(drawn: list[list[int]], expected: torch.Tensor) -> None:
    """Each position's empirical token frequencies within 5 sigma of the exact probabilities."""
    for j in range(3):
        counts = torch.bincount(torch.tensor([d[j] for d in drawn]), minlength=V).double() / N
        for v in range(1, V):
            p = float(expected[j, v])
            assert abs(float(counts[v]) - p) <= 5 * math.sqrt(p * (1 - p) / N) + 1e-12, (j, v, float(counts[v]), p)


@pytest.mark.parametrize("name", ["llada", "fast_dllm"])
def test_llada_and_fast_dllm_rank_by_the_raw_probability_of_a_tempered_draw(name):
    T = 0.8
    raw = torch.softmax(TABLE.clone().index_fill(1, torch.tensor([0]), -math.inf), -1)  # (G, V)
    tempered = torch.softmax((TABLE / T).index_fill(1, torch.tensor([0]), -math.inf), -1)
    records = _first_steps(name, temperature=T)
    drawn = [[_token_of(rec.confidence[j], raw[j]) for j in range(3)] for rec in records]
    _check_frequencies(drawn, tempered)  # the draw is softmax(logits / T) ...
    for rec, d in zip(records, drawn):  # ... and the statistic its RAW probability
        conf = rec.confidence
        if name == "llada":  # fixed_steps, steps = gen_length: the single most confident
            assert rec.selected == [max(range(3), key=lambda j: (conf[j], -j))]
        else:  # the most confident, plus every other one at >= 0.9
            best = max(range(3), key=lambda j: (conf[j], -j))
            assert sorted(rec.selected) == sorted({best} | {j for j in range(3) if conf[j] >= 0.9})
        assert rec.tokens == [d[j] for j in rec.selected]
        assert rec.raw_confidence is not None  # the record keeps the article's confidence beside it


def test_dream_ranks_by_the_tempered_filtered_probability_of_its_draw():
    T, top_p = 0.7, 0.9
    nucleus = torch.stack([torch.softmax(dream_top_p(TABLE[j].index_fill(0, torch.tensor([0]), -math.inf) / T, top_p), -1)
                           for j in range(3)])  # (G, V): zero outside each nucleus
    records = _first_steps("dream", temperature=T, top_p=top_p)
    drawn = [[_token_of(rec.confidence[j], nucleus[j]) for j in range(3)] for rec in records]
    assert all(float(nucleus[j, d[j]]) > 0 for d in drawn for j in range(3))  # never outside the nucleus
    _check_frequencies(drawn, nucleus)
    # Dream's count for steps = 3 and 3 masks: int(3 * (1 - t1 / t0)) = 0 at the first step.
    t = torch.linspace(1, 1e-3, 4)
    assert all(rec.k == int(torch.tensor(3.0) * (1 - t[1] / t[0])) == 0 for rec in records)


def test_dream_counts_follow_its_linear_times():
    model = TinyDenoiser()
    for steps, G in ((4, 16), (7, 16), (16, 16), (3, 5)):
        (trace,) = decode(model, [[3]], DecodeConfig.preset("dream", G, steps=steps, seed=1))
        t, left, counts = torch.linspace(1, 1e-3, steps + 1), G, []
        for i in range(steps):
            n = int(torch.tensor(float(left)) * (1 - t[i + 1] / t[i])) if i < steps - 1 else left
            counts.append(n)
            left -= n
        assert [rec.k for rec in trace.steps] == counts


# ----- presets, export, CLI ------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(SHIPPED_PRESETS))
def test_each_preset_cites_its_source_and_exports_as_a_policy(name):
    preset = SHIPPED_PRESETS[name]
    assert ".py" in preset.source and "/" in preset.source
    config = DecodeConfig.preset(name, 64, seed=3)
    policy = Policy.from_decode_config(config)
    again = Policy.from_yaml(policy.to_yaml())
    assert again == policy
    assert (again.confidence_from, again.sample_scope, again.schedule) == (
        config.confidence_from, config.sample_scope, config.schedule)


@pytest.mark.parametrize("name", list(REVISION_PRESETS))
def test_each_revision_preset_cites_its_source_and_exports_unless_it_needs_a_verify_pass(name):
    """The shipped rules of issue 28 (checked against their references in tests/test_revision.py and,
    for SGLang's, against SGLang itself in tests/sglang/test_revision.py)."""
    preset = REVISION_PRESETS[name]
    assert ".py" in preset.source and "/" in preset.source
    config = DecodeConfig.preset(name, 64, seed=3)
    assert DecodeConfig.preset(name, 64, temperature=0.5).temperature == 0.5  # overrides apply
    if config.revise == "wino":
        with pytest.raises(ValueError, match="second forward"):
            Policy.from_decode_config(config)
        return
    policy = Policy.from_decode_config(config)
    again = Policy.from_yaml(policy.to_yaml())
    assert again == policy and (again.revise, again.threshold_strict) == (config.revise, config.threshold_strict)


def test_sglang_presets_follow_sglang_s_defaults():
    llada21 = DecodeConfig.preset("llada21", 64)
    assert (llada21.threshold, llada21.edit_threshold, llada21.max_post_edit_steps, llada21.penalty_lambda) == (
        0.5, 0.0, 16, 0.0)
    low = DecodeConfig.preset("sglang_low_confidence", 64)
    assert (low.threshold, low.revise, low.block_length) == (0.95, "none", 32)
    for config in (llada21, low):  # SGLang: strictly above the threshold, argmax, softmax's own float ops
        assert (config.threshold_strict, config.temperature, config.confidence_from, config.min_k) == (
            True, 0.0, "softmax", 1)


def test_presets_reach_the_cli():
    out = subprocess.run([sys.executable, "-m", "dllm_viz", "export-policy", "--preset", "llada", "--gen-length", "32",
                          "--output", "/dev/null"], capture_output=True, text=True, check=True)
    assert "DllmVizPolicy" in out.stdout
    bad = subprocess.run([sys.executable, "-m", "dllm_viz", "export-policy", "--preset", "lladaa"],
                         capture_output=True, text=True)
    assert bad.returncode != 0 and "llada" in bad.stderr


def test_drawn_sources_need_global_sampling():
    for source in ("sampled", "sampled_raw"):
        with pytest.raises(ValueError, match=f"confidence_from='{source}' needs sample_scope='all'"):
            DecodeConfig(confidence_from=source)
    DecodeConfig(confidence_from="filtered")  # a measure of the filtered distribution needs no draw
