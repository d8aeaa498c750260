"""A user's mistake on the page: a visible error for them, one log line for whoever runs the app.

Handlers raise `ValueError` for bad input (a setting out of range, a malformed trace file, a full
queue), naming the field. `user_errors` wraps each handler: the ValueError becomes a `gr.Error`
that the page shows (the session stays usable), and is logged here as one line. The gr.Error is
made with ``print_exception=False``: Gradio prints the traceback of every exception a handler
raises unless the error says not to (gradio/queueing.py, `process_events`), and a user's typo is
not a bug. Any other exception is a bug and keeps its traceback.
"""
from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

import gradio as gr

from dllm_viz.app.markup import html_text

log = logging.getLogger(__name__)
ERROR_SECONDS = 8  # how long the page shows the error


def user_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn`, with its ValueError turned into a visible gr.Error and one warning line, no traceback."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except ValueError as err:
            log.warning("user error in %s: %s", fn.__name__, " ".join(str(err).split()))
            # Gradio shows the message as HTML: what it echoes (a value from a trace) is shown as text.
            raise gr.Error(html_text(str(err)), duration=ERROR_SECONDS, print_exception=False) from err

    return wrapper
