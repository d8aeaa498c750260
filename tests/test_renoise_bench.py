"""bench/renoise_bench.py on the tiny model: it runs end to end (the GPU recipe's path, on CPU) and its
figures are consistent. No timing is judged here; the floor is the bench's to print."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from tests.diffusion_gemma_tiny import save_tiny
from tests.scripts import load_script



@pytest.mark.parametrize("source", ["tiny", "checkpoint"])
def test_tiny_cpu_run_is_exact_and_counts_the_same_forwards(tmp_path: Path, capsys, source: str) -> None:
    """"tiny" builds the model in the bench; "checkpoint" loads a saved one through load_model, the
    path the GPU recipe takes with a real DiffusionGemma (its generation_config.json sets end-of-text
    ids, which the bench switches off on both sides)."""
    bench = load_script("bench/renoise_bench.py")
    model = "tiny"
    if source == "checkpoint":
        model = str(tmp_path / "tiny-diffusiongemma")
        save_tiny(Path(model))
    out = tmp_path / "renoise.json"
    report = bench.main(["--model", model, "--batches", "1", "3", "--rounds", "1", "--steps", "3",
                         "--new-tokens", "12", "--threads", "0", "--out", str(out)])
    assert json.loads(out.read_text(encoding="utf-8")) == json.loads(json.dumps(report))
    first, third = report["results"]
    assert first["exact"] is True and "exact" not in third
    for r, batch in ((first, 1), (third, 3)):
        assert r["batch"] == batch and r["same_forwards"] is True
        assert r["forwards"] == r["recorded_steps"] == batch * 2 * 3  # two canvases of 8, three steps each
        assert math.isfinite(r["ratio"]) and r["ratio"] > 0 and r["cpu_ratio"] > 0
    printed = capsys.readouterr().out
    assert "batch 1:" in printed and "exact vs generate(): True" in printed and f"floor {bench.FLOOR}" in printed
