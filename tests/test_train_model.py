"""train.model: the recipe's model, and a second phase started from an earlier model's weights
(a checkpoint or an exported folder), its vocabulary or depth grown."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from dllm_viz.models.tokenizer import EmbeddedTokenizer
from dllm_viz.train.checkpoint import export
from dllm_viz.train.loop import fit
from dllm_viz.train.model import build_model, grow_depth, grow_embedding, load_init_weights
from tests.train_corpus import TINY, write_corpus


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_corpus(tmp_path_factory.mktemp("data"))


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
