"""The page's streams on a route of their own, beside Gradio's `component_server`.

A decode's stream (`page_server`: `dv_stream`, `dv_stream_pair`, which start the decode they read) is the request a
slider's release waits on. Gradio's `component_server` serves it as it serves any server function, at 3-4 ms of the
server's event loop before the function runs (its login check in a worker thread, the call's body read into a model,
the session's state looked up, the function's arguments worked out), measured from the request's arrival to the
function's start on a release (`bench/ui_bench.py`'s page): milliseconds before the decode's first step. `FnRoute`, an
ASGI middleware passed to Gradio's FastAPI app beside `early.EarlyScript` (`app_kwargs`), answers a POST to PATH
(under the app's root) as `component_server` answers the same body (`{"session_hash", "component_id", "fn_name",
"data"}`): the component named, its server function named, called with the call's data and the request, which says
the session as Gradio's does (`page_server.session_of`). Only the stream functions, and only where the app asks no
login (`served_at` then says None, and the page calls `component_server`, which checks it); every other request
passes on untouched. A call that is not well formed is refused as Gradio refuses it (400, 404; 413 past MAX_BODY).
"""
from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

PATH = "/dv/fn"  # under the app's root (its `root_path`): what `dv_session` tells the page (`served_at`)
FNS = frozenset({"dv_stream", "dv_stream_pair"})  # the server functions served here: the page's streams
MAX_BODY = 2**20  # a call's body, at most (a stream's asks, and a start's inputs: the prompt among them)

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


def _asks_login(app: Any) -> bool:
    return getattr(app, "auth", None) is not None or getattr(app, "auth_dependency", None) is not None


def served_at(app: Any) -> str | None:
    """PATH where `app` (Gradio's FastAPI app) serves the streams here: it has FnRoute among its middleware and asks
    no login. None otherwise (the page then calls `component_server`)."""
    ours = any(getattr(m, "cls", None) is FnRoute for m in getattr(app, "user_middleware", ()))
    return PATH if ours and not _asks_login(app) else None


def _route_path(scope: Message) -> str:
    path, root = scope.get("path", ""), scope.get("root_path", "")
    return path[len(root):] if root and path.startswith(root) else path


async def _body(receive: Receive) -> bytes | None:
    """The request's body, None once it passes MAX_BODY."""
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return b""
        chunks.append(message.get("body", b""))
        size += len(chunks[-1])
        if size > MAX_BODY:
            return None
        if not message.get("more_body", False):
            return b"".join(chunks)


class FnRoute:
    """ASGI middleware: a POST to PATH calls the stream function its body names, as `component_server` does; every
    other request, and every request of an app that asks a login, passes on to the app."""

    def __init__(self, app: Callable[[Message, Receive, Send], Awaitable[None]]) -> None:
        self.app = app

    async def __call__(self, scope: Message, receive: Receive, send: Send) -> None:
        gradio = scope.get("app")
        if (scope.get("type") != "http" or scope.get("method") != "POST" or _route_path(scope) != PATH
                or gradio is None or _asks_login(gradio)):
            await self.app(scope, receive, send)
            return
        await (await self.answer(gradio, scope, receive))(scope, receive, send)

    async def answer(self, gradio: Any, scope: Message, receive: Receive) -> Response:
        body = await _body(receive)
        if body is None:
            return JSONResponse({"detail": f"the call's body is larger than {MAX_BODY} bytes"}, status_code=413)
        try:
            call = json.loads(body)
        except ValueError:
            call = None
        if not (isinstance(call, dict) and isinstance(call.get("component_id"), int)
                and isinstance(call.get("fn_name"), str) and isinstance(call.get("session_hash"), str)):
            return JSONResponse({"detail": "not a server function's call"}, status_code=400)
        block = gradio.get_blocks().blocks.get(call["component_id"])
        fn = getattr(block, call["fn_name"], None) if call["fn_name"] in FNS else None
        if fn is None or not getattr(fn, "_is_server_fn", False):
            return JSONResponse({"detail": "Function not found."}, status_code=404)
        told = False

        async def again() -> Message:  # the body, for the function that reads it (the session it names)
            nonlocal told
            if not told:
                told = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        result = await fn(call.get("data"), Request(scope, again))
        return result if isinstance(result, Response) else JSONResponse(result)


def middleware() -> Middleware:
    """FnRoute, for the middleware Gradio's `launch(app_kwargs=...)` passes to its FastAPI app (ui.py)."""
    return Middleware(FnRoute)
