"""Hugging Face adapters, offline: tiny random checkpoints built from configs in a temporary folder.

The checkpoints (real masked LMs; LLaDA and Dream stand-ins with their own modeling code, loaded
with `trust_remote_code` as a real checkpoint is) are built by `tests/checkpoints.py`.
"""
from __future__ import annotations

import logging
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # before transformers is imported: never touch the network
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import json
import sys
import types
from pathlib import Path

import pytest
import torch
from transformers import AutoModel, AutoModelForMaskedLM

import dllm_viz.models as models_pkg
from dllm_viz import DecodeConfig, decode
from dllm_viz.models import Denoiser, load_model
from dllm_viz.models.base import NEVER_LOGIT
from dllm_viz.models.hf import (
    ADAPTERS,
    DreamDenoiser,
    LLaDADenoiser,
    MaskedLMDenoiser,
    detect_kind,
    unshift_logits,
)
from tests.checkpoints import (
    ROWS,
    SPECIALS,
    WORDS,
    ids_of,
    make_tokenizer,
    right_pad,
    save_dream,
    save_masked_lm,
    save_standin,
)

def raw_model(path: Path, auto_class=AutoModel):
    return auto_class.from_pretrained(path, trust_remote_code=True, local_files_only=True).eval()


def assert_padding_invariant(adapter, rows: list[list[int]], pad_id: int) -> None:
    """Each row's logits are the same alone and inside a right-padded batch with a longer row."""
    ids, mask = right_pad(rows, pad_id)
    together = adapter(ids, mask)  # (B, N, V)
    for i, row in enumerate(rows):
        alone = adapter(torch.tensor([row]))[0]  # (n, V)
        torch.testing.assert_close(together[i, : len(row)], alone, atol=1e-5, rtol=1e-4)


# --- masked LMs ---------------------------------------------------------------------------------

FAMILIES = ["bert", "roberta", "modernbert"]


@pytest.mark.parametrize("family", FAMILIES)
def test_masked_lm_checkpoint_is_a_denoiser(tmp_path: Path, family: str) -> None:
    vocab = save_masked_lm(tmp_path, family)
    model = load_model(tmp_path, device="cpu")
    assert isinstance(model, MaskedLMDenoiser) and isinstance(model, Denoiser)
    assert model.mask_token_id == vocab["[MASK]"]
    assert model.name == tmp_path.name and model.device == torch.device("cpu")
    # End of text: the tokenizer's EOS, else the config's (RoBERTa and ModernBERT name [SEP]); BERT has none.
    eos = None if family == "bert" else vocab["[SEP]"]
    assert model.pad_token_id == vocab["[PAD]"] and model.eos_token_id == eos
    never = sorted({vocab[t] for t in [*SPECIALS, "[MASK]"]} - {eos})
    assert list(model.never_token_ids) == never
    assert model.end_of_text_ids == (() if eos is None else (eos,))  # [PAD] is never drawn, so never an end
    ids, mask = right_pad([ids_of(vocab, r) for r in ROWS], vocab["[PAD]"])
    logits = model(ids, mask)
    assert logits.shape == (*ids.shape, len(vocab)) and logits.dtype == torch.float32
    # The adapter adds nothing but NEVER_LOGIT at the special tokens: the checkpoint's own logits elsewhere.
    expected = raw_model(tmp_path, AutoModelForMaskedLM)(input_ids=ids, attention_mask=mask.long()).logits
    keep = [i for i in range(len(vocab)) if i not in never]
    torch.testing.assert_close(logits[..., keep], expected[..., keep])
    assert bool((logits[..., never] == NEVER_LOGIT).all())


def test_masked_lm_special_tokens_are_never_drawn(tmp_path: Path) -> None:
    vocab = save_masked_lm(tmp_path, "bert")
    # Make [CLS], [SEP], [UNK] and [PAD] the model's favourite predictions everywhere.
    raw = raw_model(tmp_path, AutoModelForMaskedLM)
    specials = ids_of(vocab, SPECIALS)
    with torch.no_grad():
        raw.get_output_embeddings().bias[specials] += 30.0
    raw.save_pretrained(tmp_path)
    ids = torch.tensor([ids_of(vocab, ROWS[1])])
    assert set(raw(input_ids=ids).logits.argmax(-1)[0].tolist()) <= set(specials)  # would be drawn unmasked
    model = load_model(tmp_path, device="cpu")
    config = DecodeConfig(gen_length=12, schedule="fixed_steps", steps=6, temperature=2.0, seed=0)
    for trace in decode(model, ["the cat sat", "a dog"] * 4, config):
        assert not set(trace.token_ids) & {*specials, vocab["[MASK]"]}
        assert not any(s in trace.text for s in SPECIALS)


@pytest.mark.parametrize("family", FAMILIES)
def test_masked_lm_padding_invariance(tmp_path: Path, family: str) -> None:
    vocab = save_masked_lm(tmp_path, family)
    model = load_model(tmp_path, device="cpu")
    rows = [ids_of(vocab, r) for r in ROWS]
    assert_padding_invariant(model, rows, vocab["[PAD]"])
    # The invariant is not vacuous: without the mask the padding does change the short row.
    ids, _ = right_pad(rows, vocab["[PAD]"])
    assert not torch.allclose(model(ids)[0, : len(rows[0])], model(torch.tensor(rows[:1]))[0], atol=1e-4)


def test_masked_lm_tokenizer_keeps_leading_special_only(tmp_path: Path) -> None:
    vocab = save_masked_lm(tmp_path, "bert")
    tokenizer = load_model(tmp_path, device="cpu").tokenizer
    text = "the cat sat on a mat"
    ids = tokenizer.encode(text)
    assert ids == [vocab["[CLS]"], *ids_of(vocab, text.split())]  # [CLS] first, no [SEP] before the canvas
    assert tokenizer.decode(ids[1:]) == text
    assert "[MASK]" in tokenizer.decode([vocab["the"], vocab["[MASK]"]])  # masks stay visible


@pytest.mark.parametrize(("family", "limit"), [("bert", 48), ("roberta", 40 - (0 + 1)), ("modernbert", 48)])
def test_context_limit_from_config(tmp_path: Path, family: str, limit: int) -> None:
    vocab = save_masked_lm(tmp_path, family)
    model = load_model(tmp_path, device="cpu")
    assert model.max_length == limit  # RoBERTa: positions start after pad id 0
    model(torch.full((1, limit), vocab["the"]))
    with pytest.raises(ValueError, match=f"max_length={limit}"):
        model(torch.full((1, limit + 1), vocab["the"]))


def test_bad_calls_raise_value_error(tmp_path: Path) -> None:
    vocab = save_masked_lm(tmp_path, "bert")
    model = load_model(tmp_path, device="cpu")
    ids, mask = right_pad([ids_of(vocab, r) for r in ROWS], vocab["[PAD]"])
    with pytest.raises(ValueError, match="input_ids"):
        model(ids[0])
    with pytest.raises(ValueError, match="dtype"):
        model(ids.float())
    with pytest.raises(ValueError, match="attention_mask"):
        model(ids, mask.long())
    with pytest.raises(ValueError, match="right padding"):
        model(ids, mask.flip(1))


def test_dtype_and_device_map(tmp_path: Path) -> None:
    vocab = save_masked_lm(tmp_path, "bert")
    half = load_model(tmp_path, device="cpu", dtype="bf16")
    assert next(half.parameters()).dtype == torch.bfloat16
    ids = torch.tensor([ids_of(vocab, ROWS[1])])
    assert half(ids).dtype == torch.float32  # confidence is computed in float32 whatever the weights
    mapped = load_model(tmp_path, device_map={"": "cpu"})  # the accelerate path, on one device
    torch.testing.assert_close(mapped(ids), load_model(tmp_path, device="cpu")(ids))


# --- LLaDA --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("support", "padding"), [("full", "mask"), ("causal", "split"), ("ignored", "split")])
def test_llada_padding_is_handled_whatever_the_release(tmp_path: Path, support: str, padding: str) -> None:
    hf, vocab = make_tokenizer(prefix=None)
    save_standin(
        tmp_path, "llada", vocab_size=len(vocab), mask_token_id=vocab["[MASK]"], attention_mask_support=support
    )
    hf.save_pretrained(tmp_path)
    model = load_model(tmp_path, device="cpu", trust_remote_code=True)
    assert isinstance(model, LLaDADenoiser) and model.padding == padding
    rows = [ids_of(vocab, r) for r in ROWS]
    assert_padding_invariant(model, rows, vocab["[PAD]"])
    ids, mask = right_pad(rows, vocab["[PAD]"])
    raw = raw_model(tmp_path)
    short = raw(torch.tensor(rows[:1])).logits[0]
    masked = raw(ids, attention_mask=mask.long()).logits[0, : len(rows[0])]
    # Only the release that honours its mask may be given one; the others would change the row.
    assert torch.allclose(masked, short, atol=1e-5) == (support == "full")
    # No shift for LLaDA: the adapter returns the model's own logits.
    torch.testing.assert_close(model(ids[1:]), raw(ids[1:]).logits)


def _llada(tmp_path: Path, support: str = "full"):
    hf, vocab = make_tokenizer(prefix=None)
    save_standin(
        tmp_path, "llada", vocab_size=len(vocab), mask_token_id=vocab["[MASK]"], attention_mask_support=support
    )
    hf.save_pretrained(tmp_path)
    return load_model(tmp_path, device="cpu", trust_remote_code=True)


def test_llada_split_fallback_is_logged_with_its_reason(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="dllm_viz.models.hf.llada"):
        model = _llada(tmp_path / "causal", "causal")
    (line,) = [r.getMessage() for r in caplog.records if r.name == "dllm_viz.models.hf.llada"]
    assert model.padding == "split" and "does not honour its attention mask" in line and "split mode" in line
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="dllm_viz.models.hf.llada"):
        assert _llada(tmp_path / "full").padding == "mask"
    assert not caplog.records  # nothing to say when the mask is honoured


@pytest.mark.parametrize("error", [TypeError("forward() got an unexpected keyword argument 'attention_mask'"),
                                   ValueError("attention_mask of shape (1, 4) is not supported"),
                                   RuntimeError("The size of tensor a (4) must match the size of tensor b (3)")])
def test_llada_probe_error_falls_back_to_split_and_says_why(tmp_path: Path, error: Exception,
                                                            monkeypatch: pytest.MonkeyPatch,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    model = _llada(tmp_path)
    plain = model.model.forward

    def forward(input_ids, attention_mask=None, **kwargs):
        if attention_mask is not None:
            raise error
        return plain(input_ids, **kwargs)

    monkeypatch.setattr(model.model, "forward", forward)
    with caplog.at_level(logging.WARNING, logger="dllm_viz.models.hf.llada"):
        assert model.probe_padding() is False
    (line,) = [r.getMessage() for r in caplog.records if r.name == "dllm_viz.models.hf.llada"]
    assert f"{type(error).__name__}: {error}" in line and "split mode" in line


@pytest.mark.parametrize("error", [torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"),
                                   RuntimeError("[enforce fail at alloc_cpu.cpp:117] DefaultCPUAllocator: "
                                                "can't allocate memory: you tried to allocate 1099511627776 bytes")])
def test_llada_probe_never_swallows_out_of_memory(tmp_path: Path, error: Exception,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    model = _llada(tmp_path)
    plain = model.model.forward

    def forward(input_ids, attention_mask=None, **kwargs):
        if attention_mask is not None:
            raise error
        return plain(input_ids, **kwargs)

    monkeypatch.setattr(model.model, "forward", forward)
    with pytest.raises(type(error), match="memory"):
        model.probe_padding()


def test_padded_output_rows_are_never_drawn(tmp_path: Path) -> None:
    hf, vocab = make_tokenizer(prefix=None)
    # Like LLaDA's output matrix, rounded up past its tokenizer: 24 rows no token stands for.
    save_standin(tmp_path, "llada", vocab_size=len(vocab) + 24, mask_token_id=vocab["[MASK]"])
    hf.save_pretrained(tmp_path)
    model = load_model(tmp_path, device="cpu", trust_remote_code=True)
    assert model.vocab_size == len(hf) == len(vocab)
    ids = torch.tensor([ids_of(vocab, ROWS[1])])
    logits, raw = model(ids), raw_model(tmp_path)(ids).logits
    assert logits.shape[-1] == len(vocab) + 24
    torch.testing.assert_close(logits[..., : len(vocab)], raw[..., : len(vocab)])
    assert bool((logits[..., len(vocab) :] == NEVER_LOGIT).all())
    assert bool((raw[..., len(vocab) :] > logits[..., len(vocab) :]).all())  # the raw rows were live
    config = DecodeConfig(gen_length=12, schedule="fixed_steps", steps=4, temperature=5.0, seed=0)
    traces = decode(model, [" ".join(ROWS[0])] * 8, config)
    assert all(0 <= t < len(vocab) for trace in traces for t in trace.token_ids)


@pytest.mark.parametrize("kind", ["bert", "llada", "dream"])
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_logits_at_is_the_forward_at_those_positions(tmp_path: Path, kind: str, dtype: str) -> None:
    # The adapter gathers the decoder's positions before its float32 copy: the same bits as forward + gather,
    # padded rows, the never-drawn output rows and Dream's shift included, in the checkpoint's dtype and in fp32.
    if kind == "bert":
        vocab = save_masked_lm(tmp_path, "bert")
    elif kind == "dream":
        vocab = save_dream(tmp_path, oracle_scale=3.0)
    else:
        hf, vocab = make_tokenizer(prefix=None)
        save_standin(tmp_path, "llada", vocab_size=len(vocab) + 24, mask_token_id=vocab["[MASK]"])
        hf.save_pretrained(tmp_path)
    model = load_model(tmp_path, device="cpu", dtype=dtype, trust_remote_code=True)
    ids, mask = right_pad([ids_of(vocab, r) for r in ROWS[:3]], vocab["[PAD]"])
    rows, cols = mask.nonzero(as_tuple=True)
    pick = torch.randperm(rows.numel(), generator=torch.Generator().manual_seed(0))[:7]
    at = model.logits_at(ids, mask, rows[pick], cols[pick])
    assert at.dtype == torch.float32 and at.shape == (7, model(ids, mask).shape[-1])
    assert torch.equal(at, model(ids, mask)[rows[pick], cols[pick]])


def test_llada_mask_id_comes_from_config_then_tokenizer(tmp_path: Path) -> None:
    hf, vocab = make_tokenizer(mask_token="<|mdm_mask|>", declare_mask=False, prefix=None)
    with_id, without_id = tmp_path / "with", tmp_path / "without"
    # The config's id wins even over the tokenizer's reserved token (the one LLaDA's code would use).
    save_standin(with_id, "llada", vocab_size=len(vocab), mask_token_id=vocab["sun"])
    save_standin(without_id, "llada", vocab_size=len(vocab))
    for path in (with_id, without_id):
        hf.save_pretrained(path)
    assert load_model(with_id, device="cpu", trust_remote_code=True).mask_token_id == vocab["sun"]
    assert load_model(without_id, device="cpu", trust_remote_code=True).mask_token_id == vocab["<|mdm_mask|>"]


def test_llada_without_any_mask_token_is_refused(tmp_path: Path) -> None:
    save_standin(tmp_path, "llada", vocab_size=len(WORDS) + 8)  # no tokenizer, no mask id in config
    with pytest.raises(ValueError, match="mask_token_id"):
        load_model(tmp_path, device="cpu", trust_remote_code=True)


def test_remote_code_needs_consent(tmp_path: Path) -> None:
    save_standin(tmp_path, "llada", vocab_size=len(WORDS) + 8, mask_token_id=4)
    with pytest.raises(ValueError, match="trust_remote_code"):
        load_model(tmp_path, device="cpu")


CHAT_TEMPLATE = (  # the shape of LLaDA-Instruct's template: BOS, a user turn, then the assistant's header
    "[CLS]{% for m in messages %} {{ m['role'] }} {{ m['content'] }} [SEP]{% endfor %}"
    "{% if add_generation_prompt %} big{% endif %}"
)


def test_chat_wraps_the_prompt_in_the_checkpoint_template(tmp_path: Path) -> None:
    hf, vocab = make_tokenizer(prefix="[CLS]")
    vocab_size = len(vocab)
    hf.add_tokens(["user"])
    hf.chat_template = CHAT_TEMPLATE
    save_standin(tmp_path, "llada", vocab_size=vocab_size + 1, mask_token_id=vocab["[MASK]"])
    hf.save_pretrained(tmp_path)
    plain = load_model(tmp_path, device="cpu", trust_remote_code=True)
    chat = load_model(tmp_path, device="cpu", trust_remote_code=True, chat=True)
    assert plain.tokenizer.encode("the cat") == ids_of(vocab, ["[CLS]", "the", "cat"])
    # The template writes BOS itself (no second one), then the turn and the generation prompt.
    user = hf.convert_tokens_to_ids("user")
    assert chat.tokenizer.encode("the cat") == [vocab["[CLS]"], user, vocab["the"], vocab["cat"], vocab["[SEP]"],
                                                vocab["big"]]
    trace = decode(chat, ["the cat"], DecodeConfig(gen_length=4, schedule="fixed_steps", steps=2, seed=0))[0]
    assert trace.prompt_ids == chat.tokenizer.encode("the cat")


def test_special_token_names_typed_in_a_prompt_stay_text(tmp_path: Path) -> None:
    # "[SEP]" or "[MASK]" typed by a person must not become the special ids, in plain or chat prompts.
    hf, vocab = make_tokenizer(prefix="[CLS]")
    hf.add_tokens(["user"])
    hf.chat_template = CHAT_TEMPLATE
    save_standin(tmp_path, "llada", vocab_size=len(vocab) + 1, mask_token_id=vocab["[MASK]"])
    hf.save_pretrained(tmp_path)
    specials = {vocab[t] for t in ("[SEP]", "[MASK]", "[PAD]", "[CLS]")}
    plain = load_model(tmp_path, device="cpu", trust_remote_code=True)
    chat = load_model(tmp_path, device="cpu", trust_remote_code=True, chat=True)
    ids = plain.tokenizer.encode("the [SEP] cat [MASK]")
    assert ids[0] == vocab["[CLS]"] and not specials & set(ids[1:])
    assert [i for i in ids if i != vocab["[UNK]"]] == ids_of(vocab, ["[CLS]", "the", "cat"])
    user = hf.convert_tokens_to_ids("user")
    got = chat.tokenizer.encode("the [PAD] cat")
    assert got[:3] == [vocab["[CLS]"], user, vocab["the"]] and got[-2:] == [vocab["[SEP]"], vocab["big"]]
    assert not specials & set(got[1:-2])  # only the template's own [CLS] and [SEP] are special
    (trace,) = decode(chat, ["the [MASK] cat"], DecodeConfig(gen_length=4, schedule="fixed_steps", steps=2, seed=0))
    assert chat.mask_token_id not in trace.prompt_ids


def test_chat_without_a_template_is_refused(tmp_path: Path) -> None:
    save_masked_lm(tmp_path, "bert")  # a base encoder: no chat template
    with pytest.raises(ValueError, match="chat=True is invalid .* no chat_template"):
        load_model(tmp_path, device="cpu", chat=True)
    with pytest.raises(ValueError, match="chat=True is invalid for the embedded model"):
        load_model(chat=True)


def test_llada_leading_bos_is_kept(tmp_path: Path) -> None:
    hf, vocab = make_tokenizer(prefix="[CLS]")  # stands for LLaDA's BOS, added by its template
    save_standin(tmp_path, "llada", vocab_size=len(vocab), mask_token_id=vocab["[MASK]"])
    hf.save_pretrained(tmp_path)
    tokenizer = load_model(tmp_path, device="cpu", trust_remote_code=True).tokenizer
    assert tokenizer.encode("big red sun") == [vocab["[CLS]"], *ids_of(vocab, ["big", "red", "sun"])]


# --- Dream --------------------------------------------------------------------------------------


def test_dream_logits_are_shifted_back(tmp_path: Path) -> None:
    vocab = save_dream(tmp_path, oracle_scale=100.0)
    model = load_model(tmp_path, device="cpu", trust_remote_code=True)
    assert isinstance(model, DreamDenoiser) and model.mask_token_id == vocab["<|mask|>"]
    ids = torch.tensor([ids_of(vocab, ROWS[1])])  # (1, N)
    raw = raw_model(tmp_path)(ids).logits  # (1, N, V): output i votes for token i + 1
    assert torch.equal(raw.argmax(-1)[:, :-1], ids[:, 1:])
    logits = model(ids)
    torch.testing.assert_close(logits, unshift_logits(raw))
    # After the shift, logits at i predict token i; position 0 repeats position 0's raw output.
    assert torch.equal(logits.argmax(-1)[:, 1:], ids[:, 1:])
    assert torch.equal(logits.argmax(-1)[:, 0], ids[:, 1])


def test_dream_padding_invariance(tmp_path: Path) -> None:
    vocab = save_dream(tmp_path, oracle_scale=1.0)
    model = load_model(tmp_path, device="cpu", trust_remote_code=True)
    assert_padding_invariant(model, [ids_of(vocab, r) for r in ROWS], vocab["[PAD]"])


def test_unshift_moves_every_position_by_one() -> None:
    raw = torch.arange(2 * 4 * 3, dtype=torch.float32).view(2, 4, 3)  # (B, N, V)
    out = unshift_logits(raw)
    assert out.shape == raw.shape
    assert torch.equal(out[:, 1:], raw[:, :-1]) and torch.equal(out[:, 0], raw[:, 0])
    assert torch.equal(raw, torch.arange(24, dtype=torch.float32).view(2, 4, 3))  # input untouched


# --- detection and load_model -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("config", "kind"),
    [
        ({"model_type": "llada", "architectures": ["LLaDAModelLM"]}, "llada"),
        ({"model_type": "llada", "architectures": ["LLaDAMoEModelLM"]}, "llada"),
        ({"model_type": "Dream", "architectures": ["DreamModel"]}, "dream"),
        ({"model_type": "bert", "architectures": ["BertForMaskedLM"]}, "masked_lm"),
        ({"model_type": "modernbert", "architectures": ["ModernBertForMaskedLM"]}, "masked_lm"),
        ({"model_type": "roberta"}, "masked_lm"),
    ],
)
def test_detect_kind(config: dict, kind: str) -> None:
    assert detect_kind(config) == kind


def test_unknown_architecture_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="kind="):
        detect_kind({"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"]})
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"]}))
    with pytest.raises(ValueError, match="gpt2"):
        load_model(tmp_path, device="cpu")


def test_kind_forces_the_adapter(tmp_path: Path) -> None:
    vocab = save_masked_lm(tmp_path, "bert")
    forced = load_model(tmp_path, device="cpu", kind="dream")
    assert isinstance(forced, DreamDenoiser)
    ids = torch.tensor([ids_of(vocab, ROWS[1])])
    torch.testing.assert_close(forced(ids),
                               unshift_logits(raw_model(tmp_path, AutoModelForMaskedLM)(input_ids=ids).logits))
    with pytest.raises(ValueError, match="kind='gpt'"):
        load_model(tmp_path, kind="gpt")
    assert set(ADAPTERS) == {"llada", "dream", "masked_lm"}


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"device": "tpu-nonsense"}, "device="),
        ({"dtype": "int8"}, "dtype="),
        ({"device": "cpu", "device_map": "auto"}, "device_map="),
    ],
)
def test_load_model_rejects_bad_arguments(tmp_path: Path, kwargs: dict, match: str) -> None:
    save_masked_lm(tmp_path, "bert")
    with pytest.raises(ValueError, match=match):
        load_model(tmp_path, **kwargs)


def test_missing_paths_are_refused_without_download(tmp_path: Path) -> None:
    missing = tmp_path / "GSAI-ML" / "LLaDA-8B-Instruct"  # looks like a hub id; must not be fetched
    with pytest.raises(ValueError, match="does not exist"):
        load_model(missing)
    with pytest.raises(ValueError, match="config.json"):
        load_model(tmp_path)


def test_no_path_loads_the_embedded_model(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    calls = []
    fake = types.ModuleType("dllm_viz.models.embedded")
    fake.load_embedded = lambda **kwargs: calls.append(kwargs) or "embedded"
    monkeypatch.setitem(sys.modules, "dllm_viz.models.embedded", fake)
    assert load_model(device="cpu") == "embedded"
    assert calls[-1] == {"device": torch.device("cpu"), "dtype": None, "path": None}
    # A folder in the embedded format (no model_type, as written by dllm_viz.train) goes there too.
    (tmp_path / "config.json").write_text(json.dumps({"vocab_size": 8, "mask_token_id": 1}))
    assert load_model(tmp_path, device="cpu", dtype="bf16") == "embedded"
    assert calls[-1] == {"device": torch.device("cpu"), "dtype": torch.bfloat16, "path": tmp_path}
    with pytest.raises(ValueError, match="kind='llada'"):
        load_model(kind="llada")
    with pytest.raises(ValueError, match="device_map="):
        load_model(device_map="auto")
    assert models_pkg.load_model is load_model


# --- the decoder on an adapter --------------------------------------------------------------------


@pytest.mark.parametrize("family", ["bert", "modernbert"])
def test_decoder_runs_on_a_checkpoint(tmp_path: Path, family: str) -> None:
    vocab = save_masked_lm(tmp_path, family)
    model = load_model(tmp_path, device="cpu")
    config = DecodeConfig(gen_length=8, schedule="topk_decay", top_k=2, decay=0.9, min_k=1, seed=0)
    prompts = ["the cat sat", "a dog ran far away"]
    traces = decode(model, prompts, config)
    again = decode(model, prompts[:1], config)
    assert len(traces) == 2
    for trace, prompt in zip(traces, prompts):
        assert trace.prompt_ids == model.tokenizer.encode(prompt)
        assert len(trace.token_ids) == 8 and vocab["[MASK]"] not in trace.token_ids
        assert None not in trace.canvas_at(len(trace.steps))
        assert all(0 <= t < len(vocab) for t in trace.token_ids)
    # The first request's trace does not depend on the second one being in the batch.
    assert traces[0].token_ids == again[0].token_ids and traces[0].order == again[0].order


@pytest.mark.parametrize("cache", ["prefix", "dual"])
def test_a_checkpoint_refuses_a_cache_by_name_and_says_why(tmp_path: Path, cache: str) -> None:
    save_masked_lm(tmp_path, "bert")
    model = load_model(tmp_path, device="cpu")
    config = DecodeConfig(gen_length=8, block_length=4, cache=cache)
    with pytest.raises(ValueError, match=rf"cache='{cache}' is invalid for '{tmp_path.name}': Hugging Face checkpoints "
                                         r"run their own modeling code.*expected none"):
        decode(model, ["the cat"], config)
    assert len(decode(model, ["the cat"], config.replace(cache="none"))[0].token_ids) == 8
