"""The world language: one definition (lexicon + sentence template) shared by the generator and the checker.

Every sentence states one small fact about one person::

    Tom Reyes of San Diego has 3 cats and 1 dog, so he has 4 pets in San Diego.

and each token is either fixed by the template or tied to another token by a rule, so that
changing any single word breaks a rule the checker can name:

- ``entity``: people ("Tom Reyes") and cities ("San Diego") are two-word names valid only
  together; "San York" is not a city. The first words are shared between cities ("San Diego",
  "San Mesa") and the second words too ("New York", "Port York"), so a model that draws both words
  of a name independently (parallel decoding) often writes a name that does not exist.
- ``agreement``: the pronoun agrees with the person's gender ("he"/"she"), the second verb with
  the first ("has ... has" / "had ... had"), each noun with its count ("1 cat", "3 cats").
- ``sum``: the number of pets is the sum of the two counts stated before it.
- ``recall``: the closing city repeats the city stated before.
- ``distinct``: the two animals differ (one cats/cat, one dogs/dog, in either order).
- ``grammar``: a word that does not belong in its slot, or a sentence of the wrong length.

Free choices (person, city, tense, animal order, counts) each appear twice or are covered by the
sum, so the language is an error-detecting code: two valid sentences differ in at least two words.
"""
from __future__ import annotations

from dataclasses import dataclass

# ----- lexicon ---------------------------------------------------------------------------------
FEMALE = ("Ana", "Mia", "Eva", "Lea", "Ida", "Zoe", "Amy", "Joy", "Ivy", "Kim", "Liz", "Meg",
          "Nia", "Ora", "Pam", "Rae", "Sue", "Tia", "Uma", "Val", "Wren", "Yara", "Gia", "Hana")
MALE = ("Tom", "Ben", "Sam", "Max", "Leo", "Ian", "Jay", "Kai", "Ned", "Otto", "Rex", "Ray",
        "Sid", "Ted", "Vic", "Wes", "Zed", "Abe", "Cal", "Dan", "Eli", "Gus", "Hal", "Jon")
SURNAMES = ("Reyes", "Lopez", "Berg", "Stone", "Hill", "Wood", "Park", "Moss", "Fox", "Gray", "Hale",
            "Kerr", "Lund", "Marsh", "Nash", "Ortiz", "Pike", "Quinn", "Rowe", "Shaw", "Tate", "Vance",
            "Wolfe", "Ames", "Blake", "Cole", "Dale", "Ellis", "Frost", "Grant", "Hayes", "Irwin",
            "Jensen", "Kent", "Lowe", "Mead", "Noble", "Olsen", "Price", "Reed", "Sloan", "Todd",
            "Upton", "Voss", "Webb", "Young", "Zhou", "Baker")
# Each first name has exactly one surname (1:1): the person is a two-word entity.
PEOPLE: dict[tuple[str, str], str] = {
    **{(first, last): "she" for first, last in zip(FEMALE, SURNAMES[0::2])},
    **{(first, last): "he" for first, last in zip(MALE, SURNAMES[1::2])},
}
CITY_FIRST = ("New", "San", "Los", "Port", "Saint", "El", "Fort", "Lake")
CITY_SECOND = ("York", "Diego", "Angeles", "Haven", "Mesa", "Royal", "Vista", "Grove", "Worth")
# 36 of the 72 pairs are cities; every first word starts 4 to 6 of them and every second word ends 4.
CITIES: frozenset[tuple[str, str]] = frozenset(
    tuple(name.split()) for name in (
        "New York", "New Haven", "New Royal", "New Grove", "New Mesa",
        "San Diego", "San Mesa", "San Vista", "San Worth",
        "Los Angeles", "Los Royal", "Los Grove", "Los Haven", "Los Diego",
        "Port York", "Port Vista", "Port Worth", "Port Angeles",
        "Saint York", "Saint Haven", "Saint Diego", "Saint Grove",
        "El Mesa", "El Royal", "El Vista", "El Angeles",
        "Fort Worth", "Fort York", "Fort Haven", "Fort Royal",
        "Lake Grove", "Lake Diego", "Lake Angeles", "Lake Vista", "Lake Mesa", "Lake Worth",
    )
)
ANIMALS = ("cat", "dog")  # singular forms; the plural adds "s"
TENSES = ("has", "had")
PRONOUNS = ("he", "she")
MAX_COUNT = 9  # counts are 1..MAX_COUNT; the sum is 2..2 * MAX_COUNT


def noun(animal: str, count: int) -> str:
    """``noun("cat", 1) == "cat"``, ``noun("cat", 3) == "cats"``."""
    return animal if count == 1 else animal + "s"


# ----- the template ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Facts:
    """The free choices of one sentence; everything else follows from them."""

    person: tuple[str, str]  # a key of PEOPLE
    city: tuple[str, str]  # a member of CITIES
    tense: str  # "has" | "had"
    animals: tuple[str, str]  # ("cat", "dog") or ("dog", "cat")
    counts: tuple[int, int]  # each in 1..MAX_COUNT

    def __post_init__(self) -> None:
        if self.person not in PEOPLE:
            raise ValueError(f"person={self.person!r} is not a person of the world")
        if self.city not in CITIES:
            raise ValueError(f"city={self.city!r} is not a city of the world")
        if self.tense not in TENSES:
            raise ValueError(f"tense={self.tense!r} must be one of {TENSES}")
        if sorted(self.animals) != sorted(ANIMALS):
            raise ValueError(f"animals={self.animals!r} must be {ANIMALS} in either order")
        if any(not 1 <= c <= MAX_COUNT for c in self.counts):
            raise ValueError(f"counts={self.counts!r} must each be in [1, {MAX_COUNT}]")

    def words(self) -> list[str]:
        """The sentence as words and punctuation, one entry per template slot."""
        (a, b), (x, y) = self.counts, self.animals
        return [*self.person, "of", *self.city, self.tense, str(a), noun(x, a), "and", str(b), noun(y, b), ",",
                "so", PEOPLE[self.person], self.tense, str(a + b), "pets", "in", *self.city, "."]


# Slot names, in order: the checker reads a sentence slot by slot against this list.
SLOTS = ("first", "last", "of", "city1", "city2", "verb", "count1", "noun1", "and", "count2", "noun2", ",",
         "so", "pronoun", "verb2", "sum", "pets", "in", "recall1", "recall2", ".")
NUMBERS = tuple(str(i) for i in range(1, 2 * MAX_COUNT + 1))
NOUNS = tuple(noun(a, c) for a in ANIMALS for c in (1, 2))
# What may stand in each slot before the cross-slot rules are applied.
SLOT_WORDS: dict[str, frozenset[str]] = {
    "first": frozenset(FEMALE + MALE), "last": frozenset(SURNAMES),
    "city1": frozenset(CITY_FIRST), "city2": frozenset(CITY_SECOND),
    "recall1": frozenset(CITY_FIRST), "recall2": frozenset(CITY_SECOND),
    "verb": frozenset(TENSES), "verb2": frozenset(TENSES), "pronoun": frozenset(PRONOUNS),
    "count1": frozenset(NUMBERS[:MAX_COUNT]), "count2": frozenset(NUMBERS[:MAX_COUNT]), "sum": frozenset(NUMBERS),
    "noun1": frozenset(NOUNS), "noun2": frozenset(NOUNS),
    **{literal: frozenset({literal}) for literal in ("of", "and", ",", "so", "pets", "in", ".")},
}
RULES = ("grammar", "entity", "agreement", "sum", "recall", "distinct")
VOCABULARY: tuple[str, ...] = tuple(sorted(set().union(*SLOT_WORDS.values())))

if len(SLOTS) != len(Facts(person=("Tom", SURNAMES[1]), city=("San", "Diego"), tense="has", animals=ANIMALS,
                           counts=(1, 2)).words()):
    raise RuntimeError("world language: SLOTS and Facts.words disagree")  # checked once at import
if set(SLOT_WORDS) != set(SLOTS):
    raise RuntimeError("world language: SLOT_WORDS must name every slot")
