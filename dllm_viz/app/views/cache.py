"""What the playground shows for a decode with an approximate key-value cache (issue 31): its run facts.

Pure functions of a `Trace` (no model calls), read from the per-step fields a cached decode records
(`Trace.cache_facts`); an uncached trace gets none, so the playground is unchanged for it. The
heatmap's drift view is the page's (web/figures.js).
"""
from __future__ import annotations

from dllm_viz.core.trace import Trace


def facts(trace: Trace) -> list[tuple[str, str]]:
    """A cached decode's facts (issue 31): positions computed against full forwards at every step,
    the forward time the windows saved, and with the drift diagnostic how far it moved and how often
    the exact forward would have confirmed otherwise, as (i18n key, formatted value) pairs; none for
    an uncached decode."""
    f = trace.cache_facts
    if f is None:
        return []
    share = f["positions_computed"] / max(1, f["positions_full"])
    out = [("f_computed", f"{f['positions_computed']:,} / {f['positions_full']:,} ({share:.0%})")]
    if "seconds_saved" in f:
        out.append(("f_cache_saved", f"{1000 * f['seconds_saved']:.0f} ms"))
    if "drift_max" in f:
        out.append(("f_drift", f"{f['drift_max']:.3f}"))
        out.append(("f_drift_steps", f"{f['drift_changed_steps']} / {f['windows']}"))
    return out
