"""The `/fork` API (docs/fork_diff_export.md): a trace and a fork's change as JSON in; the forked trace out, with the
world checker's verdict on both when the trace is the world model's. No Gradio here (`ui` makes it an endpoint).

A fork replays the trace on its own model (`core.fork`), so the page's model picker must hold that model:
`ModelChoice.fork` is how the entry of a model forks (`app.serve` makes it from the model). The request is
bounded like `/generate`'s: the trace by `Trace.from_json`'s limits, the change by `app.fork_request`; a bad
value raises ValueError naming it (the page shows it as a gr.Error; nothing else fails).
"""
from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from dllm_viz.app.fork_request import parse_fork_json
from dllm_viz.app.views import world as world_view
from dllm_viz.core.trace import StepRecord, Trace
from dllm_viz.studies.world_score import fork_verdicts
from dllm_viz.world import Verdict


class Forker(Protocol):
    """How a model forks a trace: `core.fork.fork` with the model bound (`app.serve.make_forker`)."""

    def __call__(self, trace: Trace, step: int, *, force: Mapping[int, int] | None = None, remask: Sequence[int] = (),
                 knobs: Mapping[str, Any] | None = None,
                 on_step: Callable[[StepRecord], None] | None = None) -> Trace: ...


def verdict_dict(v: Verdict) -> dict[str, Any]:
    return {"valid": v.valid, "sentences": v.sentences, "valid_sentences": v.valid_sentences,
            "rules": sorted(v.rules())}


def verdicts_json(parent: Trace, child: Trace) -> str:
    """`{"parent": ..., "fork": ...}`, the world checker's verdict on each, or `null` for another model."""
    if not world_view.is_checked(parent):
        return "null"
    a, b = fork_verdicts(parent, child)
    return json.dumps({"parent": verdict_dict(a), "fork": verdict_dict(b)})


def fork_api(forker_for: Callable[[str], Forker], trace_json: str, fork_json: str) -> tuple[str, str, str]:
    """`/fork`: (the fork's text, its trace JSON, the verdicts JSON)."""
    trace = Trace.from_json(trace_json or "")
    request = parse_fork_json(fork_json)
    out = forker_for(trace.model)(trace, request.step, force=request.force, remask=request.remask,
                                  knobs=request.knobs)
    return out.text or "", out.to_json(), verdicts_json(trace, out)
