"""English / 中文 strings for the playground: labels, teaching text, figure titles.

One lookup over per-area tables (`strings_page`: page and widgets; `strings_views`: canvas,
figures, inspector, facts; `strings_tabs`: Compare, Sweep, About, errors; `strings_errors`: the
checks' messages as `errors.localize` renders them; `strings_revision`: confirmations taken back,
issue 28), merged at import. Keys
are short English identifiers; every key has both languages (a test checks it), so switching
language never shows a raw key.
"""
from __future__ import annotations

from dllm_viz.app.strings import errors as strings_errors
from dllm_viz.app.strings import page as strings_page
from dllm_viz.app.strings import revision as strings_revision
from dllm_viz.app.strings import tabs as strings_tabs
from dllm_viz.app.strings import views as strings_views

LANGS = ("en", "zh")
LANG_CHOICES = (("English", "en"), ("中文", "zh"))

TABLES = (strings_page.STRINGS, strings_views.STRINGS, strings_tabs.STRINGS, strings_errors.STRINGS,
          strings_revision.STRINGS)


def _merged(tables: tuple[dict[str, tuple[str, str]], ...]) -> dict[str, tuple[str, str]]:
    """One table from the per-area ones; a key defined twice is a mistake, refused at import."""
    out: dict[str, tuple[str, str]] = {}
    for table in tables:
        twice = out.keys() & table.keys()
        if twice:
            raise ImportError(f"i18n: keys defined in two string tables: {sorted(twice)}")
        out.update(table)
    return out


STRINGS = _merged(TABLES)


def t(key: str, lang: str = "en", **values: object) -> str:
    """The string `key` in `lang` ("en" | "zh"), formatted with `values`."""
    if lang not in LANGS:
        raise ValueError(f"lang={lang!r} is invalid: expected one of {' | '.join(LANGS)}")
    text = STRINGS[key][LANGS.index(lang)]
    return text.format(**values) if values else text


def example_label(name: str, lang: str) -> str:
    """An example trace's name in `lang` (names without a translation are shown as they are)."""
    try:
        return t(f"ex_{name}", lang)
    except KeyError:
        return name
