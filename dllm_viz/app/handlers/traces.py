"""The traces each visitor's page shows, by handle: what the page reads, and what its events name.

A trace travels to the page once, as the chunks of `views.wire`, read by the page itself (`read`,
the canvas's server function `dv_read`: `page_server`; or `answers`, those reads streamed in one request,
`dv_stream`) under a handle; the page's events carry the handle, never
the trace. A session's `gr.State` holds a `Shown` (the handle, and the trace for the handlers), so a
loaded 3 MB trace costs no event anything.

The store holds chunks (JSON text) only; the `Trace` objects are the sessions' states'. A handle is
128 random bits, and it is bound to the session that made it: another session asking
for it gets nothing, as if it did not exist (the example traces, shown to everyone, are the only
public ones). What the store holds is bounded: `PER_SESSION` traces per session, `MAX_SESSIONS`
sessions, `MAX_CHARS` characters of chunks in all; past a bound the least recently used go first.
A decode in progress is an `Entry` that grows as its steps come (`add`, from the decode's thread);
a read of it waits (at most `WAIT_SECONDS`) until there is something new, so the page sees each step
as soon as it is computed; a stream of reads (`answers`) holds the steps after the first for `PACE_SECONDS`
after its last answer, unless the last planned step or the end comes first. The page may name a decode's (or an
uploaded file's) handle itself, in the event that starts it (128 random bits it drew): its read can then wait for
the trace before the event reaches the server, within its own session (`MAX_EXPECTED` such reads at once).
"""
from __future__ import annotations

import asyncio
import dataclasses
import re
import secrets
import threading
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from typing import Any, NamedTuple

from dllm_viz.app.handlers.entry import Entry, finish_later, finished, resolve
from dllm_viz.app.views import wire
from dllm_viz.core.trace import Trace

PER_SESSION = 8  # the playground's trace, the one before it (Stop brings it back), a live one, a compare pair, ...
MAX_SESSIONS = 10_000  # as Gradio's default state_session_capacity
MAX_CHARS = 256 * 2**20  # chunks held in all (a 3 MB trace file is ~1.6 M characters of chunks)
WAIT_SECONDS = 10.0  # the longest a read of a decode in progress waits for its next step
HANDLE_BYTES = 16
HANDLE = re.compile(r"[A-Za-z0-9_-]{22}")  # 16 bytes in URL-safe base64: what `new_handle` and the page make
MAX_EXPECTED = 4  # reads a session may hold open for a handle its page made and no decode has yet
MAX_TOGETHER = 4  # traces one read may ask for together (`read_together`: a compare's two sides)
TOGETHER_SECONDS = 0.01  # how long such a read waits for the others' news once one trace has some
END_SECONDS = 0.03  # a read that brings a decode's last planned step waits at most this long for its end too
# A stream's answers of a decode in progress come at most this often once it has brought the first step (its last
# planned step and its end go at once; ~16 a second, a step made meanwhile rides with the next): each answer wakes
# the server's loop and the page's network, main and compositor threads, and on two cores each one read and painted
# during a decode cost it ~2.5 ms (docs/playground.md).
PACE_SECONDS = 0.06


def new_handle() -> str:
    return secrets.token_urlsafe(HANDLE_BYTES)


@dataclasses.dataclass(frozen=True)
class Shown:
    """What a session's state holds of a trace on show: its handle (what the page reads it by) and the
    trace (what the handlers read). Gradio copies a state's first value into every new session:
    a `Shown` is immutable, so the copy is itself."""

    handle: str
    trace: Trace
    # What the Playground's banner says of the decode that made it, in a language (`PlayHandlers._finished`), said
    # again when the page switches language (`Playground.relabel`); None: nothing to say again.
    banner: Callable[[str], str] | None = dataclasses.field(default=None, compare=False)
    # A fork made here (`Playground.fork_here`, a fork's link): the trace it left, shown beside it on asking
    # (`Playground.fork_pair`); one level only, so a chain of forks holds no chain of traces.
    parent: Shown | None = dataclasses.field(default=None, compare=False)

    def __deepcopy__(self, memo: dict[int, Any]) -> Shown:
        return self


GONE = '{"chunks":[],"state":"gone","next":0}'  # what an unknown handle, or another session's, reads as


class Answer(NamedTuple):
    """One answer of a read: its JSON text, and the state and the next chunk's index that text says."""
    text: str
    state: str
    next: int


class TraceStore:
    """Every session's traces by handle (see the module's docstring); safe from any thread."""

    def __init__(self, *, per_session: int = PER_SESSION, max_sessions: int = MAX_SESSIONS,
                 max_chars: int = MAX_CHARS, wait_seconds: float = WAIT_SECONDS) -> None:
        self.per_session, self.max_sessions, self.max_chars = per_session, max_sessions, max_chars
        self.wait_seconds = wait_seconds  # how long a read waits for a step (or a decode) to come, unless told
        self._sessions: OrderedDict[str, OrderedDict[str, Entry]] = OrderedDict()
        self._public: dict[str, Entry] = {}
        # session -> handle -> the reads waiting for a decode to make it (the page named it first)
        self._expected: dict[str, dict[str, list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]]]] = {}
        self._chars = 0
        self._lock = threading.Lock()

    def publish(self, trace: Trace) -> Shown:
        """A trace every session may read (an example shipped with the app)."""
        handle = new_handle()
        self._public[handle] = finished(trace)
        return Shown(handle, trace)

    def add(self, session: str | None, trace: Trace, *, later: bool = False, handle: Any = None) -> Shown:
        """A finished trace shown to `session` (uploaded, an example, a Compare side). `later`: its chunks
        are made on a thread of their own while the caller answers (an upload: the page asks for them as
        Gradio's update reaches it, or sooner, by the page's own `handle`, when it names a well-formed one),
        counted against the bounds from the next trace kept on."""
        named = handle if isinstance(handle, str) and HANDLE.fullmatch(handle) else None
        if not later:
            return Shown(self._keep(session, finished(trace), named), trace)
        entry = Entry(wire.encoder_for(trace))
        handle = self._keep(session, entry, named)
        threading.Thread(target=finish_later, args=(entry, trace), daemon=True, name="dllm-viz-encode").start()
        return Shown(handle, trace)

    def live(self, session: str | None, encoder: wire.Encoder, handle: Any = None) -> tuple[str, Entry]:
        """A decode in progress for `session`: its handle (the page's own `handle`, when it named a
        well-formed one), and the entry its steps go to."""
        entry = Entry(encoder)
        named = handle if isinstance(handle, str) and HANDLE.fullmatch(handle) else None
        return self._keep(session, entry, named), entry

    def _keep(self, session: str | None, entry: Entry, handle: str | None = None) -> str:
        handle = handle or new_handle()
        with self._lock:
            traces = self._sessions.setdefault(session or "", OrderedDict())
            self._sessions.move_to_end(session or "")
            traces.pop(handle, None)
            traces[handle] = entry
            self._chars += entry.chars
            entry.counter = self._count
            self._bound(traces)
            waiters = self._expected.get(session or "", {}).pop(handle, [])
        for loop, future in waiters:  # reads that came before the decode did
            loop.call_soon_threadsafe(resolve, future)
        return handle

    def refuse(self, session: str | None, handle: Any) -> None:
        """The reads waiting for `handle` (the page named it for a trace that will not come: an upload
        refused) answer now, as gone."""
        with self._lock:
            waiters = self._expected.get(session or "", {}).pop(handle, []) if isinstance(handle, str) else []
        for loop, future in waiters:
            loop.call_soon_threadsafe(resolve, future)

    def _count(self, entry: Entry, chars: int) -> None:
        """A held entry grew by `chars` (a decode's step)."""
        with self._lock:
            entry.chars += chars
            if entry.counter is not None:
                self._chars += chars

    def _drop(self, entries: Any) -> None:
        """Stop counting `entries` (the lock is held)."""
        for entry in entries:
            entry.counter = None
            self._chars -= entry.chars

    def _bound(self, newest: OrderedDict[str, Entry]) -> None:
        """Drop the least recently used traces past the bounds (the lock is held)."""
        while len(newest) > self.per_session:
            self._drop([newest.popitem(last=False)[1]])
        while len(self._sessions) > self.max_sessions or (self._chars > self.max_chars and len(self._sessions) > 1):
            self._drop(self._sessions.popitem(last=False)[1].values())
        while len(newest) > 1 and self._chars > self.max_chars:  # one session alone holds too much
            self._drop([newest.popitem(last=False)[1]])

    def entry(self, session: str | None, handle: str) -> Entry | None:
        """The trace `handle` names, if `session` may read it."""
        if not isinstance(handle, str):
            return None
        public = self._public.get(handle)
        if public is not None or session is None:  # a caller without a session reads the public ones only
            return public
        with self._lock:
            traces = self._sessions.get(session)
            return None if traces is None else traces.get(handle)

    def config_of(self, session: str | None, handle: Any) -> Any:
        """The config of the trace `handle` names, if `session` may read it (else None)."""
        entry = self.entry(session, handle)
        return None if entry is None else entry.config

    def drawn(self, session: str | None, handles: Any) -> None:
        """The page of `session` has drawn every view of the traces `handles` (what a decode's last
        answer waits for: `settle`)."""
        for handle in handles if isinstance(handles, list) else []:
            entry = self.entry(session, handle)
            if entry is not None:
                entry.drawn.set()

    def release(self, session: str | None) -> None:
        """Forget a session's traces (its state was deleted)."""
        with self._lock:
            self._drop(self._sessions.pop(session or "", {}).values())

    async def _expect(self, session: str, handle: str, timeout: float) -> Entry | None:
        """The entry `handle` will name in `session`, once a decode makes it (None after `timeout`)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        with self._lock:
            mine = self._expected.setdefault(session, {})
            if sum(map(len, mine.values())) >= MAX_EXPECTED:
                return None
            mine.setdefault(handle, []).append((loop, future))
        try:
            await asyncio.wait_for(future, timeout)
        except asyncio.TimeoutError:
            pass
        finally:
            with self._lock:
                mine = self._expected.get(session, {})
                waiting = [w for w in mine.get(handle, []) if w[1] is not future]
                if waiting:
                    mine[handle] = waiting
                else:
                    mine.pop(handle, None)
                if not mine:
                    self._expected.pop(session, None)
        return self.entry(session, handle)

    async def read(self, session: str | None, handle: Any, start: Any = 0, *,
                   timeout: float | None = None) -> str:
        """What the page reads: `{"chunks": [...], "state": ..., "next": n}` as JSON text, the chunks
        from index `start` on. A decode in progress answers once it has something new (or after
        `timeout` seconds, `wait_seconds` unless given); an unknown handle, or one of another session,
        reads as "gone"."""
        return (await self._answer(session, handle, start, timeout)).text

    async def _answer(self, session: str | None, handle: Any, start: Any, timeout: float | None,
                      hold: float | None = None) -> Answer:
        """`read`'s answer; `hold`: the loop's time before which a step past the first is held back (`Entry.hold`)."""
        timeout = self.wait_seconds if timeout is None else timeout
        if not isinstance(start, int) or isinstance(start, bool) or start < 0:
            return Answer(GONE, "gone", 0)
        entry = self.entry(session, handle)
        if entry is None and session is not None and isinstance(handle, str) and HANDLE.fullmatch(handle):
            entry = await self._expect(session, handle, timeout)  # a decode the page has asked for, not here yet
        if entry is None:
            return Answer(GONE, "gone", 0)
        entry.read.set()
        await entry.wait(start, timeout)
        if hold is not None:
            await entry.hold(start, hold)
        if entry.at_last_step():  # its end comes in the same answer: the page reads the finished trace one trip sooner
            await entry.wait(len(entry.chunks), min(timeout, END_SECONDS))
        chunks, state = entry.since(start)
        if state != "live":
            entry.delivered.set()
        text = f'{{"chunks":[{",".join(chunks)}],"state":"{state}","next":{start + len(chunks)}}}'
        return Answer(text, state, start + len(chunks))

    async def answers(self, session: str | None, handle: Any, start: Any = 0, *,
                      timeout: float | None = None) -> AsyncIterator[str]:
        """`read` again and again, each from where the answer before it ended, until one says the trace is
        live no more (the page's stream of a trace, `dv_stream`: one request a decode, not one a step). A
        decode that says nothing for `timeout` seconds gets an answer with no chunks, as a read does; once it
        has brought the first step, an answer comes `PACE_SECONDS` after the one before it at the soonest,
        with every step made meanwhile (its last planned step and its end at once)."""
        loop, hold = asyncio.get_running_loop(), None
        while True:
            answer = await self._answer(session, handle, start, timeout, hold)
            yield answer.text
            if answer.state != "live":
                return
            start, hold = answer.next, loop.time() + PACE_SECONDS

    async def read_together(self, session: str | None, asks: Any, *, timeout: float | None = None) -> str:
        """`read` of several traces at once (`asks`: [handle, start] pairs; a compare's sides, which step
        together): a JSON list of their answers, once one has something new (or after `timeout`) and the
        others have had `TOGETHER_SECONDS` more to catch up; one with nothing new by then answers "live"
        with no chunks (the page asks again). Malformed asks read as `[]`."""
        answers = await self._together(session, asks, timeout) if _together_asks(asks) else []
        return "[" + ",".join(answer.text for answer in answers) + "]"

    async def _together(self, session: str | None, asks: list[list[Any]], timeout: float | None,
                        hold: float | None = None) -> list[Answer]:
        reads = [asyncio.ensure_future(self._answer(session, handle, start, timeout, hold)) for handle, start in asks]
        try:
            _, pending = await asyncio.wait(reads, return_when=asyncio.FIRST_COMPLETED)
            if pending:
                _, pending = await asyncio.wait(pending, timeout=TOGETHER_SECONDS)
        finally:  # the reads still waiting end here, also when this call is cancelled (the page went away)
            for task in reads:
                task.cancel()
        late = '{"chunks":[],"state":"live","next":%d}'
        return [Answer(late % start, "live", start) if task in pending else task.result()
                for task, (_, start) in zip(reads, asks)]

    async def answers_together(self, session: str | None, asks: Any, *,
                               timeout: float | None = None) -> AsyncIterator[str]:
        """`read_together` again and again (the page's stream of a compare's sides, `dv_stream_pair`), each
        time of the traces still live, each from where its last answer ended, in the order asked, until none
        is live: the page keeps its sides in step by the same rule; paced as `answers` is. Malformed asks answer
        `[]` once."""
        if not _together_asks(asks):
            yield "[]"
            return
        loop, hold = asyncio.get_running_loop(), None
        while asks:
            answers = await self._together(session, asks, timeout, hold)
            yield "[" + ",".join(answer.text for answer in answers) + "]"
            asks = [[handle, answer.next] for (handle, _), answer in zip(asks, answers) if answer.state == "live"]
            hold = loop.time() + PACE_SECONDS


def _together_asks(asks: Any) -> bool:
    """Whether `asks` is what `read_together` takes: 1 to `MAX_TOGETHER` [handle, start] pairs."""
    return (isinstance(asks, list) and 0 < len(asks) <= MAX_TOGETHER
            and all(isinstance(a, list) and len(a) == 2 for a in asks))
