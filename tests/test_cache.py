"""The cache in the decoding loop (`dllm_viz.core.cache`, issue 31): which forward each step runs, what
a cached trace records, the drift diagnostic, batching with uncached requests, and the refusals."""
from __future__ import annotations

import math

import pytest
import torch

from dllm_viz import DecodeConfig, Engine, decode, load_model
from dllm_viz.core.cache import Forward, plan
from dllm_viz.core.trace import Trace
from tests.tiny import TinyDenoiser

PROMPT = "Mia Berg of New York has 3 cats and"


@pytest.fixture(scope="module")
def world():
    return load_model("world")


def confidences(trace: Trace) -> list[list[float | None]]:
    """Every step's confidence row, NaN as None (NaN != NaN would fail a comparison of equal rows)."""
    return [rec.to_dict()["confidence"] for rec in trace.steps]


def cfg(**kw) -> DecodeConfig:
    base = dict(gen_length=32, block_length=8, schedule="threshold", threshold=0.9, temperature=0.0, seed=3)
    return DecodeConfig(**{**base, **kw})


# ----- plan ---------------------------------------------------------------------------------------
def test_plan_refreshes_at_each_block_start_and_windows_after():
    c = cfg(cache="dual")
    assert plan(c, prompt_length=5, block=0, steps_in_block=None) == Forward("full", 0, 37)
    assert plan(c, prompt_length=5, block=2, steps_in_block=0) == Forward("full", 0, 37)
    assert plan(c, prompt_length=5, block=2, steps_in_block=3) == Forward("dual", 21, 29)  # the block alone
    assert plan(c.replace(cache="prefix"), prompt_length=5, block=2, steps_in_block=3) == Forward("prefix", 21, 37)
    assert plan(c.replace(cache="none"), prompt_length=5, block=2, steps_in_block=3).kind == "full"
    every3 = c.replace(cache_refresh=3)
    assert [plan(every3, prompt_length=5, block=1, steps_in_block=s).kind for s in range(7)] == \
        ["full", "dual", "dual", "full", "dual", "dual", "full"]
    assert Forward("dual", 21, 29).computed == 8


# ----- what a cached decode records ---------------------------------------------------------------
@pytest.mark.parametrize("cache", ["prefix", "dual"])
def test_each_step_records_its_forward_and_the_positions_it_computed(world, cache):
    (trace,) = decode(world, [PROMPT], cfg(cache=cache))
    P, G = len(trace.prompt_ids), 32
    blocks = [rec.block for rec in trace.steps]
    for i, rec in enumerate(trace.steps):
        first_of_block = i == 0 or blocks[i - 1] != rec.block
        assert rec.forward_kind == ("full" if first_of_block else cache)
        start = P + 8 * rec.block
        assert rec.computed == {"full": P + G, "prefix": P + G - start, "dual": 8}[rec.forward_kind]
        assert rec.forward_time is not None and rec.forward_time >= 0 and rec.drift is None
        scored = [g for g, c in enumerate(rec.confidence) if not math.isnan(c)]
        if rec.forward_kind == "full":  # every masked position, as an uncached step
            assert len(scored) == G - sum(len(r.selected) for r in trace.steps[:i])
        else:  # the current block's masks only
            assert scored and all(g // 8 == rec.block for g in scored)
            assert all(rec.argmax[g] == -1 for g in range(G) if g not in scored)
    facts = trace.metrics
    assert facts["refreshes"] == 4 and facts["windows"] == trace.nfe - 4
    assert facts["positions_computed"] == sum(rec.computed for rec in trace.steps) < facts["positions_full"]
    assert "seconds_saved" in facts
    assert Trace.from_json(trace.to_json()).to_json() == trace.to_json()


@pytest.mark.parametrize("cache", ["prefix", "dual"])
def test_a_refresh_is_the_uncached_step_exactly(world, cache):
    # The first step of a decode is a refresh: its record is the uncached decode's, bit for bit.
    (cached,) = decode(world, [PROMPT], cfg(cache=cache))
    (plain,) = decode(world, [PROMPT], cfg())
    a, b = cached.steps[0].to_dict(), plain.steps[0].to_dict()
    for key in ("forward_kind", "computed", "forward_time"):
        a.pop(key)
    assert a == b


@pytest.mark.parametrize("cache", ["prefix", "dual"])
def test_refreshing_every_step_is_the_uncached_decode(world, cache):
    (cached,) = decode(world, [PROMPT], cfg(cache=cache, cache_refresh=1))
    (plain,) = decode(world, [PROMPT], cfg())
    assert {rec.forward_kind for rec in cached.steps} == {"full"}
    assert (cached.token_ids, cached.order) == (plain.token_ids, plain.order)
    assert confidences(cached) == confidences(plain)


def test_the_cache_changes_what_a_stale_window_sees(world):
    # On the Austen model the windows' logits drift enough to change tokens: the cache is an approximation.
    model = load_model()
    prompt = "It is a truth universally acknowledged, that"
    (plain,) = decode(model, [prompt], cfg(gen_length=32, block_length=16))
    (dual,) = decode(model, [prompt], cfg(gen_length=32, block_length=16, cache="dual", cache_drift=True))
    assert dual.token_ids != plain.token_ids
    checked = [rec for rec in dual.steps if rec.forward_kind == "dual"]
    assert checked and all(rec.drift is not None for rec in checked)
    assert max(rec.drift for rec in checked) > 1e-3
    assert any(rec.drift_selected or rec.drift_tokens for rec in checked)


# ----- the drift diagnostic -----------------------------------------------------------------------
def test_drift_is_the_exact_forward_beside_the_cached_one(world):
    (trace,) = decode(world, [PROMPT], cfg(cache="dual", cache_drift=True))
    P = len(trace.prompt_ids)
    windows = [rec for rec in trace.steps if rec.forward_kind == "dual"]
    assert windows and all(rec.drift is None for rec in trace.steps if rec.forward_kind == "full")
    for rec in windows:
        # The exact confidence is the uncached model's on the canvas entering the step.
        canvas = [world.mask_token_id if t is None else t for t in trace.canvas_at(rec.step - 1)]
        ids = torch.tensor([trace.prompt_ids + canvas])
        cols = torch.tensor([P + g for g, c in enumerate(rec.exact_confidence) if not math.isnan(c)])
        logits = world.logits_at(ids, None, torch.zeros_like(cols), cols).float()
        logits[:, world.mask_token_id] = -math.inf
        exact = logits.softmax(-1).max(-1).values.tolist()
        got = [c for c in rec.exact_confidence if not math.isnan(c)]
        assert got == pytest.approx(exact, abs=2e-6)
        # The largest change, and the set the threshold rule would pick from the exact confidence.
        pairs = [(c, e) for c, e in zip(rec.confidence, rec.exact_confidence) if not math.isnan(e)]
        assert rec.drift == pytest.approx(max(abs(c - e) for c, e in pairs), abs=2e-6)
        exact_or_low = [-1 if math.isnan(e) else e for e in rec.exact_confidence]  # unscored: last
        ranked = sorted(range(len(exact_or_low)), key=lambda g: -exact_or_low[g])
        exact_set = {ranked[0]} | {g for g, e in enumerate(rec.exact_confidence) if not math.isnan(e) and e >= 0.9}
        assert rec.drift_selected == (exact_set != set(rec.selected))
        assert rec.drift_tokens is (not all(t == int(logits[cols.tolist().index(P + g)].argmax())
                                            for g, t in zip(rec.selected, rec.tokens)))


def test_drift_is_recorded_only_when_asked(world):
    (trace,) = decode(world, [PROMPT], cfg(cache="prefix"))
    assert all(rec.drift is None and rec.exact_confidence is None for rec in trace.steps)
    assert "drift_max" not in trace.metrics


# ----- batching -----------------------------------------------------------------------------------
def test_cached_and_uncached_requests_batch_together_and_each_gets_its_solo_trace(world):
    prompts = [PROMPT, "Tom Lopez of", "Ana", "Sam Wood of Port Royal has"]
    configs = [cfg(cache="dual"), cfg(), cfg(cache="prefix", seed=5, temperature=1.0),
               cfg(cache="dual", cache_drift=True)]
    together = decode(world, prompts, configs)
    for prompt, config, trace in zip(prompts, configs, together):
        (alone,) = decode(world, [prompt], config)
        assert (trace.token_ids, trace.order) == (alone.token_ids, alone.order)
        assert confidences(trace) == confidences(alone)
        assert [(r.forward_kind, r.computed, r.drift) for r in trace.steps] == [(r.forward_kind, r.computed, r.drift)
                                                                          for r in alone.steps]


@pytest.mark.parametrize("rule", ["wino", "joint_threshold", "rcr"])
def test_a_cached_request_and_a_revising_one_batch_together(rule):
    # A revision rule reads decided positions in the same forward (joint_threshold) or a verify pass (wino):
    # beside a cached row, each request still gets the trace it gets alone.
    model = load_model("world")
    model.can_edit = True  # joint_threshold needs a model that declares it (only the plumbing is tested here)
    prompts = [PROMPT, "Tom Lopez of"]
    configs = [cfg(cache="dual"), cfg(revise=rule, block_length=8)]
    together = decode(model, prompts, configs)
    for prompt, config, trace in zip(prompts, configs, together):
        (alone,) = decode(model, [prompt], config)
        assert (trace.token_ids, trace.order, trace.nfe) == (alone.token_ids, alone.order, alone.nfe)
        assert confidences(trace) == confidences(alone)
    assert together[0].steps[1].forward_kind == "dual" and together[1].steps[0].forward_kind is None


def test_the_engine_batches_cached_and_uncached_requests(world):
    prompts = [PROMPT, "Tom Lopez of", "Ana"]
    configs = [cfg(cache="dual"), cfg(), cfg(cache="prefix", gen_length=16)]
    with Engine(world, max_batch=2) as engine:  # fewer slots than requests: one joins when another leaves
        traces = [f.result(timeout=120) for f in [engine.submit(p, c) for p, c in zip(prompts, configs)]]
    for prompt, config, trace in zip(prompts, configs, traces):
        (alone,) = decode(world, [prompt], config)
        assert (trace.token_ids, trace.order, [r.forward_kind for r in trace.steps]) == \
            (alone.token_ids, alone.order, [r.forward_kind for r in alone.steps])


# ----- refusals -----------------------------------------------------------------------------------
def test_a_model_without_a_cached_forward_refuses_a_cache_by_name():
    with pytest.raises(ValueError, match=r"cache='dual' is invalid for 'tiny'.*expected none"):
        decode(TinyDenoiser(), [[5, 6]], DecodeConfig(gen_length=8, block_length=4, cache="dual"))
    decode(TinyDenoiser(), [[5, 6]], DecodeConfig(gen_length=8, block_length=4))  # no cache: fine


def test_a_refused_request_leaves_the_engine_serving_the_others(world):
    with Engine(TinyDenoiser(), max_batch=2, max_length=32) as engine:
        bad = engine.submit([5, 6], DecodeConfig(gen_length=8, block_length=4, cache="prefix"))
        good = engine.submit([5, 6], DecodeConfig(gen_length=8))
        with pytest.raises(ValueError, match="cache='prefix' is invalid"):
            bad.result(timeout=60)
        assert len(good.result(timeout=60).token_ids) == 8


# ----- a step that fails ---------------------------------------------------------------------------
def test_a_step_that_raises_keeps_none_of_its_caches():
    """Three prefix-cached requests; the third's cached forward raises, the step is retried for row 0
    alone (as the engine retries halves): rows 1 and 2 keep the caches they held before the failed
    step, so each request still plans, and records, the forwards it plans alone (issue 42)."""
    from dllm_viz.core.decoder import DecodeBatch, request_generator
    from tests.ui_model import make_text_model

    model = make_text_model()
    cached, calls = model.logits_cached, [0]

    def flaky(*args, **kwargs):
        calls[0] += 1
        if calls[0] == 6:  # step 2, row 2: rows 0 and 1 have run their windows
            raise RuntimeError("injected failure in a cached forward")
        return cached(*args, **kwargs)

    model.logits_cached = flaky
    configs = [DecodeConfig(gen_length=16, block_length=8, cache="prefix", cache_refresh=2, top_k=2, decay=1.0,
                            seed=seed) for seed in range(3)]
    prompts = [[5, 6, 7], [8, 9], [10, 11, 12, 13]]
    batch = DecodeBatch(model, capacity=3, max_length=32)
    for i, (p, c) in enumerate(zip(prompts, configs)):
        batch.add(i, p, c, request_generator(c))
    batch.step()  # a full forward each: the caches are made
    with pytest.raises(RuntimeError, match="injected"):
        batch.step()
    batch.step(rows=[0])
    while batch.active():
        batch.step()
    for i, (p, c) in enumerate(zip(prompts, configs)):
        (alone,) = decode(make_text_model(), [p], c)
        got = batch.trace(i)
        assert [r.forward_kind for r in got.steps] == [r.forward_kind for r in alone.steps], f"row {i}"
        assert (got.token_ids, got.order) == (alone.token_ids, alone.order)
