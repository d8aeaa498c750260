"""What the insert/delete phase costs a step (issue 37): host time per step at batch 8, replayed logits.

Until `core.indel` is wired into `decode`, the phase is measured beside the step it will join. Two loops run
the same blocks on the same replayed logits (a fixed random `(B, L, V)` tensor per block, nothing computed):

  joint    JointThreshold's step written with `core.indel`'s pieces: the argmax, softmax(logits)[argmax]
           where it decides (`confidence`), the masks above the threshold or the most probable one, the
           visible tokens whose argmax differs, written in place; its edit-only steps and budget;
  indel    `indel_step` with `llada22_indel`'s knobs: the same plus the phase (original-mask bookkeeping
           and the 1 + introduced rule, the fallback, the cumulative budget and clean-up scrub, the
           anti-loop's seen blocks and history, `apply_edits` and the step's alignment record).

Each figure is CPU time per step (one thread), the median over rounds that alternate the loops. The phase
is `indel - joint`; its ratio is taken against the host time per step of the decode it will join, the
`decode` of the `llada21` preset (JointThreshold) and of the rule-free preset on the same replayed model
(`bench/step_overhead.py`'s model and sizes): ``(decode + phase) / decode``, the issue's floor being 1.15.

    OMP_NUM_THREADS=1 python bench/indel_overhead.py
    OMP_NUM_THREADS=1 python bench/indel_overhead.py --rounds 9 --vocab 1024 --batch 8
"""
from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing
sys.path.insert(0, str(Path(__file__).resolve().parent))

from dllm_viz.core.indel import (  # noqa: E402
    InDelParams, InDelSettings, InDelState, check_edit_tokens, confidence, indel_step,
)

BLOCK = 32


def replayed(batch: int, blocks: int, vocab: int, seed: int = 0) -> list[torch.Tensor]:
    """One fixed logits tensor `(B, L, V)` per block (the mask id V-1 at -inf, as a model never predicts it)."""
    g = torch.Generator().manual_seed(seed)
    out = [torch.randn(batch, BLOCK, vocab, generator=g) * 3 for _ in range(blocks)]
    for t in out:
        t[..., vocab - 1] = float("-inf")
    return out


def joint_loop(logits: list[torch.Tensor], mask: int, budget: int = 16) -> int:
    """JointThreshold (threshold 0.5, edit threshold 0, `budget` edit-only steps) over the blocks; steps."""
    steps = 0
    for here in logits:
        B, L, _ = here.shape
        block = torch.full((B, L), mask, dtype=torch.long)
        post = torch.zeros(B, dtype=torch.long)
        finished = torch.zeros(B, dtype=torch.bool)
        while not bool(finished.all()):
            steps += 1
            x = here.argmax(-1)
            masks = block == mask
            read = (masks | (x != block)) & ~finished.unsqueeze(-1)
            p, _ = confidence(here, x, read)
            none_left = ~masks.any(-1) & ~finished
            post = post + none_left.long()
            finished = finished | (none_left & (post > budget))
            conf = torch.where(masks, p, float("-inf"))
            m2t = conf > 0.5
            top = torch.zeros_like(m2t)
            top[torch.arange(B), conf.argmax(-1)] = True
            m2t = torch.where(m2t.any(-1, keepdim=True), m2t, top & masks)
            t2t = ~masks & (p > 0.0) & (x != block)
            write = (m2t | t2t) & ~finished.unsqueeze(-1)
            finished = finished | ~write.any(-1)
            block = torch.where(write, x, block)
    return steps


def indel_loop(logits: list[torch.Tensor], mask: int, delete: int, split: int) -> int:
    """`indel_step` with llada22_indel's knobs over the blocks; steps."""
    tokens = check_edit_tokens(logits[0].shape[-1], mask, delete, split)
    B = logits[0].shape[0]
    params = InDelParams.from_settings([InDelSettings(block_size=BLOCK)] * B, tokens)
    steps = 0
    for here in logits:
        block = torch.full((B, BLOCK), mask, dtype=torch.long)
        state = InDelState.initial(block, torch.zeros(B, BLOCK, dtype=torch.bool), mask)
        done = torch.zeros(B, dtype=torch.bool)
        while not bool(done.all()):
            steps += 1
            out = indel_step(here, block, state, params)
            block, state, done = out.block, out.state, out.done
    return steps


DECODES = {"decode, rule-free (sglang_low_confidence)": "sglang_low_confidence",
           "decode, llada21 (JointThreshold)": "llada21"}


def config_name(name: str) -> str:
    return DECODES[name]


def decode_ms(batch: int, gen_length: int, vocab: int) -> dict[str, float]:
    """Host ms per step of `decode` on step_overhead's replayed model: LowConfidence (rule-free), llada21."""
    from dllm_viz import DecodeConfig, decode
    from step_overhead import ReplayedLogits

    model = ReplayedLogits(batch, 16 + gen_length, vocab)
    prompts = [[1 + b] * 16 for b in range(batch)]
    configs = {name: DecodeConfig.preset(config_name(name), gen_length) for name in DECODES}
    out = {}
    for name, config in configs.items():
        decode(model, prompts[:1], DecodeConfig.preset(config_name(name), 8))  # warm-up
        gc.collect()
        model.model_cpu = 0.0
        cpu = time.process_time()
        traces = decode(model, prompts, config)
        spent = time.process_time() - cpu - model.model_cpu
        out[name] = 1000 * spent / max(len(t.steps) for t in traces)
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--vocab", type=int, default=1024)
    parser.add_argument("--gen-length", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    V, mask, delete, split = args.vocab, args.vocab - 1, args.vocab - 3, args.vocab - 2
    logits = replayed(args.batch, args.gen_length // BLOCK, V)
    loops = {"joint": lambda: joint_loop(logits, mask), "indel": lambda: indel_loop(logits, mask, delete, split)}
    for fn in loops.values():
        fn()  # warm-up
    per: dict[str, list[float]] = {name: [] for name in loops}
    dec: dict[str, list[float]] = {}
    with torch.inference_mode():
        for r in range(args.rounds):
            order = list(loops) if r % 2 == 0 else list(loops)[::-1]
            for name in order:
                gc.collect()
                cpu = time.process_time()
                steps = loops[name]()
                per[name].append(1000 * (time.process_time() - cpu) / steps)
            for name, ms in decode_ms(args.batch, args.gen_length, V).items():
                dec.setdefault(name, []).append(ms)
    med = {name: statistics.median(v) for name, v in {**per, **dec}.items()}
    phase = med["indel"] - med["joint"]
    print(f"CPU ms per step, batch {args.batch}, V = {V}, {args.gen_length} tokens in blocks of {BLOCK}, one thread, "
          f"median of {args.rounds} rounds")
    for name, ms in med.items():
        print(f"  {name:40} {ms:8.3f}")
    print(f"  {'the phase (indel - joint)':40} {phase:8.3f}")
    for name, ms in dec.items():
        base = statistics.median(ms)
        print(f"ratio, {name} + the phase over it: {(base + phase) / base:6.3f}")


if __name__ == "__main__":
    main()
