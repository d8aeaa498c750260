"""``check(task, answer) -> Verdict``: is an answer right, and which of its cells break which rule.

Each family's rule is checked as a property of the answer, not by comparing with one built answer
(`families.right_answer` builds one; the tests check the two agree): copy keeps every item in
place, reverse mirrors it, sort holds the same items in increasing order, replace and insert
change the list only at the named position, shuffle holds each item once, and a grid keeps its
filled cells with no symbol twice in a row, a column or (sudoku) a 2x2 box. ParallelBench scores
the same families (furiosa-ai/ParallelBench, `parallelbench/datasets/metrics.py`:
`list_match_score`, `list_shuffle_score`, `latin_square_score`, `sudoku_score`); ours read token
words, not free text, since the decode writes exactly `Task.answer_length` tokens.

``Verdict.cells`` are the answer positions to mark (for a grid, the conflicting cells).
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from dllm_viz.tasks.families import GRID_FAMILIES, Task, parse
from dllm_viz.tasks.grids import BOXES, COLUMNS, ROWS, repeated
from dllm_viz.tasks.vocab import HOLE, ITEMS, SYMBOLS

# What can be wrong, in the order the checker looks: the first rule broken is the verdict's rule.
RULES = ("length", "alphabet", "place", "order", "items", "given", "row", "column", "box")


@dataclass(frozen=True)
class Verdict:
    """The checker's answer for one (task, answer)."""

    rule: str | None  # the first of RULES broken; None when the answer is right
    cells: tuple[int, ...]  # answer positions that break it (sorted)
    message: str  # what is wrong, in words; "" when right

    @property
    def ok(self) -> bool:
        return self.rule is None


RIGHT = Verdict(None, (), "")


def _wrong(rule: str, cells, message: str) -> Verdict:
    return Verdict(rule, tuple(sorted(set(cells))), message)


def _list(task: Task, answer: Sequence[str]) -> Verdict:
    items, family = task.cells, task.family
    n = len(items)
    if family == "shuffle":
        counts, have = Counter(answer), set(items)
        bad = [i for i, w in enumerate(answer) if w not in have or counts[w] > 1]
        return _wrong("items", bad, "each item of the list exactly once") if bad else RIGHT
    if family == "sort":
        bad = [i for i, w in enumerate(answer) if w not in items or answer.count(w) > 1]
        if bad:
            return _wrong("items", bad, "each item of the list exactly once")
        bad = [j for i in range(n - 1) if answer[i] > answer[i + 1] for j in (i, i + 1)]
        return _wrong("order", bad, "the items in alphabetical order") if bad else RIGHT
    if family == "copy":
        expect = {i: items[i] for i in range(n)}
    elif family == "reverse":
        expect = {i: items[n - 1 - i] for i in range(n)}
    elif family == "replace":
        expect = {i: task.item if i == task.index - 1 else items[i] for i in range(n)}
    else:  # insert: the item at its position, the list around it
        at = task.index - 1
        expect = {i: task.item if i == at else items[i - (i > at)] for i in range(n + 1)}
    bad = [i for i, w in expect.items() if answer[i] != w]
    return _wrong("place", bad, f"the list after '{' '.join(task.words()[:-1])}'") if bad else RIGHT


def _grid(task: Task, answer: Sequence[str]) -> Verdict:
    changed = [i for i, g in enumerate(task.cells) if g != HOLE and answer[i] != g]
    if changed:
        return _wrong("given", changed, "the filled cells of the puzzle kept")
    kinds = {"row": ROWS, "column": COLUMNS, "box": BOXES if task.family == "sudoku" else ()}
    clashes = {rule: repeated(answer, units) for rule, units in kinds.items()}  # rule -> {cell: units}
    broken = [rule for rule, cells in clashes.items() if cells]
    if not broken:
        return RIGHT
    cells = [i for rule in broken for i in clashes[rule]]  # every conflicting cell, whatever its unit
    return _wrong(broken[0], cells, "each symbol once in every " + " and ".join(broken))


def check(task: Task, answer: Sequence[str]) -> Verdict:
    """The verdict on ``answer`` (a sequence of words) for ``task``."""
    if not isinstance(task, Task):
        raise ValueError(f"task={task!r}: expected a Task (tasks.parse(prompt) makes one)")
    answer = tuple(answer)
    if len(answer) != task.answer_length:
        cells = range(task.answer_length, len(answer)) if len(answer) > task.answer_length else ()
        return _wrong("length", cells, f"{task.answer_length} tokens, got {len(answer)}")
    alphabet = SYMBOLS if task.family in GRID_FAMILIES else ITEMS
    foreign = [i for i, w in enumerate(answer) if w not in alphabet]
    if foreign:
        return _wrong("alphabet", foreign, "only " + " ".join(alphabet))
    return _grid(task, answer) if task.family in GRID_FAMILIES else _list(task, answer)


def check_text(prompt: str, answer: str) -> Verdict:
    """`check` on text: the prompt as `families.parse` reads it, the answer as words."""
    return check(parse(prompt), answer.split())
