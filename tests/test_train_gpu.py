"""The GPU training path (scripts/train_gpu.sh, fit --compile, tokenize), run on CPU with a tiny config."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import torch

from dllm_viz.models.embedded import load_embedded
from dllm_viz.train.cli import main
from dllm_viz.train.config import TrainConfig
from dllm_viz.train.loop import fit

REPO = Path(__file__).resolve().parents[1]
TINY_FLAGS = ["--vocab-size", "300", "--d-model", "32", "--n-layers", "2", "--n-heads", "2", "--d-ff", "64",
              "--max-length", "32", "--batch-size", "4", "--steps", "3", "--warmup", "1", "--eval-every", "3",
              "--eval-windows", "4", "--ckpt-every", "3"]


def _data(root: Path) -> Path:
    gen = torch.Generator().manual_seed(0)
    words = "the lady said that she was very happy to see him at the ball and all her sisters".split()
    def paragraph() -> str:
        return " ".join(words[i] for i in torch.randint(0, len(words), (40,), generator=gen)).capitalize() + "."
    root.mkdir(parents=True)
    (root / "train.txt").write_text("\n".join(paragraph() for _ in range(60)) + "\n")
    (root / "heldout.txt").write_text("\n".join(paragraph() for _ in range(8)) + "\n")
    return root


def test_compiled_training_matches_the_plain_one(tmp_path: Path) -> None:
    """torch.compile (dynamo, with the eager backend here) changes how steps run, not what they compute."""
    data = _data(tmp_path / "data")
    cfg = TrainConfig(vocab_size=300, d_model=32, n_layers=2, n_heads=2, d_ff=64, max_length=32, batch_size=4,
                      steps=3, warmup=1, eval_every=3, eval_windows=4, ckpt_every=3, bf16=False)
    plain = fit(cfg, data=data, run=tmp_path / "plain", progress=False)
    compiled = fit(cfg, data=data, run=tmp_path / "compiled", progress=False, compile="eager")
    assert plain.keys() == compiled.keys()
    for key in plain:
        assert abs(plain[key] - compiled[key]) < 1e-4, key
    a = torch.load(tmp_path / "plain/ckpt.pt", weights_only=False)["model"]
    b = torch.load(tmp_path / "compiled/ckpt.pt", weights_only=False)["model"]
    for name in a:
        torch.testing.assert_close(a[name], b[name], atol=1e-5, rtol=1e-4)


def test_train_gpu_script_trains_from_a_pretokenised_run_and_exports(tmp_path: Path) -> None:
    data = _data(tmp_path / "data")
    out = tmp_path / "out"
    main(["tokenize", "--data", str(data), "--out", str(out / "run"), "--vocab-size", "300"])
    assert (out / "run/tokenizer.json").is_file() and (out / "run/tokens.pt").is_file()
    (data / "train.txt").unlink()  # what travels to the GPU: the run folder and heldout.txt only
    env = {**os.environ, "PYTHON": sys.executable, "DEVICE": "cpu", "COMPILE": "eager", "MINUTES": "5",
           "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
    done = subprocess.run(["bash", str(REPO / "scripts/train_gpu.sh"), str(data), str(out), *TINY_FLAGS],
                          capture_output=True, text=True, env=env, cwd=REPO, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    log = [json.loads(line) for line in (out / "run/log.jsonl").read_text().splitlines()]
    assert log[-1]["step"] == 3 and log[-1]["bits_per_char"] > 0
    saved = json.loads((out / "run/train_config.json").read_text())
    assert saved["bf16"] is True and saved["d_model"] == 32  # the script's --bf16, the test's overrides
    model = load_embedded(device="cpu", path=out)
    assert model.config.d_model == 32 and model.vocab_size == 300
    with torch.inference_mode():
        logits = model(torch.tensor([[5, 6, model.mask_token_id]]))
    assert logits.shape == (1, 3, 300) and torch.isfinite(logits).all()


def test_bf16_false_still_reads_as_false(tmp_path: Path) -> None:
    """Bare ``--bf16`` means true (the script above); the old ``--bf16 false`` form keeps working."""
    data = _data(tmp_path / "data")
    main(["fit", "--data", str(data), "--out", str(tmp_path / "run"), "--no-progress", *TINY_FLAGS, "--steps", "1",
          "--bf16", "false"])
    assert json.loads((tmp_path / "run/train_config.json").read_text())["bf16"] is False


def test_train_gpu_script_also_exports_the_average_of_the_last_snapshots(tmp_path: Path) -> None:
    data = _data(tmp_path / "data")
    out = tmp_path / "out"
    env = {**os.environ, "PYTHON": sys.executable, "DEVICE": "cpu", "COMPILE": "false", "MINUTES": "5",
           "AVERAGE": "2", "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
    flags = [*TINY_FLAGS, "--steps", "6", "--ckpt-every", "2", "--eval-every", "6", "--bf16", "false"]
    done = subprocess.run(["bash", str(REPO / "scripts/train_gpu.sh"), str(data), str(out), *flags],
                          capture_output=True, text=True, env=env, cwd=REPO, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    snaps = sorted((out / "run/snapshots").glob("step-*.pt"))
    assert [p.name for p in snaps] == ["step-000002.pt", "step-000004.pt", "step-000006.pt"]
    averaged = torch.load(out / "run-averaged/ckpt.pt", weights_only=False)
    assert averaged["averaged_from"] == [str(p) for p in snaps[-2:]]  # the last AVERAGE snapshots
    a, b = (torch.load(p, weights_only=False)["model"] for p in snaps[-2:])
    model = load_embedded(device="cpu", path=out / "averaged")
    for name, value in model.state_dict().items():  # exported in fp16: equal to fp16 resolution
        torch.testing.assert_close(value, ((a[name] + b[name]) / 2).half().float(), msg=name)
    plain = load_embedded(device="cpu", path=out)  # the plain export is still the last weights
    for name, value in plain.state_dict().items():
        torch.testing.assert_close(value, b[name].half().float(), msg=name)
