"""The embedded model: protocol, context limit, padding/batch invariance, determinism, shipped assets."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from dllm_viz import assets
from dllm_viz.models.embedded import ASSET_DIR, EmbeddedConfig, EmbeddedDenoiser, load_embedded
from dllm_viz.models.tokenizer import SPECIAL_TOKENS, EmbeddedTokenizer

TEXT = (
    "It is a truth universally acknowledged, that a single man in possession of a good fortune, "
    "must be in want of a wife. However little known the feelings or views of such a man may be, "
    "this truth is so well fixed in the minds of the surrounding families.\n"
) * 4


@pytest.fixture(scope="module")
def tokenizer() -> EmbeddedTokenizer:
    return EmbeddedTokenizer.train(TEXT.split("\n"), vocab_size=300)


@pytest.fixture(scope="module")
def model(tokenizer: EmbeddedTokenizer) -> EmbeddedDenoiser:
    cfg = EmbeddedConfig(
        vocab_size=tokenizer.vocab_size,
        mask_token_id=tokenizer.mask_token_id,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        d_model=32,
        n_layers=2,
        n_heads=2,
        d_ff=64,
        max_length=48,
    )
    return EmbeddedDenoiser(cfg, tokenizer, generator=torch.Generator().manual_seed(0)).eval().requires_grad_(False)


def _random_ids(model: EmbeddedDenoiser, shape: tuple[int, int], seed: int = 0) -> torch.Tensor:
    return torch.randint(0, model.vocab_size, shape, generator=torch.Generator().manual_seed(seed))


def test_tokenizer_round_trip_and_special_ids(tokenizer: EmbeddedTokenizer) -> None:
    text = "a single man in possession of a good fortune"
    assert tokenizer.decode(tokenizer.encode(text)) == text
    ids = {tokenizer.pad_token_id, tokenizer.eos_token_id, tokenizer.mask_token_id}
    assert len(ids) == len(SPECIAL_TOKENS)
    assert tokenizer.decode([tokenizer.mask_token_id]) == "<mask>"  # masks stay visible
    assert tokenizer.decode([tokenizer.mask_token_id], skip_special_tokens=True) == ""


def test_protocol_attributes_and_shapes(model: EmbeddedDenoiser) -> None:
    assert isinstance(model.mask_token_id, int) and 0 <= model.mask_token_id < model.vocab_size
    assert isinstance(model.name, str) and model.name
    assert model.max_length == 48
    assert model.device == torch.device("cpu")
    ids = _random_ids(model, (3, 10))
    assert model(ids).shape == (3, 10, model.vocab_size)


def test_special_tokens_are_never_predicted(model: EmbeddedDenoiser) -> None:
    logits = model(_random_ids(model, (2, 10)))  # (B, N, V)
    probs = logits.softmax(-1)
    for special in (model.mask_token_id, model.pad_token_id, model.eos_token_id):
        assert float(probs[..., special].max()) == 0.0
    assert torch.isfinite(logits).all()  # finite, so entropy / log-prob scorers stay finite


def test_longer_than_context_raises_naming_the_limit(model: EmbeddedDenoiser) -> None:
    model(_random_ids(model, (1, 48)))  # exactly at the limit is fine
    with pytest.raises(ValueError, match="max_length=48"):
        model(_random_ids(model, (1, 49)))


def test_right_padding_does_not_change_real_positions(model: EmbeddedDenoiser) -> None:
    ids = _random_ids(model, (1, 12))
    alone = model(ids)  # (1, 12, V)
    padded = torch.cat([ids, torch.full((1, 7), model.pad_token_id)], dim=1)
    mask = torch.arange(19)[None, :] < 12
    with_pad = model(padded, attention_mask=mask)
    torch.testing.assert_close(with_pad[:, :12], alone, atol=1e-5, rtol=1e-5)


def test_row_does_not_depend_on_the_rest_of_the_batch(model: EmbeddedDenoiser) -> None:
    a, b = _random_ids(model, (1, 9), seed=1), _random_ids(model, (1, 15), seed=2)
    batch = torch.full((2, 15), model.pad_token_id)
    batch[0, :9], batch[1] = a[0], b[0]
    mask = torch.arange(15)[None, :] < torch.tensor([[9], [15]])
    out = model(batch, attention_mask=mask)
    torch.testing.assert_close(out[0, :9], model(a)[0], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(out[1], model(b)[0], atol=1e-5, rtol=1e-5)


def test_logits_at_equals_the_forward_at_those_positions(model: EmbeddedDenoiser) -> None:
    # a right-padded batch; positions in no particular order, one of them twice
    ids = _random_ids(model, (2, 15), seed=3)
    mask = torch.arange(15)[None, :] < torch.tensor([[9], [15]])
    ids[0, 9:] = model.pad_token_id
    rows, cols = torch.tensor([1, 0, 0, 1, 1]), torch.tensor([14, 8, 0, 3, 3])
    full = model(ids, attention_mask=mask)  # (2, 15, V)
    at = model.logits_at(ids, mask, rows, cols)  # (5, V)
    assert at.shape == (5, model.vocab_size)
    torch.testing.assert_close(at, full[rows, cols], atol=1e-5, rtol=1e-5)
    assert torch.equal(at.argmax(-1), full[rows, cols].argmax(-1))
    assert model.logits_at(ids, mask, rows[:0], cols[:0]).shape == (0, model.vocab_size)
    with pytest.raises(ValueError, match="cols is invalid"):
        model.logits_at(ids, mask, torch.tensor([0]), torch.tensor([15]))


def test_logits_at_a_row_do_not_depend_on_what_its_neighbours_ask_for(model: EmbeddedDenoiser) -> None:
    # bit for bit: the engine promises a request the trace it gets alone
    ids = _random_ids(model, (3, 20), seed=4)
    alone = model.logits_at(ids[:1], None, torch.zeros(5, dtype=torch.long), torch.arange(5))
    for others in (1, 7, 30):
        rows = torch.cat([torch.zeros(5, dtype=torch.long), 1 + torch.arange(others) % 2])
        cols = torch.cat([torch.arange(5), torch.arange(others) % 20])
        assert torch.equal(model.logits_at(ids, None, rows, cols)[:5], alone)


def _right_padded(model: EmbeddedDenoiser, lengths: list[int], seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    ids = _random_ids(model, (len(lengths), max(lengths)), seed=seed)
    mask = torch.arange(max(lengths))[None, :] < torch.tensor(lengths)[:, None]  # (B, N), a prefix per row
    return ids.masked_fill(~mask, model.pad_token_id), mask


@pytest.mark.parametrize("d_model, n_layers", [(32, 2), (256, 2)])
def test_logits_at_a_row_in_a_batch_are_bit_identical_to_the_row_alone(tokenizer: EmbeddedTokenizer, d_model: int,
                                                                       n_layers: int) -> None:
    # the width of the shipped model too: there the batched product's blocking differs with the row count
    cfg = EmbeddedConfig(vocab_size=tokenizer.vocab_size, mask_token_id=tokenizer.mask_token_id,
                         pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
                         d_model=d_model, n_layers=n_layers, n_heads=4, d_ff=2 * d_model, max_length=48)
    model = EmbeddedDenoiser(cfg, tokenizer, generator=torch.Generator().manual_seed(1)).eval().requires_grad_(False)
    lengths = [9, 40, 23, 40, 17]
    ids, mask = _right_padded(model, lengths, seed=5)
    rows = torch.cat([torch.full((n // 2,), r) for r, n in enumerate(lengths)])
    cols = torch.cat([torch.arange(1, n, 2) for n in lengths])
    batched = model.logits_at(ids, mask, rows, cols)  # (M, V)
    for r, n in enumerate(lengths):
        alone = model.logits_at(ids[r : r + 1, :n], None, torch.zeros(n // 2, dtype=torch.long), torch.arange(1, n, 2))
        assert torch.equal(batched[rows == r], alone), r
        all_true = torch.ones(1, n, dtype=torch.bool)  # how the decoder passes a lone request's mask
        assert torch.equal(model.logits_at(ids[r : r + 1, :n], all_true, torch.zeros(n // 2, dtype=torch.long),
                                           torch.arange(1, n, 2)), alone), r


def test_logits_at_a_padded_position_keeps_the_padded_row(model: EmbeddedDenoiser) -> None:
    ids, mask = _right_padded(model, [6, 12], seed=6)
    full = model(ids, attention_mask=mask)  # (2, 12, V)
    at = model.logits_at(ids, mask, torch.tensor([0, 0, 1]), torch.tensor([2, 9, 4]))  # col 9 of row 0 is padding
    torch.testing.assert_close(at, full[[0, 0, 1], [2, 9, 4]], atol=1e-5, rtol=1e-5)
    holes = mask.clone()
    holes[1, 3] = False  # only right padding is a valid mask
    with pytest.raises(ValueError, match="attention_mask is invalid"):
        model.logits_at(ids, holes, torch.tensor([1]), torch.tensor([0]))


def test_the_shipped_model_decodes_a_request_the_same_in_any_batch() -> None:
    # the RNG lesson's claim on the real model: a generator per request and rows run alone make a
    # request's trace independent of its neighbours, to the last bit of every recorded confidence
    from dllm_viz import DecodeConfig, decode

    model = load_embedded(device="cpu")
    prompts = ["It was a cold morning", "Mrs. Palmer had never been so much surprised in her life as when", "He"]
    configs = [DecodeConfig.preset("balanced", 24, seed=s, temperature=1.2) for s in (3, 4, 5)]
    batched = decode(model, prompts, configs)
    for prompt, config, together in zip(prompts, configs, batched):
        alone = decode(model, [prompt], config)[0]
        assert together.token_ids == alone.token_ids and together.order == alone.order
        for mine, solo in zip(together.steps, alone.steps, strict=True):
            torch.testing.assert_close(torch.tensor(mine.confidence), torch.tensor(solo.confidence), atol=0, rtol=0,
                                       equal_nan=True)
            assert mine.logprobs == solo.logprobs


def test_bidirectional_later_tokens_change_earlier_logits(model: EmbeddedDenoiser) -> None:
    ids = _random_ids(model, (1, 20))
    changed = ids.clone()
    changed[0, -1] = (ids[0, -1] + 1) % model.vocab_size
    assert not torch.allclose(model(ids)[0, 0], model(changed)[0, 0])


def test_same_seed_same_weights_different_seed_different(tokenizer: EmbeddedTokenizer, model: EmbeddedDenoiser) -> None:
    again = EmbeddedDenoiser(model.config, tokenizer, generator=torch.Generator().manual_seed(0))
    other = EmbeddedDenoiser(model.config, tokenizer, generator=torch.Generator().manual_seed(1))
    ids = _random_ids(model, (2, 10))
    torch.testing.assert_close(again.eval()(ids), model(ids))
    assert not torch.allclose(other.eval()(ids), model(ids))


@pytest.mark.parametrize(
    "field, value",
    [("d_model", 30), ("conv_kernel", 4), ("mask_token_id", 10_000), ("n_layers", 0), ("rope_base", 1.0),
     ("can_edit", 1)],
)
def test_config_rejects_bad_values_naming_the_field(field: str, value: object) -> None:
    kwargs = dict(vocab_size=300, mask_token_id=2, pad_token_id=0, eos_token_id=1, n_heads=4)
    kwargs[field] = value
    with pytest.raises(ValueError, match=field):
        EmbeddedConfig(**kwargs)


@pytest.mark.parametrize("delete, split, match", [(297, None, "both or neither"), (300, 299, "delete_token_id=300"),
                                                  (298, 2, "must differ"), (299, 299, "must differ")])
def test_edit_token_ids_are_both_in_the_vocabulary_and_distinct(delete, split, match) -> None:
    """LLaDA 2.2's DELETE and SPLIT (issue 37): a model declares both or neither; a config.json without them
    (every model before them) loads as a model that cannot edit lengths."""
    kwargs = dict(vocab_size=300, mask_token_id=2, pad_token_id=0, eos_token_id=1, n_heads=4)
    with pytest.raises(ValueError, match=match):
        EmbeddedConfig(**kwargs, delete_token_id=delete, split_token_id=split)
    ok = EmbeddedConfig(**kwargs, delete_token_id=298, split_token_id=299)
    assert EmbeddedConfig(**json.loads(ok.to_json())) == ok
    assert EmbeddedConfig(**kwargs).delete_token_id is None


def test_can_edit_is_stored_in_config_json_and_old_files_load_without_it(tmp_path: Path) -> None:
    """A model declares whether it was trained to predict at visible positions (token-to-token edits);
    a config.json written before the field existed loads as a model that cannot edit."""
    base = dict(vocab_size=300, mask_token_id=2, pad_token_id=0, eos_token_id=1, d_model=32, n_layers=1, n_heads=2,
                d_ff=64, max_length=16)
    assert EmbeddedConfig(**base).can_edit is False
    old = tmp_path / "old.json"
    old.write_text(json.dumps(base))
    assert "can_edit" not in json.loads(old.read_text()) and EmbeddedConfig.from_json(old).can_edit is False
    new = tmp_path / "new.json"
    new.write_text(EmbeddedConfig(**base, can_edit=True).to_json())
    assert json.loads(new.read_text())["can_edit"] is True
    cfg = EmbeddedConfig.from_json(new)
    assert cfg.can_edit is True and EmbeddedDenoiser(cfg).can_edit is True
    assert EmbeddedDenoiser(EmbeddedConfig.from_json(old)).can_edit is False


def test_the_shipped_models_declare_whether_they_can_edit() -> None:
    """The world model is trained with LLaDA 2.1's editing stream (assets/world/MODEL_CARD.md); the Austen
    model, trained on masked positions only, is not."""
    assert load_embedded(device="cpu").can_edit is False
    world = load_embedded(device="cpu", path=assets.path("world"))
    assert world.can_edit is True and world.config.can_edit is True


def test_load_embedded_reports_missing_files(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="config.json"):
        load_embedded(device="cpu", path=tmp_path)


def test_shipped_model_loads_and_fits_the_budget() -> None:
    size = sum(f.stat().st_size for f in ASSET_DIR.iterdir() if f.is_file())
    assert size < 50 * 2**20
    model = load_embedded(device="cpu")
    assert not model.training
    assert model.max_length >= 192  # prompt + 128 generated tokens
    assert model.tokenizer.mask_token_id == model.mask_token_id
    ids = model.tokenizer.encode("It is a truth universally acknowledged")
    canvas = torch.tensor([ids + [model.mask_token_id] * 4])
    logits = model(canvas)  # (1, N, V)
    assert torch.isfinite(logits).all()
    # A trained model prefers real text over the mask token at masked positions.
    assert (logits[0, -4:].argmax(-1) != model.mask_token_id).all()
