"""The schema of a trace read from JSON, checked whole before anything indexes into it.

A trace file comes from outside (an upload, an API caller), so `Trace.from_dict` runs
`check_trace_dict` first: every field's type, every list's length against `gen_length` and the
step count, every position, step and token id against the rest of the trace, and every size
against `LIMITS`. A problem raises `ValueError` naming the field (`steps[3].selected[1]`), so the
figures and the canvas, which index freely, only ever see consistent traces.

The limits are generous bounds on what a real decode writes: every step confirms at least one
position (so steps <= gen_length, or the bound of the trace's revision rule, `revision.max_steps`),
candidates are the few top ids a decoder keeps per position, and a token's text is a short piece.
Beyond them a file is refused, with the limit in the message.

The steps are replayed: each confirmed position must be masked entering its step, each position
taken back or rewritten (format version 2) visible, holding the id the record says; the canvas
after the last step must be `token_ids`, and `order` the step each position was last decided at.
A per-step section (format version 3, `SECTIONS`) is checked by its kind's function, which may move the
replayed positions: an insert/delete step's operations must name the ids the canvas held, agree with the
step's other lists, and its map must send every position that was neither deleted nor cut to one place.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from itertools import chain
from typing import Any

from dllm_viz.core.config import FLOAT32_MAX, FORWARD_KINDS, short
from dllm_viz.core.lineage import ForkPoint

# ----- limits ------------------------------------------------------------------------------------
MAX_TRACE_BYTES = 16 * 2**20  # a JSON file; 240 positions confirmed one per step (240 steps) write 3 MB
MAX_GEN_LENGTH = 8192  # generated positions (the longest canvas of the supported checkpoints is 4096)
MAX_PROMPT_LENGTH = 32768  # prompt tokens
MAX_CELLS = 2**20  # steps x gen_length: the size of the confidence heatmap
MAX_CANDIDATES = 64  # top candidates kept per position and step (the decoder keeps 5 by default)
MAX_TOKEN_ID = 2**31 - 1  # token ids are int32 in every tokenizer we read
MAX_PIECE_CHARS = 1024  # one token's text
MAX_TEXT_CHARS = 4 * 2**20  # `text` and `prompt_text`
MAX_NAME_CHARS = 1024  # `model`
MAX_WALL_TIME = 1e9  # seconds
PROB_SLACK = 1e-4  # float rounding lets a probability or confidence land a hair outside [0, 1]

LIMITS = {
    "bytes": MAX_TRACE_BYTES, "gen_length": MAX_GEN_LENGTH, "prompt_ids": MAX_PROMPT_LENGTH,
    "steps x gen_length": MAX_CELLS, "candidates per position": MAX_CANDIDATES,
    "token id": MAX_TOKEN_ID, "chars per token": MAX_PIECE_CHARS, "text chars": MAX_TEXT_CHARS,
}

REQUIRED_TOP = ("format", "version", "model", "config", "prompt_ids", "prompt_text", "token_ids", "text",
                "order", "wall_time", "mask_token_id", "vocab", "steps")
REQUIRED_STEP = ("step", "block", "k", "temperature", "confidence", "argmax", "selected", "tokens", "logprobs")


def _bad(path: str, value: Any, allowed: str) -> ValueError:
    return ValueError(f"trace {path}={short(value)} is invalid: expected {allowed}")


def _too_big(path: str, size: int, limit: int, unit: str) -> ValueError:
    return ValueError(
        f"trace {path} has {size} {unit}: this viewer reads at most {limit} (a real decode stays well "
        "below this limit; the file is not a trace it wrote, or was altered)"
    )


# ----- scalar and list checks --------------------------------------------------------------------
def _int(path: str, v: Any, lo: int, hi: int) -> int:
    if type(v) is not int or not lo <= v <= hi:
        raise _bad(path, v, f"an integer in [{lo}, {hi}]")
    return v


def _number(path: str, v: Any, lo: float, hi: float) -> float:
    if type(v) not in (int, float) or not lo <= v <= hi:  # NaN fails both comparisons
        raise _bad(path, v, f"a finite number in [{lo:g}, {hi:g}]")
    return v


def _opt_str(path: str, v: Any, limit: int, *, optional: bool = True) -> None:
    if v is None and optional:
        return
    if not isinstance(v, str):
        raise _bad(path, v, "a string" + (" or null" if optional else ""))
    if len(v) > limit:
        raise _too_big(path, len(v), limit, "characters")


def _list(path: str, v: Any, length: int | None = None, limit: int | None = None) -> list:
    if not isinstance(v, list):
        raise _bad(path, v, "a list" + (f" of {length} items" if length is not None else ""))
    if length is not None and len(v) != length:
        raise _bad(path, v, f"a list of {length} items (got {len(v)})")
    if limit is not None and len(v) > limit:
        raise _too_big(path, len(v), limit, "items")
    return v


def _ints(path: str, v: Any, lo: int, hi: int, length: int | None = None, limit: int | None = None) -> list[int]:
    """A list of integers in [lo, hi]; builtins keep this fast on lists of a million items."""
    items = _list(path, v, length, limit)
    if not all(type(x) is int for x in items) or (items and (min(items) < lo or max(items) > hi)):
        i = next(i for i, x in enumerate(items) if type(x) is not int or not lo <= x <= hi)
        raise _bad(f"{path}[{i}]", items[i], f"an integer in [{lo}, {hi}]")
    return items


def _numbers(path: str, v: Any, lo: float, hi: float, length: int | None = None, *, nullable: bool = False) -> None:
    items = _list(path, v, length)
    values = [x for x in items if x is not None] if nullable else items
    # min/max alone miss a NaN after the first item (it compares false, so it never wins: min([0.5, nan])
    # is 0.5); a NaN anywhere makes the sum NaN, which is the one value unequal to itself. Builtins
    # only: this runs on lists of a million items. An infinity is out of [lo, hi] already.
    ok = all(type(x) in (float, int) for x in values) and (
        not values or (lo <= min(values) and max(values) <= hi and (total := sum(values)) == total))
    if not ok:  # found below like any other bad item
        for i, x in enumerate(items):
            if (x is None and nullable) or (type(x) in (float, int) and lo <= x <= hi):
                continue
            raise _bad(f"{path}[{i}]", x, f"a finite number in [{lo:g}, {hi:g}]" + (" or null" if nullable else ""))


def _known_ids(path: str, ids: Iterable[int], vocab: set[int] | None) -> None:
    """Every id is in the trace's vocabulary (when it has one): the figures look each one up."""
    if vocab is None:
        return
    missing = set(ids) - vocab
    if missing:
        raise _bad(path, min(missing), "a token id listed in the trace's vocab")


# ----- the whole trace ---------------------------------------------------------------------------
def check_header(d: dict[str, Any], trace_fields: Iterable[str]) -> tuple[set[int] | None, list[int]]:
    """What every trace has, whatever its canvas: its keys, model, texts, wall time, vocab and prompt. Returns
    the ids the vocab lists (None when it lists none: ids are then only range-checked) and the prompt."""
    known = set(trace_fields) | {"format", "version", "metrics"}
    for key in d:
        if key not in known:
            raise _bad("key", key, "one of " + ", ".join(sorted(known)))
    for key in REQUIRED_TOP:
        if key not in d:
            raise ValueError(f"trace field {key!r} is missing")
    _opt_str("model", d["model"], MAX_NAME_CHARS, optional=False)
    _opt_str("text", d["text"], MAX_TEXT_CHARS)
    _opt_str("prompt_text", d["prompt_text"], MAX_TEXT_CHARS)
    _number("wall_time", d["wall_time"], 0.0, MAX_WALL_TIME)
    if d["mask_token_id"] is not None:
        _int("mask_token_id", d["mask_token_id"], 0, MAX_TOKEN_ID)

    vocab = d["vocab"]
    if not isinstance(vocab, dict):
        raise _bad("vocab", vocab, "an object mapping token ids (as strings) to their text")
    ids: set[int] = set()
    for key, piece in vocab.items():
        if not (isinstance(key, str) and key.isascii() and key.isdigit() and len(key) <= 10
                and int(key) <= MAX_TOKEN_ID):
            raise _bad("vocab key", key, f"a token id in [0, {MAX_TOKEN_ID}] written as a string")
        _opt_str(f"vocab[{key}]", piece, MAX_PIECE_CHARS, optional=False)
        ids.add(int(key))
    known_ids = ids or None  # a trace from a model without a tokenizer has no vocab: ids are only range-checked

    prompt = _ints("prompt_ids", d["prompt_ids"], 0, MAX_TOKEN_ID, limit=MAX_PROMPT_LENGTH)
    _known_ids("prompt_ids", prompt, known_ids)
    return known_ids, prompt


def check_trace_dict(d: dict[str, Any], *, trace_fields: Iterable[str], step_fields: Iterable[str],
                     gen_length: int, num_blocks: int, max_steps: int | None = None, revision: str = "none",
                     cached: bool = False, forks: Sequence[ForkPoint] = (), indel: str = "none") -> None:
    """Raise ValueError naming the first field of `d` (a parsed trace) that is malformed or too big.

    `trace_fields` / `step_fields` are the dataclass fields that `Trace` / `StepRecord` accept;
    `gen_length`, `num_blocks`, `max_steps` (None: gen_length), `revision`, `cached` (its cache is
    not "none") and `indel` come from the trace's config, already validated by DecodeConfig; `forks`, a
    forked trace's fork points (`core.lineage`, read from `d["forks"]`), are replayed with the steps.
    """
    known_ids, prompt = check_header(d, trace_fields)
    G = gen_length
    if G > MAX_GEN_LENGTH:
        raise _too_big("config.gen_length", G, MAX_GEN_LENGTH, "positions")
    tokens = _ints("token_ids", d["token_ids"], 0, MAX_TOKEN_ID, length=G)
    _known_ids("token_ids", tokens, known_ids)
    steps = _list("steps", d["steps"])
    n = len(steps)
    bound = G if max_steps is None else max_steps
    if n > bound and revision == "none" and indel == "none":  # every step confirms at least one position
        raise _bad("steps", steps, f"at most gen_length={G} steps, one confirmed position each at least (got {n})")
    if n > bound:
        rule = f"revision={revision!r}" if indel == "none" else f"indel={indel!r}"
        raise _bad("steps", steps, f"at most {bound} steps for {rule} and gen_length={G} (got {n})")
    if n * G > MAX_CELLS:
        raise _too_big("steps x gen_length", n * G, MAX_CELLS, "cells")
    if G and not n:
        raise _bad("steps", steps, f"at least one step for gen_length={G}")
    lo = -1 if forks else 0  # a token forced before the first step was decided "at step -1"
    order = _ints("order", d["order"], lo, max(0, n - 1), length=G) if G else _list("order", d["order"], 0)
    if d.get("text_end") is not None:
        _int("text_end", d["text_end"], 0, max(0, G - 1))
    if d.get("early_stop_step") is not None:
        _int("early_stop_step", d["early_stop_step"], 0, max(0, n - 1))

    canvas, last = _replay(steps, set(step_fields), G, num_blocks, known_ids, (tokens, order), len(prompt), cached,
                           d["mask_token_id"], indel, forks)
    for pos in range(G):
        if canvas[pos] is None:
            raise _bad(f"token_ids[{pos}]", tokens[pos], "a position the steps decide (it is masked after the last step)")
        if canvas[pos] != tokens[pos]:
            raise _bad(f"token_ids[{pos}]", tokens[pos], f"{canvas[pos]}, the token the steps leave there")
        if order[pos] != last[pos]:
            raise _bad(f"order[{pos}]", order[pos], f"{last[pos]}, the step that last decided position {pos}")


def _apply_forks(forks: Sequence[ForkPoint], i: int, canvas: list[int | None], last: list[int],
                 known_ids: set[int] | None) -> None:
    """The change of the fork points at step `i`, made before record `i` (`core.lineage`): a position taken
    back was visible, a forced id is in the vocab and is not the id already there."""
    for j, fork in enumerate(forks):
        if fork.step != i:
            continue
        for pos in fork.remask:
            if canvas[pos] is None:
                raise _bad(f"forks[{j}].remask", pos, f"a position visible entering step {i}")
            canvas[pos], last[pos] = None, -1
        _known_ids(f"forks[{j}].force", (tok for _, tok in fork.force), known_ids)
        for pos, tok in fork.force:
            if canvas[pos] == tok:
                raise _bad(f"forks[{j}].force", [pos, tok], f"a token other than the one position {pos} holds")
            canvas[pos], last[pos] = tok, i - 1


def _replay(steps: list, known: set[str], G: int, num_blocks: int, known_ids: set[int] | None,
            final: tuple[list[int], list[int]] | None, P: int, cached: bool, mask_id: Any, indel: str,
            forks: Sequence[ForkPoint]) -> tuple[list[int | None], list[int]]:
    """Check every step (and fork point) against the canvas it replays; `(canvas, last)` after the last one:
    the id at each position (None while masked) and the step each position was last decided at."""
    canvas: list[int | None] = [None] * G
    last: list[int] = [-1] * G
    # Without revisions a confirmation is final: each one is checked against token_ids and order at once.
    if any(isinstance(rec, dict) and (rec.get("remasked") or rec.get("edited") or rec.get("indel") is not None)
           for rec in steps) or any(f.changes_canvas for f in forks):
        final = None
    for i, rec in enumerate(steps):
        _apply_forks(forks, i, canvas, last, known_ids)
        entering = list(canvas) if isinstance(rec, dict) and rec.get("indel") is not None else canvas
        _check_step(f"steps[{i}]", i, rec, known, G, num_blocks, canvas, last, known_ids, final)
        _check_cache_fields(f"steps[{i}]", rec, G, P + G, cached)
        moves = _sections(f"steps[{i}]", rec, G, entering, mask_id, indel)
        if moves is not None:  # the step's tokens move after its decisions: the replay follows them
            canvas[:] = [canvas[j] if j >= 0 else None for j in moves]
            last[:] = [last[j] if j >= 0 else -1 for j in moves]
    _apply_forks(forks, len(steps), canvas, last, known_ids)
    return canvas, last


def _check_step(path: str, i: int, rec: Any, known: set[str], G: int, num_blocks: int, canvas: list[int | None],
                last: list[int], known_ids: set[int] | None, final: tuple[list[int], list[int]] | None) -> None:
    if not isinstance(rec, dict):
        raise _bad(path, rec, "an object (one step record)")
    for key in rec:
        if key not in known:
            raise _bad(f"{path} key", key, "one of " + ", ".join(sorted(known)))
    for key in REQUIRED_STEP:
        if key not in rec:
            raise ValueError(f"trace {path}.{key} is missing")
    _int(f"{path}.step", rec["step"], i, i)
    _int(f"{path}.block", rec["block"], 0, max(0, num_blocks - 1))
    k = _int(f"{path}.k", rec["k"], 0, G)
    _number(f"{path}.temperature", rec["temperature"], 0.0, FLOAT32_MAX)
    _numbers(f"{path}.confidence", rec["confidence"], -PROB_SLACK, 1 + PROB_SLACK, G, nullable=True)
    if rec.get("raw_confidence") is not None:
        _numbers(f"{path}.raw_confidence", rec["raw_confidence"], -PROB_SLACK, 1 + PROB_SLACK, G, nullable=True)
    argmax = _ints(f"{path}.argmax", rec["argmax"], -1, MAX_TOKEN_ID, length=G)
    _known_ids(f"{path}.argmax", (a for a in argmax if a >= 0), known_ids)
    selected = _ints(f"{path}.selected", rec["selected"], 0, max(0, G - 1), length=k) if G else \
        _list(f"{path}.selected", rec["selected"], 0)
    drawn = _ints(f"{path}.tokens", rec["tokens"], 0, MAX_TOKEN_ID, length=k)
    _known_ids(f"{path}.tokens", drawn, known_ids)
    _numbers(f"{path}.logprobs", rec["logprobs"], -1e30, PROB_SLACK, k)
    remasked, edited, edited_to = _revisions(path, rec, G, canvas, known_ids)
    seen: set[int] = set()
    for j, pos in enumerate(selected):
        if canvas[pos] is not None or pos in seen:
            raise _bad(f"{path}.selected[{j}]", pos, "a position masked entering the step (not confirmed at an "
                       "earlier step, or taken back since)")
        seen.add(pos)
    if final is not None:
        tokens, order = final
        for j, (pos, tok) in enumerate(zip(selected, drawn)):
            if order[pos] != i:
                raise _bad(f"{path}.selected[{j}]", pos, f"a position whose order is {i} (order[{pos}]={order[pos]})")
            if tokens[pos] != tok:
                raise _bad(f"{path}.tokens[{j}]", tok, f"token_ids[{pos}]={tokens[pos]}, the token confirmed there")
    for pos, tok in zip(selected, drawn):  # the step's decisions, applied together
        canvas[pos], last[pos] = tok, i
    for pos, tok in zip(edited, edited_to):
        canvas[pos], last[pos] = tok, i
    for pos in remasked:
        canvas[pos], last[pos] = None, -1
    cands, probs = rec.get("candidates"), rec.get("candidate_probs")
    if (cands is None) != (probs is None):
        raise _bad(f"{path}.candidate_probs", probs, "present exactly when candidates is")
    if cands is not None:
        _list(f"{path}.candidates", cands, G)
        _list(f"{path}.candidate_probs", probs, G)
        if _candidates_ok(cands, probs, known_ids):
            return
        for p, (ids, ps) in enumerate(zip(cands, probs)):  # something is wrong: name the first bad item
            ids = _ints(f"{path}.candidates[{p}]", ids, 0, MAX_TOKEN_ID, limit=MAX_CANDIDATES)
            _known_ids(f"{path}.candidates[{p}]", ids, known_ids)
            _numbers(f"{path}.candidate_probs[{p}]", ps, -PROB_SLACK, 1 + PROB_SLACK, len(ids))


def _revisions(path: str, rec: dict, G: int, canvas: list[int | None],
               known_ids: set[int] | None) -> tuple[list[int], list[int], list[int]]:
    """Check a step's version-2 fields against the canvas entering it; `(remasked, edited, edited_to)`.

    Taken back and rewritten positions are visible entering the step and hold the old ids the record
    names; a rewrite changes the id; no position is both; probabilities lie in [0, 1]."""
    if rec.get("forwards") is not None:
        _int(f"{path}.forwards", rec["forwards"], 1, 2)
    remasked = rec.get("remasked")
    if remasked is None:
        for key in ("remasked_tokens", "remask_probs"):
            if rec.get(key) is not None:
                raise _bad(f"{path}.{key}", rec[key], "null when remasked is")
        remasked = []
    else:
        remasked = _ints(f"{path}.remasked", remasked, 0, max(0, G - 1), limit=G)
        old = _ints(f"{path}.remasked_tokens", rec.get("remasked_tokens"), 0, MAX_TOKEN_ID, length=len(remasked))
        _numbers(f"{path}.remask_probs", rec.get("remask_probs"), -PROB_SLACK, 1 + PROB_SLACK, len(remasked))
        listed: set[int] = set()
        for j, (pos, tok) in enumerate(zip(remasked, old)):
            if canvas[pos] is None or pos in listed:
                raise _bad(f"{path}.remasked[{j}]", pos, "a position visible entering the step, listed once")
            listed.add(pos)
            if canvas[pos] != tok:
                raise _bad(f"{path}.remasked_tokens[{j}]", tok, f"{canvas[pos]}, the id position {pos} held")
    edited = rec.get("edited")
    if edited is None:
        for key in ("edited_from", "edited_to", "edit_probs", "edit_from_probs"):
            if rec.get(key) is not None:
                raise _bad(f"{path}.{key}", rec[key], "null when edited is")
        return remasked, [], []
    edited = _ints(f"{path}.edited", edited, 0, max(0, G - 1), limit=G)
    n = len(edited)
    old = _ints(f"{path}.edited_from", rec.get("edited_from"), 0, MAX_TOKEN_ID, length=n)
    new = _ints(f"{path}.edited_to", rec.get("edited_to"), 0, MAX_TOKEN_ID, length=n)
    _known_ids(f"{path}.edited_to", new, known_ids)
    for key in ("edit_probs", "edit_from_probs"):
        _numbers(f"{path}.{key}", rec.get(key), -PROB_SLACK, 1 + PROB_SLACK, n)
    taken = set(remasked)
    for j, (pos, a, b) in enumerate(zip(edited, old, new)):
        if canvas[pos] is None or pos in taken:
            raise _bad(f"{path}.edited[{j}]", pos, "a position visible entering the step, listed once and not "
                       "also taken back")
        taken.add(pos)
        if canvas[pos] != a:
            raise _bad(f"{path}.edited_from[{j}]", a, f"{canvas[pos]}, the id position {pos} held")
        if a == b:
            raise _bad(f"{path}.edited_to[{j}]", b, f"an id other than the one it replaces ({a})")
    return remasked, edited, new


# ----- per-step sections (format version 3) -------------------------------------------------------
OP_KINDS = ("fill", "rewrite", "remask", "delete", "split", "cut")  # core.alignment.OP_NAMES but keep, and "cut"


def _indel_section(path: str, rec: dict, G: int, canvas: list[int | None], mask_id: int | None) -> list[int]:
    """An insert/delete step's section (`core.indel_record`): `{"edits": [[position, kind, old id], ...],
    "source": (G,)}`. The old ids are the canvas entering the step (the mask id at a mask); fills, rewrites
    and re-masks are the step's `selected`, `edited` and `remasked`; the map sends each position that was
    neither deleted nor cut to exactly one position, and the others nowhere. Returns the map."""
    sec = rec["indel"]
    if not isinstance(sec, dict) or set(sec) != {"edits", "source"}:
        raise _bad(f"{path}.indel", sec, 'an object with "edits" and "source"')
    if mask_id is None:
        raise _bad("mask_token_id", None, "the mask id: an insert/delete step's operations name it")
    source = _ints(f"{path}.indel.source", sec["source"], -1, max(0, G - 1), length=G)
    edits = _list(f"{path}.indel.edits", sec["edits"], limit=2 * G)
    by_kind: dict[str, set[int]] = {k: set() for k in OP_KINDS}
    for j, e in enumerate(edits):
        where = f"{path}.indel.edits[{j}]"
        if not (isinstance(e, list) and len(e) == 3 and e[1] in OP_KINDS):
            raise _bad(where, e, "[position, kind, old id], kind one of " + " | ".join(OP_KINDS))
        pos = _int(f"{where}[0]", e[0], 0, max(0, G - 1))
        held = mask_id if canvas[pos] is None else canvas[pos]
        if e[2] != held:
            raise _bad(f"{where}[2]", e[2], f"{held}, the id position {pos} held entering the step")
        if pos in by_kind[e[1]]:
            raise _bad(where, e, f"one {e[1]} at position {pos}")
        by_kind[e[1]].add(pos)
    for kind, key in (("fill", "selected"), ("rewrite", "edited"), ("remask", "remasked")):
        if by_kind[kind] != set(rec.get(key) or ()):
            raise _bad(f"{path}.indel.edits", edits, f"the {kind} operations at the positions of {key}")
    gone = by_kind["delete"] | by_kind["cut"]
    kept = [j for j in source if j >= 0]
    if len(set(kept)) != len(kept) or set(kept) != set(range(G)) - gone:
        raise _bad(f"{path}.indel.source", source, "each position neither deleted nor cut, once (-1: a new mask)")
    return source


# The per-step sections a trace may hold, by kind: (step path, record, G, the canvas entering the step, mask id)
# -> the step's position map (None: positions stay). A new kind of step adds its entry.
SECTIONS = {"indel": _indel_section}


def _sections(path: str, rec: Any, G: int, canvas: list[int | None], mask_id: Any, indel: str) -> list[int] | None:
    """Check a step's sections against the canvas entering it; the map of the one that moves positions."""
    if not isinstance(rec, dict):
        return None  # _check_step names it
    if (rec.get("indel") is not None) != (indel != "none"):
        wanted = "an object: each step of an insert/delete rule records its operations" if indel != "none" else \
            "null: the trace's config has indel='none'"
        raise _bad(f"{path}.indel", rec.get("indel"), wanted)
    moves = None
    for kind, check in SECTIONS.items():
        if rec.get(kind) is not None:
            moves = check(path, rec, G, canvas, mask_id)
    return moves


WINDOW_FIELDS = ("drift", "drift_selected", "drift_tokens", "exact_confidence")  # cache_drift, at window steps


def _check_cache_fields(path: str, rec: dict, G: int, length: int, cached: bool) -> None:
    """A cached decode's per-step forward (issue 31): its kind, the positions it computed (a full
    forward the whole row of `length`, a window at most that), its time; and, with the drift
    diagnostic, at a window's steps only: the largest confidence change, the two flags and the exact
    forward's confidence (`G` values). An uncached decode has none of them."""
    if rec.get("forward_kind") is None:
        for key in ("computed", "forward_time", *WINDOW_FIELDS):
            if rec.get(key) is not None:
                raise _bad(f"{path}.{key}", rec[key], "null: a step records it with its forward's kind only")
        if cached:
            raise _bad(f"{path}.forward_kind", None, "the kind of the step's forward ("
                       + " | ".join(FORWARD_KINDS) + "): the trace's config has a cache")
        return
    if not cached:
        raise _bad(f"{path}.forward_kind", rec["forward_kind"], "null: the trace's config has cache='none'")
    kind = rec["forward_kind"]
    if kind not in FORWARD_KINDS:
        raise _bad(f"{path}.forward_kind", kind, "one of " + " | ".join(FORWARD_KINDS))
    lo = length if kind == "full" else 1
    _int(f"{path}.computed", rec.get("computed"), lo, length)
    _number(f"{path}.forward_time", rec.get("forward_time"), 0.0, MAX_WALL_TIME)
    present = [key for key in WINDOW_FIELDS if rec.get(key) is not None]
    if not present:
        return
    if kind == "full":
        raise _bad(f"{path}.{present[0]}", rec[present[0]], "null at a full forward (it is the exact forward)")
    if len(present) != len(WINDOW_FIELDS):
        missing = next(key for key in WINDOW_FIELDS if key not in present)
        raise _bad(f"{path}.{missing}", None, "present with the other drift fields (" + ", ".join(WINDOW_FIELDS) + ")")
    _number(f"{path}.drift", rec["drift"], 0.0, 1 + PROB_SLACK)
    for key in ("drift_selected", "drift_tokens"):
        if type(rec[key]) is not bool:
            raise _bad(f"{path}.{key}", rec[key], "true or false")
    _numbers(f"{path}.exact_confidence", rec["exact_confidence"], -PROB_SLACK, 1 + PROB_SLACK, G, nullable=True)


def _candidates_ok(cands: list, probs: list, known_ids: set[int] | None) -> bool:
    """One step's candidate lists all well formed, checked in a few passes of builtins over the
    flattened lists (G small lists checked one by one cost most of a 3 MB trace's parse). False
    sends the caller to the item-by-item check, which names the first bad item."""
    if not all(type(ids) is list and type(ps) is list and len(ids) == len(ps) <= MAX_CANDIDATES
               for ids, ps in zip(cands, probs)):
        return False
    ids, ps = list(chain.from_iterable(cands)), list(chain.from_iterable(probs))
    if ids and not (set(map(type, ids)) == {int} and 0 <= min(ids) and max(ids) <= MAX_TOKEN_ID):
        return False
    if known_ids is not None and not known_ids.issuperset(ids):
        return False
    # from_json refuses NaN and Infinity when it parses, from_dict does not: a NaN after the first item
    # slips past min/max (see _numbers), not past the sum.
    return not ps or (set(map(type, ps)) <= {float, int} and -PROB_SLACK <= min(ps) and max(ps) <= 1 + PROB_SLACK
                      and (total := sum(ps)) == total)


def dataclass_fields(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls) if f.init)
