"""tasks.oracle: the enumerated answers are exactly the ones the checker accepts, the marginals are exact,
and the issue's floors for a perfect model: one token per step always right; every token in one step
right for copy and wrong for shuffle and Latin squares."""
from __future__ import annotations

import itertools
import math

import pytest
import torch

from dllm_viz import decode
from dllm_viz.tasks import FAMILIES, TOKENS, TaskOracle, answers, check, parse, prompts, total_correlation
from dllm_viz.studies.curves import KNOBS, PROMPT_SEED, PROMPTS_PER_FAMILY, point
from dllm_viz.tasks.vocab import IDS, SYMBOLS


@pytest.fixture(scope="module")
def oracle():
    return TaskOracle()


@pytest.mark.parametrize("prompt", [
    "copy : b e a d =", "reverse : b e a d =", "sort : b e a d c =", "replace 3 k : b e a d =",
    "insert 5 k : b e a d =", "shuffle : b e a d c =",
    "latin : 1 _ 3 _ _ 1 _ 3 3 _ 1 _ _ 3 _ 1 =", "sudoku : 1 _ 3 _ _ 4 _ 2 2 _ 4 _ _ 3 _ 1 =",
])
def test_answers_are_exactly_what_the_checker_accepts(prompt):
    """Brute force over every answer of the right length from the task's own words (a list's items and
    new item; a grid's symbols in its empty cells): the accepted ones are `answers`, each once."""
    task = parse(prompt)
    if task.family in ("latin", "sudoku"):
        holes = [i for i, c in enumerate(task.cells) if c == "_"]
        candidates = []
        for fill in itertools.product(SYMBOLS, repeat=len(holes)):
            cells = list(task.cells)
            for i, s in zip(holes, fill):
                cells[i] = s
            candidates.append(tuple(cells))
    else:
        words = sorted(set(task.cells) | ({task.item} if task.item else set()))
        candidates = list(itertools.product(words, repeat=task.answer_length))
    accepted = {c for c in candidates if check(task, c).ok}
    assert accepted == set(answers(task)) and len(answers(task)) == len(accepted) >= 1


def test_marginals_are_shares_of_the_consistent_answers(oracle):
    task = parse("shuffle : b e a d =")
    prompt = oracle.tokenizer.encode(task.prompt)
    mask = oracle.mask_token_id
    canvas = torch.tensor([prompt + [mask, IDS["a"], mask, mask]])
    probs = oracle(canvas).softmax(-1)[0, len(prompt):]  # (4, V)
    for j in (0, 2, 3):  # b, e, d left, one third each; a is taken
        assert {TOKENS[i]: round(float(p), 6) for i, p in enumerate(probs[j]) if p > 1e-6} == \
            {"b": round(1 / 3, 6), "e": round(1 / 3, 6), "d": round(1 / 3, 6)}
    assert float(probs[1, IDS["a"]]) == pytest.approx(1.0)
    latin = parse("latin : 1 _ _ _ _ _ _ 3 _ _ _ _ _ _ _ _ =")
    right = answers(latin)
    ids = oracle.tokenizer.encode(latin.prompt) + [mask] * 16
    probs = oracle(torch.tensor([ids])).softmax(-1)[0, -16:]  # (16, V)
    for cell in range(16):
        for s in SYMBOLS:
            share = sum(a[cell] == s for a in right) / len(right)
            assert float(probs[cell, IDS[s]]) == pytest.approx(share, abs=1e-6)


def test_a_batch_with_padding_gives_each_row_its_own_marginals(oracle):
    mask = oracle.mask_token_id
    rows = [oracle.tokenizer.encode(p) for p in ("shuffle : a b c =", "sort : f e d c b a =")]
    rows = [r + [mask] * (3 if r[0] == IDS["shuffle"] else 6) for r in rows]
    n = max(map(len, rows))
    ids = torch.tensor([r + [oracle.pad_token_id] * (n - len(r)) for r in rows])
    keep = torch.tensor([[i < len(r) for i in range(n)] for r in rows])
    batched = oracle(ids, keep)
    for b, r in enumerate(rows):
        assert torch.equal(batched[b, : len(r)], oracle(torch.tensor([r]))[0])
    assert oracle(torch.tensor([oracle.tokenizer.encode("not a task") + [mask]])).softmax(-1)[0, -1].max() < 0.1
    longer = oracle(torch.tensor([oracle.tokenizer.encode("copy : a b c =") + [mask] * 5])).argmax(-1)[0, -5:]
    assert longer.tolist() == [IDS["a"], IDS["b"], IDS["c"], oracle.eos_token_id, oracle.eos_token_id]


def test_total_correlation_is_zero_for_copy_and_n_log_n_minus_log_n_factorial_for_a_shuffle():
    copy, shuffle = parse("copy : b e a d ="), parse("shuffle : b e a d =")
    none = [None] * 4
    assert total_correlation(copy, none, range(4)) == 0.0
    assert total_correlation(shuffle, none, range(4)) == pytest.approx(4 * 2 - math.log2(24), abs=1e-9)
    assert total_correlation(shuffle, none, [0]) == 0.0  # one token alone is never correlated
    assert total_correlation(shuffle, [IDS["b"], IDS["e"], None, None], [2, 3]) == pytest.approx(1.0)


def _runs(oracle, family, value):
    tasks = prompts(family, PROMPTS_PER_FAMILY, PROMPT_SEED)
    make = KNOBS["constant_k"].make
    traces = decode(oracle, [t.prompt for t in tasks], [make(t, value, s) for s, t in enumerate(tasks)],
                    record_candidates=0)
    return tasks, point("constant_k", value, traces)


@pytest.mark.parametrize("family", FAMILIES)
def test_the_oracle_is_always_right_one_token_per_step(oracle, family):
    _, one = _runs(oracle, family, 1)
    assert (one.right, one.runs, one.tpf) == (64, 64, 1.0)


def test_the_oracle_at_full_parallelism_keeps_copy_and_breaks_shuffle_and_latin(oracle):
    """All answer tokens in one step (k = 16 >= every answer), drawn from their marginals at T = 1, over
    the benchmark's 64 prompts per family. Copy and sudoku (determined answers, one-token marginals)
    stay 64/64. A shuffle of n items comes out a permutation with probability n!/n^n: the 64 prompts
    expect 8.9 right (measured: 10); a Latin square from 2-4 filled cells expects about 1%
    (measured: 1 of 64)."""
    for family in ("copy", "sudoku"):
        _, full = _runs(oracle, family, 16)
        assert (full.right, full.tpf) == (64, full.tokens / 64)
    tasks, full = _runs(oracle, "shuffle", 16)
    p = [math.factorial(len(t.cells)) / len(t.cells) ** len(t.cells) for t in tasks]
    expected, sd = sum(p), math.sqrt(sum(q * (1 - q) for q in p))
    assert full.forwards == 64 and abs(full.right - expected) <= 3 * sd and full.right <= 16
    _, latin = _runs(oracle, "latin", 16)
    assert latin.forwards == 64 and latin.right <= 3
