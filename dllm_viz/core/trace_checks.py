"""The scalar and list checks every trace schema is built from (`trace_schema`, `trace_schema_renoise`,
`trace_schema_indel`): each returns the value it checked or raises the ValueError naming the field's path
(`steps[3].selected[1]`) and what it expected. Builtins only: they run on lists of a million items."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from dllm_viz.core.config import short


def bad(path: str, value: Any, allowed: str) -> ValueError:
    return ValueError(f"trace {path}={short(value)} is invalid: expected {allowed}")


def too_big(path: str, size: int, limit: int, unit: str) -> ValueError:
    return ValueError(
        f"trace {path} has {size} {unit}: this viewer reads at most {limit} (a real decode stays well "
        "below this limit; the file is not a trace it wrote, or was altered)"
    )


# ----- scalar and list checks --------------------------------------------------------------------
INT, NUMBER = {int}, {int, float}  # a list's item types, as `set(map(type, items))` finds them in one C pass


def check_int(path: str, v: Any, lo: int, hi: int) -> int:
    if type(v) is not int or not lo <= v <= hi:
        raise bad(path, v, f"an integer in [{lo}, {hi}]")
    return v


def check_number(path: str, v: Any, lo: float, hi: float) -> float:
    if type(v) not in (int, float) or not lo <= v <= hi:  # NaN fails both comparisons
        raise bad(path, v, f"a finite number in [{lo:g}, {hi:g}]")
    return v


def check_opt_str(path: str, v: Any, limit: int, *, optional: bool = True) -> None:
    if v is None and optional:
        return
    if not isinstance(v, str):
        raise bad(path, v, "a string" + (" or null" if optional else ""))
    if len(v) > limit:
        raise too_big(path, len(v), limit, "characters")


def check_list(path: str, v: Any, length: int | None = None, limit: int | None = None) -> list:
    if not isinstance(v, list):
        raise bad(path, v, "a list" + (f" of {length} items" if length is not None else ""))
    if length is not None and len(v) != length:
        raise bad(path, v, f"a list of {length} items (got {len(v)})")
    if limit is not None and len(v) > limit:
        raise too_big(path, len(v), limit, "items")
    return v


def check_ints(path: str, v: Any, lo: int, hi: int, length: int | None = None, limit: int | None = None) -> list[int]:
    """A list of integers in [lo, hi]; builtins keep this fast on lists of a million items."""
    items = check_list(path, v, length, limit)
    if not set(map(type, items)) <= INT or (items and (min(items) < lo or max(items) > hi)):
        i = next(i for i, x in enumerate(items) if type(x) is not int or not lo <= x <= hi)
        raise bad(f"{path}[{i}]", items[i], f"an integer in [{lo}, {hi}]")
    return items


def check_numbers(path: str, v: Any, lo: float, hi: float, length: int | None = None, *,
                  nullable: bool = False) -> None:
    items = check_list(path, v, length)
    values = [x for x in items if x is not None] if nullable else items
    # min/max alone miss a NaN after the first item (it compares false, so it never wins: min([0.5, nan])
    # is 0.5); a NaN anywhere makes the sum NaN, which is the one value unequal to itself. Builtins
    # only: this runs on lists of a million items. An infinity is out of [lo, hi] already.
    ok = set(map(type, values)) <= NUMBER and (
        not values or (lo <= min(values) and max(values) <= hi and (total := sum(values)) == total))
    if not ok:  # found below like any other bad item
        for i, x in enumerate(items):
            if (x is None and nullable) or (type(x) in (float, int) and lo <= x <= hi):
                continue
            raise bad(f"{path}[{i}]", x, f"a finite number in [{lo:g}, {hi:g}]" + (" or null" if nullable else ""))


def check_known_ids(path: str, ids: Iterable[int], vocab: set[int] | None) -> None:
    """Every id is in the trace's vocabulary (when it has one): the figures look each one up."""
    if vocab is None:
        return
    missing = set(ids) - vocab
    if missing:
        raise bad(path, min(missing), "a token id listed in the trace's vocab")
