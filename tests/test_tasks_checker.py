"""tasks.checker: every right answer accepted, every single-token corruption of one refused, and the
rule and cells of what is wrong."""
from __future__ import annotations

import pytest

from dllm_viz.tasks import FAMILIES, TOKENS, Task, answers, check, check_text, generate, parse

TASKS_PER_FAMILY = 6  # x every right answer x every position x every other token of the vocabulary


@pytest.mark.parametrize("family", FAMILIES)
def test_every_right_answer_passes_and_every_one_token_corruption_fails(family):
    """The issue's floor, exhaustively: for each task, each enumerated right answer (all n! orders of a
    shuffle, every completion of a Latin square) is accepted, and changing any one of its tokens into
    any other token of the vocabulary is refused."""
    checked = 0
    for task, drawn in generate(family, TASKS_PER_FAMILY, seed=3):
        right = answers(task)
        assert drawn in right
        for answer in right:
            assert check(task, answer).ok, (task.prompt, answer)
            for i, word in enumerate(answer):
                for other in TOKENS:
                    if other != word:
                        wrong = (*answer[:i], other, *answer[i + 1:])
                        verdict = check(task, wrong)
                        assert not verdict.ok and i in verdict.cells, (task.prompt, wrong, verdict)
                        checked += 1
    assert checked >= TASKS_PER_FAMILY * len(TOKENS)  # the loops ran


@pytest.mark.parametrize("prompt, answer, rule, cells", [
    ("copy : b e a =", "b e a", None, ()),
    ("copy : b e a =", "b a e", "place", (1, 2)),
    ("reverse : b e a =", "a e b", None, ()),
    ("reverse : b e a =", "b e a", "place", (0, 2)),
    ("sort : b e a =", "a b e", None, ()),
    ("sort : b e a =", "a e b", "order", (1, 2)),
    ("sort : b e a =", "a a b", "items", (0, 1)),
    ("replace 2 k : b e a =", "b k a", None, ()),
    ("replace 2 k : b e a =", "k e a", "place", (0, 1)),
    ("insert 2 k : b e a =", "b k e a", None, ()),
    ("insert 2 k : b e a =", "b e k a", "place", (1, 2)),
    ("insert 4 k : b e a =", "b e a k", None, ()),
    ("shuffle : b e a =", "b e a", None, ()),  # any order, the input's included
    ("shuffle : b e a =", "e a b", None, ()),
    ("shuffle : b e a =", "e e b", "items", (0, 1)),
    ("shuffle : b e a =", "e c b", "items", (1,)),
    ("copy : b e a =", "b e", "length", ()),
    ("copy : b e a =", "b e a a", "length", (3,)),
    ("copy : b e a =", "b 2 a", "alphabet", (1,)),
])
def test_list_verdicts_name_the_rule_and_the_cells(prompt, answer, rule, cells):
    verdict = check_text(prompt, answer)
    assert (verdict.rule, verdict.cells, verdict.ok) == (rule, cells, rule is None)
    assert bool(verdict.message) == (rule is not None)


LATIN = "latin : 1 _ _ _ _ _ _ _ _ _ _ _ _ _ _ 1 ="
SQUARE = "1 2 3 4 2 1 4 3 3 4 1 2 4 3 2 1"


def test_grid_verdicts_mark_every_conflicting_cell():
    assert check_text(LATIN, SQUARE).ok
    assert check_text("sudoku : " + " ".join("1 2 3 4 3 4 1 2 2 1 4 3 4 3 2 1".split()[:-1]) + " _ =",
                      "1 2 3 4 3 4 1 2 2 1 4 3 4 3 2 1").ok
    # Swapping two cells of row 0 keeps the rows right and breaks two columns: the four cells that clash.
    swapped = "2 1 3 4 2 1 4 3 3 4 1 2 4 3 2 1"
    verdict = check_text(LATIN, swapped)
    assert verdict.rule == "given" and verdict.cells == (0,)  # cell 0 was given as 1
    verdict = check_text("latin : _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ 1 =", swapped)
    assert (verdict.rule, verdict.cells) == ("column", (0, 1, 4, 5))
    # A Latin square that is not a sudoku: its 2x2 boxes repeat symbols.
    latin_only = "1 2 3 4 2 3 4 1 3 4 1 2 4 1 2 3"
    assert check_text("latin : _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ 3 =", latin_only).ok
    verdict = check_text("sudoku : 1 2 3 4 3 4 1 2 2 1 4 3 4 3 2 _ =", latin_only)
    assert verdict.rule == "given"
    assert check(parse("sudoku : _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ 3 ="), latin_only.split()).rule == "box"


def test_check_refuses_what_is_not_a_task():
    with pytest.raises(ValueError, match="task="):
        check("copy : a b c =", ["a", "b", "c"])
    with pytest.raises(ValueError, match="prompt"):
        check_text("copy a b c", "a b c")
    assert isinstance(parse("copy : a b c ="), Task)
