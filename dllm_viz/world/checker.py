"""``check(text) -> Verdict``: which spans of a text break which rule of the world language.

The text is read as words (``[A-Za-z]+``, digits, or one other character), split into sentences
at ".", and each sentence is read slot by slot against ``language.SLOTS``. A trailing sentence
without its "." (a canvas that ends mid-sentence) is checked as a prefix: only what no
continuation could repair is a violation, and it does not count as a sentence.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from dllm_viz.world.language import CITIES, PEOPLE, SLOT_WORDS, SLOTS, noun

_WORD = re.compile(r"[A-Za-z]+|\d+|\S")
_ENTITIES = {("first", "last"): frozenset(PEOPLE), ("city1", "city2"): CITIES}


@dataclass(frozen=True)
class Violation:
    """One broken rule: characters ``[start, end)`` of the checked text."""

    rule: str  # one of language.RULES
    start: int
    end: int
    text: str  # text[start:end]
    message: str


@dataclass(frozen=True)
class Verdict:
    """The checker's answer for one text."""

    violations: tuple[Violation, ...]
    sentences: int  # complete sentences (ending in ".")
    valid_sentences: int  # ... of which break no rule
    entities: int  # two-word names with both words in their word class
    broken_entities: int  # ... of which are not a person / city of the world

    @property
    def ok(self) -> bool:
        return not self.violations

    def rules(self) -> set[str]:
        return {v.rule for v in self.violations}


@dataclass(frozen=True)
class Word:
    text: str
    start: int
    end: int


def words(text: str) -> list[Word]:
    """The checker's reading of ``text``: words, digits and punctuation with their character spans."""
    return [Word(m.group(), m.start(), m.end()) for m in _WORD.finditer(text)]


def _sentences(words: list[Word]) -> list[tuple[list[Word], bool]]:
    """Split at "." into (words, complete)."""
    out, current = [], []
    for w in words:
        current.append(w)
        if w.text == ".":
            out.append((current, True))
            current = []
    if current:
        out.append((current, False))
    return out


def _check_sentence(words: list[Word], complete: bool, text: str) -> tuple[list[Violation], int, int]:
    """Violations of one sentence, and its (entities, broken entities) counts."""
    found: list[Violation] = []

    def flag(rule: str, first: Word, last: Word, message: str) -> None:
        found.append(Violation(rule, first.start, last.end, text[first.start:last.end], message))

    n = len(SLOTS)
    body = words
    if complete and len(words) < n:
        flag("grammar", words[-1], words[-1], f"sentence ended after {len(words) - 1} words; expected {n - 1}")
        body = words[:-1]
    elif len(words) > n:  # no "." where the template ends it: the extra words are one grammar error
        flag("grammar", words[n - 1], words[-1], f"expected '.' after {n - 1} words")
        body = words[: n - 1]
    slot: dict[str, Word] = {}  # slot name -> word, only for words that fit their slot's class
    for name, w in zip(SLOTS, body):
        if w.text in SLOT_WORDS[name]:
            slot[name] = w
        else:
            flag("grammar", w, w, f"{w.text!r} cannot stand in slot '{name}'")
    entities = broken = 0
    for (a, b), valid in _ENTITIES.items():
        if a in slot and b in slot:
            entities += 1
            if (slot[a].text, slot[b].text) not in valid:
                broken += 1
                kind = "person" if a == "first" else "city"
                flag("entity", slot[a], slot[b], f"'{slot[a].text} {slot[b].text}' is not a {kind} of the world")
    if "first" in slot and "recall" in slot and slot["first"].text != slot["recall"].text:
        first = slot["first"].text
        flag("agreement", slot["recall"], slot["recall"], f"the sentence is about {first}: expected '{first}'")
    for count, word in (("count1", "noun1"), ("count2", "noun2")):
        if count in slot and word in slot:
            c, w = int(slot[count].text), slot[word].text
            if noun(w.rstrip("s"), c) != w:
                flag("agreement", slot[word], slot[word], f"number: {c} needs '{noun(w.rstrip('s'), c)}'")
    if all(k in slot for k in ("count1", "count2", "sum")):
        total = int(slot["count1"].text) + int(slot["count2"].text)
        if int(slot["sum"].text) != total:
            flag("sum", slot["sum"], slot["sum"], f"{slot['count1'].text} + {slot['count2'].text} = {total}")
    return found, entities, broken


def check(text: str) -> Verdict:
    """Every rule broken in ``text``, with character spans; see the module docstring."""
    if not isinstance(text, str):
        raise ValueError(f"text={text!r} must be a str")
    violations: list[Violation] = []
    sentences = valid = entities = broken = 0
    for sentence_words, complete in _sentences(words(text)):
        found, e, b = _check_sentence(sentence_words, complete, text)
        violations += found
        entities, broken = entities + e, broken + b
        if complete:
            sentences += 1
            valid += not found
    violations.sort(key=lambda v: (v.start, v.end))
    return Verdict(tuple(violations), sentences, valid, entities, broken)


def token_violations(pieces: list[str], verdict: Verdict) -> list[list[Violation]]:
    """For each piece of a text split into tokens (``"".join(pieces)`` was checked), the violations it lies in."""
    out: list[list[Violation]] = []
    pos = 0
    for piece in pieces:
        start, end = pos, pos + len(piece)
        pos = end
        core = piece.strip()  # a token's own leading space is not part of the word it marks
        if core:
            start = start + piece.index(core)
            end = start + len(core)
        out.append([v for v in verdict.violations if core and start < v.end and v.start < end])
    return out
