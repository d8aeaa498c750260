"""dllm_viz.train: objective pieces, a tiny end-to-end run, checkpoint/resume, export round trip."""
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
from dllm_viz.models.tokenizer import EmbeddedTokenizer
from dllm_viz.train import train as train_module
from dllm_viz.train.train import (
    average_checkpoints,
    TrainConfig,
    diffusion_loss,
    edit_counts,
    export,
    fit,
    build_model,
    grow_depth,
    grow_embedding,
    keep_prompts,
    load_init_weights,
    lr_at,
    main,
    mask_tokens,
    mixed_loss,
    ordinary_ids,
    random_other_tokens,
    rare_first_masks,
    replace_visible,
    stratified_t,
    unigram_surprisal,
)

TINY = TrainConfig(
    vocab_size=300, d_model=32, n_layers=2, n_heads=2, d_ff=64, max_length=32, batch_size=4, steps=4,
    warmup=2, eval_every=2, eval_windows=4, ckpt_every=2, bf16=False,
)


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small synthetic corpus drawn from an explicit generator (no real data in the tests)."""
    words = "the lady said that she was very happy to see him at the ball and all her sisters".split()
    gen = torch.Generator().manual_seed(0)
    def paragraph() -> str:
        idx = torch.randint(0, len(words), (40,), generator=gen)
        return " ".join(words[i] for i in idx).capitalize() + "."
    root = tmp_path_factory.mktemp("data")
    (root / "train.txt").write_text("\n".join(paragraph() for _ in range(60)) + "\n")
    (root / "heldout.txt").write_text("\n".join(paragraph() for _ in range(8)) + "\n")
    return root


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
    x = torch.stack([torch.randperm(vocab, generator=torch.Generator().manual_seed(r)) for r in range(200)])  # (200, 40)
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


def test_lr_warms_up_then_decays_to_floor() -> None:
    cfg = replace(TINY, steps=100, warmup=10)
    assert lr_at(0, cfg) < lr_at(9, cfg) == pytest.approx(cfg.lr)
    assert lr_at(100, cfg) == pytest.approx(cfg.lr * cfg.min_lr_ratio)


@pytest.mark.parametrize("field, value", [("batch_size", 0), ("lr", 0.0), ("short_fraction", 1.5), ("rare_first_fraction", -0.1), ("t_min", 0.0),
                                          ("edit_fraction", 1.5), ("edit_rate", -0.1)])
def test_train_config_rejects_bad_values(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=field):
        replace(TINY, **{field: value})


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
                                                monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(train_module, "cpu_has_bf16_units", lambda: units)
    with caplog.at_level(logging.INFO, logger="dllm_viz.train"):
        fit(replace(TINY, steps=1, bf16=True), data=data_dir, run=tmp_path / "run", threads=1, progress=False)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("--bf16 false" in w for w in warnings) is (not units)
    assert any(r.getMessage().startswith("model: ") for r in caplog.records if r.levelno == logging.INFO)


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


def test_second_phase_starts_from_earlier_weights(data_dir: Path, tmp_path: Path) -> None:
    fit(TINY, data=data_dir, run=tmp_path / "one", threads=1, progress=False)
    first = torch.load(tmp_path / "one" / "ckpt.pt", weights_only=False)["model"]
    fit(replace(TINY, steps=1, lr=1e-9, warmup=0, prompt_fraction=0.5, rare_first_fraction=0.5), data=data_dir,
        run=tmp_path / "two",
        init_from=tmp_path / "one" / "ckpt.pt", threads=1, progress=False)
    second = torch.load(tmp_path / "two" / "ckpt.pt", weights_only=False)["model"]
    # One step at a negligible learning rate: the weights are those of the first phase.
    for key, value in first.items():
        torch.testing.assert_close(second[key], value, atol=1e-6, rtol=0, msg=key)


def test_second_phase_can_grow_the_vocabulary(data_dir: Path, tmp_path: Path) -> None:
    fit(TINY, data=data_dir, run=tmp_path / "one", threads=1, progress=False)
    first = torch.load(tmp_path / "one" / "ckpt.pt", weights_only=False)["model"]
    old = EmbeddedTokenizer.from_file(tmp_path / "one" / "tokenizer.json")
    fit(replace(TINY, vocab_size=TINY.vocab_size + 12, steps=1, lr=1e-9, warmup=0), data=data_dir,
        run=tmp_path / "two", init_from=tmp_path / "one" / "ckpt.pt", threads=1, progress=False)
    second = torch.load(tmp_path / "two" / "ckpt.pt", weights_only=False)["model"]
    new = EmbeddedTokenizer.from_file(tmp_path / "two" / "tokenizer.json")
    assert new.vocab_size == old.vocab_size + 12
    text = (data_dir / "heldout.txt").read_text()
    assert len(new.encode(text)) < len(old.encode(text))  # the extra merges make longer pieces
    grown, base = second["embed.weight"], first["embed.weight"]
    assert grown.shape == (new.vocab_size, base.shape[1])
    torch.testing.assert_close(grown[: old.vocab_size], base, atol=1e-6, rtol=0)
    for piece, i in new.get_vocab().items():
        if i >= old.vocab_size:  # a new piece starts at the mean of the old pieces that spell it
            parts = old.piece_ids(piece)
            assert len(parts) >= 2
            torch.testing.assert_close(grown[i], base[parts].mean(0), atol=1e-6, rtol=0)
    for key, value in first.items():
        if key != "embed.weight":
            torch.testing.assert_close(second[key], value, atol=1e-6, rtol=0, msg=key)


def test_second_phase_refuses_a_run_tokenized_with_other_pieces(data_dir: Path, tmp_path: Path) -> None:
    fit(TINY, data=data_dir, run=tmp_path / "one", threads=1, progress=False)
    text = (data_dir / "train.txt").read_text()[::-1].split("\n")  # same letters, other merges
    other = EmbeddedTokenizer.train(text, vocab_size=TINY.vocab_size)
    assert other.vocab_size == TINY.vocab_size
    assert other.get_vocab() != EmbeddedTokenizer.from_file(tmp_path / "one" / "tokenizer.json").get_vocab()
    (tmp_path / "two").mkdir()
    other.save(tmp_path / "two" / "tokenizer.json")
    with pytest.raises(ValueError, match=r"init_from=.*same size but other pieces"):
        fit(replace(TINY, steps=1), data=data_dir, run=tmp_path / "two", init_from=tmp_path / "one" / "ckpt.pt",
            threads=1, progress=False)
    assert not (tmp_path / "two" / "ckpt.pt").exists()


def test_grow_embedding_refuses_a_tokenizer_that_moves_old_pieces() -> None:
    old = EmbeddedTokenizer.train(["the lady said that she was happy"] * 20, vocab_size=280)
    other = EmbeddedTokenizer.train(["quick brown foxes jumped over lazy dogs"] * 20, vocab_size=290)
    assert (old.vocab_size, other.vocab_size) == (280, 290)
    with pytest.raises(ValueError, match=r"vocab_size=290: .* \(\d+ moved\)"):
        grow_embedding(torch.zeros(old.vocab_size, 8), old, other)


@pytest.mark.parametrize("old, new, after", [(2, 3, [1]), (2, 4, [0, 1]), (6, 8, [2, 5]), (3, 5, [0, 2])])
def test_grow_depth_keeps_the_function_and_spreads_new_blocks(old: int, new: int, after: list[int]) -> None:
    tokenizer = EmbeddedTokenizer.train(["the lady said that she was very happy to see him"] * 20, vocab_size=280)
    small = build_model(replace(TINY, vocab_size=280, n_layers=old, seed=3), tokenizer).eval()
    deep = build_model(replace(TINY, vocab_size=280, n_layers=new, seed=4), tokenizer).eval()
    weights = small.state_dict()
    deep.load_state_dict(grow_depth(weights, new))
    grown = deep.state_dict()
    x = torch.randint(3, 280, (2, 20), generator=torch.Generator().manual_seed(0))
    x[:, 8:] = tokenizer.mask_token_id
    with torch.no_grad():
        torch.testing.assert_close(deep(x), small(x), atol=1e-5, rtol=0)
    # Old blocks keep their order; each new block follows the old block named in `after`, copies it,
    # and has zero residual outputs (so it is an identity until trained).
    expected = []
    for i in range(old):
        expected.append((i, False))
        expected.extend((i, True) for _ in range(after.count(i)))
    assert len(expected) == new
    for index, (source, is_new) in enumerate(expected):
        for name in ("norm_attn.weight", "qkv.weight", "up.weight", "mix.weight", "proj.weight", "down.weight"):
            value, origin = grown[f"blocks.{index}.{name}"], weights[f"blocks.{source}.{name}"]
            if is_new and name in ("mix.weight", "proj.weight", "down.weight"):
                assert not value.any(), (index, name)
            else:
                torch.testing.assert_close(value, origin, atol=0, rtol=0)


def test_grow_depth_refuses_a_model_that_is_not_deeper() -> None:
    weights = {"embed.weight": torch.zeros(4, 2), "blocks.0.proj.weight": torch.ones(2, 2),
               "blocks.1.proj.weight": torch.ones(2, 2)}
    with pytest.raises(ValueError, match=r"n_layers=2 must be > the 2 blocks"):
        grow_depth(weights, 2)


def test_second_phase_can_grow_the_depth(data_dir: Path, tmp_path: Path) -> None:
    fit(TINY, data=data_dir, run=tmp_path / "one", threads=1, progress=False)
    fit(replace(TINY, n_layers=TINY.n_layers + 1, steps=1, lr=1e-9, warmup=0), data=data_dir, run=tmp_path / "two",
        init_from=tmp_path / "one" / "ckpt.pt", threads=1, progress=False)
    first, second = (json.loads((tmp_path / r / "log.jsonl").read_text().splitlines()[-1]) for r in ("one", "two"))
    # One step at a negligible learning rate from the grown weights: held-out loss as before growing.
    assert second["bits_per_char"] == pytest.approx(first["bits_per_char"], abs=1e-4)
    state = torch.load(tmp_path / "two" / "ckpt.pt", weights_only=False)
    assert state["train_config"]["n_layers"] == TINY.n_layers + 1
    assert sum(k.endswith("qkv.weight") for k in state["model"]) == TINY.n_layers + 1


def test_cli_runs_a_tiny_configuration(data_dir: Path, tmp_path: Path) -> None:
    main(["fit", "--data", str(data_dir), "--out", str(tmp_path / "cli"), "--threads", "1", "--no-progress",
          "--vocab-size", "300", "--d-model", "32", "--n-layers", "1", "--n-heads", "2", "--d-ff", "64",
          "--max-length", "32", "--batch-size", "2", "--steps", "2", "--eval-every", "2", "--eval-windows", "2",
          "--bf16", "false"])
    assert (tmp_path / "cli" / "ckpt.pt").is_file()
    main(["export", "--run", str(tmp_path / "cli"), "--out", str(tmp_path / "cli-assets")])
    assert (tmp_path / "cli-assets" / "config.json").is_file()


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


def test_fit_scores_its_steps_with_diffusion_loss(data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
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

    monkeypatch.setattr(train_module, "diffusion_loss", spy)
    fit(replace(TINY, steps=3, eval_every=3), data=data_dir, run=tmp_path / "run", threads=1, progress=False)
    log = [json.loads(line) for line in (tmp_path / "run" / "log.jsonl").read_text().splitlines()]
    assert len(seen) == 3 and log[-1]["train_loss"] == seen[-1]


@pytest.mark.parametrize(("value", "expected"), [(None, True), ("true", True), ("FALSE", False), ("0", False),
                                                 ("yes", True), ("No", False)])
def test_boolean_flags_take_true_or_false(value, expected, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    got: list[TrainConfig] = []
    monkeypatch.setattr(train_module, "fit", lambda cfg, **kwargs: got.append(cfg))
    main(["fit", "--data", str(tmp_path), "--out", str(tmp_path / "run"), "--bf16", *([value] if value else [])])
    assert got[0].bf16 is expected


@pytest.mark.parametrize("value", ["flase", "ture", "2", ""])
def test_a_misspelt_boolean_flag_is_a_usage_error_not_false(value, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture) -> None:
    monkeypatch.setattr(train_module, "fit", lambda cfg, **kwargs: pytest.fail(f"fit ran with bf16={cfg.bf16}"))
    with pytest.raises(SystemExit) as exit_:
        main(["fit", "--data", str(tmp_path), "--out", str(tmp_path / "run"), "--bf16", value])
    assert exit_.value.code == 2 and f"{value!r} is invalid" in capsys.readouterr().err


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


def test_second_phase_can_start_from_an_exported_folder(data_dir: Path, tmp_path: Path) -> None:
    """``--init-from assets/world``: the shipped float16 weights start a phase, as a checkpoint would."""
    fit(TINY, data=data_dir, run=tmp_path / "one", threads=1, progress=False)
    folder = export(tmp_path / "one", tmp_path / "shipped")
    weights, step = load_init_weights(folder)
    shipped = load_file(str(folder / "model.safetensors"))
    assert step == TINY.steps and all(weights[k].dtype == torch.float32 for k in weights)
    assert all(torch.equal(weights[k], shipped[k].float()) for k in shipped)
    fit(replace(TINY, steps=1, lr=1e-9, warmup=0, edit_fraction=0.5), data=data_dir, run=tmp_path / "two",
        init_from=folder, threads=1, progress=False)
    second = torch.load(tmp_path / "two" / "ckpt.pt", weights_only=False)["model"]
    for key, value in weights.items():
        torch.testing.assert_close(second[key], value, atol=1e-6, rtol=0, msg=key)
    assert (tmp_path / "two" / "tokenizer.json").read_text() == (folder / "tokenizer.json").read_text()


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

    monkeypatch.setattr(train_module, "mixed_loss", spy("mixed", mixed_loss))
    monkeypatch.setattr(train_module, "diffusion_loss", spy("diffusion", diffusion_loss))
    fit(replace(TINY, steps=3, eval_every=3, edit_fraction=0.5), data=data_dir, run=tmp_path / "run", threads=1,
        progress=False)
    assert len(calls["mixed"]) == 3 and all(len(shape) == 3 for shape in calls["mixed"])  # (B, N, V): every position
    assert all(len(shape) == 3 for shape in calls["diffusion"])  # the evaluation's midpoint rule only
    with pytest.raises(ValueError, match="edit_fraction"):
        replace(TINY, pairs=True, edit_fraction=0.5)
