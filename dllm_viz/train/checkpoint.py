"""What a run leaves: checkpoints (written atomically), averages of checkpoints ("model soups"), and
the export of a run to the embedded format that `dllm_viz.load_model` reads."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import torch

from dllm_viz.models.tokenizer import EmbeddedTokenizer
from dllm_viz.train.config import TrainConfig
from dllm_viz.train.model import build_model


def save_checkpoint(path: Path, **state: object) -> None:
    """``torch.save(state)`` to ``path`` through a temporary file."""
    tmp = path.with_suffix(".tmp")
    torch.save(state, tmp)
    os.replace(tmp, path)  # atomic: a crash never leaves a half-written checkpoint


def average_checkpoints(paths: Sequence[Path]) -> dict[str, torch.Tensor]:
    """The uniform mean of the ``model`` weights of checkpoints of one architecture (a "model soup").

    Checkpoints of one run, or of a run and the one it was initialised from, lie in one basin, so
    their mean is a model too, often with lower held-out loss than either (the card measures it).
    Raises ``ValueError`` if the checkpoints do not hold the same tensors (names and shapes).
    """
    return _average([torch.load(p, map_location="cpu", weights_only=False)["model"] for p in paths], paths)


def _average(states: Sequence[dict[str, torch.Tensor]], paths: Sequence[Path]) -> dict[str, torch.Tensor]:
    """Uniform mean of state dicts loaded from ``paths`` (named in the errors)."""
    if not states:
        raise ValueError("paths: give at least one checkpoint")
    first = states[0]
    for path, state in zip(paths[1:], states[1:]):
        if state.keys() != first.keys():
            raise ValueError(f"{path}: other tensors than {paths[0]} ({sorted(state.keys() ^ first.keys())[:3]} ...)")
        for key, value in state.items():
            if value.shape != first[key].shape:
                raise ValueError(f"{path}: {key} has shape {tuple(value.shape)}, {paths[0]} {tuple(first[key].shape)}")
    return {key: (sum(state[key].double() for state in states) / len(states)).to(first[key].dtype) for key in first}


def write_average(run: Path, paths: Sequence[Path], out: Path) -> Path:
    """Write ``out/`` as a run folder holding the average of ``paths`` (``ckpt.pt`` + ``run``'s tokenizer
    and recipe), so that ``export --run out`` ships it like any run."""
    recipe = json.loads((run / "train_config.json").read_text())
    checkpoints = [torch.load(p, map_location="cpu", weights_only=False) for p in paths]  # each read once
    weights = _average([c["model"] for c in checkpoints], paths)
    out.mkdir(parents=True, exist_ok=True)
    EmbeddedTokenizer.from_file(run / "tokenizer.json").save(out / "tokenizer.json")
    save_checkpoint(out / "ckpt.pt", model=weights, step=max(c.get("step", 0) for c in checkpoints),
                     train_config=recipe, averaged_from=[str(p) for p in paths])
    return out


def export(run: Path, out: Path, *, name: str | None = None) -> Path:
    """Write ``model.safetensors`` (float16), ``config.json`` and ``tokenizer.json`` to ``out``.

    ``name``: the model name stored in ``config.json`` (what traces record); default the
    ``EmbeddedConfig`` default.
    """
    from safetensors.torch import save_file

    state = torch.load(run / "ckpt.pt", weights_only=False)
    cfg = TrainConfig(**state["train_config"])
    tokenizer = EmbeddedTokenizer.from_file(run / "tokenizer.json")
    model = build_model(cfg, tokenizer)
    model.load_state_dict(state["model"])
    out.mkdir(parents=True, exist_ok=True)
    weights = {k: v.detach().half().contiguous() for k, v in model.state_dict().items()}
    save_file(weights, str(out / "model.safetensors"), metadata={"step": str(state["step"])})
    config = model.config if name is None else replace(model.config, name=name)
    (out / "config.json").write_text(config.to_json() + "\n")
    tokenizer.save(out / "tokenizer.json")
    return out

