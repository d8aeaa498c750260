"""DecodeConfig: every knob of one decoding request, frozen and validated, plus the article's presets.

The defaults are the *correct* behaviour of the source article: confidence from the raw logits,
tokens drawn only where the schedule confirms, one generator per request. The teaching switches
(`confidence_from`, `sample_scope`, `rng`) reproduce the mistakes it warns about.
"""
from __future__ import annotations

import dataclasses
import reprlib
from dataclasses import dataclass
from typing import Any, Callable

# Registry keys. The modules that implement them (schedules.py, scoring.py) check at import time
# that their registries use exactly these names, so the UI and the validator never drift apart.
SCHEDULES = ("topk_decay", "fixed_steps", "threshold", "adaptive", "linear_time")
CONFIDENCES = ("max_prob", "margin", "entropy", "random")
# Where the confidence the schedule ranks by comes from (dllm_viz.core.step.SOURCES):
#   raw          the measure on softmax(logits): the article's rule;
#   tempered     the measure on softmax(logits / T): "polluted confidence" (article 2.2, 5.1);
#   sampled      p(drawn token) under the tempered, top-k/top-p-filtered distribution (Dream's maskgit_plus);
#   sampled_raw  p(drawn token) under the raw distribution (LLaDA's low_confidence, Fast-dLLM's threshold);
#   filtered     the measure on the tempered, filtered distribution (Dream's topk_margin and entropy).
# The two "sampled" sources rank by a token drawn at every masked position, so they need sample_scope="all".
CONFIDENCE_FROM = ("raw", "tempered", "sampled", "sampled_raw", "filtered")
DRAWN_SOURCES = ("sampled", "sampled_raw")
SAMPLE_SCOPES = ("selected", "all")
RNG_MODES = ("per_request", "shared")
BLOCK_SCHEDULES = ("continue", "restart")

MAX_SEED = 2**63 - 1
MAX_COUNT = 2**31 - 1  # bound on lengths and counts (gen_length, top_k, ...): far above any model's canvas


@dataclass(frozen=True, kw_only=True)
class Preset:
    """One row of the article's tuning table (section 4.2); values are the middle of each range."""

    temperature: float  # sampling temperature at the confirmed positions
    top_k_divisor: int  # initial top_k = gen_length // top_k_divisor
    decay: float  # k <- floor(k * decay) after each step
    note: str  # the article's one-line advice


PRESETS: dict[str, Preset] = {
    "quality": Preset(temperature=0.7, top_k_divisor=6, decay=0.95, note="slow but steady"),
    "balanced": Preset(temperature=1.0, top_k_divisor=4, decay=0.9, note="recommended default"),
    "speed": Preset(temperature=1.35, top_k_divisor=3, decay=0.85, note="fast, may repeat"),
    "creative": Preset(temperature=1.45, top_k_divisor=5, decay=0.92, note="diversity first"),
}



@dataclass(frozen=True, kw_only=True)
class ShippedPreset:
    """A reference implementation's own decoding rule at its documented defaults (issue 16).

    `fields(gen_length)` gives the DecodeConfig fields that reproduce it; `source` names the
    repository, file and function the rule follows; docs/shipped_samplers.md says where each one
    sits in the article's list of mistakes and what is not reproduced.
    """

    source: str  # repository, file and function
    note: str  # the rule in one line
    fields: Callable[[int], dict[str, Any]]  # gen_length -> DecodeConfig fields


def _llada(gen_length: int) -> dict[str, Any]:
    # generate(steps=128, gen_length=128, block_length=128, temperature=0., remasking="low_confidence"):
    # one block, one confirmation per step, rank by the raw probability of the Gumbel-max draw.
    return dict(schedule="fixed_steps", steps=max(1, gen_length), temperature=0.0, confidence="max_prob",
                confidence_from="sampled_raw", sample_scope="all")


def _dream(gen_length: int) -> dict[str, Any]:
    # diffusion_generate(steps=max_new_tokens, temperature=0.2, top_p=0.95) as the model card's example,
    # alg="maskgit_plus": rank by the tempered, top-p-filtered probability of the drawn token; the
    # number unmasked per step follows linspace(1, eps, steps + 1) (schedule "linear_time").
    return dict(schedule="linear_time", steps=max(1, gen_length), temperature=0.2, top_p=0.95,
                confidence="max_prob", confidence_from="sampled", sample_scope="all")


def _fast_dllm(gen_length: int) -> dict[str, Any]:
    # generate(..., threshold=0.9) with block_length=32 (v1/llada/eval_*.sh), temperature 0: LLaDA's
    # draw and raw probability, then every position of the block at >= 0.9, at least one per step.
    block = 32 if gen_length > 32 and gen_length % 32 == 0 else None  # one block when 32 does not divide
    return dict(schedule="threshold", threshold=0.9, min_k=1, block_length=block, temperature=0.0,
                confidence="max_prob", confidence_from="sampled_raw", sample_scope="all")


SHIPPED_PRESETS: dict[str, ShippedPreset] = {
    "llada": ShippedPreset(
        source="ML-GSAI/LLaDA, generate.py, generate() with remasking='low_confidence'",
        note="draw everywhere (Gumbel-max on logits / T), rank by the RAW probability of the drawn token",
        fields=_llada,
    ),
    "dream": ShippedPreset(
        source="Dream-org/Dream-v0-Instruct-7B, generation_utils.py, DreamGenerationMixin._sample and "
               "sample_tokens with alg='maskgit_plus'",
        note="temperature and top-p first, rank by the TEMPERED, filtered probability of the drawn token",
        fields=_dream,
    ),
    "fast_dllm": ShippedPreset(
        source="NVlabs/Fast-dLLM, llada/generate.py, get_transfer_index() with threshold=0.9",
        note="LLaDA's draw, then every position whose raw probability of the draw >= 0.9, at least one",
        fields=_fast_dllm,
    ),
}


FLOAT32_MAX = 3.4028234663852886e38  # the decoder computes in float32: larger values become inf
# Below this a positive temperature is argmax in all but name, and logits / T overflows float32.
MIN_TEMPERATURE = 1e-4
SHORT_CHARS = 60  # values echoed in an error message are clipped to about this many characters

_short = reprlib.Repr()  # keyword arguments need Python 3.12; set the limits one by one
for _attr in ("maxtuple", "maxlist", "maxarray", "maxdict", "maxset", "maxfrozenset", "maxdeque"):
    setattr(_short, _attr, 4)
_short.maxlevel, _short.maxstring, _short.maxlong, _short.maxother = 3, SHORT_CHARS, 40, SHORT_CHARS


def short(value: Any) -> str:
    """`repr(value)` clipped, for error messages and logs: a 5 MB string or a deeply nested list
    sent as a setting is echoed as a few dozen characters, never whole."""
    try:
        text = _short.repr(value)
    except (RecursionError, ValueError):  # ValueError: an int too long for str()
        bits = f" of {value.bit_length()} bits" if isinstance(value, int) else ""
        text = f"<{type(value).__name__}{bits}>"
    return text if len(text) <= 2 * SHORT_CHARS else text[:SHORT_CHARS] + f"...({len(text)} chars)"


def _bad(name: str, value: Any, allowed: str) -> ValueError:
    name = name if isinstance(name, str) and len(name) <= SHORT_CHARS else short(name)
    return ValueError(f"{name}={short(value)} is invalid: expected {allowed}")


def _check_int(name: str, value: Any, lo: int, hi: int | None = None) -> None:
    """An integer in [lo, hi]; `hi=None` means MAX_COUNT (the decoder keeps counts in int64 tensors)."""
    hi = MAX_COUNT if hi is None else hi
    ok = isinstance(value, int) and not isinstance(value, bool) and lo <= value <= hi
    if not ok:
        raise _bad(name, value, f"an integer in [{lo}, {hi}]")


def _check_float(name: str, value: Any, lo: float, hi: float | None, *, lo_open: bool) -> None:
    """A finite number in the range that float32 (the decoder's dtype) represents; `hi=None`
    means float32's largest value, since anything above it becomes inf inside the step."""
    hi = FLOAT32_MAX if hi is None else hi
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    ok = number and -FLOAT32_MAX <= value <= FLOAT32_MAX  # False for NaN and inf; no float() of a huge int
    if ok:
        ok = value > lo if lo_open else value >= lo
    if ok:
        ok = value <= hi
    if not ok:
        left = "(" if lo_open else "["
        raise _bad(name, value, f"a finite number in {left}{lo}, {hi:g}]")


def _check_temperature(name: str, value: Any) -> None:
    _check_float(name, value, 0.0, None, lo_open=False)
    if 0 < value < MIN_TEMPERATURE:
        raise _bad(name, value, f"0 (argmax) or a number in [{MIN_TEMPERATURE:g}, {FLOAT32_MAX:g}]")


def _check_choice(name: str, value: Any, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise _bad(name, value, "one of " + " | ".join(choices))


@dataclass(frozen=True, kw_only=True)
class DecodeConfig:
    """How one request is decoded. Keyword-only, frozen; invalid values raise ValueError."""

    gen_length: int = 64  # number of [MASK] positions appended to the prompt (0 = nothing to generate)
    block_length: int | None = None  # semi-autoregressive block size; None = one block; divides gen_length
    schedule: str = "topk_decay"  # how many positions to confirm per step: see schedules.py
    top_k: int | None = None  # initial k for topk_decay / adaptive; None = max(1, gen_length // 4)
    decay: float = 0.9  # topk_decay: after each step k = max(min_k, floor(k * decay)); in (0, 1]
    min_k: int = 1  # floor on confirmations per step (topk_decay, threshold, adaptive)
    steps: int | None = None  # fixed_steps, linear_time: total steps, a multiple of the block count; None = gen_length // 2
    threshold: float = 0.9  # threshold schedule: confirm every position with confidence >= threshold
    temperature: float = 1.0  # sampling temperature at confirmed positions; 0 = argmax
    temperature_stages: tuple[float, float, float] | None = None  # (early, middle, late); overrides temperature
    confidence: str = "max_prob"  # confidence measure from probabilities: see scoring.py
    top_p: float | None = None  # nucleus filter on the tempered distribution at drawn positions; None = off
    vocab_top_k: int | None = None  # keep the vocab_top_k most likely tokens at drawn positions; None = off
    seed: int = 0  # seeds this request's own torch.Generator
    block_schedule: str = "continue"  # "restart": k (topk_decay/adaptive) restarts at top_k in each block
    # End of text: finish early once every still-masked position of the current block predicts the
    # model's end-of-text token with raw probability >= early_stop_threshold; they and every later
    # mask are filled with it in that step (the forwards that would only confirm padding are saved).
    early_stop: bool = False
    early_stop_threshold: float = 0.9  # in (0, 1]; the raw probability of end-of-text at every such position
    # Teaching switches: the defaults are correct; the others are the article's mistakes.
    confidence_from: str = "raw"  # where confidence comes from: see CONFIDENCE_FROM above
    sample_scope: str = "selected"  # "all": draw at every masked position, then confirm (wasted work)
    rng: str = "per_request"  # "shared": one generator for the whole batch (results depend on neighbours)

    def __post_init__(self) -> None:
        _check_int("gen_length", self.gen_length, 0)
        if self.block_length is not None:
            _check_int("block_length", self.block_length, 1, max(1, self.gen_length))
            if self.gen_length % self.block_length:
                raise _bad("block_length", self.block_length, f"a divisor of gen_length={self.gen_length}")
        _check_choice("schedule", self.schedule, SCHEDULES)
        if self.top_k is not None:
            _check_int("top_k", self.top_k, 1)
        _check_float("decay", self.decay, 0.0, 1.0, lo_open=True)
        _check_int("min_k", self.min_k, 1)
        if self.steps is not None:
            _check_int("steps", self.steps, 1, max(1, self.gen_length))
            if self.steps % self.num_blocks:
                raise _bad("steps", self.steps, f"a multiple of the number of blocks ({self.num_blocks})")
        _check_float("threshold", self.threshold, 0.0, 1.0, lo_open=True)
        _check_temperature("temperature", self.temperature)
        if self.temperature_stages is not None:
            stages = self.temperature_stages
            if not isinstance(stages, (tuple, list)) or len(stages) != 3:
                raise _bad("temperature_stages", stages, "None or three temperatures (early, middle, late)")
            for name, value in zip(("early", "middle", "late"), stages):
                _check_temperature(f"temperature_stages[{name}]", value)
            object.__setattr__(self, "temperature_stages", tuple(float(t) for t in stages))
        _check_choice("confidence", self.confidence, CONFIDENCES)
        if self.top_p is not None:
            _check_float("top_p", self.top_p, 0.0, 1.0, lo_open=True)
        if self.vocab_top_k is not None:
            _check_int("vocab_top_k", self.vocab_top_k, 1)
        _check_int("seed", self.seed, 0, MAX_SEED)
        _check_choice("block_schedule", self.block_schedule, BLOCK_SCHEDULES)
        _check_choice("confidence_from", self.confidence_from, CONFIDENCE_FROM)
        _check_choice("sample_scope", self.sample_scope, SAMPLE_SCOPES)
        _check_choice("rng", self.rng, RNG_MODES)
        if not isinstance(self.early_stop, bool):
            raise _bad("early_stop", self.early_stop, "True or False")
        _check_float("early_stop_threshold", self.early_stop_threshold, 0.0, 1.0, lo_open=True)
        if self.confidence_from in DRAWN_SOURCES and self.sample_scope != "all":
            raise ValueError(
                f"confidence_from={self.confidence_from!r} needs sample_scope='all': the confidence of a sampled "
                f"token exists only where a token was sampled (got sample_scope={self.sample_scope!r})"
            )

    # ----- derived values -------------------------------------------------------------------
    @property
    def block_size(self) -> int:
        """Positions per block (gen_length when there is one block)."""
        return self.block_length or self.gen_length

    @property
    def num_blocks(self) -> int:
        return self.gen_length // self.block_length if self.block_length else 1

    @property
    def initial_k(self) -> int:
        return self.top_k if self.top_k is not None else max(1, self.gen_length // 4)

    @property
    def total_steps(self) -> int:
        """The step budget of the step-counted schedules (fixed_steps, linear_time): `steps`, else half
        of each block's positions (at least 1) over every block. The other schedules ignore it."""
        if self.steps is not None:
            return self.steps
        return self.num_blocks * max(1, self.block_size // 2)

    # ----- construction helpers -------------------------------------------------------------
    @classmethod
    def preset(cls, name: str, gen_length: int = 64, **overrides: Any) -> DecodeConfig:
        """A config from the article's tuning table (PRESETS) or a reference implementation's own
        rule (SHIPPED_PRESETS); `overrides` replace any field."""
        if name not in PRESETS and name not in SHIPPED_PRESETS:
            raise _bad("preset", name, "one of " + " | ".join([*PRESETS, *SHIPPED_PRESETS]))
        _check_int("gen_length", gen_length, 0)
        if name in SHIPPED_PRESETS:
            base = {"gen_length": gen_length, **SHIPPED_PRESETS[name].fields(gen_length)}
        else:
            p = PRESETS[name]
            base = dict(
                gen_length=gen_length,
                schedule="topk_decay",
                top_k=max(1, gen_length // p.top_k_divisor),
                decay=p.decay,
                temperature=p.temperature,
            )
        base.update(overrides)
        return cls.from_dict(base)

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls) if f.init)

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> DecodeConfig:
        """Build from a plain mapping (JSON, UI); an unknown key raises ValueError naming it."""
        if not isinstance(values, dict):
            raise _bad("config", values, "a mapping of DecodeConfig field names to values")
        known = set(cls.field_names())
        for key in values:
            if key not in known:
                raise _bad(key, values[key], "no such field; known fields: " + ", ".join(sorted(known)))
        values = dict(values)
        if isinstance(values.get("temperature_stages"), list):
            values["temperature_stages"] = tuple(values["temperature_stages"])
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        out = {name: getattr(self, name) for name in self.field_names()}
        if out["temperature_stages"] is not None:
            out["temperature_stages"] = list(out["temperature_stages"])
        return out

    def replace(self, **changes: Any) -> DecodeConfig:
        """A copy with `changes` applied (validated again)."""
        return self.from_dict({**self.to_dict(), **changes})
