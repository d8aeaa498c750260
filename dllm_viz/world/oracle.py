"""The perfect model of the world language: exact conditional marginals, as a denoiser the decoder can run.

`WorldOracle` knows the language's definition (`language.py`) and nothing else. Given a canvas
whose prompt starts a sentence, it returns at every position the exact probability of each word
given every visible word, for sentences drawn as `generator.sample_facts` draws them (uniform
free choices). It is what a perfectly trained, perfectly calibrated model would predict, so a
decode with it separates two questions the trained model mixes up: what a schedule does to a model
that knows the language (the oracle), and what the trained model has not learnt (the gap).

Sentences are independent and have a fixed length (`len(SLOTS)` words and a newline), so position
``i`` is slot ``i % SENTENCE`` of sentence ``i // SENTENCE``. Within a sentence the free choices
fall into independent groups (person, city, counts), so each slot's marginal is a count over the
few rows of its group consistent with the visible words of that group.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

import torch

from dllm_viz.models.base import NEVER_LOGIT, exact_shadow
from dllm_viz.world.language import CITIES, MAX_COUNT, PEOPLE, SLOT_WORDS, SLOTS, VOCABULARY, Facts

SPECIALS = ("<pad>", "<eos>", "<mask>")
NEWLINE = "\n"
SENTENCE = len(SLOTS) + 1  # words and the newline that ends the line
_BASE = Facts(person=min(PEOPLE), city=min(CITIES), counts=(1, 1))


def _rows(slots: tuple[str, ...], variants: list[Facts]) -> list[tuple[str, ...]]:
    """The words at ``slots`` of each sentence in ``variants`` (built by the language's own template)."""
    idx = [SLOTS.index(s) for s in slots]
    return [tuple(f.words()[i] for i in idx) for f in variants]


# Slots tied by a rule, and every way of filling them (one row per value of the group's free choice).
GROUPS: dict[tuple[str, ...], list[tuple[str, ...]]] = {
    slots: _rows(slots, variants) for slots, variants in (
        (("first", "last", "recall"), [replace(_BASE, person=p) for p in sorted(PEOPLE)]),
        (("city1", "city2"), [replace(_BASE, city=c) for c in sorted(CITIES)]),
        (("count1", "noun1", "count2", "noun2", "sum"),
         [replace(_BASE, counts=(a, b)) for a in range(1, MAX_COUNT + 1) for b in range(1, MAX_COUNT + 1)]),
    )
}
_WORD = re.compile(r"[A-Za-z]+|\d+|\n|[^\s]")


class WordTokenizer:
    """One id per word of the language (and the newline); text is rendered as the generator writes it."""

    def __init__(self) -> None:
        self.pieces = (*SPECIALS, NEWLINE, *VOCABULARY)
        self.ids = {p: i for i, p in enumerate(self.pieces)}

    def encode(self, text: str) -> list[int]:
        out = []
        for w in _WORD.findall(text):
            if w not in self.ids:
                raise ValueError(f"text: {w!r} is not a word of the world language")
            out.append(self.ids[w])
        return out

    def decode(self, ids: Sequence[int]) -> str:
        """Words joined as the generator writes them; a word gets a leading space (as a BPE piece
        does) unless it is punctuation or starts a line."""
        out, previous = [], None
        for i in ids:
            piece = self.pieces[i]
            glue = piece in ",." or piece == NEWLINE or previous == NEWLINE
            out.append(piece if glue else " " + piece)
            previous = piece
        return "".join(out)


class WorldOracle:
    """A `Denoiser` whose logits are the log of the language's exact conditional marginals.

    `can_edit=True` makes it the perfect editor of LLaDA 2.1's objective (token editing, a revision rule): training
    replaces a visible word by a random one with probability `edit_noise`, so the exact prediction at
    a visible word x is the posterior p(v | the others, x seen) ∝ q(v) · ((1 - ε) [v = x] + ε / W),
    q the marginal from every other visible word (x hidden), W the language's word count. A word the
    rest of its sentence allows keeps nearly all the mass; one it rules out (q(x) = 0) goes to the
    words the rest implies. Without it a visible word predicts itself (or, when its sentence
    contradicts it, the prior). Either way `logits_hidden` (WINO's verify pass) computes each
    position's marginal q with itself hidden in one pass, the numbers `models.base.logits_hidden`
    gets from one canvas per position.
    """

    name = "world-oracle"
    pad_token_id, eos_token_id, mask_token_id = 0, 1, 2
    device = torch.device("cpu")

    def __init__(self, *, can_edit: bool = False, edit_noise: float = 0.1) -> None:
        if not 0.0 < edit_noise < 1.0:
            raise ValueError(f"edit_noise={edit_noise!r} is invalid: expected a probability in (0, 1)")
        self.can_edit, self.edit_noise = can_edit, edit_noise
        self.tokenizer = WordTokenizer()
        ids = self.tokenizer.ids
        self.vocab_size = len(self.tokenizer.pieces)
        self._slot = {name: i for i, name in enumerate(SLOTS)}
        # Per group: its slot indices and a (rows, slots) table of word ids.
        self._groups = [([self._slot[s] for s in slots], torch.tensor([[ids[w] for w in row] for row in rows]))
                        for slots, rows in GROUPS.items()]
        grouped = {i for idx, _ in self._groups for i in idx}
        self._fixed = {i: ids[next(iter(SLOT_WORDS[s]))] for i, s in enumerate(SLOTS) if i not in grouped}
        self._fixed[len(SLOTS)] = ids[NEWLINE]

    def __call__(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        # input_ids: (B, N) -> logits (B, N, V)
        B, N = input_ids.shape
        probs = torch.zeros(B, N, self.vocab_size)
        for b in range(B):
            row = input_ids[b].cpu()
            for start in range(0, N, SENTENCE):
                self._sentence(row[start:start + SENTENCE], probs[b, start:start + SENTENCE])
        return torch.where(probs > 0, probs.clamp_min(1e-30).log(), torch.tensor(NEVER_LOGIT))

    def logits_hidden(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None, rows: torch.Tensor,
                      cols: torch.Tensor) -> torch.Tensor:
        """`(K, V)`: the logits at each `(rows[i], cols[i])` with the word there hidden (see the class)."""
        out = torch.zeros(len(rows), self.vocab_size)
        for k, (b, c) in enumerate(zip(rows.tolist(), cols.tolist())):
            start = c - c % SENTENCE
            words = input_ids[b, start:start + SENTENCE].cpu().clone()
            words[c - start] = self.mask_token_id
            probs = torch.zeros(len(words), self.vocab_size)
            self._sentence(words, probs)
            out[k] = probs[c - start]
        return torch.where(out > 0, out.clamp_min(1e-30).log(), torch.tensor(NEVER_LOGIT))

    def logits_shadow(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None, rows: torch.Tensor,
                      cols: torch.Tensor, blocks: torch.Tensor, hidden_rows: torch.Tensor,
                      hidden_cols: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """WINO's shadow forward (`models.base.logits_shadow`) for the exact oracle (`models.base.exact_shadow`)."""
        return exact_shadow(self, input_ids, attention_mask, rows, cols, hidden_rows, hidden_cols)

    def _sentence(self, words: torch.Tensor, out: torch.Tensor) -> None:
        """Fill ``out`` (n, V) with the marginals of one sentence's n <= SENTENCE positions."""
        n, mask = len(words), self.mask_token_id
        for i, token in self._fixed.items():
            if i < n:
                out[i, token] = 1.0
        for idx, table in self._groups:
            present = [j for j, i in enumerate(idx) if i < n]
            seen = [(j, int(words[idx[j]])) for j in present if int(words[idx[j]]) != mask]
            rows = _consistent(table, seen)
            for j in present:
                own = int(words[idx[j]])
                if self.can_edit and own != mask:  # the editor: the others' marginal, then the word seen
                    rows_j = _consistent(table, [(s, w) for s, w in seen if s != j])
                    q = torch.bincount(rows_j[:, j], minlength=self.vocab_size).float() / len(rows_j)
                    post = q * (self.edit_noise / len(VOCABULARY))
                    post[own] += q[own] * (1.0 - self.edit_noise)
                    out[idx[j]] += post / post.sum()
                else:
                    out[idx[j]] += torch.bincount(rows[:, j], minlength=self.vocab_size).float() / len(rows)


def _consistent(table: torch.Tensor, seen: list[tuple[int, int]]) -> torch.Tensor:
    """The rows of a group's `table` that agree with every seen `(slot, word)`; all of them (the prior)
    when none does."""
    keep = torch.ones(len(table), dtype=torch.bool)
    for j, token in seen:
        keep &= table[:, j] == token
    return table[keep] if keep.any() else table
