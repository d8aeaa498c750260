"""train.cli: `python -m dllm_viz.train`, its subcommands and its flags (one per TrainConfig field)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from dllm_viz.train import cli
from dllm_viz.train.cli import main
from dllm_viz.train.config import TrainConfig
from tests.train_corpus import write_corpus


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_corpus(tmp_path_factory.mktemp("data"))


def test_the_command_line_prints_progress_and_warnings_as_plain_lines(data_dir: Path, tmp_path: Path) -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "dllm_viz.train", "fit", "--data", str(data_dir), "--out", str(tmp_path / "run"),
         "--threads", "1", "--no-progress", "--vocab-size", "300", "--d-model", "32", "--n-layers", "1",
         "--n-heads", "2", "--d-ff", "64", "--max-length", "32", "--batch-size", "2", "--steps", "1",
         "--eval-every", "1", "--eval-windows", "2", "--bf16", "false"],
        capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert lines[0].startswith("model: ") and json.loads(lines[-1])["step"] == 1  # no logger names or levels


def test_cli_runs_a_tiny_configuration(data_dir: Path, tmp_path: Path) -> None:
    main(["fit", "--data", str(data_dir), "--out", str(tmp_path / "cli"), "--threads", "1", "--no-progress",
          "--vocab-size", "300", "--d-model", "32", "--n-layers", "1", "--n-heads", "2", "--d-ff", "64",
          "--max-length", "32", "--batch-size", "2", "--steps", "2", "--eval-every", "2", "--eval-windows", "2",
          "--bf16", "false"])
    assert (tmp_path / "cli" / "ckpt.pt").is_file()
    main(["export", "--run", str(tmp_path / "cli"), "--out", str(tmp_path / "cli-assets")])
    assert (tmp_path / "cli-assets" / "config.json").is_file()


@pytest.mark.parametrize(("value", "expected"), [(None, True), ("true", True), ("FALSE", False), ("0", False),
                                                 ("yes", True), ("No", False)])
def test_boolean_flags_take_true_or_false(value, expected, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    got: list[TrainConfig] = []
    monkeypatch.setattr(cli, "fit", lambda cfg, **kwargs: got.append(cfg))
    main(["fit", "--data", str(tmp_path), "--out", str(tmp_path / "run"), "--bf16", *([value] if value else [])])
    assert got[0].bf16 is expected


@pytest.mark.parametrize("value", ["flase", "ture", "2", ""])
def test_a_misspelt_boolean_flag_is_a_usage_error_not_false(value, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture) -> None:
    monkeypatch.setattr(cli, "fit", lambda cfg, **kwargs: pytest.fail(f"fit ran with bf16={cfg.bf16}"))
    with pytest.raises(SystemExit) as exit_:
        main(["fit", "--data", str(tmp_path), "--out", str(tmp_path / "run"), "--bf16", value])
    assert exit_.value.code == 2 and f"{value!r} is invalid" in capsys.readouterr().err
