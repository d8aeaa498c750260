"""The dual cache's drift at the Austen model's whole context (the README's cache example, at full size).

gen_length 256 (no prompt), blocks of 32, threshold 0.9 at temperature 0 (Fast-dLLM's setting):
the exact decode, the dual cache, and the dual cache with the drift diagnostic (the exact forward
run beside each cached one), decoded one after another in each round, so that load on a shared
machine hits them alike. Prints the median wall and CPU time of each, their ratios to the exact
decode, and the cached decode's facts (`Trace.cache_facts`: positions computed, the largest drift of
a confidence, the window steps whose confirmed set or tokens the exact forward would have changed).
The README runs the same example at gen_length 64 (seconds); this is the minutes-long one.

    python bench/cache_drift.py              # 1 round (a few minutes on a 2-core machine)
    python bench/cache_drift.py --rounds 3
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from dllm_viz import DecodeConfig, decode, load_model  # noqa: E402

SETTINGS = {"none": dict(cache="none"), "dual": dict(cache="dual"),
            "dual + drift": dict(cache="dual", cache_drift=True)}


def config(gen_length: int, **cache: object) -> DecodeConfig:
    return DecodeConfig(gen_length=gen_length, block_length=32, schedule="threshold", threshold=0.9, temperature=0.0,
                        **cache)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--gen-length", type=int, default=256)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    model = load_model()
    wall: dict[str, list[float]] = {name: [] for name in SETTINGS}
    cpu: dict[str, list[float]] = {name: [] for name in SETTINGS}
    traces = {}
    print(f"load average {os.getloadavg()[0]:.1f} at the start", flush=True)
    for _ in range(args.rounds):
        for name, cache in SETTINGS.items():
            w0, c0 = time.perf_counter(), time.process_time()
            traces[name] = decode(model, [""], config(args.gen_length, **cache))[0]
            wall[name].append(time.perf_counter() - w0)
            cpu[name].append(time.process_time() - c0)
    base_w, base_c = statistics.median(wall["none"]), statistics.median(cpu["none"])
    print(f"{'decode':>14} {'wall s':>8} {'none / it':>10} {'CPU s':>8} {'CPU none / it':>14} {'NFE':>5} "
          f"{'tokens unlike none':>19}")
    for name in SETTINGS:
        w, c = statistics.median(wall[name]), statistics.median(cpu[name])
        differ = sum(a != b for a, b in zip(traces[name].token_ids, traces["none"].token_ids))
        print(f"{name:>14} {w:8.2f} {base_w / w:9.2f}x {c:8.2f} {base_c / c:13.2f}x {traces[name].nfe:5d} {differ:19d}")
    print("dual + drift, cache facts:", traces["dual + drift"].cache_facts)
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
