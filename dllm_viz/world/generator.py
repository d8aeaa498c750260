"""Sentences of the world language, drawn from an explicitly seeded ``random.Random``."""
from __future__ import annotations

import random

from dllm_viz.world.language import CITIES, MAX_COUNT, PEOPLE, Facts

_PEOPLE = sorted(PEOPLE)  # sorted: the draw depends only on the seed, never on set/dict order
_CITIES = sorted(CITIES)


def render(words: list[str]) -> str:
    """Words joined by spaces, with no space before "," and "." (the tokenizer's pre-split agrees)."""
    return " ".join(words).replace(" ,", ",").replace(" .", ".")


def sample_facts(rng: random.Random) -> Facts:
    """One uniformly drawn set of free choices."""
    return Facts(
        person=rng.choice(_PEOPLE),
        city=rng.choice(_CITIES),
        counts=(rng.randint(1, MAX_COUNT), rng.randint(1, MAX_COUNT)),
    )


def sentence(facts: Facts) -> str:
    return render(facts.words())


def generate(n: int, seed: int) -> list[str]:
    """``n`` sentences; the same ``(n, seed)`` always gives the same list, and a prefix of a longer one."""
    if not isinstance(n, int) or n < 0:
        raise ValueError(f"n={n!r} must be an integer >= 0")
    if not isinstance(seed, int):
        raise ValueError(f"seed={seed!r} must be an integer")
    rng = random.Random(seed)
    return [sentence(sample_facts(rng)) for _ in range(n)]


def space_size() -> int:
    """How many distinct sentences the language has."""
    return len(PEOPLE) * len(CITIES) * MAX_COUNT**2
