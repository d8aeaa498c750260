"""Write the world model's corpus: ``train.txt`` and ``heldout.txt`` (one sentence per line) into a folder.

Usage::

    python scripts/make_world_data.py --out /tmp/world-data --train 120000 --heldout 4000 --seed 11

The held-out sentences come from another seed (``seed + 1``); ``stats.json`` records the sizes and
the share of held-out sentences that also occur verbatim in the training set (the language has
``space_size()`` distinct sentences, so some overlap is unavoidable and is reported, not hidden).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from dllm_viz.world import check, generate, space_size  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--train", type=int, default=120_000, help="training sentences")
    parser.add_argument("--heldout", type=int, default=4_000, help="held-out sentences")
    parser.add_argument("--seed", type=int, default=11, help="generator seed (held-out uses seed + 1)")
    args = parser.parse_args(argv)
    train, heldout = generate(args.train, args.seed), generate(args.heldout, args.seed + 1)
    bad = [s for s in train[:1000] + heldout if not check(s).ok]
    if bad:
        raise SystemExit(f"generator/checker disagree on {len(bad)} sentences, e.g. {bad[0]!r}")
    seen = set(train)
    stats = {
        "seed": args.seed, "heldout_seed": args.seed + 1, "train_sentences": len(train),
        "heldout_sentences": len(heldout), "distinct_train_sentences": len(seen), "language_size": space_size(),
        "heldout_verbatim_in_train": round(sum(s in seen for s in heldout) / max(1, len(heldout)), 4),
        "train_chars": sum(len(s) + 1 for s in train),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "train.txt").write_text("\n".join(train) + "\n")
    (args.out / "heldout.txt").write_text("\n".join(heldout) + "\n")
    (args.out / "stats.json").write_text(json.dumps(stats, indent=1) + "\n")
    print(json.dumps(stats))


if __name__ == "__main__":
    main()
