"""The study tables of the docs, generated from the measurements' JSON files.

A page marks each table it shows from a measurement between ``<!-- table: NAME -->`` and
``<!-- /table -->``; ``fill`` rewrites what lies between from ``TABLES[NAME]``, so a re-measurement
is one command away from the docs:

    python -m dllm_viz.studies.tables            # rewrites the marked tables of docs/*.md
    python -m dllm_viz.studies.tables --check    # exit status 1 when a page differs from its JSON

``tests/test_docs_tables.py`` fails while a page's table differs from what its JSON gives.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from dllm_viz.studies import lessons, revision_lessons, world_lessons

MARK = re.compile(r"(<!-- table: ([\w-]+) -->\n)(.*?)(<!-- /table -->)", re.S)
SHIPPED = ("shipped_llada", "shipped_dream", "shipped_fast_dllm")
# The Austen pairs' names in the table: the rule as shipped and the schedule both sides share.
SHIPPED_LABELS = {"shipped_llada": "LLaDA, fixed steps", "shipped_dream": "Dream, linear_time, top-p 0.95",
                  "shipped_fast_dllm": "Fast-dLLM, threshold 0.9, blocks of 16"}


def _ab(a: float, b: float, fmt: str, higher_is_better: bool | None) -> str:
    """``A / B`` with the better side in bold (none when `higher_is_better` is None or they tie)."""
    sa, sb = fmt.format(a), fmt.format(b)
    if higher_is_better is not None and sa != sb:
        if (a > b) == higher_is_better:
            sa = f"**{sa}**"
        else:
            sb = f"**{sb}**"
    return f"{sa} / {sb}"


def shipped_pairs_table(measured: dict[str, dict[str, Any]]) -> str:
    """The samplers as shipped against the article's rule on the embedded model (assets/lessons.json)."""
    lines = ["| pair (T = 1) | steps | mean raw log-prob A / B | repeated 3-grams A / B | distinct-2 A / B "
             "| draws per request A / B |", "|---|---:|---|---|---|---|"]
    for key in SHIPPED:
        a, b = measured[key]["a"], measured[key]["b"]
        lines.append(f"| {SHIPPED_LABELS[key]} | {a['steps']:.0f} "
                     f"| {_ab(a['mean_logprob'], b['mean_logprob'], '{:.2f}', True)} "
                     f"| {_ab(a['repeat_3'], b['repeat_3'], '{:.2%}', False)} "
                     f"| {_ab(a['distinct_2'], b['distinct_2'], '{:.3f}', True)} "
                     f"| {_ab(a['draws'], b['draws'], '{:.0f}', None)} |")
    return "\n".join(lines)


def _world() -> dict[str, Any]:
    return json.loads(world_lessons.WORLD_MEASURED_PATH.read_text(encoding="utf-8"))


# Each table: its name in the markers -> the Markdown it is, read from its JSON now.
TABLES: dict[str, Callable[[], str]] = {
    "world_studies": lambda: world_lessons.summary_table(_world()),  # assets/world/lessons.json
    "world_shipped_pairs": lambda: world_lessons.pairs_table(_world(), SHIPPED),  # assets/world/lessons.json
    "shipped_pairs": lambda: shipped_pairs_table(lessons.load_measured()),  # assets/lessons.json
    "revision_study": lambda: revision_lessons.readme_table(revision_lessons.load_revision()),  # world/revision.json
}


def fill(text: str, tables: dict[str, Callable[[], str]] | None = None) -> str:
    """`text` with every marked table rewritten from its source (`tables`, default `TABLES`); an unknown
    name is a ValueError."""
    tables = TABLES if tables is None else tables

    def one(m: re.Match[str]) -> str:
        name = m.group(2)
        if name not in tables:
            raise ValueError(f"table {name!r} is not one of {sorted(tables)}")
        return f"{m.group(1)}{tables[name]()}\n{m.group(4)}"
    return MARK.sub(one, text)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Rewrite the docs' marked study tables from their JSON files.")
    parser.add_argument("files", nargs="*", type=Path, help="Markdown files (default: docs/*.md)")
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 when a file differs")
    args = parser.parse_args(argv)
    stale = []
    for path in args.files or sorted(Path("docs").glob("*.md")):
        text = path.read_text(encoding="utf-8")
        new = fill(text)
        if new != text:
            stale.append(path)
            if not args.check:
                path.write_text(new, encoding="utf-8")
    for path in stale:
        print(f"{'differs' if args.check else 'rewrote'}: {path}")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
