"""bench/ngram.py: the Kneser-Ney word trigram judge used by bench/model_quality.py."""
from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

from ngram import BOS, UNK, KneserNeyTrigram, has_repeated_ngram, word_tokens  # noqa: E402

WORDS = "the lady said that she was very happy to see him at the ball and all her sisters were there".split()


def _corpus(n: int, seed: int) -> list[list[str]]:
    """Sentences from a small grammar-like process: each word followed by one of two successors."""
    gen = torch.Generator().manual_seed(seed)
    texts = []
    for _ in range(n):
        i, words = int(torch.randint(0, len(WORDS), (), generator=gen)), []
        for _ in range(12):
            words.append(WORDS[i])
            i = (i + 1 + int(torch.randint(0, 2, (), generator=gen))) % len(WORDS)
        texts.append(words)
    return texts


@pytest.fixture(scope="module")
def lm() -> KneserNeyTrigram:
    return KneserNeyTrigram().fit(_corpus(300, 0) + [["rare", "words", "once"]])


@pytest.mark.parametrize("history", [(BOS, BOS), ("the", "lady"), ("she", "was"), ("never", "seen"), (BOS, "rare")])
def test_distribution_sums_to_one_for_any_history(lm: KneserNeyTrigram, history: tuple[str, str]) -> None:
    u, v = (w if w in lm.vocab or w == BOS else UNK for w in history)
    total = sum(lm.prob(u, v, w) for w in lm.vocab)
    assert math.isclose(total, 1.0, rel_tol=1e-9)


def test_held_out_text_of_the_same_process_beats_shuffled_words(lm: KneserNeyTrigram) -> None:
    real = _corpus(40, 1)
    gen = torch.Generator().manual_seed(2)
    shuffled = [[t[i] for i in torch.randperm(len(t), generator=gen).tolist()] for t in real]
    assert lm.perplexity(real) < 0.5 * lm.perplexity(shuffled)


def test_context_gain_separates_prose_from_frequent_word_salad(lm: KneserNeyTrigram) -> None:
    real = _corpus(40, 1)
    bland = [["the"] * 12 for _ in range(40)]  # the commonest word only: a low perplexity, no fluency
    gen = torch.Generator().manual_seed(3)
    shuffled = [[t[i] for i in torch.randperm(len(t), generator=gen).tolist()] for t in real]
    assert lm.context_gain(real) > 1.0 > lm.context_gain(shuffled)
    assert lm.context_gain(bland) < lm.context_gain(real)


def test_rare_and_unseen_words_are_scored_as_unknown(lm: KneserNeyTrigram) -> None:
    assert "rare" not in lm.vocab and UNK in lm.vocab
    assert lm.logprob(["the", "zyzzyva"]) == lm.logprob(["the", "qwxz"])


def test_word_tokens_and_repeated_ngrams() -> None:
    assert word_tokens('"Don\'t," said Emma,, 2 times.') == ['"', "don't", ",", '"', "said", "emma", ",", ",", "2",
                                                                "times", "."]
    loop = "the end of the house , and the end of the house".split()
    assert has_repeated_ngram(loop) and not has_repeated_ngram(loop[:7])


def test_bad_parameters_raise() -> None:
    with pytest.raises(ValueError, match="discount"):
        KneserNeyTrigram(discount=1.5)
    with pytest.raises(ValueError, match="min_count"):
        KneserNeyTrigram(min_count=0)
    with pytest.raises(ValueError, match="texts"):
        KneserNeyTrigram().fit([["a", "a"]]).perplexity([[]])
