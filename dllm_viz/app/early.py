"""The page's first script, before Gradio's own: written into the head of every page the app serves.

Gradio's page runs its scripts as modules, which load the app's status trackers before anything the app adds
to the page (`head`, `js_on_load`) can run; what must run before them (`app/web/early.js`: a status tracker's
timer that Gradio never stops, kept from starting) has to be in the page's HTML itself. `EarlyScript` is an
ASGI middleware that writes it there, first in the head of each HTML page the app answers with; `launch_options`
(ui.py) passes it to Gradio's FastAPI app (`app_kwargs`), beside `fn_route`'s. Every other answer passes as it is.
"""
from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from starlette.middleware import Middleware

from dllm_viz.app.views import render, web

EARLY_JS = (web.WEB / "early.js").read_text(encoding="utf-8")
EARLY_TAG = render.inline_script_html(EARLY_JS).encode("utf-8")
HEAD = re.compile(rb"<head(\s[^>]*)?>", re.IGNORECASE)
# The most of an answer held to write the script in (the app's own page is about 1 MB: Gradio writes its config into
# it); a bigger HTML answer (a file a visitor uploaded, served back) passes as it comes, its head untouched.
MAX_HELD_BYTES = 16 * 2**20

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


def with_early(page: bytes) -> bytes:
    """The HTML `page` with EARLY_TAG first in its head (just after the head's opening tag); a page without a
    head as it is."""
    head = HEAD.search(page)
    return page if head is None else page[:head.end()] + EARLY_TAG + page[head.end():]


def _is_page(headers: list[tuple[bytes, bytes]]) -> bool:
    """An answer whose body is an HTML page as it is (not compressed, not cut into ranges)."""
    named = {k.lower(): v.lower() for k, v in headers}
    return (named.get(b"content-type", b"").startswith(b"text/html") and b"content-encoding" not in named
            and b"content-range" not in named)


class EarlyScript:
    """ASGI middleware: each HTML page a GET is answered with gets EARLY_TAG first in its head, its
    Content-Length counted again (a HEAD's too: the app answers it with the page, which the server leaves out); an
    answer past MAX_HELD_BYTES, and every other request and answer, passes untouched."""

    def __init__(self, app: Callable[[Message, Receive, Send], Awaitable[None]]) -> None:
        self.app = app

    async def __call__(self, scope: Message, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http" or scope.get("method") not in ("GET", "HEAD"):
            await self.app(scope, receive, send)
            return
        start: Message | None = None
        body: list[bytes] = []
        size = 0

        async def sending(message: Message) -> None:
            nonlocal start, size
            if message["type"] == "http.response.start" and _is_page(list(message.get("headers", []))):
                start = message  # held until the whole page is here
                return
            if start is None or message["type"] != "http.response.body":
                await send(message)
                return
            body.append(message.get("body", b""))
            size += len(body[-1])
            more = message.get("more_body", False)
            if size > MAX_HELD_BYTES:  # too big to hold: on as it came
                held, start = start, None
                await send(held)
                await send({"type": "http.response.body", "body": b"".join(body), "more_body": more})
                return
            if more:
                return
            page = with_early(b"".join(body))
            headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
            await send({**start, "headers": [*headers, (b"content-length", str(len(page)).encode())]})
            await send({"type": "http.response.body", "body": page})

        await self.app(scope, receive, sending)


def middleware() -> Middleware:
    """EarlyScript, for the middleware Gradio's `launch(app_kwargs=...)` passes to its FastAPI app (ui.py)."""
    return Middleware(EarlyScript)
