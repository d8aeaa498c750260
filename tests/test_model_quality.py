"""bench/model_quality.py's word-error breakdown: which pieces spell each word, and how non-words were made."""
from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from model_quality import spelled_words, text_word_errors, word_errors  # noqa: E402

PIECES = [" the", " room", "With", " Dash", "wood", " parlour", " rainy", "ers", ",", " no", "wh"]


class Pieces:
    """A tokenizer over PIECES: id i spells PIECES[i]."""

    def decode(self, ids: list[int]) -> str:
        return "".join(PIECES[i] for i in ids)


def _trace(ids: list[int], order: list[int]) -> SimpleNamespace:
    return SimpleNamespace(token_ids=ids, text_end=None, text=Pieces().decode(ids), order=order)


def test_spelled_words_maps_each_word_to_its_pieces_and_drops_a_cut_off_last_word():
    pieces = [PIECES[i] for i in (0, 1, 2, 8, 3, 4, 9, 10)]  # " the roomWith, Dashwood nowh"
    assert spelled_words(pieces) == [("the", [0]), ("roomWith", [1, 2]), ("Dashwood", [4, 5])]
    ended = pieces[:-1] + [","]  # " the roomWith, Dashwood no,": the last word is whole
    assert spelled_words(ended) == [("the", [0]), ("roomWith", [1, 2]), ("Dashwood", [4, 5]), ("no", [6])]


def test_word_errors_sorts_each_non_word_by_how_it_was_spelled():
    dictionary = {"the", "room", "rainy", "no"}
    author = {"parlour", "Dashwood"}
    # " the roomWith Dashwood parlour rainyers no," : roomWith joined in one step (steps 1, 1),
    # Dashwood joined across steps (2, 3) although it is the author's word, rainyers across steps (0, 4)
    trace = _trace([0, 1, 2, 3, 4, 5, 6, 7, 9, 8], order=[0, 1, 1, 2, 3, 0, 0, 4, 2, 3])
    counts = word_errors([trace], Pieces(), dictionary, author)
    assert counts == {"words": 6, "not_in_dictionary": 4, "one_piece": 1, "joined_in_one_step": 1,
                      "joined_across_steps": 2, "one_piece_author": 1, "pieces_joined": 3, "skipped": 0}


def test_a_trace_whose_pieces_do_not_spell_its_text_is_skipped():
    trace = _trace([0, 1], order=[0, 0])
    trace.text = " the  room"  # a tokenizer that normalises on decode: the piece map would be wrong
    counts = word_errors([trace], Pieces(), {"the", "room"}, set())
    assert counts["skipped"] == 1 and counts["words"] == 0


def test_text_word_errors_counts_real_text_without_steps():
    windows = [[0, 3, 4, 5, 8], [6, 7, 9, 8]]  # " the Dashwood parlour," and " rainyers no,"
    counts = text_word_errors(Pieces(), windows, {"the", "no"}, {"Dashwood", "parlour"})
    assert counts == {"words": 5, "not_in_dictionary": 3, "not_in_dictionary_author": 2, "pieces_joined": 2}
