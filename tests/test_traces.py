"""handlers/traces.py: each session's traces by handle, what the page reads, bounded and private."""
from __future__ import annotations

import asyncio
import json
import threading
import time

import pytest

from dllm_viz import DecodeConfig, decode
from dllm_viz.app.handlers.traces import TraceStore, new_handle
from dllm_viz.app.views import wire
from dllm_viz.core.schedules import planned_steps
from tests.ui_model import make_text_model


@pytest.fixture(scope="module")
def traces():
    model = make_text_model()
    return [decode(model, ["the cat "], DecodeConfig.preset("balanced", 24, seed=s))[0] for s in range(4)]


def read(store: TraceStore, session, handle, start=0, timeout=5.0) -> dict:
    return json.loads(asyncio.run(store.read(session, handle, start, timeout=timeout)))


def test_a_handle_reads_only_in_its_own_session(traces):
    store = TraceStore()
    mine = store.add("s1", traces[0])
    got = read(store, "s1", mine.handle)
    assert got["state"] == "done" and got["next"] == 1 and got["chunks"] == wire.chunks(traces[0])
    # another session: as if it did not exist (a well-formed handle is waited for: a decode may yet make it)
    assert read(store, "s2", mine.handle, timeout=0.2)["state"] == "gone"
    assert read(store, None, mine.handle)["state"] == "gone"  # no session at all
    public = store.publish(traces[1])
    assert read(store, "anyone", public.handle)["state"] == "done"
    assert read(store, None, public.handle)["state"] == "done"
    assert len(mine.handle) >= 21 and mine.handle != store.add("s1", traces[0]).handle  # 128 random bits, each new


@pytest.mark.parametrize("handle, start", [(None, 0), (["x"], 0), ("nope", 0), ("{h}", -1), ("{h}", "0"), ("{h}", True),
                                           ("{h}", 1.5)])
def test_a_malformed_read_is_gone_and_nothing_else(traces, handle, start):
    store = TraceStore()
    shown = store.add("s", traces[0])
    handle = shown.handle if handle == "{h}" else handle
    assert read(store, "s", handle, start) == {"chunks": [], "state": "gone", "next": 0}


def test_a_trace_added_later_reads_as_one_added_at_once(traces, monkeypatch):
    """An upload's chunks are made on a thread while the upload answers: the page reads the same chunks, or
    a failed state when making them failed (it never waits on a trace that will not come)."""
    store = TraceStore()
    now, later = store.add("s", traces[0]), store.add("s", traces[0], later=True)
    assert read(store, "s", later.handle) == read(store, "s", now.handle) and read(store, "s", now.handle)["chunks"]
    monkeypatch.setattr(wire, "done", lambda trace: 1 / 0)
    monkeypatch.setattr(threading, "excepthook", lambda args: None)  # the thread's error, once reported
    assert read(store, "s", store.add("s", traces[1], later=True).handle)["state"] == "failed"


def test_a_stored_traces_chunks_are_made_with_the_collector_paused(traces, monkeypatch):
    """A stored trace's chunks (an upload's: hundreds of thousands of new lists and numbers for 3 MB) are made with
    Python's cyclic collector off, as its parse is (core.trace.collector_paused); on again after, and after a
    failure too."""
    import gc

    seen, chunk = [], wire.Encoder.chunk

    def watched(self, *args, **kwargs):
        seen.append(gc.isenabled())
        return chunk(self, *args, **kwargs)

    monkeypatch.setattr(wire.Encoder, "chunk", watched)
    assert gc.isenabled()
    def encoded() -> None:  # the thread that made an upload's chunks has ended (a read may answer before it does)
        for thread in threading.enumerate():
            if thread.name == "dllm-viz-encode":
                thread.join(timeout=10)

    store = TraceStore()
    assert read(store, "s", store.add("s", traces[0], later=True).handle)["state"] == "done"
    store.add("s", traces[1])
    encoded()
    assert seen == [False, False] and gc.isenabled()
    monkeypatch.setattr(wire, "done", lambda trace: 1 / 0)
    monkeypatch.setattr(threading, "excepthook", lambda args: None)
    assert read(store, "s", store.add("s", traces[2], later=True).handle)["state"] == "failed"
    encoded()
    assert gc.isenabled()


def test_what_the_store_holds_is_bounded(traces):
    store = TraceStore(per_session=2, max_sessions=3)
    first = store.add("a", traces[0])
    store.add("a", traces[1])
    store.add("a", traces[2])  # the least recently made of "a"'s traces goes
    assert store.entry("a", first.handle) is None
    for s in ("b", "c", "d"):
        store.add(s, traces[0])
    assert store.entry("a", store.add("e", traces[0]).handle) is None and store._sessions.keys() == {"c", "d", "e"}
    size = len(wire.dumps(wire.chunks(traces[0]))) - 2
    small = TraceStore(max_chars=3 * size)
    handles = [small.add(f"s{i}", traces[0]).handle for i in range(5)]
    assert [small.entry(f"s{i}", h) is not None for i, h in enumerate(handles)] == [False, False, True, True, True]
    small.release("s4")
    assert small.entry("s4", handles[4]) is None and small._chars == 2 * size


def step_by_step(entry, steps, pause: float = 0.05) -> list[float]:
    """The decode's thread: each step added `pause` seconds after the one before; when each was added."""
    sent = []
    for rec in steps:
        time.sleep(pause)
        sent.append(time.monotonic())
        entry.add(rec)
    return sent


def test_a_read_of_a_decode_in_progress_answers_as_each_step_comes(traces):
    tr = traces[0]
    store = TraceStore()
    handle, entry = store.live("s", wire.encoder_for(tr))
    answers = []

    def page() -> None:  # the page: reads, waits for what is new, reads on, until the trace is done
        start = 0
        while True:
            got = read(store, "s", handle, start)
            answers.append((time.monotonic(), len(got["chunks"]), got["state"]))
            start = got["next"]
            if got["state"] != "live":
                return

    reader = threading.Thread(target=page)
    reader.start()
    sent = step_by_step(entry, tr.steps)
    time.sleep(0.6)  # a read that no step woke answers at the end, 0.6 s or more after the last step
    entry.finish(tr)
    reader.join(timeout=10)
    assert answers[-1][2] == "done" and sum(n for _, n, _ in answers) == len(tr.steps) + 1
    # each step answered soon after it was added (not at the end, nor after a timeout): the read waited for
    # it. 0.5 s leaves room for a busy machine's scheduling (0.19 s seen at load 11 on 2 cores).
    for when in sent:
        assert min(t for t, n, _ in answers if t >= when and n) - when < 0.5
    chunks = [json.loads(c) for c in entry.since(0)[0]]
    assert "head" in chunks[0] and [c["steps"]["from"] for c in chunks[:-1]] == list(range(len(tr.steps)))
    assert chunks[-1]["done"] == json.loads(wire.dumps([wire.done(tr)]))[0]


def test_a_read_that_brings_the_last_planned_step_brings_the_end_that_follows_it(traces, monkeypatch):
    # The page reads the finished trace in one answer, not two: a read woken by the step the schedule plans last
    # waits a moment (END_SECONDS) for the end; an end that does not come by then leaves the step alone. (0.5 s
    # here, not the app's 30 ms: on a busy machine the decode's thread may wait longer than that for a core.)
    from dllm_viz.app.handlers import traces as store_module

    monkeypatch.setattr(store_module, "END_SECONDS", 0.5)
    tr = traces[0]
    for pause, answer in ((0.005, (2, "done")), (1.0, (1, "live"))):
        store = TraceStore()
        handle, entry = store.live("s", wire.encoder_for(tr))
        assert entry.planned == len(tr.steps) > 1
        for rec in tr.steps[:-1]:
            entry.add(rec)
        start = read(store, "s", handle)["next"]

        def last(pause=pause, entry=entry) -> None:  # the decode's thread: its last step, then its end
            entry.add(tr.steps[-1])
            time.sleep(pause)
            entry.finish(tr)

        threading.Timer(0.05, last).start()
        got = read(store, "s", handle, start)
        assert (len(got["chunks"]), got["state"]) == answer
        time.sleep(pause + 0.1)


def test_a_stopped_decode_reads_as_stopped_and_grows_no_more(traces):
    tr = traces[0]
    store = TraceStore()
    handle, entry = store.live("s", wire.encoder_for(tr))
    entry.add(tr.steps[0])
    entry.end("stopped")
    entry.add(tr.steps[1])  # a step computed after Stop is not sent
    got = read(store, "s", handle)
    assert got["state"] == "stopped" and len(got["chunks"]) == 1
    assert read(store, "s", handle, 1, timeout=0.01)["chunks"] == []  # no wait for what will not come


def test_a_page_may_name_its_decodes_handle_and_read_it_before_the_decode_starts(traces):
    """The page draws a decode's handle and reads it at once: the read waits for the decode of its own
    session (another session's decode under that name is not it), and a malformed name is refused."""
    from dllm_viz.app.handlers.traces import MAX_EXPECTED, WAIT_SECONDS, new_handle

    tr = traces[0]
    store = TraceStore()
    name = new_handle()
    got: list[dict] = []
    reader = threading.Thread(target=lambda: got.append(read(store, "s", name)))
    reader.start()
    time.sleep(0.1)
    assert store.live("t", wire.encoder_for(tr), name)[0] == name  # another session's: the read still waits
    time.sleep(0.1)
    assert got == []
    handle, entry = store.live("s", wire.encoder_for(tr), name)
    entry.add(tr.steps[0])
    reader.join(timeout=5)
    assert handle == name and got[0]["state"] == "live" and len(got[0]["chunks"]) == 1
    assert store.live("s", wire.encoder_for(tr), "not a handle")[0] != "not a handle"  # drawn anew
    assert read(store, "s", new_handle(), timeout=0.05)["state"] == "gone"  # nothing came
    waiting = TraceStore(wait_seconds=0.05)  # without a timeout a read waits the store's `wait_seconds`
    start = time.monotonic()
    assert json.loads(asyncio.run(waiting.read("s", new_handle())))["state"] == "gone"
    assert 0.05 <= time.monotonic() - start < 1.0 and TraceStore().wait_seconds == WAIT_SECONDS

    async def many() -> list[str]:  # a session holds at most MAX_EXPECTED such reads open
        reads = [store.read("s", new_handle(), 0, timeout=0.2) for _ in range(MAX_EXPECTED + 2)]
        return await asyncio.gather(*reads)

    start = time.monotonic()
    answers = asyncio.run(many())
    assert all(json.loads(a)["state"] == "gone" for a in answers) and time.monotonic() - start < 1.0
    assert store._expected == {}  # nothing left waiting


def test_a_stored_trace_is_held_as_its_chunks_only_and_a_closed_pages_go():
    """A finished entry keeps its chunks, not the trace (Gradio's state holds that, and frees it when
    the session expires); a closed page's traces go with `release`."""
    import gc
    import weakref

    store = TraceStore()
    trace = decode(make_text_model(), ["the "], DecodeConfig.preset("balanced", 8, seed=2))[0]
    shown = store.add("s", trace)
    alive = weakref.ref(trace)
    del trace
    shown = shown.handle  # what the page holds
    gc.collect()
    assert alive() is None and store.entry("s", shown).state == "done"
    store.release("s")
    assert store.entry("s", shown) is None


def test_a_compares_sides_read_together_answer_both_as_their_steps_come(traces):
    """`read_together`: one answer for both sides once one has news and the other has caught up (they step in
    one batch); a side with nothing new by then answers "live" with no chunks; each side's chunks are what its
    own `read` gives; malformed asks read as an empty list."""
    from dllm_viz.app.handlers.traces import MAX_TOGETHER, TOGETHER_SECONDS

    ta, tb = traces[0], traces[1]
    store = TraceStore()
    (ha, ea), (hb, eb) = (store.live("s", wire.encoder_for(tr)) for tr in (ta, tb))

    def together(asks, timeout=5.0) -> list:
        return json.loads(asyncio.run(store.read_together("s", asks, timeout=timeout)))

    got: list = []
    reader = threading.Thread(target=lambda: got.append(together([[ha, 0], [hb, 0]])))
    reader.start()
    time.sleep(0.1)
    assert got == []  # nothing yet: it waits
    ea.add(ta.steps[0])
    eb.add(tb.steps[0])
    reader.join(timeout=5)
    assert [(len(x["chunks"]), x["state"], x["next"]) for x in got[0]] == [(1, "live", 1), (1, "live", 1)]
    ea.add(ta.steps[1])  # B has nothing new: it answers live, empty, where it was
    start = time.monotonic()
    first, second = together([[ha, 1], [hb, 1]])
    assert (len(first["chunks"]), second, first["next"]) == (1, {"chunks": [], "state": "live", "next": 1}, 2)
    assert time.monotonic() - start < 1.0 and TOGETHER_SECONDS < 0.1
    ea.finish(ta)
    eb.finish(tb)
    ends = together([[ha, 2], [hb, 1]])
    assert [x["state"] for x in ends] == ["done", "done"]
    for (handle, start), answer in zip([(ha, 2), (hb, 1)], ends):
        assert answer == read(store, "s", handle, start)
    assert together([[ha, 0]])[0] == read(store, "s", ha)  # one side alone, as `read`
    assert together([[new_handle(), 0]], timeout=0.05)[0]["state"] == "gone"
    other = json.loads(asyncio.run(store.read_together("t", [[ha, 0]], timeout=0.05)))
    assert other[0]["state"] == "gone"  # another session's
    for bad in ([], "x", [[ha]], [[ha, 0]] * (MAX_TOGETHER + 1), None):
        assert together(bad) == []


def test_a_cancelled_read_together_leaves_no_read_waiting():
    """The page goes away while a read of handles not made yet waits: the reads it started end with it, so
    the session's slots for such reads (`MAX_EXPECTED`) are free at once, not after their timeouts."""
    store = TraceStore()

    def waiting() -> dict:
        return {s: sum(map(len, m.values())) for s, m in store._expected.items()}

    async def go_away() -> tuple[dict, dict]:
        call = asyncio.ensure_future(store.read_together("s", [[new_handle(), 0], [new_handle(), 0]], timeout=5.0))
        await asyncio.sleep(0.05)
        before = waiting()
        call.cancel()
        await asyncio.sleep(0.05)
        return before, waiting()  # (asyncio.run would cancel what is left only as it ends)

    assert asyncio.run(go_away()) == ({"s": 2}, {})


def streaming(store: TraceStore, handle: str, *, timeout: float) -> tuple[threading.Thread, list[tuple[float, dict]]]:
    """Session "s"'s page streaming `handle` (`answers`) on a thread of its own: the thread, and each answer with
    when it came, as they come."""
    got: list[tuple[float, dict]] = []

    async def stream() -> None:
        async for text in store.answers("s", handle, 0, timeout=timeout):
            got.append((time.monotonic(), json.loads(text)))

    reader = threading.Thread(target=lambda: asyncio.run(stream()))
    reader.start()
    return reader, got


def test_a_stream_of_a_decode_answers_as_its_reads_would_until_it_ends(traces):
    """`answers` (the page's `dv_stream`): one answer as each step comes, each what a `read` from where the one
    before it ended gives, and the stream ends with the answer that says the trace is live no more; a decode that
    says nothing within the timeout gets an empty "live" answer and the stream goes on; a handle of another session
    streams one "gone" answer."""
    tr = traces[0]
    store = TraceStore()
    handle, entry = store.live("s", wire.encoder_for(tr))
    reader, got = streaming(store, handle, timeout=0.3)
    sent = step_by_step(entry, tr.steps)
    time.sleep(0.5)  # longer than the timeout: an empty answer keeps the stream open
    entry.finish(tr)
    reader.join(timeout=10)
    assert not reader.is_alive()
    answers = [a for _, a in got]
    assert [a["state"] for a in answers[:-1]] == ["live"] * (len(answers) - 1) and answers[-1]["state"] == "done"
    assert {"chunks": [], "state": "live", "next": len(tr.steps)} in answers  # the timeout's empty answer
    assert [a["next"] for a in answers] == sorted(a["next"] for a in answers)
    chunks = [c for a in answers for c in a["chunks"]]
    assert chunks == [json.loads(c) for c in entry.since(0)[0]]  # every chunk once, in order
    assert answers[-1]["next"] == len(tr.steps) + 1
    for when in sent:  # each step answered as it came, not at the end
        assert min(t for t, a in got if t >= when and a["chunks"]) - when < 0.5

    async def collect(session, start=0) -> list[dict]:
        return [json.loads(text) async for text in store.answers(session, handle, start, timeout=0.05)]

    assert asyncio.run(collect("s")) == [read(store, "s", handle)]  # a finished trace: one answer, all of it
    assert asyncio.run(collect("s", 3)) == [read(store, "s", handle, 3)]
    assert asyncio.run(collect("t")) == [{"chunks": [], "state": "gone", "next": 0}]
    assert asyncio.run(collect("s", -1)) == [{"chunks": [], "state": "gone", "next": 0}]


def test_a_stream_answers_a_decode_at_most_once_a_pace_after_its_first_step(traces, monkeypatch):
    """Once a stream has brought a decode's first step, its next answer waits `PACE_SECONDS` after the one
    before it, bringing every step made meanwhile; the answer that brings the last planned step, and the end,
    comes at once. (A pace of 0.4 s here, so the test reads the holding, not the machine's speed.)"""
    from dllm_viz.app.handlers import traces as store_module

    monkeypatch.setattr(store_module, "PACE_SECONDS", 0.4)
    tr = traces[0]
    steps = tr.steps
    assert len(steps) >= 4 and planned_steps(tr.config) == len(steps)

    def run(last_after: float | None) -> tuple[list[tuple[float, dict]], list[float], list[dict]]:
        store = TraceStore()
        handle, entry = store.live("s", wire.encoder_for(tr))
        reader, got = streaming(store, handle, timeout=5.0)
        sent = step_by_step(entry, steps[:-1], pause=0.01)  # all but the last step, 10 ms apart
        if last_after is not None:
            time.sleep(last_after)
            sent += step_by_step(entry, steps[-1:], pause=0)
            entry.finish(tr)
        else:
            time.sleep(0.6)
            entry.finish(tr)
        reader.join(timeout=10)
        assert not reader.is_alive()
        return got, sent, [json.loads(c) for c in entry.since(0)[0]]

    # The last step 0.1 s after the others: it comes at once, with every step held since the first answer's.
    got, sent, chunks = run(0.1)
    with_steps = [(t, a) for t, a in got if a["chunks"]]
    assert len(with_steps[0][1]["chunks"]) == 1 and with_steps[0][0] - sent[0] < 0.3  # the first step at once
    assert len(with_steps) == 2 and with_steps[1][1]["state"] == "done"  # ... then the rest in one answer
    assert len(with_steps[1][1]["chunks"]) == len(steps)  # (the steps after the first, and the end)
    assert with_steps[1][0] - sent[-1] < 0.3 < 0.4  # not held for the pace: the last planned step
    assert [c for _, a in with_steps for c in a["chunks"]] == chunks  # every chunk once, in order

    # No last step within the pace: the held steps come when it has passed, then the end.
    got, sent, chunks = run(None)
    with_steps = [(t, a) for t, a in got if a["chunks"]]
    assert [len(a["chunks"]) for _, a in with_steps] == [1, len(steps) - 2, 1]
    assert with_steps[1][0] - with_steps[0][0] >= 0.39  # held for the pace after the first answer
    assert [c for _, a in with_steps for c in a["chunks"]] == chunks


def test_a_stream_of_a_compares_sides_is_paced_as_one_sides(traces, monkeypatch):
    """`answers_together` holds steps as `answers` does: after the answer with the sides' first steps, the
    next comes a pace later with every step made meanwhile."""
    from dllm_viz.app.handlers import traces as store_module

    monkeypatch.setattr(store_module, "PACE_SECONDS", 0.4)
    ta, tb = traces[0], traces[1]
    store = TraceStore()
    (ha, ea), (hb, eb) = (store.live("s", wire.encoder_for(tr)) for tr in (ta, tb))
    got: list[tuple[float, list[dict]]] = []

    async def stream() -> None:
        async for text in store.answers_together("s", [[ha, 0], [hb, 0]], timeout=5.0):
            got.append((time.monotonic(), json.loads(text)))

    reader = threading.Thread(target=lambda: asyncio.run(stream()))
    reader.start()
    for a, b in zip(ta.steps[:3], tb.steps[:3]):  # three steps each, 10 ms apart: none the last planned
        time.sleep(0.01)
        ea.add(a)
        eb.add(b)
    time.sleep(0.6)
    ea.finish(ta)
    eb.finish(tb)
    reader.join(timeout=10)
    assert not reader.is_alive()
    with_steps = [(t, answer) for t, answer in got if any(side["chunks"] for side in answer)]
    assert [[len(side["chunks"]) for side in answer] for _, answer in with_steps[:2]] == [[1, 1], [2, 2]]
    assert with_steps[1][0] - with_steps[0][0] >= 0.39


def test_a_stream_of_a_compares_sides_asks_on_for_the_sides_still_live(traces):
    """`answers_together` (the page's `dv_stream_pair`): each answer is `read_together`'s for the sides still
    live, in the order asked, each from where its last answer ended; a side that ended drops out of the next
    answers, and the stream ends once none is live. Malformed asks answer `[]` once."""
    from dllm_viz.app.handlers.traces import MAX_TOGETHER

    ta, tb = traces[0], traces[1]
    store = TraceStore()
    (ha, ea), (hb, eb) = (store.live("s", wire.encoder_for(tr)) for tr in (ta, tb))
    got: list[list[dict]] = []

    async def stream() -> None:
        async for text in store.answers_together("s", [[ha, 0], [hb, 0]], timeout=5.0):
            got.append(json.loads(text))

    reader = threading.Thread(target=lambda: asyncio.run(stream()))
    reader.start()
    for a, b in zip(ta.steps, tb.steps):
        time.sleep(0.03)
        ea.add(a)
        eb.add(b)
    time.sleep(0.1)
    ea.finish(ta)  # A ends first: B's answers go on alone
    time.sleep(0.1)
    for b in tb.steps[len(ta.steps):]:
        eb.add(b)
    eb.finish(tb)
    reader.join(timeout=10)
    assert not reader.is_alive()
    open_, chunks = [0, 1], ([], [])  # the sides still live, as the page keeps them
    for answer in got:
        assert len(answer) == len(open_)
        for i, side in zip(open_, answer):
            chunks[i].extend(side["chunks"])
        open_ = [i for i, side in zip(open_, answer) if side["state"] == "live"]
    assert open_ == [] and [len(answer) for answer in got].count(1) >= 1  # B went on alone after A's end
    for side, entry in zip(chunks, (ea, eb)):
        assert side == [json.loads(c) for c in entry.since(0)[0]]

    async def collect(asks) -> list[str]:
        return [text async for text in store.answers_together("s", asks, timeout=0.05)]

    for bad in ([], "x", [[ha]], [[ha, 0]] * (MAX_TOGETHER + 1), None):
        assert asyncio.run(collect(bad)) == ["[]"]
    assert asyncio.run(collect([[ha, 0], [hb, 2]])) == [asyncio.run(store.read_together("s", [[ha, 0], [hb, 2]]))]
