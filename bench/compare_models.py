"""Two models side by side, from the JSON records ``bench/model_quality.py --json`` writes.

    python bench/compare_models.py bench/baselines/austen-mdlm-phase5.json NEW.json \
        --labels "phase 5 (shipped)" "new"                 # markdown for the model card

Prints (1) the figures of every preset, old -> new (dict%, judge fluency, gain ratio, T=0 loops)
and the held-out bits/char, with the words outside the dictionary by how they were spelled when both
records have them (``model_quality.py --word-errors``), and (2) the fixed samples the issue asks the
card to show: for each preset, one sample per prompt (the same seed index for both models), old beside new. The records
must come from the same prompts, generation length and seed count, or the samples would not be
the same requests; a mismatch raises ``ValueError`` naming the field. Nothing is decoded here.
"""
from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

Record = dict[str, Any]
# (record key in presets[name], column title, format)
FIGURES = (
    ("dict%", "dict%", "{:.1f}"),
    ("fluency", "fluency (ppl ratio)", "{:.2f}"),
    ("gain", "gain ratio", "{:.2f}"),
    ("greedy_loop_share", "T=0 loops", "{:.2f}"),
)
MUST_MATCH = ("prompts", "gen_length", "seeds")


def check_comparable(old: Record, new: Record) -> None:
    """Raise ``ValueError`` unless both records decoded the same requests."""
    for field in MUST_MATCH:
        if old.get(field) != new.get(field):
            raise ValueError(f"records differ in {field!r} ({old.get(field)!r} vs {new.get(field)!r}): "
                             "run bench/model_quality.py with the same prompts, --gen-length and --seeds")


def _cell(value: Any, fmt: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return fmt.format(value)


def figure_table(old: Record, new: Record) -> str:
    """Markdown: one row per preset both records measured, each figure as ``old -> new``."""
    check_comparable(old, new)
    names = [n for n in old["presets"] if n in new["presets"]]
    if not names:
        raise ValueError("records share no preset: pass --presets with at least one in common")
    lines = ["| preset | " + " | ".join(title for _, title, _ in FIGURES) + " |",
             "|---" * (len(FIGURES) + 1) + "|"]
    for name in names:
        a, b = old["presets"][name], new["presets"][name]
        cells = [f"{_cell(a.get(k), fmt)} -> {_cell(b.get(k), fmt)}" for k, _, fmt in FIGURES]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    bits = [(r.get("heldout_bits") or {}).get("bits_per_char") for r in (old, new)]
    lines.append("")
    lines.append(f"Held-out bits/char: {_cell(bits[0], '{:.3f}')} -> {_cell(bits[1], '{:.3f}')}")
    return "\n".join(lines)


# (key in presets[name]["word_errors"], column title): counts, shown in points of all words
WORD_ERRORS = (
    ("not_in_dictionary", "not in dictionary"),
    ("one_piece", "one piece"),
    ("one_piece_author", "of them the author's own words"),
    ("joined_in_one_step", "pieces joined in one step"),
    ("joined_across_steps", "pieces joined across steps"),
)


def word_error_table(old: Record, new: Record) -> str | None:
    """Markdown: the words outside the dictionary by how they were spelled (``model_quality.py
    --word-errors``), in points of all words, ``old -> new``; None unless both records have them."""
    check_comparable(old, new)
    names = [n for n in old["presets"] if "word_errors" in old["presets"][n]
             and "word_errors" in new["presets"].get(n, {})]
    if not names:
        return None
    lines = ["| preset | " + " | ".join(title for _, title in WORD_ERRORS) + " |",
             "|---" * (len(WORD_ERRORS) + 1) + "|"]
    for name in names:
        a, b = old["presets"][name]["word_errors"], new["presets"][name]["word_errors"]
        cells = [" -> ".join(_cell(100 * c[k] / c["words"] if c.get("words") else None, "{:.1f}") for c in (a, b))
                 for k, _ in WORD_ERRORS]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def sample_sections(old: Record, new: Record, labels: tuple[str, str], seed_index: int = 0) -> str:
    """Markdown: per preset, per prompt, the sample of seed ``seed_index`` from each record."""
    check_comparable(old, new)
    seeds = old["seeds"]
    if not 0 <= seed_index < seeds:
        raise ValueError(f"seed_index must be in [0, {seeds - 1}] (the records hold {seeds} seeds), got {seed_index}")
    out = []
    for name in (n for n in old["samples"] if n in new["samples"]):
        out.append(f"#### {name}\n")
        for i, prompt in enumerate(old["prompts"]):
            j = i * seeds + seed_index  # model_quality orders samples prompt-major, seed-minor
            quotes = [f"> **{label}:** {' '.join(record['samples'][name][j].split())}"
                      for label, record in zip(labels, (old, new))]
            out += [f"*{prompt}* ...", "\n>\n".join(quotes), ""]
    return "\n".join(out).rstrip() + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("old", type=Path)
    parser.add_argument("new", type=Path)
    parser.add_argument("--labels", nargs=2, default=("old", "new"))
    parser.add_argument("--seed-index", type=int, default=0, help="which seed's sample to show per prompt")
    parser.add_argument("--no-samples", action="store_true")
    args = parser.parse_args(argv)
    old, new = (json.loads(p.read_text()) for p in (args.old, args.new))
    print(figure_table(old, new))
    words = word_error_table(old, new)
    if words is not None:
        print("\nWords outside the dictionary, points of all words:\n")
        print(words)
    if not args.no_samples:
        print()
        print(sample_sections(old, new, tuple(args.labels), args.seed_index))


if __name__ == "__main__":
    main()
