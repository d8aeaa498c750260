"""The schema of an insert/delete step's section (format version 3, `trace_schema.SECTIONS["indel"]`):
its operations name the ids the canvas held entering the step and agree with the step's other lists, and its
map sends every position that was neither deleted nor cut to exactly one place."""
from __future__ import annotations

from dllm_viz.core.trace_checks import bad, check_int, check_ints, check_list

OP_KINDS = ("fill", "rewrite", "remask", "delete", "split", "cut")  # core.alignment.OP_NAMES but keep, and "cut"


def indel_section(path: str, rec: dict, G: int, canvas: list[int | None], mask_id: int | None) -> list[int]:
    """An insert/delete step's section (`core.indel_record`): `{"edits": [[position, kind, old id], ...],
    "source": (G,)}`. The old ids are the canvas entering the step (the mask id at a mask); fills, rewrites
    and re-masks are the step's `selected`, `edited` and `remasked`; the map sends each position that was
    neither deleted nor cut to exactly one position, and the others nowhere. Returns the map."""
    sec = rec["indel"]
    if not isinstance(sec, dict) or set(sec) != {"edits", "source"}:
        raise bad(f"{path}.indel", sec, 'an object with "edits" and "source"')
    if mask_id is None:
        raise bad("mask_token_id", None, "the mask id: an insert/delete step's operations name it")
    source = check_ints(f"{path}.indel.source", sec["source"], -1, max(0, G - 1), length=G)
    edits = check_list(f"{path}.indel.edits", sec["edits"], limit=2 * G)
    by_kind: dict[str, set[int]] = {k: set() for k in OP_KINDS}
    for j, e in enumerate(edits):
        where = f"{path}.indel.edits[{j}]"
        if not (isinstance(e, list) and len(e) == 3 and e[1] in OP_KINDS):
            raise bad(where, e, "[position, kind, old id], kind one of " + " | ".join(OP_KINDS))
        pos = check_int(f"{where}[0]", e[0], 0, max(0, G - 1))
        held = mask_id if canvas[pos] is None else canvas[pos]
        if e[2] != held:
            raise bad(f"{where}[2]", e[2], f"{held}, the id position {pos} held entering the step")
        if pos in by_kind[e[1]]:
            raise bad(where, e, f"one {e[1]} at position {pos}")
        by_kind[e[1]].add(pos)
    for kind, key in (("fill", "selected"), ("rewrite", "edited"), ("remask", "remasked")):
        if by_kind[kind] != set(rec.get(key) or ()):
            raise bad(f"{path}.indel.edits", edits, f"the {kind} operations at the positions of {key}")
    gone = by_kind["delete"] | by_kind["cut"]
    kept = [j for j in source if j >= 0]
    if len(set(kept)) != len(kept) or set(kept) != set(range(G)) - gone:
        raise bad(f"{path}.indel.source", source, "each position neither deleted nor cut, once (-1: a new mask)")
    return source
