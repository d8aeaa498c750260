"""What the page asks the server directly, outside Gradio's events: the canvas's server functions.

Gradio serves a component's server functions on a route of their own (`component_server`), called by the
page's script (`app/web/page.js`: `server.dv_read(...)`) with the page's session; nothing waits in the
queue. `dv_read` reads a trace by its handle, `dv_shown` says the page drew it, and `dv_start` starts a
decode at a slider's release, before Gradio's event for it leaves the page (`handlers.starts`).

A decode's steps are streamed: `dv_stream` answers one request with an event per answer of `dv_read`, as
its steps come (`TraceStore.answers`; server-sent events, as Gradio streams its own, so that proxies pass them
on at once), where a read a step would cost the browser and the server a request each (about 6 ms of CPU
beside the decode: `bench/ui_bench.py`). Gradio's page client waits for a whole answer, so the page opens
the stream itself (`app/web/reads.js`), with its session and the canvas's id (`dv_session` says them), on the
route `fn_route` serves (else Gradio's own); where it cannot, it reads as before. A decode the page starts (a
slider's release, a lesson's click) is asked for by the request that streams it: a stream whose last argument
is `{"start": ...}` (what `dv_start` would be sent) starts it first and says `dv_start`'s answer in a header of
the stream (`STARTED_HEADER`), one request where two each cost the server's event loop beside the decode's
first step; where the stream cannot be had, the page asks `dv_start` itself.
"""
from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Collection, Sequence
from typing import Any

import gradio as gr
from fastapi import Response
from fastapi.responses import StreamingResponse

from dllm_viz.app import fn_route
from dllm_viz.app.handlers.compare import CompareHandlers
from dllm_viz.app.handlers.play import PlayHandlers
from dllm_viz.app.handlers.traces import TraceStore

# Runs in the page as a decode event starts, with the event's inputs `args`: draws the decode's handle into
# its `ref` input (the 5th), starts reading it and asks the server to start the decode at once
# (start.js `__dvNewRef`: `dv_start` with these inputs), before the event itself reaches the server.
# `fields` (`new_ref_js`) says where the page reads some inputs itself: a slider's release then starts
# its decode before Gradio even makes the event (start.js).
NEW_REF_JS = "(...args) => (window.__dvNewRef ? window.__dvNewRef(args, 4, %s) : args)"
# The same for a compare (a lesson's click, `kind` "lesson:KEY", or Compare's run, "compare"): both sides'
# handles drawn into its `cmp_ref` input (the last), read at once, and the compare started (`dv_start`).
PAIR_JS = "(...args) => (window.__dvNewPair ? window.__dvNewPair(args, args.length - 1, %s) : args)"
# The same for an uploaded trace file: its handle drawn into the event's `ref` input (the last), and the page
# reads it at once (the read waits for the server to have it), so the canvas is drawn before Gradio's answer.
UPLOAD_JS = "(...args) => (window.__dvNewUpload ? window.__dvNewUpload(args, args.length - 1) : args)"


# A stream's answers, an event each ("data: <json>" and a blank line; JSON text has no raw newline), as Gradio
# streams its own events: never held back by a proxy nor kept in a cache.
EVENTS = "text/event-stream"
STREAM_HEADERS = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
# A stream that started its decode says `dv_start`'s answer here (JSON: null once started, else why not; ASCII, as a
# header must be); the page reads it (app/web/reads.js `dvStarting`).
STARTED_HEADER = "X-DV-Started"


async def session_of(request: gr.Request) -> str | None:
    """The session a server function's call comes from. Gradio hands a server function the HTTP request
    itself; the session is the one its body names (the page's own, as for every other call it makes:
    Gradio's `component_server`)."""
    session = getattr(request, "session_hash", None)
    if session is None:
        body = await request.json()
        session = body.get("session_hash") if isinstance(body, dict) else None
    return session if isinstance(session, str) else None


def decode_inputs(p: Any) -> tuple[Any, ...]:
    """What a decode event of the page `p` (`layout.page.Page`) sends: `NEW_REF_JS` fills `ref`, the 5th."""
    return (p.prompt, p.lang, p.model_pick, p.trace, p.ref, *p.knobs)


def new_ref_js(p: Any, release: Collection[str]) -> str:
    """NEW_REF_JS for the page `p`, with the inputs the page can read itself, by position: `[elem_id, kind]`
    ("release": a slider whose release decodes, one of `release`; "range": another slider; "text": a
    textbox; "check": a checkbox), null for the rest (their values are the last event's)."""
    def field(component: Any) -> list[str] | None:
        elem_id = getattr(component, "elem_id", None)
        if not elem_id or isinstance(component, gr.State):
            return None
        if isinstance(component, gr.Slider):
            return [elem_id, "release" if p.name_of(component) in release else "range"]
        if isinstance(component, gr.Textbox) and component.visible is not False:
            return [elem_id, "text"]
        return [elem_id, "check"] if isinstance(component, gr.Checkbox) else None

    return NEW_REF_JS % json.dumps([field(c) for c in decode_inputs(p)], separators=(",", ":"))


def lesson_inputs(p: Any) -> tuple[Any, ...]:
    """What a lesson's click sends (`PAIR_JS` fills `cmp_ref`, the last)."""
    return (p.prompt, p.seed, p.gen_length, p.lang, p.model_pick, p.cmp_ref)


def compare_inputs(p: Any) -> tuple[Any, ...]:
    """What Compare's run sends (`PAIR_JS` fills `cmp_ref`, the last)."""
    return (p.prompt, p.seed, p.gen_length, p.cmp_a, p.cmp_b, p.neighbours, p.lang, p.model_pick, p.cmp_ref)


class DecodeInputs:
    """The inputs of the page's decode events (`inputs_of(page)`), by name, once `page_of()` has the page:
    what `dv_start` turns the page's values into, as Gradio does for the event (each component's
    `preprocess`)."""

    def __init__(self, page_of: Callable[[], Any], inputs_of: Callable[[Any], Sequence[Any]] = decode_inputs) -> None:
        self.page_of, self.inputs_of = page_of, inputs_of
        self._named: Sequence[tuple[str, Any]] = ()

    def named(self) -> Sequence[tuple[str, Any]]:
        page = self.page_of() if not self._named else None
        if page is not None:
            self._named = [(page.name_of(component), component) for component in self.inputs_of(page)]
        return self._named

    def values(self, args: Any) -> dict[str, Any] | None:
        """The handler's keyword arguments from the event's input values (None: not the event's shape)."""
        named = self.named()
        if not named or not isinstance(args, list) or len(args) != len(named):
            return None
        out: dict[str, Any] = {}
        for (name, component), value in zip(named, args):
            if name in ("trace", "ref") or isinstance(component, gr.State):
                continue  # the session's state, and the handle: not the page's to say
            try:
                out[name] = component.preprocess(value)
            except Exception:  # noqa: BLE001 - refused as Gradio would refuse the event (which reports it)
                return None
        return out


def read_traces(store: TraceStore, play: PlayHandlers | None = None, compare: CompareHandlers | None = None,
                page_of: Callable[[], Any] = lambda: None) -> list[Callable[..., Any]]:
    """The canvas's server functions. `dv_read(handle, start)`: the page reads a trace by its handle,
    the chunks from `start` on (`TraceStore.read`), as JSON written once; `dv_read_pair([[handle, start], ...])`
    reads a compare's sides in one request (`TraceStore.read_together`). `dv_shown(handles)`: the
    page has drawn every view of those traces (`TraceStore.drawn`). `dv_start(handle, args, shown, kind)`:
    what an event of `kind` ("play": a decode, `PlayHandlers.start`; "lesson:KEY", "compare": a compare,
    `CompareHandlers.start`) with inputs `args` asks for starts now, under the handles the page drew,
    for the event to adopt (`shown`: the handle of the trace on show); answers null once started, else
    why not (the event reports its own error). The session is Gradio's: another session's handle reads
    as gone, and is not adopted. `dv_stream(handle, start)` and `dv_stream_pair(asks)`: the same reads,
    streamed (an event per answer, `TraceStore.answers`, `answers_together`) until the trace is live no more;
    with a last argument `{"start": [handle, args, shown, kind]}`, `dv_start` of those first, its answer in the
    stream's `STARTED_HEADER`.
    `dv_session()`: the page's session and the canvas's component id, which the page sends with a stream's
    request (`app/web/reads.js`), as Gradio's client sends them with every call, and the route the streams are
    served on past Gradio's (`fn_route.served_at`; None: Gradio's `component_server`)."""

    def one_read(data: Any) -> tuple[Any, Any]:
        return (data + [None, None])[:2] if isinstance(data, list) else (None, None)

    def pair_asks(data: Any) -> Any:
        one = isinstance(data, list) and len(data) == 1 and isinstance(data[0], list)  # the call's one argument
        return data[0] if one and all(isinstance(a, list) for a in data[0]) else data

    async def dv_read(data: Any, request: gr.Request) -> Response:
        handle, start = one_read(data)
        return Response(await store.read(await session_of(request), handle, start), media_type="application/json")

    async def dv_read_pair(data: Any, request: gr.Request) -> Response:
        return Response(await store.read_together(await session_of(request), pair_asks(data)),
                        media_type="application/json")

    async def streamed(data: Any, request: gr.Request, answers: Callable[[str | None, Any], AsyncIterator[str]]
                       ) -> StreamingResponse:
        """`answers(session, data)` streamed, once what `{"start": ...}` (the data's last item) asks is started."""
        session, headers = await session_of(request), STREAM_HEADERS
        if isinstance(data, list) and data and isinstance(data[-1], dict) and "start" in data[-1]:
            data, begin = data[:-1], data[-1]["start"]  # the decode it reads is started first
            headers = {**headers, STARTED_HEADER: json.dumps(started(session, begin))}
        return StreamingResponse(events(answers(session, data)), media_type=EVENTS, headers=headers)

    async def dv_stream(data: Any, request: gr.Request) -> StreamingResponse:
        return await streamed(data, request, lambda session, data: store.answers(session, *one_read(data)))

    async def dv_stream_pair(data: Any, request: gr.Request) -> StreamingResponse:
        return await streamed(data, request, lambda session, data: store.answers_together(session, pair_asks(data)))

    async def dv_session(data: Any, request: gr.Request) -> list[Any]:
        body = await request.json()
        route = fn_route.served_at(getattr(request, "app", None))
        return [body.get("session_hash"), body.get("component_id"), route] if isinstance(body, dict) else [None] * 3

    async def dv_shown(data: Any, request: gr.Request) -> bool:
        handles = data[0] if isinstance(data, list) and data and isinstance(data[0], list) else data
        store.drawn(await session_of(request), handles)
        return True

    inputs = {"play": DecodeInputs(page_of), "lesson": DecodeInputs(page_of, lesson_inputs),
              "compare": DecodeInputs(page_of, compare_inputs)}

    def started(session: str | None, data: Any) -> str | None:
        handle, args, shown, kind = (data + [None] * 4)[:4] if isinstance(data, list) else (None,) * 4
        kind, _, lesson = (kind or "play").partition(":") if isinstance(kind, str) else ("", "", "")
        named = inputs[kind].values(args) if kind in inputs else None
        if named is None:
            return "not started"
        if kind == "play" and play is not None:
            return play.start(session=session, ref=handle, shown_ref=shown, **named)
        if compare is not None and kind != "play":
            return compare.start(session=session, lesson=lesson if kind == "lesson" else None, **named)
        return "not started"

    async def dv_start(data: Any, request: gr.Request) -> str | None:
        return started(await session_of(request), data)

    return [dv_read, dv_read_pair, dv_shown, dv_start, dv_stream, dv_stream_pair, dv_session]


async def events(answers: AsyncIterator[str]) -> AsyncIterator[str]:
    """Each answer an event of its own."""
    async for answer in answers:
        yield f"data: {answer}\n\n"
