"""End of text: the early stop's pure functions on hand-made distributions, then the text cut and the early
stop end to end on LLaDA and Dream stand-in checkpoints whose logits favour end-of-text in the tail."""
from __future__ import annotations

import math

import pytest
import torch

from dllm_viz import DecodeConfig, Engine, Trace, decode, load_model
from dllm_viz.core.end_of_text import end_of_text_rows, fill_end_of_text
from dllm_viz.core.scoring import Distribution
from tests.checkpoints import save_dream, save_llada
from tests.tiny import TinyDenoiser

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
        raw, masked, block=torch.tensor([1, 0, 0, 1]), block_size=torch.full((4,), 3), end_ids=(EOS,),
        enabled=torch.tensor([True, True, True, False]), threshold=torch.full((4,), 0.9),
    )
    assert stop.tolist() == [True, False, False, False]
    # Completing row 1's block 0 stops it although its block 1 predicts other tokens: later blocks
    # take no part. Row 2 stops at a lower threshold, row 3 with the option on.
    only_first = {**cells, (1, 2): eos}
    stop = end_of_text_rows(
        packed(masked, only_first), masked, block=torch.tensor([1, 0, 0, 1]), block_size=torch.full((4,), 3),
        end_ids=(EOS,), enabled=torch.ones(4, dtype=torch.bool), threshold=torch.tensor([0.9, 0.9, 0.8, 0.9]),
    )
    assert stop.tolist() == [True, True, True, True]


def test_end_of_text_must_be_the_prediction_not_only_likely() -> None:
    masked = torch.tensor([[True, True]])
    split = [-30.0] * V
    split[EOS], split[2] = math.log(0.45), math.log(0.55)  # end-of-text at 0.45, but token 2 predicted
    raw = packed(masked, {(0, 0): split, (0, 1): split})
    args = dict(block=torch.tensor([0]), block_size=torch.tensor([2]), end_ids=(EOS,),
                enabled=torch.tensor([True]))
    assert not end_of_text_rows(raw, masked, threshold=torch.tensor([0.4]), **args).item()
    eos = logits_for(0.45, other=2)
    eos[4] = eos[2] = math.log(0.275)  # now end-of-text (0.45) beats 0.275 + 0.275 split
    raw = packed(masked, {(0, 0): eos, (0, 1): eos})
    assert end_of_text_rows(raw, masked, threshold=torch.tensor([0.4]), **args).item()


def test_any_of_several_end_of_text_ids_counts() -> None:
    # One position predicts the end-of-turn token (EOS), the other the padding token (4): both end a text.
    masked = torch.tensor([[True, True]])
    pad = logits_for(0.95)
    pad[EOS], pad[4] = pad[4], pad[EOS]
    raw = packed(masked, {(0, 0): logits_for(0.95), (0, 1): pad})
    args = dict(block=torch.tensor([0]), block_size=torch.tensor([2]), enabled=torch.tensor([True]),
                threshold=torch.tensor([0.9]))
    assert end_of_text_rows(raw, masked, end_ids=(EOS, 4), **args).item()
    assert not end_of_text_rows(raw, masked, end_ids=(EOS,), **args).item()


def test_a_row_with_nothing_masked_never_stops() -> None:
    masked = torch.zeros(1, 4, dtype=torch.bool)
    raw = Distribution(torch.zeros(0, 1, V))
    stop = end_of_text_rows(raw, masked, block=torch.tensor([4]), block_size=torch.tensor([4]), end_ids=(EOS,),
                            enabled=torch.tensor([True]), threshold=torch.tensor([0.5]))
    assert stop.tolist() == [False]


def test_fill_selects_every_masked_position_of_stopping_rows_only() -> None:
    masked = torch.tensor([[False, True, True, True], [True, True, False, True]])
    selected = torch.tensor([[False, True, False, False], [True, False, False, False]])
    tokens = torch.tensor([[-1, 2, -1, -1], [4, -1, -1, -1]])
    count = torch.tensor([1, 1])
    before = (selected.clone(), tokens.clone(), count.clone())
    predicted = torch.tensor([[-1, EOS, 4, EOS], [EOS, EOS, -1, EOS]])  # each masked position's own end token
    new_selected, new_tokens, new_count = fill_end_of_text(
        torch.tensor([True, False]), masked, selected, tokens, count, fill_tokens=predicted)
    assert new_selected.tolist() == [[False, True, True, True], [True, False, False, False]]
    assert new_tokens.tolist() == [[-1, EOS, 4, EOS], [4, -1, -1, -1]]
    assert new_count.tolist() == [3, 1]
    for old, now in zip(before, (selected, tokens, count)):
        assert torch.equal(old, now)  # inputs untouched


# --- on the LLaDA and Dream stand-in checkpoints, whose logits favour end-of-text in the tail ---------------

PROMPT, GEN, TAIL = "the cat sat", 12, 5  # generated positions >= TAIL favour end-of-text


@pytest.fixture(scope="module", params=["llada", "dream"])
def tail_model(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp(request.param)
    prompt_len = 3  # "the cat sat": the stand-ins' tokenizer adds no BOS
    if request.param == "llada":
        save_llada(folder, eos_token="<|eot_id|>", tail_from=prompt_len + TAIL, tail_scale=8.0)
    else:  # Dream's output i predicts token i + 1: its bias starts one output earlier
        save_dream(folder, 0.0, eos_token="<|endoftext|>", tail_from=prompt_len + TAIL - 1, tail_scale=8.0)
    model = load_model(folder, device="cpu", trust_remote_code=True)
    assert len(model.tokenizer.encode(PROMPT)) == prompt_len and model.eos_token_id is not None
    # End of text: the EOS first, then the padding token (both end a text of an instruction-tuned model).
    assert model.end_of_text_ids == (model.eos_token_id, model.pad_token_id)
    return model


def config(**changes) -> DecodeConfig:
    fields = dict(gen_length=GEN, block_length=6, schedule="fixed_steps", steps=GEN, temperature=0.0)
    return DecodeConfig(**{**fields, **changes})


def test_text_stops_at_the_first_end_of_text(tail_model) -> None:
    eos = tail_model.eos_token_id
    trace = decode(tail_model, [PROMPT], config())[0]
    assert trace.token_ids[TAIL:] == [eos] * (GEN - TAIL) and eos not in trace.token_ids[:TAIL]
    assert trace.text_end == TAIL and trace.early_stop_step is None and trace.nfe == GEN  # off by default
    assert trace.text == tail_model.tokenizer.decode(trace.token_ids[:TAIL])
    assert tail_model.tokenizer.decode([eos]) not in trace.text
    assert Trace.from_json(trace.to_json()).text_end == TAIL


def test_early_stop_fills_the_tail_and_saves_forwards(tail_model) -> None:
    eos = tail_model.eos_token_id
    plain = decode(tail_model, [PROMPT], config())[0]
    stopped = decode(tail_model, [PROMPT], config(early_stop=True))[0]
    # The same text and tokens, fewer forwards: the padding was confirmed in one step.
    assert stopped.token_ids == plain.token_ids and stopped.text == plain.text
    assert stopped.early_stop_step == stopped.nfe - 1 and stopped.nfe < plain.nfe == GEN
    assert stopped.nfe_saved == GEN - stopped.nfe == stopped.metrics["nfe_saved"] > 0
    last = stopped.steps[-1]
    assert last.k == len(last.selected) > 1 and set(last.tokens) == {eos}
    assert all(o >= 0 for o in stopped.order)  # nothing left masked
    # Every confirmation before the stop is the schedule's own: one position a step.
    assert [rec.k for rec in stopped.steps[:-1]] == [1] * (stopped.nfe - 1)


def test_early_stop_never_fills_a_position_that_predicts_text(tail_model) -> None:
    # One block: the confident end-of-text tail is confirmed first and the text positions last, so
    # there is never a step whose remaining masks all predict end-of-text; the stop does not fire.
    plain = decode(tail_model, [PROMPT], config(block_length=None))[0]
    stopped = decode(tail_model, [PROMPT], config(block_length=None, early_stop=True))[0]
    assert max(plain.order[TAIL:]) < max(plain.order[:TAIL])  # the tail was done before the text
    assert stopped.early_stop_step is None and stopped.token_ids == plain.token_ids
    assert stopped.nfe == plain.nfe == GEN and stopped.steps[-1].tokens[0] != tail_model.eos_token_id


def test_early_stop_threshold_is_the_raw_probability(tail_model) -> None:
    # The tail's end-of-text probability is about 0.99 (logit bias 8 over ~20 tokens): 0.999 never fires.
    strict = decode(tail_model, [PROMPT], config(early_stop=True, early_stop_threshold=0.999))[0]
    assert strict.early_stop_step is None and strict.nfe == GEN and "nfe_saved" not in strict.metrics
    loose = decode(tail_model, [PROMPT], config(early_stop=True, early_stop_threshold=0.9))[0]
    assert loose.early_stop_step is not None


def test_early_stop_in_the_engine_matches_decode_alone(tail_model) -> None:
    on, off = config(early_stop=True, seed=1), config(seed=2, temperature=1.0)
    alone_on, alone_off = decode(tail_model, [PROMPT], on)[0], decode(tail_model, ["a dog ran"], off)[0]
    with Engine(tail_model, max_batch=2, max_queue=4) as engine:
        futures = [engine.submit(PROMPT, on), engine.submit("a dog ran", off)]
        together_on, together_off = (f.result() for f in futures)
    assert (together_on.token_ids, together_on.order, together_on.nfe) == (alone_on.token_ids, alone_on.order,
                                                                             alone_on.nfe)
    assert together_on.early_stop_step == alone_on.early_stop_step is not None
    assert (together_off.token_ids, together_off.nfe, together_off.early_stop_step) == (
        alone_off.token_ids, alone_off.nfe, None)


def test_early_stop_needs_an_end_of_text_token() -> None:
    model = TinyDenoiser()  # no eos_token_id
    with pytest.raises(ValueError, match="early_stop=True is invalid .* no end-of-text token"):
        decode(model, [[1, 2]], DecodeConfig(gen_length=4, early_stop=True))
    assert decode(model, [[1, 2]], DecodeConfig(gen_length=4))[0].text_end is None
