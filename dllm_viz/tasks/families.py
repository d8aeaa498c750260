"""The task families, modelled on ParallelBench's (furiosa-ai/ParallelBench, ICLR 2026): what a task
is, how its prompt is written and read, and a seeded generator of tasks with a right answer each.

ParallelBench's "waiting line" tasks edit a list of 3-6 names (`parallelbench/datasets/
task_generators.py`: `generate_copy_task`, `generate_reverse_task`, `generate_sort_task`,
`generate_replace_task`, `generate_insert_task`, `generate_shuffle_task`; lengths from
`data/task_configs/test/waiting_line.yaml`) and its puzzles fill 4x4 grids
(`generate_latin_square_task`, `generate_sudoku_task`, `test/puzzles.yaml`). Ours keep the
operations and sizes with a vocabulary small enough to enumerate every answer (`vocab.py`):

| family | prompt | right answers |
|---|---|---|
| copy | ``copy : b e a =`` | ``b e a`` |
| reverse | ``reverse : b e a =`` | ``a e b`` |
| sort | ``sort : b e a =`` | ``a b e`` |
| replace | ``replace 2 k : b e a =`` | ``b k a`` (item 2 becomes k) |
| insert | ``insert 2 k : b e a =`` | ``b k e a`` (k becomes item 2) |
| shuffle | ``shuffle : b e a =`` | any order of the same items (3! of them) |
| latin | ``latin :`` 16 cells, ``_`` empty, ``=`` | every Latin square that keeps the filled cells |
| sudoku | ``sudoku :`` 16 cells ``=`` | the one solution |

Lists hold 3-6 distinct items of a-l; a new item (replace, insert) is not in the list; positions
are 1-based. Where ours differ from ParallelBench's: a shuffle may return the input order (the
issue's rule: any permutation; ParallelBench's `list_shuffle_score` also asks for a change); a
Latin square starts from 2-4 filled cells of a random square, so it has many right answers (16
typical; ParallelBench asks for a square from nothing, 576 answers); a sudoku keeps 6-10 holes
(ParallelBench: 8) and is built to have exactly one solution, reachable by naked singles, where
ParallelBench compares with the grid it started from. The answer has exactly `Task.answer_length`
tokens: a decode's ``gen_length``.

Generated answers follow the task's distribution of right answers: a shuffle is a uniform
permutation; a Latin square is drawn uniformly from all 576 before cells are hidden at positions
drawn independently of it, so given the visible cells it is uniform over their completions. A
model trained on them learns what `oracle.TaskOracle` computes exactly.
"""
from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from dllm_viz.tasks.grids import (
    CELLS, LATIN_SQUARES, LATIN_UNITS, SUDOKU_UNITS, SUDOKUS, Grid, completions, repeated, solve_by_singles,
)
from dllm_viz.tasks.vocab import COLON, DIGITS, EQUALS, FAMILIES, HOLE, ITEMS, SYMBOLS

LIST_FAMILIES = ("copy", "reverse", "sort", "replace", "insert", "shuffle")
GRID_FAMILIES = ("latin", "sudoku")
INDEXED = ("replace", "insert")  # families whose prompt names a position and a new item
LIST_LENGTHS = (3, 6)  # ParallelBench's waiting line: min_length 3, max_length 6
LATIN_GIVENS = (2, 4)  # filled cells of a Latin square prompt
SUDOKU_HOLES = (6, 10)  # empty cells of a sudoku prompt (fewer when no more can go and stay solvable by singles)
UNITS = {"latin": LATIN_UNITS, "sudoku": SUDOKU_UNITS}
# One prompt per family, in FAMILIES order: the playground's examples for the tasks model.
EXAMPLE_PROMPTS = (
    "copy : b e a d =", "reverse : h c a f =", "sort : k d h a f =", "replace 2 k : b e a d =",
    "insert 3 k : b e a d =", "shuffle : b e a d =", "latin : _ _ _ 1 _ _ _ _ 1 _ _ _ _ _ _ 3 =",
    "sudoku : 1 _ _ _ _ _ _ _ 2 _ 4 _ 4 3 _ 2 =",
)
if LIST_FAMILIES + GRID_FAMILIES != FAMILIES:
    raise ImportError(f"families: {LIST_FAMILIES + GRID_FAMILIES} must list vocab.FAMILIES {FAMILIES} in order")


def _bad(what: str, allowed: str) -> ValueError:
    return ValueError(f"prompt: {what} is invalid: expected {allowed}")


@dataclass(frozen=True)
class Task:
    """One task: its family and arguments; validated, so every Task has at least one right answer."""

    family: str  # one of vocab.FAMILIES
    cells: tuple[str, ...]  # the list's items, or the grid's 16 cells row by row (HOLE where empty)
    index: int | None = None  # replace, insert: the 1-based position
    item: str | None = None  # replace, insert: the new item

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise _bad(f"family {self.family!r}", "one of " + " | ".join(FAMILIES))
        if self.family in GRID_FAMILIES:
            self._check_grid()
        else:
            self._check_list()

    def _check_list(self) -> None:
        lo, hi = LIST_LENGTHS
        if not lo <= len(self.cells) <= hi or any(c not in ITEMS for c in self.cells):
            raise _bad(f"list {' '.join(self.cells)!r}", f"{lo}-{hi} items of {' '.join(ITEMS)}")
        if len(set(self.cells)) != len(self.cells):
            raise _bad(f"list {' '.join(self.cells)!r}", "distinct items")
        if self.family not in INDEXED:
            if self.index is not None or self.item is not None:
                raise _bad(f"{self.family} with a position", f"'{self.family} : items ='")
            return
        last = len(self.cells) + (self.family == "insert")
        if not isinstance(self.index, int) or not 1 <= self.index <= last:
            raise _bad(f"position {self.index!r}", f"a position in 1-{last}")
        if self.item not in ITEMS or self.item in self.cells:
            raise _bad(f"new item {self.item!r}", "an item of a-l that is not in the list")

    def _check_grid(self) -> None:
        if len(self.cells) != CELLS or any(c not in SYMBOLS and c != HOLE for c in self.cells):
            raise _bad(f"grid of {len(self.cells)} cells", f"{CELLS} cells, each one of {' '.join(SYMBOLS)} or {HOLE}")
        if self.index is not None or self.item is not None:
            raise _bad(f"{self.family} with a position", f"'{self.family} : 16 cells ='")
        if not completions(self.cells, UNITS[self.family]):
            clash = "repeats a symbol in a unit" if repeated(self.cells, UNITS[self.family]) else "cannot be completed"
            raise _bad(f"grid {' '.join(self.cells)!r}", f"filled cells that some valid grid keeps (this one {clash})")

    def words(self) -> tuple[str, ...]:
        """The prompt, word by word: ``family [position item] : cells =``."""
        head = (self.family,) if self.index is None else (self.family, str(self.index), self.item)
        return (*head, COLON, *self.cells, EQUALS)

    @property
    def prompt(self) -> str:
        return " ".join(self.words())

    @property
    def answer_length(self) -> int:
        """Tokens in a right answer: the decode's gen_length."""
        return len(self.cells) + (self.family == "insert")


def parse(prompt: str) -> Task:
    """The task a prompt states (``Task.prompt``'s inverse); ValueError naming what is wrong."""
    if not isinstance(prompt, str):
        raise ValueError(f"prompt={prompt!r}: expected a str")
    words = prompt.split()
    if len(words) < 3 or words[-1] != EQUALS or COLON not in words:
        raise _bad(repr(prompt[:60]), "'family [position item] : cells ='")
    colon = words.index(COLON)
    head, cells = words[:colon], tuple(words[colon + 1:-1])
    family, args = head[0], head[1:]
    if family in INDEXED:
        if len(args) != 2 or args[0] not in DIGITS:
            raise _bad(repr(" ".join(head)), f"'{family} position item' with a position in 1-{len(DIGITS)}")
        return Task(family, cells, int(args[0]), args[1])
    if args:
        raise _bad(repr(" ".join(head)), f"'{family}' alone before ':'")
    return Task(family, cells)


# ----- the generator -------------------------------------------------------------------------------------------
def right_answer(task: Task, rng: random.Random | None = None) -> tuple[str, ...]:
    """A right answer, built the way the task states it. Shuffle and Latin squares have many: with
    ``rng`` one is drawn uniformly (the training distribution), without it the first in order."""
    items = list(task.cells)
    family = task.family
    if family == "copy":
        return tuple(items)
    if family == "reverse":
        return tuple(reversed(items))
    if family == "sort":
        return tuple(sorted(items))
    if family == "replace":
        items[task.index - 1] = task.item
        return tuple(items)
    if family == "insert":
        items.insert(task.index - 1, task.item)
        return tuple(items)
    if family == "shuffle":
        return tuple(rng.sample(items, len(items))) if rng else tuple(items)
    grids = completions(task.cells, UNITS[family])
    return rng.choice(grids) if rng else grids[0]


def _list_task(family: str, rng: random.Random) -> Task:
    items = tuple(rng.sample(ITEMS, rng.randint(*LIST_LENGTHS)))
    if family not in INDEXED:
        return Task(family, items)
    index = rng.randint(1, len(items) + (family == "insert"))
    return Task(family, items, index, rng.choice([i for i in ITEMS if i not in items]))


def _latin(rng: random.Random) -> tuple[Task, Grid]:
    square = rng.choice(LATIN_SQUARES)
    keep = set(rng.sample(range(CELLS), rng.randint(*LATIN_GIVENS)))
    return Task("latin", tuple(s if i in keep else HOLE for i, s in enumerate(square))), square


def _sudoku(rng: random.Random) -> tuple[Task, Grid]:
    """Hide cells of a random sudoku in random order, each only if naked singles still solve the puzzle."""
    solution = rng.choice(SUDOKUS)
    target, puzzle = rng.randint(*SUDOKU_HOLES), list(solution)
    for cell in rng.sample(range(CELLS), CELLS):
        if puzzle.count(HOLE) == target:
            break
        trial = [*puzzle[:cell], HOLE, *puzzle[cell + 1:]]
        if solve_by_singles(tuple(trial), SUDOKU_UNITS) == solution:
            puzzle = trial
    return Task("sudoku", tuple(puzzle)), solution


def draw(family: str, rng: random.Random) -> tuple[Task, tuple[str, ...]]:
    """One task of ``family`` and a right answer drawn from the task's distribution of right answers."""
    if family == "latin":
        return _latin(rng)
    if family == "sudoku":
        return _sudoku(rng)
    task = _list_task(family, rng)
    return task, right_answer(task, rng)


GENERATORS: dict[str, Callable[[random.Random], tuple[Task, tuple[str, ...]]]] = {
    f: (lambda rng, f=f: draw(f, rng)) for f in FAMILIES
}


def generate(family: str, n: int, seed: int) -> list[tuple[Task, tuple[str, ...]]]:
    """``n`` (task, answer) pairs of one family from ``random.Random(seed)``: the same arguments always
    give the same list, and a prefix of a longer one."""
    if family not in FAMILIES:
        raise ValueError(f"family={family!r} is invalid: expected one of {' | '.join(FAMILIES)}")
    if not isinstance(n, int) or n < 0:
        raise ValueError(f"n={n!r} is invalid: expected an integer >= 0")
    if not isinstance(seed, int):
        raise ValueError(f"seed={seed!r} is invalid: expected an integer")
    rng = random.Random(f"{family}/{seed}")
    return [draw(family, rng) for _ in range(n)]


def prompts(family: str, n: int, seed: int) -> list[Task]:
    """The tasks alone (a benchmark's prompts)."""
    return [task for task, _ in generate(family, n, seed)]


def answer_words(text: str) -> tuple[str, ...]:
    """A decoded answer read back as words (the checker's input)."""
    return tuple(text.split())


def lines(pairs: Sequence[tuple[Task, tuple[str, ...]]]) -> list[str]:
    """Training lines ``prompt<TAB>answer`` (the trainer's ``--pairs`` format)."""
    return [f"{task.prompt}\t{' '.join(answer)}" for task, answer in pairs]
