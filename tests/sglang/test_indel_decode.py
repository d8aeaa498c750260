"""`decode()` with the `llada22_indel` preset against SGLang's own JointThresholdInDel, step by step (issue 37).

tests/sglang/test_indel.py compares the insert/delete step (`core.indel.indel_step`) with SGLang's class; here
the real decoder path does: `dllm_viz.decode` on a model whose logits at each block of the canvas are the
replayed script's for that block's ids (`indel_script.row_logits`), several rows with their own settings and
block sizes in one batch, beside rows of other rules; SGLang's `JointThresholdInDel.step` runs each block of
each row on the same logits. After every step the block in the trace (`Trace.canvas_at`) must be SGLang's, and
every edit kind must have been compared, over at least 200 forwards.
"""
from __future__ import annotations

from collections import Counter
from types import SimpleNamespace

import torch

from dllm_viz import DecodeConfig, decode
from dllm_viz.core.indel import InDelSettings
from tests.sglang.indel_script import MASK_ID, Events, ReplayedBlocks, row_logits, sglang_algorithm


def sglang_blocks(settings: InDelSettings, blocks: int, events: Events, seed: int) -> list[list[list[int]]]:
    """Each block of one row through SGLang's class: the block after each step that found the row unfinished."""
    L, out = settings.block_size, []
    for _ in range(blocks):
        algo = sglang_algorithm(settings, 1)
        fb = SimpleNamespace(batch_size=1, input_ids=torch.full((L,), MASK_ID, dtype=torch.long), dllm_prompt_mask=None)
        states, seq = algo.init_step_state(fb), []
        for _ in range(algo.max_steps(L)):
            if states[0]["finished"]:
                break
            algo.step(fb, row_logits(fb.input_ids.tolist(), L, 0, events, seed), states)
            seq.append(fb.input_ids.tolist())
        assert states[0]["finished"]
        out.append(seq)
    return out


def config_of(settings: InDelSettings, blocks: int) -> DecodeConfig:
    return DecodeConfig.preset("llada22_indel", settings.block_size * blocks, block_length=settings.block_size,
                               threshold=settings.threshold, edit_threshold=settings.edit_threshold,
                               max_post_edit_steps=settings.max_post_edit_steps)


def compare(rows: list[InDelSettings], blocks: int, events: Events, seed: int, kinds: Counter) -> int:
    """Decode the rows in one batch (with a plain row beside them), compare each with SGLang; forwards compared."""
    L = rows[0].block_size
    assert all(s.block_size == L for s in rows)
    model = ReplayedBlocks(L, events, seed)
    configs = [config_of(s, blocks) for s in rows]
    plain = DecodeConfig.preset("sglang_low_confidence", L * blocks, block_length=L)
    traces = decode(model, [[1] * L] * (len(rows) + 1), configs + [plain], record_candidates=2)
    compared = 0
    for a, (s, trace) in enumerate(zip(rows, traces)):
        theirs = sglang_blocks(s, blocks, events, seed)
        for b in range(blocks):
            steps = [rec.step for rec in trace.steps if rec.block == b]
            ours = [[MASK_ID if t is None else t for t in trace.canvas_at(i)[b * L:(b + 1) * L]] for i in steps]
            assert ours == theirs[b], (a, b, s)
            compared += len(steps)
        for rec in trace.steps:
            kinds.update(e[1] for e in rec.indel["edits"])
        assert MASK_ID not in trace.token_ids
    return compared


ROWS = [InDelSettings(block_size=8), InDelSettings(block_size=8, threshold=0.8, edit_threshold=0.3),
        InDelSettings(block_size=8, max_post_edit_steps=0), InDelSettings(block_size=8, threshold=0.6,
                                                                          max_post_edit_steps=2)]
SCENARIOS = {
    "defaults": Events(),
    "block ends": Events(word=0.05, last_delete=0.35, last_split=0.35),
    "busy": Events(word=0.1, delete=0.12, split=0.12, mask=0.06),
}


def test_decode_with_llada22_indel_is_sglang_joint_threshold_indel_step_by_step():
    kinds: Counter = Counter()
    forwards = 0
    for events in SCENARIOS.values():
        for seed in range(2):
            forwards += compare(ROWS, 2, events, seed, kinds)
    assert forwards >= 200, forwards
    assert {"fill", "rewrite", "remask", "delete", "split", "cut"} <= set(kinds), dict(kinds)
