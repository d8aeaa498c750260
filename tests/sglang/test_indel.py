"""SGLang's own JointThresholdInDel against dllm-viz's insert/delete step (run by tests/test_sglang_env.py).

Replayed logits (`indel_script`) drive SGLang 0.5.23's `JointThresholdInDel.step` and
`dllm_viz.core.indel.indel_step` in lockstep; after every step the blocks, the done flags and SGLang's whole
per-request state (original-mask flags, post-edit and update counters, finished) must agree. Each scenario
is built to reach some edit kinds and asserts that it did; the last test runs them all and checks that
every kind the issue names was compared, over at least 200 forwards.
"""
from __future__ import annotations

import pytest

from dllm_viz.core.indel import SGLANG_DEFAULTS, InDelSettings, check_edit_tokens
from tests.sglang.indel_script import DELETE_ID, MASK_ID, SPLIT_ID, VOCAB, Coverage, Events, Row, lockstep, \
    sglang_algorithm

DEFAULT = InDelSettings(block_size=8)  # SGLang's knobs at their defaults, on short blocks
LLADA2 = InDelSettings()  # and on LLaDA 2's 32-position blocks


def rows_of(settings: InDelSettings) -> list[Row]:
    """Rows with no prompt, a prompt, and a prompt plus visible draft tokens after masks."""
    w = settings.block_size
    return [Row(prompt=[], settings=settings), Row(prompt=[1, 2], settings=settings),
            Row(prompt=[5], settings=settings, draft={w // 2: 7, w // 2 + 1: 8})]


SCENARIOS: dict[str, tuple[list[Row], Events, range, set[str]]] = {
    # name: (rows, events, seeds, events the scenario must reach)
    "defaults": (rows_of(DEFAULT) + rows_of(LLADA2), Events(), range(4),
                 {"split masks beside original ones", "clean-up", "budget ran out"}),
    "block ends": (rows_of(DEFAULT), Events(word=0.05, last_delete=0.35, last_split=0.35), range(4),
                   {"delete of the last position", "split at the last position"}),
    "busy": (rows_of(DEFAULT), Events(word=0.1, delete=0.12, split=0.12, mask=0.06), range(4),
             {"split and delete in one step", "fallback at an original mask", "clean-up scrubbed MASK/DELETE/SPLIT"}),
    "budgets": ([Row(prompt=[], settings=InDelSettings(block_size=6, max_post_edit_steps=b, threshold=t))
                 for b in (0, 1, 2, 3) for t in (0.2, 0.9)],
                Events(word=0.2, delete=0.06, split=0.06, mask=0.15), range(3),
                {"budget ran out", "update limit", "clean-up"}),
    "loop": ([Row(prompt=[9], settings=InDelSettings(block_size=6, max_post_edit_steps=6), draft={2: 3})
              for _ in range(2)], Events(word=0.0, delete=0.0, split=0.0, mask=0.0, height=(3.0, 6.0), flip=2),
             range(2), {"anti-loop"}),
    "mixed rows": ([Row(prompt=[1], settings=InDelSettings(block_size=8, threshold=0.8, edit_threshold=0.3)),
                    Row(prompt=[], settings=InDelSettings(block_size=5, max_post_edit_steps=4)),
                    Row(prompt=[2, 3], settings=DEFAULT, draft={5: 4}),
                    Row(prompt=[], settings=InDelSettings(block_size=8, threshold=0.6, max_post_edit_steps=0))],
                   Events(), range(4), {"clean-up"}),
}


def run(name: str) -> Coverage:
    rows, events, seeds, _ = SCENARIOS[name]
    cov = Coverage()
    for seed in seeds:
        lockstep(rows, events, seed=seed, coverage=cov)
    return cov


@pytest.mark.parametrize("name", SCENARIOS)
def test_llada22_indel_is_sglang_joint_threshold_indel_step_by_step(name):
    cov = run(name)
    missing = SCENARIOS[name][3] - set(cov.events)
    assert not missing, f"{name} never reached {missing}: {dict(cov.events)}"
    assert cov.forwards >= 20


def test_every_edit_kind_is_compared_over_at_least_200_forwards():
    total = Coverage()
    for name in SCENARIOS:
        cov = run(name)
        total.forwards += cov.forwards
        total.kinds.update(cov.kinds)
        total.events.update(cov.events)
    assert total.forwards >= 200, total.forwards
    assert set(total.kinds) == {"fill", "rewrite", "remask", "delete", "split", "cut"}, dict(total.kinds)
    wanted = {"split at the last position", "delete of the last position", "split and delete in one step",
              "clean-up", "clean-up scrubbed MASK/DELETE/SPLIT", "budget ran out", "update limit",
              "split masks beside original ones", "fallback at an original mask", "anti-loop"}
    assert wanted <= set(total.events), wanted - set(total.events)


def test_the_preset_knobs_are_sglang_s_defaults():
    algo = sglang_algorithm(InDelSettings(), 1)
    from sglang.srt.dllm.algorithm.joint_threshold_indel import JointThresholdInDel
    from sglang.srt.dllm.config import DllmConfig

    bare = JointThresholdInDel(DllmConfig(algorithm="JointThresholdInDel", algorithm_config={}, block_size=32,
                                          mask_id=MASK_ID, max_running_requests=1, delete_token_id=DELETE_ID,
                                          split_token_id=SPLIT_ID))
    assert {k: getattr(bare, k) for k in SGLANG_DEFAULTS} == SGLANG_DEFAULTS
    assert {k: getattr(algo, k) for k in SGLANG_DEFAULTS} == SGLANG_DEFAULTS
    assert bare.max_steps(32) == 32 + SGLANG_DEFAULTS["max_post_edit_steps"] + 2


def test_bad_settings_fail_on_both_sides():
    with pytest.raises(ValueError, match="max_post_edit_steps"):
        _sglang_with(max_post_edit_steps=-1)
    with pytest.raises(ValueError, match="max_post_edit_steps=-1"):
        InDelSettings(max_post_edit_steps=-1)
    from sglang.srt.dllm.algorithm.joint_threshold_indel import JointThresholdInDel
    from sglang.srt.dllm.config import DllmConfig

    with pytest.raises(RuntimeError, match="delete_token_id"):  # SGLang: a checkpoint without the edit tokens
        JointThresholdInDel(DllmConfig(algorithm="JointThresholdInDel", algorithm_config={}, block_size=8,
                                       mask_id=MASK_ID, max_running_requests=1))
    with pytest.raises(ValueError, match="delete_token_id=None"):
        check_edit_tokens(VOCAB, MASK_ID, None, SPLIT_ID)


def _sglang_with(**config):
    from sglang.srt.dllm.algorithm.joint_threshold_indel import JointThresholdInDel
    from sglang.srt.dllm.config import DllmConfig

    return JointThresholdInDel(DllmConfig(algorithm="JointThresholdInDel", algorithm_config=config, block_size=8,
                                          mask_id=MASK_ID, max_running_requests=1, delete_token_id=DELETE_ID,
                                          split_token_id=SPLIT_ID))


def test_the_anti_loop_never_writes_mask_at_an_original_mask():
    """A state the replayed scenarios rarely meet, set up on both sides: the block was a step's input before,
    its one changing position is an original mask whose argmax is MASK and whose fallback word was already
    written there; the anti-loop must pick the next word, not MASK (nor the word it wrote)."""
    import torch

    from dllm_viz.core.indel import InDelParams, InDelState, indel_step

    block = [MASK_ID, 11, 12, 13]
    logits = torch.zeros(4, VOCAB)
    logits[0, MASK_ID], logits[0, 5], logits[0, 6] = 10.0, 8.0, 6.0  # MASK, then the written 5, then 6
    for j, t in enumerate(block[1:], start=1):
        logits[j, t] = 9.0  # the others keep their words
    settings = InDelSettings(block_size=4)
    algo = sglang_algorithm(settings, 1)
    fb = __import__("types").SimpleNamespace(batch_size=1, input_ids=torch.tensor(block), dllm_prompt_mask=None)
    (state,) = algo.init_step_state(fb)
    state["seen_input_keys"].add(tuple(block))
    state["sampled_history"][0] = {5}
    algo.step(fb, logits.clone(), [state])
    ours = InDelState.initial(torch.tensor([block]), torch.zeros(1, 4, dtype=torch.bool), MASK_ID)
    ours = InDelState(prompt=ours.prompt, orig=ours.orig, updates=ours.updates, post_edit=ours.post_edit,
                      finished=ours.finished, seen=torch.tensor([[block]]), history=torch.tensor([[[5, -1, -1, -1]]]))
    out = indel_step(logits.unsqueeze(0), torch.tensor([block]), ours,
                     InDelParams.from_settings([settings], check_edit_tokens(VOCAB, MASK_ID, DELETE_ID, SPLIT_ID)))
    assert fb.input_ids.tolist() == out.block[0].tolist() == [6, 11, 12, 13]
