"""bench/step_ab.py: the other checkout imports beside this one under its own name, and the three decodes run
in one process. No timing is judged here; the ratios are the bench's to print."""
from __future__ import annotations

import gc
import re
import sys

from tests.scripts import ROOT, load_script


def test_the_base_checkout_imports_under_its_own_name_and_the_ratios_print(capsys) -> None:
    bench = load_script("bench/step_ab.py")
    try:
        bench.main(["--base", str(ROOT), "--rounds", "2", "--gen-length", "16", "--steps", "8"])
    finally:
        gc.unfreeze()  # the bench freezes its startup heap, as a serving process would; not this test process's
    import dllm_viz

    base = sys.modules[bench.ALIAS]
    assert base.DecodeConfig is not dllm_viz.DecodeConfig  # two packages side by side, not one imported twice
    assert base.core.step.__name__ == "dllm_viz_base.core.step"
    assert base.core.step.StepParams.__module__ == "dllm_viz_base.core.step"  # its own imports renamed too
    assert base.decode.__module__.startswith("dllm_viz_base.")
    out = capsys.readouterr().out
    ratios = dict(re.findall(r"^  (this / base|this / LLaDA loop|base / LLaDA loop)\s+([\d.]+) ", out, re.M))
    assert set(ratios) == {"this / base", "this / LLaDA loop", "base / LLaDA loop"}
    assert all(float(v) > 0 for v in ratios.values())
    assert "median of 2 rounds (batch 1" in out
