"""tasks.grids: every 4x4 Latin square and sudoku, conflicts, completions, the singles solver."""
from __future__ import annotations

from dllm_viz.tasks.grids import (
    BOXES, COLUMNS, LATIN_SQUARES, LATIN_UNITS, ROWS, SUDOKU_UNITS, SUDOKUS, completions, consistent, repeated,
    solve_by_singles,
)

SQUARE = tuple("1234214334124321")  # a Latin square, not a sudoku (box 0 holds 1 2 2 1)


def test_there_are_576_latin_squares_and_288_sudokus_all_valid_and_distinct():
    assert len(LATIN_SQUARES) == len(set(LATIN_SQUARES)) == 576
    assert len(SUDOKUS) == len(set(SUDOKUS)) == 288 and set(SUDOKUS) <= set(LATIN_SQUARES)
    assert all(not repeated(g, LATIN_UNITS) for g in LATIN_SQUARES)
    assert all(not repeated(g, SUDOKU_UNITS) for g in SUDOKUS)
    assert SQUARE in LATIN_SQUARES and SQUARE not in SUDOKUS
    assert sorted(i for u in ROWS for i in u) == sorted(i for u in COLUMNS for i in u) == sorted(
        i for u in BOXES for i in u) == list(range(16))


def test_repeated_names_each_clashing_cell_and_its_units():
    grid = list(SQUARE)
    grid[0], grid[1] = grid[1], grid[0]  # rows still fine; columns 0 and 1 now repeat
    assert repeated(grid, ROWS) == {}
    assert repeated(grid, COLUMNS) == {0: (0,), 1: (1,), 4: (0,), 5: (1,)}
    assert set(repeated(SQUARE, BOXES)) == set(range(16))  # every box holds two symbols twice
    assert repeated(["_"] * 16, ROWS) == {}


def test_completions_keep_the_filled_cells():
    puzzle = tuple("1______3________")
    found = completions(puzzle, LATIN_UNITS)
    assert found and all(consistent(g, puzzle) for g in found)
    assert len(found) == sum(g[0] == "1" and g[7] == "3" for g in LATIN_SQUARES)
    assert completions(tuple("11" + "_" * 14), LATIN_UNITS) == ()


def test_singles_solve_a_puzzle_they_can_and_stop_where_they_cannot():
    solution = SUDOKUS[100]
    puzzle = tuple("_" if i in (0, 5, 10, 15) else s for i, s in enumerate(solution))
    assert solve_by_singles(puzzle, SUDOKU_UNITS) == solution
    assert solve_by_singles(tuple("_" * 16), SUDOKU_UNITS) is None
