"""What a WINO verify costs on the world model: canvases computed against forwards counted (issue 40 item 2).

WINO (`Feng-Hong/WINO-DLLM`, `decoding_wino`) verifies in the step's one forward through a shadow block
(the `wino` preset, `verify_pass="shadow"`); ours verified by a pass of its own, one canvas per decided
position (the `wino_canvases` preset). Both run here on the world model at threshold 0.9 over the world
prompts (`studies.world_score.WORLD_PROMPTS`), the model wrapped to count what each call computed: a
canvas per row of a `logits_at` call (a per-position canvas of the verify pass is one), and for a shadow
forward its rows plus the shadow block's, in canvases of the row's length. Printed per run: the forwards
the trace counts (`Trace.nfe`), the canvases computed, their ratio (the floor: at most 2 for the shipped
preset), and the CPU seconds of the batch (one thread, the load average beside it).

    OMP_NUM_THREADS=1 python bench/wino_cost.py
"""
from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from dllm_viz import DecodeConfig, decode, load_model  # noqa: E402
from dllm_viz.studies.world_score import WORLD_PROMPTS  # noqa: E402


class Counted:
    """The model, counting the canvases its calls compute (`canvases`), in canvases of each row's length."""

    def __init__(self, model: Any) -> None:
        self.model, self.canvases = model, 0.0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.model, name)

    def __call__(self, input_ids, attention_mask=None):
        self.canvases += input_ids.shape[0]
        return self.model(input_ids, attention_mask)

    def logits_at(self, input_ids, attention_mask, rows, cols):
        self.canvases += len(set(rows.tolist()))
        return self.model.logits_at(input_ids, attention_mask, rows, cols)

    def logits_shadow(self, input_ids, attention_mask, rows, cols, blocks, hidden_rows, hidden_cols):
        lengths = attention_mask.sum(1).tolist() if attention_mask is not None else [input_ids.shape[1]] * len(blocks)
        spans = blocks.tolist()
        asked = set(rows.tolist()) | {r for r, (lo, hi) in enumerate(spans) if hi > lo}
        self.canvases += sum(1 + (spans[r][1] - spans[r][0]) / lengths[r] for r in asked)
        return self.model.logits_shadow(input_ids, attention_mask, rows, cols, blocks, hidden_rows, hidden_cols)


def main() -> None:
    torch.set_num_threads(1)
    model = Counted(load_model("world"))
    prompts = list(WORLD_PROMPTS[:16])
    print(f"WINO on the world model, threshold 0.9, verify 0.9, gen_length 48, {len(prompts)} prompts, one thread; "
          f"load average {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    for preset in ("wino", "wino_canvases"):
        model.canvases = 0.0
        start = time.process_time()
        traces = decode(model, prompts, DecodeConfig.preset(preset, 48, threshold=0.9), record_candidates=0)
        cpu = time.process_time() - start
        nfe = [t.nfe for t in traces]
        per_run = model.canvases / len(traces)
        print(f"  {preset:14} forwards counted {statistics.mean(nfe):6.1f} per run, canvases computed "
              f"{per_run:6.1f} per run: {per_run / statistics.mean(nfe):5.2f}x the forwards; CPU {cpu:6.2f} s "
              f"for the batch" + ("  (floor: <= 2x)" if preset == "wino" else ""))


if __name__ == "__main__":
    main()
