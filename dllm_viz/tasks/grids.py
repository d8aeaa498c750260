"""4x4 grids: the units a Latin square and a sudoku constrain, every valid grid, and a singles solver.

Cells are numbered row by row, 0-15. A Latin square of order 4 holds each symbol once in every
row and every column (576 squares); a 4x4 sudoku also once in each 2x2 box (288 of them). Both
sets are small enough to list, which is what makes the oracle exact (`oracle.answers`).
"""
from __future__ import annotations

from collections.abc import Sequence

from dllm_viz.tasks.vocab import HOLE, SYMBOLS

SIZE = 4
CELLS = SIZE * SIZE
ROWS = tuple(tuple(r * SIZE + c for c in range(SIZE)) for r in range(SIZE))
COLUMNS = tuple(tuple(r * SIZE + c for r in range(SIZE)) for c in range(SIZE))
BOXES = tuple(tuple((2 * br + r) * SIZE + 2 * bc + c for r in range(2) for c in range(2))
              for br in range(2) for bc in range(2))
LATIN_UNITS = ROWS + COLUMNS
SUDOKU_UNITS = ROWS + COLUMNS + BOXES
Grid = tuple[str, ...]  # (16,) symbols, or HOLE for an empty cell


def _fill(units: tuple[tuple[int, ...], ...]) -> tuple[Grid, ...]:
    """Every full grid in which no unit repeats a symbol, in lexicographic order (backtracking by cell)."""
    peers = [sorted({j for u in units if i in u for j in u if j < i}) for i in range(CELLS)]
    out: list[Grid] = []
    grid: list[str] = []

    def place(i: int) -> None:
        if i == CELLS:
            out.append(tuple(grid))
            return
        for s in SYMBOLS:
            if all(grid[j] != s for j in peers[i]):
                grid.append(s)
                place(i + 1)
                grid.pop()

    place(0)
    return tuple(out)


LATIN_SQUARES = _fill(LATIN_UNITS)  # 576
SUDOKUS = _fill(SUDOKU_UNITS)  # 288


def consistent(grid: Grid, puzzle: Grid) -> bool:
    """``grid`` agrees with every filled cell of ``puzzle``."""
    return all(p == HOLE or p == g for p, g in zip(puzzle, grid))


def completions(puzzle: Grid, units: tuple[tuple[int, ...], ...]) -> tuple[Grid, ...]:
    """The valid grids (of the family whose units are given) that agree with the puzzle's filled cells."""
    grids = SUDOKUS if units == SUDOKU_UNITS else LATIN_SQUARES
    return tuple(g for g in grids if consistent(g, puzzle))


def repeated(cells: Sequence[str], units: tuple[tuple[int, ...], ...]) -> dict[int, tuple[int, ...]]:
    """Cells that share a symbol with another cell of one of their units: cell -> the units (indices
    into ``units``) where it does. Holes and words that are not symbols never count."""
    out: dict[int, list[int]] = {}
    for u, unit in enumerate(units):
        for i in unit:
            if cells[i] in SYMBOLS and sum(cells[j] == cells[i] for j in unit) > 1:
                out.setdefault(i, []).append(u)
    return {i: tuple(us) for i, us in sorted(out.items())}


def solve_by_singles(puzzle: Grid, units: tuple[tuple[int, ...], ...]) -> Grid | None:
    """Fill the puzzle by "naked singles" alone (a hole whose units leave one symbol is that symbol,
    repeatedly); None when it gets stuck or meets a contradiction. A puzzle this solves has exactly
    one completion, reachable one cell at a time by local reasoning."""
    grid = list(puzzle)
    while HOLE in grid:
        progress = False
        for i in range(CELLS):
            if grid[i] != HOLE:
                continue
            seen = {grid[j] for u in units if i in u for j in u}
            left = [s for s in SYMBOLS if s not in seen]
            if not left:
                return None
            if len(left) == 1:
                grid[i], progress = left[0], True
        if not progress:
            return None
    return tuple(grid) if not repeated(grid, units) else None
