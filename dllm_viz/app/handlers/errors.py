"""A user's mistake on the page: a visible error for them, in their language, and one log line for
whoever runs the app.

Handlers raise `ValueError` for bad input (a setting out of range, a malformed trace file, a full
queue), naming the field. `user_errors` wraps each handler: the ValueError becomes a `gr.Error`
that the page shows (the session stays usable), and is logged here as one line. The gr.Error is
made with ``print_exception=False``: Gradio prints the traceback of every exception a handler
raises unless the error says not to (gradio/queueing.py, `process_events`), and a user's typo is
not a bug. Any other exception is a bug and keeps its traceback.

The checks below the app (`core.config`, `core.trace`, the adapters) raise English messages of a
few fixed shapes, the commonest naming the parameter and its allowed range:
"name=value is invalid: expected RANGE". `localize` renders those shapes in the page's language
(parameter names, values and code identifiers stay as they are: they are what the visitor typed),
and wraps any other message in a translated sentence; `wiring.wire` applies it with the `lang`
the handler was called with. English passes through unchanged.
"""
from __future__ import annotations

import functools
import inspect
import logging
import re
from collections.abc import Callable
from typing import Any

import gradio as gr

from dllm_viz.app.strings import t
from dllm_viz.core.rules import MASKED_READS
from dllm_viz.app.views.markup import html_text

log = logging.getLogger(__name__)
ERROR_SECONDS = 8  # how long the page shows the error, unless an event asks it to stay


def user_errors(fn: Callable[..., Any], duration: float | None = ERROR_SECONDS) -> Callable[..., Any]:
    """`fn`, with its ValueError turned into a visible gr.Error and one warning line, no traceback.

    `duration=None`: the message stays until the visitor closes it.
    """

    def shown(err: ValueError) -> gr.Error:
        logged = err.original if isinstance(err, Localized) else str(err)  # the log reads English
        log.warning("user error in %s: %s", fn.__name__, " ".join(logged.split()))
        # Gradio shows the message as HTML: what it echoes (a value from a trace) is shown as text.
        return gr.Error(html_text(str(err)), duration=duration, print_exception=False)

    if inspect.isgeneratorfunction(fn):  # a stream (Gradio tells them apart by this, so the wrapper is one too)
        @functools.wraps(fn)
        def stream(*args: Any, **kwargs: Any) -> Any:
            try:
                yield from fn(*args, **kwargs)
            except ValueError as err:
                raise shown(err) from err

        return stream

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except ValueError as err:
            raise shown(err) from err

    return wrapper


class Localized(ValueError):
    """A user error in the page's language (`localize`), keeping its English `original` for the log."""

    def __init__(self, message: str, original: str) -> None:
        super().__init__(message)
        self.original = original


def _rules(*rules: tuple[str, str, tuple[str, ...]]) -> tuple[tuple[re.Pattern[str], str, tuple[str, ...]], ...]:
    """(pattern, i18n key, the names of the pattern's groups, which fill the key's placeholders)."""
    return tuple((re.compile(pattern, re.S), key, names) for pattern, key, names in rules)


# RANGE phrases of core.config's checks (`_check_int`, `_check_float`, ...), matched whole.
_RANGES = _rules(
    (r"an integer in \[([^,]+), ([^\]]+)\]$", "err_int_in", ("lo", "hi")),
    (r"a finite number in ([\[(])([^,]+), ([^\]]+)\]$", "err_number_in", ("l", "lo", "hi")),
    (r"0 \(argmax\) or a number in \[([^,]+), ([^\]]+)\]$", "err_temperature_in", ("lo", "hi")),
    (r"one of (.+)$", "err_one_of", ("names",)),
    (r"a divisor of gen_length=(\d+)$", "err_divisor", ("g",)),
    (r"a multiple of the number of blocks \((\d+)\)$", "err_multiple", ("n",)),
    (r"None or three temperatures \(early, middle, late\)$", "err_stages", ()),
    (r"True or False$", "err_bool", ()),
    (r"no such field; known fields: (.+)$", "err_no_field", ("names",)),
    (r"(?:a JSON object.*|a mapping of DecodeConfig field names to values)$", "err_json_object", ()),
    (r"A's gen_length=(\d+)$", "err_same_length", ("g",)),
    (r"at least one value$", "err_at_least_one", ()),
)
_INVALID = re.compile(r"([^\s=]+)=(.*?) is invalid: expected (.*)$", re.S)
# Whole messages of other shapes, matched from their start.
_MESSAGES = _rules(
    (r"confidence_from=('\w+') needs sample_scope='all'", "err_needs_all", ("src",)),
    (r"trace file has (\d+) bytes: this viewer reads at most (\d+)", "err_too_big", ("n", "m")),
    (r"trace JSON does not parse", "err_not_json", ()),
    (r"trace format=(.*) is invalid: expected", "err_format", ("v",)),
    (r"trace version=([^:]*): this dllm-viz reads versions? ([\d, ]+)", "err_version", ("v", "n")),
    (r"nothing was uploaded", "err_nothing", ()),
    (r"model_pick=(.*?) is invalid for the Sweep: its canvas is ('\w+')", "err_sweep_canvas", ("m", "c")),
    (r"lesson=('\w+') is invalid for (.*?), whose canvas is ('\w+'): the lessons", "err_lesson_canvas",
     ("k", "m", "c")),
    (r"([^\s=]+)=(.*?) is invalid for (.*?), whose canvas is ('\w+'): the knob applies to (.*?) canvases only; "
     r"expected its default (.*?) \(a \w+ canvas reads (.*)\)$", "err_knob_canvas", ("name", "value", "m", "c", "kinds",
                                                                            "default", "reads")),
)
# Fixed English phrases inside those messages, said in the page's language too.
_PHRASES = {MASKED_READS: "err_masked_reads"}
# Messages that say where the error is, then what it is.
_PREFIXES = (("config A: ", "err_side_a"), ("config B: ", "err_side_b"), ("trace config: ", "err_trace_config"),
             ("trace file: ", "err_trace_file"), ("server busy: ", "err_busy"))


def localize(message: str, lang: str) -> str:
    """`message` (an English user error) in `lang`; see the module docstring."""
    if lang == "en":
        return message
    for prefix, key in _PREFIXES:
        if message.startswith(prefix):
            return t(key, lang, e=localize(message[len(prefix):], lang))
    for pattern, key, names in _MESSAGES:
        m = pattern.match(message)
        if m:
            return t(key, lang, **{n: t(_PHRASES[v], lang) if v in _PHRASES else v for n, v in zip(names, m.groups())})
    m = _INVALID.match(message)
    if m:
        name, value, allowed = m.groups()
        for pattern, key, names in _RANGES:
            r = pattern.match(allowed)
            if r:
                allowed = t(key, lang, **dict(zip(names, r.groups())))
                break
        return t("err_invalid", lang, name=name, value=value, range=allowed)
    return t("err_other", lang, e=message)
