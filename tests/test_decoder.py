"""Named invariants of the decoding loop, checked on tiny deterministic models."""
from __future__ import annotations

import math

import pytest
import torch

from dllm_viz import DecodeConfig, Trace, decode, load_model
from dllm_viz.core.step import unpack
from dllm_viz.core.schedules import planned_steps
from dllm_viz.models.embedded import EmbeddedConfig, EmbeddedDenoiser
from tests.reference import reference_decode
from tests.tiny import CharTokenizer, ScriptedDenoiser, TinyDenoiser

SCHEDULE_CONFIGS = [
    dict(schedule="topk_decay", top_k=5, decay=0.9),
    dict(schedule="topk_decay", top_k=6, decay=0.8, min_k=2, block_length=8, block_schedule="restart"),
    dict(schedule="fixed_steps", steps=10),
    dict(schedule="fixed_steps", steps=6, block_length=8),
    dict(schedule="threshold", threshold=0.5, min_k=1),
    dict(schedule="adaptive", top_k=6),
    dict(schedule="adaptive", top_k=3, block_length=4),
]


@pytest.fixture(scope="module")
def model():
    return TinyDenoiser()


@pytest.mark.parametrize("kw", SCHEDULE_CONFIGS)
@pytest.mark.parametrize("temperature", [0.0, 0.8])
def test_matches_independent_reference(model, kw, temperature):
    cfg = DecodeConfig(gen_length=16, seed=3, temperature=temperature, **kw)
    prompt = [5, 6, 7]
    (trace,) = decode(model, [prompt], cfg)
    ref = reference_decode(model, prompt, cfg)
    assert trace.token_ids == ref["token_ids"]
    assert len(trace.steps) == len(ref["records"])
    for rec, r in zip(trace.steps, ref["records"]):
        assert rec.selected == r["selected"]
        assert rec.tokens == r["tokens"]
        assert rec.temperature == pytest.approx(r["temperature"])
        for i, c in r["confidence"].items():
            assert rec.confidence[i] == pytest.approx(c, abs=2e-6)
    if planned_steps(cfg) is not None:
        assert trace.nfe == planned_steps(cfg)


@pytest.mark.parametrize("kw", SCHEDULE_CONFIGS)
def test_quotas_sum_to_masked_count_and_no_mask_left(model, kw):
    cfg = DecodeConfig(gen_length=16, seed=1, **kw)
    for trace in decode(model, [[1], [2, 3, 4, 5]], cfg):
        assert sum(rec.k for rec in trace.steps) == cfg.gen_length
        assert all(rec.k == len(rec.selected) == len(rec.tokens) for rec in trace.steps)
        assert model.mask_token_id not in trace.token_ids
        assert sorted(p for rec in trace.steps for p in rec.selected) == list(range(16))
        assert all(0 <= o < trace.nfe for o in trace.order)


def test_confirmed_tokens_never_change(model):
    cfg = DecodeConfig(gen_length=20, top_k=3, temperature=1.2, seed=4)
    (trace,) = decode(model, [[9, 9]], cfg)
    placed: dict[int, int] = {}
    for rec in trace.steps:
        for pos, tok in zip(rec.selected, rec.tokens):
            assert pos not in placed, "a position was confirmed twice"
            placed[pos] = tok
        for pos in placed:  # once confirmed, never again a candidate
            assert math.isnan(rec.confidence[pos]) or pos in rec.selected
    assert [placed[i] for i in range(20)] == trace.token_ids


def test_blocks_are_semi_autoregressive(model):
    cfg = DecodeConfig(gen_length=16, block_length=4, top_k=3, seed=2)
    (trace,) = decode(model, [[3]], cfg)
    finished_block = -1
    for rec in trace.steps:
        blocks = {p // 4 for p in rec.selected}
        assert blocks == {rec.block}, "a step confirmed outside its block"
        assert rec.block >= finished_block
        finished_block = rec.block
    # the block of each position is confirmed in order: max order of block b < min order of block b+1
    for b in range(3):
        assert max(trace.order[4 * b : 4 * b + 4]) < min(trace.order[4 * b + 4 : 4 * b + 8])


def test_confidence_does_not_change_with_temperature(model):
    traces = decode(model, [[4, 5]] * 3, [DecodeConfig(gen_length=12, temperature=t, seed=0) for t in (0.0, 1.0, 50.0)])
    first = [t.steps[0] for t in traces]
    assert first[0].confidence == first[1].confidence == first[2].confidence
    assert first[0].selected == first[1].selected == first[2].selected


def test_polluted_confidence_flattens_at_high_temperature(model):
    raw, polluted = decode(model, [[4, 5]] * 2, [
        DecodeConfig(gen_length=12, temperature=50.0, seed=0),
        DecodeConfig(gen_length=12, temperature=50.0, seed=0, confidence_from="tempered"),
    ])
    spread = lambda xs: max(xs) - min(xs)  # noqa: E731
    assert spread(polluted.steps[0].confidence) < 0.05 * spread(raw.steps[0].confidence)
    assert polluted.steps[0].raw_confidence == raw.steps[0].confidence
    assert raw.steps[0].raw_confidence is None


def test_temperature_zero_is_argmax(model):
    (trace,) = decode(model, [[1, 2]], DecodeConfig(gen_length=16, temperature=0.0, top_k=2, seed=5))
    for rec in trace.steps:
        assert rec.tokens == [rec.argmax[p] for p in rec.selected]
        assert rec.tokens == [rec.candidates[p][0] for p in rec.selected]


def test_drawn_tokens_follow_tempered_softmax():
    """Chi-square over 3000 seeds decoded in one batch: counts follow softmax(logits / T)."""
    base = torch.tensor([2.0, 1.0, 0.5, 0.0, -1.0])
    vocab = torch.cat([torch.tensor([0.0]), base])  # id 0 is the mask token

    def logits_fn(ids):
        return vocab.expand(ids.shape[0], ids.shape[1], -1).clone()

    model = ScriptedDenoiser(logits_fn)
    T, n = 0.7, 3000
    traces = decode(model, [[1]] * n, [DecodeConfig(gen_length=1, temperature=T, seed=s) for s in range(n)],
                    record_candidates=0)
    counts = torch.bincount(torch.tensor([t.token_ids[0] for t in traces]), minlength=6)[1:].double()
    expected = torch.softmax(base.double() / T, -1) * n
    chi2 = float(((counts - expected) ** 2 / expected).sum())
    assert counts.sum() == n and chi2 < 18.47, (counts, expected, chi2)  # 4 dof, p = 0.001
    # and the temperature matters: at T=0.7 the top token is clearly more frequent than softmax(logits)
    assert counts[0] / n > float(torch.softmax(base.double(), -1)[0]) + 0.05


def test_vocab_filters_restrict_draws():
    base = torch.tensor([0.0, 2.0, 1.9, 1.8, 1.7, 1.6])

    def logits_fn(ids):
        return base.expand(ids.shape[0], ids.shape[1], -1).clone()

    model = ScriptedDenoiser(logits_fn)
    traces = decode(model, [[1]] * 200, [DecodeConfig(gen_length=1, temperature=5.0, vocab_top_k=2, seed=s)
                                         for s in range(200)])
    assert {t.token_ids[0] for t in traces} == {1, 2}
    traces = decode(model, [[1]] * 200, [DecodeConfig(gen_length=1, temperature=1.0, top_p=0.3, seed=s)
                                         for s in range(200)])
    assert {t.token_ids[0] for t in traces} == {1, 2}  # 1 alone has ~0.23 < 0.3 of the mass


def test_same_seed_same_trace(model):
    cfg = DecodeConfig(gen_length=16, temperature=1.3, confidence="random", seed=11)
    a, b = decode(model, [[2, 3]], cfg), decode(model, [[2, 3]], cfg)
    assert a[0].token_ids == b[0].token_ids and a[0].order == b[0].order
    assert [r.to_dict() for r in a[0].steps] == [r.to_dict() for r in b[0].steps]
    c = decode(model, [[2, 3]], cfg.replace(seed=12))
    assert c[0].token_ids != a[0].token_ids


def test_request_alone_equals_request_in_mixed_batch(model):
    target = ([7, 8, 9], DecodeConfig(gen_length=16, temperature=1.1, top_k=4, seed=21, top_p=0.9))
    others = [
        ([1], DecodeConfig(gen_length=24, schedule="fixed_steps", steps=12, seed=1)),
        ([2, 2, 2, 2, 2, 2, 2], DecodeConfig(gen_length=8, schedule="threshold", threshold=0.4, seed=2)),
        ([], DecodeConfig(gen_length=5, temperature=0.0, confidence="entropy", seed=3)),
    ]
    (alone,) = decode(model, [target[0]], target[1])
    mixed = decode(model, [p for p, _ in others[:2]] + [target[0]] + [others[2][0]],
                   [c for _, c in others[:2]] + [target[1]] + [others[2][1]])
    together = mixed[2]
    assert together.token_ids == alone.token_ids and together.order == alone.order
    for x, y in zip(together.steps, alone.steps):
        assert x.selected == y.selected and x.tokens == y.tokens
        assert x.confidence == pytest.approx(y.confidence, abs=2e-6, nan_ok=True)


def test_shared_rng_makes_results_depend_on_neighbours(model):
    cfg = DecodeConfig(gen_length=16, temperature=1.5, seed=5, rng="shared")
    (alone,) = decode(model, [[3]], cfg)
    pair = decode(model, [[4], [3]], [cfg.replace(seed=9), cfg])
    assert pair[1].token_ids != alone.token_ids


def test_finished_requests_leave_the_forward_pass():
    seen = []

    class Recorder(TinyDenoiser):
        def forward(self, input_ids, attention_mask=None):
            seen.append(input_ids.shape[0])
            return super().forward(input_ids, attention_mask)

    decode(Recorder(), [[1], [1]], [DecodeConfig(gen_length=4, top_k=4), DecodeConfig(gen_length=4, top_k=1)])
    assert seen == [2, 1, 1, 1]


def test_padding_keeps_rows_independent(model):
    # the short prompt alone vs next to a much longer one: right padding + attention mask change nothing
    cfg = DecodeConfig(gen_length=8, temperature=0.0)
    (alone,) = decode(model, [[1]], cfg)
    both = decode(model, [[1], list(range(1, 30))], cfg)
    assert both[0].token_ids == alone.token_ids


@pytest.mark.parametrize("top_k,steps", [(1, 16), (16, 1), (100, 1)])
def test_top_k_edge_cases(model, top_k, steps):
    (trace,) = decode(model, [[1]], DecodeConfig(gen_length=16, top_k=top_k, decay=1.0))
    assert trace.nfe == steps


def test_very_large_temperature_still_completes(model):
    (trace,) = decode(model, [[1]], DecodeConfig(gen_length=16, temperature=1e6, seed=0))
    assert model.mask_token_id not in trace.token_ids and sum(r.k for r in trace.steps) == 16


def test_fully_masked_canvas_and_nothing_to_generate(model):
    (empty_prompt,) = decode(model, [[]], DecodeConfig(gen_length=8))
    assert len(empty_prompt.token_ids) == 8 and model.mask_token_id not in empty_prompt.token_ids
    calls = model.calls
    (nothing,) = decode(model, [[1, 2]], DecodeConfig(gen_length=0))
    assert nothing.token_ids == [] and nothing.steps == [] and model.calls == calls


def test_staged_temperature_by_thirds(model):
    cfg = DecodeConfig(gen_length=12, schedule="fixed_steps", steps=6, temperature_stages=(1.2, 1.0, 0.7))
    (trace,) = decode(model, [[1]], cfg)
    assert [r.temperature for r in trace.steps] == [1.2, 1.2, 1.0, 1.0, 0.7, 0.7]
    cfg = DecodeConfig(gen_length=12, schedule="threshold", threshold=0.99, temperature_stages=(1.2, 1.0, 0.7))
    (trace,) = decode(model, [[1]], cfg)  # step count unknown: thirds of the confirmed fraction
    confirmed = 0
    for rec in trace.steps:
        assert rec.temperature == cfg.temperature_stages[min(2, int(3 * confirmed / 12))]
        confirmed += rec.k


def test_global_sampling_locks_in_sampled_tokens(model):
    cfg = DecodeConfig(gen_length=16, temperature=2.0, seed=3, sample_scope="all", confidence_from="sampled")
    (trace,) = decode(model, [[1]], cfg)
    assert trace.steps[0].raw_confidence is not None
    assert sum(r.k for r in trace.steps) == 16


def test_text_prompts_need_a_tokenizer(model):
    with pytest.raises(ValueError, match="tokenizer"):
        decode(model, ["hello"], DecodeConfig(gen_length=4))
    model.tokenizer = CharTokenizer()
    try:
        (trace,) = decode(model, ["hello"], DecodeConfig(gen_length=4))
        assert trace.prompt_ids == model.tokenizer.encode("hello") and trace.prompt_text == "hello"
        assert trace.text == model.tokenizer.decode(trace.token_ids)
        assert all(trace.vocab[i] == model.tokenizer.decode([i]) for i in trace.token_ids)
    finally:
        del model.tokenizer


@pytest.mark.parametrize("prompts,config,match", [
    ([[0, 1]], DecodeConfig(gen_length=4), "mask token"),
    ([[-1]], DecodeConfig(gen_length=4), "prompt_ids"),
    ([[1]], [DecodeConfig(), DecodeConfig()], "config"),
    ("abc", DecodeConfig(), "prompts"),
    ([[1]], {"gen_length": 4}, "config"),
])
def test_invalid_decode_arguments(model, prompts, config, match):
    with pytest.raises(ValueError, match=match):
        decode(model, prompts, config)


@pytest.mark.parametrize("bad", [16384, 2**63, 10**40])
def test_prompt_ids_outside_the_vocabulary_are_a_named_error_not_an_index_error(bad):
    """decode() checks ids as Engine.submit does: an id the embedding has no row for (16384 in a
    16384-piece vocabulary), or one past int64, is a ValueError naming it, not an IndexError or an
    overflow from inside the forward."""
    embedded = load_model(device="cpu")
    with pytest.raises(ValueError, match=rf"prompt_ids: {str(bad)[:12]}.*\[0, {embedded.vocab_size}\)"):
        decode(embedded, [[5, bad]], DecodeConfig(gen_length=8))
    (ok,) = decode(embedded, [[5, embedded.vocab_size - 1]], DecodeConfig(gen_length=4))  # the last row is fine
    assert len(ok.token_ids) == 4


def test_prompt_ids_of_a_model_without_a_vocabulary_size_are_bounded(model):
    assert getattr(model, "vocab_size", None) is None
    with pytest.raises(ValueError, match="prompt_ids: 9223372036854775808 is invalid"):
        decode(model, [[1, 2**63]], DecodeConfig(gen_length=4))


def test_context_limit_names_max_length(model):
    model.max_length = 10
    try:
        with pytest.raises(ValueError, match="max_length=10"):
            decode(model, [[1, 2, 3]], DecodeConfig(gen_length=8))
    finally:
        del model.max_length


def test_trace_json_round_trip_of_a_real_decode(model):
    cfgs = [DecodeConfig(gen_length=12, confidence_from="tempered", temperature=1.5),
            DecodeConfig(gen_length=12, temperature_stages=(1.2, 1.0, 0.7), block_length=4)]
    for trace in decode(model, [[1], [2]], cfgs):
        s = trace.to_json()
        again = Trace.from_json(s)
        assert again.to_json() == s
        assert again.token_ids == trace.token_ids and again.config == trace.config


def test_unpack_restores_row_major_positions():
    where = torch.tensor([[True, False, True], [False, True, False]])
    packed = torch.tensor([[[1.0, 2.0]], [[3.0, 4.0]], [[5.0, 6.0]]])  # (M=3, 1, 2)
    out = unpack(packed, where, fill=-1)
    assert out.tolist() == [[[1, 2], [-1, -1], [3, 4]], [[-1, -1], [5, 6], [-1, -1]]]


def test_a_model_with_logits_at_is_asked_for_the_masked_positions_only():
    cfg = EmbeddedConfig(vocab_size=50, mask_token_id=0, pad_token_id=1, eos_token_id=2, d_model=32, n_layers=2,
                         n_heads=2, d_ff=64, max_length=64)
    asked = []

    class Spy(EmbeddedDenoiser):
        def logits_at(self, input_ids, attention_mask, rows, cols):
            asked.append(int((input_ids == self.mask_token_id)[attention_mask].sum()))  # masks in the real canvas
            assert torch.equal(input_ids[rows, cols], torch.full_like(rows, self.mask_token_id))
            return super().logits_at(input_ids, attention_mask, rows, cols)

    class FullHead:  # the same model seen through the protocol's required surface only
        def __init__(self, inner):
            self.inner, self.mask_token_id = inner, inner.mask_token_id

        def __call__(self, input_ids, attention_mask=None):
            return self.inner(input_ids, attention_mask)

    model = Spy(cfg, generator=torch.Generator().manual_seed(3)).eval()
    configs = [DecodeConfig(gen_length=12, top_k=3, temperature=0.0), DecodeConfig(gen_length=7, top_k=2, seed=4)]
    prompts = [[5, 6, 7], [8, 9, 10, 11, 12]]
    packed = decode(model, prompts, configs)
    # every step asked for exactly the masked positions: M = the masks in the canvas, 12 + 7 at first
    assert asked[0] == 19 and len(asked) == max(len(t.steps) for t in packed)
    full = decode(FullHead(model), prompts, configs)
    for a, b in zip(packed, full):
        assert a.token_ids == b.token_ids and [s.selected for s in a.steps] == [s.selected for s in b.steps]
