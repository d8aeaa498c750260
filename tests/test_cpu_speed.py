"""bench/cpu_speed.py's measuring helpers: bf16 spacing, agreement with fp32, the int8 variant."""
from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

from cpu_speed import bf16_spacing, forward_agreement, int8_dynamic, variants  # noqa: E402

from dllm_viz.models.embedded import EmbeddedConfig, EmbeddedDenoiser  # noqa: E402
from dllm_viz.models.tokenizer import EmbeddedTokenizer  # noqa: E402

TEXT = "It is a truth universally acknowledged, that a single man in possession of a good fortune.\n" * 8


def _model() -> EmbeddedDenoiser:
    tok = EmbeddedTokenizer.train(TEXT.split("\n"), vocab_size=280)
    cfg = EmbeddedConfig(vocab_size=tok.vocab_size, mask_token_id=tok.mask_token_id, pad_token_id=tok.pad_token_id,
                         eos_token_id=tok.eos_token_id, d_model=32, n_layers=2, n_heads=2, d_ff=64, max_length=48)
    return EmbeddedDenoiser(cfg, tok, generator=torch.Generator().manual_seed(0)).eval().requires_grad_(False)


def test_bf16_spacing_is_one_unit_of_the_eighth_bit():
    x = torch.tensor([1.0, 1.5, 2.0, -3.0, 0.25])
    expected = torch.tensor([2.0**-7, 2.0**-7, 2.0**-6, 2.0**-6, 2.0**-9])
    assert torch.equal(bf16_spacing(x), expected)
    # one spacing above x is the next bf16 number: rounding x + spacing to bf16 keeps it distinct from x
    assert torch.all(x.bfloat16() != (x + expected).bfloat16())


def test_a_model_agrees_with_itself_and_int8_is_measured_against_fp32():
    model = _model()
    gen = torch.Generator().manual_seed(1)
    canvases = torch.randint(3, model.vocab_size, (6, 40), generator=gen)
    same = forward_agreement(model, model, canvases, model.mask_token_id)
    assert same["positions"] > 0 and same["argmax_differ"] == 0 and same["choice_differ"] == 0

    before = {k: v.clone() for k, v in model.state_dict().items()}
    q = int8_dynamic(model)
    assert all(torch.equal(v, model.state_dict()[k]) for k, v in before.items())  # the fp32 model is untouched
    assert not any(type(m) is torch.nn.Linear for m in q.modules())
    assert sum(type(m).__name__ == "Linear" and "quantized" in type(m).__module__ for m in q.modules()) == 8
    x = canvases[:1]
    with torch.inference_mode():
        a, b = model(x), q(x)
    assert a.shape == b.shape
    # the same function, approximately: the logits of the int8 copy correlate with fp32's
    live = a > -1e3  # special tokens are pinned at -1e4 in both
    assert torch.corrcoef(torch.stack([a[live], b[live]]))[0, 1] > 0.95
    assert set(variants(model, ["fp32", "int8-dynamic"])) == {"fp32", "int8-dynamic"}


def test_the_full_head_variant_takes_the_full_forward_and_agrees_with_fp32():
    model = _model()
    runs = variants(model, ["fp32", "fp32-full-head"])
    assert callable(runs["fp32"].logits_at)  # the shipped path: the head at masked positions only
    assert not hasattr(runs["fp32-full-head"], "logits_at")  # the decoder falls back to forward + gather
    assert runs["fp32-full-head"].mask_token_id == model.mask_token_id  # other attributes still pass through
    canvases = torch.randint(3, model.vocab_size, (6, 40), generator=torch.Generator().manual_seed(2))
    agree = forward_agreement(runs["fp32"], runs["fp32-full-head"], canvases, model.mask_token_id)
    assert agree["positions"] > 0 and agree["argmax_differ"] == 0 and agree["choice_differ"] == 0
