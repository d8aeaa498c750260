"""The page's strings in 中文: every key of `en`, translated (`dllm_viz.app.strings`)."""
from __future__ import annotations

from .. import gather  # relative: a copy of the strings package reads its own
from . import page, rules

NAME = "中文"  # on the language switch

STRINGS: dict[str, str] = gather(page, rules)
