"""SGLang's own Gemma4Renoise step against dllm-viz's renoising step (issue 36; run by tests/test_sglang_env.py).

SGLang 0.5.23's `sglang/srt/dllm/algorithm/gemma4_renoise.py` runs DiffusionGemma's sampler per
request with its own `torch.Generator` (seeded from the configured seed, else from the request id),
draws the proposal by an exponential race (`_sample_denoiser`: `argmax(p / Exp(1))`, which is what
`torch.multinomial(p, 1)` computes inside) and the noise with `torch.randint`, in the order
transformers' `generate()` draws them: initial canvas; then per step proposal, noise.

What is compared exactly (bit for bit):
  - `_sample_denoiser` and `core.renoise.draw_proposal` on the same probabilities and generator state;
  - the whole step loop, with SGLang's statistics replaced by ours (the same temperature,
    probabilities, entropies and argmax go in): SGLang's own acceptance (sort, cumsum, scatter),
    renoise, stop rule and draw order give our canvases, accepted sets, argmax canvases and stop
    step, at batch 1 and at batch 4 (both give each request its own generator);
  - the same loop with SGLang's own statistics: the same tokens and stop steps on these seeds; what
    makes this hold is asserted (no accepted set within float rounding of the bound).
What agrees only to float rounding: the statistics themselves. SGLang computes the temperature in
double and casts it (transformers, and we, in float32 arithmetic: at most one ulp apart), the
probabilities as exp(log_softmax) (we softmax), the entropy as -sum(log p * p) (we follow
`Categorical.entropy`), the argmax on the raw logits (we on the tempered ones, as transformers),
and self-conditioning from soft embeddings of those probabilities (transformers from the logits).
What is only equal in distribution: batches against transformers' `generate()`, which draws all
rows from the one global generator; SGLang's CUDA paths (compiled statistics, the `div_argmax`
kernel, bf16 soft probabilities) do not run on a CPU.
"""
from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from sglang.srt.dllm.algorithm import gemma4_renoise as g4
from sglang.srt.dllm.config import DllmConfig

from dllm_viz.core import renoise as R
from dllm_viz.core.renoise import RenoiseSettings
from dllm_viz.core.renoise_decoder import renoise_decode
from dllm_viz.models.renoiser import RenoiseContext

V, L = 40, 8


def algorithm(**config) -> g4.Gemma4Renoise:
    dllm = DllmConfig(algorithm="Gemma4Renoise", algorithm_config=config, block_size=L, mask_id=0,
                      max_running_requests=8, requires_separate_context_encoding=True)
    algo = g4.Gemma4Renoise(dllm)
    algo.vocab_size = V
    embedding = torch.nn.Embedding(V, 16)
    embedding.embed_scale = 4.0
    algo.embed_tokens = embedding
    return algo


class Script:
    """Logits that depend on the canvas only (self-conditioning left out on both sides): a token table
    and a position bias, element-wise, so a row's logits never depend on the other rows. "stable":
    the bias dominates, the argmax settles and the stop rule fires at different steps per request;
    "noisy": the canvas dominates, the argmax keeps moving and every step runs."""

    def __init__(self, kind: str = "stable") -> None:
        g = torch.Generator().manual_seed(0)
        table, bias = {"stable": (0.15, 3.0), "noisy": (3.0, 3.0)}[kind]
        self.table = torch.randn(V, V, generator=g) * table
        self.bias = torch.randn(L, V, generator=g) * bias

    def __call__(self, canvas: torch.Tensor) -> torch.Tensor:
        return self.table[canvas] + self.bias  # (B, L, V)


class ScriptRenoiser:
    """The script behind dllm-viz's `Renoiser` protocol."""

    name, vocab_size, canvas_length, device, tokenizer = "script", V, L, torch.device("cpu"), None

    def __init__(self, script: Script) -> None:
        self.script = script

    def generation_defaults(self) -> dict:
        return {}

    def encode(self, ids, attention, context, *, canvas_length):
        return RenoiseContext(cache=None, attention=attention, length=ids.shape[1], canvas_length=canvas_length,
                              masks=True)

    def denoise(self, canvas, context, self_conditioning):
        return self.script(canvas)

    def select(self, context, rows):
        return RenoiseContext(cache=None, attention=context.attention[rows], length=context.length,
                              canvas_length=context.canvas_length)


def run_sglang(algo: g4.Gemma4Renoise, script: Script, rids: list[str]) -> list[list[dict]]:
    """SGLang's loop over one canvas, as its scheduler calls `step`: each request's steps."""
    batch = SimpleNamespace(batch_size=len(rids), input_ids=torch.zeros(len(rids) * L, dtype=torch.long), rids=rids)
    states = algo.init_step_state(batch)
    steps: list[list[dict]] = [[] for _ in rids]
    while True:
        canvas = torch.stack([s["current"] for s in states])
        before = [s["finished"] for s in states]
        done = algo.step(batch, script(canvas).reshape(-1, V), states)
        for b, state in enumerate(states):
            if not before[b]:
                steps[b].append({"read": canvas[b], "current": state["current"].clone(), "argmax": state["argmax"],
                                 "finished": state["finished"], "left": state["step"]})
        if all(done):
            return steps


def run_ours(algo: g4.Gemma4Renoise, script: Script, rids: list[str]) -> list:
    batch = SimpleNamespace(rids=rids)
    settings = [RenoiseSettings(entropy_bound=algo.entropy_bound, t_min=algo.t_min, t_max=algo.t_max,
                                max_denoising_steps=algo.max_denoising_steps,
                                stability_threshold=algo.stability_threshold,
                                confidence_threshold=algo.confidence_threshold, canvas_length=L, max_new_tokens=L,
                                seed=algo._request_seed(batch, i)) for i in range(len(rids))]
    return renoise_decode(ScriptRenoiser(script), [[1]] * len(rids), settings)


def assert_same(sglang: list[list[dict]], ours: list) -> None:
    for theirs, result in zip(sglang, ours, strict=True):
        steps = result.canvases[0].steps
        assert len(steps) == len(theirs)
        for k, (mine, ref) in enumerate(zip(steps, theirs)):
            assert torch.equal(mine.read, ref["read"]), k
            assert torch.equal(mine.argmax, ref["argmax"]), k
            # A finished request's canvas becomes its argmax; until then it is the renoised canvas.
            assert torch.equal(mine.argmax if ref["finished"] else mine.written, ref["current"]), k
            if ref["left"] > 0:  # at the last step SGLang finishes either way: its flag cannot tell the rule fired
                assert mine.stopped == ref["finished"], k
        assert torch.equal(result.canvases[0].ids, theirs[-1]["current"])


def ours_statistics(logits: torch.Tensor, temperatures: torch.Tensor):
    tempered = R.temper(logits, temperatures)
    return torch.softmax(tempered, -1, dtype=torch.float32), R.token_entropy(tempered), tempered.argmax(-1)


CONFIGS = [
    dict(max_denoising_steps=6, sampler_config={"entropy_bound": 0.5},
         temperature_schedule={"t_min": 0.4, "t_max": 0.8},
         stopping_config={"confidence_threshold": 1.0, "stability_threshold": 1}),
    dict(max_denoising_steps=9, sampler_config={"entropy_bound": 2.0},
         temperature_schedule={"t_min": 0.2, "t_max": 1.5},
         stopping_config={"confidence_threshold": 2.0, "stability_threshold": 2}),
    dict(max_denoising_steps=4, sampler_config={"entropy_bound": 0.05}, stopping_config={"stability_threshold": 0}),
    dict(max_denoising_steps=12),  # SGLang's defaults, those of transformers' generate()
]


@pytest.mark.parametrize("kind", ["stable", "noisy"])
@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("rids", [["r0"], ["a", "b", "c", "d"]])
def test_sglangs_acceptance_renoise_and_stop_on_our_statistics_are_ours(monkeypatch, config, rids, kind):
    algo = algorithm(**config, seed=None)  # each request seeded from its id
    monkeypatch.setattr(g4, "_denoiser_statistics", ours_statistics)
    monkeypatch.setattr(algo, "_temperatures", lambda logits, states: R.linear_temperature(
        torch.tensor([s["step"] for s in states]), torch.full((len(states),), algo.max_denoising_steps),
        torch.full((len(states),), float(algo.t_min), dtype=torch.float64),
        torch.full((len(states),), float(algo.t_max), dtype=torch.float64)))
    script = Script(kind)
    assert_same(run_sglang(algo, script, rids), run_ours(algo, script, rids))


def test_the_scripts_exercise_the_stop_and_acceptance():
    stops, accepted = set(), set()
    for config in CONFIGS:
        for kind in ("stable", "noisy"):
            for result in run_ours(algorithm(**config, seed=None), Script(kind), ["a", "b", "c", "d"]):
                canvas = result.canvases[0]
                stops.add((canvas.stop_fired, len(canvas.steps)))
                accepted |= {int(s.accepted.sum()) for s in canvas.steps}
    assert len({n for fired, n in stops if fired}) >= 3 and any(not fired for fired, _ in stops)
    assert len(accepted) >= 6


@pytest.mark.parametrize("kind", ["stable", "noisy"])
@pytest.mark.parametrize("config", CONFIGS)
def test_sglangs_own_step_gives_our_tokens(config, kind):
    algo, script, rids = algorithm(**config, seed=1234), Script(kind), ["x", "y"]  # one seed for all: SGLang's
    ours = run_ours(algo, script, rids)
    margin = min(float(((s.entropy.sort().values.cumsum(-1) - s.entropy.sort().values)
                        - algo.entropy_bound).abs().min())
                 for r in ours for s in r.canvases[0].steps)
    assert margin > 1e-4  # no accepted set within float rounding of the bound: equality is expected
    assert_same(run_sglang(algo, script, rids), ours)
    assert [len(r.canvases[0].steps) for r in ours] == [len(r.canvases[0].steps) for r in ours[:1]] * 2  # one seed


def test_the_exponential_race_is_ours_bit_for_bit():
    probs = torch.softmax(torch.randn(L, V, generator=torch.Generator().manual_seed(2)) * 4, -1)
    for seed in range(5):
        theirs = g4._sample_denoiser(probs, torch.Generator().manual_seed(seed))
        assert torch.equal(R.draw_proposal(probs[None], [torch.Generator().manual_seed(seed)])[0], theirs)
        assert torch.equal(theirs, torch.multinomial(probs, 1, generator=torch.Generator().manual_seed(seed))[:, 0])


@pytest.mark.parametrize("scale", [0.5, 4.0, 25.0])
def test_the_statistics_agree_to_float_rounding(scale):
    algo = algorithm(max_denoising_steps=7, temperature_schedule={"t_min": 0.3, "t_max": 1.3})
    logits = torch.randn(3, L, V, generator=torch.Generator().manual_seed(3)) * scale
    states = [{"step": s} for s in (7, 4, 1)]
    temperatures = algo._temperatures(logits, states)
    ours_t = R.linear_temperature(torch.tensor([7, 4, 1]), torch.full((3,), 7),
                                  torch.full((3,), 0.3, dtype=torch.float64),
                                  torch.full((3,), 1.3, dtype=torch.float64))
    assert torch.allclose(temperatures, ours_t, rtol=2 ** -23, atol=0)  # double then cast vs float32: one ulp at most
    probs, entropy, argmax = g4._denoiser_statistics(logits, temperatures)
    tempered = R.temper(logits, temperatures)
    torch.testing.assert_close(probs, torch.softmax(tempered, -1), rtol=1e-5, atol=1e-7)
    torch.testing.assert_close(entropy, R.token_entropy(tempered), rtol=1e-5, atol=1e-5)
    assert torch.equal(argmax, tempered.argmax(-1))  # raw vs tempered argmax: equal but for rounding ties
    weight = algo.embed_tokens.weight
    soft = algo._soft_embeddings(probs.reshape(-1, V)).view(3, L, -1)
    # transformers' decoder: softmax(self-conditioning logits, float32) @ embedding * embed_scale
    torch.testing.assert_close(soft, torch.softmax(tempered, -1, dtype=torch.float32) @ weight * 4.0,
                               rtol=1e-5, atol=1e-5)


def test_defaults_and_validation_differ_where_the_docs_say():
    algo = algorithm()
    assert (algo.max_denoising_steps, algo.entropy_bound, algo.t_min, algo.t_max) == (48, 0.1, 0.4, 0.8)
    assert (algo.stability_threshold, algo.confidence_threshold) == (1, 0.005)
    defaults = RenoiseSettings()
    assert (defaults.max_denoising_steps, defaults.entropy_bound, defaults.t_min, defaults.t_max,
            defaults.stability_threshold, defaults.confidence_threshold) == (48, 0.1, 0.4, 0.8, 1, 0.005)
    algorithm(stopping_config={"confidence_threshold": 0.0})  # SGLang: 0 disables the confident half (so do we)
    RenoiseSettings(confidence_threshold=0.0)
    with pytest.raises(ValueError, match="temperature_schedule must satisfy 0 <= t_min < t_max"):
        algorithm(temperature_schedule={"t_min": 0.7, "t_max": 0.7})  # SGLang (and transformers) refuse a flat one
    assert RenoiseSettings(t_min=0.7, t_max=0.7).t_max == 0.7  # we allow it: the lessons compare flat temperatures
