"""What the approximate key-value caches buy and cost (issue 31's floors), measured side by side.

(a) speed, the Austen model, gen_length 256 (its whole context: empty prompt), blocks of 32,
    threshold 0.9 at temperature 0 (Fast-dLLM's setting): median wall time of `decode` per cache,
    the rounds alternating none / prefix / dual so that load on a shared machine hits them alike;
    the ratios none / cache, the forward passes (NFE), and the tokens that differ from none.
    Floors: dual >= 3x, prefix >= 1.8x, NFE no more than none's.
(b) the same at gen_length 64 after a prompt (the playground's default length): each cache no
    slower than none (ratio >= 1); also the playground's default preset (balanced, one block),
    where only the prefix cache runs (it caches the prompt).
(c) correctness, the world model: 48 tokens, one per step at T = 0.7 (the Compare lesson "what the
    cache changes"), in blocks of 8 and of 16, the 4 world prompts x `--seeds` seeds per cache: valid
    runs (the checker accepts the whole text) with 95% Wilson intervals, at equal NFE (one token per
    step on every side). Floor: each cache's valid-run rate inside the no-cache rate's interval.
(d) with `--refresh`: the dual cache in blocks of 16 on the world model again, refreshed every 2, 3
    and 4 steps of a block (`cache_refresh`), `--refresh-seeds` seeds per prompt: the valid runs and
    the runs that break a sum (what the README says of `cache_refresh=3`).
One torch thread. The ratios compare runs made in the same minutes; the absolute times move with
the machine's load, which is printed (the 1-minute load average) next to them. The floors are read
on wall time; the CPU time of this process (what one thread costs, whoever else shares the core)
is printed beside it.

    python bench/cache_bench.py                   # all three, 3 rounds
    python bench/cache_bench.py --rounds 5 --json out.json
    python bench/cache_bench.py --only world --refresh   # (c) and (d)
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from dllm_viz import DecodeConfig, decode, load_model  # noqa: E402
from dllm_viz.core.config import CACHES  # noqa: E402
from dllm_viz.studies.world_score import WORLD_PROMPTS, correctness, format_rate  # noqa: E402

AUSTEN_PROMPT = "It is a truth universally acknowledged, that a single man in possession of a good fortune,"
FLOORS = {"dual": 3.0, "prefix": 1.8}  # (a): none's time / the cache's time, at least


def load() -> str:
    try:
        return f"{os.getloadavg()[0]:.1f}"
    except OSError:
        return "n/a"


def speed(model, prompt: str, configs: dict[str, DecodeConfig], rounds: int) -> dict[str, dict]:
    """Median wall time, NFE and tokens differing from the first config, per config, rounds interleaved."""
    for cfg in configs.values():
        decode(model, [prompt], cfg.replace(gen_length=cfg.block_size if cfg.block_length else 8,
                                            block_length=cfg.block_length and cfg.block_size))  # warm-up
    times: dict[str, list[float]] = {name: [] for name in configs}
    cpu: dict[str, list[float]] = {name: [] for name in configs}
    traces = {}
    for _ in range(rounds):
        for name, cfg in configs.items():
            t, c = time.perf_counter(), time.process_time()
            (traces[name],) = decode(model, [prompt], cfg)
            times[name].append(time.perf_counter() - t)
            cpu[name].append(time.process_time() - c)
    base = next(iter(configs))
    out = {}
    for name in configs:
        tr = traces[name]
        out[name] = {
            "seconds": round(statistics.median(times[name]), 3),
            "ratio": round(statistics.median(times[base]) / statistics.median(times[name]), 2),
            "cpu_seconds": round(statistics.median(cpu[name]), 3),
            "cpu_ratio": round(statistics.median(cpu[base]) / statistics.median(cpu[name]), 2),
            "nfe": tr.nfe,
            "differ": sum(a != b for a, b in zip(tr.token_ids, traces[base].token_ids)),
            "computed": sum(s.computed for s in tr.steps) if tr.steps and tr.steps[0].computed is not None else None,
        }
    return out


def world_quality(seeds: int, gen_length: int, block_length: int,
                  rows: dict[str, dict] | None = None) -> dict[str, dict]:
    """Valid runs per row; `rows`: name -> cache fields (default: each cache, refreshed at block starts)."""
    model = load_model("world")
    prompts = [p for p in WORLD_PROMPTS for _ in range(seeds)]
    out = {}
    for name, fields in (rows or {c: {"cache": c} for c in CACHES}).items():
        configs = [DecodeConfig.preset("balanced", gen_length, seed=s, top_k=1, decay=1.0, temperature=0.7,
                                       block_length=block_length, **fields)
                   for _ in WORLD_PROMPTS for s in range(seeds)]
        traces = decode(model, prompts, configs, record_candidates=0)
        out[name] = {"nfe": statistics.mean(t.nfe for t in traces), **correctness(traces)}
    return out


def refresh_quality(seeds: int, report: dict[str, object]) -> None:
    """(d): the dual cache in blocks of 16, refreshed at block starts only and every 2, 3, 4 steps."""
    rows = {"dual": {"cache": "dual"},
            **{f"dual, refresh {r}": {"cache": "dual", "cache_refresh": r} for r in (2, 3, 4)}}
    world = world_quality(seeds, 48, 16, rows)
    report["world_blocks_16_refresh"] = world
    print(f"\n(d) world-mdlm, 48 tokens in blocks of 16, one per step at T = 0.7, {4 * seeds} runs per row")
    print("| cache | NFE | valid runs | runs breaking a sum |")
    print("|---|---:|---|---|")
    for name, r in world.items():
        print(f"| {name} | {r['nfe']:.0f} | {format_rate(r['valid_runs'])} | "
              f"{format_rate(r['runs_breaking']['sum'])} |")


def table(title: str, rows: dict[str, dict]) -> None:
    print(f"\n{title}")
    print("| cache | median s | none / cache | CPU s | none / cache (CPU) | NFE | tokens differing from none "
          "| positions computed |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, r in rows.items():
        print(f"| {name} | {r['seconds']:.3f} | {r['ratio']:.2f}x | {r['cpu_seconds']:.3f} | {r['cpu_ratio']:.2f}x "
              f"| {r['nfe']} | {r['differ']} | {r['computed'] or '-'} |")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seeds", type=int, default=16, help="world model: seeds per prompt (4 prompts)")
    parser.add_argument("--only", choices=("speed", "world"), default=None)
    parser.add_argument("--refresh", action="store_true", help="(d): the dual cache refreshed every 2, 3, 4 steps")
    parser.add_argument("--refresh-seeds", type=int, default=8, help="(d): seeds per prompt (4 prompts)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    report: dict[str, object] = {"threads": 1, "load_before": load()}
    ok = True
    if args.only != "world":
        model = load_model()
        fast = DecodeConfig(gen_length=256, block_length=32, schedule="threshold", threshold=0.9, temperature=0.0)
        long = speed(model, "", {c: fast.replace(cache=c) for c in CACHES}, args.rounds)
        table(f"(a) austen-mdlm, gen_length 256, blocks of 32, threshold 0.9, T = 0 (load {load()})", long)
        short = speed(model, AUSTEN_PROMPT, {c: fast.replace(gen_length=64, cache=c) for c in CACHES}, args.rounds)
        table(f"(b) the same at gen_length 64 after a prompt (load {load()})", short)
        default = DecodeConfig.preset("balanced", 64)
        playground = speed(model, AUSTEN_PROMPT, {c: default.replace(cache=c) for c in CACHES[:2]}, args.rounds)
        table(f"(b') the playground's default (balanced, 64 tokens, one block) (load {load()})", playground)
        report.update(austen_256=long, austen_64=short, austen_64_default=playground)
        for cache, floor in FLOORS.items():
            met = long[cache]["ratio"] >= floor and long[cache]["nfe"] <= long["none"]["nfe"]
            ok &= met
            print(f"floor (a) {cache}: {long[cache]['ratio']:.2f}x >= {floor}x, NFE {long[cache]['nfe']} <= "
                  f"{long['none']['nfe']}: {'met' if met else 'NOT MET'}")
        for name, rows in (("(b)", short), ("(b')", playground)):
            for cache, r in rows.items():
                if cache != "none":
                    met = r["ratio"] >= 1.0
                    ok &= met
                    print(f"floor {name} {cache}: {r['ratio']:.2f}x >= 1: {'met' if met else 'NOT MET'}")
    if args.only != "speed":
        print(f"\n(c) world-mdlm, 48 tokens, one per step at T = 0.7, {4 * args.seeds} runs per row")
        print("| blocks | cache | NFE | valid runs | valid sentences | runs breaking a sum | broken two-word names |")
        print("|---:|---|---:|---|---|---|---|")
        for block in (8, 16):
            world = world_quality(args.seeds, 48, block)
            report[f"world_blocks_{block}"] = world
            for cache, r in world.items():
                print(f"| {block} | {cache} | {r['nfe']:.0f} | {format_rate(r['valid_runs'])} | "
                      f"{format_rate(r['valid_sentences'])} | {format_rate(r['runs_breaking']['sum'])} | "
                      f"{format_rate(r['broken_entities'])} |")
            base = world["none"]["valid_runs"]
            for cache in CACHES[1:]:
                r = world[cache]["valid_runs"]
                met = base["lo"] <= r["rate"] <= base["hi"] and world[cache]["nfe"] == world["none"]["nfe"]
                ok &= met
                print(f"floor (c) blocks of {block}, {cache}: {r['rate']:.0%} inside none's [{base['lo']:.0%}, "
                      f"{base['hi']:.0%}] at equal NFE: {'met' if met else 'NOT MET'}")
    if args.refresh:
        refresh_quality(args.refresh_seeds, report)
    report["load_after"] = load()
    print(f"\nload average (1 min) before / after: {report['load_before']} / {report['load_after']}; "
          f"{'every floor met' if ok else 'a floor is NOT met'}")
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
