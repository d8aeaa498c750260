"""The end-of-text early stop's two pure functions, on hand-made distributions."""
from __future__ import annotations

import math

import torch

from dllm_viz.core.end_of_text import end_of_text_rows, fill_end_of_text
from dllm_viz.core.scoring import Distribution

EOS, V = 3, 5


def logits_for(p_eos: float, other: int = 1) -> list[float]:
    """Logits (V,) giving end-of-text probability `p_eos`, the rest on `other`."""
    row = [-30.0] * V
    row[EOS], row[other] = math.log(p_eos), math.log(1 - p_eos)
    return row


def packed(masked: torch.Tensor, per_position: dict[tuple[int, int], list[float]]) -> Distribution:
    """The raw distribution at the masked positions, packed row-major; unset positions favour token 1."""
    rows = [per_position.get((a, g), logits_for(0.01)) for a, g in masked.nonzero().tolist()]
    return Distribution(torch.tensor(rows).unsqueeze(1))  # (M, 1, V)


def test_a_row_stops_only_when_its_whole_current_block_predicts_end_of_text() -> None:
    # G = 6 in blocks of 3. Row 0: block 0 done, block 1 all end-of-text. Row 1: block 0, one position not.
    # Row 2: block 0 all end-of-text at 0.85 (below 0.9). Row 3: like row 0 but the option is off.
    masked = torch.tensor([
        [False, False, False, True, True, True],
        [True, True, True, True, True, True],
        [True, True, True, True, True, True],
        [False, False, False, True, True, True],
    ])
    eos = logits_for(0.95)
    cells = {(0, 3): eos, (0, 4): eos, (0, 5): eos, (1, 0): eos, (1, 1): eos,
             (2, 0): logits_for(0.85), (2, 1): logits_for(0.85), (2, 2): logits_for(0.85),
             (3, 3): eos, (3, 4): eos, (3, 5): eos}
    raw = packed(masked, cells)
    stop = end_of_text_rows(
        raw, masked, block=torch.tensor([1, 0, 0, 1]), block_size=torch.full((4,), 3), eos_token_id=EOS,
        enabled=torch.tensor([True, True, True, False]), threshold=torch.full((4,), 0.9),
    )
    assert stop.tolist() == [True, False, False, False]
    # Completing row 1's block 0 stops it although its block 1 predicts other tokens: later blocks
    # take no part. Row 2 stops at a lower threshold, row 3 with the option on.
    only_first = {**cells, (1, 2): eos}
    stop = end_of_text_rows(
        packed(masked, only_first), masked, block=torch.tensor([1, 0, 0, 1]), block_size=torch.full((4,), 3),
        eos_token_id=EOS, enabled=torch.ones(4, dtype=torch.bool), threshold=torch.tensor([0.9, 0.9, 0.8, 0.9]),
    )
    assert stop.tolist() == [True, True, True, True]


def test_end_of_text_must_be_the_prediction_not_only_likely() -> None:
    masked = torch.tensor([[True, True]])
    split = [-30.0] * V
    split[EOS], split[2] = math.log(0.45), math.log(0.55)  # end-of-text at 0.45, but token 2 predicted
    raw = packed(masked, {(0, 0): split, (0, 1): split})
    args = dict(block=torch.tensor([0]), block_size=torch.tensor([2]), eos_token_id=EOS,
                enabled=torch.tensor([True]))
    assert not end_of_text_rows(raw, masked, threshold=torch.tensor([0.4]), **args).item()
    eos = logits_for(0.45, other=2)
    eos[4] = eos[2] = math.log(0.275)  # now end-of-text (0.45) beats 0.275 + 0.275 split
    raw = packed(masked, {(0, 0): eos, (0, 1): eos})
    assert end_of_text_rows(raw, masked, threshold=torch.tensor([0.4]), **args).item()


def test_a_row_with_nothing_masked_never_stops() -> None:
    masked = torch.zeros(1, 4, dtype=torch.bool)
    raw = Distribution(torch.zeros(0, 1, V))
    stop = end_of_text_rows(raw, masked, block=torch.tensor([4]), block_size=torch.tensor([4]), eos_token_id=EOS,
                            enabled=torch.tensor([True]), threshold=torch.tensor([0.5]))
    assert stop.tolist() == [False]


def test_fill_selects_every_masked_position_of_stopping_rows_only() -> None:
    masked = torch.tensor([[False, True, True, True], [True, True, False, True]])
    selected = torch.tensor([[False, True, False, False], [True, False, False, False]])
    tokens = torch.tensor([[-1, 2, -1, -1], [4, -1, -1, -1]])
    count = torch.tensor([1, 1])
    before = (selected.clone(), tokens.clone(), count.clone())
    new_selected, new_tokens, new_count = fill_end_of_text(
        torch.tensor([True, False]), masked, selected, tokens, count, eos_token_id=EOS)
    assert new_selected.tolist() == [[False, True, True, True], [True, False, False, False]]
    assert new_tokens.tolist() == [[-1, EOS, EOS, EOS], [4, -1, -1, -1]]
    assert new_count.tolist() == [3, 1]
    for old, now in zip(before, (selected, tokens, count)):
        assert torch.equal(old, now)  # inputs untouched
