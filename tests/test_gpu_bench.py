"""bench/gpu_bench.py at tiny size on CPU: it runs end to end and its JSON holds consistent figures.

No timing is judged here (timings belong to the bench); the checks are the counts and the
relations between the figures that hold on any machine.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from tests.scripts import load_script


@pytest.fixture(scope="module")
def bench():
    return load_script("bench/gpu_bench.py")


def test_tiny_cpu_run_writes_consistent_json(bench, tmp_path: Path) -> None:
    out = tmp_path / "figures.json"
    steps, gen = 4, 8
    returned = bench.main(["--device", "cpu", "--size", "tiny", "--out", str(out), "--prompt-length", "6",
                           "--gen-length", str(gen), "--steps", str(steps), "--embedded-gen-length", "8",
                           "--repeats", "1"])
    written = json.loads(out.read_text(encoding="utf-8"))
    assert written == json.loads(json.dumps(returned))
    assert written["machine"]["device"] == "cpu" and written["model"]["size"] == "tiny"
    assert written["model"]["parameters"] > 0 and written["model"]["dtype"] == "float32"
    assert set(written["decode"]) == {"1", "16"}
    for r in written["decode"].values():
        assert r["nfe"] == steps  # fixed_steps: one forward per step, nothing more
        assert r["forward_ms"] > 0 and r["decode_s"] > 0 and math.isfinite(r["ratio"]) and r["ratio"] > 0
        # The overhead is what the decode spends beyond its forwards, per step (rounding aside).
        expected = 1000 * (r["decode_s"] - r["nfe"] * r["forward_ms"] / 1000) / r["nfe"]
        assert r["host_overhead_ms_per_step"] == pytest.approx(expected, abs=0.1)
    e = written["engine"]
    # Submitted together, the 16 share every forward; one after another, each pays its own.
    assert e["forward_calls_together"] == steps and e["forward_calls_serial"] == e["requests"] * steps == 16 * steps
    assert e["speedup"] == pytest.approx(e["serial_s"] / e["together_s"], rel=0.01)
    x = written["embedded_t0"]
    assert x["devices"] == ["cpu", "cpu"] and x["same_tokens"] is True and all(x["same_per_prompt"])
    met = written["met"]
    assert met["engine_speedup"] == (e["speedup"] >= written["targets"]["engine_speedup_min"])
    assert met["decode_over_forwards"] == all(
        r["ratio"] <= written["targets"]["decode_over_forwards_max"] for r in written["decode"].values())


def test_bad_arguments_are_refused(bench, tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="--steps=0 is invalid"):
        bench.main(["--device", "cpu", "--out", str(tmp_path / "x.json"), "--steps", "0"])
    if not torch.cuda.is_available():
        with pytest.raises(SystemExit, match="CUDA is not available"):
            bench.main(["--device", "cuda", "--out", str(tmp_path / "x.json")])
