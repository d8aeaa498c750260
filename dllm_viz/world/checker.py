"""``check(text) -> Verdict``: which spans of a text break which rule of the world language.

The text is read as words (``[A-Za-z]+``, digits, or one other character) and split into
sentences at ".". Each sentence is aligned to the template ``language.SLOTS`` by edit distance
(Levenshtein 1966; Wagner & Fischer 1974): a word that fits its slot costs nothing, a word in the
wrong slot, an extra word and a missing word cost one each, so one inserted or deleted word is one
violation and the words after it are read in their own slots again. Then the rules between slots
(``language.RULES``) are checked on the words that fit, and the spaces between words: one space
between two words, none before "," and ".", some whitespace between sentences, none before the
first word. A fault of the spacing between two sentences, or before the first, is one violation of
the text that leaves both sentences' own validity as it is.

A trailing sentence without its "." (a canvas that ends mid-sentence, or a decode read at a step
while later positions are still masked) is checked as a prefix: only what no continuation could
repair is a violation, and it does not count as a sentence. The template's missing tail is free,
and a last word with nothing after it may still grow ("so Tom has 2" may become "23"): it is read
as the completion, among the words of its slot, that breaks the fewest rules.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from dllm_viz.world.language import CITIES, MAX_COUNT, PEOPLE, SLOT_WORDS, SLOTS, noun

_WORD = re.compile(r"[A-Za-z]+|\d+|\S")
_ENTITIES = {("first", "last"): frozenset(PEOPLE), ("city1", "city2"): CITIES}
_TIGHT = frozenset({",", "."})  # written with no space before them


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
        """No rule broken so far: also true of a prefix that states nothing yet (``check("")``)."""
        return not self.violations

    @property
    def valid(self) -> bool:
        """A valid text: at least one complete sentence, and no rule broken (what a valid run is)."""
        return self.ok and self.sentences > 0

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


def _fits(slot: str, word: str) -> bool:
    """``word`` may stand in ``slot`` before the rules between slots are applied. Any number fits the
    sum's slot: a sum no two counts can make is a ``sum`` error, not a ``grammar`` one."""
    return word in SLOT_WORDS[slot] or (slot == "sum" and word.isdigit())


def _completions(slot: str, partial: str) -> list[str]:
    """The words of ``slot`` that a last word with nothing after it may still become (itself first)."""
    grown = sorted(w for w in SLOT_WORDS[slot] if w.startswith(partial) and w != partial)
    return ([partial] if _fits(slot, partial) else []) + grown


# ("match", slot, word) | ("extra", None, word) | ("missing", slot, None)
Script = list[tuple[str, int | None, int | None]]
MAX_ALIGNMENTS = 64  # equally cheap alignments compared by the rules between slots (more: only the first 64)


def _alignments(words: list[Word], complete: bool, partial: bool) -> list[Script]:
    """The cheapest edit scripts from the template to ``words``: ("match", slot, word) where the word
    stands in that slot (fitting it or not), ("extra", None, word), ("missing", slot, None).

    A complete sentence aligns with all of SLOTS; an unfinished one with its cheapest prefix of SLOTS
    (what follows is not written yet). With ``partial`` the last word fits a slot it may still grow
    into. Several scripts can cost the same ("and 7 1 dog": which number is the extra one?); all of
    them (up to MAX_ALIGNMENTS) are returned, the one that keeps each word in its slot first.
    """
    n, m = len(words), len(SLOTS)
    misfit = [[0 if (_completions(slot, w.text) if partial and i == n - 1 else _fits(slot, w.text)) else 1
               for slot in SLOTS] for i, w in enumerate(words)]  # (n, m): a word in a slot it does not fit
    if complete and n == m and sum(misfit[i][i] for i in range(n)) <= 1:
        # Every word in its own slot costs at most 1, and any other script of as many words as
        # slots has an extra word and a missing one (2): the only cheapest script, found at once.
        return [[("match", i, i) for i in range(n)]]

    def cost(i: int, j: int) -> int:
        return misfit[i][j]

    table = [[0] * (m + 1) for _ in range(n + 1)]  # table[i][j]: words[:i] against SLOTS[:j]
    for j in range(m + 1):
        table[0][j] = j
    for i in range(1, n + 1):
        table[i][0] = i
        row, above, cost_row = table[i], table[i - 1], misfit[i - 1]
        for j in range(1, m + 1):
            row[j] = min(above[j - 1] + cost_row[j - 1], above[j] + 1, row[j - 1] + 1)
    end = m if complete else min(range(m + 1), key=lambda k: (table[n][k], k))
    scripts: list[Script] = []
    stack: list[tuple[int, int, Script]] = [(n, end, [])]  # depth first, without recursion (long texts)
    while stack and len(scripts) < MAX_ALIGNMENTS:
        i, j, tail = stack.pop()
        if not i and not j:
            scripts.append(tail[::-1])
            continue
        steps = []  # pushed in reverse, so a word in its slot is tried first, then an extra word
        if j and table[i][j] == table[i][j - 1] + 1:
            steps.append((i, j - 1, ("missing", j - 1, None)))
        if i and table[i][j] == table[i - 1][j] + 1:
            steps.append((i - 1, j, ("extra", None, i - 1)))
        if i and j and table[i][j] == table[i - 1][j - 1] + cost(i - 1, j - 1):
            steps.append((i - 1, j - 1, ("match", j - 1, i - 1)))
        stack.extend((ni, nj, [*tail, op]) for ni, nj, op in steps)
    return scripts


def _check_slots(slot: dict[str, Word], flag) -> tuple[int, int]:
    """The rules between slots, on the words that fit theirs; returns (entities, broken entities)."""
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
    if "sum" in slot:
        given = int(slot["sum"].text)
        if "count1" in slot and "count2" in slot:
            total = int(slot["count1"].text) + int(slot["count2"].text)
            if given != total:
                flag("sum", slot["sum"], slot["sum"], f"{slot['count1'].text} + {slot['count2'].text} = {total}")
        elif not 2 <= given <= 2 * MAX_COUNT:
            flag("sum", slot["sum"], slot["sum"], f"no two counts of 1..{MAX_COUNT} add up to {given}")
    return entities, broken


def _check_sentence(words: list[Word], complete: bool, text: str) -> tuple[list[Violation], int, int]:
    """Violations of one sentence, and its (entities, broken entities) counts: read along each of
    its cheapest alignments, the reading that breaks the fewest rules."""
    partial = not complete and words[-1].end == len(text) and words[-1].text[-1].isalnum()
    readings = [_read(words, script, partial, text) for script in _alignments(words, complete, partial)]
    found, entities, broken = min(readings, key=lambda r: len(r[0]))
    found = list(found)
    for before, w in zip(words, words[1:]):
        gap, want = text[before.end:w.start], "" if w.text in _TIGHT else " "
        if gap != want:
            said = "no space" if not want else "one space"
            found.append(_violation(text, "grammar", before, w,
                                    f"expected {said} between {before.text!r} and {w.text!r}"))
    return found, entities, broken


def _violation(text: str, rule: str, first: Word, last: Word, message: str) -> Violation:
    end = min(last.end, len(text))  # a completion of the last word reaches past the text: its span is what is written
    return Violation(rule, first.start, end, text[first.start:end], message)


def _read(words: list[Word], script: Script, partial: bool, text: str) -> tuple[list[Violation], int, int]:
    """The violations of one alignment of a sentence, and its (entities, broken entities) counts."""
    found: list[Violation] = []
    slot: dict[str, Word] = {}  # slot name -> word, only for words that fit their slot's class
    last = len(words) - 1
    k = 0
    while k < len(script):
        op, j, i = script[k]
        if op == "match":
            w = words[i]
            if _completions(SLOTS[j], w.text) if partial and i == last else _fits(SLOTS[j], w.text):
                slot[SLOTS[j]] = w
            else:
                found.append(_violation(text, "grammar", w, w, f"{w.text!r} cannot stand in slot '{SLOTS[j]}'"))
            k += 1
            continue
        run = k  # a run of extra words, or of missing slots, is one violation
        while k < len(script) and script[k][0] == op:
            k += 1
        if op == "extra":
            first, end = words[script[run][2]], words[script[k - 1][2]]
            found.append(_violation(text, "grammar", first, end,
                                    f"unexpected {text[first.start:end.end]!r}: the sentence reads on after it"))
        else:
            names = [SLOTS[script[x][1]] for x in range(run, k)]
            after = [words[s[2]] for s in script[k:] if s[2] is not None]
            at = after[0] if after else next(words[s[2]] for s in script[run::-1] if s[2] is not None)
            said = f"slot '{names[0]}'" if len(names) == 1 else f"{len(names)} slots, '{names[0]}' to '{names[-1]}'"
            found.append(_violation(text, "grammar", at, at, f"missing words here: {said}"))
    # A last word that may still grow stands for its completion that breaks the fewest rules.
    grows = next((name for name, w in slot.items() if partial and w is words[last]), None)
    best: tuple[list[Violation], int, int] | None = None
    for option in _completions(grows, words[last].text) if grows else [None]:
        if option is not None:
            slot[grows] = Word(option, words[last].start, words[last].start + len(option))
        trial: list[Violation] = []
        entities, broken = _check_slots(slot, lambda *a: trial.append(_violation(text, *a)))
        if best is None or len(trial) < len(best[0]):
            best = (trial, entities, broken)
    return found + best[0], best[1], best[2]


def check(text: str) -> Verdict:
    """Every rule broken in ``text``, with character spans; see the module docstring."""
    if not isinstance(text, str):
        raise ValueError(f"text={text!r} must be a str")
    violations: list[Violation] = []
    sentences = valid = entities = broken = 0
    previous: Word | None = None
    read = words(text)
    if read and read[0].start > 0:  # " Tom Lopez ...": a text starts with its first word
        violations.append(Violation("grammar", 0, read[0].end, text[:read[0].end],
                                    f"expected no whitespace before {read[0].text!r}, the first word"))
    for sentence_words, complete in _sentences(read):
        found, e, b = _check_sentence(sentence_words, complete, text)
        first = sentence_words[0]
        if previous is not None and previous.end == first.start:  # "all.Tom": sentences need a space between
            # One spacing fault between two sentences, neither sentence's own: both may still be valid.
            violations.append(Violation("grammar", previous.start, first.end, text[previous.start:first.end],
                                        f"expected a space or a line break after {previous.text!r}"))
        previous = sentence_words[-1]
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
