"""The renoising decoder's settings and its step, as pure functions over tensors (issue 36).

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

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any

import torch

ACCEPTANCE_FROM = ("tempered", "raw")  # where the entropy that acceptance ranks by comes from
MAX_SEED = 2**63 - 1
MAX_COUNT = 2**31 - 1

# transformers' global defaults for unset generation parameters
# (`DiffusionGemmaGenerationConfig._get_default_generation_params`, 5.24); a checkpoint's
# generation_config.json overrides them (the adapter reads it, `models.diffusion_gemma`).
TRANSFORMERS_DEFAULTS: Mapping[str, Any] = {
    "max_new_tokens": 256, "max_denoising_steps": 48, "entropy_bound": 0.1, "t_min": 0.4, "t_max": 0.8,
    "stability_threshold": 1, "confidence_threshold": 0.005,
}


def _invalid(name: str, value: object, allowed: str) -> ValueError:
    return ValueError(f"{name}={value!r} is invalid: expected {allowed}")


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_real(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


@dataclass(frozen=True, kw_only=True)
class RenoiseSettings:
    """Every knob of one renoising request, frozen and validated (transformers' names and defaults)."""

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
        if not _is_real(self.entropy_bound) or self.entropy_bound <= 0:
            raise _invalid("entropy_bound", self.entropy_bound, "a finite number > 0")
        if not _is_real(self.t_min) or self.t_min < 0:
            raise _invalid("t_min", self.t_min, "a finite number >= 0")
        if not _is_real(self.t_max) or self.t_max < self.t_min or self.t_max <= 0:
            raise _invalid("t_max", self.t_max, f"a finite number >= t_min={self.t_min!r} and > 0")
        for name, low in (("max_denoising_steps", 1), ("stability_threshold", 0), ("max_new_tokens", 1)):
            value = getattr(self, name)
            if not _is_int(value) or not low <= value <= MAX_COUNT:
                raise _invalid(name, value, f"an integer in [{low}, {MAX_COUNT}]")
        if not _is_real(self.confidence_threshold) or self.confidence_threshold < 0:
            raise _invalid("confidence_threshold", self.confidence_threshold, "a finite number >= 0")
        if self.canvas_length is not None and (not _is_int(self.canvas_length) or not 1 <= self.canvas_length <= 2**16):
            raise _invalid("canvas_length", self.canvas_length, "None or an integer in [1, 65536]")
        if self.acceptance_from not in ACCEPTANCE_FROM:
            raise _invalid("acceptance_from", self.acceptance_from, " | ".join(ACCEPTANCE_FROM))
        if not _is_int(self.seed) or not 0 <= self.seed <= MAX_SEED:
            raise _invalid("seed", self.seed, f"an integer in [0, {MAX_SEED}]")
        ids = self.eos_token_ids
        if not isinstance(ids, tuple) or not all(_is_int(i) and 0 <= i <= MAX_COUNT for i in ids):
            raise _invalid("eos_token_ids", ids, "a tuple of token ids >= 0")
        if self.pad_token_id is not None and (not _is_int(self.pad_token_id) or self.pad_token_id < 0):
            raise _invalid("pad_token_id", self.pad_token_id, "None or a token id >= 0")

    def with_(self, **changes: Any) -> RenoiseSettings:
        """A copy with `changes` applied (and validated again)."""
        return replace(self, **changes)


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


def empty_history(threshold: torch.Tensor, rows: int, length: int, device: torch.device | str) -> torch.Tensor:
    """History `(S, B, L)` filled with -1 (no argmax ever equals it), S = max threshold: the state
    `StableAndConfidentStoppingCriteria` starts each canvas with (`reset`, then lazy allocation)."""
    depth = int(threshold.max()) if threshold.numel() else 0
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
