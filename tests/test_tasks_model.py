"""The shipped tasks model (dllm_viz/assets/tasks): loads by name, offline, shares the oracle's vocabulary, and
meets the issue's floor: >= 95% right answers one token per step over 64 seeded prompts per family."""
from __future__ import annotations

import pytest
import torch

from dllm_viz import decode, load_model
from dllm_viz.tasks import FAMILIES, TOKENS, TaskOracle, prompts
from dllm_viz.studies.curves import KNOBS, PROMPT_SEED, PROMPTS_PER_FAMILY, point


@pytest.fixture(scope="module")
def model():
    torch.set_num_threads(1)
    return load_model("tasks", device="cpu")


def test_load_by_name_with_the_oracles_vocabulary(model):
    assert model.name == "tasks-mdlm" and load_model(device="cpu").name == "austen-mdlm"
    oracle = TaskOracle()
    assert model.vocab_size == oracle.vocab_size == len(TOKENS)
    assert model.tokenizer.get_vocab() == oracle.tokenizer.get_vocab()
    assert 0.2e6 <= model.num_parameters() <= 1e6  # small, as the tasks are


# The issue's floor is 61 of 64 (95%). Drawing at T = 1 (the curves' temperature) the model misses it on Latin
# squares by 3 runs (58/64, MODEL_CARD.md "The floor"): this guard only catches a regression from there.
T1_FLOOR = {"latin": 55}


@pytest.mark.parametrize("family", FAMILIES)
def test_one_token_per_step_meets_the_floor(model, family):
    """At least 61 of the benchmark's 64 prompts (95%) right with k = 1 taking the argmax (T = 0), and at
    T = 1 (drawn from the model's distribution) on every family but Latin squares (`T1_FLOOR`);
    MODEL_CARD.md has the measured rates. The same seeds decode to the same tokens again."""
    tasks = prompts(family, PROMPTS_PER_FAMILY, PROMPT_SEED)
    configs = [KNOBS["constant_k"].make(t, 1, s) for s, t in enumerate(tasks)]
    for temperature, floor in ((0.0, 61), (1.0, T1_FLOOR.get(family, 61))):
        runs = [c.replace(temperature=temperature) for c in configs]
        traces = decode(model, [t.prompt for t in tasks], runs, record_candidates=0)
        one = point("constant_k", 1, traces)
        assert one.tpf == 1.0 and one.right >= floor, f"{family}, T = {temperature}: {one.right}/64"
    again = decode(model, [tasks[0].prompt], runs[:1], record_candidates=0)[0]
    assert again.token_ids == traces[0].token_ids
