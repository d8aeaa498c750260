"""What the page asks the server directly, outside Gradio's events: the canvas's server functions.

Gradio serves a component's server functions on a route of their own (`component_server`), called by the
page's script (`app/web/page.js`: `server.dv_read(...)`) with the page's session; nothing waits in the
queue. `dv_read` reads a trace by its handle, `dv_shown` says the page drew it, and `dv_start` starts a
decode at a slider's release, before Gradio's event for it leaves the page (`handlers.starts`).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import gradio as gr
from fastapi import Response

from dllm_viz.app.handlers.play import PlayHandlers
from dllm_viz.app.handlers.traces import TraceStore

# Runs in the page as a decode event starts, with the event's inputs `args`: draws the decode's handle into
# its `ref` input (the 5th), starts reading it and asks the server to start the decode at once
# (page.js `__dvNewRef`: `dv_start` with these inputs), before the event itself reaches the server.
NEW_REF_JS = "(...args) => (window.__dvNewRef ? window.__dvNewRef(args, 4) : args)"


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


class DecodeInputs:
    """The inputs of the page's decode events, by name, once `page_of()` has the page: what `dv_start`
    turns the page's values into, as Gradio does for the event (each component's `preprocess`)."""

    def __init__(self, page_of: Callable[[], Any]) -> None:
        self.page_of = page_of
        self._named: Sequence[tuple[str, Any]] = ()

    def named(self) -> Sequence[tuple[str, Any]]:
        page = self.page_of() if not self._named else None
        if page is not None:
            self._named = [(page.name_of(component), component) for component in decode_inputs(page)]
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


def read_traces(store: TraceStore, play: PlayHandlers | None = None,
                inputs: DecodeInputs | None = None) -> list[Callable[..., Any]]:
    """The canvas's server functions. `dv_read(handle, start)`: the page reads a trace by its handle,
    the chunks from `start` on (`TraceStore.read`), as JSON written once. `dv_shown(handles)`: the
    page has drawn every view of those traces (`TraceStore.drawn`). `dv_start(handle, args, shown)`: the
    decode a decode event with inputs `args` asks for starts now, under `handle` (`PlayHandlers.start`;
    `shown`: the handle of the trace on show), for the event to adopt; answers null once started, else
    why not (the event reports its own error). The session is Gradio's: another session's handle reads
    as gone, and is not adopted."""

    async def dv_read(data: Any, request: gr.Request) -> Response:
        handle, start = (data + [None, None])[:2] if isinstance(data, list) else (None, None)
        return Response(await store.read(await session_of(request), handle, start), media_type="application/json")

    async def dv_shown(data: Any, request: gr.Request) -> bool:
        handles = data[0] if isinstance(data, list) and data and isinstance(data[0], list) else data
        store.drawn(await session_of(request), handles)
        return True

    async def dv_start(data: Any, request: gr.Request) -> str | None:
        handle, args, shown = (data + [None, None, None])[:3] if isinstance(data, list) else (None, None, None)
        named = inputs.values(args) if inputs is not None else None
        if play is None or named is None:
            return "not started"
        return play.start(session=await session_of(request), ref=handle, shown_ref=shown, **named)

    return [dv_read, dv_shown, dv_start]
