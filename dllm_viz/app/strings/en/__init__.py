"""The page's strings in English: the reference every other language translates (`dllm_viz.app.strings`).

Keys are short English identifiers; a placeholder `{name}` is filled by `t(key, lang, name=...)`.
"""
from __future__ import annotations

from .. import gather  # relative: a copy of the strings package reads its own
from . import page, rules

NAME = "English"  # on the language switch

STRINGS: dict[str, str] = gather(page, rules)
