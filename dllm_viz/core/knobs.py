"""Knob specs: one entry per decoding knob, from which everything that knows a knob is derived.

A `Knob` says what a knob is (type, range, default, what it means) and where it goes: the
`DecodeConfig` field and its validation (`core.config`), the CLI flag (`dllm_viz.cli`), the step's
parameter column (`core.rules.base.columns`), the serving policy's key (`serve.policy`), the page's
widget, its greying and its help note (`app`). The knobs of the step itself are `CORE` below; a
schedule or a revision rule declares its own knobs in its plug-in module (`core.rules`), and they
join the table after the knob that chooses that kind of plug-in (`plugins`). Adding a knob is one
entry (here or in its plug-in) plus its strings in each language (`<name>` and `info_<name>`).

Nothing here imports torch: a spec is plain data, checked by plain Python.
"""
from __future__ import annotations

import reprlib
from dataclasses import dataclass
from typing import Any, Callable

MAX_SEED = 2**63 - 1
MAX_COUNT = 2**31 - 1  # bound on lengths and counts (gen_length, top_k, ...): far above any model's canvas
MAX_BUDGET = 4096  # bound on the extra steps a revision rule may add per block (loop steps, post-edit steps)
FLOAT32_MAX = 3.4028234663852886e38  # the decoder computes in float32: larger values become inf
# Below this a positive temperature is argmax in all but name, and logits / T overflows float32.
MIN_TEMPERATURE = 1e-4
SHORT_CHARS = 60  # values echoed in an error message are clipped to about this many characters
KINDS = ("int", "float", "bool", "choice", "temperature", "stages")

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


def bad(name: str, value: Any, allowed: str) -> ValueError:
    """The ValueError of a bad setting: the name, the value (clipped) and what is allowed."""
    name = name if isinstance(name, str) and len(name) <= SHORT_CHARS else short(name)
    return ValueError(f"{name}={short(value)} is invalid: expected {allowed}")


def check_int(name: str, value: Any, lo: int, hi: int | None = None) -> None:
    """An integer in [lo, hi]; `hi=None` means MAX_COUNT (the decoder keeps counts in int64 tensors)."""
    hi = MAX_COUNT if hi is None else hi
    if not (isinstance(value, int) and not isinstance(value, bool) and lo <= value <= hi):
        raise bad(name, value, f"an integer in [{lo}, {hi}]")


def check_float(name: str, value: Any, lo: float, hi: float | None, *, lo_open: bool) -> None:
    """A finite number in the range that float32 (the decoder's dtype) represents; `hi=None`
    means float32's largest value, since anything above it becomes inf inside the step."""
    hi = FLOAT32_MAX if hi is None else hi
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    ok = number and -FLOAT32_MAX <= value <= FLOAT32_MAX  # False for NaN and inf; no float() of a huge int
    if ok:
        ok = (value > lo if lo_open else value >= lo) and value <= hi
    if not ok:
        raise bad(name, value, f"a finite number in {'(' if lo_open else '['}{lo}, {hi:g}]")


def check_temperature(name: str, value: Any) -> None:
    check_float(name, value, 0.0, None, lo_open=False)
    if 0 < value < MIN_TEMPERATURE:
        raise bad(name, value, f"0 (argmax) or a number in [{MIN_TEMPERATURE:g}, {FLOAT32_MAX:g}]")


def check_choice(name: str, value: Any, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise bad(name, value, "one of " + " | ".join(choices))


@dataclass(frozen=True, kw_only=True)
class Knob:
    """One decoding knob. `help` is its one-line meaning (the `DecodeConfig` field's description, the
    CLI flag's help); the page's label and note are the strings `<name>` and `info_<name>`."""

    name: str
    kind: str  # one of KINDS
    default: Any
    help: str
    optional: bool = False  # None is allowed (`help` says what it means)
    lo: float = 0  # int and float: the smallest value (excluded when lo_open)
    # the largest; None: MAX_COUNT or float32's; a callable: of the config
    hi: float | Callable[[Any], float] | None = None
    lo_open: bool = False
    below: str | None = None  # the value must also stay below `hi`, for this reason
    choices: tuple[str, ...] = ()  # a choice's values
    plugins: str | None = None  # the knob chooses a plug-in of this kind: its choices and their knobs (core.rules)
    relation: Callable[[Any, Any], str | None] | None = None  # (value, config) -> what is allowed, when it is not
    column: str | None = None  # its (A,) column in the step's parameters: "float32", "float64", "long", "bool"
    off: Any = None  # the column's value for None
    policy: bool | str = True  # a serving policy carries it (under this name, when a str; `serve.policy`)
    slider: tuple[float, float, float] | None = None  # the page's slider (lo, hi, step) for a plug-in's number
    choice_key: str = ""  # strings prefix of its choices' labels (default `choice_<name>_`)
    # The canvas kinds a step's own knob applies to (`core.rules.CANVASES`); a plug-in's knob follows its plug-in.
    # On a canvas it does not apply to, a value other than the default is refused by name (`rules.check_canvas`).
    canvases: tuple[str, ...] = ("masked",)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"knob {self.name!r}: kind={self.kind!r} is invalid: expected one of {' | '.join(KINDS)}")
        if self.kind == "choice" and not (self.choices or self.plugins):
            raise ValueError(f"knob {self.name!r}: a choice needs its choices")

    @property
    def annotation(self) -> str:
        """The `DecodeConfig` field's type, as written in an annotation."""
        base = {"int": "int", "float": "float", "bool": "bool", "choice": "str", "temperature": "float",
                "stages": "tuple[float, float, float]"}[self.kind]
        return f"{base} | None" if self.optional or self.kind == "stages" else base

    @property
    def labels_key(self) -> str:
        return self.choice_key or f"choice_{self.name}_"

    def upper(self, config: Any) -> float | None:
        return self.hi(config) if callable(self.hi) else self.hi

    def check(self, value: Any, config: Any) -> Any:
        """`value` as the config keeps it (a temperature triple becomes a tuple of floats); ValueError
        naming the knob and what it allows, when it is not allowed."""
        if value is None and (self.optional or self.kind == "stages"):
            return value
        name, kind = self.name, self.kind
        if kind == "int":
            check_int(name, value, int(self.lo), self.upper(config))  # type: ignore[arg-type]
        elif kind == "float":
            check_float(name, value, float(self.lo), self.upper(config), lo_open=self.lo_open)
            if self.below is not None and value >= self.upper(config):  # type: ignore[operator]
                left = "(" if self.lo_open else "["
                raise bad(name, value, f"a finite number in {left}{self.lo:g}, {self.upper(config):g}): {self.below}")
        elif kind == "bool":
            if not isinstance(value, bool):
                raise bad(name, value, "True or False")
        elif kind == "choice":
            check_choice(name, value, self.choices)
        elif kind == "temperature":
            check_temperature(name, value)
        else:
            value = _stages(name, value)
        if self.relation is not None:
            allowed = self.relation(value, config)
            if allowed is not None:
                raise bad(name, value, allowed)
        return value

    def parse(self, text: str) -> Any:
        """The value of a command-line flag."""
        if self.kind == "stages":
            return tuple(float(x) for x in text.split(","))
        if self.kind == "bool":
            words = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}
            if text.strip().lower() not in words:
                raise ValueError(f"{text!r} is invalid: expected true or false")
            return words[text.strip().lower()]
        return {"int": int, "float": float, "temperature": float}.get(self.kind, str)(text)

    def column_value(self, config: Any) -> Any:
        """The value of its column in the step's parameters, for `config`."""
        value = getattr(config, self.name)
        if self.kind == "choice":
            return self.choices.index(value)
        return self.off if value is None else value


def _stages(name: str, stages: Any) -> tuple[float, float, float]:
    if not isinstance(stages, (tuple, list)) or len(stages) != 3:
        raise bad(name, stages, "None or three temperatures (early, middle, late)")
    for stage, value in zip(("early", "middle", "late"), stages):
        check_temperature(f"{name}[{stage}]", value)
    return tuple(float(t) for t in stages)  # type: ignore[return-value]


def _divides(value: int | None, config: Any) -> str | None:
    if value is not None and config.gen_length % value:
        return f"a divisor of gen_length={config.gen_length}"
    return None


def _per_block(value: int | None, config: Any) -> str | None:
    if value is not None and value % config.num_blocks:
        return f"a multiple of the number of blocks ({config.num_blocks})"
    return None


def _needs_a_cache(value: int | None, config: Any) -> str | None:
    if value is not None and config.cache == "none":
        return "None with cache='none' (a cache's refresh interval)"
    return None


def _canvas(config: Any) -> float:
    return max(1, config.gen_length)


# Where the confidence the schedule ranks by comes from (`core.sources`, the references'):
#   raw          the measure on softmax(logits): the article's rule;
#   tempered     the measure on softmax(logits / T): "polluted confidence" (article 2.2, 5.1);
#   sampled      p(drawn token) under the tempered, top-k/top-p-filtered distribution (Dream's maskgit_plus);
#   sampled_raw  p(drawn token) under the raw distribution (LLaDA's low_confidence, Fast-dLLM's threshold),
#                computed as their code does: dtype, ties, the mask token (`core.references.llada`);
#   filtered     the measure on the tempered, filtered distribution (Dream's topk_margin and entropy);
#   softmax      the measure on torch.softmax(logits): the raw distribution with SGLang's float ops (its
#                LowConfidence and JointThreshold gather softmax(logits) at the argmax), equal to raw but
#                for the last bits, so that a threshold decides exactly as SGLang does (`core.references.sglang`).
# The two "sampled" sources rank by a token drawn at every masked position, so they need sample_scope="all".
CONFIDENCE_FROM = ("raw", "tempered", "sampled", "sampled_raw", "filtered", "softmax")
DRAWN_SOURCES = ("sampled", "sampled_raw")
CONFIDENCES = ("max_prob", "margin", "entropy", "random")  # `core.scoring`
SAMPLE_SCOPES = ("selected", "all")
RNG_MODES = ("per_request", "shared")
BLOCK_SCHEDULES = ("continue", "restart")
# Approximate key-value caches (Fast-dLLM's generate_with_prefix_cache / _dual_cache): a step inside a
# block computes the current block and everything after it ("prefix") or the current block alone ("dual"),
# reading the rest from the keys and values cached at the block's first step.
CACHES = ("none", "prefix", "dual")

# The step's own knobs, in DecodeConfig's order; each plug-in kind's knobs follow the knob that chooses it.
CORE: tuple[Knob, ...] = (
    Knob(name="gen_length", kind="int", default=64, policy="block_size", canvases=("masked", "renoise"),
         help="number of [MASK] positions appended to the prompt (0 = nothing to generate); on a renoise canvas "
              "the new tokens asked for (max_new_tokens: whole canvases are kept)"),
    Knob(name="block_length", kind="int", default=None, optional=True, lo=1, hi=_canvas, relation=_divides,
         policy=False, help="semi-autoregressive block size; None = one block; divides gen_length"),
    Knob(name="schedule", kind="choice", default="topk_decay", plugins="schedule",
         help="how many positions to confirm per step (core.rules: one plug-in each)"),
    Knob(name="temperature", kind="temperature", default=1.0,
         help="sampling temperature at confirmed positions; 0 = argmax"),
    Knob(name="temperature_stages", kind="stages", default=None,
         help="(early, middle, late) temperatures by thirds of the decode; overrides temperature"),
    Knob(name="confidence", kind="choice", default="max_prob", choices=CONFIDENCES,
         help="confidence measure from probabilities: see scoring.py"),
    Knob(name="top_p", kind="float", default=None, optional=True, lo_open=True, hi=1.0, column="float32", off=1.0,
         help="nucleus filter on the tempered distribution at drawn positions; None = off"),
    Knob(name="vocab_top_k", kind="int", default=None, optional=True, lo=1, column="long", off=0,
         help="keep the vocab_top_k most likely tokens at drawn positions; None = off"),
    Knob(name="seed", kind="int", default=0, hi=MAX_SEED, policy=False, canvases=("masked", "renoise"),
         help="seeds this request's own torch.Generator"),
    Knob(name="block_schedule", kind="choice", default="continue", choices=BLOCK_SCHEDULES, policy=False,
         help='"restart": k (topk_decay/adaptive) restarts at top_k in each block'),
    Knob(name="early_stop", kind="bool", default=False,
         help="finish once every still-masked position of the current block predicts end-of-text with raw "
              "probability >= early_stop_threshold; they and every later mask are filled with it"),
    Knob(name="early_stop_threshold", kind="float", default=0.9, lo_open=True, hi=1.0,
         help="the raw probability of end-of-text the early stop needs at every such position; in (0, 1]"),
    Knob(name="revise", kind="choice", default="none", plugins="revise",
         help="the revision rule that may re-mask or rewrite decided tokens of the current block (core.rules)"),
    Knob(name="indel", kind="choice", default="none", plugins="indel",
         help="the insert/delete rule: a model trained to edit lengths may write DELETE or SPLIT (core.rules)"),
    Knob(name="cache", kind="choice", default="none", choices=CACHES, policy=False,
         help="approximate key-value cache: a block's first step refreshes it, its later steps compute a window"),
    Knob(name="cache_refresh", kind="int", default=None, optional=True, lo=1, policy=False, relation=_needs_a_cache,
         help="also refresh every this many steps of a block; None: at block starts only"),
    Knob(name="cache_drift", kind="bool", default=False, policy=False,
         help="diagnostic: compute the exact forward beside each cached one, record the drift"),
    # Teaching switches: the defaults are correct; the others are the article's mistakes.
    Knob(name="confidence_from", kind="choice", default="raw", choices=CONFIDENCE_FROM,
         help="where confidence comes from: see CONFIDENCE_FROM"),
    Knob(name="sample_scope", kind="choice", default="selected", choices=SAMPLE_SCOPES,
         help='"all": draw at every masked position, then confirm (wasted work)'),
    Knob(name="rng", kind="choice", default="per_request", choices=RNG_MODES, policy=False,
         help='"shared": one generator for the whole batch (results depend on neighbours)'),
)


def _dual_needs_blocks(c: Any) -> None:
    if c.cache == "dual" and c.block_length is None:
        raise ValueError(
            "cache='dual' needs block_length (semi-autoregressive blocks): the dual cache keeps the keys of the "
            "blocks after the current one, and without blocks there are none; expected a block_length, or "
            "cache='prefix' | 'none'"
        )


def _cache_without_revision(c: Any) -> None:
    if c.cache != "none" and c.revise != "none":
        raise ValueError(
            f"cache={c.cache!r} with revise={c.revise!r} is invalid: a revision rule scores decided tokens "
            "(to take them back or rewrite them), and a cached step scores only the current block's masks, "
            "against keys computed before those tokens changed; expected revise='none', or cache='none'"
        )


def _cache_without_early_stop(c: Any) -> None:
    if c.cache != "none" and c.early_stop:
        raise ValueError(
            f"cache={c.cache!r} with early_stop=True is invalid: the early stop fills every later mask with what "
            "it predicts, and a cached step computes no prediction past the current block; expected "
            "early_stop=False, or cache='none'"
        )


def _drawn_needs_all(c: Any) -> None:
    if c.confidence_from in DRAWN_SOURCES and c.sample_scope != "all":
        raise ValueError(
            f"confidence_from={c.confidence_from!r} needs sample_scope='all': the confidence of a sampled "
            f"token exists only where a token was sampled (got sample_scope={c.sample_scope!r})"
        )


# Checks across knobs, run once every knob is valid on its own.
CONSTRAINTS: tuple[Callable[[Any], None], ...] = (
    _dual_needs_blocks, _cache_without_revision, _cache_without_early_stop, _drawn_needs_all,
)


def validate(config: Any, knobs: tuple[Knob, ...]) -> None:
    """Check every knob of a frozen `config` in order, then CONSTRAINTS; normalise in place."""
    for knob in knobs:
        value = getattr(config, knob.name)
        kept = knob.check(value, config)
        if kept is not value:
            object.__setattr__(config, knob.name, kept)
    for constraint in CONSTRAINTS:
        constraint(config)
