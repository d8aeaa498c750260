"""The page's strings, one package per language: `en` (the reference), `zh`, and any other found here.

A language is one package of this one holding `NAME` (its own name on the language switch) and
`STRINGS` (key -> text), gathered (`gather`) from its modules, one topic each (`page`: the page, its
widgets, views and tabs; `rules`: the rules beyond the article's loop); it is found by its folder, so a
third language is one new folder. Keys are short English identifiers; every language has exactly the
keys of `en` (refused at import otherwise), so switching language never shows a raw key. `t(key, lang)` is the one lookup.
"""
from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

REFERENCE = "en"  # the language every other translates


def gather(*topics: ModuleType) -> dict[str, str]:
    """A language's `STRINGS` from its topic modules' (each a `STRINGS` dict); a key in two of them is refused
    (ImportError, naming it), as a dict literal would let the later one win unseen."""
    out: dict[str, str] = {}
    for topic in topics:
        twice = sorted(out.keys() & topic.STRINGS.keys())
        if twice:
            raise ImportError(f"{topic.__name__}: keys already in another topic of its language {twice}")
        out |= topic.STRINGS
    return out


def _languages() -> dict[str, ModuleType]:
    """The language modules of this package, the reference first, then by code."""
    codes = sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))
    return {code: importlib.import_module(f"{__name__}.{code}") for code in sorted(codes, key=lambda c: c != REFERENCE)}


def check_tables(tables: dict[str, dict[str, str]]) -> None:
    """Refuse a language with a key the reference lacks or without one it has (ImportError, naming them)."""
    reference = tables[REFERENCE]
    for code, table in tables.items():
        missing, extra = sorted(reference.keys() - table.keys()), sorted(table.keys() - reference.keys())
        if missing or extra:
            raise ImportError(f"strings.{code}: keys missing {missing}, keys not in strings.{REFERENCE} {extra}")


LANGUAGES = _languages()
LANGS = tuple(LANGUAGES)
LANG_CHOICES = tuple((module.NAME, code) for code, module in LANGUAGES.items())
check_tables({code: module.STRINGS for code, module in LANGUAGES.items()})
STRINGS: dict[str, tuple[str, ...]] = {key: tuple(LANGUAGES[code].STRINGS[key] for code in LANGS)
                                       for key in LANGUAGES[REFERENCE].STRINGS}  # key -> its text per language


def t(key: str, lang: str = "en", **values: object) -> str:
    """The string `key` in `lang` (one of `LANGS`), formatted with `values`."""
    if lang not in LANGUAGES:
        raise ValueError(f"lang={lang!r} is invalid: expected one of {' | '.join(LANGS)}")
    text = LANGUAGES[lang].STRINGS[key]
    return text.format(**values) if values else text


def example_label(name: str, lang: str) -> str:
    """An example trace's name in `lang` (names without a translation are shown as they are)."""
    try:
        return t(f"ex_{name}", lang)
    except KeyError:
        return name
