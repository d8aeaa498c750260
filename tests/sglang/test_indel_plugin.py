"""The dllm-viz plugin with an insert/delete policy against SGLang's own JointThresholdInDel, inside SGLang's
loops (run by tests/test_sglang_env.py).

The same requests (prompts that end inside a block, so the first block is partly prompt; several joining at
different rounds) run through SGLang's `DllmAlgorithm.run` (FDFO and synchronous) with SGLang's
JointThresholdInDel, and with `DllmVizPolicy` running the `llada22_indel` policy; the model's logits at a
block are the replayed script's for that block's ids (`indel_script.row_logits`, with edit events), so
every forward of every request must see the same ids on both sides, and the outputs agree.
"""
from __future__ import annotations

import pytest
import torch
from sglang.srt.dllm.algorithm import algo_name_to_cls
from sglang.srt.dllm.config import DllmConfig

from dllm_viz import DecodeConfig
from dllm_viz.serve.policy import Policy
from tests.sglang.harness import Request, block_forwards, make_algorithm, serve
from tests.sglang.indel_script import Events, Ids, row_logits
from tests.sglang.scripted import MASK_ID, VOCAB

L = 8
IDS = Ids(vocab=VOCAB, mask=MASK_ID, delete=VOCAB - 3, split=VOCAB - 2, words=VOCAB - 3)


class BlockScript:
    """`logits(tokens (1, N))`: at each L-aligned chunk, the replayed logits of that chunk's ids."""

    def __init__(self, events: Events, seed: int) -> None:
        self.events, self.seed = events, seed

    def logits(self, tokens: torch.Tensor) -> torch.Tensor:
        B, N = tokens.shape
        out = torch.zeros(B, N, VOCAB)
        for b in range(B):
            for start in range(0, N - L + 1, L):
                out[b, start:start + L] = row_logits(tokens[b, start:start + L].tolist(), L, 0, self.events,
                                                     self.seed, IDS)
        return out


def requests() -> list[Request]:
    return [Request(rid="a", prompt=[3, 4, 5], blocks=3), Request(rid="b", prompt=[9] * 8, blocks=2, arrival=1),
            Request(rid="c", prompt=[2, 6, 7, 1, 8, 9, 10, 11, 12, 13], blocks=2, arrival=2)]


def sglang_indel(knobs: dict, *, fdfo: bool):
    config = DllmConfig(algorithm="JointThresholdInDel", algorithm_config=knobs, block_size=L, mask_id=MASK_ID,
                        max_running_requests=4, first_done_first_out_mode=fdfo, delete_token_id=IDS.delete,
                        split_token_id=IDS.split)
    return algo_name_to_cls["JointThresholdInDel"](config)


KNOBS = {"defaults": {}, "tight": {"threshold": 0.7, "edit_threshold": 0.2, "max_post_edit_steps": 2},
         "no budget": {"max_post_edit_steps": 0}}


@pytest.mark.parametrize("fdfo", [True, False], ids=["fdfo", "sync"])
@pytest.mark.parametrize("knobs", KNOBS)
def test_the_llada22_indel_policy_is_sglang_joint_threshold_indel_in_sglang_s_loops(fdfo, knobs):
    script = BlockScript(Events(word=0.1, delete=0.1, split=0.1, mask=0.05), seed=3)
    theirs, ours = requests(), requests()
    serve(sglang_indel(KNOBS[knobs], fdfo=fdfo), script, theirs, max_running=3)
    policy = Policy.from_decode_config(DecodeConfig.preset("llada22_indel", L, **KNOBS[knobs]),
                                       edit_token_ids=[IDS.delete, IDS.split])
    serve(make_algorithm(policy, fdfo=fdfo), script, ours, max_running=3)
    moved = 0
    for a, b in zip(theirs, ours):
        assert block_forwards(b) == block_forwards(a), a.rid
        assert b.output == a.output and MASK_ID not in a.output, a.rid
        for block in block_forwards(a):  # a block whose ids shifted: some step deleted or split
            moved += any(x[j + 1] == y[j] != x[j] or y[j + 1] == x[j] != y[j]
                         for x, y in zip(block, block[1:]) for j in range(L - 1))
    assert moved > 0


def test_a_policy_with_indel_needs_the_checkpoint_s_edit_tokens():
    with pytest.raises(ValueError, match=r"edit_token_ids=\[\] is invalid"):
        Policy.from_decode_config(DecodeConfig.preset("llada22_indel", L))
    policy = Policy.from_decode_config(DecodeConfig.preset("llada22_indel", L), edit_token_ids=[IDS.delete, IDS.split])
    assert make_algorithm(policy, fdfo=True).max_steps(L) == sglang_indel({}, fdfo=True).max_steps(L)
