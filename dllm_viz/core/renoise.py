"""The renoising decoder's settings and its step, as pure functions over tensors (docs/renoise.md).

DiffusionGemma (transformers 5.24, `models/diffusion_gemma/generation_diffusion_gemma.py`) never
masks: a canvas of `L` tokens starts uniformly random, and each step (`_denoising_step`)
  (a) runs the decoder on the canvas, the previous step's tempered logits as self-conditioning;
  (b) divides the logits by a temperature falling linearly from `t_max` to `t_min`
      (`LinearTemperatureScheduleLogitsProcessor`);
  (c) draws a full proposal from softmax(tempered logits) (`torch.multinomial`);
  (d) accepts the lowest-entropy positions while `cumsum(entropy) - max(entropy) <= entropy_bound`
      (`EntropyBoundSampler.accept_canvas`, the EB-sampler, arXiv:2505.24857);
  (e) gives every other position a fresh uniform token (`EntropyBoundSampler.renoise_canvas`);
  (f) stops when the argmax canvas equals the last `stability_threshold` ones and the mean entropy
      is below `confidence_threshold` (`StableAndConfidentStoppingCriteria`).
Nothing is final: a position accepted now can be renoised at the next step.

Each function below cites the transformers function it follows and gives the same floats, bit for
bit, on the same inputs (tests/test_core_renoise.py checks each against the transformers object).
The one deliberate departure is the switch `acceptance_from`: transformers and SGLang rank by the
entropy of the *tempered* logits; "raw" ranks by the entropy of the raw logits, the source article's
rule (temperature shapes only what is drawn). Randomness comes from one `torch.Generator` per row:
the draws and their order are those `generate()` takes from the global generator at batch 1.

Shapes: B rows (requests), L canvas length, V vocabulary, S stability history length.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any

import torch

from dllm_viz.core.knobs import MAX_SEED, bad, check_int
from dllm_viz.core.rules.renoise import ACCEPTANCE_FROM, KNOBS as SPECS, TRANSFORMERS_DEFAULTS  # noqa: F401

MAX_COUNT = 2**31 - 1


@dataclass(frozen=True, kw_only=True)
class RenoiseSettings:
    """Every setting of one renoising request, resolved (transformers' names and defaults), frozen.

    The knobs are checked by their specs (`core.rules.renoise.KNOBS`, the same that check the
    `DecodeConfig` fields of the same names): one validation. `settings_for` derives them from a
    `DecodeConfig` and the checkpoint's generation defaults; `settings_from` from the defaults alone.
    """

    entropy_bound: float = 0.1  # EntropyBoundSamplerConfig.entropy_bound: > 0; larger accepts more per step
    t_min: float = 0.4  # temperature at the last step's end of the linear schedule, >= 0
    t_max: float = 0.8  # temperature at the first step, >= t_min and > 0 (t_min == t_max: a flat temperature)
    max_denoising_steps: int = 48  # N: steps per canvas at most (the stop rule may end a canvas sooner)
    stability_threshold: int = 1  # S: the argmax canvas must equal the last S ones to stop (0: always stable)
    confidence_threshold: float = 0.005  # ... and the mean entropy of the tempered logits be below this (0: never)
    canvas_length: int | None = None  # L: tokens per canvas; None takes the checkpoint's config.canvas_length
    acceptance_from: str = "tempered"  # "tempered" (transformers, SGLang) | "raw" (the article's rule)
    max_new_tokens: int = 256  # canvases = ceil(max_new_tokens / L); generate() keeps whole canvases
    seed: int = 0  # the request's generator: draws what torch.manual_seed(seed) draws in generate()
    eos_token_ids: tuple[int, ...] = ()  # a canvas holding one of these ends the request (generation_config)
    pad_token_id: int | None = None  # written after the first end-of-text token, as generate() does

    def __post_init__(self) -> None:
        for knob in SPECS:
            value = getattr(self, knob.name)
            if value is None and knob.name != "canvas_length":
                raise bad(knob.name, value, "a value (None is resolved from the checkpoint before a decode)")
            knob.check(value, self)
        check_int("max_new_tokens", self.max_new_tokens, 1)
        check_int("seed", self.seed, 0, MAX_SEED)
        ids = self.eos_token_ids
        if not isinstance(ids, tuple) or not all(_is_id(i) for i in ids):
            raise bad("eos_token_ids", ids, "a tuple of token ids >= 0")
        if self.pad_token_id is not None and not _is_id(self.pad_token_id):
            raise bad("pad_token_id", self.pad_token_id, "None or a token id >= 0")

    def with_(self, **changes: Any) -> RenoiseSettings:
        """A copy with `changes` applied (and validated again)."""
        return replace(self, **changes)


def _is_id(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_COUNT


KNOBS = tuple(f.name for f in fields(RenoiseSettings))


def settings_from(defaults: Mapping[str, Any], **overrides: Any) -> RenoiseSettings:
    """Settings as `generate()` resolves them: `overrides` > `defaults` (a checkpoint's generation
    config, see `models.diffusion_gemma.DiffusionGemmaRenoiser.generation_defaults`) > transformers'
    global defaults. `eos_token_id` may be an int or a list, as in a generation config."""
    unknown = sorted(set(overrides) - set(KNOBS) - {"eos_token_id"})
    if unknown:
        raise ValueError(f"{unknown[0]}=... is invalid: expected one of {' | '.join(KNOBS)}")
    merged: dict[str, Any] = {**TRANSFORMERS_DEFAULTS}
    merged.update({k: v for k, v in defaults.items() if v is not None})
    merged.update(overrides)
    eos = merged.pop("eos_token_id", None)
    if "eos_token_ids" not in merged and eos is not None:
        merged["eos_token_ids"] = tuple(eos) if isinstance(eos, (list, tuple)) else (eos,)
    return RenoiseSettings(**{k: v for k, v in merged.items() if k in KNOBS})


def settings_for(config: Any, defaults: Mapping[str, Any]) -> RenoiseSettings:
    """The settings a `DecodeConfig` asks for on a model whose generation defaults are `defaults`: each
    renoise knob the config sets, else the checkpoint's, else transformers' (None stays None only for the
    canvas length, resolved against the model); `gen_length` is max_new_tokens, `seed` the seed. A value
    that is valid alone but not with the checkpoint's (t_max below its t_min) is a ValueError naming it."""
    set_ = {knob.name: getattr(config, knob.name) for knob in SPECS if getattr(config, knob.name) is not None}
    if config.gen_length < 1:
        raise bad("gen_length", config.gen_length, "an integer >= 1 on a renoise canvas (whole canvases of new tokens)")
    return settings_from(defaults, **set_, max_new_tokens=config.gen_length, seed=config.seed)


# --- the step's pure functions ----------------------------------------------------------------


def linear_temperature(
    steps_left: torch.Tensor, total: torch.Tensor, t_min: torch.Tensor, t_max: torch.Tensor
) -> torch.Tensor:
    """Temperature per row `(B,)` float32: `t_min + (t_max - t_min) * (n / N)`, n = steps left (N..1).

    Follows `LinearTemperatureScheduleLogitsProcessor.__call__`, which gets `cur_step` as an int32
    tensor: `n / N` is a float32 division and the rest float32 arithmetic on the Python floats cast
    once, `t_max - t_min` subtracted in double before the cast. `t_min`, `t_max` are float64 `(B,)`,
    `steps_left` and `total` integer `(B,)`. At the first step the temperature is t_max; it never
    reaches t_min (the last step has n = 1).
    """
    fraction = steps_left.to(torch.float32) / total.to(torch.float32)  # (B,)
    span = (t_max - t_min).to(torch.float32)  # (B,) double difference, one rounding
    return t_min.to(torch.float32) + span * fraction


def temper(logits: torch.Tensor, temperature: torch.Tensor) -> torch.Tensor:
    """`logits (B, L, V) / temperature (B,)`: the processed logits of `_denoising_step` (a division,
    as `scores / temperature`, never a product by the reciprocal)."""
    return logits / temperature[:, None, None]


def token_entropy(logits: torch.Tensor) -> torch.Tensor:
    """Entropy of softmax(logits) per position `(..., L)`, nats: the value of
    `torch.distributions.Categorical(logits=logits).entropy()` that `accept_canvas` and the stop
    criterion compute, with its float operations (normalise by logsumexp, clamp, p * log p)."""
    log_p = logits - logits.logsumexp(dim=-1, keepdim=True)  # (..., L, V)
    probs = torch.softmax(log_p, dim=-1)
    return -(log_p.clamp(min=torch.finfo(log_p.dtype).min) * probs).sum(-1)


def uniform_canvas(generators: Sequence[torch.Generator], vocab_size: int, length: int,
                   device: torch.device | str) -> torch.Tensor:
    """A canvas `(B, L)` of uniformly random token ids, row b from `generators[b]`:
    `EntropyBoundSampler.initialize_canvas` (`torch.randint(0, V, (1, L))` per row at batch 1)."""
    rows = [torch.randint(0, vocab_size, (1, length), device=device, generator=g) for g in generators]
    return torch.cat(rows) if rows else torch.empty(0, length, dtype=torch.long, device=device)


def draw_proposal(probs: torch.Tensor, generators: Sequence[torch.Generator]) -> torch.Tensor:
    """One token per position `(B, L)` from `probs (B, L, V)`, row b from `generators[b]`.

    `torch.multinomial(p, 1)` is an exponential race: ATen draws `q ~ Exp(1)` of p's shape and takes
    `argmax(p / q)` (Distributions.cpp, the one-sample fast path). Filling row b's noise from its
    own generator gives at batch 1 exactly the tokens `_denoising_step`'s multinomial gives after
    `torch.manual_seed`, and SGLang's `_sample_denoiser` on the same probabilities.
    """
    noise = torch.empty_like(probs)  # (B, L, V)
    for row, generator in enumerate(generators):
        noise[row].exponential_(1.0, generator=generator)
    return (probs / noise).argmax(dim=-1)


def entropy_bound_accept(entropy: torch.Tensor, bound: torch.Tensor) -> torch.Tensor:
    """Accepted positions `(B, L)` bool: the lowest-entropy ones while
    `sum(entropy) - max(entropy) <= bound` (`EntropyBoundSampler.accept_canvas`).

    Sorted ascending, the running maximum is the current entry, so the test is
    `cumsum - sorted <= bound`; the lowest-entropy position is always accepted. `entropy (B, L)`,
    `bound (B,)` (float64 values compared as the float32 tensor meets a Python float: cast to float32).
    """
    ordered, order = torch.sort(entropy, dim=-1, descending=False)  # (B, L)
    keep_sorted = ordered.cumsum(dim=-1) - ordered <= bound.to(entropy.dtype)[:, None]
    return torch.scatter(torch.zeros_like(keep_sorted), -1, order, keep_sorted)


def renoise(proposal: torch.Tensor, noise: torch.Tensor, accepted: torch.Tensor) -> torch.Tensor:
    """The next canvas `(B, L)`: the proposal where accepted, a fresh uniform token elsewhere
    (`accept_canvas` then `renoise_canvas`: the current canvas survives nowhere)."""
    return torch.where(accepted, proposal, noise)


@dataclass(frozen=True)
class StopState:
    """`StableAndConfidentStoppingCriteria` after one step (all `(B,)`)."""

    stable: torch.Tensor  # bool: the argmax canvas equals each of the last S ones
    confident: torch.Tensor  # bool: mean entropy of the tempered logits < confidence_threshold
    mean_entropy: torch.Tensor  # float32: that mean
    history: torch.Tensor = field(repr=False)  # (S, B, L) the last S argmax canvases, oldest first


def empty_history(threshold: torch.Tensor, rows: int, length: int, device: torch.device | str,
                  depth: int = 0) -> torch.Tensor:
    """History `(S, B, L)` filled with -1 (no argmax ever equals it), S = max threshold (at least `depth`: a
    deeper history changes no verdict, each row compares its own last `threshold` entries): the state
    `StableAndConfidentStoppingCriteria` starts each canvas with (`reset`, then lazy allocation)."""
    depth = max(depth, int(threshold.max()) if threshold.numel() else 0)
    return torch.full((depth, rows, length), -1, dtype=torch.long, device=device)


def stable_and_confident(
    argmax: torch.Tensor, tempered_entropy: torch.Tensor, history: torch.Tensor,
    threshold: torch.Tensor, confidence_threshold: torch.Tensor,
) -> StopState:
    """The stop rule of `StableAndConfidentStoppingCriteria.__call__`, per row thresholds.

    `argmax (B, L)`, `tempered_entropy (B, L)` (always the tempered logits' entropy, as shipped,
    whatever `acceptance_from` says), `history (S, B, L)`, `threshold (B,)` int (row b compares
    its last `threshold[b]` entries; 0 is always stable), `confidence_threshold (B,)` float64.
    """
    depth = history.shape[0]
    if depth == 0:
        stable = torch.ones(argmax.shape[0], dtype=torch.bool, device=argmax.device)
        rolled = history
    else:
        equal = (history == argmax[None]).all(dim=-1)  # (S, B)
        counted = torch.arange(depth, device=argmax.device)[:, None] >= (depth - threshold)[None, :]  # (S, B)
        stable = (equal | ~counted).all(dim=0)
        rolled = torch.cat([history[1:], argmax[None]])  # (S, B, L) oldest dropped
    mean = tempered_entropy.mean(dim=-1)  # (B,)
    confident = mean < confidence_threshold.to(mean.dtype)
    return StopState(stable=stable, confident=confident, mean_entropy=mean, history=rolled)
