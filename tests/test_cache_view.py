"""app/views/cache.py: the run facts of a decode with an approximate key-value cache (issue 31)."""
from __future__ import annotations

from dllm_viz import DecodeConfig, decode, load_model
from dllm_viz.app.views import cache as cache_view, render


def test_facts_of_a_cached_decode_show_positions_computed_time_saved_and_drift():
    config = DecodeConfig(gen_length=16, block_length=8, schedule="threshold", threshold=0.9, temperature=0.0,
                          cache="dual", cache_drift=True)
    (trace,) = decode(load_model("world"), ["Tom Lopez of"], config)
    facts = dict(cache_view.facts(trace))
    assert set(facts) <= set(dict(render.run_facts(trace)))
    f = trace.cache_facts
    assert facts["f_computed"].startswith(f"{f['positions_computed']:,} / {f['positions_full']:,} (")
    spent, as_full = cache_view.forward_times(trace)
    assert facts["f_cache_time"] == f"{1000 * spent:,.0f} / {1000 * as_full:,.0f} ms"
    # Forward time only: never more than the run's wall time (issue 41: "648 ms saved" beside a 630 ms run).
    assert 0 < spent <= trace.wall_time and as_full > 0
    assert facts["f_drift"] == f"{f['drift_max']:.3f}"
    assert facts["f_drift_steps"] == f"{f['drift_changed_steps']} / {f['windows']}"
    assert "前向用时" in render.facts_html(trace, "zh")
    (plain,) = decode(load_model("world"), ["Tom Lopez of"], config.replace(cache="none"))
    assert not {"f_computed", "f_cache_time", "f_drift"} & set(dict(render.run_facts(plain)))
