"""What a cached decode's forwards did (`core.cache`), read from its trace's records (`Trace.cache_facts`).

Plain Python over the step records: what each forward computed against a full forward of the whole row,
the refreshes and windows, the seconds the windows saved, and the drift diagnostic's counts.
"""
from __future__ import annotations

from typing import Any


def cache_facts(trace: Any) -> dict[str, float] | None:
    """What a cached decode's forwards did (a prefix or dual cache); None for an uncached decode.

    `positions_computed` against `positions_full` (a full forward of the whole row at every
    step); `refreshes` (full forwards) and `windows`; `seconds_saved`: the windows' steps timed
    at this run's own mean full forward, less what they took (needs both kinds of step); with
    the drift diagnostic, `drift_max` and the window steps whose confirmed set or tokens the
    exact forward would have changed.
    """
    steps = [rec for rec in trace.steps if rec.forward_kind is not None]
    if not steps:
        return None
    full = [rec for rec in steps if rec.forward_kind == "full"]
    windows = [rec for rec in steps if rec.forward_kind != "full"]
    facts: dict[str, float] = {
        "positions_computed": sum(rec.computed or 0 for rec in steps),
        "positions_full": (len(trace.prompt_ids) + trace.config.gen_length) * len(steps),
        "refreshes": len(full), "windows": len(windows),
    }
    if full and windows:
        per_full = sum(rec.forward_time or 0.0 for rec in full) / len(full)
        facts["seconds_saved"] = round(per_full * len(windows) - sum(rec.forward_time or 0.0 for rec in windows), 6)
    checked = [rec for rec in windows if rec.drift is not None]
    if checked:
        facts["drift_max"] = max(rec.drift or 0.0 for rec in checked)
        facts["drift_selected_steps"] = sum(bool(rec.drift_selected) for rec in checked)
        facts["drift_tokens_steps"] = sum(bool(rec.drift_tokens) for rec in checked)
        facts["drift_changed_steps"] = sum(bool(rec.drift_selected or rec.drift_tokens) for rec in checked)
    return facts
