"""One `wire`: the only code that turns a plain handler into a Gradio event.

A handler takes keyword arguments named after `page.Page` fields and returns a record of
`outputs`; `wire` maps both sides onto the page's components by name when the page is built, so a
misspelt name fails at build time, turns `KEEP` into `gr.skip()`, and a `ValueError` into a
visible `gr.Error` (the session stays usable) and one log line (`errors.user_errors`).
"""
from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

import gradio as gr

from dllm_viz.app.handlers.errors import ERROR_SECONDS, Localized, localize, user_errors
from dllm_viz.app.handlers.outputs import KEEP, fields_of, values_of
from dllm_viz.app.layout.page import Page


# What `wire(..., request=(...))` can pass a handler from the visitor's request, by keyword.
REQUEST_FIELDS: dict[str, Callable[[gr.Request], Any]] = {
    "query": lambda req: dict(req.query_params),  # the page's URL query parameters (a link)
    "session": lambda req: req.session_hash,  # this visitor's session (a Stop finds its own decode)
}


def to_gradio(value: Any, as_update: str | None = None) -> Any:
    """A handler's plain value as Gradio wants it: KEEP -> skip, or set one property."""
    if value is KEEP:
        return gr.skip()
    return gr.update(**{as_update: value}) if as_update else value


def wire(page: Page, trigger: Callable[..., Any], fn: Callable[..., Any], *, ins: Sequence[Any] = (),
         out: type, progress: bool = False, request: Sequence[str] = (), as_update: str | None = None,
         also: tuple[Sequence[Any], Callable[[dict[str, Any]], list[Any]]] | None = None,
         error_seconds: float | None = ERROR_SECONDS, **kw: Any) -> Any:
    """Connect `trigger` to `fn`: the components `ins` arrive as keyword arguments named after their
    `Page` fields; `fn` returns an `out` record whose fields name the components to update.

    Names are checked here, when the page is built. `progress=True` passes Gradio's progress bar;
    `request` names what of the visitor's request to pass (`REQUEST_FIELDS`: the page's URL query
    parameters, the session's id); `as_update` sets that property instead of the value; `also` prepends outputs computed
    by the page itself from the named inputs (the language switch's labels). A user error (`ValueError`)
    is shown in the language of the handler's `lang` input (`errors.localize`) for `error_seconds`
    (None: until closed).
    """
    in_names = tuple(page.name_of(c) for c in ins)
    out_names = fields_of(out)
    outputs = [getattr(page, name) for name in out_names]  # AttributeError now, not at run time
    params = inspect.signature(fn).parameters
    if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
        extra = ({"progress"} if progress else set()) | set(request)
        missing = set(in_names) - set(params) | (extra - set(params))
        if missing:
            raise TypeError(f"{getattr(fn, '__name__', fn)} takes no {sorted(missing)}")
    also_outputs, also_fn = also if also else ((), None)

    def gradio_values(named: dict[str, Any], record: Any) -> Any:
        values_out = [to_gradio(value, as_update) for value in values_in_order(record, out_names)]
        if also_fn is not None:
            values_out = [*also_fn(named), *values_out]
        return tuple(values_out) if len(values_out) != 1 else values_out[0]

    def localized(err: ValueError, named: dict[str, Any]) -> Localized:
        return Localized(localize(str(err), named.get("lang", "en")), str(err))

    def answer(values: Sequence[Any], **extra: Any) -> Any:
        named = dict(zip(in_names, values))
        try:
            record = fn(**named, **extra)
        except ValueError as err:
            raise localized(err, named) from err
        return gradio_values(named, record)

    unknown = set(request) - set(REQUEST_FIELDS)
    if unknown:
        raise TypeError(f"wire: request={sorted(unknown)} is invalid: expected names of {sorted(REQUEST_FIELDS)}")

    def stream(named: dict[str, Any], extra: dict[str, Any]) -> Any:
        try:
            for record in fn(**named, **extra):
                yield gradio_values(named, record)
        except ValueError as err:
            raise localized(err, named) from err

    def asked(req: gr.Request) -> dict[str, Any]:
        return {name: REQUEST_FIELDS[name](req) for name in request}

    # Gradio passes the request to a parameter annotated gr.Request, and streams a generator's yields.
    if inspect.isgeneratorfunction(fn) and request:
        def handler(req: gr.Request, *values: Any) -> Any:
            yield from stream(dict(zip(in_names, values)), asked(req))
    elif inspect.isgeneratorfunction(fn):
        def handler(*values: Any) -> Any:
            yield from stream(dict(zip(in_names, values)), {})
    elif request:
        def handler(req: gr.Request, *values: Any) -> Any:
            return answer(values, **asked(req))
    elif progress:
        def handler(progress: Any = gr.Progress(), *values: Any) -> Any:  # noqa: B008 - Gradio's convention
            return answer(values, progress=progress)
    else:
        def handler(*values: Any) -> Any:
            return answer(values)

    if kw.get("show_progress") == "hidden":
        # Gradio's page runs a status tracker per output while an event is pending, each a timer in an
        # animation-frame loop even when hidden: a decode event's ~30 outputs made ~850 callbacks per release
        # (most of the page's main-thread time). No targets, no trackers.
        kw.setdefault("show_progress_on", [])
    return trigger(user_errors(handler, error_seconds), inputs=list(ins), outputs=[*also_outputs, *outputs],
                   api_visibility="private", **kw)


def values_in_order(result: Any, names: Sequence[str]) -> list[Any]:
    """A handler's record as the list of its components' values, in the order of `names`."""
    values = values_of(result)
    return [values[name] for name in names]
