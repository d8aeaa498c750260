"""train.objectives.masked: the MDLM objective's pieces (noise levels, masks, their reshaping, the
1/t-weighted loss) and the loss a training step computes with them."""
from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from dllm_viz.train.loop import fit
from dllm_viz.train.objectives import masked as masked_module
from dllm_viz.train.objectives.masked import (
    diffusion_loss,
    keep_prompts,
    mask_tokens,
    rare_first_masks,
    stratified_t,
    unigram_surprisal,
)
from tests.train_corpus import TINY, write_corpus


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_corpus(tmp_path_factory.mktemp("data"))


def test_stratified_t_has_one_level_per_slice() -> None:
    t = stratified_t(8, 1e-3, torch.Generator().manual_seed(3))
    slices = torch.floor(t * 8).long().clamp(max=7)
    assert sorted(slices.tolist()) == list(range(8))
    assert float(t.min()) >= 1e-3 and float(t.max()) <= 1.0


def test_mask_tokens_masks_about_t_and_only_with_mask_id() -> None:
    x = torch.randint(3, 50, (4, 2000), generator=torch.Generator().manual_seed(0))
    t = torch.tensor([0.1, 0.4, 0.7, 1.0])
    noisy, masked = mask_tokens(x, t, 2, torch.Generator().manual_seed(1))
    assert torch.equal(noisy[~masked], x[~masked]) and (noisy[masked] == 2).all()
    torch.testing.assert_close(masked.float().mean(1), t, atol=0.04, rtol=0)


def test_diffusion_loss_weights_masked_tokens_by_inverse_t() -> None:
    x = torch.tensor([[1, 2, 3, 4]])
    logits = torch.zeros(1, 4, 5)  # uniform: every token costs log(5)
    masked = torch.tensor([[True, False, True, False]])
    loss = diffusion_loss(logits, x, masked, torch.tensor([0.5]))
    assert math.isclose(loss.item(), 2 * math.log(5) / 0.5 / 4, rel_tol=1e-6)


def test_diffusion_loss_is_the_same_from_every_position_or_the_masked_ones_only() -> None:
    gen = torch.Generator().manual_seed(5)
    logits = torch.randn(3, 17, 11, generator=gen)  # (B, N, V)
    x = torch.randint(0, 11, (3, 17), generator=gen)
    t = torch.tensor([0.2, 0.55, 0.9])
    _, masked = mask_tokens(x, t, 0, gen)
    full, rows = diffusion_loss(logits, x, masked, t), diffusion_loss(logits[masked], x, masked, t)
    assert torch.equal(full, rows)  # bit for bit: one formula
    # the estimator written out position by position (float64 reference, float32 under test)
    ref = sum(-torch.log_softmax(logits[b, i].double(), -1)[x[b, i]] / t[b].double()
              for b in range(3) for i in range(17) if masked[b, i]) / x.numel()
    assert math.isclose(full.item(), float(ref), rel_tol=1e-5)


def test_keep_prompts_unmasks_a_prefix_in_the_chosen_rows_only() -> None:
    masked = torch.ones(200, 40, dtype=torch.bool)
    kept = keep_prompts(masked, 0.5, torch.Generator().manual_seed(0))
    assert not (kept & ~masked).any()  # never masks anything new
    changed = (kept != masked).any(1)  # (B,) rows that got a clean prompt
    assert 0.3 < changed.float().mean() < 0.7
    prefix = (~kept).sum(1)
    assert torch.equal(kept[changed, 0], torch.zeros(int(changed.sum()), dtype=torch.bool))
    assert int(prefix.max()) < 20  # at most half the window
    # The clean part is a prefix: the first masked position comes after every clean one.
    for row in kept[changed]:
        assert not row[: int((~row).sum())].any() and row[int((~row).sum()) :].all()
    assert torch.equal(keep_prompts(masked, 0.0, torch.Generator().manual_seed(0)), masked)


def test_unigram_surprisal_ranks_rare_tokens_higher() -> None:
    stream = torch.tensor([5] * 90 + [6] * 9 + [7])  # token 8 never occurs: smoothed, rarest of all
    s = unigram_surprisal(stream, 10)
    assert s.shape == (10,) and s[5] < s[6] < s[7] < s[8]
    assert math.isclose(float(s[5]), -math.log(91 / 110), rel_tol=1e-5)  # add-one over 10 types


def test_rare_first_masks_take_the_rarest_tokens_at_rate_t_in_chosen_rows() -> None:
    vocab = 40
    surprisal = torch.arange(vocab, dtype=torch.float32)  # token v is v nats rare: far apart vs the noise
    # (200, 40)
    x = torch.stack([torch.randperm(vocab, generator=torch.Generator().manual_seed(r)) for r in range(200)])
    t = torch.full((200,), 0.25)
    uniform = torch.zeros(200, vocab, dtype=torch.bool)
    masked = rare_first_masks(x, t, surprisal, 0.5, uniform, torch.Generator().manual_seed(0))
    chosen = masked.any(1)  # the rows given rare-first masks; the others keep `uniform` (all False)
    assert 0.35 < chosen.float().mean() < 0.65
    assert torch.equal(masked.sum(1)[chosen], torch.full((int(chosen.sum()),), 10))  # round(0.25 * 40)
    # With ranks 1 nat apart and 2 nats of noise, the masked set is the rarest tokens up to a boundary blur.
    rarity = x[chosen].float()
    assert float(rarity[masked[chosen]].mean()) > 30 > float(rarity[~masked[chosen]].mean()) + 10
    assert torch.equal(rare_first_masks(x, t, surprisal, 0.0, uniform, torch.Generator().manual_seed(0)), uniform)
    assert rare_first_masks(x, torch.full((200,), 1e-3), surprisal, 1.0, uniform,
                            torch.Generator().manual_seed(0)).sum(1).eq(1).all()  # at least one token per row


def test_fit_scores_its_steps_with_diffusion_loss(data_dir: Path, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # The estimator fit computed inline before, kept here to show the shared one is bit-identical to it.
    def inline(logits, x, masked, t):
        weight = (1.0 / t)[:, None].expand_as(x)[masked]
        ce = torch.nn.functional.cross_entropy(logits.float(), x[masked], reduction="none")
        return (ce * weight).sum() / x.numel()

    seen: list[float] = []

    def spy(logits, x, masked, t):
        loss = diffusion_loss(logits, x, masked, t)
        if logits.dim() == 2:  # a training step (evaluate passes full logits)
            assert torch.equal(loss, inline(logits, x, masked, t))
            seen.append(loss.item())
        return loss

    monkeypatch.setattr(masked_module, "diffusion_loss", spy)  # the training steps and the held-out ELBO
    fit(replace(TINY, steps=3, eval_every=3), data=data_dir, run=tmp_path / "run", threads=1, progress=False)
    log = [json.loads(line) for line in (tmp_path / "run" / "log.jsonl").read_text().splitlines()]
    assert len(seen) == 3 and log[-1]["train_loss"] == seen[-1]
