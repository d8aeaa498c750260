"""A whole decode on the embedded model, ours against LLaDA's own loop, the same tokens (issue 40 item 5).

LLaDA's `generate` (ML-GSAI/LLaDA, ``generate.py``, remasking "low_confidence", temperature 0, one block),
written here from its rule and batched as it is (one canvas row per prompt, `model(x)` over every
position, `argmax`, the softmax in the logits' dtype, the probability of the argmax, each row's
`torch.topk` of its quota): the plain loop a user would run. Beside it `decode` with the ``llada``
preset (LLaDA's rule, exactly: the same tokens, checked every round) through the embedded model's
`logits_at` (the batch-invariant packed forward, docs/engine.md). Both at batch 1 and 4, the same
prompts, `steps` = half the positions. CPU time of the process (one intra-op thread), rounds
interleaved and the variants' order rotated round by round, medians; the load average is printed. The process runs
with glibc's malloc thresholds fixed (`step_overhead.STEADY_MALLOC`, which says why; it starts itself again with them
when they are not set): at their defaults LLaDA's B=4 loop was timed 3.48 s against 3.14 s fixed, and ours / LLaDA's
read 0.77 against 0.85 (5 rounds each, one after the other).

    OMP_NUM_THREADS=1 python bench/vs_llada.py --rounds 7
"""
from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from dllm_viz import DecodeConfig, decode, load_model  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))  # step_overhead, beside this file
from step_overhead import STEADY_MALLOC  # noqa: E402

PROMPTS = ["It was a cold morning in November, and the whole family was gathered in the",
           "Elizabeth", "Mr. Darcy walked into the room and", "She had never seen"]


@torch.inference_mode()
def llada_generate(model, prompts: list[list[int]], gen_length: int, steps: int) -> list[list[int]]:
    """LLaDA's generate at temperature 0, one block, on right-padded rows of the same length (the prompts
    are cut to the shortest, as LLaDA takes one prompt tensor)."""
    mask = model.mask_token_id
    P = len(prompts[0])
    x = torch.full((len(prompts), P + gen_length), mask, dtype=torch.long)
    x[:, :P] = torch.tensor(prompts)
    base, extra = divmod(gen_length, steps)
    for i in range(steps):
        k = base + (1 if i < extra else 0)
        mask_index = x == mask  # (B, N)
        logits = model(x)  # (B, N, V)
        x0 = torch.argmax(logits, dim=-1)
        p = torch.softmax(logits, dim=-1)  # in the logits' dtype
        x0_p = torch.gather(p, -1, x0.unsqueeze(-1)).squeeze(-1)
        x0 = torch.where(mask_index, x0, x)
        confidence = torch.where(mask_index, x0_p, -float("inf"))
        transfer = torch.zeros_like(x0, dtype=torch.bool)
        for j in range(x.shape[0]):
            transfer[j, torch.topk(confidence[j], k=k).indices] = True
        x[transfer] = x0[transfer]
    return x[:, P:].tolist()


def main(argv: list[str] | None = None) -> None:
    if any(os.environ.get(k) != v for k, v in STEADY_MALLOC.items()):  # the allocator set alike for both loops
        os.execve(sys.executable, [sys.executable, __file__, *(sys.argv[1:] if argv is None else argv)],
                  {**os.environ, **STEADY_MALLOC})
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--gen-length", type=int, default=64)
    parser.add_argument("--batches", default="1,4")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    model = load_model(device="cpu")  # a CPU bench: on a machine with a GPU too (load_model's default there)
    G, S = args.gen_length, args.gen_length // 2
    encoded = [model.tokenizer.encode(p) for p in PROMPTS]
    shortest = min(map(len, encoded))
    variants = {}
    for B in (int(b) for b in args.batches.split(",")):
        prompts = [ids[:shortest] for ids in encoded[:B]]
        config = DecodeConfig.preset("llada", G, steps=S)
        ours = [t.token_ids for t in decode(model, prompts, config)]
        assert ours == llada_generate(model, prompts, G, S), f"B={B}: not the same tokens"
        variants[f"decode (llada preset), B={B}"] = (lambda p=prompts, c=config: decode(model, p, c), B)
        variants[f"LLaDA's loop, B={B}"] = (lambda p=prompts: llada_generate(model, p, G, S), B)
    times: dict[str, list[float]] = {name: [] for name in variants}
    gc.collect()
    gc.freeze()
    names = list(variants)
    for r in range(args.rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            gc.collect()
            start = time.process_time()
            variants[name][0]()
            times[name].append(time.process_time() - start)
    load = os.getloadavg()
    print(f"CPU s per decode (median of {args.rounds} rounds), embedded model, gen_length {G}, {S} steps, "
          f"{args.threads} thread(s); load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    for name, values in times.items():
        print(f"  {name:32} {statistics.median(values):8.3f}  [{min(values):.3f}, {max(values):.3f}]")
    for B in (int(b) for b in args.batches.split(",")):
        ours, theirs = times[f"decode (llada preset), B={B}"], times[f"LLaDA's loop, B={B}"]
        ratios = [a / b for a, b in zip(ours, theirs)]
        print(f"  ours / LLaDA's loop, B={B}: {statistics.median(ratios):.3f} (median of per-round ratios; "
              f"[{min(ratios):.3f}, {max(ratios):.3f}]; floor <= 1.0)")


if __name__ == "__main__":
    main()
