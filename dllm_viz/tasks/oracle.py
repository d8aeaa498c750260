"""The perfect model of the task families: every right answer enumerated, exact marginals as a denoiser.

`answers(task)` lists a task's right answers (one for copy, reverse, sort, replace, insert; the n!
orders of a shuffle; the completions of a Latin square or sudoku among the 576 / 288 valid grids).
`TaskOracle` reads the task from a canvas and returns, at every answer position, the exact
probability of each token given the visible answer tokens, for answers drawn uniformly from the
right ones: the share of the right answers that agree with what is visible and hold that token
there. It is `WorldOracle`'s construction (`dllm_viz/world/oracle.py`) for these families: what a
perfectly trained, perfectly calibrated model predicts, so a decode with it shows what a schedule
does apart from what a trained model has not learnt.

Confirming several positions in one step draws each from its own marginal, independently. That is
exact when the answer is determined (copy: every marginal is one token) and wrong when the tokens
depend on each other: for a shuffle of n items each marginal is uniform over the n items, so one
step writes a permutation with probability n!/n^n (3/32 for n = 4). ParallelBench (Kang et al. 2025,
section 3) bounds the error of any factorised step from below by the conditional total correlation
of the tokens confirmed together, ``sum_i H(y_i | visible) - H(y_S | visible)`` (`total_correlation`).
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from functools import lru_cache

import torch

from dllm_viz.models.base import NEVER_LOGIT, exact_shadow
from dllm_viz.tasks.families import GRID_FAMILIES, UNITS, Task, parse, right_answer
from dllm_viz.tasks.grids import completions
from dllm_viz.tasks.vocab import EQUALS, IDS, SPECIALS, TOKENS, tokenizer

MAX_LENGTH = 64  # canvas limit, as a model's context (the longest task is 19 + 16 tokens)


@lru_cache(maxsize=8192)
def answers(task: Task) -> tuple[tuple[str, ...], ...]:
    """Every right answer of ``task``, each once, in a fixed order."""
    if task.family == "shuffle":
        return tuple(itertools.permutations(task.cells))
    if task.family in GRID_FAMILIES:
        return completions(task.cells, UNITS[task.family])
    return (right_answer(task),)


@lru_cache(maxsize=8192)
def answer_table(task: Task) -> torch.Tensor:
    """`answers` as token ids ``(A, L)``."""
    return torch.tensor([[IDS[w] for w in a] for a in answers(task)], dtype=torch.long)


def consistent_rows(table: torch.Tensor, visible: Sequence[int | None]) -> torch.Tensor:
    """The rows of ``table (A, L)`` that agree with every visible token (None: still masked), ``(A', L)``;
    all rows when none agrees (visible tokens no right answer explains: the prior, as WorldOracle does)."""
    keep = torch.ones(table.shape[0], dtype=torch.bool)  # (A,)
    for j, token in enumerate(visible):
        if token is not None:
            keep &= table[:, j] == token
    return table[keep] if keep.any() else table


def marginals(rows: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """Per position, the share of ``rows (A, L)`` holding each token: ``(L, V)``."""
    return torch.nn.functional.one_hot(rows, vocab_size).float().mean(0)


def total_correlation(task: Task, visible: Sequence[int | None], together: Sequence[int]) -> float:
    """Conditional total correlation, in bits, of the answer positions ``together`` given the visible
    tokens, under the uniform distribution over right answers: the sum of their marginal entropies
    minus their joint entropy. Zero when they are independent (or determined); ParallelBench's lower
    bound on what drawing them in one step from their marginals costs (KL, in bits)."""
    rows = consistent_rows(answer_table(task), visible)[:, list(together)]  # (A', S)
    n = rows.shape[0]

    def entropy(counts) -> float:
        return -sum(c / n * math.log2(c / n) for c in counts)

    joint = entropy(torch.unique(rows, dim=0, return_counts=True)[1].tolist())
    parts = sum(entropy(torch.unique(rows[:, j], return_counts=True)[1].tolist()) for j in range(rows.shape[1]))
    return max(0.0, parts - joint)


class TaskOracle:
    """A `Denoiser` whose logits are the log of the exact marginals of the task's right answers."""

    name = "tasks-oracle"
    max_length = MAX_LENGTH
    device = torch.device("cpu")

    def __init__(self) -> None:
        self.tokenizer = tokenizer()
        self.mask_token_id = self.tokenizer.mask_token_id
        self.pad_token_id = self.tokenizer.pad_token_id
        self.eos_token_id = self.tokenizer.eos_token_id
        self.vocab_size = len(TOKENS)
        self._eq = IDS[EQUALS]
        self._ordinary = torch.tensor([i >= len(SPECIALS) for i in range(self.vocab_size)]).float()  # (V,)

    def task_of(self, ids: Sequence[int]) -> tuple[Task, int] | None:
        """The task a canvas row states and where its answer starts, or None when it states none."""
        if self._eq not in ids:
            return None
        start = ids.index(self._eq) + 1
        try:
            return parse(" ".join(TOKENS[i] for i in ids[:start])), start
        except ValueError:
            return None

    def __call__(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        # input_ids: (B, N) -> logits (B, N, V)
        B, N = input_ids.shape
        probs = torch.nn.functional.one_hot(input_ids.cpu().clamp(0, self.vocab_size - 1), self.vocab_size).float()
        lengths = [N] * B if attention_mask is None else attention_mask.sum(1).tolist()
        for b in range(B):
            row = input_ids[b, : int(lengths[b])].tolist()
            found = self.task_of(row)
            if found is None:  # not a task: every ordinary token alike wherever a mask is
                masked = torch.tensor(row) == self.mask_token_id
                probs[b, : len(row)][masked] = self._ordinary / self._ordinary.sum()
                continue
            task, start = found
            span = [None if t == self.mask_token_id else t for t in row[start:]]
            length = min(len(span), task.answer_length)  # the canvas may hold fewer or more positions
            rows = consistent_rows(answer_table(task)[:, :length], span[:length])
            probs[b, start:start + length] = marginals(rows, self.vocab_size)
            probs[b, start + length:len(row)] = torch.nn.functional.one_hot(
                torch.tensor(self.eos_token_id), self.vocab_size).float()  # past the answer: end of text
        return torch.where(probs > 0, probs.clamp_min(1e-30).log(), torch.tensor(NEVER_LOGIT))

    def logits_shadow(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None, rows: torch.Tensor,
                      cols: torch.Tensor, blocks: torch.Tensor, hidden_rows: torch.Tensor,
                      hidden_cols: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """WINO's shadow forward (`models.base.logits_shadow`) for the exact oracle (`models.base.exact_shadow`)."""
        return exact_shadow(self, input_ids, attention_mask, rows, cols, hidden_rows, hidden_cols)
