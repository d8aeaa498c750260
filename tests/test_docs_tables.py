"""studies/tables.py: the docs' study tables are what their JSON files give, regenerated in memory and compared,
so a re-measurement that changes a number fails here until `python -m dllm_viz.studies.tables` rewrites them."""
from __future__ import annotations

from pathlib import Path

import pytest

from dllm_viz.studies import tables

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted((ROOT / "docs").glob("*.md"))


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_every_marked_table_equals_its_json(page):
    text = page.read_text(encoding="utf-8")
    assert tables.fill(text) == text, f"docs/{page.name} is stale: run `python -m dllm_viz.studies.tables`"


def test_every_table_is_shown_once_and_every_marker_names_one():
    shown = [m.group(2) for page in PAGES for m in tables.MARK.finditer(page.read_text(encoding="utf-8"))]
    assert sorted(shown) == sorted(tables.TABLES)
    opened = sum(page.read_text(encoding="utf-8").count("<!-- table:") for page in PAGES)
    assert opened == len(shown), "a `<!-- table: NAME -->` without its `<!-- /table -->`"


def test_a_changed_measurement_is_found_and_rewritten(tmp_path, monkeypatch):
    page = tmp_path / "page.md"
    page.write_text("before\n<!-- table: t -->\n| a |\n|---|\n| 1 |\n<!-- /table -->\nafter\n", encoding="utf-8")
    monkeypatch.setattr(tables, "TABLES", {"t": lambda: "| a |\n|---|\n| 2 |"})
    assert tables.main([str(page), "--check"]) == 1 and "| 1 |" in page.read_text(encoding="utf-8")
    assert tables.main([str(page)]) == 0
    assert page.read_text(encoding="utf-8") == ("before\n<!-- table: t -->\n| a |\n|---|\n| 2 |\n"
                                                "<!-- /table -->\nafter\n")
    assert tables.main([str(page), "--check"]) == 0
    page.write_text("<!-- table: nope -->\n<!-- /table -->\n", encoding="utf-8")
    with pytest.raises(ValueError, match="nope"):
        tables.main([str(page)])


def test_the_shipped_table_bolds_the_better_side():
    measured = tables.lessons.load_measured()
    row = tables.shipped_pairs_table(measured).splitlines()[2]
    llada = measured["shipped_llada"]
    assert row.startswith("| LLaDA, fixed steps | 32 | **") and f"{llada['a']['draws']:.0f} / 64 |" in row
