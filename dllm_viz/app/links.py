"""Links that reopen a view: the page's state in its URL, both ways.

A link names what decides a trace (model, prompt, the decode settings: decoding is deterministic,
so the same model gives the same trace) and where the visitor was looking (the step on show, the
selected position, the tab, what the Compare tab shows (a lesson, two configs, or a fork beside the trace it left),
and the step both Compare sides show):

    ?model=austen-mdlm&prompt=Elizabeth&config={"gen_length":64,"seed":3}&step=4&pos=17&tab=compare&lesson=polluted
     &cmp_step=5

A forked trace's link also lists its fork points (`forks`, `/fork`'s changes in order), which the page makes again
after the decode (`Playground.open_page`): `&forks=[{"step":3,"force":[[12,57]],"remask":[],"knobs":{}}]`; with
`&tab=compare&pair=fork` the Compare tab then shows that fork beside the trace it left (`Playground.fork_pair`).

`link_fields(trace)` is what the page needs to write one (the trace's last chunk carries it: views/wire.py; page.js
adds the cursor, the tab and the lesson, and copies it); `parse_link(query)` reads one back, and
raises `ValueError` naming the parameter for anything malformed.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dllm_viz.app.fork_request import MAX_FORK_CHARS, ForkRequest, fork_request
from dllm_viz.studies.lessons import LESSONS
from dllm_viz.core.analysis import prompt_text
from dllm_viz.core.config import DecodeConfig, short
from dllm_viz.core.fork import initial_config
from dllm_viz.core.trace import Trace

TABS = ("play", "compare")  # the tabs a link may open
PAIRS = ("fork",)  # what else a link's Compare tab may show: the fork beside the trace it left
MAX_LINK_FORKS = 8  # fork points a link may replay (each forks the trace again: a replay of its decode)
MAX_PROMPT_CHARS = 4000  # a link's prompt; longer ones are refused, not cut


def link_fields(trace: Trace) -> dict[str, Any] | None:
    """Model, prompt and settings of `trace`, the settings written as the fields that differ from
    DecodeConfig's defaults (gen_length always), so a link stays short. A forked trace's are the settings its decode
    started with, and its fork points follow as `/fork`'s changes (`forks`: the page forks again, in order); None
    for a trace file whose fork points switch what no setting is (no link could make it again)."""
    defaults = DecodeConfig().to_dict()
    try:
        start = initial_config(trace)
    except ValueError:
        return None
    config = {k: v for k, v in start.to_dict().items() if k == "gen_length" or v != defaults[k]}
    out = {"model": trace.model, "prompt": prompt_text(trace), "config": config}
    if trace.forks:
        out["forks"] = [{"step": p.step, "force": [list(f) for f in p.force], "remask": list(p.remask),
                         "knobs": {k: list(v) if isinstance(v, tuple) else v for k, v in p.knobs}}
                        for p in trace.forks]
    return out


@dataclass(frozen=True)
class Link:
    """What a link asks for; `config` is None when the link names no decode (then nothing opens)."""

    model: str | None
    prompt: str
    config: DecodeConfig | None
    step: int | None  # the frame on show (None: the end)
    pos: int | None  # the selected position (None: the page's)
    tab: str
    lesson: str | None
    cmp_a: str | None  # Compare configs (JSON), when no lesson names them
    cmp_b: str | None
    cmp_step: int | None = None  # the step both Compare sides show (None: their ends; past a side's end: its end)
    pair: str | None = None  # "fork": the Compare tab shows the link's fork beside the trace it left
    forks: tuple[ForkRequest, ...] = ()  # a forked trace's fork points, as `/fork`'s changes, made in order


def _int(query: Mapping[str, str], name: str) -> int | None:
    if name not in query or query[name] == "":
        return None
    try:
        value = int(query[name])
    except ValueError:
        value = -1
    if value < 0:
        raise ValueError(f"link {name}={short(query[name])} is invalid: expected an integer >= 0")
    return value


def parse_link(query: Mapping[str, str]) -> Link:
    """The link in a page's query parameters. Raises ValueError naming the parameter."""
    config = None
    if query.get("config"):
        try:
            fields = json.loads(query["config"])
        except json.JSONDecodeError as err:
            raise ValueError(f"link config={short(query['config'])} is invalid: "
                             f"expected a JSON object ({err})") from None
        if not isinstance(fields, dict):
            raise ValueError(f"link config={short(query['config'])} is invalid: expected a JSON object")
        config = DecodeConfig.from_dict(fields)  # ValueError names the field
    prompt = query.get("prompt", "")
    if len(prompt) > MAX_PROMPT_CHARS:
        raise ValueError(f"link prompt has {len(prompt)} characters: a link carries at most {MAX_PROMPT_CHARS}")
    tab = query.get("tab") or "play"
    if tab not in TABS:
        raise ValueError(f"link tab={short(tab)} is invalid: expected one of {' | '.join(TABS)}")
    lesson = query.get("lesson") or None
    if lesson is not None and lesson not in LESSONS:
        raise ValueError(f"link lesson={short(lesson)} is invalid: expected one of {' | '.join(LESSONS)}")
    cmp_step = _int(query, "cmp_step")
    if cmp_step is not None and tab != "compare":
        raise ValueError(f"link cmp_step={cmp_step} is invalid: a step of the Compare tab, expected tab=compare")
    forks = _forks(query.get("forks") or "")
    return Link(model=query.get("model") or None, prompt=prompt, config=config, step=_int(query, "step"),
                pos=_int(query, "pos"), tab=tab, lesson=lesson, cmp_a=query.get("a") or None,
                cmp_b=query.get("b") or None, cmp_step=cmp_step, forks=forks, pair=_pair(query, tab, forks))


def _pair(query: Mapping[str, str], tab: str, forks: tuple[ForkRequest, ...]) -> str | None:
    """A link's `pair`: "fork" (its fork beside the trace it left), on the Compare tab of a fork's link, naming no
    lesson or configs of its own (ValueError naming it otherwise)."""
    pair = query.get("pair") or None
    if pair is None:
        return None
    if pair not in PAIRS:
        raise ValueError(f"link pair={short(pair)} is invalid: expected one of {' | '.join(PAIRS)}")
    if tab != "compare" or not forks or query.get("lesson") or query.get("a") or query.get("b"):
        raise ValueError("link pair=fork is invalid: the Compare tab (tab=compare) of a fork's link (forks=...), "
                         "naming no lesson and no configs a, b")
    return pair


def _forks(text: str) -> tuple[ForkRequest, ...]:
    """A link's `forks`: at most MAX_LINK_FORKS of `/fork`'s changes (each replays the decode: a link's work is
    bounded), each read as `/fork` reads one (ValueError naming it)."""
    if not text:
        return ()
    if len(text) > MAX_LINK_FORKS * MAX_FORK_CHARS:
        raise ValueError(f"link forks has {len(text)} characters: expected at most {MAX_LINK_FORKS * MAX_FORK_CHARS}")
    try:
        items = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        items = None
    if not isinstance(items, list) or not 0 < len(items) <= MAX_LINK_FORKS or \
            not all(isinstance(item, dict) for item in items):
        raise ValueError(f"link forks={short(text)} is invalid: expected a JSON list of 1 to {MAX_LINK_FORKS} fork "
                         "changes ({\"step\": ..., \"force\": ..., \"remask\": ..., \"knobs\": ...})")
    out = []
    for i, item in enumerate(items):
        try:
            out.append(fork_request(item))
        except ValueError as err:
            raise ValueError(f"link forks[{i}]: {err}") from None
    return tuple(out)
