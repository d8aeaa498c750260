from __future__ import annotations

import torch

from dllm_viz.core import sampling


def test_processors_leave_inputs_untouched():
    logits = torch.randn(3, 10, generator=torch.Generator().manual_seed(0))
    before = logits.clone()
    sampling.apply_temperature(logits, torch.tensor([0.5, 0.0, 2.0]))
    sampling.filter_vocab_top_k(logits, torch.tensor([2, 0, 10]))
    sampling.filter_top_p(logits, torch.tensor([0.5, 1.0, 0.1]))
    sampling.process(logits, torch.tensor([0.5, 1.0, 2.0]), torch.tensor([3, 0, 1]), torch.tensor([0.9, 1.0, 0.5]))
    assert torch.equal(logits, before)


def test_vocab_top_k_and_neutral_rows():
    logits = torch.tensor([[1.0, 4.0, 3.0, 2.0], [1.0, 4.0, 3.0, 2.0]])
    out = sampling.filter_vocab_top_k(logits, torch.tensor([2, 0]))
    assert torch.isinf(out[0]).tolist() == [True, False, False, True]
    assert torch.equal(out[1], logits[1])


def test_top_p_keeps_the_smallest_nucleus():
    probs = torch.tensor([[0.5, 0.3, 0.15, 0.05]])
    out = sampling.filter_top_p(probs.log(), torch.tensor([0.7]))
    assert torch.isfinite(out).tolist() == [[True, True, False, False]]
    out = sampling.filter_top_p(probs.log(), torch.tensor([0.01]))
    assert torch.isfinite(out).tolist() == [[True, False, False, False]]


def test_inverse_cdf_picks_by_cumulative_mass_and_never_a_zero_token():
    probs = torch.tensor([[0.2, 0.0, 0.5, 0.3, 0.0]] * 4)
    ids = sampling.inverse_cdf(probs, torch.tensor([0.0, 0.19, 0.69, 0.999999]))
    assert ids.tolist() == [0, 0, 2, 3]


def test_draw_temperature_zero_is_argmax_and_reports_its_untempered_probability():
    logits = torch.tensor([[0.0, 3.0, 1.0], [0.0, 3.0, 1.0]])
    tok, p = sampling.draw(logits, torch.tensor([0.99, 0.99]), temperature=torch.tensor([0.0, 1.0]),
                           vocab_top_k=torch.tensor([0, 0]), top_p=torch.tensor([1.0, 1.0]))
    assert tok[0] == 1 and abs(float(p[0]) - float(torch.softmax(logits[0], -1)[1])) < 1e-6  # untempered
    assert tok[1] == 2 and abs(float(p[1]) - float(torch.softmax(logits[1], -1)[2])) < 1e-6
    empty = sampling.draw(logits[:0], torch.zeros(0), temperature=torch.zeros(0),
                          vocab_top_k=torch.zeros(0, dtype=torch.long),
                          top_p=torch.ones(0))
    assert empty[0].shape == (0,)


def test_top_p_one_is_neutral_even_next_to_a_filtering_row():
    logits = torch.randn(2, 4096, generator=torch.Generator().manual_seed(3)) * 4
    out = sampling.filter_top_p(logits, torch.tensor([1.0, 0.5]))
    assert torch.equal(out[0], logits[0])
    assert torch.isinf(out[1]).any()


def test_draw_at_temperature_zero_reports_the_filtered_probability_of_the_argmax():
    """Dream's T = 0 confidence: the argmax's probability after top-p renormalises the kept tokens."""
    logits = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]]))
    tok, p = sampling.draw(logits, torch.tensor([0.5]), temperature=torch.tensor([0.0]),
                           vocab_top_k=torch.tensor([0]), top_p=torch.tensor([0.7]))
    assert tok.tolist() == [0]
    assert abs(float(p[0]) - 0.5 / 0.8) < 1e-6  # top-p 0.7 keeps {0.5, 0.3}


def test_draw_without_probability_gives_the_same_tokens():
    g = torch.Generator().manual_seed(0)
    logits, u = torch.randn(6, 9, generator=g), torch.rand(6, generator=g)
    for temperature in (torch.zeros(6), torch.tensor([0.0, 0.5, 1.0, 0.0, 2.0, 0.0])):
        kw = dict(temperature=temperature, vocab_top_k=torch.tensor([0, 3, 0, 2, 0, 0]), top_p=torch.full((6,), 0.9))
        tok, p = sampling.draw(logits, u, **kw)
        fast, none = sampling.draw(logits, u, with_prob=False, **kw)
        assert torch.equal(tok, fast) and none is None and p is not None
