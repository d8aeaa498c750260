"""Animation export (issue 39): a 64-step world-model trace written as GIF, WebP and SVG on one CPU thread.

The floor: the GIF in under 5 s and under 2 MB. Beside each export, the decode that made the trace (the
same process, the same thread), so the ratio says what the export costs against what it shows; each
figure is the median of `--rounds`, the formats alternating within a round. CPU time of the process is
printed beside wall time (a shared machine's load moves the second, barely the first). Exit status 1
when the GIF misses the floor.

    python bench/export_bench.py
    python bench/export_bench.py --rounds 5 --steps 64
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dllm_viz import DecodeConfig, decode, load_model  # noqa: E402
from dllm_viz.app.views.animation import animation_bytes  # noqa: E402

FLOOR_SECONDS, FLOOR_BYTES = 5.0, 2_000_000


def timed(fn):
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - wall, time.process_time() - cpu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=64, help="gen_length, one token per step")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    world = load_model("world")
    config = DecodeConfig.preset("quality", args.steps, seed=0, schedule="fixed_steps", steps=args.steps)
    formats = ("gif", "webp", "svg")
    rows: dict[str, list[tuple[float, float, int]]] = {f: [] for f in ("decode", *formats)}
    for r in range(args.rounds):
        (trace,), wall, cpu = timed(lambda: decode(world, ["Tom Lopez of"], config))
        rows["decode"].append((wall, cpu, 0))
        for fmt in formats[r % 3:] + formats[: r % 3]:  # the order rotates round by round
            data, wall, cpu = timed(lambda: animation_bytes(trace, fmt))
            rows[fmt].append((wall, cpu, len(data)))
    print(f"{len(trace.steps)}-step world-model trace, {len(trace.steps) + 1} frames, 1 thread, "
          f"median of {args.rounds} rounds")
    decode_wall = statistics.median(w for w, _, _ in rows["decode"])
    print(f"{'':8} {'wall s':>8} {'cpu s':>8} {'size':>10} {'/ decode':>9}")
    for name, values in rows.items():
        wall = statistics.median(w for w, _, _ in values)
        cpu = statistics.median(c for _, c, _ in values)
        size = f"{values[-1][2] / 1e6:9.2f}M" if name != "decode" else f"{'-':>10}"
        print(f"{name:8} {wall:8.2f} {cpu:8.2f} {size} {wall / decode_wall:9.2f}")
    gif_wall = statistics.median(w for w, _, _ in rows["gif"])
    gif_size = rows["gif"][-1][2]
    ok = gif_wall < FLOOR_SECONDS and gif_size < FLOOR_BYTES
    print(f"floor (GIF under {FLOOR_SECONDS:g} s and {FLOOR_BYTES / 1e6:g} MB): {'met' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
