"""Write the tasks model's corpus: ``train.txt``, ``heldout.txt`` (``prompt<TAB>answer`` lines, the
trainer's ``--pairs`` format), the fixed ``tokenizer.json`` and ``stats.json`` into a folder.

Usage::

    python scripts/make_tasks_data.py --out /tmp/tasks-data --train 100000 --heldout 1000 --seed 11

``--train`` and ``--heldout`` count pairs per family (the families alternate line by line). The
held-out pairs come from another seed (``seed + 1``). ``stats.json`` records the sizes and, per
family, the share of held-out prompts and of the benchmark's prompts (`studies.curves.PROMPT_SEED`)
that also occur in the training set: the families are finite, so some overlap is reported, not hidden.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from dllm_viz.tasks import FAMILIES, build_tokenizer, check, generate, lines  # noqa: E402
from dllm_viz.studies.curves import PROMPT_SEED, PROMPTS_PER_FAMILY  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--train", type=int, default=100_000, help="training pairs per family")
    parser.add_argument("--heldout", type=int, default=1_000, help="held-out pairs per family")
    parser.add_argument("--seed", type=int, default=11, help="generator seed (held-out uses seed + 1)")
    args = parser.parse_args(argv)
    train = {f: generate(f, args.train, args.seed) for f in FAMILIES}
    heldout = {f: generate(f, args.heldout, args.seed + 1) for f in FAMILIES}
    bad = [(t.prompt, a) for f in FAMILIES for t, a in train[f][:500] + heldout[f] if not check(t, a).ok]
    if bad:
        raise SystemExit(f"generator/checker disagree on {len(bad)} pairs, e.g. {bad[0]!r}")
    stats = {"seed": args.seed, "heldout_seed": args.seed + 1, "train_pairs_per_family": args.train,
             "heldout_pairs_per_family": args.heldout, "families": {}}
    for f in FAMILIES:
        seen = {t.prompt for t, _ in train[f]}
        bench = generate(f, PROMPTS_PER_FAMILY, PROMPT_SEED)
        stats["families"][f] = {
            "distinct_train_prompts": len(seen),
            "heldout_prompt_in_train": round(sum(t.prompt in seen for t, _ in heldout[f]) / max(1, args.heldout), 4),
            "bench_prompt_in_train": round(sum(t.prompt in seen for t, _ in bench) / len(bench), 4),
        }
    args.out.mkdir(parents=True, exist_ok=True)
    for name, split in (("train", train), ("heldout", heldout)):
        per_family = [lines(split[f]) for f in FAMILIES]
        rows = [line for group in zip(*per_family) for line in group]
        (args.out / f"{name}.txt").write_text("\n".join(rows) + "\n")
    build_tokenizer().save(str(args.out / "tokenizer.json"))
    (args.out / "stats.json").write_text(json.dumps(stats, indent=1) + "\n")
    print(json.dumps(stats))


if __name__ == "__main__":
    main()
