"""The world language: the checker accepts every generated sentence and names each single-word corruption."""
from __future__ import annotations

import pytest

from dllm_viz.world import RULES, SLOTS, VOCABULARY, Facts, check, generate, sentence, space_size, token_violations
from dllm_viz.world.checker import words
from dllm_viz.world.generator import render
from dllm_viz.world.language import CITIES, PEOPLE

TOM = next(p for p in PEOPLE if p[0] == "Tom")
FACTS = Facts(person=TOM, city=("San", "Diego"), counts=(3, 1))


def corrupt(slot: str, word: str, facts: Facts = FACTS) -> str:
    words = facts.words()
    words[SLOTS.index(slot)] = word
    return render(words)


def test_round_trip_thousands_of_seeds():
    sentences = [s for seed in range(2000) for s in generate(1, seed)] + generate(3000, 123)
    for s in sentences:
        verdict = check(s)
        assert verdict.ok, (s, verdict.violations)
        assert (verdict.sentences, verdict.valid_sentences, verdict.broken_entities) == (1, 1, 0)
    text = "\n".join(sentences[:50])
    verdict = check(text)
    assert verdict.ok and verdict.sentences == verdict.valid_sentences == 50 and verdict.entities == 100


def test_generate_is_deterministic_and_varied():
    assert generate(20, 5) == generate(20, 5)
    assert generate(10, 5) == generate(20, 5)[:10]
    assert generate(20, 5) != generate(20, 6)
    assert len(set(generate(2000, 0))) > 1990  # the language has space_size() sentences
    assert space_size() == 64 * 42 * 12 * 12 > 350_000
    with pytest.raises(ValueError, match="n="):
        generate(-1, 0)


def test_example_sentence_reads_as_documented():
    assert sentence(FACTS) == f"Tom {TOM[1]} of San Diego has 3 cats and 1 dog at home, so Tom has 4 pets in all."


@pytest.mark.parametrize(
    ("slot", "word", "rule", "flagged"),
    [
        ("first", "Ana", "entity", f"Ana {TOM[1]}"),  # a real first name, but not with this surname
        ("last", "Reyes", "entity", "Tom Reyes"),
        ("city1", "New", "entity", "New Diego"),  # "New" and "Diego" are both city words
        ("city2", "York", "entity", "San York"),
        ("recall", "Ana", "agreement", "Ana"),  # the sentence is about Tom
        ("noun1", "cat", "agreement", "cat"),  # 3 cat
        ("noun2", "dogs", "agreement", "dogs"),  # 1 dogs
        ("noun1", "dogs", "grammar", "dogs"),  # the cats come first, then the dogs
        ("sum", "5", "sum", "5"),
        ("count1", "4", "sum", "4"),
        ("count2", "2", "sum", "4"),
        ("so", "and", "grammar", "and"),
        ("pets", "cats", "grammar", "cats"),
        ("of", "in", "grammar", "in"),
        ("first", "Reyes", "grammar", "Reyes"),
        ("count1", "13", "grammar", "13"),  # counts are 1..12; only the sum may be larger
        ("has2", "had", "grammar", "had"),
    ],
)
def test_each_single_word_corruption_names_its_rule(slot, word, rule, flagged):
    text = corrupt(slot, word)
    verdict = check(text)
    assert not verdict.ok
    assert rule in verdict.rules()
    assert flagged in [v.text for v in verdict.violations if v.rule == rule]
    for v in verdict.violations:
        assert text[v.start:v.end] == v.text and v.rule in RULES
    assert verdict.valid_sentences == 0 and verdict.sentences == 1


def test_every_single_word_substitution_is_detected_except_another_city():
    """Every word but the city's is tied to another word, so changing it breaks a rule; the city is
    the one free choice stated once, and changing one of its words either breaks the name or names
    another city of the world (the only one-word change that gives a valid sentence)."""
    city_slots = (SLOTS.index("city1"), SLOTS.index("city2"))
    for s in generate(2, 99) + [sentence(FACTS)]:
        for i, w in enumerate(words(s)):
            for other in (v for v in VOCABULARY if v != w.text):
                broken = s[: w.start] + other + s[w.end:]
                if i in city_slots:
                    city = [x.text for x in words(broken)[city_slots[0]:city_slots[1] + 1]]
                    assert check(broken).ok == (tuple(city) in CITIES), broken
                else:
                    assert not check(broken).ok, broken


def test_deleted_or_extra_word_is_grammar():
    words = FACTS.words()
    short = render(words[:5] + words[6:])
    long = render(words[:5] + ["has"] + words[5:])
    for text in (short, long):
        assert "grammar" in check(text).rules()


def test_truncated_sentence_is_checked_as_a_prefix():
    s = sentence(FACTS)
    for cut in range(len(s)):
        prefix = s[:cut]
        if prefix.endswith(" ") or not prefix:
            verdict = check(prefix)
            assert verdict.ok and verdict.sentences == 0, prefix
    bad = corrupt("recall", "Ana")
    assert "agreement" in check(bad[: bad.index("pets")]).rules()  # already wrong, whatever follows


def test_entity_counts_measure_broken_names():
    verdict = check(corrupt("city1", "New") + " " + sentence(FACTS))
    assert verdict.entities == 4 and verdict.broken_entities == 1
    assert verdict.sentences == 2 and verdict.valid_sentences == 1
    assert ("New", "Diego") not in CITIES


def test_token_violations_maps_spans_to_pieces():
    text = corrupt("sum", "9")
    pieces = [text[:3]] + [" " + w for w in text[4:].split(" ")]
    assert "".join(pieces) == text
    marks = token_violations(pieces, check(text))
    flagged = [p for p, vs in zip(pieces, marks) if vs]
    assert flagged == [" 9"] and marks[pieces.index(" 9")][0].rule == "sum"


def test_check_rejects_non_text():
    with pytest.raises(ValueError, match="text="):
        check(None)  # type: ignore[arg-type]


def test_world_prompts_are_valid_sentence_starts():
    from dllm_viz.world.score import WORLD_PROMPTS

    for prompt in WORLD_PROMPTS:
        verdict = check(prompt + " ")
        assert verdict.ok and verdict.sentences == 0, (prompt, verdict.violations)
