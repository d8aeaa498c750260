"""core/revision.py: each revision rule against an independent reference, and the invariants of the phase.

The references (tests/reference_revision.py) are plain loops written from each rule's paper and
code: WINO's decoding_wino, ReMDM's sigma variants in counts, MDPO's RCR, SGLang's JointThreshold.
At temperature 0 a decode must match its reference step by step: the canvas after every step, the
positions confirmed, taken back and rewritten. SGLang's own classes are run against the same rule
inside the SGLang environment (tests/sglang/test_revision.py).
"""
from __future__ import annotations

import pytest
import torch

from dllm_viz import DecodeConfig, Trace, decode
from dllm_viz.core.config import REVISIONS
from dllm_viz.core.revision import RULES, _first_least, max_steps
from dllm_viz.core.schedules import planned_steps, select_top
from dllm_viz.serve.engine import Engine
from tests.reference_revision import (
    first_difference, joint_threshold_reference, rcr_reference, remdm_reference, replay, wino_reference,
)
from tests.tiny import TinyDenoiser

PROMPTS = [[5, 6, 7], [1, 2, 3, 4], [9]]


def editing(seed: int = 0, scale: float = 3.0) -> TinyDenoiser:
    """A tiny model that declares it can edit (its logits at visible positions are its predictions there)."""
    model = TinyDenoiser(seed=seed, scale=scale)
    model.can_edit = True
    return model


def _check(trace, ref) -> None:
    diff = first_difference(replay(trace), ref)
    assert diff is None, diff


def test_the_registry_names_the_config_rules():
    assert tuple(RULES) == REVISIONS and REVISIONS[0] == "none"
    assert DecodeConfig().revise == "none"


# ----- each rule against its reference -----------------------------------------------------------
def test_rcr_matches_the_reference():
    model = TinyDenoiser(scale=2.0)
    taken = 0
    for prompt in PROMPTS:
        for steps in (4, 8):
            (trace,) = decode(model, [prompt], DecodeConfig(gen_length=16, schedule="fixed_steps", steps=steps,
                                                             temperature=0.0, revise="rcr"))
            _check(trace, rcr_reference(model, prompt, gen_length=16, steps=steps))
            assert len(trace.steps) == planned_steps(trace.config)  # as many steps as the plain schedule
            taken += trace.metrics["remasked"]
    assert taken > 0  # RCR took something back on this model


@pytest.mark.parametrize("sigma, eta", [("cap", 0.3), ("rescale", 0.8), ("conf", 1.0), ("loop", 0.3)])
def test_remdm_matches_the_reference(sigma, eta):
    model = TinyDenoiser(scale=2.0)
    taken = 0
    for prompt in PROMPTS:
        for seed in (0, 1):
            config = DecodeConfig(gen_length=16, schedule="fixed_steps", steps=8, temperature=0.0, revise="remdm",
                                  remask_sigma=sigma, remask_eta=eta, remask_alpha_on=0.6, remask_loop_steps=4,
                                  seed=seed)
            (trace,) = decode(model, [prompt], config)
            _check(trace, remdm_reference(model, prompt, gen_length=16, steps=8, sigma=sigma, eta=eta,
                                          alpha_on=0.6, loop_steps=4, seed=seed))
            taken += trace.metrics["remasked"]
            if sigma != "loop":  # outside the loop the visible count follows the schedule's plan exactly
                assert len(trace.steps) == 8
                assert [rec.k - len(rec.remasked or []) for rec in trace.steps] == [2] * 8
            else:
                assert len(trace.steps) == 8 + 4
    assert taken > 0


@pytest.mark.parametrize("prompt", PROMPTS)
@pytest.mark.parametrize("block_length", [16, 8])
def test_wino_matches_the_reference(prompt, block_length):
    model = TinyDenoiser(scale=4.0)
    config = DecodeConfig.preset("wino", 16, block_length=block_length, threshold=0.3, verify_threshold=0.7)
    (trace,) = decode(model, [prompt], config)
    _check(trace, wino_reference(model, prompt, gen_length=16, block_length=block_length, threshold=0.3,
                                 threshold_back=0.7))
    # a verify pass is a forward pass: NFE counts it at every step that had a decided token to verify
    assert trace.nfe == len(trace.steps) + sum(rec.forwards == 2 for rec in trace.steps) > len(trace.steps)


def test_wino_takes_drafts_back():
    model = TinyDenoiser(scale=4.0)
    traces = decode(model, PROMPTS, DecodeConfig.preset("wino", 16, threshold=0.3, verify_threshold=0.7))
    assert sum(t.metrics["remasked"] for t in traces) > 0


def test_wino_takes_back_one_as_select_top_would():
    """When each row over its count takes back one token at most, WINO skips select_top's sort: the first
    position of the smallest verify probability in the pool is select_top's first pick (ties to the earlier
    position, an empty pool picks nothing)."""
    g = torch.Generator().manual_seed(0)
    for _ in range(200):
        p = torch.randint(0, 4, (6, 12), generator=g).float() / 4  # (A, G): many ties, zeros included
        pool = torch.rand(6, 12, generator=g) < 0.3
        assert torch.equal(_first_least(p, pool) & pool, select_top(-p, pool, torch.ones(6, dtype=torch.long)))


@pytest.mark.parametrize("prompt", PROMPTS)
@pytest.mark.parametrize("kw", [
    dict(),  # SGLang's defaults: threshold 0.5, edit_threshold 0, 16 edit-only steps, no penalty
    dict(threshold=0.3, edit_threshold=0.4, max_post_edit_steps=2),
    dict(penalty_lambda=1.5, max_post_edit_steps=3),
])
def test_joint_threshold_matches_the_reference(prompt, kw):
    model = editing(scale=2.5)
    config = DecodeConfig.preset("llada21", 16, block_length=8, **kw)
    (trace,) = decode(model, [prompt], config)
    _check(trace, joint_threshold_reference(
        model, prompt, gen_length=16, block_length=8, threshold=config.threshold,
        edit_threshold=config.edit_threshold, max_post_edit_steps=config.max_post_edit_steps,
        penalty_lambda=config.penalty_lambda))


def test_llada21_decodes_at_64_and_rewrites_tokens():
    model = editing(scale=2.5)
    traces = decode(model, PROMPTS, DecodeConfig.preset("llada21", 64))
    assert all(model.mask_token_id not in t.token_ids for t in traces)
    assert sum(t.metrics["edited"] for t in traces) > 0
    for t in traces:
        for rec in t.steps:
            for old, new, p in zip(rec.edited_from or [], rec.edited_to or [], rec.edit_probs or []):
                assert old != new and 0 < p <= 1
        assert len(t.steps) <= max_steps(t.config)
        assert Trace.from_json(t.to_json()).to_json() == t.to_json()


# ----- the phase's invariants --------------------------------------------------------------------
CONFIGS = [
    DecodeConfig(gen_length=16, schedule="fixed_steps", steps=8, revise="rcr", temperature=0.9),
    DecodeConfig(gen_length=16, schedule="fixed_steps", steps=8, revise="remdm", remask_sigma="rescale",
                 remask_eta=0.7, temperature=0.9),
    DecodeConfig.preset("wino", 16, threshold=0.3, verify_threshold=0.7, temperature=0.9),
    DecodeConfig.preset("llada21", 16, block_length=8),
]


@pytest.mark.parametrize("config", CONFIGS, ids=["rcr", "remdm", "wino", "llada21"])
def test_a_revising_request_alone_equals_it_in_a_mixed_batch(config):
    model = editing(scale=2.5)
    (alone,) = decode(model, [[5, 6, 7]], config.replace(seed=4))
    neighbours = [DecodeConfig(gen_length=12, top_k=3, seed=9), config.replace(seed=4), CONFIGS[1].replace(seed=2),
                  CONFIGS[2].replace(seed=5), CONFIGS[3].replace(seed=6)]  # every rule beside it, wino and editing too
    batch = decode(model, [[1, 2], [5, 6, 7], [3], [4, 4], [8]], neighbours)
    assert batch[1].to_dict()["steps"] == alone.to_dict()["steps"]
    assert batch[1].token_ids == alone.token_ids and batch[1].order == alone.order


@pytest.mark.parametrize("config", CONFIGS, ids=["rcr", "remdm", "wino", "llada21"])
def test_order_is_the_last_decision_and_the_history_replays_to_the_result(config):
    model = editing(scale=2.5)
    for trace in decode(model, PROMPTS, config):
        history = trace.history
        for pos, events in enumerate(history):
            decided = [step for step, kind, _ in events if kind != "remask"]
            assert trace.order[pos] == decided[-1]
            assert events[-1][1] != "remask" and events[-1][2] == trace.token_ids[pos]
        assert trace.canvas_at(len(trace.steps) - 1) == trace.token_ids
        assert trace.decisions == [sum(k != "remask" for _, k, _ in e) for e in history]
        assert Trace.from_json(trace.to_json()).to_json() == trace.to_json()


def test_temperature_shapes_only_the_draw_with_a_revision_rule():
    model = TinyDenoiser(scale=2.0)
    cold, hot = decode(model, [[5, 6], [5, 6]], [CONFIGS[0].replace(temperature=t) for t in (0.0, 3.0)])
    assert cold.steps[0].confidence == hot.steps[0].confidence  # the schedule and the rule see raw confidence
    assert cold.steps[0].selected == hot.steps[0].selected


# ----- bad settings: named ValueErrors, nothing else in a batch fails -----------------------------
BAD = [("revise", "remask"), ("verify_threshold", 0.0), ("verify_threshold", 1.5), ("remask_eta", 0.0),
       ("remask_eta", 2.0), ("edit_threshold", -0.1), ("edit_threshold", 1.1), ("remask_alpha_on", 1.0),
       ("remask_alpha_on", 0.0), ("remask_loop_steps", -1), ("max_post_edit_steps", -1),
       ("max_post_edit_steps", 10**6), ("penalty_lambda", -0.5), ("penalty_lambda", float("nan")),
       ("threshold_strict", 1), ("remask_sigma", "linear")]


@pytest.mark.parametrize("field, value", BAD)
def test_bad_settings_are_named_value_errors(field, value):
    with pytest.raises(ValueError, match=rf"{field}=.*expected") as err:
        DecodeConfig(**{field: value})
    assert field in str(err.value)


def test_editing_on_a_model_that_cannot_edit_is_a_named_value_error_and_fails_alone():
    model = TinyDenoiser()
    with pytest.raises(ValueError, match=r"revise='joint_threshold' is invalid for 'tiny': the model cannot edit"):
        decode(model, [[1, 2]], DecodeConfig.preset("llada21", 16))
    for rule in ("remdm", "rcr", "wino"):  # re-masking works with any masked model
        decode(model, [[1, 2]], DecodeConfig(gen_length=8, revise=rule))
    with Engine(model, max_batch=2, max_length=32) as engine:
        bad = engine.submit([1, 2], DecodeConfig.preset("llada21", 16))
        good = engine.submit([1, 2], CONFIGS[0])
        with pytest.raises(ValueError, match="cannot edit"):
            bad.result(30)
        assert good.result(30).token_ids == decode(model, [[1, 2]], CONFIGS[0])[0].token_ids


def test_the_revision_phase_off_changes_nothing():
    """A batch without a revising row takes the step's old path: no revision fields, version-1 content."""
    model = TinyDenoiser()
    (trace,) = decode(model, [[1, 2]], DecodeConfig(gen_length=12, seed=1))
    data = trace.to_dict()
    assert all(not set(step) & {"remasked", "edited", "forwards"} for step in data["steps"])
    assert "remasked" not in data["metrics"] and trace.nfe == len(trace.steps)


# ----- the world model (the floor) ---------------------------------------------------------
@pytest.fixture(scope="module")
def world():
    from dllm_viz import load_model

    return load_model("world", device="cpu")


@pytest.mark.parametrize("name", ["rcr", "remdm"])
def test_a_world_decode_with_a_revision_rule_takes_tokens_back_and_its_trace_round_trips(world, name):
    from dllm_viz.studies.world_score import WORLD_PROMPTS, verdict_of

    configs = [DecodeConfig.preset(name, 48, seed=seed) for seed in (0, 1)]
    traces = decode(world, list(WORLD_PROMPTS[:2]) * 2, configs * 2)
    assert sum(t.metrics["remasked"] for t in traces) >= 1
    for trace in traces:
        assert world.mask_token_id not in trace.token_ids
        text = trace.to_json()
        back = Trace.from_json(text)
        assert back.to_json() == text and back.history == trace.history
        verdict_of(trace)  # the checker reads a revised trace like any other


def test_wino_on_the_world_model_counts_its_verify_passes(world):
    """The world model is sure enough that WINO's 0.9 verify rarely takes a draft back (the lessons count
    how often). As shipped its verify is the shadow block of the step's one forward (one forward a step, as
    WINO counts); ours (`wino_canvases`) is a pass of its own, a forward more at every verifying step."""
    (shadow,) = decode(world, ["Sam Wood of Port Royal has"], DecodeConfig.preset("wino", 48, seed=0))
    assert shadow.nfe == len(shadow.steps) and not any(rec.forwards for rec in shadow.steps)
    (trace,) = decode(world, ["Sam Wood of Port Royal has"], DecodeConfig.preset("wino_canvases", 48, seed=0))
    assert trace.nfe == len(trace.steps) + sum(rec.forwards == 2 for rec in trace.steps) > len(trace.steps)
    for t in (shadow, trace):
        assert Trace.from_json(t.to_json()).to_json() == t.to_json()
