"""Revision rules: the phase of a step that takes back or rewrites tokens decided before (issue 28).

In the article's loop a confirmed token is final. The decoders that ship now revise it:
  - ``remdm``  ReMDM re-masks decided tokens with probability sigma_t and unmasks more to keep the
               marginals (kuleshov-group/remdm, ``diffusion.py``, ``Diffusion._ddpm_caching_update``,
               samplers ``remdm-cap | remdm-rescale | remdm-conf | remdm-loop``; on LLaDA,
               guanghanwang/ReMDM-LLaDA, ``eval_llada.py``, ``LLaDAEvalHarness.llada_remdm_sample``);
  - ``rcr``    Running Confidence Remasking (autonomousvision/mdpo, ``src/mdlm_generation_utils.py``,
               ``diffusion_generate(rcr=True)``): decided tokens compete with the masked candidates by
               the confidence they were decided with, and the weakest go back to [MASK];
  - ``wino``   draft and verify (Feng-Hong/WINO-DLLM, ``LLaDA/decoding.py``, ``decoding_wino``): a verify
               pass in which no decided token sees itself takes back those it no longer supports;
  - ``joint_threshold``  LLaDA 2.1's token editing as SGLang 0.5.23 ships it
               (``python/sglang/srt/dllm/algorithm/joint_threshold.py``, ``JointThreshold.step`` and
               ``joint_threshold_update_step_vectorized``): visible tokens whose argmax differs are
               rewritten (token to token), and a block stays open for edit-only steps after its last mask.

Each rule is a pure function of a `Context` (what the step knows once the schedule has set its
quota) to a `Plan` (how many masks to confirm, which decided tokens to re-mask or rewrite, the
rule's carried state). A batch may mix rules; the step evaluates each rule present and picks per
row by `rule_id`, as it does for schedules. Everything stays inside the row's current block, and
nothing here edits its inputs.

Counts, not coin flips, where the original flips coins to unmask: the schedule decides how many
masks a step confirms, and confidence decides which (the article's rule); the rules change the
count (ReMDM and RCR confirm one more mask for every token they take back, so the number of visible
tokens follows the schedule's plan, which is what ReMDM's sigma_max construction keeps in
expectation), and the choice of what to take back. Randomness (ReMDM's Bernoulli re-masking) uses
the step's second uniform at the decided positions, which no other rule reads there, so a request's
random stream is consumed exactly as without revision.

Shapes: A rows, G generated positions per row; "decided" = visible generated positions of the
row's current block at the start of the step.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from functools import cached_property
from typing import Callable, Sequence

import torch

from dllm_viz.core.config import REMASK_SIGMAS, REVISIONS, DecodeConfig
from dllm_viz.core.schedules import select_top

REVISION_IDS = {name: i for i, name in enumerate(REVISIONS)}
SIGMA_IDS = {name: i for i, name in enumerate(REMASK_SIGMAS)}
# Logits at the decided positions each rule reads: from the step's own forward (a model that predicts
# at visible positions, i.e. can edit), or from a verify pass with each decided position hidden.
READS_FORWARD = frozenset({"joint_threshold"})
READS_HIDDEN = frozenset({"wino"})
EDITS = READS_FORWARD  # rules that rewrite visible tokens: they need `models.base.can_edit(model)`
HOLDS = frozenset({"joint_threshold"})  # rules that may hold a block open with no mask left
# Rules that read `RevisionState.counter` as counted since their block began, so the step restarts it at 0
# in a new block: joint_threshold's edit-only steps, remdm's loop steps. (WINO's counter is the previous
# step's drafts, which it reads only after its block's first step; rcr keeps none.)
COUNTS = frozenset({"joint_threshold", "remdm"})
# WINO's draft width: at most min(max(int(0.7 * masks of the block), 5), 20) drafts per step, and the
# count of the previous step's drafts (30 before a block's first step) bounds what a verify takes back.
WINO_SHARE, WINO_MIN_ACCEPT, WINO_MAX_ACCEPT, WINO_FIRST_LAST_ACCEPT = 0.7, 5, 20, 30


@dataclass(frozen=True)
class RevisionParams:
    """Every request's revision knobs, one row per request (`(A,)` tensors), built once."""

    rule_id: torch.Tensor  # (A,) long: index into config.REVISIONS
    sigma_id: torch.Tensor  # (A,) long: index into config.REMASK_SIGMAS
    eta: torch.Tensor  # (A,) float32
    alpha_on: torch.Tensor  # (A,) float32
    loop_steps: torch.Tensor  # (A,) long
    verify_threshold: torch.Tensor  # (A,) float32
    edit_threshold: torch.Tensor  # (A,) float32
    max_post_edit_steps: torch.Tensor  # (A,) long
    penalty: torch.Tensor  # (A,) float32: penalty_lambda of joint_threshold rows, 0 elsewhere
    extra: torch.Tensor  # (A,) long: `extra_steps` of each row (the re-masking guard)
    bound: torch.Tensor  # (A,) long: block size + `extra`, the steps a block may take back in (`guard`)
    rules: frozenset[str]  # the rules present, "none" excluded (empty: the phase is skipped)
    any_penalty: bool = False
    single: str | None = None  # the rule of every row when they all share one (the plan needs no merge)
    sigmas: frozenset[str] = frozenset()  # the ReMDM sigma variants of the remdm rows
    reads_forward: torch.Tensor | None = None  # (A,) bool: rows whose rule reads the step's forward there
    reads_hidden: torch.Tensor | None = None  # (A,) bool: rows whose rule reads a verify pass
    keeps_conf: bool = True  # some row's rule reads `RevisionState.decided_conf` (rcr, remdm's conf sigma)
    _constants: dict = field(default_factory=dict, compare=False, repr=False)  # see `constants`

    @classmethod
    def from_configs(cls, configs: Sequence[DecodeConfig], *, device: torch.device | str = "cpu") -> RevisionParams:
        def col(values: list, dtype: torch.dtype = torch.long) -> torch.Tensor:
            return torch.tensor(values, dtype=dtype, device=device)

        cs = list(configs)
        penalty = [c.penalty_lambda if c.revise == "joint_threshold" else 0.0 for c in cs]
        return cls(
            rule_id=col([REVISION_IDS[c.revise] for c in cs]),
            sigma_id=col([SIGMA_IDS[c.remask_sigma] for c in cs]),
            eta=col([c.remask_eta for c in cs], torch.float32),
            alpha_on=col([c.remask_alpha_on for c in cs], torch.float32),
            loop_steps=col([c.remask_loop_steps for c in cs]),
            verify_threshold=col([c.verify_threshold for c in cs], torch.float32),
            edit_threshold=col([c.edit_threshold for c in cs], torch.float32),
            max_post_edit_steps=col([c.max_post_edit_steps for c in cs]),
            penalty=col(penalty, torch.float32),
            extra=col([extra_steps(c) for c in cs]),
            bound=col([max(1, c.block_size) + extra_steps(c) for c in cs]),
            rules=frozenset(c.revise for c in cs) - {"none"},
            any_penalty=any(p > 0 for p in penalty),
            single=cs[0].revise if cs and all(c.revise == cs[0].revise for c in cs) else None,
            sigmas=frozenset(c.remask_sigma for c in cs if c.revise == "remdm"),
            reads_forward=col([c.revise in READS_FORWARD for c in cs], torch.bool),
            reads_hidden=col([c.revise in READS_HIDDEN for c in cs], torch.bool),
            keeps_conf=any(c.revise == "rcr" or (c.revise == "remdm" and c.remask_sigma == "conf") for c in cs),
        )

    @property
    def active(self) -> bool:
        return bool(self.rules)

    def reading(self, kind: frozenset[str]) -> torch.Tensor:
        """`(A,)` bool: rows whose rule is in `kind` (READS_FORWARD or READS_HIDDEN)."""
        if kind == READS_FORWARD and self.reads_forward is not None:
            return self.reads_forward
        if kind == READS_HIDDEN and self.reads_hidden is not None:
            return self.reads_hidden
        rows = torch.zeros_like(self.rule_id, dtype=torch.bool)
        for name in self.rules & kind:
            rows |= self.rule_id == REVISION_IDS[name]
        return rows

    def constants(self, G: int, device: torch.device) -> Constants:
        """The tensors a step of these rows needs whatever happens, made once per width `G` (the rows and
        their rules are fixed for the life of this object). Shared between steps: nothing writes them."""
        key = (G, device)
        if key not in self._constants:
            A = self.rule_id.shape[0]
            m = torch.arange(G + 1, device=device)
            self._constants[key] = Constants(
                none=torch.zeros(A, G, dtype=torch.bool, device=device),
                zero=torch.zeros(A, G, dtype=torch.float32, device=device),
                no_token=torch.full((A, G), -1, dtype=torch.long, device=device),
                no=torch.zeros(A, dtype=torch.bool, device=device),
                wino_cap=torch.floor(m.double() * WINO_SHARE).long().clamp(min=WINO_MIN_ACCEPT, max=WINO_MAX_ACCEPT),
            )
        return self._constants[key]

    @property
    def reads(self) -> bool:
        """Some row's rule reads logits at decided positions (the step's forward or a verify pass)."""
        return bool(self.rules & (READS_FORWARD | READS_HIDDEN))


@dataclass(frozen=True)
class Constants:
    """`RevisionParams.constants`: what a plan holds where its rule does nothing."""

    none: torch.Tensor  # (A, G) bool: False
    zero: torch.Tensor  # (A, G) float32: 0
    no_token: torch.Tensor  # (A, G) long: -1
    no: torch.Tensor  # (A,) bool: False
    wino_cap: torch.Tensor  # (G + 1,) long: WINO's draft cap min(max(int(0.7 m), 5), 20) for m masks


@dataclass(frozen=True)
class RevisionState:
    """What a rule carries from step to step, one row per request."""

    counter: torch.Tensor  # (A,) long, reset in each block: joint_threshold's edit-only steps, remdm's
    #                        loop steps, wino's drafts of the previous step
    hold: torch.Tensor  # (A,) bool: the row's block stays open with no mask left (joint_threshold)
    decided_conf: torch.Tensor  # (A, G) float32: the confidence each decided position was decided with
    #                              (kept only while a row's rule reads it, `RevisionParams.keeps_conf`)

    @classmethod
    def initial(cls, A: int, G: int, device: torch.device | str = "cpu") -> RevisionState:
        return cls(counter=torch.zeros(A, dtype=torch.long, device=device),
                   hold=torch.zeros(A, dtype=torch.bool, device=device),
                   decided_conf=torch.zeros(A, G, dtype=torch.float32, device=device))


@dataclass(frozen=True)
class Seen:
    """The raw distribution at the decided positions a rule reads: packed row-major at the True entries
    of `where`, unpacked to `(A, G)` when a rule asks (`argmax`, `p_argmax`, `p_token`)."""

    where: torch.Tensor  # (A, G) bool: the positions read
    argmax_k: torch.Tensor | None = None  # (K,) long: argmax of the logits (first on ties); None: none read
    p_argmax_k: torch.Tensor | None = None  # (K,) float32: softmax probability of the argmax where it differs
    #                                          from the token, else 0; None: 0 throughout
    p_token_k: torch.Tensor | None = None  # (K,) float32: probability of the token the position holds (see
    #                                         from_logits); None: 0 throughout

    @cached_property
    def argmax(self) -> torch.Tensor:  # (A, G) long; -1 where not read
        out = torch.full(self.where.shape, -1, dtype=torch.long, device=self.where.device)
        return out if self.argmax_k is None else out.masked_scatter(self.where, self.argmax_k)

    @cached_property
    def p_argmax(self) -> torch.Tensor:  # (A, G) float32; 0 where not read
        return self._unpack(self.p_argmax_k)

    @cached_property
    def p_token(self) -> torch.Tensor:  # (A, G) float32; 0 where not read
        return self._unpack(self.p_token_k)

    def _unpack(self, values: torch.Tensor | None) -> torch.Tensor:
        out = torch.zeros(self.where.shape, dtype=torch.float32, device=self.where.device)
        return out if values is None else out.masked_scatter(self.where, values)

    @classmethod
    def from_logits(cls, logits: torch.Tensor, where: torch.Tensor, current: torch.Tensor,
                    verify: torch.Tensor, *, n_verify: int) -> Seen:
        """`logits (K, 1, V)` at the True entries of `where (A, G)`, row-major; `current (A, G)` the tokens
        (real ids there: `where` holds decided positions); `verify (K,)` bool: the position was read by a
        verify pass (WINO) rather than to be edited, `n_verify` of them.

        Edited rows: the argmax (the first maximum), and where it differs from the token (only there can
        a rewrite happen), softmax(logits) gathered at it and at the token, as SGLang computes them
        (float32); elsewhere the token itself and 0. The argmax differs from the token only where some
        other logit reaches the token's (`_runner_up`, one max pass without indices); only those rows
        get a `max` with indices and a softmax.
        Verify rows: the probability of the token, softmax(logits)[token] (`_token_probs`), and nothing
        else. Each reads the vocabulary once (twice where a rewrite may happen), never more than its rule
        needs.
        """
        flat = logits[:, 0]  # (K, V)
        if flat.dtype != torch.float32:
            flat = flat.float()
        tokens = current[where]  # (K,)
        K = flat.shape[0]
        arg_k = p_argmax = p_token = None
        if n_verify < K:  # edited rows
            edit = ~verify if n_verify else None
            rows = flat if edit is None else flat[edit]  # (E, V)
            tok = tokens if edit is None else tokens[edit]  # (E,)
            found, probs2 = tok, None
            maybe = _runner_up(rows, tok) >= rows.gather(-1, tok.unsqueeze(-1)).squeeze(-1)  # (E,)
            if bool(maybe.any()):
                found = tok.clone()
                found[maybe] = rows[maybe].max(-1).indices  # the first maximum, as argmax (and faster)
                differs = found != tok  # only there can a rewrite be
                if bool(differs.any()):
                    probs = torch.softmax(rows[differs], dim=-1)  # (D, V)
                    probs2 = torch.zeros(2, tok.shape[0], dtype=torch.float32, device=flat.device)
                    probs2[:, differs] = probs.gather(-1, torch.stack([found[differs], tok[differs]], -1)).T
            if edit is None:
                arg_k = found
                if probs2 is not None:
                    p_argmax, p_token = probs2[0], probs2[1]
            else:
                arg_k = torch.full((K,), -1, dtype=torch.long, device=flat.device).masked_scatter(edit, found)
                if probs2 is not None:
                    p_argmax, p_token = torch.zeros(2, K, dtype=torch.float32, device=flat.device).masked_scatter(
                        edit.expand(2, K), probs2).unbind(0)
        if n_verify:
            rows = flat if n_verify == K else flat[verify]  # (H, V)
            tok = tokens if n_verify == K else tokens[verify]  # (H,)
            p_verify = _token_probs(rows, tok)  # (H,)
            if n_verify == K:
                p_token = p_verify
            else:
                if p_token is None:
                    p_token = torch.zeros(K, dtype=torch.float32, device=flat.device)
                p_token[verify] = p_verify  # (a row of this function's own tensor)
        return cls(where=where, argmax_k=arg_k, p_argmax_k=p_argmax, p_token_k=p_token)


TOKEN_PROB_CHUNK_FLOATS = 1 << 22  # `_token_probs` works on row blocks of at most this many floats (16 MB)


def _token_probs(rows: torch.Tensor, tok: torch.Tensor) -> torch.Tensor:
    """`(H,)`: softmax(rows)[tok] of `rows (H, V)`, the probability of each row's token.

    One fused softmax pass per row (the float ops of SGLang's probabilities and of WINO's softmax,
    in float32), in blocks of rows, so that a large vocabulary never needs more than a block's
    probabilities at once."""
    step = max(1, TOKEN_PROB_CHUNK_FLOATS // max(1, rows.shape[-1]))
    index = tok.unsqueeze(-1)  # (H, 1)
    if rows.shape[0] <= step:
        return torch.softmax(rows, dim=-1).gather(-1, index).squeeze(-1)
    return torch.cat([torch.softmax(rows[i : i + step], dim=-1).gather(-1, index[i : i + step]).squeeze(-1)
                      for i in range(0, rows.shape[0], step)])


def _runner_up(rows: torch.Tensor, tok: torch.Tensor) -> torch.Tensor:
    """`(E,)`: the largest logit of each row of `rows (E, V)` but the one at its token `tok (E,)`.

    The argmax (the first maximum) differs from the token exactly where this reaches the token's logit.
    One max pass without indices, several times cheaper than `max` with them: the token's entry is set
    to -inf for the pass and written back after it, so `rows` (the caller's logits) leaves unchanged.
    """
    if rows.shape[0] == 0:
        return rows.new_zeros(0)
    if not rows.is_contiguous():  # a view whose entries may alias: work on a copy
        rows = rows.contiguous()
    index = tok.unsqueeze(-1)  # (E, 1)
    with torch.inference_mode():  # the logits may be inference tensors; nothing here needs autograd
        own = rows.gather(-1, index)
        rows.scatter_(-1, index, float("-inf"))
        try:
            best = rows.amax(-1)
        finally:
            rows.scatter_(-1, index, own)
    return best


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
    may_remask: torch.Tensor  # (A,) bool: the block's steps are still below its bound (`guard`)
    params: RevisionParams
    state: RevisionState  # counters of the rules in COUNTS already reset where the block is new
    seen: Seen | None  # the raw distribution at the decided positions of the rows that read one

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
    rewrites: bool = False  # `edited` may hold a position (a rule in EDITS ran)
    holds: bool = False  # `hold` may hold a row (a rule in HOLDS ran)

    @classmethod
    def keep(cls, ctx: Context) -> Plan:
        """The schedule's choice and nothing taken back: rule ``none``."""
        return ctx.kept

    def where(self, rows: torch.Tensor, other: Plan) -> Plan:
        """This plan on `rows (A,)`, `other` elsewhere."""
        def pick(a: torch.Tensor | bool, b: torch.Tensor | bool) -> torch.Tensor | bool:
            if isinstance(a, bool):
                return a or b
            return a if a is b else torch.where(rows.view(-1, *[1] * (a.dim() - 1)), a, b)

        return Plan(**{f: pick(getattr(self, f), getattr(other, f)) for f in self.__dataclass_fields__})


def _remdm(ctx: Context) -> Plan:
    """ReMDM's remasking in counts (kuleshov-group/remdm, diffusion.py, `_ddpm_caching_update`).

    With d decided tokens and m masks in the block and the schedule's quota q, the plain step leaves
    room = m - q masks; ReMDM's sigma_max = min(1, (1 - alpha_s) / alpha_t) is room / d in counts
    (the largest re-masking the next unmasking can make up for). Each decided token is re-masked
    when its uniform u < sigma, with
      cap      sigma = min(eta, sigma_max)                     (remdm-cap)
      rescale  sigma = eta * sigma_max                         (remdm-rescale)
      conf     sigma_i = softmax_i(-c_i) * sigma_max, c_i the confidence token i was decided with
               (remdm-conf: the less sure a token was, the likelier it goes back)
      loop     sigma = eta, only in a loop of remask_loop_steps steps that starts once the block is
               remask_alpha_on visible; the schedule pauses and each loop step confirms as many
               masks as it took back, so the visible share stays at alpha_on (remdm-loop; on LLaDA,
               ReMDM-LLaDA's llada_remdm_sample loops likewise once 7/8 of a block is written).
    Outside the loop the step then confirms q + r masks (r taken back), so the number of visible
    tokens follows the schedule exactly: ReMDM's unmasking probability (alpha_s - (1 - sigma) alpha_t)
    / (1 - alpha_t) in counts. At most `room` (outside the loop) or m (in it) are taken back, those
    with the smallest u; `remask_score` is sigma.
    """
    p, st = ctx.params, ctx.state
    d, m = ctx.decided.sum(-1), ctx.eligible.sum(-1)  # (A,)
    room = (m - ctx.quota).clamp(min=0)
    sigma_max = torch.where(d > 0, (room.float() / d.clamp(min=1).float()).clamp(max=1.0), 0.0)  # (A,)
    sid = p.sigma_id
    in_loop = None  # (A,) bool; None: no remdm row loops
    if "loop" in p.sigmas:
        share = d.float() / (d + m).clamp(min=1).float()
        in_loop = (ctx.may_remask & (sid == SIGMA_IDS["loop"]) & (m > 0) & (share >= p.alpha_on)
                   & (st.counter < p.loop_steps))
    # Each row's sigma from its variant; only the variants of the remdm rows are computed.
    variants = {"cap": lambda: torch.minimum(p.eta, sigma_max), "rescale": lambda: p.eta * sigma_max,
                "loop": lambda: torch.where(in_loop, p.eta, torch.zeros_like(p.eta))}
    present = [name for name in variants if name in p.sigmas]
    if len(present) == 1 and p.sigmas == {present[0]}:  # every remdm row uses it
        sigma = variants[present[0]]()  # (A,)
    else:  # the conf rows get 0 here and their weights below
        sigma = torch.zeros_like(p.eta)
        for name in present:
            sigma = torch.where(sid == SIGMA_IDS[name], variants[name](), sigma)
    sigma = sigma.unsqueeze(-1).expand_as(ctx.conf)  # (A, G)
    if "conf" in p.sigmas:
        conf_rows = (sid == SIGMA_IDS["conf"]).unsqueeze(-1)  # (A, 1)
        weights = torch.softmax((-st.decided_conf).masked_fill(~ctx.decided, float("-inf")), dim=-1).nan_to_num(0.0)
        sigma = torch.where(conf_rows, weights * sigma_max.unsqueeze(-1), sigma)
    sigma = sigma.masked_fill(~ctx.decided, 0.0)
    hit = ctx.decided & (ctx.uniform < sigma) & ctx.may_remask.unsqueeze(-1)  # (A, G)
    limit = room if in_loop is None else torch.where(in_loop, m, room)
    r = hit.sum(-1)  # (A,)
    if bool((r > limit).any()):  # more hits than room: the smallest uniforms first
        remasked = select_top(-ctx.uniform, hit, limit)
        r = remasked.sum(-1)
    else:  # every hit fits (what select_top would keep)
        remasked = hit
    if in_loop is None:
        return dataclasses.replace(ctx.kept, count=ctx.quota + r, remasked=remasked, remask_score=sigma.float())
    return dataclasses.replace(ctx.kept, count=torch.where(in_loop, r, ctx.quota + r), remasked=remasked,
                               remask_score=sigma.float(), counter=st.counter + in_loop.long(), pause=in_loop)


def _rcr(ctx: Context) -> Plan:
    """Running Confidence Remasking (autonomousvision/mdpo, src/mdlm_generation_utils.py,
    `diffusion_generate(rcr=True)`).

    MDPO unmasks every mask of the block, records each token's confidence in `overtime_confidence`,
    then re-masks the lowest-confidence tokens until as many masks are left as the later steps'
    quotas. Here: with d decided tokens (scored by the confidence they were decided with) and the
    masks (scored by this step's confidence), keep the d + q best of both (q the schedule's quota;
    ties to the earlier position); the decided tokens outside are taken back and the masks inside are
    confirmed (q + r of them). `remask_score` is the confidence the token was decided with.
    Unlike MDPO, which ranks every decided token of the sequence, only the current block competes.
    """
    st = ctx.state
    pool = ctx.decided | ctx.eligible
    score = torch.where(ctx.decided, st.decided_conf, ctx.conf.float())
    kept = select_top(score, pool, ctx.decided.sum(-1) + ctx.quota)
    remasked = ctx.decided & ~kept & ctx.may_remask.unsqueeze(-1)
    return dataclasses.replace(ctx.kept, count=ctx.quota + remasked.sum(-1), remasked=remasked,
                               remask_score=st.decided_conf.masked_fill(~ctx.decided, 0.0))


def _wino(ctx: Context) -> Plan:
    """Draft and verify (Feng-Hong/WINO-DLLM, LLaDA/decoding.py, `decoding_wino`).

    Draft: the schedule's masks (WINO: every mask above `threshold`, at least one), at most
    min(max(int(0.7 m), 5), 20) of them (m masks in the block). Verify: WINO appends a shadow copy
    of the block whose position i attends to everything but the token at i, so one forward also
    gives each decided token's probability without seeing itself; here that is the verify pass
    (`models.base.logits_hidden`, a forward that counts in NFE), read as `seen.p_token`. When the
    step drafts more than one token, the decided tokens whose verify probability < verify_threshold
    are taken back; if they are at least as many as the previous step's drafts (30 before the
    block's first step), only that count minus one, the least supported first. `remask_score` is
    the verify probability.
    """
    assert ctx.seen is not None  # the step refuses wino rows without verify logits
    p, m = ctx.params, ctx.eligible.sum(-1)
    accept = torch.minimum(ctx.quota, ctx.constants.wino_cap[m])  # (A,)
    last = torch.where(ctx.block_step == 0, WINO_FIRST_LAST_ACCEPT, ctx.state.counter)
    checked = ((accept > 1) & ctx.may_remask).unsqueeze(-1)  # (A, 1): WINO verifies when it drafted several
    p_token = ctx.seen.p_token  # (A, G): 0 outside the positions read, which are decided ones
    weak = ctx.decided & (p_token < p.verify_threshold.unsqueeze(-1)) & checked
    n = weak.sum(-1)
    over = n >= last
    remasked = weak  # every weak one, where they are fewer than `last` (what select_top would keep)
    if bool(over.any()):  # too many to take back: last - 1 of them, the least supported first
        if bool((over & (last > 2)).any()):
            remasked = select_top(-p_token, weak, torch.where(over, last - 1, n))
        else:  # one at most in each row over (last <= 2): select_top's first pick, without its sort
            one = _first_least(p_token, weak) & (last > 1).unsqueeze(-1)  # (A, G)
            remasked = torch.where(over.unsqueeze(-1), weak & one, weak)
    return dataclasses.replace(ctx.kept, count=accept, remasked=remasked, remask_score=p_token, counter=accept)


def _first_least(score: torch.Tensor, pool: torch.Tensor) -> torch.Tensor:
    """`(A, G)` bool: the first position of each row's smallest `score` within `pool` (a position of
    a row with an empty pool, which the caller masks by `pool`). The same as `select_top(-score, pool, 1)`:
    its stable sort ranks first the earliest of the ties, and `min` returns the first minimal index.
    `score` must be finite in `pool` (+inf marks the positions outside it)."""
    least = score.masked_fill(~pool, float("inf")).min(-1).indices  # (A,)
    return torch.arange(score.shape[-1], device=score.device) == least.unsqueeze(-1)


def _joint_threshold(ctx: Context) -> Plan:
    """LLaDA 2.1's mask-to-token + token-to-token step (SGLang 0.5.23, joint_threshold.py,
    `JointThreshold._step_per_row` and `joint_threshold_update_step_vectorized`).

    Mask to token is the schedule's (the `llada21` preset: masks whose softmax probability >
    threshold, at least the most probable one). Token to token: every decided token of the block
    whose raw argmax x differs from it and has probability p(x) > edit_threshold is rewritten to x,
    in the same step, from the same forward (the model must predict at visible positions). Once the
    block has no mask, it stays open: each further step counts one edit-only step and edits again;
    it closes at the step that changes nothing or whose count exceeds max_post_edit_steps (that
    step edits nothing; its forward already saw the block's final tokens).
    """
    assert ctx.seen is not None  # the step refuses joint_threshold rows without logits at decided positions
    p, st, seen = ctx.params, ctx.state, ctx.seen
    m = ctx.eligible.sum(-1)  # (A,)
    edit_only = m == 0  # (A,) the block has no mask: its edit-only phase
    counter = st.counter + edit_only.long()
    exceeded = edit_only & (counter > p.max_post_edit_steps)
    hold = m == ctx.quota  # (A,) no mask left after the step
    if seen.p_argmax_k is None:  # no argmax differs from its token: nothing to rewrite
        return dataclasses.replace(ctx.kept, counter=counter, hold=hold & ~edit_only, holds=True)
    # p_argmax > 0 only at the positions read (decided ones) whose argmax differs from the token, and
    # edit_threshold >= 0: the test below needs neither condition again.
    edited = (seen.p_argmax > p.edit_threshold.unsqueeze(-1)) & ~exceeded.unsqueeze(-1)  # (A, G)
    closed = edit_only & (exceeded | ~edited.any(-1))
    return dataclasses.replace(ctx.kept, edited=edited, edit_tokens=torch.where(edited, seen.argmax, -1),
                               edit_prob=seen.p_argmax.masked_fill(~edited, 0.0),
                               edit_old_prob=seen.p_token.masked_fill(~edited, 0.0), counter=counter,
                               hold=hold & ~closed, rewrites=True, holds=True)


Rule = Callable[[Context], Plan]
RULES: dict[str, Rule] = {"none": Plan.keep, "remdm": _remdm, "rcr": _rcr, "wino": _wino,
                          "joint_threshold": _joint_threshold}
if tuple(RULES) != REVISIONS:  # the validator and the registry must name the same rules
    raise ImportError(f"revision registry {tuple(RULES)} != config.REVISIONS {REVISIONS}")


def plan(ctx: Context) -> Plan:
    """Each row's plan under its own rule (only the rules present are evaluated)."""
    if ctx.params.single is not None:  # every row runs the same rule
        return RULES[ctx.params.single](ctx)
    out = ctx.kept
    for name in ctx.params.rules:
        out = RULES[name](ctx).where(ctx.params.rule_id == REVISION_IDS[name], out)
    return out


# ----- logits the rules read ---------------------------------------------------------------------
def previous_tokens(current: torch.Tensor, block_size: torch.Tensor) -> torch.Tensor:
    """`(A, G)`: the token at the previous position of the same block, -1 at a block's first position."""
    A, G = current.shape
    prev = torch.cat([torch.full((A, 1), -1, dtype=current.dtype, device=current.device), current[:, :-1]], dim=1)
    first = torch.arange(G, device=current.device).unsqueeze(0) % block_size.unsqueeze(-1) == 0  # (A, G)
    return prev.masked_fill(first, -1)


def penalize(logits: torch.Tensor, where: torch.Tensor, prev: torch.Tensor, penalty: torch.Tensor) -> torch.Tensor:
    """JointThreshold's repetition penalty: `penalty` of the row subtracted from each position's logit
    of the token the previous position of its block holds (SGLang adds -penalty_lambda there before the
    argmax). `logits (K, 1, V)` at the True entries of `where (A, G)`; returns a new tensor."""
    rows = where.nonzero(as_tuple=True)[0]  # (K,)
    ids = prev[where]  # (K,)
    amount = torch.where(ids >= 0, penalty[rows], 0.0).to(logits.dtype)  # (K,)
    out = logits.clone()
    out[torch.arange(len(ids), device=logits.device), 0, ids.clamp(min=0)] -= amount
    return out


# ----- budgets -----------------------------------------------------------------------------------
def extra_steps(config: DecodeConfig) -> int:
    """Steps a block may take beyond the plain schedule's under `config`'s rule (an upper bound):
    joint_threshold's edit-only steps and the closing one, remdm's loop, WINO's re-drafts."""
    if config.revise == "joint_threshold":
        return config.max_post_edit_steps + 1
    if config.revise == "remdm" and config.remask_sigma == "loop":
        return config.remask_loop_steps
    if config.revise == "wino":
        return WINO_FIRST_LAST_ACCEPT
    return 0


def max_steps(config: DecodeConfig) -> int:
    """The most steps a decode under `config` takes (the trace schema's bound).

    Without revision every step confirms at least one position, or the schedule plans at most
    gen_length steps. A rule may re-mask only while the block's steps are below its block size plus
    `extra_steps` (`step`'s guard), after which each step confirms at least one mask again.
    """
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
