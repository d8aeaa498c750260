"""This checkout's decoding loop against another checkout's, in ONE process, decode by decode.

`bench/step_overhead.py --compare` runs each checkout in processes of its own, round by round; on a shared
machine the processes differ by more than a small change does (its LLaDA-loop row, which runs no dllm-viz
code, moved 13% between the two trees in one run under load 2-4). Here the other checkout's package is
copied to a temporary directory under another name (`dllm_viz_base`, its own imports renamed in the copy),
so both import side by side, and the decodes alternate one by one with LLaDA's loop (`step_overhead`'s
replayed-logits model and loop; each round rotates their order): the load hits all three alike, and the
ratios are taken decode by decode. Both checkouts must give the same tokens (checked first).

    OMP_NUM_THREADS=1 python bench/step_ab.py --base /tmp/old --batch 1 --rounds 40
    OMP_NUM_THREADS=1 python bench/step_ab.py --base /tmp/old --batch 8 --temperature 1.0
"""
from __future__ import annotations

import argparse
import gc
import importlib
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from step_overhead import ReplayedLogits, llada_loop  # noqa: E402

ALIAS = "dllm_viz_base"


def import_renamed(checkout: Path, into: Path):
    """The `dllm_viz` package of `checkout`, copied under `into` as `dllm_viz_base` (every `dllm_viz` name in its
    Python files renamed) and imported."""
    target = into / ALIAS
    shutil.copytree(checkout / "dllm_viz", target, ignore=shutil.ignore_patterns("__pycache__"))
    word = re.compile(r"\bdllm_viz\b")
    for path in target.rglob("*.py"):
        path.write_text(word.sub(ALIAS, path.read_text(encoding="utf-8")), encoding="utf-8")
    sys.path.insert(0, str(into))
    return importlib.import_module(ALIAS)


def measure(base, batch: int, rounds: int, temperature: float, gen_length: int, steps: int,
            vocab: int) -> dict[str, list[float]]:
    """CPU ms per step of each decode, per round: this checkout's, the base's and LLaDA's loop."""
    import dllm_viz

    P = 16
    model = ReplayedLogits(8, P + gen_length, vocab)
    prompts = [[1 + b] * P for b in range(batch)]
    ours = dllm_viz.DecodeConfig(gen_length=gen_length, schedule="fixed_steps", steps=steps, temperature=temperature)
    theirs = base.DecodeConfig(gen_length=gen_length, schedule="fixed_steps", steps=steps, temperature=temperature)
    runs = {"this": lambda: dllm_viz.decode(model, prompts, ours), "base": lambda: base.decode(model, prompts, theirs),
            "llada": lambda: llada_loop(model, prompts, gen_length, steps)}
    if [t.token_ids for t in runs["this"]()] != [t.token_ids for t in runs["base"]()]:
        sys.exit("the two checkouts decode different tokens: nothing to compare")
    for _ in range(3):  # every path once before the rounds, then the startup heap frozen (as step_overhead does)
        for run in runs.values():
            run()
    gc.collect()
    gc.freeze()
    out: dict[str, list[float]] = {name: [] for name in runs}
    names = list(runs)
    for r in range(rounds):
        for name in names[r % 3:] + names[:r % 3]:
            done = None  # the previous decode's traces are not this one's to collect
            gc.collect()
            start = time.process_time()
            done = runs[name]()
            out[name].append(1000 * (time.process_time() - start) / steps)
        del done
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", required=True, help="the other checkout (a directory holding dllm_viz/)")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--temperature", type=float, default=0.0)
    parser.add_argument("--gen-length", type=int, default=128)
    parser.add_argument("--steps", type=int, default=64)
    parser.add_argument("--vocab", type=int, default=1024)
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory(prefix="step-ab-") as tmp:
        base = import_renamed(Path(args.base).resolve(), Path(tmp))
        ms = measure(base, args.batch, args.rounds, args.temperature, args.gen_length, args.steps, args.vocab)
    load = os.getloadavg()

    def ratio(a: str, b: str) -> str:
        r = [x / y for x, y in zip(ms[a], ms[b])]
        return f"{statistics.median(r):.3f} [{min(r):.3f}, {max(r):.3f}]"

    print(f"CPU ms per step, median of {args.rounds} rounds (batch {args.batch}, T={args.temperature}, replayed logits "
          f"V={args.vocab}, gen_length={args.gen_length}, {args.steps} steps, one thread; load average "
          f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}): " + ", ".join(f"{name} {statistics.median(v):.3f}"
                                                                 for name, v in ms.items()))
    print(f"  this / base        {ratio('this', 'base')}")
    print(f"  this / LLaDA loop  {ratio('this', 'llada')}")
    print(f"  base / LLaDA loop  {ratio('base', 'llada')}")


if __name__ == "__main__":
    main()
