"""studies.stats: Wilson intervals and the rate records the correctness studies write."""
from __future__ import annotations

import pytest

from dllm_viz.studies.stats import format_rate, rate, wilson


def test_wilson_brackets_the_rate_and_stays_in_zero_one():
    lo, hi = wilson(58, 64)
    assert lo < 58 / 64 < hi and hi - lo < 0.2
    assert wilson(0, 10)[0] == 0.0 and wilson(10, 10)[1] == 1.0 and wilson(0, 0) == (0.0, 1.0)
    # p = 1/2, n = 64: half-width 1.96 * sqrt(1/256 + 1.96^2 / 16384) / (1 + 1.96^2 / 64) = 0.11898
    assert wilson(32, 64) == pytest.approx((0.5 - 0.11898, 0.5 + 0.11898), abs=1e-5)
    with pytest.raises(ValueError, match="successes"):
        wilson(5, 3)


def test_rate_and_its_text():
    r = rate(61, 64)
    assert (r["k"], r["n"], r["rate"]) == (61, 64, 0.9531) and r["lo"] < 0.9531 < r["hi"]
    assert format_rate(r) == f"95% [{r['lo'] * 100:.0f}, {r['hi'] * 100:.0f}]"
    assert rate(0, 0)["rate"] == 0.0
