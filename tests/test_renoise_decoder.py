"""core.renoise_decoder against transformers' own `generate()` on a tiny DiffusionGemma (issue 36).

At batch 1 with the same seed, every step must agree exactly with `generate()` after
`torch.manual_seed(seed)`: the canvas the decoder read, the proposal, the accepted set, the canvas
written, the argmax canvas, the entropy, the stop flag; and the final ids. `generate()` is recorded
through recording subclasses of its own sampler and stop criterion (tests/diffusion_gemma_tiny.py).
At batch > 1, `generate()` interleaves the rows' draws in the global generator while we give each
request its own: equal in distribution only, tested with a chi-square homogeneity test.
"""
from __future__ import annotations

import math
from collections import Counter

import pytest
import torch
from transformers.models.diffusion_gemma.generation_diffusion_gemma import EntropyBoundSamplerConfig

from dllm_viz.core.renoise import RenoiseSettings
from dllm_viz.core.renoise_decoder import renoise_decode
from dllm_viz.models.diffusion_gemma import DiffusionGemmaRenoiser
from tests.diffusion_gemma_tiny import record_generate, tiny_model
from tests.renoise_table import TableRenoiser

PROMPTS = {
    "short": [2, 10, 11, 12],
    "one": [7],
    "long": [2, *range(20, 44)],  # 25 tokens: past the sliding window (16), the sliding layer's cache is cut
}
BOUNDS = (0.05, 0.7, 2.0, 8.0)
STEPS = (1, 3, 6)
SCHEDULES = ((0.4, 0.8), (0.1, 1.5), (0.9, 1.0))
STABILITY = (0, 1, 2)
CONFIDENCE = (0.005, 0.5, 3.0)  # 0.005 (shipped) never fires on a random model; 3.0 fires once stable
LENGTHS = (4, 8)
NEW_TOKENS = (4, 9, 16)  # one, two (the second cut short by max_new_tokens) or up to four canvases
SHARPNESS = (12.0, 12.0, 1.0)  # mostly the sharpened model (acceptance varies, the stop fires)
END = ((), (), (1, 5, 9, 13, 17, 21, 25, 29, 33, 37, 41, 45))  # a third of the cases stop at an end-of-text id


def grid(count: int = 60) -> list[dict]:
    """`count` cases covering every value of every axis (co-prime strides through each tuple)."""
    axes = {"bound": BOUNDS, "steps": STEPS, "schedule": SCHEDULES, "stability": STABILITY, "confidence": CONFIDENCE,
            "length": LENGTHS, "new": NEW_TOKENS, "prompt": tuple(PROMPTS), "sharpness": SHARPNESS, "eos": END}
    strides = {"bound": 1, "steps": 1, "schedule": 2, "stability": 5, "confidence": 7, "length": 3, "new": 11,
               "prompt": 13, "sharpness": 17, "eos": 19}
    return [{name: values[(i * strides[name] + i // len(values)) % len(values)] for name, values in axes.items()}
            | {"seed": 1000 + 7 * i} for i in range(count)]


CASES = grid()


@pytest.fixture(scope="module")
def models() -> dict[float, DiffusionGemmaRenoiser]:
    return {s: DiffusionGemmaRenoiser(tiny_model(sharpness=s)) for s in set(SHARPNESS)}


def _generate(model: DiffusionGemmaRenoiser, case: dict, rows: int = 1, seed: int | None = None):
    """transformers' generate() on the case, the canvas length set where generate() reads it."""
    t_min, t_max = case["schedule"]
    hf = model.model
    kept = hf.config.canvas_length
    hf.config.canvas_length = case["length"]
    extra = {"eos_token_id": list(case["eos"]), "pad_token_id": 0} if case["eos"] else {}
    try:
        return record_generate(
            hf, torch.tensor([PROMPTS[case["prompt"]]] * rows), seed=case["seed"] if seed is None else seed,
            max_new_tokens=case["new"], max_denoising_steps=case["steps"], t_min=t_min, t_max=t_max,
            sampler_config=EntropyBoundSamplerConfig(entropy_bound=case["bound"]),
            stability_threshold=case["stability"], confidence_threshold=case["confidence"], **extra)
    finally:
        hf.config.canvas_length = kept


def _settings(case: dict, seed: int | None = None) -> RenoiseSettings:
    t_min, t_max = case["schedule"]
    return RenoiseSettings(entropy_bound=case["bound"], t_min=t_min, t_max=t_max, max_denoising_steps=case["steps"],
                           stability_threshold=case["stability"], confidence_threshold=case["confidence"],
                           canvas_length=case["length"], max_new_tokens=case["new"],
                           seed=case["seed"] if seed is None else seed, eos_token_ids=case["eos"],
                           pad_token_id=0 if case["eos"] else None)


def test_the_grid_covers_every_axis_value():
    assert len(CASES) >= 48
    for axis in ("bound", "steps", "schedule", "stability", "confidence", "length", "new", "prompt", "sharpness",
                 "eos"):
        assert len({repr(c[axis]) for c in CASES}) == len({repr(v) for v in globals()[{
            "bound": "BOUNDS", "steps": "STEPS", "schedule": "SCHEDULES", "stability": "STABILITY",
            "confidence": "CONFIDENCE", "length": "LENGTHS", "new": "NEW_TOKENS", "prompt": "PROMPTS",
            "sharpness": "SHARPNESS", "eos": "END"}[axis]]})


@pytest.mark.parametrize("case", CASES, ids=[f"case{i}" for i in range(len(CASES))])
def test_batch_one_is_generate_step_by_step(models, case):
    model = models[case["sharpness"]]
    reference = _generate(model, case)
    ours = renoise_decode(model, [PROMPTS[case["prompt"]]], _settings(case))[0]
    prompt = len(PROMPTS[case["prompt"]])
    assert list(ours.token_ids) == reference.sequences[0, prompt:].tolist()  # the final ids
    assert len(ours.canvases) == len(reference.canvases)
    for canvas, steps in zip(ours.canvases, reference.canvases):
        assert canvas.start == canvas.index * case["length"] and len(canvas.steps) == len(steps)
        for step, ref in zip(canvas.steps, steps):
            assert step.steps_left == ref["steps_left"] == case["steps"] - step.step
            for name in ("read", "proposal", "accepted", "written", "argmax", "entropy"):
                assert torch.equal(getattr(step, name), ref[name][0]), (canvas.index, step.step, name)
            assert step.stopped == bool(ref["stopped"][0])
        assert canvas.stop_fired == bool(steps[-1]["stopped"][0])
        last = canvas.steps[-1].argmax  # the output is the last argmax canvas, padded after end-of-text
        if case["eos"]:
            assert bool(((canvas.ids == last) | (canvas.ids == 0)).all())
        else:
            assert torch.equal(canvas.ids, last)
    assert ours.forwards == sum(len(c) for c in reference.canvases)
    assert ours.tokens_per_forward == pytest.approx(float(reference.tokens_per_forward[0]))


def test_the_grid_exercises_what_it_claims(models):
    """Across a slice of the grid: acceptance counts vary, the stop fires, end-of-text pads."""
    accepted, stops, padded = set(), 0, 0
    for case in CASES[:24]:
        result = renoise_decode(models[case["sharpness"]], [PROMPTS[case["prompt"]]], _settings(case))[0]
        accepted |= {int(s.accepted.sum()) for c in result.canvases for s in c.steps}
        stops += sum(c.stop_fired and len(c.steps) < case["steps"] for c in result.canvases)
        padded += result.finished_by == "end_of_text" and 0 in result.token_ids
    assert len(accepted) >= 5 and stops >= 3 and padded >= 1


def _chi_square_critical(df: int, z: float = 3.09) -> float:
    """The chi-square quantile at 1 - 0.001 (z = 3.09), by Wilson and Hilferty's cube-root approximation."""
    return df * (1 - 2 / (9 * df) + z * math.sqrt(2 / (9 * df))) ** 3


def _homogeneous(a: Counter, b: Counter) -> tuple[float, float]:
    """Pearson's chi-square statistic of two samples over the same categories, and its 99.9% critical value.
    Categories with fewer than 5 expected counts are pooled into one."""
    na, nb = sum(a.values()), sum(b.values())
    keys = sorted(set(a) | set(b))
    big = [k for k in keys if (a[k] + b[k]) * min(na, nb) / (na + nb) >= 5]
    rest = [k for k in keys if k not in big]
    cells = [(a[k], b[k]) for k in big] + ([(sum(a[k] for k in rest), sum(b[k] for k in rest))] if rest else [])
    stat = 0.0
    for x, y in cells:
        total = x + y
        for observed, n in ((x, na), (y, nb)):
            expected = total * n / (na + nb)
            stat += (observed - expected) ** 2 / expected
    return stat, _chi_square_critical(max(len(cells) - 1, 1))


def test_batch_eight_draws_what_generate_draws_in_distribution(models):
    """Batch 8, 30 batches each side: generate() seeded once per batch (its rows share the global
    stream) against ours (each row its own seed). The outcome per row: the accepted counts at the
    first two steps and the first output token mod 3 (27 cells, the sparse ones pooled).
    Homogeneity by Pearson's chi-square at the 0.1% level: a fixed-seed, deterministic test that
    fails if the two samplers differ in distribution (or if these seeds sit in the 0.1% tail)."""
    case = {"bound": 2.0, "steps": 6, "schedule": (0.3, 1.1), "stability": 1, "confidence": 1.0, "length": 8,
            "new": 8, "prompt": "short", "sharpness": 12.0, "eos": (), "seed": 0}
    model = models[12.0]
    theirs, ours = Counter(), Counter()
    for batch in range(30):
        ref = _generate(model, case, rows=8, seed=500 + batch)
        steps = ref.canvases[0]
        for row in range(8):
            theirs[(int(steps[0]["accepted"][row].sum()), int(steps[1]["accepted"][row].sum()),
                    int(ref.sequences[row, 4]) % 3)] += 1
        results = renoise_decode(model, [PROMPTS["short"]] * 8,
                                 [_settings(case, seed=9000 + 8 * batch + row) for row in range(8)])
        for r in results:
            first = r.canvases[0].steps
            ours[(int(first[0].accepted.sum()), int(first[1].accepted.sum()), r.token_ids[0] % 3)] += 1
    stat, critical = _homogeneous(theirs, ours)
    assert len(theirs) >= 12  # the outcome varies: the test can tell distributions apart
    assert stat < critical, (stat, critical, theirs, ours)


def _same(a, b) -> None:
    assert a.token_ids == b.token_ids and a.finished_by == b.finished_by and a.forwards == b.forwards
    for ca, cb in zip(a.canvases, b.canvases, strict=True):
        assert torch.equal(ca.ids, cb.ids) and len(ca.steps) == len(cb.steps)
        for sa, sb in zip(ca.steps, cb.steps):
            for name in ("read", "proposal", "accepted", "written", "argmax", "entropy"):
                assert torch.equal(getattr(sa, name), getattr(sb, name))
            assert (sa.temperature, sa.stopped, sa.mean_entropy) == (sb.temperature, sb.stopped, sb.mean_entropy)


MIXED = [
    ([3, 4, 5], RenoiseSettings(seed=1, max_denoising_steps=5, confidence_threshold=2.0, max_new_tokens=18)),
    ([7], RenoiseSettings(seed=2, max_denoising_steps=2, entropy_bound=3.0, max_new_tokens=6)),
    ([1, 2], RenoiseSettings(seed=3, stability_threshold=0, confidence_threshold=5.0, acceptance_from="raw",
                             max_denoising_steps=7, max_new_tokens=12, eos_token_ids=(4, 9), pad_token_id=0)),
    ([9, 9, 9, 9], RenoiseSettings(seed=4, t_min=0.9, t_max=0.9, stability_threshold=2, confidence_threshold=1.5,
                                   max_new_tokens=30)),
]


def test_a_request_decodes_the_same_alone_and_in_any_batch():
    """Per-row settings, rows stopping at different steps (frozen rows draw nothing) and leaving the
    batch at different canvases: each request's record is the one it gets alone."""
    model = TableRenoiser()
    together = renoise_decode(model, [p for p, _ in MIXED], [s for _, s in MIXED])
    reordered = renoise_decode(model, [p for p, _ in MIXED[::-1]], [s for _, s in MIXED[::-1]])[::-1]
    for (prompt, settings), a, b in zip(MIXED, together, reordered):
        alone = renoise_decode(model, [prompt], settings)[0]
        _same(a, alone)
        _same(b, alone)
    lengths = {len(r.canvases) for r in together}
    assert len(lengths) > 1  # requests left the batch at different canvases
    assert len({len(c.steps) for r in together for c in r.canvases}) > 2  # and stopped at different steps


def test_canvas_lengths_are_grouped_and_results_keep_prompt_order():
    model = TableRenoiser()
    settings = [RenoiseSettings(seed=5, canvas_length=4, max_new_tokens=8), RenoiseSettings(seed=6, max_new_tokens=13),
                RenoiseSettings(seed=7, canvas_length=4, max_new_tokens=8)]
    results = renoise_decode(model, [[1], [2], [3]], settings)
    assert [r.settings.canvas_length for r in results] == [4, 6, 4]  # None took the model's canvas length
    assert [len(r.token_ids) for r in results] == [8, 18, 8]  # generate() keeps whole canvases: ceil(13 / 6) = 3
    _same(results[1], renoise_decode(model, [[2]], settings[1])[0])


def test_raw_acceptance_ranks_by_the_raw_logits_entropy():
    from dllm_viz.core.renoise import token_entropy

    model = TableRenoiser(self_conditioning=0.0)  # logits depend on the canvas read only
    for source in ("raw", "tempered"):
        result = renoise_decode(model, [[1, 2]], RenoiseSettings(seed=8, acceptance_from=source, t_min=0.2, t_max=2.0,
                                                                  max_denoising_steps=4, max_new_tokens=6))[0]
        context = model.encode(torch.tensor([[1, 2]]), torch.ones(1, 2, dtype=torch.bool), None, canvas_length=6)
        for step in result.canvases[0].steps:
            logits = model.denoise(step.read[None], context, None)
            expected = token_entropy(logits if source == "raw" else logits / step.temperature)[0]
            assert torch.allclose(step.entropy, expected, atol=1e-6)
            assert step.mean_entropy == pytest.approx(float(token_entropy(logits / step.temperature).mean()), abs=1e-6)


def test_end_of_text_pads_the_rest_of_the_canvas_and_ends_the_request():
    model = TableRenoiser()
    everything = tuple(range(1, model.vocab_size))  # every id but 0 ends the text
    result = renoise_decode(model, [[3]], RenoiseSettings(seed=9, eos_token_ids=everything, pad_token_id=0,
                                                          max_denoising_steps=2))[0]
    assert result.finished_by == "end_of_text" and len(result.canvases) == 1
    ids = list(result.token_ids)
    first = next(i for i, t in enumerate(ids) if t in everything)
    assert all(t == 0 for t in ids[first + 1:]) and ids[first] != 0
    assert result.tokens_per_forward == (first + 1) / result.forwards
    assert torch.equal(result.canvas_at(0, len(result.canvases[0].steps)), result.canvases[0].ids)
    assert torch.equal(result.canvas_at(0, 0), result.canvases[0].steps[0].read)
    with pytest.raises(ValueError, match=r"^step=3 is invalid"):
        result.canvas_at(0, 3)


@pytest.mark.parametrize("prompts, settings, message", [
    ([[1, 99]], RenoiseSettings(), r"prompt token 99 is invalid: expected an integer id in \[0, 24\)"),
    ([[]], RenoiseSettings(), r"prompt=\[\] is invalid"),
    (["hello"], RenoiseSettings(), r"got text, but the model has no tokenizer"),
    ([[1], [2]], [RenoiseSettings()], r"settings is invalid: expected one RenoiseSettings or 2"),
    ([], RenoiseSettings(), r"prompts is invalid"),
])
def test_bad_input_fails_before_any_forward(prompts, settings, message):
    model = TableRenoiser()
    with pytest.raises(ValueError, match=message):
        renoise_decode(model, prompts, settings)
    assert model.calls == []


def test_a_masked_model_is_refused():
    from dllm_viz.models import load_model

    with pytest.raises(ValueError, match=r"model=EmbeddedDenoiser is invalid: expected a Renoiser"):
        renoise_decode(load_model(), [[1]], RenoiseSettings())
