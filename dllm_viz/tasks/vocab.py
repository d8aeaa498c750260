"""The tasks' token vocabulary: 34 words, one id each, shared by the trained model and the oracle.

A task is written as words separated by spaces (``copy : b e a =``, answer ``b e a``), so a
word-level vocabulary is exact: every word is one token, and a family's answers are short tuples
over a few of them, small enough to enumerate (`oracle.answers`). The ids are fixed by the order
of `TOKENS`; `build_tokenizer` writes them as a ``tokenizers`` WordLevel model that the embedded
model's `EmbeddedTokenizer` reads (``dllm_viz/assets/tasks/tokenizer.json``), so the oracle and the model
agree on every id.
"""
from __future__ import annotations

from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

from dllm_viz.models.tokenizer import EOS, MASK, PAD, EmbeddedTokenizer

UNK = "<unk>"
SPECIALS = (PAD, EOS, MASK, UNK)  # the first ids, in the embedded tokenizer's order
# The families, in the order ParallelBench's "waiting line" and puzzle tasks list them
# (furiosa-ai/ParallelBench, parallelbench/datasets/task_generators.py); each is also its prompt's first word.
FAMILIES = ("copy", "reverse", "sort", "replace", "insert", "shuffle", "latin", "sudoku")
COLON, EQUALS, HOLE = ":", "=", "_"  # after the arguments; before the answer; an empty grid cell
ITEMS = tuple("abcdefghijkl")  # list items (alphabetical order is the sort order)
DIGITS = tuple(str(i) for i in range(1, 8))  # positions 1-7 (replace, insert) and grid symbols 1-4
SYMBOLS = DIGITS[:4]  # the symbols of a 4x4 grid
TOKENS = (*SPECIALS, *FAMILIES, COLON, EQUALS, HOLE, *DIGITS, *ITEMS)
IDS = {word: i for i, word in enumerate(TOKENS)}


def build_tokenizer() -> Tokenizer:
    """A WordLevel ``tokenizers.Tokenizer`` over `TOKENS`: text split at whitespace, one id per word,
    any other word `UNK`. A typed ``<mask>`` is text, never the mask id (the embedded tokenizer's
    promise, `EmbeddedTokenizer`): the normaliser turns its ``<`` into ``‹``, so it reads as `UNK`."""
    tok = Tokenizer(models.WordLevel(dict(IDS), unk_token=UNK))
    tok.normalizer = normalizers.Replace("<", "‹")
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.add_special_tokens([PAD, EOS, MASK])
    return tok


def tokenizer() -> EmbeddedTokenizer:
    """The tasks' tokenizer with the embedded model's interface (`encode`, `decode`, special ids)."""
    return EmbeddedTokenizer(build_tokenizer())
