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

from dllm_viz.app.errors import user_errors
from dllm_viz.app.outputs import KEEP, fields_of, values_of
from dllm_viz.app.page import Page


def to_gradio(value: Any, as_update: str | None = None) -> Any:
    """A handler's plain value as Gradio wants it: KEEP -> skip, or set one property."""
    if value is KEEP:
        return gr.skip()
    return gr.update(**{as_update: value}) if as_update else value


def wire(page: Page, trigger: Callable[..., Any], fn: Callable[..., Any], *, ins: Sequence[Any] = (),
         out: type, select: bool = False, progress: bool = False, as_update: str | None = None,
         also: tuple[Sequence[Any], Callable[[dict[str, Any]], list[Any]]] | None = None, **kw: Any) -> Any:
    """Connect `trigger` to `fn`: the components `ins` arrive as keyword arguments named after their
    `Page` fields; `fn` returns an `out` record whose fields name the components to update.

    Names are checked here, when the page is built. `select=True` passes the cursor the page sent
    (gr.SelectData: index = [frame, position]); `progress=True` passes Gradio's progress bar;
    `as_update` sets that property instead of the value; `also` prepends outputs computed by the
    page itself from the named inputs (the language switch's labels).
    """
    in_names = tuple(page.name_of(c) for c in ins)
    out_names = fields_of(out)
    outputs = [getattr(page, name) for name in out_names]  # AttributeError now, not at run time
    params = inspect.signature(fn).parameters
    if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
        extra = {"frame", "position"} if select else set()
        extra |= {"progress"} if progress else set()
        missing = set(in_names) - set(params) | (extra - set(params))
        if missing:
            raise TypeError(f"{getattr(fn, '__name__', fn)} takes no {sorted(missing)}")
    also_outputs, also_fn = also if also else ((), None)

    def answer(values: Sequence[Any], **extra: Any) -> Any:
        named = dict(zip(in_names, values))
        result = values_in_order(fn(**named, **extra), out_names)
        values_out = [to_gradio(value, as_update) for value in result]
        if also_fn is not None:
            values_out = [*also_fn(named), *values_out]
        return tuple(values_out) if len(values_out) != 1 else values_out[0]

    if select:
        def handler(evt: gr.SelectData, *values: Any) -> Any:
            frame, position = evt.index
            return answer(values, frame=int(frame), position=int(position))
    elif progress:
        def handler(progress: Any = gr.Progress(), *values: Any) -> Any:  # noqa: B008 - Gradio's convention
            return answer(values, progress=progress)
    else:
        def handler(*values: Any) -> Any:
            return answer(values)

    return trigger(user_errors(handler), inputs=list(ins), outputs=[*also_outputs, *outputs],
                   api_visibility="private", **kw)


def values_in_order(result: Any, names: Sequence[str]) -> list[Any]:
    """A handler's record as the list of its components' values, in the order of `names`."""
    values = values_of(result)
    return [values[name] for name in names]
