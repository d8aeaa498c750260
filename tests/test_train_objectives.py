"""train.objectives: every objective module is discovered, a recipe selects one (the masked default
otherwise, never two), and an objective of one's own trains through `fit` with nothing else changed."""
from __future__ import annotations

import importlib
import json
import pkgutil
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from dllm_viz.models.embedded import load_embedded
from dllm_viz.train import objectives
from dllm_viz.train.checkpoint import export
from dllm_viz.train.loop import fit
from dllm_viz.train.objectives import DEFAULT, OBJECTIVES, Corrupted, Objective, objective_for
from dllm_viz.train.objectives.editing import EditObjective
from dllm_viz.train.objectives.masked import MaskedObjective
from tests.train_corpus import TINY, write_corpus


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_corpus(tmp_path_factory.mktemp("data"))


def test_every_objective_module_is_discovered() -> None:
    modules = [importlib.import_module(f"{objectives.__name__}.{info.name}")
               for info in pkgutil.iter_modules(objectives.__path__)]
    declared = {m.OBJECTIVE.name: m.OBJECTIVE for m in modules if hasattr(m, "OBJECTIVE")}
    assert OBJECTIVES == declared and {"masked", "edit"} <= set(OBJECTIVES) and DEFAULT in OBJECTIVES
    assert all(issubclass(o, Objective) and o.name for o in OBJECTIVES.values())


def test_a_recipe_selects_its_objective() -> None:
    assert objective_for(TINY) is MaskedObjective and OBJECTIVES[DEFAULT] is MaskedObjective
    assert objective_for(replace(TINY, edit_fraction=0.5)) is EditObjective
    assert (MaskedObjective.can_edit, EditObjective.can_edit) == (False, True)


def test_a_recipe_selecting_two_objectives_is_refused_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    class Always(MaskedObjective):
        name = "always"

        @classmethod
        def selected(cls, cfg) -> bool:
            return True

    monkeypatch.setitem(OBJECTIVES, "always", Always)
    assert objective_for(TINY) is Always
    with pytest.raises(ValueError, match=r"selects 2 objectives \((edit, always|always, edit)\)"):
        objective_for(replace(TINY, edit_fraction=0.5))


def test_corrupted_moves_to_a_device_but_what_is_only_counted() -> None:
    x = torch.ones(2, 3, dtype=torch.long)
    c = Corrupted(x, x, x.bool(), torch.ones(2), None, x.bool())
    moved = c.to(torch.device("meta"))
    assert all(getattr(moved, f).device.type == "meta" for f in ("x", "noisy", "masked", "t"))
    assert moved.real is None and moved.maskable is c.maskable


def test_an_objective_of_ones_own_trains_through_fit(data_dir: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A new objective is its class: here the masked corruption scored at every position, with a figure
    of its own. `fit` runs its corrupt and loss at each step, the log holds its figures, the export
    its can_edit."""
    calls: list[str] = []

    class EveryPosition(MaskedObjective):
        name, can_edit = "every_position", True

        @classmethod
        def selected(cls, cfg) -> bool:
            return True

        def corrupt(self, batch, generator):
            calls.append("corrupt")
            return super().corrupt(batch, generator)

        def loss(self, net, corrupted):
            calls.append("loss")
            c = corrupted.to(net.device)
            with net.autocast():
                logits = net.model.head(net.features(c.noisy))  # (B, N, V)
            return torch.nn.functional.cross_entropy(logits.float().transpose(1, 2), c.x)

        @classmethod
        def heldout_figures(cls, model, heldout, chars_per_token, cfg, generator, *, n_t):
            return {**super().heldout_figures(model, heldout, chars_per_token, cfg, generator, n_t=n_t),
                    "every_position_probe": 0.5}

    monkeypatch.setitem(OBJECTIVES, "every_position", EveryPosition)
    cfg = replace(TINY, steps=3, eval_every=3, ckpt_every=3)
    result = fit(cfg, data=data_dir, run=tmp_path / "run", threads=1, progress=False)
    assert calls == ["corrupt", "loss"] * 3 and result["every_position_probe"] == 0.5
    logged = json.loads((tmp_path / "run" / "log.jsonl").read_text().splitlines()[-1])
    assert logged["every_position_probe"] == 0.5 and "bits_per_char" in logged
    assert load_embedded(device="cpu", path=export(tmp_path / "run", tmp_path / "out")).can_edit is True
