"""outputs.py: handlers' records name the page's components; a group held whole reads as its components."""
from __future__ import annotations

import dataclasses

import pytest

from dllm_viz.app.handlers import outputs
from dllm_viz.app.handlers.adapters import CANVAS_KNOBS, PLUGIN_KNOBS
from dllm_viz.app.handlers.outputs import BOXES
from dllm_viz.app.handlers.outputs import (
    GROUPS,
    KEEP,
    CompareCleared,
    CompareShown,
    LessonShown,
    Relabelled,
    fields_of,
    keep,
    values_of,
)
from dllm_viz.app.layout.page import Page

RECORDS = [c for c in vars(outputs).values()
           if isinstance(c, type) and dataclasses.is_dataclass(c) and c.__module__ == outputs.__name__]


def test_no_record_inherits_from_another():
    assert len(RECORDS) >= 14
    assert {c.__name__: c.__bases__ for c in RECORDS if c.__bases__ != (object,)} == {}


@pytest.mark.parametrize("record", RECORDS, ids=lambda c: c.__name__)
def test_every_record_names_page_components_once(record):
    names = fields_of(record)
    # Page.rule_knobs (the plug-ins' knobs, the canvas's with their "auto" switches) and Page.boxes, by name
    page_fields = {f.name for f in dataclasses.fields(Page)} | set(PLUGIN_KNOBS) | set(CANVAS_KNOBS) | set(BOXES)
    assert len(names) == len(set(names)) and set(names) <= page_fields


def test_a_group_reads_as_its_components_in_order():
    side = {"ref": "h"}
    shown = CompareShown(cmp_summary="s", cmp_canvas_a=side, cmp_canvas_b="b", cmp_facts_a="fa", cmp_facts_b="fb",
                         cmp_traces=None)
    lesson = LessonShown(compare=shown, cmp_a="A", cmp_b="B", neighbours=0, lesson_key="k", lesson_text="t")
    assert fields_of(LessonShown)[:6] == ("cmp_summary", "cmp_canvas_a", "cmp_canvas_b", "cmp_facts_a", "cmp_facts_b",
                                          "cmp_traces")
    assert values_of(lesson)["cmp_canvas_a"] is side and values_of(lesson)["lesson_key"] == "k"  # untouched, not copied
    assert fields_of(CompareCleared) == fields_of(CompareShown)


def test_keep_leaves_every_component_of_a_nested_record():
    kept = keep(Relabelled)
    assert isinstance(kept.compare, CompareShown)
    assert list(values_of(kept)) == list(fields_of(Relabelled))
    assert all(v is KEEP for v in values_of(kept).values())


def test_groups_are_records_of_this_module():
    assert set(GROUPS) <= set(RECORDS)
