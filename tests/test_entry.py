"""handlers/entry.py: one trace's chunks as its decode makes them, and what waits on them."""
from __future__ import annotations

import asyncio
import threading
import time

import pytest

from dllm_viz import DecodeConfig, decode
from dllm_viz.app.handlers.entry import Entry, settle
from dllm_viz.app.views import wire
from tests.ui_model import make_text_model


@pytest.fixture(scope="module")
def trace():
    return decode(make_text_model(), ["the cat "], DecodeConfig.preset("balanced", 24, seed=1))[0]


def held(entry: Entry, start: int, hold_for: float, then=None) -> float:
    """How long `entry.hold(start, now + hold_for)` took; `then()` runs on another thread 0.05 s in."""
    async def run() -> float:
        loop = asyncio.get_running_loop()
        began = loop.time()
        await entry.hold(start, began + hold_for)
        return loop.time() - began

    if then is not None:
        threading.Timer(0.05, then).start()
    return asyncio.run(run())


def test_hold_keeps_steps_after_the_first_back_until_the_last_planned_step_or_the_end(trace):
    entry = Entry(wire.encoder_for(trace))
    assert entry.planned == len(trace.steps) >= 3
    assert held(entry, 0, 5.0) < 0.5  # no step yet: nothing to hold back
    entry.stop_key("k")
    entry.add(trace.steps[0])
    assert entry.first_step == 1  # (after the Stop key's chunk)
    assert held(entry, 1, 5.0) < 0.5  # a reader that has not had the first step gets it at once
    assert 0.25 <= held(entry, 2, 0.3) < 2.0  # a reader that has: held for the time given
    for rec in trace.steps[1:-1]:
        entry.add(rec)  # steps that are not the last planned one change nothing
    assert 0.25 <= held(entry, 2, 0.3) < 2.0
    assert held(entry, 2, 5.0, then=lambda: entry.add(trace.steps[-1])) < 2.0  # the last planned step ends it
    assert entry.at_last_step() and held(entry, 2, 5.0) < 0.5


def test_hold_ends_when_the_decode_does(trace):
    for end in (lambda e: e.finish(trace), lambda e: e.end("stopped")):
        entry = Entry(wire.encoder_for(trace))
        entry.add(trace.steps[0])
        assert held(entry, 1, 5.0, then=lambda: end(entry)) < 2.0
        assert entry.state != "live" and held(entry, 1, 5.0) < 0.5


def test_settle_waits_for_the_entries_a_page_reads_only(trace):
    unread, read = Entry(wire.encoder_for(trace)), Entry(wire.encoder_for(trace))
    began = time.monotonic()
    settle([unread], delivered=5.0, drawn=5.0)
    assert time.monotonic() - began < 1.0  # nobody reads it: nothing to wait for
    read.read.set()
    began = time.monotonic()
    settle([read], delivered=0.2, drawn=0.2)
    assert 0.35 <= time.monotonic() - began < 3.0  # read, never delivered nor drawn: both waits run out
    read.delivered.set()
    threading.Timer(0.1, read.drawn.set).start()
    began = time.monotonic()
    settle([read], delivered=5.0, drawn=5.0)
    assert time.monotonic() - began < 3.0  # delivered, then drawn: it goes on once the page says so
