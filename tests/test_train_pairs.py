"""dllm_viz.train.pairs: prompt/answer rows, batches of one length, answers alone masked; and a tiny
``--pairs`` run of the trainer on task pairs with the tasks' fixed vocabulary."""
from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from dllm_viz.models.embedded import load_embedded
from dllm_viz.tasks import build_tokenizer, generate, lines, tokenizer
from dllm_viz.train.checkpoint import export
from dllm_viz.train.cli import main
from dllm_viz.train.config import TrainConfig
from dllm_viz.train.loop import fit
from dllm_viz.train.pairs import Rows, batch_of, by_length, mask_answers, read_pairs, sample_batch

TINY = TrainConfig(d_model=32, n_layers=2, n_heads=2, d_ff=64, max_length=48, batch_size=8, steps=4, warmup=2,
                   eval_every=2, eval_windows=8, ckpt_every=2, bf16=False, pairs=True)


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Copy and latin pairs (12 and 35 tokens) and the tasks' tokenizer, as scripts/make_tasks_data.py writes them."""
    root = tmp_path_factory.mktemp("pairs")
    for name, n, seed in (("train", 60, 1), ("heldout", 6, 2)):
        text = "\n".join(lines(generate("copy", n, seed)) + lines(generate("latin", n // 3, seed))) + "\n"
        (root / f"{name}.txt").write_text(text)
    build_tokenizer().save(str(root / "tokenizer.json"))
    return root


def test_rows_hold_prompt_then_answer_padded(tmp_path: Path) -> None:
    tok = tokenizer()
    path = tmp_path / "p.txt"
    path.write_text("copy : a b c =\ta b c\nsort : b a c d =\ta b c d\n\n")
    rows = read_pairs(path, tok)
    assert len(rows) == 2 and rows.prompt_len.tolist() == [6, 7] and rows.length.tolist() == [9, 11]
    assert tok.decode(rows.ids[0, :9].tolist()) == "copy : a b c = a b c"
    assert rows.ids[0, 9:].tolist() == [tok.pad_token_id] * 2
    x, real, answer = batch_of(rows, torch.tensor([0, 1]))
    assert x.shape == (2, 11) and real.sum(1).tolist() == [9, 11] and answer.sum(1).tolist() == [3, 4]
    assert answer[0].nonzero().squeeze(1).tolist() == [6, 7, 8]
    path.write_text("copy : a b c = a b c\n")
    with pytest.raises(ValueError, match="prompt<TAB>answer"):
        read_pairs(path, tok)


def test_batches_are_of_about_one_length_and_only_answers_are_masked(data_dir: Path) -> None:
    rows = read_pairs(data_dir / "train.txt", tokenizer())
    gen = torch.Generator().manual_seed(0)
    order = by_length(rows, gen)
    assert torch.all(rows.length[order][1:] >= rows.length[order][:-1])
    assert sorted(order.tolist()) == list(range(len(rows)))
    spans = []
    for _ in range(20):
        x, real, answer = sample_batch(rows, order, 8, gen)
        spans.append(int(real.sum(1).max() - real.sum(1).min()))
        masked = mask_answers(x, answer, torch.full((8,), 0.9), gen)
        assert not (masked & ~answer).any() and masked.sum() > 0
    # Drawn at random, 8 of these rows (copy 9-15 tokens, latin 35) would mix both kinds 9 times in 10.
    assert sum(s <= 2 for s in spans) >= 15, spans


def test_a_tiny_pairs_run_learns_the_answers_and_exports_the_fixed_vocabulary(data_dir: Path, tmp_path: Path) -> None:
    cfg = replace(TINY, steps=40, eval_every=40, ckpt_every=40, lr=1e-2)
    result = fit(cfg, data=data_dir, run=tmp_path / "run", threads=1, progress=False)
    log = [json.loads(line) for line in (tmp_path / "run" / "log.jsonl").read_text().splitlines()]
    assert log[-1]["step"] == 40 and set(result) >= {"bits_per_token", "acc@0.15", "acc@1"}
    # Answer tokens are items (12) or symbols (4): uniform guessing over the 34 words costs log2(34) bits.
    assert result["bits_per_token"] < math.log2(34)
    assert (tmp_path / "run" / "tokenizer.json").read_text() == (data_dir / "tokenizer.json").read_text()
    model = load_embedded(device="cpu", path=export(tmp_path / "run", tmp_path / "assets", name="tasks-tiny"))
    assert model.name == "tasks-tiny"
    assert model.tokenizer.encode("copy : a b c =") == tokenizer().encode("copy : a b c =")
    cached = torch.load(tmp_path / "run" / "tokens.pt")
    assert isinstance(Rows(**cached["train"]), Rows)


def test_pairs_refuse_stream_only_options_and_run_from_the_command_line(data_dir: Path, tmp_path: Path) -> None:
    for field in ("prompt_fraction", "rare_first_fraction"):
        with pytest.raises(ValueError, match=field):
            replace(TINY, **{field: 0.5})
    main(["fit", "--data", str(data_dir), "--out", str(tmp_path / "cli"), "--pairs", "--threads", "1", "--steps", "2",
          "--d-model", "32", "--n-layers", "1", "--n-heads", "2", "--d-ff", "64", "--max-length", "48",
          "--batch-size", "4", "--warmup", "1", "--eval-every", "2", "--eval-windows", "4", "--ckpt-every", "2",
          "--bf16", "false", "--no-progress"])
    assert json.loads((tmp_path / "cli" / "train_config.json").read_text())["pairs"] is True
