"""The Denoiser protocol and the helpers every loader shares: pure functions, no checkpoints."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from dllm_viz.models import base
from dllm_viz.models.base import (
    Denoiser,
    TextTokenizer,
    check_denoiser,
    check_inputs,
    check_positions,
    logits_at,
    model_device,
    model_max_length,
    model_name,
    read_config,
    resolve_device,
    resolve_dtype,
)


class Minimal:
    """The smallest valid denoiser: a mask id and uniform logits."""

    mask_token_id = 3

    def __call__(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        return torch.zeros(*input_ids.shape, 5)  # (B, N, V)


class Described(torch.nn.Module):
    """A module with every optional attribute."""

    def __init__(self) -> None:
        super().__init__()
        self.mask_token_id = 0
        self.name = "described"
        self.max_length = 128
        self.weight = torch.nn.Parameter(torch.zeros(2))

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        return torch.zeros(*input_ids.shape, 5)


class Words:
    def encode(self, text: str) -> list[int]:
        return [len(w) for w in text.split()]

    def decode(self, ids: list[int]) -> str:
        return " ".join("x" * i for i in ids)


def test_protocols_accept_duck_types() -> None:
    assert isinstance(Minimal(), Denoiser) and isinstance(Described(), Denoiser)
    assert not isinstance(object(), Denoiser)
    assert isinstance(Words(), TextTokenizer) and not isinstance("text", TextTokenizer)


@pytest.mark.parametrize("bad", [None, -1, True, 2.0, "3"])
def test_check_denoiser_names_the_mask_id(bad: object) -> None:
    model = Minimal()
    model.mask_token_id = bad
    with pytest.raises(ValueError, match="mask_token_id"):
        check_denoiser(model)
    check_denoiser(Minimal())  # a valid one passes


def test_optional_attributes_have_defaults() -> None:
    assert model_name(Minimal()) == "Minimal" and model_name(Described()) == "described"
    assert model_max_length(Minimal()) is None and model_max_length(Described()) == 128
    assert model_device(Minimal()) == torch.device("cpu")
    assert model_device(Described()) == Described().weight.device


def test_check_inputs_accepts_a_right_padded_batch() -> None:
    ids = torch.zeros(2, 4, dtype=torch.long)
    mask = torch.tensor([[True, True, True, True], [True, True, False, False]])
    check_inputs(ids, mask, max_length=4)
    check_inputs(ids, None, max_length=None)


@pytest.mark.parametrize(
    ("ids", "mask", "match"),
    [
        (torch.zeros(4, dtype=torch.long), None, "input_ids"),
        (torch.zeros(1, 4), None, "input_ids.dtype"),
        (torch.zeros(1, 4, dtype=torch.bool), None, "input_ids.dtype"),
        (torch.zeros(1, 9, dtype=torch.long), None, "max_length=8"),
        (torch.zeros(1, 4, dtype=torch.long), torch.ones(1, 4, dtype=torch.long), "attention_mask"),
        (torch.zeros(1, 4, dtype=torch.long), torch.ones(1, 3, dtype=torch.bool), "attention_mask"),
        (torch.zeros(1, 4, dtype=torch.long), torch.tensor([[False, True, True, True]]), "right padding"),
    ],
)
def test_check_inputs_rejects(ids: torch.Tensor, mask: torch.Tensor | None, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        check_inputs(ids, mask, max_length=8)


def test_resolve_device(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device(None) == torch.device("cpu")
    assert resolve_device("cpu") == torch.device("cpu")
    with pytest.raises(ValueError, match="device='cuda'.*not available"):
        resolve_device("cuda")
    with pytest.raises(ValueError, match="device='gpu0'"):
        resolve_device("gpu0")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert resolve_device(None) == torch.device("cuda")


def test_resolve_dtype_defaults_and_names() -> None:
    assert resolve_dtype(None, torch.device("cuda")) == torch.bfloat16
    assert resolve_dtype(None, torch.device("cpu")) == torch.float32
    for name, dtype in base.DTYPES.items():
        assert resolve_dtype(name, torch.device("cpu")) == dtype
        assert resolve_dtype(dtype, torch.device("cpu")) == dtype
    for bad in ("int8", torch.int64, 16):
        with pytest.raises(ValueError, match="dtype="):
            resolve_dtype(bad, torch.device("cpu"))


def test_read_config(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="config.json"):
        read_config(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "bert"}))
    assert read_config(tmp_path) == {"model_type": "bert"}
    with pytest.raises(ValueError, match="config.json"):
        read_config(tmp_path / "config.json")  # a file, not a directory


def test_logits_at_gathers_a_full_forward_or_asks_the_model() -> None:
    ids = torch.arange(12).view(2, 6)
    rows, cols = torch.tensor([0, 1, 1]), torch.tensor([5, 0, 3])

    class Counting:  # logits that name their own position: value = 10 * row + col
        mask_token_id = 0

        def __call__(self, input_ids, attention_mask=None):
            B, N = input_ids.shape
            return (10 * torch.arange(B)[:, None] + torch.arange(N)).float()[..., None].expand(B, N, 4)

    full = logits_at(Counting(), ids, None, rows, cols)
    assert full.shape == (3, 4) and full[:, 0].tolist() == [5.0, 10.0, 13.0]

    class Packed(Counting):
        asked: list = []

        def logits_at(self, input_ids, attention_mask, rows, cols):
            self.asked.append((rows.tolist(), cols.tolist()))
            return torch.zeros(rows.numel(), 4)

    model = Packed()
    assert logits_at(model, ids, None, rows, cols).shape == (3, 4)
    assert model.asked == [([0, 1, 1], [5, 0, 3])]  # the model's own method, given the positions as they are


@pytest.mark.parametrize(
    ("rows", "cols", "match"),
    [
        (torch.tensor([0, 2]), torch.tensor([0, 1]), r"rows is invalid: expected values in \[0, 2\)"),
        (torch.tensor([0, 1]), torch.tensor([0, 6]), r"cols is invalid: expected values in \[0, 6\)"),
        (torch.tensor([0, -1]), torch.tensor([0, 1]), "rows is invalid"),
        (torch.tensor([[0]]), torch.tensor([0]), "rows is invalid: expected a 1-D integer tensor"),
        (torch.tensor([0.0]), torch.tensor([0]), "rows is invalid: expected a 1-D integer tensor"),
        (torch.tensor([0, 1]), torch.tensor([0]), "expected the same length"),
    ],
)
def test_check_positions_rejects(rows: torch.Tensor, cols: torch.Tensor, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        check_positions(rows, cols, (2, 6))
    check_positions(torch.tensor([1]), torch.tensor([5]), (2, 6))  # the last position is inside
    check_positions(torch.tensor([], dtype=torch.long), torch.tensor([], dtype=torch.long), (2, 6))  # none at all


def test_can_edit_is_an_opt_in_declaration() -> None:
    assert base.can_edit(Minimal()) is False
    for value, expected in ((True, True), (False, False), (1, False), ("yes", False)):
        model = Minimal()
        model.can_edit = value  # type: ignore[attr-defined]
        assert base.can_edit(model) is expected


def test_logits_hidden_predicts_each_position_without_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.tiny import TinyDenoiser

    model = TinyDenoiser()
    ids = torch.tensor([[5, 6, 7, 8, 9], [1, 2, 3, 0, 0]])  # id 0 is the mask token
    mask = torch.ones_like(ids, dtype=torch.bool)
    rows, cols = torch.tensor([0, 0, 1]), torch.tensor([1, 4, 2])
    expected = []
    for r, c in zip(rows.tolist(), cols.tolist()):
        hidden = ids[r : r + 1].clone()
        hidden[0, c] = model.mask_token_id
        expected.append(model(hidden, mask[r : r + 1])[0, c])
    got = base.logits_hidden(model, ids, mask, rows, cols)
    torch.testing.assert_close(got, torch.stack(expected), rtol=0, atol=1e-5)
    assert not torch.allclose(got[0], model(ids, mask)[0, 1])  # seeing itself changes the prediction
    monkeypatch.setattr(base, "HIDDEN_CHUNK_FLOATS", 1)  # one canvas per forward: the same numbers
    torch.testing.assert_close(base.logits_hidden(model, ids, mask, rows, cols), got, rtol=0, atol=1e-5)
    with pytest.raises(ValueError, match="rows is invalid"):
        base.logits_hidden(model, ids, mask, rows[:0], cols[:0])

    class OnePass(Minimal):
        def logits_hidden(self, input_ids, attention_mask, rows, cols):  # e.g. WINO's shadow block
            return torch.full((len(rows), 4), 7.0)

    assert base.logits_hidden(OnePass(), ids, None, rows, cols).eq(7.0).all()
