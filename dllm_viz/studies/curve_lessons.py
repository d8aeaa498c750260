"""The lesson "why parallel decoding breaks": the measured numbers its prose quotes.

The prose (English and Chinese) lives with the other lessons' in ``dllm_viz/assets/lessons.yaml``, under
``curve_lessons``; each entry names the numbers it quotes (``quotes``), and `numbers` reads them from
the measured curves (``dllm_viz/assets/tasks/curves.json``, written by ``bench/parallel_tasks.py``), so a test
can check that every quoted number is the measured one in both languages.
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
ONE, ALL = 1, 16  # constant k: one token per step; every answer token in one step (answers hold <= 16)


def numbers(curves: dict[str, Any]) -> dict[str, str]:
    """The quotable numbers, formatted as the prose writes them, by key:
    ``{family}.{decoder}.one`` / ``.all``: right answers in percent with one token per step / all in one step;
    ``{family}.tpf_all``: tokens per forward of the one-step decode; ``{family}.bits_all``: the mean
    total correlation of one-step runs (the oracle's, in bits); ``{family}.{decoder}.t90``: tokens per
    forward at threshold 0.9. The revision curves (``revision``, issue 32 item 5), and the plain threshold
    beside them, at each threshold v: ``{family}.{decoder}.{rule}{100 v}.rate`` (percent) and ``.tpf``
    (one decimal), rule ``thr`` for the plain threshold, ``rcr`` / ``remdm`` / ``wino`` for the rules."""
    out: dict[str, str] = {}
    for family, f in curves["families"].items():
        for decoder in ("model", "oracle"):
            by_k = {p["value"]: p for p in f[decoder]["constant_k"]}
            out[f"{family}.{decoder}.one"] = f"{100 * by_k[ONE]['rate']:.0f}%"
            out[f"{family}.{decoder}.all"] = f"{100 * by_k[ALL]['rate']:.0f}%"
            if "threshold" in f[decoder]:
                t90 = next(p for p in f[decoder]["threshold"] if p["value"] == 0.9)
                out[f"{family}.{decoder}.t90"] = f"{t90['tpf']:.1f}"
            curves = {"thr": f[decoder]["threshold"],
                      **{k.removeprefix("threshold_"): pts for k, pts in f.get("revision", {}).get(decoder, {}).items()}}
            for rule, pts in curves.items():
                for p in pts:
                    key = f"{family}.{decoder}.{rule}{round(100 * p['value'])}"
                    out[f"{key}.rate"], out[f"{key}.tpf"] = f"{100 * p['rate']:.0f}%", f"{p['tpf']:.1f}"
        full = {p["value"]: p for p in f["oracle"]["constant_k"]}[ALL]
        out[f"{family}.tpf_all"] = f"{full['tpf']:.1f}"
        out[f"{family}.bits_all"] = f"{full['bound_bits']:.1f}"
    return out


def load_curves(path: Path = CURVES_PATH) -> dict[str, Any]:
    return json.loads(path.read_text())


def load_curve_lessons(path: Path = LESSONS_PATH) -> dict[str, dict[str, Any]]:
    """The ``curve_lessons`` of the lessons file, by key; ValueError when one lacks a language or a field.
    An entry's optional ``revision`` (text, quotes) is its paragraph on the revision rules' curves."""
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
