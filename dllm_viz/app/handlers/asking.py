"""Who asks for a decode, and where the request waits: what the page and a served runner tell each other.

A `core.decoder.Runner` takes prompts and configs. The runner `app.serve` serves with submits them
to the shared engine, which serves clients in turn (`serve.fair`) and knows where a request waits; the
handlers know who asks (a page's session, an API caller's address). A `Ticket` carries both ways
without widening the Runner protocol: a handler makes one and runs the runner inside `asking(ticket)`
(`live.stream` does it in its worker thread); the runner reads `current()`, submits as
`ticket.client` and sets `ticket.waiting` and `ticket.cancel`; the handler reads `ticket.waiting()`
while no step has come and shows the queue position, and calls `ticket.cancel()` when nobody waits
for the result any more (Stop, a closed page, an API client that left). A runner that knows
nothing of tickets (plain `decode`, the tests' runners) leaves both as they are: such a call stops
at its next step instead (`live.Stopped`).
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable, Hashable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field

Waiting = tuple[int, float | None]  # (requests that take a slot first, an estimate in seconds or None)


@dataclass
class Ticket:
    """One call's client and, once the runner has queued it, where it waits."""

    client: Hashable = None  # ("page", session hash) or ("api", address); None: nobody in particular
    waiting: Callable[[], Waiting | None] = field(default=lambda: None)  # None once it runs (or unknown)
    cancel: Callable[[], None] = field(default=lambda: None)  # drop the call's requests, waiting or running


_CURRENT: ContextVar[Ticket | None] = ContextVar("dllm_viz_ticket", default=None)


@contextlib.contextmanager
def asking(ticket: Ticket | None) -> Iterator[Ticket | None]:
    """Run the block as `ticket`'s call (no yield inside it: a context variable belongs to one thread's context)."""
    token = _CURRENT.set(ticket)
    try:
        yield ticket
    finally:
        _CURRENT.reset(token)


def current() -> Ticket | None:
    """The ticket of the call this thread runs, if a handler gave one."""
    return _CURRENT.get()
