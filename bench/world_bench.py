"""The world model: decode speed on one CPU thread, and checker pass rates per preset.

(a) speed: a balanced decode of one prompt + 48 tokens, median wall time over rounds, for the
    world model and the Austen model side by side (target for the world model: < 0.15 s);
(b) quality: for each of the article's presets, 64 seeded runs (the 4 world prompts x 16 seeds,
    one batched decode per preset), the share of runs the checker accepts, of complete sentences
    that are valid and of two-word names that are broken, with 95% Wilson intervals; then the
    quality preset's temperature with one token per step (k=1) and with the threshold schedule,
    which tells what the model knows from what confirming several tokens per step breaks;
(c) the same rows for `WorldOracle`, the language's exact marginals: what a perfect model reaches,
    so (b) - (c) is what the trained model has not learnt and (c) alone is what a schedule breaks.
Timings on a shared machine are noisy; the quality numbers are deterministic (fixed seeds).

    python bench/world_bench.py                      # the shipped dllm_viz/assets/world
    python bench/world_bench.py --model RUN_EXPORT   # an exported run folder
    python bench/world_bench.py --json out.json
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from dllm_viz import DecodeConfig, assets, decode  # noqa: E402
from dllm_viz.core.config import PRESETS  # noqa: E402
from dllm_viz.models.embedded import load_embedded  # noqa: E402
from dllm_viz.world import SLOTS, WorldOracle, generate  # noqa: E402
from dllm_viz.studies.world_score import WORLD_PROMPTS, correctness, format_rate, trace_text  # noqa: E402

WORLD_DIR = assets.path("world")


def speed(model, prompt: str, gen_length: int, rounds: int) -> tuple[float, float]:
    """Median (wall, CPU) seconds of one balanced decode. CPU time of this process is what one
    thread costs even when other jobs share the core; wall time includes waiting for it."""
    cfg = DecodeConfig.preset("balanced", gen_length)
    decode(model, [prompt], cfg)  # warm-up
    wall, cpu = [], []
    for seed in range(rounds):
        t, c = time.perf_counter(), time.process_time()
        decode(model, [prompt], cfg.replace(seed=seed), record_candidates=0)
        wall.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    return statistics.median(wall), statistics.median(cpu)


# The quality preset's temperature (0.7) under schedules that confirm coupled tokens one at a time:
# what the model knows, apart from what confirming several tokens per step does to it.
ONE_AT_A_TIME = {
    "quality T, k=1": lambda gen_length, seed: DecodeConfig.preset("quality", gen_length, seed=seed).replace(
        top_k=1, decay=1.0),
    "quality T, threshold 0.9": lambda gen_length, seed: DecodeConfig.preset("quality", gen_length, seed=seed).replace(
        schedule="threshold", threshold=0.9),
}


def quality(model, gen_length: int, seeds: int) -> dict[str, dict]:
    makers = {name: (lambda g, s, name=name: DecodeConfig.preset(name, g, seed=s)) for name in PRESETS}
    out = {}
    for name, make in {**makers, **ONE_AT_A_TIME}.items():
        prompts = [p for p in WORLD_PROMPTS for _ in range(seeds)]
        configs = [make(gen_length, s) for _ in WORLD_PROMPTS for s in range(seeds)]
        traces = decode(model, prompts, configs, record_candidates=0)
        out[name] = {"steps": statistics.mean(t.nfe for t in traces), **correctness(traces),
                     "example": trace_text(traces[0])}
    return out


def probes(model, n: int = 200) -> dict[str, float]:
    """What the model knows about the one rule that spans the sentence, in both directions, over
    ``n`` generated sentences (each after a fixed first sentence, so its name starts a line):
    - ``recall_given_name``: mean p(right recalled name) with only the recall ("so Tom has") masked;
    - ``name_given_recall``: mean p(right first name) with the first name and surname masked and
      the recall visible (1/64 when the recall is not used).
    A schedule may draw either side first (both are 1/64 before either is seen), so it needs both."""
    tok, mask = model.tokenizer, model.mask_token_id
    first = "Tom Lopez of San Diego has 3 cats and 1 dog at home, so Tom has 4 pets in all.\n"
    forward, backward = [], []
    with torch.no_grad():
        for s in generate(n, 5):
            ids = tok.encode(first + s)
            start = len(tok.encode(first))
            recall = start + SLOTS.index("recall")
            x = torch.tensor([ids])
            x[0, recall] = mask
            forward.append(float(model(x).softmax(-1)[0, recall, ids[recall]]))
            x = torch.tensor([ids])
            x[0, start:start + 2] = mask
            backward.append(float(model(x).softmax(-1)[0, start, ids[start]]))
    return {"recall_given_name": round(statistics.mean(forward), 4),
            "name_given_recall": round(statistics.mean(backward), 4)}


def print_table(rows: dict[str, dict]) -> None:
    rules = list(next(iter(rows.values()))["runs_breaking"])
    print("| decode | steps | valid runs | valid sentences | broken two-word names | runs breaking "
          + " / ".join(rules) + " |\n|---|---:|---|---|---|---|")
    for name, q in rows.items():
        breaking = " / ".join(f"{q['runs_breaking'][r]['rate']:.0%}" for r in rules)
        print(f"| {name} | {q['steps']:.1f} | {format_rate(q['valid_runs'])} | {format_rate(q['valid_sentences'])} "
              f"| {format_rate(q['broken_entities'])} | {breaking} |")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", type=Path, default=WORLD_DIR)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--gen-length", type=int, default=48)
    parser.add_argument("--seeds", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--no-speed", action="store_true")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    world = load_embedded(device="cpu", path=args.model)
    report: dict = {"model": str(args.model), "threads": args.threads, "gen_length": args.gen_length}
    if not args.no_speed:
        austen = load_embedded(device="cpu")
        for name, model, prompt in (("world", world, WORLD_PROMPTS[0]), ("austen", austen, "Elizabeth")):
            wall, cpu = speed(model, prompt, args.gen_length, args.rounds)
            report[f"wall_s_{name}"], report[f"cpu_s_{name}"] = round(wall, 4), round(cpu, 4)
        print(f"balanced decode, prompt + {args.gen_length} tokens, {args.threads} thread(s), median of {args.rounds}: "
              f"world {report['wall_s_world']:.3f} s wall / {report['cpu_s_world']:.3f} s CPU, "
              f"austen {report['wall_s_austen']:.3f} s wall / {report['cpu_s_austen']:.3f} s CPU "
              f"(CPU ratio {report['cpu_s_austen'] / report['cpu_s_world']:.1f}x)")
    report["presets"] = quality(world, args.gen_length, args.seeds)
    report["oracle"] = quality(WorldOracle(), args.gen_length, args.seeds)
    report["probes"] = {"model": probes(world), "oracle": probes(WorldOracle())}
    print("probes (model / oracle):", ", ".join(f"{k} {report['probes']['model'][k]:.3f} / {v:.3f}"
                                                 for k, v in report["probes"]["oracle"].items()))
    for title, rows in (("the trained model", report["presets"]), ("WorldOracle (exact marginals)", report["oracle"])):
        print(f"\n{title}:")
        print_table(rows)
    for name, q in report["presets"].items():
        print(f"{name}: {q['example']!r}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
