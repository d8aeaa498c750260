"""The world language: one definition (lexicon + sentence template) shared by the generator and the checker.

Every sentence states one small fact about one person::

    Tom Lopez of San Diego has 3 cats and 1 dog at home, so Tom has 4 pets in all.

Each word is either fixed by the template, a free choice, or tied to other words by a rule the
checker can name:

- ``entity``: people ("Tom Lopez") and cities ("San Diego") are two-word names valid only
  together; "San York" is not a city. The first words are shared between cities ("San Diego",
  "San Mesa") and the second words too ("New York", "Port York"), so a model that draws both words
  of a name independently (parallel decoding) often writes a name that does not exist.
- ``agreement``: the person introduced first is referred to fifteen words later by their first
  name ("so Tom has"), which must be the same name; each noun agrees with its count ("1 cat", "3 cats").
- ``sum``: the number of pets is the sum of the two counts stated before it.
- ``grammar``: a word that does not belong in its slot, a missing or an extra word, or the spaces
  between words (one between two words, none before "," and ".", some between sentences).

The free choices are the person, the city and the two counts. That is what lets a schedule that
confirms the most confident words first decode the language: a word tied to a likely choice is
likelier or less likely than it ("cats" 11/12 against its count's 1/12; a city's first word 1/6
against its second word's 1/14), so the two are drawn in different steps. The words that are
equally uncertain (the first name, the surname and the recalled name, 1/64 each; a count and the
sum, 1/12) are the least likely words of a sentence, which the quality preset confirms one per step
at its end; a faster schedule draws them side by side and breaks them, the parallel-decoding
failure. A word that repeated a likelier choice, such as a city recalled at the end of the
sentence, would sit in the middle of the ranking and be drawn with it in one wide step
(dllm_viz/assets/world/MODEL_CARD.md, "Why it looks like this").

Until December 2026 the person was referred to by a pronoun ("so he has") that agreed with the
first name's gender. A trained model learnt the pronoun from the name but never the name's gender
from the pronoun, which the quality preset needs (it draws the pronoun, p = 1/2, first); the
recalled name carries six bits where the pronoun carried one (MODEL_CARD, "The pronoun version").
"""
from __future__ import annotations

from dataclasses import dataclass

# ----- lexicon ---------------------------------------------------------------------------------
FIRST_NAMES = ("Ana", "Tom", "Mia", "Ben", "Eva", "Sam", "Lea", "Max", "Ida", "Leo", "Zoe", "Ian", "Amy", "Jay",
               "Joy", "Kai", "Ivy", "Ned", "Kim", "Otto", "Liz", "Rex", "Meg", "Ray", "Nia", "Sid", "Ora", "Ted",
               "Pam", "Vic", "Rae", "Wes", "Sue", "Zed", "Tia", "Abe", "Uma", "Cal", "Val", "Dan", "Wren", "Eli",
               "Yara", "Gus", "Gia", "Hal", "Hana", "Jon", "Bea", "Ari", "Cleo", "Bo", "Dora", "Cy", "Elle", "Dex",
               "Fay", "Finn", "Gwen", "Hugo", "Iris", "Lou", "June", "Nate")
SURNAMES = ("Reyes", "Lopez", "Berg", "Stone", "Hill", "Wood", "Park", "Moss", "Fox", "Gray", "Hale",
            "Kerr", "Lund", "Marsh", "Nash", "Ortiz", "Pike", "Quinn", "Rowe", "Shaw", "Tate", "Vance",
            "Wolfe", "Ames", "Blake", "Cole", "Dale", "Ellis", "Frost", "Grant", "Hayes", "Irwin",
            "Jensen", "Kent", "Lowe", "Mead", "Noble", "Olsen", "Price", "Reed", "Sloan", "Todd",
            "Upton", "Voss", "Webb", "Young", "Zhou", "Baker", "Adler", "Boyd", "Cruz", "Dunn",
            "Engel", "Flynn", "Gale", "Holt", "Ivers", "Joyce", "Knox", "Lang", "Mills", "North",
            "Oakes", "Pratt")
# Each first name has exactly one surname (1:1): the person is a two-word entity.
PEOPLE: frozenset[tuple[str, str]] = frozenset(zip(FIRST_NAMES, SURNAMES, strict=True))
CITY_FIRST = ("New", "San", "Los", "Port", "Fort", "Lake")
CITY_SECOND = ("York", "Diego", "Angeles", "Haven", "Mesa", "Royal", "Vista", "Grove", "Worth", "Ridge", "Bay",
               "Falls", "Rock", "Point")
# 42 of the 84 pairs are cities: every first word starts 7 of them and every second word ends 3, so
# the first word of a city is a likelier guess (1/6) than the second (1/14). The two are never
# equally uncertain, and a schedule ranking by confidence confirms them in different steps.
CITIES: frozenset[tuple[str, str]] = frozenset(
    tuple(name.split()) for name in (
        "New York", "New Haven", "New Vista", "New Grove", "New Bay", "New Falls", "New Rock",
        "San Diego", "San Mesa", "San Haven", "San Grove", "San Bay", "San Point", "San Ridge",
        "Los Angeles", "Los Royal", "Los Vista", "Los Grove", "Los Worth", "Los Point", "Los Falls",
        "Port Royal", "Port Mesa", "Port Ridge", "Port Falls", "Port Rock", "Port Point", "Port Angeles",
        "Fort Worth", "Fort Diego", "Fort Haven", "Fort Mesa", "Fort Ridge", "Fort Rock", "Fort York",
        "Lake York", "Lake Vista", "Lake Royal", "Lake Bay", "Lake Diego", "Lake Angeles", "Lake Worth",
    )
)
ANIMALS = ("cat", "dog")  # singular forms, in the order the sentence names them; the plural adds "s"
MAX_COUNT = 12  # counts are 1..MAX_COUNT; the sum is 2..2 * MAX_COUNT


def noun(animal: str, count: int) -> str:
    """``noun("cat", 1) == "cat"``, ``noun("cat", 3) == "cats"``."""
    return animal if count == 1 else animal + "s"


# ----- the template ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Facts:
    """The free choices of one sentence; everything else follows from them."""

    person: tuple[str, str]  # a key of PEOPLE
    city: tuple[str, str]  # a member of CITIES
    counts: tuple[int, int]  # cats, dogs; each in 1..MAX_COUNT

    def __post_init__(self) -> None:
        if self.person not in PEOPLE:
            raise ValueError(f"person={self.person!r} is not a person of the world")
        if self.city not in CITIES:
            raise ValueError(f"city={self.city!r} is not a city of the world")
        if len(self.counts) != 2 or any(not (isinstance(c, int) and 1 <= c <= MAX_COUNT) for c in self.counts):
            raise ValueError(f"counts={self.counts!r} must be two integers in [1, {MAX_COUNT}]")

    def words(self) -> list[str]:
        """The sentence as words and punctuation, one entry per template slot."""
        (a, b), (x, y) = self.counts, ANIMALS
        return [*self.person, "of", *self.city, "has", str(a), noun(x, a), "and", str(b), noun(y, b), "at", "home",
                ",", "so", self.person[0], "has", str(a + b), "pets", "in", "all", "."]


# Slot names, in order: the checker reads a sentence slot by slot against this list.
SLOTS = ("first", "last", "of", "city1", "city2", "has", "count1", "noun1", "and", "count2", "noun2", "at", "home",
         ",", "so", "recall", "has2", "sum", "pets", "in", "all", ".")
NUMBERS = tuple(str(i) for i in range(1, 2 * MAX_COUNT + 1))
_LITERALS = {"has2": "has"}  # a template word that occurs twice gets a second slot name
# What may stand in each slot before the cross-slot rules are applied.
SLOT_WORDS: dict[str, frozenset[str]] = {
    "first": frozenset(FIRST_NAMES), "last": frozenset(SURNAMES),
    "city1": frozenset(CITY_FIRST), "city2": frozenset(CITY_SECOND), "recall": frozenset(FIRST_NAMES),
    "count1": frozenset(NUMBERS[:MAX_COUNT]), "count2": frozenset(NUMBERS[:MAX_COUNT]), "sum": frozenset(NUMBERS[1:]),
    "noun1": frozenset(noun(ANIMALS[0], c) for c in (1, 2)), "noun2": frozenset(noun(ANIMALS[1], c) for c in (1, 2)),
    **{slot: frozenset({_LITERALS.get(slot, slot)})
       for slot in ("of", "has", "and", "at", "home", ",", "so", "has2", "pets", "in", "all", ".")},
}
RULES = ("grammar", "entity", "agreement", "sum")
VOCABULARY: tuple[str, ...] = tuple(sorted(set().union(*SLOT_WORDS.values())))

if len(SLOTS) != len(Facts(person=("Tom", SURNAMES[1]), city=("San", "Diego"), counts=(1, 2)).words()):
    raise RuntimeError("world language: SLOTS and Facts.words disagree")  # checked once at import
if set(SLOT_WORDS) != set(SLOTS):
    raise RuntimeError("world language: SLOT_WORDS must name every slot")
