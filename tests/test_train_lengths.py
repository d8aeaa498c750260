"""train/objectives/lengths.py: the length-editing objective in the shared loop (issue 37).

The shipped world-indel model was trained by a loop of its own (`train.indel_fit`, since removed). Before it
went, that loop and the shared loop with this objective were run from the world model on the same seed and
data: every weight bit-identical after 3 and after 12 steps (docs: world-indel's MODEL_CARD.md). The old
loop's losses of its first three steps on a small corpus (`OLD_LOSSES`, batch 16) are kept here: the shared
loop must give them again. And the objective's own pieces: the grown vocabulary, the batch's streams.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from dllm_viz import assets
from dllm_viz.models.embedded import load_embedded
from dllm_viz.train import loop
from dllm_viz.train.config import TrainConfig
from dllm_viz.train.indel import PLAIN
from dllm_viz.train.model import append_tokens
from dllm_viz.train.objectives import objective_for
from dllm_viz.train.objectives.lengths import DELETE, SPLIT, LengthObjective
from dllm_viz.world import generate

OLD_LOSSES = [1.2783, 0.9662, 1.2354]  # train.indel_fit.fit, InDelTrainConfig(batch_size=16, lr=4e-4), seed 0
RECIPE = json.loads(assets.path("world-indel", "train_config.json").read_text())  # the shipped model's recipe


def recipe(**changes) -> TrainConfig:
    return TrainConfig(**{**RECIPE, **changes})


def test_the_recipe_selects_this_objective_and_the_editing_stream_runs_inside_it():
    assert objective_for(recipe()) is LengthObjective
    assert objective_for(recipe(length_fraction=0.0)).name == "edit"
    with pytest.raises(ValueError, match="length_fraction=1.5"):
        recipe(length_fraction=1.5)


def test_the_edit_tokens_are_appended_and_the_old_ids_kept():
    world = load_embedded(device="cpu", path=assets.path("world"))
    grown = append_tokens(world.tokenizer, LengthObjective.tokens)
    old = world.tokenizer.get_vocab()
    assert {p: grown.get_vocab()[p] for p in old} == old and world.tokenizer.vocab_size == len(old)
    assert (grown.get_vocab()[DELETE], grown.get_vocab()[SPLIT]) == (len(old), len(old) + 1)
    assert LengthObjective.model_fields(grown) == {"delete_token_id": len(old), "split_token_id": len(old) + 1}


def test_a_batch_keeps_the_edit_targets_visible_and_masks_only_there_where_the_token_is_its_own():
    model = load_embedded(device="cpu", path=assets.path("world-indel"))
    cfg = recipe(batch_size=32)
    objective = LengthObjective.for_run(cfg, model=model, train=torch.arange(3, 700).repeat(4))
    g = torch.Generator().manual_seed(1)
    batch = objective.sampler(cfg, torch.arange(3, 700).repeat(4))(g)
    assert batch.x.shape == (32, 96 + 24)
    c = objective.corrupt(batch, g)
    assert c.inputs.shape == c.target.shape == (32, 96)
    assert not bool((c.masked & (c.kind != PLAIN)).any())  # DELETE and SPLIT targets stay visible
    assert bool((c.inputs == model.mask_token_id).eq(c.masked).all())
    assert bool((c.target == model.delete_token_id).any()) and bool((c.target == model.split_token_id).any())


def test_the_shared_loop_gives_the_old_trainer_s_losses(tmp_path, monkeypatch):
    data = tmp_path / "data"
    data.mkdir()
    (data / "train.txt").write_text("\n".join(generate(3000, 11)) + "\n")  # scripts/make_world_data.py, seed 11
    (data / "heldout.txt").write_text("\n".join(generate(300, 12)) + "\n")
    losses: list[float] = []
    step = loop.train_step
    monkeypatch.setattr(loop, "train_step", lambda *a, **k: losses.append(step(*a, **k).item())
                        or torch.tensor(losses[-1]))
    loop.fit(recipe(batch_size=16, steps=3, eval_every=1000, ckpt_every=1000, eval_windows=16), data=data,
             run=tmp_path / "run", init_from=assets.path("world"), threads=1, progress=False)
    assert losses == pytest.approx(OLD_LOSSES, abs=1e-4)
    saved = json.loads((Path(tmp_path) / "run" / "tokenizer.json").read_text())
    assert {DELETE, SPLIT} <= {t["content"] for t in saved["added_tokens"]}
