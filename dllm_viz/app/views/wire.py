"""The trace as the page reads it: compact JSON chunks, each sent once.

The page's renderer (`web/trace.js`) draws every view of a trace from a list of chunks. The first
holds the trace's head (its canvas's length and blocks, the prompt, the settings the views read);
each chunk holds the steps recorded since the one before and the token pieces not sent before; the
last also holds `done`, what only a finished trace says (the checkers' marks, the link that reopens
it, where it stopped). A forked trace's head lists its fork points (tokens forced, positions taken back
before a step: `core.lineage`). A decode in progress sends its chunks as its steps happen (`Encoder.steps`,
from the runner's `on_step`); a stored trace sends them all at once (`chunks`). Both give the page
the same records, so it draws one way whichever it reads.

Only what a step changed travels: per step the positions it scored (their confidence, argmax guess,
top candidates and their probabilities) and the positions it confirmed, took back or rewrote; a
token's text once, as an index into the chunk's growing `pieces`. Per-position numbers travel as
typed columns, `[dtype, base64]` little-endian arrays ("i2", "i4") concatenated over the chunk's
steps; a trace's floats are 6-decimal quantities (`core.trace.quantize`) and travel as their integer
millionths (exact; NaN as `NAN_CODE`). The short per-step lists are plain JSON.
"""
from __future__ import annotations

import base64
import json
import math
import sys
from array import array
from collections.abc import Callable, Iterable, Sequence
from itertools import chain, islice
from typing import Any

import torch

from dllm_viz.app.links import link_fields
from dllm_viz.app.views import moves as moves_view, task as task_view, world as world_view
from dllm_viz.core.analysis import piece, prompt_text
from dllm_viz.core.config import DecodeConfig
from dllm_viz.core.lineage import ForkPoint, held
from dllm_viz.core.schedules import planned_steps
from dllm_viz.core.trace import StepRecord, Trace
from dllm_viz.core.trace_renoise import changes

VERSION = 1
NAN_CODE = -(2**31)  # a NaN among millionths
SCALE = 1_000_000  # a 6-decimal float travels as round(x * SCALE)


TYPECODES = {"i2": "h", "i4": "i"}  # C short and int: 2 and 4 bytes on every platform torch runs on


def column(values: Sequence[int]) -> list[str]:
    """Integers as a typed column: ["i2", base64] when they fit 16 bits, else ["i4", base64]."""
    kind = "i2" if not values or (min(values) >= -32768 and max(values) < 32768) else "i4"
    data = array(TYPECODES[kind], values)
    if sys.byteorder == "big":  # the page reads little-endian
        data.byteswap()
    return [kind, base64.b64encode(data.tobytes()).decode("ascii")]


def millionths(x: float) -> int:
    """A recorded float (6 decimals) as its integer millionths; NaN as NAN_CODE."""
    return NAN_CODE if math.isnan(x) else round(x * SCALE)


def read_column(col: Sequence[str]) -> list[int]:
    """`column` read back (tests, and anything else that reads chunks in Python)."""
    kind, text = col
    data = array(TYPECODES[kind], base64.b64decode(text))
    if sys.byteorder == "big":
        data.byteswap()
    return list(data)


class _Texts:
    """Token text by id, as a trace offers it (`core.analysis.piece` reads `token_text`)."""

    def __init__(self, token_text: Callable[[int], str]) -> None:
        self.token_text = token_text


def head(config: DecodeConfig, *, prompt: str, length: int | None = None) -> dict[str, Any]:
    """What the views read of a trace before its first step: geometry, prompt and settings.

    `length`: the canvas the records have, when a runner fitted it to the prompt (the tasks model
    decodes exactly a task's answer: `views.task.fit_config`), whole and in one block."""
    fitted = length is not None and length != config.gen_length
    return {
        "G": length if fitted else config.gen_length, "bs": length if fitted else config.block_size, "prompt": prompt,
        "planned": None if fitted else planned_steps(config),  # None: the model decides (threshold), or unknown
        "schedule": config.schedule, "threshold": config.threshold, "strict": config.threshold_strict,
        "temperature": config.temperature, "confidence": config.confidence, "src": config.confidence_from,
        "revise": config.revise,
    }


class Encoder:
    """A trace's chunks, step records in, JSON-ready dicts out; each token piece is sent once.

    `token_text(id)` is the model's text of a token (a trace's `token_text`; for a decode in
    progress, the model's tokenizer)."""

    def __init__(self, config: DecodeConfig, *, prompt: str, token_text: Callable[[int], str],
                 forks: Sequence[ForkPoint] = ()) -> None:
        self.config, self.prompt, self.forks = config, prompt, forks
        self.texts = _Texts(token_text)
        self.pieces: dict[str, int] = {}
        self.ids: dict[int, int] = {-1: -1}  # token id -> its piece's index (-1: none)
        self.new: list[str] = []  # pieces first seen since the last chunk
        self.sent = 0  # steps encoded so far
        self.head_sent = False

    def ix(self, token_id: int) -> int:
        """The index of a token's piece (-1: none), added to the pieces to send when new."""
        found = self.ids.get(token_id)
        if found is None:
            text = piece(self.texts, token_id)
            if text not in self.pieces:
                self.pieces[text] = len(self.pieces)
                self.new.append(text)
            found = self.ids[token_id] = self.pieces[text]
        return found

    def ixs(self, token_ids: Iterable[int]) -> list[int]:
        """`ix` of each id, the new ones added in the order they come: one dict lookup for each id seen before."""
        ids, known = list(token_ids), self.ids
        if set(ids).difference(known):  # (set - dict: one pass over the ids, in C)
            for token_id in dict.fromkeys(ids):
                if token_id not in known:
                    self.ix(token_id)
        return list(map(known.__getitem__, ids))

    def chunk(self, records: Sequence[StepRecord], done: dict[str, Any] | None = None) -> dict[str, Any]:
        """The next chunk: the head (first chunk only), `records` (the steps since the last chunk), and
        `done` when the trace is finished."""
        out: dict[str, Any] = {"v": VERSION}
        if not self.head_sent:
            section = records[0].renoise if records else None
            length = len(records[0].confidence) if records and section is None else None
            out["head"], self.head_sent = head(self.config, prompt=self.prompt, length=length), True
            if section is not None:  # a renoising canvas (never masked): L tokens per canvas, one canvas at a time
                out["head"] |= {"canvas": "renoise", "bs": len(section.read)}
            # A forked trace's fork points: before record `step`, positions taken back and tokens forced.
            out["head"]["forks"] = [{"step": f.step, "remask": list(f.remask),
                                     "force": [[p, self.ix(i)] for p, i in f.force]}
                                    for f in self.forks if f.changes_canvas]
            # ... and the knobs they switched there, [name, new, old] as Python writes the values (the per-step
            # figure marks the step).
            out["head"]["switches"] = [{"step": f.step, "knobs": [list(s) for s in f.switches]}
                                       for f in self.forks if f.knobs]
        if records:
            out["steps"] = self.steps(records)
        if done is not None:
            out["done"] = done
        out["pieces"], self.new = self.new, []
        return out

    def steps(self, records: Sequence[StepRecord]) -> dict[str, Any]:
        """Columns of consecutive step records (the chunk's "steps"): per step its block, k, temperature,
        forwards and counts; per position it scored, in `pos` order, the typed columns; per step the
        positions it confirmed (`sel`, their pieces `tok`, raw log-probabilities `lp`), took back (`rm`:
        position, piece, score) and rewrote (`ed`: position, old piece, new piece, p new, p old); where positions
        moved, per step (`mv`) its map to the positions before (-1: a new mask) and the positions it deleted,
        cut and split (`views.moves.Move`), null for a step that kept every position."""
        first, ix, ixs = self.sent, self.ix, self.ixs
        self.sent += len(records)
        raw = any(rec.raw_confidence is not None for rec in records)
        exact = any(rec.exact_confidence is not None for rec in records)
        names = ("pos", "conf", "arg", "nc", "cand", "cp", *(("raw",) if raw else ()), *(("xc",) if exact else ()))
        cols: dict[str, list[int]] = {name: [] for name in ("pos", "arg", "nc", "cand")}
        floats: dict[str, list[float]] = {name: [] for name in names if name not in cols}  # rounded in bulk below
        logprobs: list[float] = []  # every step's, one after the other (out["lp"]: how many each step has)
        out: dict[str, Any] = {"from": first, "b": [], "k": [], "T": [], "fw": [], "ns": [], "sel": [], "tok": [],
                               "lp": [], "rm": [], "ed": []}
        for rec in records:
            conf, arg = rec.confidence, rec.argmax
            scored = [p for p, (c, a) in enumerate(zip(conf, arg)) if a >= 0 or c == c]  # c == c: not NaN
            for key, value in (("b", rec.block), ("k", rec.k), ("T", rec.temperature),
                               ("fw", 1 if rec.forwards is None else rec.forwards), ("ns", len(scored))):
                out[key].append(value)
            cols["pos"] += scored
            floats["conf"] += [conf[p] for p in scored]
            cols["arg"] += ixs(map(arg.__getitem__, scored))
            cands, probs = rec.candidates or [], rec.candidate_probs or []
            rows = [cands[p] if p < len(cands) else [] for p in scored]
            cols["nc"] += map(len, rows)
            cols["cand"] += ixs(chain.from_iterable(rows))
            floats["cp"] += chain.from_iterable(probs[p] for p, row in zip(scored, rows) if row)
            if raw:
                floats["raw"] += [rec.raw[p] for p in scored]
            if exact:
                floats["xc"] += [rec.exact_confidence[p] for p in scored] if rec.exact_confidence else \
                    [math.nan] * len(scored)
            out["sel"].append(list(rec.selected))
            out["tok"].append(ixs(rec.tokens))
            out["lp"].append(len(rec.logprobs))
            logprobs += rec.logprobs
            out["rm"].append([x for p, i, score in zip(rec.remasked or (), rec.remasked_tokens or (),
                                                        rec.remask_probs or ()) for x in (p, ix(i), millionths(score))])
            out["ed"].append([x for p, old, new, p_new, p_old in zip(rec.edited or (), rec.edited_from or (),
                                                                      rec.edited_to or (), rec.edit_probs or (),
                                                                      rec.edit_from_probs or ())
                              for x in (p, ix(old), ix(new), millionths(p_new), millionths(p_old))])
        lp = iter(_m6(logprobs))
        out["lp"] = [list(islice(lp, n)) for n in out["lp"]]
        if not any(out["rm"]) and not any(out["ed"]):
            del out["rm"], out["ed"]  # the usual step takes nothing back
        if records[0].renoise is not None:
            out["rn"] = self.renoise_steps(records)
        moved = [moves_view.step_move(rec) for rec in records]
        if any(moved):  # positions moved (an insert/delete rule): per step its map, deletes, cuts, splits
            out["mv"] = [None if m is None else [m.source, m.deleted, m.cut, m.split] for m in moved]
        return out | {name: column(cols[name]) if name in cols else _m6_column(floats[name]) for name in names}


    def renoise_steps(self, records: Sequence[StepRecord]) -> dict[str, Any]:
        """A renoising trace's steps (the chunk's "rn", `core.trace_renoise.RenoiseSection`): per step, on its
        canvas of L positions, the canvas it read and its argmax (pieces; typed columns of L per step), its
        entropy (millionths), the positions it accepted, its mean entropy and the stop rule's state (bits:
        1 stable, 2 confident, 4 stopped)."""
        sections = [rec.renoise for rec in records]
        return {"read": column([self.ix(i) for s in sections for i in s.read]),
                "arg": column([self.ix(i) for s in sections for i in s.argmax]),
                "ent": _m6_column([x for s in sections for x in s.entropy]),
                "acc": [list(s.accepted) for s in sections], "me": _m6(s.mean_entropy for s in sections),
                "st": [s.stable + 2 * s.confident + 4 * s.stopped for s in sections]}


BULK = 64  # from this many values on, `_m6` and `_m6_column` round them as one tensor


def _m6_tensor(values: list[float]) -> torch.Tensor | None:
    """`millionths` of each value as one int64 tensor, the same integers as one by one: `round` and
    `torch.round` both round half to even, and below 2**52 a double's integer converts exactly. None
    for a short list, and for one with a larger or infinite value or an item that is not a number
    (the caller goes one by one, as before)."""
    if len(values) < BULK:
        return None
    try:
        x = torch.frombuffer(array("d", values), dtype=torch.float64) * SCALE
    except (TypeError, ValueError, OverflowError):
        return None
    if bool((x.abs() >= 2.0**52).any()):  # (NaN compares false: it becomes NAN_CODE)
        return None
    return torch.where(x.isnan(), NAN_CODE, x.round()).to(torch.int64)


def _m6(values: Iterable[float]) -> list[int]:
    """`millionths` of each value."""
    values = values if isinstance(values, list) else list(values)
    bulk = _m6_tensor(values)
    return bulk.tolist() if bulk is not None else [round(x * SCALE) if x == x else NAN_CODE for x in values]


def _m6_column(values: list[float]) -> list[str]:
    """`column(_m6(values))`: a long list's bytes written from its tensor, without a Python int each."""
    bulk = _m6_tensor(values)
    if bulk is None:
        return column(_m6(values))
    kind = "i2" if -32768 <= int(bulk.min()) and int(bulk.max()) < 32768 else "i4"
    data = array(TYPECODES[kind], bytes(len(values) * (2 if kind == "i2" else 4)))
    torch.frombuffer(data, dtype=torch.int16 if kind == "i2" else torch.int32).copy_(bulk)
    if sys.byteorder == "big":  # the page reads little-endian
        data.byteswap()
    return [kind, base64.b64encode(data.tobytes()).decode("ascii")]


def done(trace: Trace) -> dict[str, Any]:
    """What only the finished trace says: where its text ends, the world or task checker's rules
    broken per position (and each violation, for the inspector), a task's 4x4 puzzle, the link that
    reopens it, and the task curve it sits on; a renoising trace's bound and stop threshold (`rn`)."""
    task = task_view.task_of(trace)
    if task is not None:
        verdict = task_view.verdict(trace)
        cells = set(verdict.cells) if verdict is not None else set()
        rules = [[[verdict.rule, verdict.message, ""]] if pos in cells else [] for pos in range(len(trace.token_ids))]
        bad = task_view.token_rules(trace)
    else:
        rules = [[[v.rule, v.message, v.text] for v in found] for found in world_view.generated_marks(trace)]
        bad = world_view.token_rules(trace)
    cells = task_view.grid_cells(trace)
    family = task_view.curve_data(task.family) if task is not None else None
    return {
        "n": len(trace.steps), "end": trace.text_end if trace.text_end is not None else -1,
        "bad": bad, "rules": rules, "grid": list(cells) if cells is not None else None,
        "checked": world_view.is_checked(trace), "link": link_fields(trace),
        "task": {"family": task.family, "curves": family} if family is not None else None,
        # positions moved: what the decode deleted and split in all (the notes under the heatmap and order map)
        "moved": ({"deleted": trace.metrics.get("deleted", 0), "split": trace.metrics.get("split", 0)}
                  if trace.moved else None),
    } | ({"rn": renoise_done(trace)} if trace.canvas == "renoise" else {})


def renoise_done(trace: Trace) -> dict[str, Any]:
    """What a renoising trace's figures read beside its steps: the entropy bound (`bound`) and the stop's
    confidence threshold (`ct`) that ran (a list, one per step, where a fork switched it), and per position the
    steps that changed its token (`changes`, `core.trace_renoise.changes`: by token id, which the page cannot tell
    apart where two ids share a piece)."""
    sections = [rec.renoise for rec in trace.steps]
    return {"bound": _in_force(trace, "entropy_bound"), "ct": _in_force(trace, "confidence_threshold"),
            "changes": changes(trace.token_ids, trace.canvases or [], sections)}  # type: ignore[arg-type]


def _in_force(trace: Trace, knob: str) -> Any:
    """`knob`'s value, or its value at each step when a fork switched it (`Trace.forks`)."""
    value = getattr(trace.config, knob)
    if not any(knob in dict(point.was) for point in trace.forks):
        return value
    at = held(value, trace.forks, knob)
    return [at(s) for s in range(len(trace.steps))]


def encoder_for(trace: Trace) -> Encoder:
    return Encoder(trace.config, prompt=prompt_text(trace), token_text=trace.token_text, forks=trace.forks)


def chunks(trace: Trace) -> list[dict[str, Any]]:
    """A stored trace as the page reads it: one chunk with everything."""
    return [encoder_for(trace).chunk(trace.steps, done=done(trace))]


def dumps(items: Iterable[dict[str, Any]]) -> str:
    """Chunks as the JSON text the page reads (a list)."""
    text = (json.dumps(c, ensure_ascii=False, separators=(",", ":"), allow_nan=False) for c in items)
    return "[" + ",".join(text) + "]"


def canvas_value(handle: str, *, lang: str, live: bool = False, frame: int | None = None, selected: int | None = None,
                 autoplay: bool = False, key: str = "") -> dict[str, Any]:
    """The Playground canvas's value: the trace on show by its handle, and where to put the cursor (a
    frame and a position to select; None: the end, and the page's own selection). A decode in progress
    (`live`) carries the `key` its Stop must send (`PlayHandlers.stopped`): only this page receives it."""
    value = {"ref": handle, "lang": lang, "live": live, "frame": frame, "selected": selected, "autoplay": autoplay}
    return value | {"key": key} if live else value


def side_value(handle: str, side: str, *, lang: str, diff: Sequence[int] = (), first: int | None = None,
               order: Sequence[int] = (), live: bool = False, key: str = "") -> dict[str, Any]:
    """A Compare side's value: its trace's handle, its positions whose token differs from the other
    side's (`diff`, underlined), and where the two orders part (`first` step, `order` positions); a
    side still decoding (`live`) has none of these yet, and carries the `key` its Stop must send
    (`CompareHandlers.stopped`)."""
    value = {"ref": handle, "side": side, "lang": lang, "live": live, "diff": sorted(diff),
             "cmp": None if live else {"first": first, "order": list(order)}}
    return value | {"key": key} if live else value
