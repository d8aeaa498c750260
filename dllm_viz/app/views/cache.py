"""What the playground shows for a decode with an approximate key-value cache (Fast-dLLM's prefix or dual
cache): its run facts.

Pure functions of a `Trace` (no model calls), read from the per-step fields a cached decode records
(`Trace.cache_facts`); an uncached trace gets none, so the playground is unchanged for it. The
heatmap's drift view is the page's (web/figures.js).
"""
from __future__ import annotations

from dllm_viz.core.trace import Trace


def facts(trace: Trace) -> list[tuple[str, str]]:
    """A cached decode's facts (prefix or dual key-value cache): positions computed against full forwards at every step,
    the forward time the windows saved, and with the drift diagnostic how far it moved and how often
    the exact forward would have confirmed otherwise, as (i18n key, formatted value) pairs; none for
    an uncached decode."""
    f = trace.cache_facts
    if f is None:
        return []
    share = f["positions_computed"] / max(1, f["positions_full"])
    out = [("f_computed", f"{f['positions_computed']:,} / {f['positions_full']:,} ({share:.0%})")]
    if "seconds_saved" in f:  # measured forward time beside what full forwards at every step would take
        spent, as_full = forward_times(trace)
        out.append(("f_cache_time", f"{1000 * spent:,.0f} / {1000 * as_full:,.0f} ms"))
    if "drift_max" in f:
        out.append(("f_drift", f"{f['drift_max']:.3f}"))
        out.append(("f_drift_steps", f"{f['drift_changed_steps']} / {f['windows']}"))
    return out


def forward_times(trace: Trace) -> tuple[float, float]:
    """(the forward time of a cached decode's steps, measured; the same steps as full forwards, at
    the median of its own full forwards). Both are forward time only, so the first is never more
    than the run's wall time; the second is an estimate (a refresh is the uncached step bit for bit)."""
    steps = [rec for rec in trace.steps if rec.forward_kind is not None]
    full = sorted(rec.forward_time or 0.0 for rec in steps if rec.forward_kind == "full")
    median = (full[(len(full) - 1) // 2] + full[len(full) // 2]) / 2 if full else 0.0
    return sum(rec.forward_time or 0.0 for rec in steps), median * len(steps)
