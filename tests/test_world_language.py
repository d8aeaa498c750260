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
    from dllm_viz.studies.world_score import WORLD_PROMPTS

    for prompt in WORLD_PROMPTS:
        verdict = check(prompt + " ")
        assert verdict.ok and verdict.sentences == 0, (prompt, verdict.violations)


# ----- issue 30, item 8: sums out of range, cut words, spaces, empty texts, resynchronisation -----
BIG = Facts(person=TOM, city=("San", "Diego"), counts=(12, 11))  # "... so Tom has 23 pets in all."


@pytest.mark.parametrize("word", ["25", "1", "0", "99"])
def test_a_sum_no_counts_can_make_is_a_sum_error_not_grammar(word):
    verdict = check(corrupt("sum", word))
    assert verdict.rules() == {"sum"} and [v.text for v in verdict.violations] == [word]
    # without stated counts, a sum outside 2..24 is still a sum error
    unknown = corrupt("count1", "13").replace(" 4 pets", f" {word} pets")
    assert "sum" in check(unknown).rules() and [v.text for v in check(unknown).violations if v.rule == "sum"] == [word]


def test_a_text_cut_inside_a_word_is_checked_as_a_prefix():
    for s in (sentence(BIG), sentence(FACTS), *generate(30, 7)):
        for cut in range(1, len(s)):
            verdict = check(s[:cut])
            assert verdict.ok and verdict.sentences == 0, (s[:cut], verdict.violations)
    cut = sentence(BIG)[: sentence(BIG).index("23") + 1]
    assert cut.endswith("so Tom has 2") and check(cut).ok  # "23" repairs it
    assert check(cut[:-1] + "3").rules() == {"sum"}  # no number that starts with 3 is 12 + 11
    assert check(f"Tom {TOM[1]} of San Di").ok and check(f"Tom {TOM[1]} of San Yo").rules() == {"entity"}
    assert check("Tom Re").rules() == {"entity"}  # no surname of Tom starts with "Re"
    assert check("Tom Xy").rules() == {"grammar"}


@pytest.mark.parametrize(
    ("old", "new", "flagged"),
    [("3 cats", "3cats", "3cats"), ("home, so", "home,so", ",so"), ("home, so", "home , so", "home ,"),
     ("so Tom", "so  Tom", "so  Tom"), ("so Tom", "so\nTom", "so\nTom"), ("in all.", "in all .", "all ."),
     ("Tom has", "Tomhas", None)],
)
def test_spaces_between_words_are_checked(old, new, flagged):
    text = sentence(FACTS).replace(old, new)
    assert text != sentence(FACTS)
    verdict = check(text)
    assert verdict.rules() == {"grammar"} and verdict.sentences == 1 and verdict.valid_sentences == 0
    if flagged is not None:
        assert [v.text for v in verdict.violations] == [flagged]


def test_sentences_need_whitespace_between_them():
    one = sentence(FACTS)
    assert check(one + "\n" + one).valid and check(one + " " + one).valid
    verdict = check(one + one)
    # One spacing fault between them (issue 42): not a fault of either sentence, and not a valid text.
    assert verdict.rules() == {"grammar"} and (verdict.sentences, verdict.valid_sentences) == (2, 2)
    assert [v.text for v in verdict.violations] == [".Tom"] and not verdict.valid
    bad = one.replace(" has", " have", 1)
    verdict = check(one + bad)
    assert (verdict.sentences, verdict.valid_sentences) == (2, 1) and len(verdict.violations) == 2


def test_a_text_starts_with_its_first_word():
    """Issue 42: leading whitespace was accepted (' Tom Lopez of San Diego ...')."""
    one = sentence(FACTS)
    for lead in (" ", "\n", "  \t"):
        verdict = check(lead + one)
        assert verdict.rules() == {"grammar"} and not verdict.valid
        assert [v.text for v in verdict.violations] == [lead + one.split()[0]]
        assert (verdict.sentences, verdict.valid_sentences) == (1, 1)  # the sentence itself is fine
    assert check(one).valid and check("   ").ok  # nothing written yet: no word to start with


def test_a_text_without_a_complete_sentence_is_not_a_valid_run():
    from types import SimpleNamespace

    from dllm_viz.studies.world_score import correctness

    for text in ("", "   ", "Tom Lopez of", sentence(FACTS)[:-1]):
        verdict = check(text)
        assert verdict.ok and not verdict.valid and verdict.sentences == 0
    assert check(sentence(FACTS)).valid and check(sentence(FACTS) + " Tom").valid
    runs = [SimpleNamespace(prompt_text="Tom", text=""), SimpleNamespace(prompt_text="", text=""),
            SimpleNamespace(prompt_text="", text=sentence(FACTS))]
    assert correctness(runs)["valid_runs"]["k"] == 1


@pytest.mark.parametrize("at", [0, 1, 5, 10, 15, 20, 21])
@pytest.mark.parametrize("extra", ["has", "Tom", "cats", "7", "zebra"])
def test_one_inserted_word_is_one_violation_and_the_rest_reads_in_place(at, extra):
    words = FACTS.words()
    text = render(words[:at] + [extra] + words[at:])
    verdict = check(text)
    assert len(verdict.violations) == 1 and verdict.rules() == {"grammar"}, verdict.violations
    (v,) = verdict.violations
    assert v.text == extra  # the inserted word (or an identical neighbour of it), nothing after it
    assert verdict.sentences == 1 and verdict.entities == 2


@pytest.mark.parametrize("at", range(len(SLOTS) - 1))
def test_one_deleted_word_is_one_violation(at):
    words = FACTS.words()
    text = render(words[:at] + words[at + 1:])
    verdict = check(text)
    assert len(verdict.violations) == 1 and verdict.rules() == {"grammar"}, (text, verdict.violations)
