"""The revision phase of a step: what the rows' revision rules read, their plans, and what they carry.

In the article's loop a confirmed token is final. The decoders that ship now revise it: each such
rule is a plug-in of `core.rules` (`Revision`: ReMDM, RCR, WINO, LLaDA 2.1's token editing, ...), a
pure function of a `Context` (what the step knows once the schedule has set its quota) to a `Plan`
(how many masks to confirm, which decided tokens to re-mask or rewrite, the rule's carried state).
This module is the phase around them, the same for every rule:
  - `RevisionParams`: the rows' rules and knobs (`core.rules.base.columns`), built once per set of rows;
  - `revision_targets`: where the rules read logits at decided positions (the step's forward or a
    verify pass), so that the caller runs that forward;
  - `revision_inputs`, `revise`, `settle`: the step's phase (3'): the rules' own adjustment of the
    logits (JointThreshold's penalty), each row's plan under its own rule, the state carried on;
  - `extra_steps`, `max_steps`, `guard`: the bounds on the steps a rule may add.
A batch may mix rules; the phase evaluates each rule present and picks per row by `rule_id`, as the
step does for schedules. Everything stays inside the row's current block, and nothing here edits its
inputs.

Counts, not coin flips, where the original flips coins to unmask: the schedule decides how many
masks a step confirms, and confidence decides which (the article's rule); the rules change the
count and the choice of what to take back.

Shapes: A rows, G generated positions per row; "decided" = visible generated positions of the
row's current block at the start of the step.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import torch

from dllm_viz.core import rules
from dllm_viz.core.rules.base import Columns, Constants, Context, Plan, RevisionState, columns
from dllm_viz.core.rules.wino import _first_least  # noqa: F401  (kept importable here: tests/test_revision.py)
from dllm_viz.core.seen import Seen

__all__ = ["Constants", "Context", "Plan", "RevisionParams", "RevisionState", "Seen", "RULES"]

REVISIONS = tuple(rules.REVISIONS)
REVISION_IDS = {name: i for i, name in enumerate(REVISIONS)}
Rule = Callable[[Context], Plan]
RULES: dict[str, Rule] = {name: p.plan for name, p in rules.REVISIONS.items()}
_KNOBS = tuple(k for p in rules.REVISIONS.values() for k in p.owned)


@dataclass(frozen=True)
class RevisionParams:
    """Every request's revision rule and knobs, one row per request (`(A,)` tensors), built once."""

    rule_id: torch.Tensor  # (A,) long: index into REVISIONS
    knobs: Columns  # the rules' knobs (`knobs.remask_eta`, ...): each row's own where its rule reads it
    extra: torch.Tensor  # (A,) long: `extra_steps` of each row (the re-masking guard)
    bound: torch.Tensor  # (A,) long: block size + `extra`, the steps a block may take back in (`guard`)
    rules: frozenset[str]  # the rules present, "none" excluded (empty: the phase is skipped)
    single: str | None = None  # the rule of every row when they all share one (the plan needs no merge)
    reads_forward: torch.Tensor | None = None  # (A,) bool: rows whose rule reads the step's forward there
    reads_hidden: torch.Tensor | None = None  # (A,) bool: rows whose rule reads a verify pass
    keeps_conf: bool = True  # some row's rule reads `RevisionState.decided_conf` (rcr, remdm's conf sigma)
    owns: bool = False  # some row's rule owns the step (`Revision.owns`: the original's own loop)
    names: tuple[str, ...] = ()  # each row's rule, host-side (`rows_of`)
    wide_reads: torch.Tensor | None = None  # (A,) bool: rows whose rule reads float64 verify probabilities
    any_wide: bool = False
    prompt_length: torch.Tensor | None = None  # (A,) long: canvas columns before each row's span (owning rules)
    _constants: dict = field(default_factory=dict, compare=False, repr=False)  # see `constants`

    @classmethod
    def from_configs(cls, configs: Sequence[Any], *, device: torch.device | str = "cpu",
                     prompt_lengths: Sequence[int] | None = None) -> RevisionParams:
        def col(values: list, dtype: torch.dtype = torch.long) -> torch.Tensor:
            return torch.tensor(values, dtype=dtype, device=device)

        cs = list(configs)
        plugins = [rules.REVISIONS[c.revise] for c in cs]
        extra = [p.extra_steps(c) for p, c in zip(plugins, cs)]
        return cls(
            rule_id=col([REVISION_IDS[c.revise] for c in cs]),
            knobs=columns(cs, _KNOBS, rules.reads, device=device),
            extra=col(extra),
            bound=col([max(1, c.block_size) + e for c, e in zip(cs, extra)]),
            rules=frozenset(c.revise for c in cs) - {"none"},
            single=cs[0].revise if cs and all(c.revise == cs[0].revise for c in cs) else None,
            reads_forward=col([p.reads == "forward" for p in plugins], torch.bool),
            reads_hidden=col([p.reads == "hidden" for p in plugins], torch.bool),
            keeps_conf=any(p.keeps_conf(c) or p.owns for p, c in zip(plugins, cs)),
            owns=any(p.owns for p in plugins),
            names=tuple(c.revise for c in cs),
            wide_reads=col([p.reads_wide(c) for p, c in zip(plugins, cs)], torch.bool),
            any_wide=any(p.reads_wide(c) for p, c in zip(plugins, cs)),
            prompt_length=col(list(prompt_lengths) if prompt_lengths is not None else [0] * len(cs)),
        )

    @property
    def active(self) -> bool:
        return bool(self.rules)

    def rows_of(self, name: str) -> list[int]:
        """The rows whose rule is `name` (host-side: a rule that loops over its rows, as its original does)."""
        return [i for i, n in enumerate(self.names) if n == name]

    @property
    def present(self) -> tuple[rules.Revision, ...]:
        return tuple(rules.REVISIONS[name] for name in sorted(self.rules))

    @property
    def holds(self) -> bool:
        """Some row's rule may hold its block open."""
        return any(p.holds for p in self.present)

    @property
    def reads(self) -> bool:
        """Some row's rule reads logits at decided positions (the step's forward or a verify pass)."""
        return any(p.reads is not None for p in self.present)

    @property
    def reads_any_hidden(self) -> bool:
        return any(p.reads == "hidden" for p in self.present)

    def constants(self, G: int, device: torch.device) -> Constants:
        """The tensors a step of these rows needs whatever happens, made once per width `G` (the rows and
        their rules are fixed for the life of this object). Shared between steps: nothing writes them."""
        key = (G, device)
        if key not in self._constants:
            A = self.rule_id.shape[0]
            self._constants[key] = Constants(
                none=torch.zeros(A, G, dtype=torch.bool, device=device),
                zero=torch.zeros(A, G, dtype=torch.float32, device=device),
                no_token=torch.full((A, G), -1, dtype=torch.long, device=device),
                no=torch.zeros(A, dtype=torch.bool, device=device),
            )
        return self._constants[key]


def plan(ctx: Context) -> Plan:
    """Each row's plan under its own rule (only the rules present are evaluated)."""
    if ctx.params.single is not None:  # every row runs the same rule
        return RULES[ctx.params.single](ctx)
    out = ctx.kept
    for name in ctx.params.rules:
        out = RULES[name](ctx).where(ctx.params.rule_id == REVISION_IDS[name], out)
    return out


# ----- where the rules read ----------------------------------------------------------------------
@dataclass(frozen=True)
class RevisionTargets:
    """Where the rows' revision rules read logits at decided positions, and from which pass."""

    where: torch.Tensor  # (A, G) bool: decided positions of the current block of the rows that read
    hidden: torch.Tensor  # (K,) bool: the position reads a verify pass (itself hidden), else the step's forward
    count: int = 0  # K
    hidden_count: int = 0  # positions read by a verify pass
    hidden_where: torch.Tensor | None = None  # (A, G) bool: those positions (None when there are none)
    # What the targets were found from, for the step to reuse: each row's block and each position's
    # (`schedules.current_block`), and the decided positions of each row's current block (`decided_in`).
    block: tuple[torch.Tensor, torch.Tensor] | None = None
    decided: torch.Tensor | None = None

    @property
    def any(self) -> bool:
        return self.count > 0


def decided_in(masked: torch.Tensor, valid: torch.Tensor | None, blocks: torch.Tensor,
               block: torch.Tensor) -> torch.Tensor:
    """`(A, G)` bool: the visible real positions of each row's current block."""
    decided = ~masked & (blocks == block.unsqueeze(-1))
    return decided if valid is None else decided & valid


def targets_of(decided: torch.Tensor, rp: RevisionParams,
               block: tuple[torch.Tensor, torch.Tensor] | None = None) -> RevisionTargets:
    """The targets of the rows' rules among the `decided (A, G)` positions."""
    if not rp.reads:
        return RevisionTargets(where=torch.zeros_like(decided), hidden=decided.new_zeros(0), block=block,
                               decided=decided)
    if rp.single is not None:  # one rule in every row, and it reads: every decided position, from one pass
        count = int(decided.sum())
        hidden = rules.REVISIONS[rp.single].reads == "hidden"
        return RevisionTargets(where=decided, hidden=torch.full((count,), hidden, device=decided.device),
                               count=count, hidden_count=count if hidden else 0,
                               hidden_where=decided if hidden and count else None, block=block, decided=decided)
    reads_hidden = rp.reads_hidden  # (A,)
    where = decided & (rp.reads_forward | reads_hidden).unsqueeze(-1)
    rows = where.nonzero(as_tuple=True)[0]
    hidden = reads_hidden[rows]
    n_hidden = int(hidden.sum()) if rp.reads_any_hidden else 0
    return RevisionTargets(where=where, hidden=hidden, count=int(rows.shape[0]), hidden_count=n_hidden,
                           hidden_where=where & reads_hidden.unsqueeze(-1) if n_hidden else None, block=block,
                           decided=decided)


# ----- the phase ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class RevisionInputs:
    logits: torch.Tensor  # (M, 1, V) the step's logits at the masked positions (adjusted by the rules)
    current: torch.Tensor  # (A, G) long
    valid: torch.Tensor | None  # (A, G) bool
    seen: Seen | None
    state: RevisionState  # the carried state (counters not yet reset for a new block)
    decided: torch.Tensor  # (A, G) bool: the visible real positions of each row's current block


def revision_inputs(logits: torch.Tensor, masked: torch.Tensor, rp: RevisionParams, block_size: torch.Tensor,
                    state: RevisionState, current: torch.Tensor | None, valid: torch.Tensor | None,
                    seen: torch.Tensor | None, where: tuple[torch.Tensor, torch.Tensor],
                    targets: RevisionTargets | None) -> RevisionInputs:
    """Check what the revision rules need and let them adjust both sets of logits (JointThreshold's penalty)."""
    if current is None:
        raise ValueError("current=None is invalid: a step with a revision rule needs the tokens entering it")
    reads = rp.reads
    if reads and targets is not None and targets.decided is not None:
        decided = targets.decided
    else:
        decided = decided_in(masked, valid, where[1], where[0])
    if reads and targets is None:
        targets = targets_of(decided, rp)
    targets = targets if reads else None
    K = targets.count if targets is not None else 0
    if K and (seen is None or seen.shape[0] != K):
        got = None if seen is None else tuple(seen.shape)
        raise ValueError(f"seen with shape {got} is invalid: expected the logits at the {K} decided positions "
                         "that the rows' revision rules read (revision_targets)")
    for p in rp.present:
        if p.adjust is not None:
            sets = [(logits, masked)] + ([(seen, targets.where)] if K else [])  # type: ignore[union-attr]
            logits, *rest = p.adjust(sets, current, block_size, rp.knobs)
            seen = rest[0] if rest else seen
    read = None
    if K:
        wide = None
        if rp.any_wide:  # the verify probabilities of these rows in float64 (their code's softmax)
            wide = rp.wide_reads.unsqueeze(-1).expand_as(targets.where)[targets.where]  # type: ignore[union-attr]
        read = Seen.from_logits(seen, targets.where, current, targets.hidden,  # type: ignore[union-attr, arg-type]
                                n_verify=targets.hidden_count, wide=wide)  # type: ignore[union-attr]
    return RevisionInputs(logits=logits, current=current, valid=valid, seen=read, state=state, decided=decided)


@dataclass(frozen=True)
class Whole:
    """What a rule that owns the step reads of the whole row (`Context`'s fields of the same names)."""

    masked: torch.Tensor  # (A, G) bool
    block_size: torch.Tensor  # (A,) long
    steps_per_block: torch.Tensor  # (A,) long
    x: Any  # core.packed.Packed
    coins: Any = None  # core.canvas.Coins | None
    mask_token_id: int | None = None


def revise(inputs: RevisionInputs, rp: RevisionParams, conf: torch.Tensor, eligible: torch.Tensor,
           count: torch.Tensor, block: torch.Tensor, previous_block: torch.Tensor, block_step: torch.Tensor,
           uniform: torch.Tensor, whole: Whole | None = None) -> Plan:
    """(3') Each revising row's plan: what its rule takes back or rewrites in the current block, and
    how many masks the step confirms. `uniform (A, G)` is the step's second uniform; `whole`, what a rule
    that owns the step reads of the whole row (needed when one does, `RevisionParams.owns`)."""
    st = inputs.state
    # a counter that restarts with each block (wino's restarts by block_step == 0)
    if any(p.counts for p in rp.present):
        st = RevisionState(counter=torch.where(block != previous_block, 0, st.counter), hold=st.hold,
                           decided_conf=st.decided_conf)
    seen = inputs.seen
    if seen is None and rp.reads:  # none of those rows has a decided token
        seen = Seen(where=torch.zeros_like(inputs.decided))
    extra: dict[str, Any] = dict(valid=inputs.valid, block=block)
    if whole is not None:
        extra.update(masked=whole.masked, block_size=whole.block_size, steps_per_block=whole.steps_per_block,
                     x=whole.x, coins=whole.coins, mask_token_id=whole.mask_token_id)
    elif rp.owns:
        raise ValueError("whole=None is invalid: a rule that owns the step reads the whole row")
    ctx = Context(decided=inputs.decided, eligible=eligible, conf=conf, quota=count, current=inputs.current,
                  uniform=uniform, block_step=block_step, may_remask=guard(block_step, rp.bound), params=rp,
                  state=st, seen=seen, **extra)
    return plan(ctx)


def settle(plan: Plan, inputs: RevisionInputs, selected: torch.Tensor, conf: torch.Tensor,
           stopped: torch.Tensor | None, rp: RevisionParams) -> tuple[Plan, RevisionState]:
    """The plan as it stands after the draw and the early stop, and the state carried to the next step.

    A row the early stop finished (`stopped`, None when none could) takes nothing back and holds no block
    open; each position keeps the confidence it was decided with (the schedule's for a confirmation,
    p(new id) for a rewrite, 0 once taken back), while some row's rule reads it (`keeps_conf`).
    """
    if stopped is not None:
        plan = dataclasses.replace(plan, hold=plan.hold & ~stopped, remasked=plan.remasked & ~stopped.unsqueeze(-1))
    dc = inputs.state.decided_conf
    if rp.keeps_conf:
        dc = torch.where(selected, conf.float(), dc)
        if plan.rewrites:
            dc = torch.where(plan.edited, plan.edit_prob, dc)
        dc = dc.masked_fill(plan.remasked, 0.0)
        if plan.owns is not None:  # a rule that owns the step carries its own (MDPO's running confidence)
            dc = torch.where(plan.owns.unsqueeze(-1), plan.next_conf, dc)
    return plan, RevisionState(counter=plan.counter, hold=plan.hold, decided_conf=dc)


# ----- budgets -----------------------------------------------------------------------------------
def extra_steps(config: Any) -> int:
    """Steps a block may take beyond the plain schedule's under `config`'s rule (an upper bound):
    joint_threshold's edit-only steps and the closing one, remdm's loop, WINO's re-drafts."""
    return rules.REVISIONS[config.revise].extra_steps(config)


def max_steps(config: Any) -> int:
    """The most steps a decode under `config` takes (the trace schema's bound).

    Without revision every step confirms at least one position, or the schedule plans at most
    gen_length steps. A rule may re-mask only while the block's steps are below its block size plus
    `extra_steps` (`guard`), after which each step confirms at least one mask again. An insert/delete rule
    takes at most a block's positions plus its `extra_steps` updates per block (`core.indel`).
    """
    if config.indel != "none":  # each block: its positions' updates plus the insert/delete rule's extra steps
        return config.gen_length + config.num_blocks * rules.INDELS[config.indel].extra_steps(config)
    if config.revise == "none":
        return config.gen_length
    return 2 * config.gen_length + config.num_blocks * extra_steps(config)


def guard(block_step: torch.Tensor, bound: torch.Tensor) -> torch.Tensor:
    """`(A,)` bool: rows still allowed to take back: their block's steps below `bound`, the block size plus
    `extra_steps` (`RevisionParams.bound`).

    The rules already end (ReMDM and RCR keep the schedule's count of visible tokens; WINO takes back
    fewer than the previous step drafted); the guard makes the bound of `max_steps` hold whatever the
    schedule, e.g. one that confirms nothing in some steps."""
    return block_step < bound
