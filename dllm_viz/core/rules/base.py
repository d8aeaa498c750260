"""What a rule plug-in declares, and the records the step hands it (`core.rules` discovers the plug-ins).

A plug-in module defines `RULE = Schedule(...)` (how many masks a step confirms),
`RULE = Revision(...)` (what a step may take back or rewrite), `RULE = InDel(...)` (a rule that inserts
and deletes positions: it decides its rows' whole step, and positions move) or `RULE = Canvas(...)` (a canvas
that is not masked, with a decoding loop of its own: the renoise canvas), declaring:
  - `knobs`: the knobs it owns (`core.knobs.Knob`) and, by name, the ones it shares with others;
  - what it reads beyond the step's forward (`Revision.reads`: the step's logits at decided
    positions, or a verify pass with each of them hidden), whether it edits visible tokens, whether it
    may hold a block open, how many extra steps it may add (`extra_steps`);
  - `canvases`: the kinds of canvas it applies to (`CANVASES`; another canvas refuses it by name);
  - `cite`: the repository, file and function it follows; its module docstring holds a runnable example.
The step (`core.step`) evaluates each plug-in present in a batch on every row and keeps each row's own,
as `torch.where` on the rule's id: a plug-in is a pure function of tensors, batched, never a loop over rows.

Shapes: A rows (requests), G generated positions per row.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Any, Callable, Iterable, Mapping, Sequence

import torch

from dllm_viz.core.knobs import Knob

# The kinds of canvas a decoder writes: "masked", every position starts as [MASK] and a confirmed token is
# final unless a revision rule takes it back; "renoise", every position starts as a uniformly random token and
# each step keeps the proposals it accepts and gives every other position fresh noise (DiffusionGemma).
CANVASES = ("masked", "renoise")


@dataclass(frozen=True, kw_only=True)
class Citation:
    """Where a rule comes from: the repository, the file and the function it follows (and the paper)."""

    repo: str
    file: str
    function: str
    paper: str | None = None

    def __str__(self) -> str:
        return f"{self.repo}, {self.file}, {self.function}"


@dataclass(frozen=True, kw_only=True)
class ShippedPreset:
    """A reference implementation's own decoding rule at its documented defaults.

    `fields(gen_length)` gives the DecodeConfig fields that reproduce it; `source` names the
    repository, file and function the rule follows; docs/shipped_samplers.md says where each one
    sits in the article's list of mistakes and what is not reproduced.
    """

    source: str  # repository, file and function
    note: str  # the rule in one line
    fields: Callable[[int], dict[str, Any]]  # gen_length -> DecodeConfig fields


def _never(config: Any) -> bool:
    return False


def _none(config: Any) -> int:
    return 0


@dataclass(frozen=True, kw_only=True)
class Plugin:
    """What every rule declares."""

    name: str  # the value of the knob that chooses it (`schedule=...`, `revise=...`)
    order: int  # its place in menus and in the list of choices
    summary: str  # what it does, in one line (the page says it in each language: `choice_<knob>_<name>`)
    knobs: tuple[Knob | str, ...] = ()  # owned (a Knob) or shared with the plug-in that owns it (its name)
    canvases: tuple[str, ...] = ("masked",)  # the canvas kinds it applies to (CANVASES)
    cite: Citation | None = None
    presets: Mapping[str, ShippedPreset] = field(default_factory=dict)  # "as shipped" presets it brings
    served: bool | str = True  # the SGLang plugin runs it (one forward per step is all it reads); else why not
    # config -> None, or what it needs of the config's other knobs (`DecodeConfig` refuses the config, naming it)
    requires: Callable[[Any], str | None] | None = None

    @property
    def owned(self) -> tuple[Knob, ...]:
        return tuple(k for k in self.knobs if isinstance(k, Knob))

    @property
    def knob_names(self) -> tuple[str, ...]:
        """The names of every knob it reads."""
        return tuple(k.name if isinstance(k, Knob) else k for k in self.knobs)


@dataclass(frozen=True, kw_only=True)
class Schedule(Plugin):
    """How many masks of the current block a step confirms (`quota`), and which ones: the most confident
    (the request's confidence measure), or by the plug-in's own score (`rank`, highest first)."""

    quota: Callable[[QuotaInputs], torch.Tensor]  # (A,) long: positions to confirm (clamped to the masks left)
    rank: Callable[[QuotaInputs], torch.Tensor] | None = None  # (A, G): the score it picks by, when its rule says
    planned: bool = True  # each step's count is known from the config alone (False: it reads the model)


@dataclass(frozen=True, kw_only=True)
class Revision(Plugin):
    """What a step may take back to [MASK] or rewrite in the current block (`plan`), once the schedule
    has set its quota."""

    plan: Callable[[Context], Plan]
    reads: str | None = None  # logits at decided positions: "forward" (the step's own), "hidden" (a verify pass)
    edits: bool = False  # it rewrites visible tokens: the model must predict there (`models.base.can_edit`)
    holds: bool = False  # it may hold a block open with no mask left
    counts: bool = False  # its counter counts since its block began (the step restarts it in a new block)
    extra_steps: Callable[[Any], int] = _none  # config -> steps a block may take beyond the schedule's (a bound)
    adds_steps: Callable[[Any], bool] = _never  # config -> the step count is known only afterwards
    keeps_conf: Callable[[Any], bool] = _never  # config -> it reads the confidence each token was decided with
    reads_wide: Callable[[Any], bool] = _never  # config -> it reads its verify probabilities in float64 (its code's)
    shadow: Callable[[Any], bool] = _never  # config -> its "hidden" reads come from a shadow block in the step's
    #                                         forward (WINO's; `models.base.logits_shadow`) where the model takes one
    coins: Callable[[Any], bool] = _never  # config -> it draws its own uniforms per position and token from the
    #                                        request's generator (`core.canvas.Coins`), and the step's none
    reuses: Callable[[Any], bool] = _never  # config -> a step may reuse the step before's logits (`Plan.reuse`)
    owns: bool = False  # it runs the original's own loop: its plan decides what each step confirms and the tokens
    #                     (`Plan.owns`), in any block, and what each position's confidence carries on
    # (logits (K, 1, V), where (A, G), current (A, G), block_size (A,), knobs) -> the logits it decides from
    adjust: Callable[..., torch.Tensor] | None = None


@dataclass(frozen=True, kw_only=True)
class InDel(Plugin):
    """A rule that inserts and deletes positions of the current block (docs/indel.md): positions move, so it
    does not fit a `Revision`, whose plan keeps every position in place. It decides its rows' whole step
    (which masks get a token, which tokens are rewritten, DELETE and SPLIT) from the logits at every
    position of the block, as SGLang's JointThresholdInDel is a whole algorithm; the schedule and the
    revision rule of such a row are fixed by `requires`. `core.indel_rows` runs it for the rows that
    choose it, beside `denoise_step` for the others, from the same forward."""

    # (logits (A, W, V), block (A, W), state, params, *, drawn) -> core.indel.InDelStep; None: positions stay
    step: Callable[..., Any] | None = None
    extra_steps: Callable[[Any], int] = _none  # config -> steps a block may take beyond its positions (a bound)


@dataclass(frozen=True, kw_only=True)
class Canvas(Plugin):
    """A canvas other than the masked one, with its own decoding loop in `core` (the renoise canvas:
    `core.renoise_decoder`). No knob chooses it: the model does (`rules.canvas_of`). Its knobs join the knob
    table after every other; `rules.check_canvas` refuses them, set, on another canvas, and every masked-only
    knob and rule, set, on this one. `name` is the canvas kind (one of CANVASES); `canvases` is `(name,)`."""

    default_preset: str  # the preset a caller who names none gets on such a model (the CLI's --preset)
    # What the page's widget of a knob left at None shows, greyed out as "auto" (the usual checkpoint's value)
    shown: Mapping[str, Any] = field(default_factory=dict)


# ----- knob columns --------------------------------------------------------------------------------
class Columns:
    """The knobs of a set of rows as `(A,)` tensors, read as attributes (`knobs.decay`). A row whose
    rules do not read a knob holds its default. `distinct(name)` is the set of values the rows that read
    it hold (host-side, known without a sync: what no row does is skipped)."""

    def __init__(self, values: dict[str, torch.Tensor], distinct: dict[str, frozenset]) -> None:
        self._values, self._distinct = values, distinct
        self._made: dict[str, tuple[tuple[torch.Tensor, ...], Any]] = {}  # `once`: key -> (inputs, value)

    def __getattr__(self, name: str) -> torch.Tensor:
        try:
            return self.__dict__["_values"][name]
        except KeyError:
            raise AttributeError(f"no knob column {name!r}") from None

    def once(self, key: str, inputs: tuple[torch.Tensor, ...], make: Callable[..., Any]) -> Any:
        """`make(*inputs)`, made once for these rows: kept while the very same `inputs` come back (a step's
        `QuotaInputs` fields that are the rows' parameters, not their state)."""
        held = self._made.get(key)
        if held is None or len(held[0]) != len(inputs) or any(a is not b for a, b in zip(held[0], inputs)):
            held = self._made[key] = (inputs, make(*inputs))
        return held[1]

    def distinct(self, name: str) -> frozenset:
        return self._distinct.get(name, frozenset())

    def any(self, name: str) -> bool:
        """Some row that reads the (bool or number) knob `name` sets it (True, > 0)."""
        return any(bool(v) for v in self.distinct(name))


_DTYPES = {"float32": torch.float32, "float64": torch.float64, "long": torch.long, "bool": torch.bool}


def columns(configs: Sequence[Any], knobs: Iterable[Knob], reads: Callable[[Any], frozenset[str]], *,
            device: torch.device | str = "cpu") -> Columns:
    """`Columns` of `knobs` (those with a column) for `configs`; `reads(config)` names the knobs a row reads."""
    read = [reads(c) for c in configs]
    values, distinct = {}, {}
    for knob in knobs:
        if knob.column is None:
            continue
        fallback = knob.column_value(_Defaults(knob))
        col = [knob.column_value(c) if knob.name in r else fallback for c, r in zip(configs, read)]
        values[knob.name] = torch.tensor(col, dtype=_DTYPES[knob.column], device=device)
        distinct[knob.name] = frozenset(getattr(c, knob.name) for c, r in zip(configs, read) if knob.name in r)
    return Columns(values, distinct)


class _Defaults:
    """A stand-in config holding one knob's default (for `Knob.column_value`)."""

    def __init__(self, knob: Knob) -> None:
        setattr(self, knob.name, knob.default)


# ----- what a schedule sees ------------------------------------------------------------------------
@dataclass(frozen=True)
class Positions:
    """Per position, what a schedule may look at beyond counts (made by the step, read lazily)."""

    eligible: torch.Tensor  # (A, G) bool: the masked positions of each row's current block
    conf: torch.Tensor  # (A, G) the confidence the step ranks by (float32; float64 in `wide` rows)
    wide: torch.Tensor | None = None  # (A,) bool: rows compared in float64 (a reference's, `core.references`)
    entropy_of: Callable[[], torch.Tensor] | None = None  # -> (A, G) raw entropy in nats (0 where not masked)

    @cached_property
    def entropy(self) -> torch.Tensor:  # (A, G) float32: the raw distribution's entropy, nats
        assert self.entropy_of is not None, "the step gives the raw distribution to schedules that read it"
        return self.entropy_of()

    def clears(self, threshold: torch.Tensor, strict: torch.Tensor | None = None) -> torch.Tensor:
        """`(A, G)` bool: eligible positions whose confidence >= `threshold (A,)` (> in the `strict (A,)`
        rows). Compared as torch compares a tensor with a Python float: in the confidence's dtype,
        float32 (so float32(0.9)), but float64 in the `wide` rows, whose reference ranks in float64."""
        c, t = self.conf.float(), threshold.float().unsqueeze(-1)  # (A, G), (A, 1)
        if self.wide is not None:
            w = self.wide.unsqueeze(-1)
            c = torch.where(w, self.conf.double(), c.double())
            t = torch.where(w, threshold.double().unsqueeze(-1), t.double())
        above = c >= t
        if strict is not None:
            above = torch.where(strict.unsqueeze(-1), c > t, above)
        return above & self.eligible


@dataclass(frozen=True)
class QuotaInputs:
    """What a schedule may look at, one row per request (`(A,)` long tensors, and its knobs)."""

    k: torch.Tensor  # current k of topk_decay
    top_k: torch.Tensor  # initial k (DecodeConfig.initial_k)
    block_step: torch.Tensor  # steps already taken in the current block
    block_size: torch.Tensor  # M: positions per block
    steps_per_block: torch.Tensor  # fixed_steps, linear_time: s
    eligible: torch.Tensor  # masks left in the current block
    knobs: Columns  # the schedules' knobs (`knobs.min_k`, `knobs.threshold`, ...)
    positions: Positions | None = None  # per position (None: a plan made from the config alone)


def select_top(confidence: torch.Tensor, eligible: torch.Tensor, count: torch.Tensor) -> torch.Tensor:
    """The `count` most confident eligible positions of each row, as a `(B, L)` bool mask.

    A rank mask instead of a per-row topk, so rows with different counts stay one batched op.
    Ties go to the earlier position (stable sort), which keeps the choice deterministic.
    """
    score = torch.where(eligible, confidence, float("-inf"))  # (B, L)
    order = torch.sort(score, dim=-1, descending=True, stable=True).indices  # (B, L)
    ranks = _positions(order.shape[-1], order.device)  # (L,): the rank held at each column of `order`
    return torch.zeros_like(eligible).scatter_(-1, order, ranks < count.unsqueeze(-1)) & eligible


@lru_cache(maxsize=64)
def _positions(L: int, device: torch.device) -> torch.Tensor:
    """`arange(L)` on `device`, made once per width (`select_top` reads it every step, never writes it)."""
    with torch.inference_mode(False):  # a plain tensor, whichever mode first asks for it
        return torch.arange(L, device=device)


# ----- what a revision rule sees and decides -------------------------------------------------------
@dataclass(frozen=True)
class RevisionState:
    """What a rule carries from step to step, one row per request."""

    counter: torch.Tensor  # (A,) long, reset in each block: joint_threshold's edit-only steps, remdm's
    #                        loop steps, wino's drafts of the previous step
    hold: torch.Tensor  # (A,) bool: the row's block stays open with no mask left (joint_threshold)
    decided_conf: torch.Tensor  # (A, G) float32: the confidence each decided position was decided with
    #                              (kept only while a row's rule reads it, `Revision.keeps_conf`)

    @classmethod
    def initial(cls, A: int, G: int, device: torch.device | str = "cpu") -> RevisionState:
        return cls(counter=torch.zeros(A, dtype=torch.long, device=device),
                   hold=torch.zeros(A, dtype=torch.bool, device=device),
                   decided_conf=torch.zeros(A, G, dtype=torch.float32, device=device))


@dataclass(frozen=True)
class Constants:
    """What a plan holds where its rule does nothing (`core.revision.RevisionParams.constants`)."""

    none: torch.Tensor  # (A, G) bool: False
    zero: torch.Tensor  # (A, G) float32: 0
    no_token: torch.Tensor  # (A, G) long: -1
    no: torch.Tensor  # (A,) bool: False


@dataclass(frozen=True)
class Context:
    """What a rule sees once the schedule has set its quota (every tensor `(A, G)` or `(A,)`)."""

    decided: torch.Tensor  # (A, G) bool: visible generated positions of the current block
    eligible: torch.Tensor  # (A, G) bool: masked positions of the current block
    conf: torch.Tensor  # (A, G) the confidence the schedule ranks masks by
    quota: torch.Tensor  # (A,) long: the schedule's count
    current: torch.Tensor  # (A, G) long: the tokens entering the step
    uniform: torch.Tensor  # (A, G) the step's second uniform (read at decided positions only)
    block_step: torch.Tensor  # (A,) long: steps already taken in the block (0: its first step)
    may_remask: torch.Tensor  # (A,) bool: the block's steps are still below its bound (`core.revision.guard`)
    params: Any  # core.revision.RevisionParams: the rows' rules and their knobs (`params.knobs`)
    state: RevisionState  # counters of the counting rules already reset where the block is new
    seen: Any  # core.seen.Seen | None: the raw distribution at the decided positions of the rows that read one
    # What a rule that owns the step (`Revision.owns`) reads beyond the block: the whole row.
    masked: torch.Tensor | None = None  # (A, G) bool: every masked position of the row, entering the step
    valid: torch.Tensor | None = None  # (A, G) bool: the row's real positions (None: all)
    block: torch.Tensor | None = None  # (A,) long: the row's current block
    block_size: torch.Tensor | None = None  # (A,) long: positions per block
    steps_per_block: torch.Tensor | None = None  # (A,) long: the step budget of one block (`DecodeConfig.total_steps`)
    x: Any = None  # core.packed.Packed: the step's logits at `masked`, packed row-major, with each one's uniforms
    coins: Any = None  # core.canvas.Coins | None: the rows' own float64 uniforms per position and token
    mask_token_id: int | None = None  # the model's mask token

    @property
    def knobs(self) -> Columns:
        return self.params.knobs

    @cached_property
    def constants(self) -> Constants:
        return self.params.constants(self.decided.shape[1], self.decided.device)

    @cached_property
    def kept(self) -> Plan:
        """The schedule's choice and nothing taken back (rule ``none``): what each rule starts from."""
        c = self.constants
        return Plan(count=self.quota, remasked=c.none, remask_score=c.zero, edited=c.none, edit_tokens=c.no_token,
                    edit_prob=c.zero, edit_old_prob=c.zero, counter=self.state.counter, hold=c.no, pause=c.no)


@dataclass(frozen=True)
class Plan:
    """What a rule decided for every row."""

    count: torch.Tensor  # (A,) long: masks to confirm (the schedule's quota, adjusted)
    remasked: torch.Tensor  # (A, G) bool: decided positions taken back to [MASK]
    remask_score: torch.Tensor  # (A, G) float32: what decided it (see each rule)
    edited: torch.Tensor  # (A, G) bool: decided positions rewritten
    edit_tokens: torch.Tensor  # (A, G) long: their new ids; -1 elsewhere
    edit_prob: torch.Tensor  # (A, G) float32: raw probability of the new id
    edit_old_prob: torch.Tensor  # (A, G) float32: raw probability of the old id, same distribution
    counter: torch.Tensor  # (A,) long: the rule's counter after the step
    hold: torch.Tensor  # (A,) bool: keep the block open if it has no mask left after the step
    pause: torch.Tensor  # (A,) bool: the schedule does not advance (k and the block's step count stay)
    # Host-side, so that the caller skips what no row did without looking (a sync): False means the
    # tensor is False throughout.
    rewrites: bool = False  # `edited` may hold a position (a rule that edits ran)
    holds: bool = False  # `hold` may hold a row (a rule that holds ran)
    # A rule that owns the step (`Revision.owns`: the original's own loop decides what is confirmed, and the
    # token, in place of the schedule's pick and the step's draw): in its rows (`owns`), `chosen` replaces the
    # step's selection (masked positions, any block), `chosen_tokens` the draw, and `next_conf` the confidence
    # each position carries on (`RevisionState.decided_conf`). None when no such rule ran.
    owns: torch.Tensor | None = None  # (A,) bool
    chosen: torch.Tensor | None = None  # (A, G) bool
    chosen_tokens: torch.Tensor | None = None  # (A, G) long; -1 elsewhere
    next_conf: torch.Tensor | None = None  # (A, G) float32
    reuse: torch.Tensor | None = None  # (A,) bool: nothing changed, and the next step reuses these logits (no forward)

    @classmethod
    def keep(cls, ctx: Context) -> Plan:
        """The schedule's choice and nothing taken back: rule ``none``."""
        return ctx.kept

    def where(self, rows: torch.Tensor, other: Plan) -> Plan:
        """This plan on `rows (A,)`, `other` elsewhere."""
        def pick(a: torch.Tensor | bool | None, b: torch.Tensor | bool | None) -> torch.Tensor | bool | None:
            if isinstance(a, bool):
                return a or b
            if a is None or b is None:  # a field only owning rules set: False / 0 where the other rule runs
                if a is None and b is None:
                    return None
                a = torch.zeros_like(b) if a is None else a
                b = torch.zeros_like(a) if b is None else b
            return a if a is b else torch.where(rows.view(-1, *[1] * (a.dim() - 1)), a, b)

        return Plan(**{f: pick(getattr(self, f), getattr(other, f)) for f in self.__dataclass_fields__})
