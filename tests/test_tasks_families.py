"""tasks.families: prompts read back as the tasks they state, seeded generation, answers drawn as the
task's right answers are distributed, and refusals that name what is wrong."""
from __future__ import annotations

import random
from collections import Counter

import pytest

from dllm_viz.tasks import FAMILIES, Task, answers, check, generate, lines, parse, prompts, right_answer
from dllm_viz.tasks.families import LATIN_GIVENS, LIST_LENGTHS, SUDOKU_HOLES, draw
from dllm_viz.tasks.grids import SUDOKU_UNITS, solve_by_singles


@pytest.mark.parametrize("family", FAMILIES)
def test_generation_is_seeded_and_every_prompt_parses_back(family):
    pairs = generate(family, 40, seed=5)
    assert pairs == generate(family, 40, seed=5) and pairs[:10] == generate(family, 10, seed=5)
    assert pairs != generate(family, 40, seed=6)
    for task, answer in pairs:
        assert task.family == family and parse(task.prompt) == task
        assert task.words()[0] == family and task.prompt.endswith(" =")
        assert len(answer) == task.answer_length and check(task, answer).ok
    assert prompts(family, 40, 5) == [t for t, _ in pairs]


@pytest.mark.parametrize("prompt, answer", [
    ("copy : b e a =", "b e a"), ("reverse : b e a =", "a e b"), ("sort : l c h a =", "a c h l"),
    ("replace 1 k : b e a =", "k e a"), ("replace 3 k : b e a =", "b e k"),
    ("insert 1 k : b e a =", "k b e a"), ("insert 4 k : b e a =", "b e a k"),
])
def test_right_answer_of_the_determined_families(prompt, answer):
    assert " ".join(right_answer(parse(prompt))) == answer
    assert answers(parse(prompt)) == (tuple(answer.split()),)


def test_sizes_follow_parallelbench_and_sudokus_have_one_solution_by_singles():
    lo, hi = LIST_LENGTHS
    lengths = Counter(len(t.cells) for f in ("copy", "shuffle") for t in prompts(f, 200, 1))
    assert set(lengths) == set(range(lo, hi + 1))
    givens = Counter(16 - t.cells.count("_") for t in prompts("latin", 200, 1))
    assert set(givens) == set(range(LATIN_GIVENS[0], LATIN_GIVENS[1] + 1))
    for task in prompts("sudoku", 100, 1):
        assert SUDOKU_HOLES[0] <= task.cells.count("_") <= SUDOKU_HOLES[1]
        assert len(answers(task)) == 1 and solve_by_singles(task.cells, SUDOKU_UNITS) == answers(task)[0]
    assert max(len(answers(t)) for t in prompts("latin", 50, 1)) > 10  # Latin squares: many right answers


def test_drawn_answers_are_uniform_over_the_right_ones():
    """A shuffle's drawn order: each of the 3! orders of a 3-item list about equally often (600 draws,
    fixed seed). A Latin square's drawn square, given its visible cells: all its completions occur."""
    rng, counts = random.Random(0), Counter()
    task = parse("shuffle : c a b =")
    for _ in range(600):
        counts[right_answer(task, rng)] += 1
    assert set(counts) == set(answers(task)) and all(70 <= c <= 130 for c in counts.values()), counts
    latin = parse("latin : 1 _ _ _ _ 2 _ _ _ _ 3 _ _ _ _ 4 =")
    drawn = Counter(right_answer(latin, rng) for _ in range(2000))
    assert set(drawn) == set(answers(latin)) and len(drawn) >= 2


@pytest.mark.parametrize("prompt, says", [
    ("copy : a b =", "3-6 items"), ("copy : a b c d e f g =", "3-6 items"), ("copy : a a b =", "distinct"),
    ("copy : a b 1 =", "items of a b c"), ("replace 4 k : a b c =", "position in 1-3"),
    ("insert 5 k : a b c =", "position in 1-4"), ("replace 1 b : a b c =", "not in the list"),
    ("replace x k : a b c =", "position"), ("sort 1 : a b c =", "alone"),
    ("latin : 1 1 _ _ _ _ _ _ _ _ _ _ _ _ _ _ =", "repeats"), ("latin : 1 2 3 =", "16 cells"),
    ("frob : a b c =", "one of copy"), ("copy a b c", "cells ="), ("copy : a b c", "cells ="),
])
def test_bad_prompts_are_refused_naming_what_is_wrong(prompt, says):
    with pytest.raises(ValueError, match="prompt") as info:
        parse(prompt)
    assert says in str(info.value), str(info.value)


def test_generate_checks_its_arguments_and_lines_are_the_trainers_pairs():
    for bad in ({"family": "frob", "n": 1, "seed": 0}, {"family": "copy", "n": -1, "seed": 0},
                {"family": "copy", "n": 1, "seed": "0"}):
        with pytest.raises(ValueError, match=next(k for k, v in bad.items() if v in ("frob", -1, "0"))):
            generate(**bad)
    pair = draw("insert", random.Random(1))
    assert lines([pair]) == [f"{pair[0].prompt}\t{' '.join(pair[1])}"]
    assert isinstance(pair[0], Task)
