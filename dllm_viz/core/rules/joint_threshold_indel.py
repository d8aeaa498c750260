"""``joint_threshold_indel``: LLaDA 2.2's insert and delete edits, as SGLang 0.5.23 ships them
(``python/sglang/srt/dllm/algorithm/joint_threshold_indel.py``, ``JointThresholdInDel.step``, PR #31773).

JointThreshold (``joint_threshold``: masks above `threshold`, visible tokens whose argmax differs above
`edit_threshold`) with two edit tokens a model trained for them may write: DELETE at a generated position
removes it (the block closes up and gets a mask at its end), SPLIT opens a new mask before the token there
(which moves one place right; the block is cut to its size). Original masks (the block's own, moved with
their positions) resolve first, a MASK predicted at one falls back to the best other token, a cumulative
budget of `max_post_edit_steps` steps with no original mask left ends in a clean-up that may not write
MASK, DELETE or SPLIT, and a block seen before as a step's input changes at its least confident position
(the anti-loop). The step is `core.indel.indel_step`, exact against SGLang's class (tests/sglang); the
decoder runs it on each row's current block (`core.indel_rows`), and the trace records what moved.

It decides the whole step of its rows, so it reads the threshold schedule's `threshold` (the masks'
threshold, compared with >, at least one mask plus one per mask a split opened) and JointThreshold's
`edit_threshold` and `max_post_edit_steps`, and asks the rest of the config to say so (`requires`).

Example (a split opens a mask before the token at 1, which moves right; the last token is cut):

>>> import torch
>>> from dllm_viz.core.alignment import EditTokens, apply_edits
>>> tok = EditTokens(mask=0, delete=8, split=9)
>>> block, wrote = torch.tensor([[5, 6, 7]]), torch.tensor([[-1, 9, -1]])
>>> new, _, edits = apply_edits(block, wrote, torch.zeros(1, 3, dtype=torch.bool),
...                             torch.zeros(1, 3, dtype=torch.bool), torch.ones(1, 3, dtype=torch.bool), tok)
>>> new.tolist(), edits.source.tolist(), edits.operations(0)
([[5, 0, 6]], [[0, -1, 1]], [(1, 'split', 6), (2, 'cut', 7)])
"""
from __future__ import annotations

from typing import Any

from dllm_viz.core.indel import LLADA2_BLOCK_SIZE, SGLANG_DEFAULTS, indel_step
from dllm_viz.core.rules.base import Citation, InDel, ShippedPreset

SOURCE = ("sgl-project/sglang 0.5.23, python/sglang/srt/dllm/algorithm/joint_threshold_indel.py, "
          "JointThresholdInDel.step (LLaDA 2.2's insert and delete edits)")
# What the rest of a config says when this rule decides its rows' steps: the masks by the threshold (>, at
# least one), no revision rule beside it (its own token-to-token edits), its own draws, no cache, no early stop.
NEEDS: dict[str, Any] = {"schedule": "threshold", "threshold_strict": True, "min_k": 1, "revise": "none",
                         "confidence": "max_prob", "sample_scope": "selected", "cache": "none", "early_stop": False}
SOURCES = ("raw", "softmax")  # confidence_from: its confidence is the softmax probability of the argmax


def requires(config: Any) -> str | None:
    """What the rule needs of the other knobs, when `config` does not say it (None when it does)."""
    wrong = [f"{k}={getattr(config, k)!r}" for k, v in NEEDS.items() if getattr(config, k) != v]
    if config.confidence_from not in SOURCES:
        wrong.append(f"confidence_from={config.confidence_from!r}")
    if not wrong:
        return None
    return (", ".join(f"{k}={v!r}" for k, v in NEEDS.items()) + f", confidence_from in {' | '.join(SOURCES)} "
            "(JointThresholdInDel decides each step of its rows itself: the preset llada22_indel sets them); got "
            + ", ".join(wrong))


def preset(gen_length: int) -> dict[str, Any]:
    """`llada22_indel`: SGLang's defaults (threshold 0.5, edit_threshold 0, max_post_edit_steps 16) on LLaDA 2's
    32-position blocks where 32 splits the span (one block otherwise), argmax, SGLang's softmax."""
    block = LLADA2_BLOCK_SIZE if gen_length > LLADA2_BLOCK_SIZE and gen_length % LLADA2_BLOCK_SIZE == 0 else None
    return dict(NEEDS, threshold=SGLANG_DEFAULTS["threshold"], block_length=block, temperature=0.0,
                confidence_from="softmax", indel="joint_threshold_indel",
                edit_threshold=SGLANG_DEFAULTS["edit_threshold"],
                max_post_edit_steps=SGLANG_DEFAULTS["max_post_edit_steps"])


RULE = InDel(
    name="joint_threshold_indel", order=10, step=indel_step, requires=requires,
    summary="LLaDA 2.2: also DELETE a position or SPLIT one in two (needs a model trained to edit lengths)",
    knobs=("threshold", "edit_threshold", "max_post_edit_steps"),
    # Each block: at most block_size + max_post_edit_steps updates, then the clean-up (SGLang's
    # max_regular_update_steps, + 1); the forward SGLang adds to persist a cleaned block is no step here.
    extra_steps=lambda config: config.max_post_edit_steps + 1,
    presets={"llada22_indel": ShippedPreset(
        source=SOURCE, fields=preset,
        note="JointThreshold's masks and rewrites, plus DELETE and SPLIT; original masks first, a cumulative "
             "budget of 16 post-edit steps, a clean-up; needs a model trained to edit lengths")},
    cite=Citation(repo="sgl-project/sglang 0.5.23", file="python/sglang/srt/dllm/algorithm/joint_threshold_indel.py",
                  function="JointThresholdInDel.step", paper="LLaDA 2.2 (inclusionAI), SGLang PR #31773"),
)
