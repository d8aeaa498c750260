"""A word trigram language model with interpolated Kneser-Ney smoothing: the fluency judge.

``bench/model_quality.py`` builds it from text that no model is trained on (``judge.txt`` from
``scripts/prepare_data.py --sources``: Dickens' Great Expectations) and reports the perplexity of
generated text divided by the perplexity of real held-out Austen text of the same length. A model
that copies its training text gains nothing (the judge never saw that text); word salad, runs of
punctuation and loops score badly. 1.0 means "as predictable as real Austen" under the judge.

Interpolated Kneser-Ney (Kneser & Ney 1995; Chen & Goodman 1998, eq. 26) with one absolute
discount ``D`` per order::

    P3(w | u v) = max(c(u v w) - D, 0) / c(u v .) + D * N1+(u v .) / c(u v .) * P2(w | v)
    P2(w | v)   = max(N1+(. v w) - D, 0) / N1+(. v .) + D * N1+(v .) / N1+(. v .) * P1(w)
    P1(w)       = max(N1+(. w) - D, 0) / N1+(. .) + D * |{w: N1+(. w) > 0}| / N1+(. .) / |V|

where the lower orders use continuation counts (how many distinct words precede), and a history
never seen falls through to the next order. Words seen fewer than ``min_count`` times in the
judge's text become ``<unk>``, which is what an unseen word is scored as.

Perplexity alone rewards bland text: a string of the commonest words ("the", ",", "of") is
predictable without being fluent. ``context_gain`` separates the two: the mean of
``log2 P3(w | u v) - log2 P_unigram(w)`` per word, i.e. how many bits the two previous words save.
Real prose gains a lot; word salad of frequent words gains little, however low its perplexity.
"""
from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable

TOKEN = re.compile(r"[a-z]+(?:'[a-z]+)*|[0-9]+|[^\sa-z0-9]")
BOS, UNK = "<s>", "<unk>"


def word_tokens(text: str) -> list[str]:
    """Lower-cased words (with inner apostrophes), numbers and single punctuation marks."""
    return TOKEN.findall(text.lower())


class KneserNeyTrigram:
    """Interpolated Kneser-Ney word trigram model; ``fit`` once, then ``logprob`` / ``perplexity``."""

    def __init__(self, *, discount: float = 0.75, min_count: int = 2) -> None:
        if not 0.0 < discount < 1.0:
            raise ValueError(f"discount={discount} must be in (0, 1)")
        if min_count < 1:
            raise ValueError(f"min_count={min_count} must be >= 1")
        self.d, self.min_count = discount, min_count
        self.vocab: set[str] = set()

    def _map(self, words: Iterable[str]) -> list[str]:
        return [w if w in self.vocab else UNK for w in words]

    def fit(self, texts: Iterable[list[str]]) -> KneserNeyTrigram:
        texts = list(texts)
        counts = Counter(w for t in texts for w in t)
        self.vocab = {w for w, c in counts.items() if c >= self.min_count} | {UNK}
        tri: Counter[tuple[str, str, str]] = Counter()
        for t in texts:
            seq = [BOS, BOS] + self._map(t)
            tri.update(zip(seq, seq[1:], seq[2:]))
        self.tri = tri
        self.hist2: Counter[tuple[str, str]] = Counter()  # c(u v .)
        self.types2: Counter[tuple[str, str]] = Counter()  # N1+(u v .)
        cont2: Counter[tuple[str, str]] = Counter()  # N1+(. v w)
        for (u, v, w), c in tri.items():
            self.hist2[(u, v)] += c
            self.types2[(u, v)] += 1
            cont2[(v, w)] += 1
        self.cont2 = cont2
        self.cont2_hist: Counter[str] = Counter()  # N1+(. v .)
        self.types1: Counter[str] = Counter()  # N1+(v .) over continuation bigrams
        cont1: Counter[str] = Counter()  # N1+(. w)
        for (v, w), c in cont2.items():
            self.cont2_hist[v] += c
            self.types1[v] += 1
            cont1[w] += 1
        self.cont1 = cont1
        self.unigram = Counter(w for t in texts for w in self._map(t))
        self.unigram_total = sum(self.unigram.values())
        self.cont1_total = sum(cont1.values())
        self.cont1_types = len(cont1)
        return self

    def _p1(self, w: str) -> float:
        d, total = self.d, self.cont1_total
        return max(self.cont1.get(w, 0) - d, 0) / total + d * self.cont1_types / total / len(self.vocab)

    def _p2(self, v: str, w: str) -> float:
        hist = self.cont2_hist.get(v, 0)
        if hist == 0:
            return self._p1(w)
        d = self.d
        return max(self.cont2.get((v, w), 0) - d, 0) / hist + d * self.types1[v] / hist * self._p1(w)

    def prob(self, u: str, v: str, w: str) -> float:
        """P(w | u v) for vocabulary-mapped words."""
        hist = self.hist2.get((u, v), 0)
        if hist == 0:
            return self._p2(v, w)
        d = self.d
        return max(self.tri.get((u, v, w), 0) - d, 0) / hist + d * self.types2[(u, v)] / hist * self._p2(v, w)

    def logprob(self, words: list[str]) -> float:
        """Natural-log probability of a text (its words after two ``<s>``)."""
        seq = [BOS, BOS] + self._map(words)
        return sum(math.log(self.prob(u, v, w)) for u, v, w in zip(seq, seq[1:], seq[2:]))

    def unigram_logprob(self, words: list[str]) -> float:
        """Natural-log probability under the add-one unigram model of the same text and vocabulary."""
        total, size = self.unigram_total, len(self.vocab)
        return sum(math.log((self.unigram.get(w, 0) + 1) / (total + size)) for w in self._map(words))

    def context_gain(self, texts: Iterable[list[str]]) -> float:
        """Bits per word that the trigram context saves over the unigram model (higher: more fluent)."""
        gain, n = 0.0, 0
        for words in texts:
            gain += self.logprob(words) - self.unigram_logprob(words)
            n += len(words)
        if n == 0:
            raise ValueError("texts: no words to score")
        return gain / n / math.log(2)

    def perplexity(self, texts: Iterable[list[str]]) -> float:
        """exp(- mean log-probability per word) over all words of all texts."""
        total, n = 0.0, 0
        for words in texts:
            total += self.logprob(words)
            n += len(words)
        if n == 0:
            raise ValueError("texts: no words to score")
        return math.exp(-total / n)


def has_repeated_ngram(words: list[str], n: int = 4) -> bool:
    """True when some word ``n``-gram occurs twice in ``words`` (the T=0 loop figure)."""
    grams = [tuple(words[i : i + n]) for i in range(len(words) - n + 1)]
    return len(set(grams)) < len(grams)

