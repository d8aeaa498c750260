"""scripts/cuda_parity.py: every shipped model under every preset on a second device against the CPU.

On a machine without CUDA the script runs CPU against CPU on a few cases: the run, its refusals, its
counts and its exit status are what is checked (any two CPU runs of one seed agree). Where CUDA is
there, the last test runs the ReMDM and insert/delete cases that once raised on CUDA (tensors made on
the CPU inside the rule) and must now run there: CI has no GPU, so it is skipped there; the device run
of the whole script is in docs/engine.md.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from tests.scripts import load_script


@pytest.fixture(scope="module")
def parity():
    return load_script("scripts/cuda_parity.py")


def test_cpu_against_cpu_agrees_and_refuses_by_name(parity, tmp_path: Path) -> None:
    out = tmp_path / "parity.json"
    status = parity.main(["--device", "cpu", "--models", "world", "--presets", "balanced", "remdm/loop",
                          "diffusion_gemma", "--gen-length", "16", "--out", str(out)])
    written = json.loads(out.read_text(encoding="utf-8"))
    cases = {c["preset"]: c for c in written["cases"]}
    assert status == 0 and written["counts"] == {"same": 2, "differs": 0, "refused": 1, "error": 0}
    assert cases["balanced"]["same_per_prompt"] == [True, True, True] and cases["balanced"]["compared"] == "ids"
    assert "entropy" not in cases["diffusion_gemma"]["reason"] and "renoise" in cases["diffusion_gemma"]["reason"]


def test_every_variant_names_a_preset_and_real_knobs(parity) -> None:
    from dllm_viz import DecodeConfig

    for label, (preset, overrides) in parity.VARIANTS.items():
        assert label.split("/")[0] == preset and preset in parity.ALL_PRESETS
        assert set(overrides) <= set(DecodeConfig.field_names()), label


def test_a_crash_is_an_error_and_fails_the_run(parity, tmp_path: Path, monkeypatch) -> None:
    def broken(*args, **kwargs):
        raise RuntimeError("indices should be either on cpu or on the same device")

    monkeypatch.setattr(parity, "decode", broken)
    out = tmp_path / "parity.json"
    assert parity.main(["--device", "cpu", "--models", "world", "--presets", "balanced", "--out", str(out)]) == 1
    (case,) = json.loads(out.read_text(encoding="utf-8"))["cases"]
    assert case["status"] == "error" and "same device" in case["traceback"]


def test_diagnosis_names_the_half_that_differs(parity) -> None:
    from dllm_viz import DecodeConfig, decode, load_model

    model = load_model("world", device="cpu", dtype="fp32")
    models = {"cpu": model, "other": model, "device": torch.device("cpu")}
    prompts = parity.prompts_for("world", model)
    config = DecodeConfig.preset("rcr", 16, seed=7)
    here = decode(model, prompts, config)
    other = decode(model, prompts, DecodeConfig.preset("rcr", 16, seed=7, top_p=0.5))
    # The CPU's ops on the same logits give the CPU's result: had "there" differed, its logits were not to blame.
    assert parity.diagnose(models, prompts, config, here, other).startswith("ops")
    assert parity.diagnose(models, prompts, config, other, here).startswith("logits")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA (CI has none; docs/engine.md has the device run)")
def test_the_rules_that_raised_on_cuda_run_there(parity, tmp_path: Path) -> None:
    out = tmp_path / "parity.json"
    parity.main(["--models", "world-indel", "--presets", "remdm", "remdm/conf", "remdm/loop", "llada22_indel",
                 "--out", str(out)])
    counts = json.loads(out.read_text(encoding="utf-8"))["counts"]
    assert counts["error"] == 0 and counts["same"] + counts["differs"] == 4
