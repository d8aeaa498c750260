"""The lessons that read measured curves: "why parallel decoding breaks" beside the task curves.

The prose (English and Chinese) lives with the other lessons' in ``dllm_viz/assets/lessons.yaml``, under
``curve_lessons``, with what it quotes from and claims of the measured curves
(``dllm_viz/assets/tasks/curves.json``, written by ``bench/parallel_tasks.py``) in the lessons' one
format (``checks``, `dllm_viz.studies.claims`).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from dllm_viz import assets

CURVES_PATH = assets.path("tasks", "curves.json")
LESSONS_PATH = assets.path("lessons.yaml")
LANGS = ("en", "zh")


def load_curves(path: Path = CURVES_PATH) -> dict[str, Any]:
    return json.loads(path.read_text())


def load_curve_lessons(path: Path = LESSONS_PATH) -> dict[str, dict[str, Any]]:
    """The ``curve_lessons`` of the lessons file, by key; ValueError when one lacks a language or a field.
    An entry's optional ``revision`` (its text) is its paragraph on the revision rules' curves."""
    entries = yaml.safe_load(path.read_text(encoding="utf-8")).get("curve_lessons", [])
    out = {}
    for entry in entries:
        for name in ("title", "text"):
            if set(entry.get(name, {})) != set(LANGS):
                raise ValueError(f"{path.name}: curve lesson {entry.get('key')!r} {name} needs exactly {LANGS}")
        if "revision" in entry and set(entry["revision"].get("text", {})) != set(LANGS):
            raise ValueError(f"{path.name}: curve lesson {entry.get('key')!r} revision text needs exactly {LANGS}")
        out[entry["key"]] = entry
    return out
