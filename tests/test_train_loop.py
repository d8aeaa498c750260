"""train.loop: a tiny end-to-end run (it learns, logs and exports), its warnings, checkpoint/resume."""
from __future__ import annotations

import json
import logging
import math
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from dllm_viz.models.embedded import load_embedded
from dllm_viz.train import loop
from dllm_viz.train.checkpoint import export
from dllm_viz.train.loop import fit
from tests.train_corpus import TINY, write_corpus


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_corpus(tmp_path_factory.mktemp("data"))


def test_tiny_run_learns_logs_and_exports(data_dir: Path, tmp_path: Path) -> None:
    cfg = replace(TINY, steps=30, eval_every=30, ckpt_every=30, lr=1e-2)
    result = fit(cfg, data=data_dir, run=tmp_path / "run", threads=1, progress=False)
    log = [json.loads(line) for line in (tmp_path / "run" / "log.jsonl").read_text().splitlines()]
    assert log[-1]["step"] == 30 and set(result) >= {"bits_per_char", "acc@0.15", "acc@1"}
    # Uniform guessing costs log2(V) bits per token; 30 steps on a 17-word language must beat it.
    assert result["bits_per_token"] < math.log2(cfg.vocab_size)
    assert all(0.0 <= result[k] <= 1.0 for k in result if k.startswith("acc@"))
    out = export(tmp_path / "run", tmp_path / "assets")
    assert all(t.dtype == torch.float16 for t in load_file(str(out / "model.safetensors")).values())
    model = load_embedded(device="cpu", path=out)
    text = "the lady said"
    assert model.tokenizer.decode(model.tokenizer.encode(text)) == text
    assert model(torch.tensor([model.tokenizer.encode(text)])).shape[-1] == cfg.vocab_size


@pytest.mark.parametrize("units", [False, True])
def test_bf16_on_a_cpu_without_bf16_units_warns(units: bool, data_dir: Path, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch,
                                                caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(loop, "cpu_has_bf16_units", lambda: units)
    with caplog.at_level(logging.INFO, logger="dllm_viz.train"):
        fit(replace(TINY, steps=1, bf16=True), data=data_dir, run=tmp_path / "run", threads=1, progress=False)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("--bf16 false" in w for w in warnings) is (not units)
    assert any(r.getMessage().startswith("model: ") for r in caplog.records if r.levelno == logging.INFO)


def test_resume_continues_exactly(data_dir: Path, tmp_path: Path) -> None:
    straight, split = tmp_path / "straight", tmp_path / "split"
    fit(TINY, data=data_dir, run=straight, threads=1, progress=False)
    fit(replace(TINY, steps=2), data=data_dir, run=split, threads=1, progress=False)
    # Resuming keeps the saved recipe; only the step budget comes from the caller.
    fit(TINY, data=data_dir, run=split, resume=True, threads=1, progress=False)
    a = torch.load(straight / "ckpt.pt", weights_only=False)
    b = torch.load(split / "ckpt.pt", weights_only=False)
    assert a["step"] == b["step"] == TINY.steps
    for key, value in a["model"].items():
        torch.testing.assert_close(b["model"][key], value, msg=key)
