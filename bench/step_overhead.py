"""Per-step host overhead of `decode`: what the loop costs when the model costs nothing.

A replayed-logits model returns a fixed logits tensor (no compute), so the time of a decode
divided by its steps is the decoding loop's own cost per step: packing, scoring, the schedule,
the draw, the commit and the trace. The figure is CPU time of the (single-threaded) process, which
load from other processes on a shared machine barely moves; wall time is printed beside it. Beside
it, a plain LLaDA-style loop written here from its rule (argmax, softmax in float64, probability of
the argmax, per-row top-k of a fixed quota) on the same model. Rounds alternate the variants (each
round a fresh process, the variants' order rotated round by round) so load on a shared machine hits
them alike; each figure is the median over rounds.

Every variant is timed alike: each code path runs once before the rounds (a short decode of every
config, and LLaDA's loop at each batch size); the interpreter's startup heap is then frozen (`gc.freeze`, as serving
processes do after warm-up: SGLang's `freeze_gc`, vLLM's `freeze_gc_heap`), and before each timed decode the previous
variant's traces are dropped and collected. The collector stays on: what it spends walking the
decode's own objects (its trace's records) is part of the decode's time, but not what it spends
walking torch's modules or a neighbouring variant's traces, which would depend on the order of the
variants rather than on the decode.

The allocator is set alike for every variant: each measuring process runs with glibc's malloc thresholds fixed
(`STEADY_MALLOC`: large blocks reused from the heap, none returned to the system between steps). torch's CPU tensors
come from malloc, and glibc's default thresholds move with what the process allocated and freed before: LLaDA's loop
makes a (B, N, V) float64 softmax every step (1.2 MB at B = 1), mmapped and page-faulted anew on every step in one
history and reused from the heap in another. Measured (`--batches 1`, 3 rounds, the thresholds at their defaults):
LLaDA's loop 1.0-1.4 ms a step instead of 0.70, so ours / LLaDA's read 0.86, against 1.16 with them fixed, the
figure the default `--batches 1,8` gives either way. Fixed, a ratio no longer depends on which batch sizes one run
measures: the loops are compared in the steady state a serving process reaches.

A decode leaves each step's candidates packed in its records until they are read (`core.step_record.Unread`):
"decode T=0" is the decode and its trace as `decode` returns it; "candidates read" adds reading every record's
candidates as lists (what writing the trace as JSON or drawing it reads), the cost moved out of the decode.

The revision phase (issue 28): the same decode with each revision rule on (`revise=...`), as a
ratio of host time per step to the rule-free decode of the same round (median over rounds), at
each batch size. Host time is the CPU time of the decode less the model's: the replayed model
times its own `logits_at` and `logits_hidden`, which gather its logits at the positions asked for,
the visible ones included (it declares it can edit). WINO's verify pass is a forward (it counts in
NFE: two forwards per step), so `logits_hidden` is the model's time like `logits_at`; what the rule
does with its logits (where to read, the mask column, the logsumexp of every verified position)
is the rule's, in host time. A step is one step of the decode whatever its forwards.

A rule may change the number of steps (WINO takes drafts back and takes about twice as many; the
edit-only steps of joint_threshold add one), and a longer decode costs a little more per step by
itself (more records for the collector to walk). So each rule is compared twice: with the decode
of the plain schedule ("as planned"), and with the rule-free decode of as many steps as the rule
took ("same steps"; the same decode when it took as many). The second is the cost of the phase
per step; the first adds what the decode's length costs. With `--compare`, the rule-free rows of
both checkouts side by side show what the phase costs when it is off.

The insert/delete phase (issue 37): the `llada22_indel` decode (SGLang's JointThresholdInDel in the step core,
`core.indel_decode`) against the decode it extends, `llada21` (JointThreshold: the same threshold and edits,
positions that stay), and against the rule-free `sglang_low_confidence`, on the same replayed model (which
declares edit tokens, so some argmaxes are DELETE or SPLIT and positions move): host time per step, ratio per
round, median [min, max]. The issue's floor: the phase adds at most 15% (llada22_indel / llada21 <= 1.15 at
batch 8).

    python bench/step_overhead.py                       # this checkout
    python bench/step_overhead.py --compare /tmp/old    # and another checkout, side by side
    python bench/step_overhead.py --threads 1 --rounds 5
    python bench/step_overhead.py --threads 1 --rounds 3 --quick   # the floors' rows alone
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# glibc's malloc thresholds for every measuring process (see the docstring): blocks up to 64 MiB from the heap, and
# up to 128 MiB of freed heap kept (no mmap or trim churn between steps, whatever the process allocated before).
STEADY_MALLOC = {"MALLOC_MMAP_THRESHOLD_": str(64 << 20), "MALLOC_TRIM_THRESHOLD_": str(128 << 20)}


class ReplayedLogits:
    """A denoiser whose forward is a slice of a fixed `(B, N, V)` logits tensor."""

    can_edit = True  # its logits at visible positions are replayed like the others (revise="joint_threshold")

    def __init__(self, batch: int, length: int, vocab: int, seed: int = 0) -> None:
        import torch

        g = torch.Generator().manual_seed(seed)
        self.logits = torch.randn(batch, length, vocab, generator=g) * 3  # (B, N, V)
        self.mask_token_id = vocab - 1
        self.vocab_size = vocab
        self.delete_token_id, self.split_token_id = vocab - 3, vocab - 2  # edit tokens (indel="joint_threshold_indel")
        self.max_length = length
        self.name = "replayed-logits"

        self.model_cpu = 0.0  # CPU seconds spent in logits_at / logits_hidden (the "forward")

    def __call__(self, input_ids, attention_mask=None):
        B, N = input_ids.shape
        return self.logits[:B, :N]

    def logits_at(self, input_ids, attention_mask, rows, cols):
        """The replayed forward's output at the positions asked for (timed as the model's): whole rows of the
        replayed logits, copied row by row (`index_select`), as cheap as a model's output can be made; LLaDA's loop
        reads a view of them (`__call__`)."""
        start = time.process_time()
        B, N, V = self.logits.shape
        out = self.logits.view(B * N, V).index_select(0, rows * N + cols)  # (M, V), a copy the step may edit
        self.model_cpu += time.process_time() - start
        return out

    def logits_hidden(self, input_ids, attention_mask, rows, cols):
        """WINO's verify pass, replayed likewise: the logits at those positions."""
        return self.logits_at(input_ids, attention_mask, rows, cols)


def llada_loop(model, prompts: list[list[int]], gen_length: int, steps: int) -> int:
    """A minimal LLaDA-style loop at temperature 0 (one block, fixed quota per step); returns NFE."""
    import torch

    mask = model.mask_token_id
    P = len(prompts[0])
    x = torch.full((len(prompts), P + gen_length), mask, dtype=torch.long)
    x[:, :P] = torch.tensor(prompts)
    per_step = [gen_length // steps + (1 if i < gen_length % steps else 0) for i in range(steps)]
    with torch.inference_mode():
        for k in per_step:
            is_mask = x == mask  # (B, N)
            logits = model(x)  # (B, N, V)
            x0 = logits.argmax(-1)  # (B, N)
            p = torch.softmax(logits.double(), dim=-1)
            conf = torch.where(is_mask, p.gather(-1, x0.unsqueeze(-1)).squeeze(-1), -torch.inf)  # (B, N)
            chosen = torch.zeros_like(is_mask)
            for row in range(x.shape[0]):
                chosen[row, torch.topk(conf[row], k).indices] = True
            x = torch.where(chosen, x0, x)
    return steps


def read_candidates(traces: list) -> list:
    """`traces`, every record's candidates read as lists (what writing or drawing a trace reads): a decode leaves
    them packed until read (`core.step_record.Unread`), so this row is the decode with that cost in it."""
    for trace in traces:
        for rec in trace.steps:
            _ = rec.candidates
    return traces


def measure(rounds: int, batches: list[int], gen_length: int, steps: int, vocab: int,
            offset: int = 0, quick: bool = False) -> dict[str, float]:
    """ms per step for each variant and batch size (median of rounds); `offset` rotates their order; `quick`:
    the rule-free decodes and LLaDA's loop only (the floors' rows)."""
    import gc

    import torch

    from dllm_viz import DecodeConfig, decode

    P = 16
    model = ReplayedLogits(max(batches), P + gen_length, vocab)
    config = DecodeConfig(gen_length=gen_length, schedule="fixed_steps", steps=steps, temperature=0.0)
    sampled = config.replace(temperature=1.0)
    rules = {}
    if "revise" in DecodeConfig.field_names() and not quick:  # a checkout with the revision phase (issue 28)
        rules = {"rcr": config.replace(revise="rcr"),
                 "remdm": config.replace(revise="remdm", remask_sigma="rescale", remask_eta=0.5),
                 "wino": config.replace(revise="wino"),
                 "joint_threshold": config.replace(revise="joint_threshold")}
    presets = {}
    if "indel" in DecodeConfig.field_names() and not quick:  # a checkout with the insert/delete phase (issue 37)
        presets = {name: DecodeConfig.preset(name, gen_length) for name in PRESETS}
    decode(model, [[1] * P], config.replace(gen_length=8, steps=4))  # warm-up: every code path once
    for c in rules.values():
        decode(model, [[1] * P], c.replace(gen_length=8, steps=4))
    for name in presets:
        decode(model, [[1] * P], DecodeConfig.preset(name, 64))
    for B in batches:  # LLaDA's loop too, at each batch size (its first call allocates what later calls reuse)
        llada_loop(model, [[1 + b] * P for b in range(B)], gen_length, steps)
    plans: dict[tuple[str, int], int] = {}  # steps each rule's decode takes (the slowest row), per batch size
    for B in batches:
        prompts = [[1 + b] * P for b in range(B)]
        for rule, c in rules.items():
            plans[rule, B] = max(len(t.steps) for t in decode(model, prompts, c))
    results: dict[str, list[float]] = {}
    gc.collect()
    gc.freeze()  # the interpreter's startup heap (torch's modules): a server freezes it after warm-up
    for _ in range(rounds):
        for B in batches:
            prompts = [[1 + b] * P for b in range(B)]
            variants = [
                (f"decode T=0, B={B}", lambda: decode(model, prompts, config)),
                (f"decode T=1, B={B}", lambda: decode(model, prompts, sampled)),
                (f"decode T=0 record_candidates=0, B={B}", lambda: decode(model, prompts, config, record_candidates=0)),
                (f"decode T=0 candidates read, B={B}", lambda: read_candidates(decode(model, prompts, config))),
                (f"LLaDA-style loop T=0, B={B}", lambda: llada_loop(model, prompts, gen_length, steps)),
            ]
            variants += [(f"decode T=0 revise={rule}, B={B}", lambda c=c: decode(model, prompts, c))
                         for rule, c in rules.items()]
            variants += [(f"decode preset={name}, B={B}", lambda c=c: decode(model, prompts, c))
                         for name, c in presets.items()]
            for n in sorted({plans[rule, B] for rule in rules} - {steps}):  # the rule-free decode, as many steps
                if n <= gen_length:
                    variants.append((f"decode T=0 steps={n}, B={B}",
                                     lambda c=config.replace(steps=n): decode(model, prompts, c)))
            k = offset % len(variants)
            for name, fn in variants[k:] + variants[:k]:
                out = None  # the previous variant's traces are not this one's to collect
                gc.collect()
                model.model_cpu = 0.0
                start, cpu = time.perf_counter(), time.process_time()
                out = fn()
                spent = time.process_time() - cpu
                # per batch step: the most steps any row took (a rule may add steps; the loop returns its NFE)
                n = max(len(t.steps) for t in out) if isinstance(out, list) else out
                results.setdefault(name, []).append(1000 * spent / n)
                results.setdefault(name + " (wall)", []).append(1000 * (time.perf_counter() - start) / n)
                if (name.startswith("decode T=0") or " preset=" in name) and "record_candidates" not in name:
                    results.setdefault(name + " (host)", []).append(1000 * (spent - model.model_cpu) / n)
                if " revise=" in name or " preset=" in name:
                    results.setdefault(name + " (steps)", []).append(n)
    del torch
    return {name: statistics.median(values) for name, values in results.items()}


def revision_ratios(rounds: dict[str, list[float]], steps: int) -> dict[str, tuple[list[float], list[float]]]:
    """Per round, host time per step with each revision rule on over the rule-free decode of that round:
    `(as planned, same steps)`: the decode of the plain schedule (`steps`), and the one of as many steps
    as the rule took (the same list when it took `steps`)."""
    out = {}
    for key, values in rounds.items():
        if " revise=" in key and key.endswith("(host)"):
            rule, batch = key.removesuffix(" (host)").split(" revise=")[1].split(", ")
            off = rounds[f"decode T=0, {batch} (host)"]
            n = int(statistics.median(rounds[key.replace("(host)", "(steps)")]))
            same = rounds.get(f"decode T=0 steps={n}, {batch} (host)", off) if n != steps else off
            out[f"revise={rule} / off, {batch}"] = ([v / o for v, o in zip(values, off)],
                                                    [v / o for v, o in zip(values, same)])
    return out


PRESETS = ("sglang_low_confidence", "llada21", "llada22_indel")  # rule-free, JointThreshold, JointThresholdInDel


def indel_ratios(rounds: dict[str, list[float]], batches: list[int]) -> dict[str, list[float]]:
    """Per round, host time per step of the llada22_indel decode over llada21's and over the rule-free one."""
    out = {}
    for B in batches:
        key = f"decode preset=llada22_indel, B={B} (host)"
        if key not in rounds:
            continue
        for base in ("llada21", "sglang_low_confidence"):
            other = rounds[f"decode preset={base}, B={B} (host)"]
            out[f"llada22_indel / {base}, B={B}"] = [v / o for v, o in zip(rounds[key], other)]
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--gen-length", type=int, default=128)
    parser.add_argument("--steps", type=int, default=64)
    parser.add_argument("--vocab", type=int, default=1024,
                        help="small by default: the loop's cost, not the vocabulary's")
    parser.add_argument("--batches", default="1,8")
    parser.add_argument("--compare", default=None, help="another checkout to measure side by side")
    parser.add_argument("--quick", action="store_true",
                        help="the floors' rows only: the rule-free decodes and LLaDA's loop (no revision rule, preset)")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)  # child mode: one round, JSON out
    parser.add_argument("--offset", type=int, default=0, help=argparse.SUPPRESS)  # child mode: rotate the variants
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    batches = [int(b) for b in args.batches.split(",")]
    if args.json:
        print(json.dumps(measure(1, batches, args.gen_length, args.steps, args.vocab, args.offset, args.quick)))
        return
    trees = {"this checkout": ROOT}
    if args.compare:
        trees["--compare " + args.compare] = Path(args.compare).resolve()
    per_tree: dict[str, dict[str, list[float]]] = {name: {} for name in trees}
    child = [sys.executable, str(Path(__file__).resolve()), "--json", "--threads", str(args.threads),
             "--gen-length", str(args.gen_length), "--steps", str(args.steps), "--vocab", str(args.vocab),
             "--batches", args.batches] + (["--quick"] if args.quick else [])
    for r in range(args.rounds):  # alternate the checkouts round by round, each in a fresh process
        for name, tree in trees.items():
            env = {**os.environ, "PYTHONPATH": str(tree), "OMP_NUM_THREADS": str(args.threads), **STEADY_MALLOC}
            run = subprocess.run(child + ["--offset", str(r)], capture_output=True, text=True, env=env, cwd=tree)
            if run.returncode:  # the child's own error, not only its exit status
                sys.exit(f"{name}: the measuring process failed ({run.returncode}):\n{run.stderr[-3000:]}")
            out = run.stdout
            for key, value in json.loads(out.strip().splitlines()[-1]).items():
                per_tree[name].setdefault(key, []).append(value)
    print(f"CPU ms per step (median of {args.rounds} rounds), replayed logits V={args.vocab}, "
          f"gen_length={args.gen_length}, {args.steps} steps, {args.threads} thread(s); wall-time rows are noisy "
          "on a shared machine")
    keys = list(next(iter(per_tree.values())))
    print(f"{'':48}" + "".join(f"{name:>28}" for name in trees))
    for key in keys:
        print(f"{key:48}" + "".join(f"{statistics.median(per_tree[name][key]):28.3f}"
                                    if key in per_tree[name] else f"{'-':>28}" for name in trees))
    mine = {key: statistics.median(values) for key, values in per_tree["this checkout"].items()}
    load = os.getloadavg()
    print(f"\nours / LLaDA's loop, CPU time per step (median of the {args.rounds} rounds' ratios; load average "
          f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}); the (host) rows leave out the replayed model's own time "
          "(its copy of the logits at the masked positions; LLaDA's loop reads a view of them):")
    floors = {1: 0.9, 8: 0.6}  # issue 40
    for B in batches:
        theirs = per_tree["this checkout"][f"LLaDA-style loop T=0, B={B}"]
        for key in (f"decode T=0, B={B}", f"decode T=0, B={B} (host)", f"decode T=0 record_candidates=0, B={B}",
                    f"decode T=0 candidates read, B={B}"):
            r = [a / b for a, b in zip(per_tree["this checkout"][key], theirs)]
            floor = f" (floor <= {floors[B]})" if B in floors and "candidate" not in key else ""
            print(f"  {key:44} {statistics.median(r):6.3f} [{min(r):.3f}, {max(r):.3f}]{floor}")
    ratios = revision_ratios(per_tree["this checkout"], args.steps)
    if ratios:
        print("\nThe revision phase on: host time per step (CPU less the replayed model's), ratio to the rule-free "
              f"decode of the same round, median [min, max] of {args.rounds} rounds; beside the decode of the plain "
              f"schedule ({args.steps} steps), the rule-free decode of as many steps as the rule took:")
        print(f"  {'':44} {'as planned':>22} {'same steps':>22}")
        for key, (planned, same) in ratios.items():
            print(f"  {key:44} " + " ".join(f"{statistics.median(v):6.3f} [{min(v):.3f}, {max(v):.3f}]"
                                             for v in (planned, same)))
    indel = indel_ratios(per_tree["this checkout"], batches)
    if indel:
        print("\nThe insert/delete phase (issue 37): host time per step of the llada22_indel decode over the decode "
              f"it extends (llada21) and over the rule-free one, median [min, max] of {args.rounds} rounds (floor: "
              "<= 1.15 over llada21 at batch 8); steps per decode (median): "
              + ", ".join(f"{name} {mine[f'decode preset={name}, B={B} (steps)']:g} (B={B})"
                          for name in PRESETS for B in batches))
        for key, values in indel.items():
            print(f"  {key:44} {statistics.median(values):6.3f} [{min(values):.3f}, {max(values):.3f}]")
    if args.compare:
        other = {key: statistics.median(values) for key, values in per_tree["--compare " + args.compare].items()}
        print("\nThe revision phase off (this checkout / --compare, CPU time per step; the LLaDA-style loop runs no "
              "dllm-viz code: its ratio is the noise between the two trees):")
        for B in batches:
            for key in (f"decode T=0, B={B}", f"decode T=0, B={B} (host)", f"LLaDA-style loop T=0, B={B}"):
                print(f"  {key:44} {mine[key] / other[key]:6.3f}")


if __name__ == "__main__":
    main()
