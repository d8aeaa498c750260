"""The `llada`, `dream` and `fast_dllm` presets follow the shipped rules they name (issues 16 and 33).

At temperature 0 each preset must agree, step by step (the positions that receive a token at each
step, and the tokens), with an independent re-implementation:
  LLaDA     generate() and Fast-dLLM generate(threshold) are re-implemented in
            tests/reference_samplers.py from their code (the softmax in the logits' dtype for
            LLaDA, in float64 for Fast-dLLM; argmax over the whole vocabulary, the mask token
            included; torch.topk over the canvas row, with its own order among equal values);
            models with exact ties, a masked argmax and a probability one float32 ulp below the
            threshold are decoded in float32 and in bf16.
  Dream     _sample() with alg="maskgit_plus", written here from the rule: top-p on the logits,
            probs = softmax; rank by the probability of the drawn token under those probs; step i
            unmasks int(m * (1 - t[i+1] / t[i])) of the m masks left, t = linspace(1, 1e-3, steps + 1).
At T > 0 the draws are random, so the tests check distributions on a model with known logits,
thousands of seeds in one batch: the token behind each position's ranking statistic is drawn
from the rule's distribution (softmax(logits / T), or its top-p nucleus for Dream), the statistic
equals the rule's probability of that token exactly, and the schedule picks by it.
"""
from __future__ import annotations

import re

import math
import subprocess
import sys

import pytest
import torch

from dllm_viz.core import rules
from dllm_viz import DecodeConfig, decode
from dllm_viz.core.config import REVISION_PRESETS, SHIPPED_PRESETS
from dllm_viz.core.schedules import planned_steps
from dllm_viz.serve.policy import Policy
from tests.reference_samplers import fast_dllm_generate, llada_generate
from tests.tiny import ScriptedDenoiser, TinyDenoiser

PROMPTS = [[5, 6, 7], [1, 2, 3, 4, 5, 6], [9]]


def _forward(model, canvas: list[int]) -> torch.Tensor:
    """`(N, V)` float64 logits with the mask token removed from the candidates (as dllm-viz does)."""
    logits = model(torch.tensor([canvas]))[0].detach().double().clone()
    logits[:, model.mask_token_id] = -math.inf
    return logits


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


def _steps(trace) -> list[list[int]]:
    return [sorted(rec.selected) for rec in trace.steps]


class NoMask(torch.nn.Module):
    """A model that, like a trained LLaDA, gives the mask token no probability: its logit far below."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model, self.mask_token_id, self.name = model, model.mask_token_id, "no-mask"

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        logits = self.model(input_ids, attention_mask).clone()
        logits[..., self.mask_token_id] = logits.min() - 30
        return logits


def placed(trace) -> list[list[tuple[int, int]]]:
    """Per step, (position, token) of the positions that received a token, sorted."""
    return [sorted(zip(rec.selected, rec.tokens)) for rec in trace.steps]


@pytest.mark.parametrize("prompt", PROMPTS)
def test_llada_preset_agrees_with_llada_code_at_t0(prompt):
    model = NoMask(TinyDenoiser(scale=4.0))
    (trace,) = decode(model, [prompt], DecodeConfig.preset("llada", 16, seed=1))
    tokens, ref = llada_generate(model, prompt, steps=16, gen_length=16, block_length=16, mask_id=0)
    assert (trace.token_ids, placed(trace)) == (tokens, [r.placed for r in ref])
    # Semi-autoregressive, two per step, as LLaDA's README runs it.
    (trace,) = decode(model, [prompt], DecodeConfig.preset("llada", 16, steps=8, block_length=8))
    tokens, ref = llada_generate(model, prompt, steps=8, gen_length=16, block_length=8, mask_id=0)
    assert (trace.token_ids, placed(trace)) == (tokens, [r.placed for r in ref])


@pytest.mark.parametrize("prompt", PROMPTS)
def test_fast_dllm_preset_agrees_with_fast_dllm_code_at_t0(prompt):
    model = NoMask(TinyDenoiser(scale=9.0))  # peaked: several positions clear 0.9 in one step
    config = DecodeConfig.preset("fast_dllm", 64)
    assert config.block_length == 32
    (trace,) = decode(model, [prompt], config)
    tokens, ref = fast_dllm_generate(model, prompt, gen_length=64, block_length=32, threshold=0.9, mask_id=0)
    assert (trace.token_ids, placed(trace)) == (tokens, [r.placed for r in ref])
    assert max(len(r.placed) for r in ref) > 1


# ----- exact ties, a masked argmax, one ulp below the threshold -----------------------------------
EDGE_V, EDGE_G = 16, 12
FLOAT32_NINE = float(torch.tensor(0.9, dtype=torch.float32))  # 0.899999976...: float32(0.9) < 0.9
# Probabilities in [float32(0.9) - ulp/4, 0.9) round to float32(0.9), so a float32 comparison keeps them
# at the threshold while Fast-dLLM's float64 one does not.
BAND = (FLOAT32_NINE - 2.0**-26, 0.9)


def floor_to(dtype: torch.dtype, x: float) -> float:
    """The largest `dtype` value <= x."""
    y, step = float(torch.tensor(x, dtype=torch.float64).to(dtype)), 2.0**-30
    while y > x:  # rounded up: step down until the conversion lands below
        y = min(y, float(torch.tensor(x - step, dtype=torch.float64).to(dtype)))
        step *= 2
    return y


def row_just_below_threshold(dtype: torch.dtype) -> torch.Tensor:
    """`(V,)` logits in `dtype` whose float64 softmax gives token 3 a probability inside BAND.

    Token 3 at 4.0; the rest of the mass e^4 (1/p - 1), p mid-band, made of tokens 4, 5, ... each
    at the largest `dtype` logit that still fits what is left (each leaves ~2^-8 of it in bf16);
    every other token -inf.
    """
    row = torch.full((EDGE_V,), -math.inf, dtype=torch.float64)
    row[3] = 4.0
    target = (BAND[0] + BAND[1]) / 2
    left = math.exp(4.0) * (1 / target - 1)
    for token in range(4, EDGE_V):
        b = floor_to(dtype, math.log(left))
        row[token] = b
        left -= math.exp(b)
        p = float(torch.softmax(row.to(dtype).double(), -1)[3])
        if BAND[0] <= p < BAND[1]:
            return row.to(dtype)
    raise AssertionError(f"no {dtype} row lands in {BAND}")


class EdgeModel:
    """Logits by generated position, in `dtype` (prompt of 2; 12 generated positions; mask id 0):

    HIGH (p ~ 0.9997) at 2 and 9; EDGE (just below 0.9, `row_just_below_threshold`) at 1 and 7;
    TIE, five identical rows, at 0, 3, 5, 8 and 11; LOW at 6 and 10, and at 4 unless the mask token
    is its argmax: `masky="crowd"`, p(mask) ~ 0.7 while 8 or more positions are masked (the top of
    LLaDA's ranking for a few steps); `masky="high"`, p(mask) ~ 0.95 while position 2 is masked
    (above Fast-dLLM's threshold at the first step only; a masked argmax that lasted would keep
    Fast-dLLM's loop going for ever). HIGH, EDGE and TIE positions tie exactly with each other, so
    which one a step picks is torch.topk's business.
    """

    def __init__(self, dtype: torch.dtype, masky: str | None = "crowd") -> None:
        self.mask_token_id, self.name, self.dtype, self.masky_when, self.calls = 0, "edge", dtype, masky, 0

        def row(**logits: float) -> torch.Tensor:
            r = torch.full((EDGE_V,), -math.inf, dtype=torch.float64)
            for token, value in logits.items():
                r[int(token[1:])] = value
            return r.to(dtype)

        high, tie, low = row(t1=8.0, t2=0.0), row(t7=2.0, t8=1.0, t9=0.0), row(t11=0.5, t10=0.0, t9=0.0)
        self.masky = {"crowd": row(t0=3.0, t10=1.5, t11=1.0), "high": row(t0=5.0, t10=1.5, t11=1.0), None: low}[masky]
        edge = row_just_below_threshold(dtype)
        self.rows = [tie, edge, high, tie, low, tie, low, edge, tie, high, low, tie]

    def _masky(self, gen: torch.Tensor) -> bool:
        if self.masky_when == "crowd":
            return int((gen == 0).sum()) >= 8
        return self.masky_when == "high" and int(gen[2]) == 0

    def __call__(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        self.calls += 1
        B, N = input_ids.shape
        out = torch.zeros(B, N, EDGE_V, dtype=self.dtype)
        for b in range(B):
            gen = input_ids[b, 2:2 + EDGE_G]
            for g in range(min(EDGE_G, N - 2)):
                out[b, 2 + g] = self.masky if g == 4 and self._masky(gen) else self.rows[g]
        return out


def earliest_first(conf: list[float], k: int) -> list[int]:
    return sorted(sorted(range(len(conf)), key=lambda i: (-conf[i], i))[:k])


DTYPES = {"float32": torch.float32, "bf16": torch.bfloat16}
LLADA_CASES = {  # steps, block_length, masky
    "one-per-step": (12, 12, "crowd"), "three-per-step": (4, 12, "crowd"), "semi-autoregressive": (6, 6, None)}


def llada_case(dtype: str, case: str):
    steps, block, masky = LLADA_CASES[case]
    model = EdgeModel(DTYPES[dtype], masky)
    config = DecodeConfig.preset("llada", EDGE_G, steps=steps, block_length=block if block != EDGE_G else None)
    (trace,) = decode(model, [[5, 6]], config)
    tokens, ref = llada_generate(model, [5, 6], steps=steps, gen_length=EDGE_G, block_length=block, mask_id=0)
    return trace, tokens, ref


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", LLADA_CASES)
def test_llada_preset_breaks_ties_and_masked_argmaxes_as_llada_code(dtype, case):
    trace, tokens, ref = llada_case(dtype, case)
    assert placed(trace)[:len(ref)] == [r.placed for r in ref]  # every step LLaDA takes: positions and tokens
    left = [i for i, t in enumerate(tokens) if t == 0]  # LLaDA ends its budget with these still masked ...
    assert bool(left) == any(r.wasted for r in ref) == (LLADA_CASES[case][2] is not None)
    assert sorted(i for rec in trace.steps[len(ref):] for i in rec.selected) == left  # ... dllm-viz fills them after
    assert 0 not in trace.token_ids and all(t == u for t, u in zip(trace.token_ids, tokens) if u != 0)


def test_the_edge_cases_have_teeth():
    """The cases above hold exact ties that the stable earliest-first order would break otherwise."""
    differs = []
    for dtype in DTYPES:
        for case in LLADA_CASES:
            trace, _, ref = llada_case(dtype, case)
            for r, rec in zip(ref, trace.steps):
                picked = sorted([i for i, _ in r.placed] + r.wasted)
                differs.append(picked != earliest_first(list(rec.confidence), len(picked)))
    assert sum(differs) >= 4, sum(differs)


@pytest.mark.parametrize("dtype", list(DTYPES.values()), ids=list(DTYPES))
@pytest.mark.parametrize("block", [12, 6])
def test_fast_dllm_preset_compares_the_threshold_as_fast_dllm_code(dtype, block):
    model = EdgeModel(dtype, masky="high")
    prompt = [5, 6]
    p_edge = float(torch.softmax(model.rows[1].double(), -1)[3])
    assert BAND[0] <= p_edge < 0.9 and float(torch.tensor(p_edge, dtype=torch.float32)) >= FLOAT32_NINE
    config = DecodeConfig.preset("fast_dllm", EDGE_G, block_length=block if block != EDGE_G else None)
    (trace,) = decode(model, [prompt], config)
    tokens, ref = fast_dllm_generate(model, prompt, gen_length=EDGE_G, block_length=block, threshold=0.9, mask_id=0)
    assert (trace.token_ids, placed(trace)) == (tokens, [r.placed for r in ref])
    assert [i for r in ref for i in r.wasted]  # the masked argmax was picked once at least
    # The first step takes both HIGH positions of its block, never an EDGE one (0.89999998 < 0.9).
    first = [i for i, _ in ref[0].placed]
    assert all(i not in (1, 7) for i in first) and len(first) >= 1


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


# ----- T > 0: distributions on a model with known logits ------------------------------------------
V = 7  # id 0 is the mask token
TABLE = torch.tensor([  # (G, V) logits of the three generated positions, whatever the canvas holds
    [0.0, 2.5, 1.0, 0.2, -1.0, 0.4, -0.5],
    [0.0, 0.3, 0.1, 1.9, 0.8, -0.7, 1.2],
    [0.0, 4.0, -1.0, 0.5, 0.0, -2.0, 1.5],  # one dominant token: raw p > 0.9
], dtype=torch.float64)
N = 3000  # seeds, decoded in one batch


# LLaDA's and Fast-dLLM's softmax and argmax include the mask token (id 0): give it its own logit.
TABLE_WITH_MASK = TABLE.clone().index_copy(1, torch.tensor([0]),
                                           torch.tensor([[-0.3], [0.6], [-0.2]], dtype=torch.float64))


def _known_model(prompt_length: int, table: torch.Tensor = TABLE) -> ScriptedDenoiser:
    def logits(ids: torch.Tensor) -> torch.Tensor:
        out = torch.zeros(ids.shape[0], ids.shape[1], V)
        out[:, prompt_length : prompt_length + 3] = table.float()
        return out

    return ScriptedDenoiser(logits)


def _first_steps(name: str, table: torch.Tensor = TABLE, **overrides) -> list:
    model = _known_model(prompt_length=1, table=table)
    configs = [DecodeConfig.preset(name, 3, seed=s, **overrides) for s in range(N)]
    return [trace.steps[0] for trace in decode(model, [[4]] * N, configs, record_candidates=0)]


def _token_of(statistic: float, probs: torch.Tensor, first: int = 1) -> int:
    """The one token (from id `first` on) whose rule probability is `statistic` (the table's are distinct)."""
    hits = [v for v in range(first, V) if abs(float(probs[v]) - statistic) < 2e-6]
    assert len(hits) == 1, (statistic, probs)
    return hits[0]


def _check_frequencies(drawn: list[list[int]], expected: torch.Tensor, first: int = 1) -> None:
    """Each position's empirical token frequencies within 5 sigma of the exact probabilities."""
    for j in range(3):
        counts = torch.bincount(torch.tensor([d[j] for d in drawn]), minlength=V).double() / N
        for v in range(first, V):
            p = float(expected[j, v])
            assert abs(float(counts[v]) - p) <= 5 * math.sqrt(p * (1 - p) / N) + 1e-12, (j, v, float(counts[v]), p)


@pytest.mark.parametrize("name", ["llada", "fast_dllm"])
def test_llada_and_fast_dllm_rank_by_the_raw_probability_of_a_tempered_draw(name):
    """Over the whole vocabulary, as their code: the draw may be the mask token, which then places nothing."""
    T = 0.8
    raw = torch.softmax(TABLE_WITH_MASK, -1)  # (G, V), the mask token included
    tempered = torch.softmax(TABLE_WITH_MASK / T, -1)
    records = _first_steps(name, table=TABLE_WITH_MASK, temperature=T)
    drawn = [[_token_of(rec.confidence[j], raw[j], first=0) for j in range(3)] for rec in records]
    _check_frequencies(drawn, tempered, first=0)  # the draw is softmax(logits / T) ...
    assert any(0 in d for d in drawn)
    for rec, d in zip(records, drawn):  # ... and the statistic its RAW probability
        conf = rec.confidence
        best = max(range(3), key=lambda j: conf[j])  # distinct values: no tie to break
        picked = {best} if name == "llada" else {best} | {j for j in range(3) if conf[j] >= 0.9}
        assert sorted(rec.selected) == sorted(j for j in picked if d[j] != 0)  # a drawn mask is picked, not placed
        assert rec.tokens == [d[j] for j in rec.selected]
        assert rec.raw_confidence is not None  # the record keeps the article's confidence beside it


def test_dream_ranks_by_the_tempered_filtered_probability_of_its_draw():
    T, top_p = 0.7, 0.9
    no_mask = TABLE.index_fill(1, torch.tensor([0]), -math.inf)  # (G, V): the mask id never drawn
    nucleus = torch.stack([torch.softmax(dream_top_p(no_mask[j] / T, top_p), -1)
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
    served = rules.REVISIONS[config.revise].served
    if served is not True:  # WINO's verify, MDPO's whole-row loop: SGLang's step cannot run them
        with pytest.raises(ValueError, match=re.escape(served[:40])):
            Policy.from_decode_config(config)
        return
    if config.indel != "none":  # an insert/delete rule: the policy needs the checkpoint's edit tokens
        with pytest.raises(ValueError, match="edit_token_ids"):
            Policy.from_decode_config(config)
    policy = Policy.from_decode_config(config, **({"edit_token_ids": [713, 714]} if config.indel != "none" else {}))
    again = Policy.from_yaml(policy.to_yaml())
    assert again == policy and (again.revise, again.threshold_strict) == (config.revise, config.threshold_strict)
    assert again.indel == config.indel


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
