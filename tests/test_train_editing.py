"""train.objectives.editing: LLaDA 2.1's editing stream (random replacements of visible tokens, the
loss at every position, the edit probe) and a run trained with it."""
from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from dllm_viz.models.embedded import load_embedded
from dllm_viz.train.checkpoint import export
from dllm_viz.train.config import TrainConfig
from dllm_viz.train.loop import fit
from dllm_viz.train.objectives import editing as editing_module
from dllm_viz.train.objectives import masked as masked_module
from dllm_viz.train.objectives.editing import (
    edit_counts,
    mixed_loss,
    ordinary_ids,
    random_other_tokens,
    replace_visible,
)
from dllm_viz.train.objectives.masked import diffusion_loss
from tests.train_corpus import TINY, write_corpus


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_corpus(tmp_path_factory.mktemp("data"))


def test_random_other_tokens_are_ordinary_never_the_token_and_uniform() -> None:
    ordinary = ordinary_ids(12, [0, 1, 2])  # ids 3 .. 11
    assert ordinary.tolist() == list(range(3, 12))
    x = torch.full((1, 9000), 5)
    other = random_other_tokens(x, ordinary, torch.Generator().manual_seed(0))
    assert not (other == 5).any() and torch.isin(other, ordinary).all()
    counts = torch.bincount(other[0], minlength=12)[ordinary]  # 8 other ids, 1125 draws each on average
    assert counts[ordinary != 5].min() > 950 and counts[ordinary != 5].max() < 1300
    # The same generator state gives the same draw; another seed another one.
    again = random_other_tokens(x, ordinary, torch.Generator().manual_seed(0))
    assert torch.equal(other, again)
    assert not torch.equal(other, random_other_tokens(x, ordinary, torch.Generator().manual_seed(1)))


def test_replace_visible_changes_visible_tokens_of_chosen_rows_only() -> None:
    ordinary = ordinary_ids(40, [0, 1, 2])
    x = torch.randint(3, 40, (400, 50), generator=torch.Generator().manual_seed(0))
    masked = torch.rand(x.shape, generator=torch.Generator().manual_seed(1)) < 0.4
    ids, replaced = replace_visible(x, masked, 0.5, 0.2, ordinary, torch.Generator().manual_seed(2))
    assert torch.equal(replaced, ids != x)  # replaced exactly where the token changed, never to itself
    assert not (replaced & masked).any()  # masked positions belong to the drafting stream
    assert torch.isin(ids, ordinary).all()  # never a special id (in particular never the mask)
    rows = replaced.any(1)  # (B,) rows given the editing stream (a chosen row with nothing drawn reads as clean)
    assert 0.4 < rows.float().mean() < 0.6
    rate = replaced[rows].sum() / (~masked[rows]).sum()
    assert 0.17 < float(rate) < 0.23
    ids2, replaced2 = replace_visible(x, masked, 0.5, 0.2, ordinary, torch.Generator().manual_seed(2))
    assert torch.equal(ids, ids2) and torch.equal(replaced, replaced2)  # seeded through the generator alone
    ids3, _ = replace_visible(x, masked, 0.5, 0.2, ordinary, torch.Generator().manual_seed(3))
    assert not torch.equal(ids, ids3)
    ids0, replaced0 = replace_visible(x, masked, 0.0, 0.2, ordinary, torch.Generator().manual_seed(2))
    assert torch.equal(ids0, x) and not replaced0.any()
    # One rate per row (the trainer passes edit_rate * (1 - t)): a row at rate 0 keeps every token.
    per_row = torch.where(torch.arange(400) % 2 == 0, 0.0, 0.4)  # (B,)
    _, replaced_r = replace_visible(x, masked, 1.0, per_row, ordinary, torch.Generator().manual_seed(5))
    assert not replaced_r[0::2].any()
    assert 0.37 < float(replaced_r[1::2].sum() / (~masked[1::2]).sum()) < 0.43
    special = x.clone()
    special[:, 0] = 1  # an eos in the text stays an eos
    ids_s, _ = replace_visible(special, torch.zeros_like(masked), 1.0, 1.0, ordinary, torch.Generator().manual_seed(4))
    assert (ids_s[:, 0] == 1).all() and (ids_s[:, 1:] != special[:, 1:]).all()


def test_mixed_loss_scores_every_position() -> None:
    x = torch.tensor([[1, 2, 3, 4]])
    logits = torch.zeros(1, 4, 5)  # uniform: every token costs log(5)
    masked = torch.tensor([[True, False, True, False]])
    t = torch.tensor([0.5])
    loss = mixed_loss(logits, x, masked, t)
    assert math.isclose(loss.item(), (2 * math.log(5) / 0.5 + 2 * math.log(5)) / 4, rel_tol=1e-6)
    # The masked part is diffusion_loss; the visible positions add their own cross-entropy.
    assert math.isclose(loss.item(), diffusion_loss(logits, x, masked, t).item() + 2 * math.log(5) / 4, rel_tol=1e-6)
    # A gradient reaches every position: the visible ones too, where diffusion_loss gives none.
    for fn, expect in ((mixed_loss, torch.ones(1, 4)), (diffusion_loss, masked.float())):
        leaf = logits.clone().requires_grad_(True)
        fn(leaf, x, masked, t).backward()
        assert torch.equal((leaf.grad.abs().sum(-1) > 0).float(), expect), fn.__name__


def test_edit_counts_count_restored_and_wrongly_changed_tokens() -> None:
    class Oracle(torch.nn.Module):
        """Predicts the clean sequence everywhere (a perfect editor), or copies its input (``copy``)."""
        mask_token_id, vocab_size, special_ids, device = 2, 20, torch.tensor([0, 1, 2]), torch.device("cpu")

        def __init__(self, clean: torch.Tensor, copy: bool) -> None:
            super().__init__()
            self.clean, self.copy = clean, copy

        def forward(self, ids: torch.Tensor) -> torch.Tensor:
            target = ids if self.copy else self.clean
            return torch.nn.functional.one_hot(target, self.vocab_size).float()

    x = torch.randint(3, 20, (8, 30), generator=torch.Generator().manual_seed(0))
    perfect = edit_counts(Oracle(x, copy=False), x, 0.3, 0.2, torch.Generator().manual_seed(1))
    assert perfect["replaced"] > 0 and perfect["restored"] == perfect["replaced"] and perfect["changed"] == 0
    copier = edit_counts(Oracle(x, copy=True), x, 0.3, 0.2, torch.Generator().manual_seed(1))
    assert copier["restored"] == 0 and copier["changed"] == 0  # keeps everything: restores nothing
    assert copier["replaced"] == perfect["replaced"] and copier["kept"] == perfect["kept"]  # same draw, same seed


def test_the_edit_objective_trains_logs_and_declares_can_edit(data_dir: Path, tmp_path: Path) -> None:
    """With ``edit_fraction`` > 0 the run logs the edit probe, and its export says it can edit."""
    cfg = replace(TINY, steps=6, eval_every=6, ckpt_every=6, edit_fraction=0.5, edit_rate=0.2)
    result = fit(cfg, data=data_dir, run=tmp_path / "edit", threads=1, progress=False)
    assert {"restore@0", "wrong_edit@0", "restore@0.5", "wrong_edit@0.5"} <= set(result)
    assert all(0.0 <= result[k] <= 1.0 for k in result if k.startswith(("restore@", "wrong_edit@")))
    model = load_embedded(device="cpu", path=export(tmp_path / "edit", tmp_path / "edit-assets"))
    assert model.can_edit is True and model.config.can_edit is True
    plain = fit(replace(TINY, steps=6, eval_every=6, ckpt_every=6), data=data_dir, run=tmp_path / "plain", threads=1,
                progress=False)
    assert not any(k.startswith("restore@") for k in plain)
    assert load_embedded(device="cpu", path=export(tmp_path / "plain", tmp_path / "plain-assets")).can_edit is False
    # Same seed, same windows and masks: the editing stream is what makes the weights differ.
    a = torch.load(tmp_path / "edit" / "ckpt.pt", weights_only=False)["model"]
    b = torch.load(tmp_path / "plain" / "ckpt.pt", weights_only=False)["model"]
    assert any(not torch.equal(a[k], b[k]) for k in a)


def test_the_edit_objective_off_leaves_the_run_as_it_was(data_dir: Path, tmp_path: Path) -> None:
    """Off (``edit_fraction`` = 0, the default) the editing stream draws nothing from the run's generator
    and scores only masked positions: its rate is then irrelevant, bit for bit."""
    assert TrainConfig().edit_fraction == 0.0
    base = replace(TINY, prompt_fraction=0.5, rare_first_fraction=0.3)
    fit(base, data=data_dir, run=tmp_path / "a", threads=1, progress=False)
    fit(replace(base, edit_rate=0.9), data=data_dir, run=tmp_path / "b", threads=1, progress=False)
    a = torch.load(tmp_path / "a" / "ckpt.pt", weights_only=False)
    b = torch.load(tmp_path / "b" / "ckpt.pt", weights_only=False)
    assert all(torch.equal(a["model"][k], b["model"][k]) for k in a["model"])
    assert torch.equal(a["generator"], b["generator"])  # the same random numbers were drawn
    edit = tmp_path / "c"
    fit(replace(base, edit_fraction=0.5), data=data_dir, run=edit, threads=1, progress=False)
    c = torch.load(edit / "ckpt.pt", weights_only=False)
    assert not torch.equal(a["generator"], c["generator"])  # on, it draws its rows and replacements


def test_the_edit_objective_scores_its_steps_with_mixed_loss(data_dir: Path, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """On, every training step's loss is mixed_loss over every position; diffusion_loss scores only
    the held-out evaluation (full logits); pairs refuse the editing stream by name."""
    calls: dict[str, list[tuple[int, ...]]] = {"mixed": [], "diffusion": []}

    def spy(name, fn):
        def wrapped(logits, x, masked, t):
            calls[name].append(tuple(logits.shape))
            return fn(logits, x, masked, t)
        return wrapped

    monkeypatch.setattr(editing_module, "mixed_loss", spy("mixed", mixed_loss))
    monkeypatch.setattr(masked_module, "diffusion_loss", spy("diffusion", diffusion_loss))  # steps and held-out ELBO
    fit(replace(TINY, steps=3, eval_every=3, edit_fraction=0.5), data=data_dir, run=tmp_path / "run", threads=1,
        progress=False)
    assert len(calls["mixed"]) == 3 and all(len(shape) == 3 for shape in calls["mixed"])  # (B, N, V): every position
    assert all(len(shape) == 3 for shape in calls["diffusion"])  # the evaluation's midpoint rule only
    with pytest.raises(ValueError, match="edit_fraction"):
        replace(TINY, pairs=True, edit_fraction=0.5)
