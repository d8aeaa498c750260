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

from dllm_viz.core.config import FLOAT32_MAX, FORWARD_KINDS
from dllm_viz.core.lineage import ForkPoint
from dllm_viz.core.trace_checks import (
    bad, check_int, check_ints, check_known_ids, check_list, check_number, check_numbers, check_opt_str, too_big,
)
from dllm_viz.core.trace_schema_indel import indel_section

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


# ----- the whole trace ---------------------------------------------------------------------------
def check_header(d: dict[str, Any], trace_fields: Iterable[str]) -> tuple[set[int] | None, list[int]]:
    """What every trace has, whatever its canvas: its keys, model, texts, wall time, vocab and prompt. Returns
    the ids the vocab lists (None when it lists none: ids are then only range-checked) and the prompt."""
    known = set(trace_fields) | {"format", "version", "metrics"}
    for key in d:
        if key not in known:
            raise bad("key", key, "one of " + ", ".join(sorted(known)))
    for key in REQUIRED_TOP:
        if key not in d:
            raise ValueError(f"trace field {key!r} is missing")
    check_opt_str("model", d["model"], MAX_NAME_CHARS, optional=False)
    check_opt_str("text", d["text"], MAX_TEXT_CHARS)
    check_opt_str("prompt_text", d["prompt_text"], MAX_TEXT_CHARS)
    check_number("wall_time", d["wall_time"], 0.0, MAX_WALL_TIME)
    if d["mask_token_id"] is not None:
        check_int("mask_token_id", d["mask_token_id"], 0, MAX_TOKEN_ID)

    vocab = d["vocab"]
    if not isinstance(vocab, dict):
        raise bad("vocab", vocab, "an object mapping token ids (as strings) to their text")
    ids: set[int] = set()
    for key, piece in vocab.items():
        if not (isinstance(key, str) and key.isascii() and key.isdigit() and len(key) <= 10
                and int(key) <= MAX_TOKEN_ID):
            raise bad("vocab key", key, f"a token id in [0, {MAX_TOKEN_ID}] written as a string")
        check_opt_str(f"vocab[{key}]", piece, MAX_PIECE_CHARS, optional=False)
        ids.add(int(key))
    known_ids = ids or None  # a trace from a model without a tokenizer has no vocab: ids are only range-checked

    prompt = check_ints("prompt_ids", d["prompt_ids"], 0, MAX_TOKEN_ID, limit=MAX_PROMPT_LENGTH)
    check_known_ids("prompt_ids", prompt, known_ids)
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
        raise too_big("config.gen_length", G, MAX_GEN_LENGTH, "positions")
    tokens = check_ints("token_ids", d["token_ids"], 0, MAX_TOKEN_ID, length=G)
    check_known_ids("token_ids", tokens, known_ids)
    steps = check_list("steps", d["steps"])
    n = len(steps)
    bound = G if max_steps is None else max_steps
    if n > bound and revision == "none" and indel == "none":  # every step confirms at least one position
        raise bad("steps", steps, f"at most gen_length={G} steps, one confirmed position each at least (got {n})")
    if n > bound:
        rule = f"revision={revision!r}" if indel == "none" else f"indel={indel!r}"
        raise bad("steps", steps, f"at most {bound} steps for {rule} and gen_length={G} (got {n})")
    if n * G > MAX_CELLS:
        raise too_big("steps x gen_length", n * G, MAX_CELLS, "cells")
    if G and not n:
        raise bad("steps", steps, f"at least one step for gen_length={G}")
    lo = -1 if forks else 0  # a token forced before the first step was decided "at step -1"
    order = check_ints("order", d["order"], lo, max(0, n - 1), length=G) if G else check_list("order", d["order"], 0)
    if d.get("text_end") is not None:
        check_int("text_end", d["text_end"], 0, max(0, G - 1))
    if d.get("early_stop_step") is not None:
        check_int("early_stop_step", d["early_stop_step"], 0, max(0, n - 1))

    canvas, last = _replay(steps, set(step_fields), G, num_blocks, known_ids, (tokens, order), len(prompt), cached,
                           d["mask_token_id"], indel, forks)
    for pos in range(G):
        if canvas[pos] is None:
            raise bad(f"token_ids[{pos}]", tokens[pos],
                      "a position the steps decide (it is masked after the last step)")
        if canvas[pos] != tokens[pos]:
            raise bad(f"token_ids[{pos}]", tokens[pos], f"{canvas[pos]}, the token the steps leave there")
        if order[pos] != last[pos]:
            raise bad(f"order[{pos}]", order[pos], f"{last[pos]}, the step that last decided position {pos}")


def _apply_forks(forks: Sequence[ForkPoint], i: int, canvas: list[int | None], last: list[int],
                 known_ids: set[int] | None) -> None:
    """The change of the fork points at step `i`, made before record `i` (`core.lineage`): a position taken
    back was visible, a forced id is in the vocab and is not the id already there."""
    for j, fork in enumerate(forks):
        if fork.step != i:
            continue
        for pos in fork.remask:
            if canvas[pos] is None:
                raise bad(f"forks[{j}].remask", pos, f"a position visible entering step {i}")
            canvas[pos], last[pos] = None, -1
        check_known_ids(f"forks[{j}].force", (tok for _, tok in fork.force), known_ids)
        for pos, tok in fork.force:
            if canvas[pos] == tok:
                raise bad(f"forks[{j}].force", [pos, tok], f"a token other than the one position {pos} holds")
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
        raise bad(path, rec, "an object (one step record)")
    for key in rec:
        if key not in known:
            raise bad(f"{path} key", key, "one of " + ", ".join(sorted(known)))
    for key in REQUIRED_STEP:
        if key not in rec:
            raise ValueError(f"trace {path}.{key} is missing")
    check_int(f"{path}.step", rec["step"], i, i)
    check_int(f"{path}.block", rec["block"], 0, max(0, num_blocks - 1))
    k = check_int(f"{path}.k", rec["k"], 0, G)
    check_number(f"{path}.temperature", rec["temperature"], 0.0, FLOAT32_MAX)
    check_numbers(f"{path}.confidence", rec["confidence"], -PROB_SLACK, 1 + PROB_SLACK, G, nullable=True)
    if rec.get("raw_confidence") is not None:
        check_numbers(f"{path}.raw_confidence", rec["raw_confidence"], -PROB_SLACK, 1 + PROB_SLACK, G, nullable=True)
    argmax = check_ints(f"{path}.argmax", rec["argmax"], -1, MAX_TOKEN_ID, length=G)
    check_known_ids(f"{path}.argmax", (a for a in argmax if a >= 0), known_ids)
    selected = check_ints(f"{path}.selected", rec["selected"], 0, max(0, G - 1), length=k) if G else \
        check_list(f"{path}.selected", rec["selected"], 0)
    drawn = check_ints(f"{path}.tokens", rec["tokens"], 0, MAX_TOKEN_ID, length=k)
    check_known_ids(f"{path}.tokens", drawn, known_ids)
    check_numbers(f"{path}.logprobs", rec["logprobs"], -1e30, PROB_SLACK, k)
    remasked, edited, edited_to = _revisions(path, rec, G, canvas, known_ids)
    seen: set[int] = set()
    for j, pos in enumerate(selected):
        if canvas[pos] is not None or pos in seen:
            raise bad(f"{path}.selected[{j}]", pos, "a position masked entering the step (not confirmed at an "
                       "earlier step, or taken back since)")
        seen.add(pos)
    if final is not None:
        tokens, order = final
        for j, (pos, tok) in enumerate(zip(selected, drawn)):
            if order[pos] != i:
                raise bad(f"{path}.selected[{j}]", pos, f"a position whose order is {i} (order[{pos}]={order[pos]})")
            if tokens[pos] != tok:
                raise bad(f"{path}.tokens[{j}]", tok, f"token_ids[{pos}]={tokens[pos]}, the token confirmed there")
    for pos, tok in zip(selected, drawn):  # the step's decisions, applied together
        canvas[pos], last[pos] = tok, i
    for pos, tok in zip(edited, edited_to):
        canvas[pos], last[pos] = tok, i
    for pos in remasked:
        canvas[pos], last[pos] = None, -1
    cands, probs = rec.get("candidates"), rec.get("candidate_probs")
    if (cands is None) != (probs is None):
        raise bad(f"{path}.candidate_probs", probs, "present exactly when candidates is")
    if cands is not None:
        check_list(f"{path}.candidates", cands, G)
        check_list(f"{path}.candidate_probs", probs, G)
        if _candidates_ok(cands, probs, known_ids):
            return
        for p, (ids, ps) in enumerate(zip(cands, probs)):  # something is wrong: name the first bad item
            ids = check_ints(f"{path}.candidates[{p}]", ids, 0, MAX_TOKEN_ID, limit=MAX_CANDIDATES)
            check_known_ids(f"{path}.candidates[{p}]", ids, known_ids)
            check_numbers(f"{path}.candidate_probs[{p}]", ps, -PROB_SLACK, 1 + PROB_SLACK, len(ids))


def _revisions(path: str, rec: dict, G: int, canvas: list[int | None],
               known_ids: set[int] | None) -> tuple[list[int], list[int], list[int]]:
    """Check a step's version-2 fields against the canvas entering it; `(remasked, edited, edited_to)`.

    Taken back and rewritten positions are visible entering the step and hold the old ids the record
    names; a rewrite changes the id; no position is both; probabilities lie in [0, 1]."""
    if rec.get("forwards") is not None:
        check_int(f"{path}.forwards", rec["forwards"], 0, 2)
    if rec.get("closing_forward") is not None and rec["closing_forward"] is not True:
        raise bad(f"{path}.closing_forward", rec["closing_forward"], "true or null")
    remasked = rec.get("remasked")
    if remasked is None:
        for key in ("remasked_tokens", "remask_probs"):
            if rec.get(key) is not None:
                raise bad(f"{path}.{key}", rec[key], "null when remasked is")
        remasked = []
    else:
        remasked = check_ints(f"{path}.remasked", remasked, 0, max(0, G - 1), limit=G)
        old = check_ints(f"{path}.remasked_tokens", rec.get("remasked_tokens"), 0, MAX_TOKEN_ID, length=len(remasked))
        check_numbers(f"{path}.remask_probs", rec.get("remask_probs"), -PROB_SLACK, 1 + PROB_SLACK, len(remasked))
        listed: set[int] = set()
        for j, (pos, tok) in enumerate(zip(remasked, old)):
            if canvas[pos] is None or pos in listed:
                raise bad(f"{path}.remasked[{j}]", pos, "a position visible entering the step, listed once")
            listed.add(pos)
            if canvas[pos] != tok:
                raise bad(f"{path}.remasked_tokens[{j}]", tok, f"{canvas[pos]}, the id position {pos} held")
    edited = rec.get("edited")
    if edited is None:
        for key in ("edited_from", "edited_to", "edit_probs", "edit_from_probs"):
            if rec.get(key) is not None:
                raise bad(f"{path}.{key}", rec[key], "null when edited is")
        return remasked, [], []
    edited = check_ints(f"{path}.edited", edited, 0, max(0, G - 1), limit=G)
    n = len(edited)
    old = check_ints(f"{path}.edited_from", rec.get("edited_from"), 0, MAX_TOKEN_ID, length=n)
    new = check_ints(f"{path}.edited_to", rec.get("edited_to"), 0, MAX_TOKEN_ID, length=n)
    check_known_ids(f"{path}.edited_to", new, known_ids)
    for key in ("edit_probs", "edit_from_probs"):
        check_numbers(f"{path}.{key}", rec.get(key), -PROB_SLACK, 1 + PROB_SLACK, n)
    taken = set(remasked)
    for j, (pos, a, b) in enumerate(zip(edited, old, new)):
        if canvas[pos] is None or pos in taken:
            raise bad(f"{path}.edited[{j}]", pos, "a position visible entering the step, listed once and not "
                       "also taken back")
        taken.add(pos)
        if canvas[pos] != a:
            raise bad(f"{path}.edited_from[{j}]", a, f"{canvas[pos]}, the id position {pos} held")
        if a == b:
            raise bad(f"{path}.edited_to[{j}]", b, f"an id other than the one it replaces ({a})")
    return remasked, edited, new


# ----- per-step sections (format version 3) -------------------------------------------------------
# The per-step sections a trace may hold, by kind: (step path, record, G, the canvas entering the step, mask id)
# -> the step's position map (None: positions stay). A new kind of step adds its entry.
SECTIONS = {"indel": indel_section}


def _sections(path: str, rec: Any, G: int, canvas: list[int | None], mask_id: Any, indel: str) -> list[int] | None:
    """Check a step's sections against the canvas entering it; the map of the one that moves positions."""
    if not isinstance(rec, dict):
        return None  # _check_step names it
    if (rec.get("indel") is not None) != (indel != "none"):
        wanted = "an object: each step of an insert/delete rule records its operations" if indel != "none" else \
            "null: the trace's config has indel='none'"
        raise bad(f"{path}.indel", rec.get("indel"), wanted)
    moves = None
    for kind, check in SECTIONS.items():
        if rec.get(kind) is not None:
            moves = check(path, rec, G, canvas, mask_id)
    return moves


WINDOW_FIELDS = ("drift", "drift_selected", "drift_tokens", "exact_confidence")  # cache_drift, at window steps


def _check_cache_fields(path: str, rec: dict, G: int, length: int, cached: bool) -> None:
    """A cached decode's per-step forward (`core.cache`): its kind, the positions it computed (a full
    forward the whole row of `length`, a window at most that), its time; and, with the drift
    diagnostic, at a window's steps only: the largest confidence change, the two flags and the exact
    forward's confidence (`G` values). An uncached decode has none of them."""
    if rec.get("forward_kind") is None:
        for key in ("computed", "forward_time", *WINDOW_FIELDS):
            if rec.get(key) is not None:
                raise bad(f"{path}.{key}", rec[key], "null: a step records it with its forward's kind only")
        if cached:
            raise bad(f"{path}.forward_kind", None, "the kind of the step's forward ("
                       + " | ".join(FORWARD_KINDS) + "): the trace's config has a cache")
        return
    if not cached:
        raise bad(f"{path}.forward_kind", rec["forward_kind"], "null: the trace's config has cache='none'")
    kind = rec["forward_kind"]
    if kind not in FORWARD_KINDS:
        raise bad(f"{path}.forward_kind", kind, "one of " + " | ".join(FORWARD_KINDS))
    lo = length if kind == "full" else 1
    check_int(f"{path}.computed", rec.get("computed"), lo, length)
    check_number(f"{path}.forward_time", rec.get("forward_time"), 0.0, MAX_WALL_TIME)
    present = [key for key in WINDOW_FIELDS if rec.get(key) is not None]
    if not present:
        return
    if kind == "full":
        raise bad(f"{path}.{present[0]}", rec[present[0]], "null at a full forward (it is the exact forward)")
    if len(present) != len(WINDOW_FIELDS):
        missing = next(key for key in WINDOW_FIELDS if key not in present)
        raise bad(f"{path}.{missing}", None, "present with the other drift fields (" + ", ".join(WINDOW_FIELDS) + ")")
    check_number(f"{path}.drift", rec["drift"], 0.0, 1 + PROB_SLACK)
    for key in ("drift_selected", "drift_tokens"):
        if type(rec[key]) is not bool:
            raise bad(f"{path}.{key}", rec[key], "true or false")
    check_numbers(f"{path}.exact_confidence", rec["exact_confidence"], -PROB_SLACK, 1 + PROB_SLACK, G, nullable=True)


def _candidates_ok(cands: list, probs: list, known_ids: set[int] | None) -> bool:
    """One step's candidate lists all well formed, checked in a few passes of builtins over the
    flattened lists (G small lists checked one by one cost most of a 3 MB trace's parse), each a C
    loop: no Python expression runs per list or per item. False sends the caller to the
    item-by-item check, which names the first bad item."""
    if not (set(map(type, cands)) | set(map(type, probs))) <= {list}:  # (both have G items: the caller checked)
        return False
    sizes = list(map(len, cands))
    if sizes != list(map(len, probs)) or (sizes and max(sizes) > MAX_CANDIDATES):
        return False
    ids, ps = list(chain.from_iterable(cands)), list(chain.from_iterable(probs))
    if ids and set(map(type, ids)) != {int}:
        return False
    if known_ids is not None:  # (its ids lie in [0, MAX_TOKEN_ID]: check_header read them)
        if not known_ids.issuperset(ids):
            return False
    elif ids and not (0 <= min(ids) and max(ids) <= MAX_TOKEN_ID):
        return False
    # from_json refuses NaN and Infinity when it parses, from_dict does not: a NaN after the first item
    # slips past min/max (see _numbers), not past the sum.
    return not ps or (set(map(type, ps)) <= {float, int} and -PROB_SLACK <= min(ps) and max(ps) <= 1 + PROB_SLACK
                      and (total := sum(ps)) == total)


def dataclass_fields(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls) if f.init)
