"""train.checkpoint: snapshots, their average as a run folder, and its export."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import torch

from dllm_viz.models.embedded import load_embedded
from dllm_viz.train.checkpoint import average_checkpoints, export
from dllm_viz.train.cli import main
from dllm_viz.train.loop import fit
from tests.train_corpus import TINY, write_corpus


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_corpus(tmp_path_factory.mktemp("data"))


def test_snapshots_average_into_a_run_that_exports(data_dir: Path, tmp_path: Path) -> None:
    fit(replace(TINY, steps=4, ckpt_every=2), data=data_dir, run=tmp_path / "run", threads=1, progress=False,
        keep_snapshots=True)
    snaps = sorted((tmp_path / "run" / "snapshots").glob("step-*.pt"))
    assert [p.name for p in snaps] == ["step-000002.pt", "step-000004.pt"]
    a, b = (torch.load(p, weights_only=False)["model"] for p in snaps)
    last = torch.load(tmp_path / "run" / "ckpt.pt", weights_only=False)["model"]
    assert all(torch.equal(b[k], last[k]) for k in last)  # the last snapshot is the last checkpoint's weights
    assert any(not torch.equal(a[k], b[k]) for k in a)
    main(["average", "--run", str(tmp_path / "run"), "--out", str(tmp_path / "avg"), *map(str, snaps)])
    avg = torch.load(tmp_path / "avg" / "ckpt.pt", weights_only=False)
    assert avg["step"] == 4 and avg["averaged_from"] == [str(p) for p in snaps]
    for key in a:
        torch.testing.assert_close(avg["model"][key], (a[key] + b[key]) / 2, msg=key)
    model = load_embedded(device="cpu", path=export(tmp_path / "avg", tmp_path / "assets"))
    assert model(torch.tensor([model.tokenizer.encode("the lady said")])).shape[-1] == TINY.vocab_size


def test_average_refuses_checkpoints_of_other_shapes(data_dir: Path, tmp_path: Path) -> None:
    fit(TINY, data=data_dir, run=tmp_path / "a", threads=1, progress=False)
    fit(replace(TINY, d_ff=96), data=data_dir, run=tmp_path / "b", threads=1, progress=False)
    with pytest.raises(ValueError, match=r"up\.weight has shape"):
        average_checkpoints([tmp_path / "a" / "ckpt.pt", tmp_path / "b" / "ckpt.pt"])
    with pytest.raises(ValueError, match="at least one"):
        average_checkpoints([])
