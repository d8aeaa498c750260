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
#   sampled_raw  p(drawn token) under the raw distribution (LLaDA's low_confidence, Fast-dLLM's threshold),
#                computed as their code does: dtype, ties, the mask token (step.REFERENCE_SOURCES);
#   filtered     the measure on the tempered, filtered distribution (Dream's topk_margin and entropy).
# The two "sampled" sources rank by a token drawn at every masked position, so they need sample_scope="all".
#   softmax      the measure on torch.softmax(logits): the raw distribution with SGLang's float ops (its
#                LowConfidence and JointThreshold gather softmax(logits) at the argmax), equal to raw but
#                for the last bits, so that a threshold decides exactly as SGLang does.
CONFIDENCE_FROM = ("raw", "tempered", "sampled", "sampled_raw", "filtered", "softmax")
DRAWN_SOURCES = ("sampled", "sampled_raw")
SAMPLE_SCOPES = ("selected", "all")
RNG_MODES = ("per_request", "shared")
BLOCK_SCHEDULES = ("continue", "restart")
# Revision rules (`revise`, dllm_viz.core.revision.RULES): what a step may take back or rewrite (issue 28).
#   none             a confirmed token is final (the article's loop);
#   remdm            ReMDM: decided tokens are re-masked with probability sigma, and as many more masks are
#                    confirmed, so the count of visible tokens keeps the schedule's plan (MDLM's marginals);
#   rcr              MDPO's Running Confidence Remasking: decided tokens compete with the masked candidates by
#                    the confidence they were decided with; the weakest are re-masked;
#   wino             WINO: draft by the schedule, a verify pass (each decided token hidden from itself)
#                    takes back those whose probability fell below verify_threshold;
#   joint_threshold  LLaDA 2.1 / SGLang's JointThreshold: also rewrite visible tokens whose raw argmax
#                    differs (token to token), for up to max_post_edit_steps more steps per block.
REVISIONS = ("none", "remdm", "rcr", "wino", "joint_threshold")
# How ReMDM sets sigma_t, the chance that a decided token is re-masked (kuleshov-group/remdm, diffusion.py):
#   cap      min(eta, sigma_max);  rescale  eta * sigma_max;  conf  softmax(-confidence) * sigma_max;
#   loop     eta, in a loop of remask_loop_steps steps once the block is remask_alpha_on visible.
REMASK_SIGMAS = ("cap", "rescale", "conf", "loop")
# Approximate key-value caches (issue 31; Fast-dLLM's generate_with_prefix_cache / _dual_cache): a step
# inside a block computes the current block and everything after it ("prefix") or the current block
# alone ("dual"), reading the rest from the keys and values cached at the block's first step.
CACHES = ("none", "prefix", "dual")
FORWARD_KINDS = ("full", "prefix", "dual")  # what one step's forward was (a cached trace records it per step)

MAX_SEED = 2**63 - 1
MAX_COUNT = 2**31 - 1  # bound on lengths and counts (gen_length, top_k, ...): far above any model's canvas
MAX_BUDGET = 4096  # bound on the extra steps a revision rule may add per block (loop steps, post-edit steps)


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


def _blocks_of(gen_length: int, size: int) -> int | None:
    """`size` when it splits gen_length into several blocks, else None (one block)."""
    return size if gen_length > size and gen_length % size == 0 else None


def _sglang_low_confidence(gen_length: int) -> dict[str, Any]:
    # LowConfidence(threshold=0.95) on LLaDA2's 32-position blocks: argmax; every mask of the block whose
    # softmax probability > 0.95, else the most probable one.
    return dict(schedule="threshold", threshold=0.95, threshold_strict=True, min_k=1,
                block_length=_blocks_of(gen_length, 32), temperature=0.0, confidence="max_prob",
                confidence_from="softmax")


def _llada21(gen_length: int) -> dict[str, Any]:
    # JointThreshold's defaults (threshold 0.5, edit_threshold 0, max_post_edit_steps 16, penalty_lambda 0)
    # on LLaDA2's 32-position blocks: masks above 0.5 (at least one), plus every visible token whose argmax
    # differs, until a step changes nothing or 16 edit-only steps are spent.
    return dict(_sglang_low_confidence(gen_length), threshold=0.5, revise="joint_threshold", edit_threshold=0.0,
                max_post_edit_steps=16, penalty_lambda=0.0)


def _wino(gen_length: int) -> dict[str, Any]:
    # decoding_wino(threshold=0.6, threshold_back=0.9, temperature=0., block_length=128): LLaDA's draw and raw
    # probability, every mask above 0.6 (at least one, at most WINO's cap), drafts below 0.9 taken back.
    return dict(schedule="threshold", threshold=0.6, threshold_strict=True, min_k=1,
                block_length=_blocks_of(gen_length, 128), temperature=0.0, confidence="max_prob",
                confidence_from="sampled_raw", sample_scope="all", revise="wino", verify_threshold=0.9)


def _remdm(gen_length: int) -> dict[str, Any]:
    # scripts/remdm-loop.sh: eta 0.02, alpha_on 0.9, nucleus 0.9 at T = 1, half the steps in the loop
    # (t_on 0.55, t_off 0.05); MDLM unmasks at random positions (confidence "random") on its log-linear
    # schedule, whose expected counts are linear_time's.
    steps = max(1, gen_length // 2)
    return dict(schedule="linear_time", steps=steps, temperature=1.0, top_p=0.9, confidence="random",
                revise="remdm", remask_sigma="loop", remask_eta=0.02, remask_alpha_on=0.9,
                remask_loop_steps=max(0, gen_length - steps))


def _rcr(gen_length: int) -> dict[str, Any]:
    # test_llada.py --rcr: diffusion_generate(steps, block_length=gen_length, temperature=0) with LLaDA's
    # max-probability confidence and an even split of the steps (mode "linear"); two positions per step.
    return dict(schedule="fixed_steps", steps=max(1, gen_length // 2), temperature=0.0, confidence="max_prob",
                revise="rcr")


# Shipped rules that need the fields of issue 28 (strict thresholds, revision rules). Kept apart from
# SHIPPED_PRESETS, whose names the playground turns into preset buttons that set only the schedule's knobs.
REVISION_PRESETS: dict[str, ShippedPreset] = {
    "llada21": ShippedPreset(
        source="sgl-project/sglang 0.5.23, python/sglang/srt/dllm/algorithm/joint_threshold.py, "
               "JointThreshold.step (LLaDA 2.1's decoding)",
        note="masks whose probability > 0.5 (at least one) and every visible token whose argmax differs, "
             "up to 16 edit-only steps per block; needs a model that can edit",
        fields=_llada21,
    ),
    "sglang_low_confidence": ShippedPreset(
        source="sgl-project/sglang 0.5.23, python/sglang/srt/dllm/algorithm/low_confidence.py, LowConfidence.step",
        note="argmax; every mask of the block whose probability > 0.95, else the most probable one",
        fields=_sglang_low_confidence,
    ),
    "wino": ShippedPreset(
        source="Feng-Hong/WINO-DLLM, LLaDA/decoding.py, decoding_wino()",
        note="draft every mask above 0.6 (capped), take back drafts whose verify probability < 0.9",
        fields=_wino,
    ),
    "remdm": ShippedPreset(
        source="kuleshov-group/remdm, diffusion.py, Diffusion._ddpm_caching_update with sampler='remdm-loop' "
               "(scripts/remdm-loop.sh)",
        note="MDLM's random unmasking; at 90% visible, a loop that re-masks each token with probability 0.02",
        fields=_remdm,
    ),
    "rcr": ShippedPreset(
        source="autonomousvision/mdpo, src/mdlm_generation_utils.py, diffusion_generate(rcr=True)",
        note="decided tokens compete with the masks by the confidence they were decided with; the weakest "
             "are re-masked",
        fields=_rcr,
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
    # Taking back (issue 28, core/revision.py): which rule may re-mask or rewrite decided tokens, and its knobs
    # (each rule reads only its own). Every rule acts inside the current block.
    revise: str = "none"  # the revision rule: see REVISIONS above
    threshold_strict: bool = False  # threshold schedule: confirm confidence > threshold (SGLang, WINO), not >=
    remask_sigma: str = "cap"  # remdm: how sigma_t is set, see REMASK_SIGMAS
    remask_eta: float = 0.02  # remdm: eta in (0, 1] (cap on sigma, share of sigma_max, or the loop's sigma)
    remask_alpha_on: float = 0.9  # remdm loop: visible share of the block at which the loop starts, in (0, 1)
    remask_loop_steps: int = 8  # remdm loop: loop steps per block (>= 0)
    verify_threshold: float = 0.9  # wino: take back a decided token whose verify probability < this; in (0, 1]
    edit_threshold: float = 0.0  # joint_threshold: rewrite where p(argmax) > this and argmax != token; in [0, 1]
    max_post_edit_steps: int = 16  # joint_threshold: edit-only steps a block may take after its last mask (>= 0)
    penalty_lambda: float = 0.0  # joint_threshold: subtracted from the logit of the previous position's token
    # Approximate key-value cache (CACHES above): each block's first step is a full forward that
    # refreshes the cache; its later steps compute a window against it (the model must run one).
    cache: str = "none"
    cache_refresh: int | None = None  # also refresh every this many steps of a block; None: at block starts only
    cache_drift: bool = False  # diagnostic: compute the exact forward beside each cached one, record the drift
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
        _check_choice("revise", self.revise, REVISIONS)
        if not isinstance(self.threshold_strict, bool):
            raise _bad("threshold_strict", self.threshold_strict, "True or False")
        _check_choice("remask_sigma", self.remask_sigma, REMASK_SIGMAS)
        _check_float("remask_eta", self.remask_eta, 0.0, 1.0, lo_open=True)
        _check_float("remask_alpha_on", self.remask_alpha_on, 0.0, 1.0, lo_open=True)
        if self.remask_alpha_on >= 1.0:
            raise _bad("remask_alpha_on", self.remask_alpha_on, "a finite number in (0, 1): the loop needs masks left")
        _check_int("remask_loop_steps", self.remask_loop_steps, 0, MAX_BUDGET)
        _check_float("verify_threshold", self.verify_threshold, 0.0, 1.0, lo_open=True)
        _check_float("edit_threshold", self.edit_threshold, 0.0, 1.0, lo_open=False)
        _check_int("max_post_edit_steps", self.max_post_edit_steps, 0, MAX_BUDGET)
        _check_float("penalty_lambda", self.penalty_lambda, 0.0, None, lo_open=False)
        _check_choice("cache", self.cache, CACHES)
        if self.cache_refresh is not None:
            _check_int("cache_refresh", self.cache_refresh, 1)
        if not isinstance(self.cache_drift, bool):
            raise _bad("cache_drift", self.cache_drift, "True or False")
        if self.cache == "dual" and self.block_length is None:
            raise ValueError(
                "cache='dual' needs block_length (semi-autoregressive blocks): the dual cache keeps the keys of the "
                "blocks after the current one, and without blocks there are none; expected a block_length, or "
                "cache='prefix' | 'none'"
            )
        if self.cache != "none" and self.revise != "none":
            raise ValueError(
                f"cache={self.cache!r} with revise={self.revise!r} is invalid: a revision rule scores decided tokens "
                "(to take them back or rewrite them), and a cached step scores only the current block's masks, "
                "against keys computed before those tokens changed; expected revise='none', or cache='none'"
            )
        if self.cache != "none" and self.early_stop:
            raise ValueError(
                f"cache={self.cache!r} with early_stop=True is invalid: the early stop fills every later mask with what "
                "it predicts, and a cached step computes no prediction past the current block; expected "
                "early_stop=False, or cache='none'"
            )
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
    def revision_adds_steps(self) -> bool:
        """Whether the revision rule may take steps beyond the schedule's plan (WINO's re-drafts,
        joint_threshold's edit-only steps, remdm's loop), so the step count is known only afterwards."""
        return self.revise in ("wino", "joint_threshold") or (self.revise == "remdm" and self.remask_sigma == "loop")

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
        rule (SHIPPED_PRESETS, REVISION_PRESETS); `overrides` replace any field."""
        shipped = {**SHIPPED_PRESETS, **REVISION_PRESETS}
        if name not in PRESETS and name not in shipped:
            raise _bad("preset", name, "one of " + " | ".join([*PRESETS, *shipped]))
        _check_int("gen_length", gen_length, 0)
        if name in shipped:
            base = {"gen_length": gen_length, **shipped[name].fields(gen_length)}
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
