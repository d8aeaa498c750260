"""The SGLang plugin's adapter: SGLang's per-block tensors in, the shared step core, results written back.

Nothing here imports SGLang, so the main test suite can drive it with stand-ins shaped like
SGLang's objects. The plugin (`dllm_viz.serve.sglang.DllmVizPolicy`) only forwards to it:
  - `init_block_states(forward_batch, policy, ...)` when a block starts: one `BlockState` per
    request (its block's DecodeConfig, its own generator seeded by `block_seed`, the schedule state);
  - `advance_blocks(forward_batch, full_logits, states, ...)` once per forward: one call of
    `dllm_viz.core.step.denoise_step`, the playground's own step, restricted to the block, with the
    playground's own glue around it (`dllm_viz.core.canvas`: spans, noise, temperature, commit); for a
    policy with an insert/delete rule (`indel`), its step on the whole block instead (`advance_indel_blocks`,
    the playground's glue of `dllm_viz.core.indel_rows`: the block's prompt part stays, positions move).

SGLang's tensors, as the plugin receives them (B requests, L = block size):
  forward_batch.input_ids `(B * L,)`, the blocks, edited in place (SGLang keeps the tensor);
  forward_batch.positions `(B * L,)` absolute positions (a block's first one seeds its generator);
  forward_batch.dllm_prompt_mask `(B, L)` or None: literal prompt tokens that equal the mask id;
  forward_batch.rids, forward_batch.sampling_info (temperatures, top_ps, top_ks, sampling_seed);
  full_logits `(B * L, V)`.
A block's first `offset = L - M` positions are the prompt's (M masks at the block's start); the
step sees the M generated positions, exactly as `decode` sees a request of gen_length M.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

from dllm_viz.core import rules
from dllm_viz.core.alignment import EditTokens
from dllm_viz.core.canvas import PerRows, RowSet, Spans, candidate_logits, commit, draw_noise, step_logits
from dllm_viz.core.config import MAX_SEED, DecodeConfig
from dllm_viz.core.indel import InDelParams, InDelState
from dllm_viz.core.indel_rows import BlockMemory, Carried, RowsState, draw_masks, stack
from dllm_viz.core.revision import RevisionState
from dllm_viz.core.step import StepState, denoise_step, revision_targets
from dllm_viz.serve.policy import Policy, block_seed, request_seed

# SGLang's "no top-k" value (sglang.srt.sampling.sampling_params.TOP_K_ALL); the plugin checks
# at import that SGLang still uses it.
TOP_K_ALL = 1 << 30


def request_policy(policy: Policy, *, temperature: float, top_p: float, top_k: int) -> Policy:
    """`policy` with one request's sampling parameters applied (as SGLang normalised them).

    SGLang turns temperature 0 into temperature 1 with top_k 1, and fills unset fields with
    neutral values (temperature 1, top_p 1, top_k TOP_K_ALL). Under `request_sampling="override"`
    a non-neutral value replaces the policy's: top_k 1 means argmax, another temperature replaces
    the policy's temperature (and its stages), top_k and top_p become the vocabulary filters.
    """
    if policy.request_sampling == "ignore":
        return policy
    changes: dict[str, Any] = {}
    if top_k == 1:
        changes.update(temperature=0.0, temperature_stages=None)
    elif temperature != 1.0:
        changes.update(temperature=temperature, temperature_stages=None)
    if 1 < top_k < TOP_K_ALL:
        changes["vocab_top_k"] = top_k
    if top_p < 1.0:
        changes["top_p"] = top_p
    return policy.replace(**changes) if changes else policy


@dataclass
class BlockState:
    """One request's state within its current block (carried between FDFO rounds by SGLang)."""

    config: DecodeConfig | None  # the block's DecodeConfig; None when the block starts with no mask
    generator: torch.Generator  # CPU generator seeded with block_seed(request seed, block start)
    masks: int  # M: masked positions at the block's start
    offset: int  # block position of the first generated slot (block_size - M; > 0 in a prompt's block)
    k: int  # topk_decay's current k
    block_step: int = 0  # steps taken in this block
    start: int = 0  # absolute position of the block's first column (start + offset: the text before the span)
    # What a revision rule carries between steps (core.revision.RevisionState), for this block.
    counter: int = 0
    hold: bool = False  # the block stays open with no mask left (joint_threshold's edit-only steps)
    decided_conf: torch.Tensor | None = None  # (M,) float32 confidence each generated slot was decided with
    indel: BlockMemory | None = None  # an insert/delete rule's state in this block (`core.indel_rows`)


def masked_positions(forward_batch: Any, block_size: int, mask_id: int) -> torch.Tensor:
    """Positions still to generate, `(B, L)`: mask ids that are not literal prompt tokens."""
    B, L = forward_batch.batch_size, block_size
    masked = forward_batch.input_ids.view(B, L) == mask_id
    prompt_mask = forward_batch.dllm_prompt_mask
    return masked & ~prompt_mask if prompt_mask is not None else masked


def init_block_states(forward_batch: Any, policy: Policy, *, block_size: int, mask_id: int) -> list[BlockState]:
    """The state of each request's block as it starts: its config, generator and schedule state."""
    B, L = forward_batch.batch_size, block_size
    if forward_batch.positions is None:
        raise RuntimeError("the dllm-viz policy needs forward_batch.positions to seed each block's generator")
    masks = masked_positions(forward_batch, L, mask_id).sum(-1).tolist()
    starts = forward_batch.positions.view(B, L)[:, 0].tolist()  # absolute position of each block
    policies, seeds = [policy] * B, [request_seed(rid) for rid in forward_batch.rids]
    info = forward_batch.sampling_info
    if info is not None:
        params = zip(info.temperatures.view(-1).tolist(), info.top_ps.view(-1).tolist(), info.top_ks.view(-1).tolist())
        policies = [request_policy(policy, temperature=t, top_p=p, top_k=int(k)) for t, p, k in params]
        if info.sampling_seed is not None:  # only with --enable-deterministic-inference
            seeds = [int(s) & MAX_SEED for s in info.sampling_seed.view(-1).tolist()]
    states = []
    for pol, seed, start, m in zip(policies, seeds, starts, masks):
        gen = torch.Generator(device="cpu").manual_seed(block_seed(seed, int(start)))
        config = pol.block_config(m) if m else None
        states.append(BlockState(config=config, generator=gen, masks=m, offset=L - m, start=int(start),
                                 k=config.initial_k if config else 0))
    return states


def _revision_state(st: list[BlockState], G: int, dev: torch.device) -> RevisionState:
    """What the blocks' revision rules carried from their last step, as the step reads it: `(A,)` counters and holds,
    `(A, G)` the confidence each decided position was confirmed with (zero where none, and past a block's masks)."""
    conf = [s.decided_conf if s.decided_conf is not None else torch.zeros(s.masks) for s in st]
    return RevisionState(counter=torch.tensor([s.counter for s in st], dtype=torch.long, device=dev),
                         hold=torch.tensor([s.hold for s in st], device=dev),
                         decided_conf=torch.stack([F.pad(c, (0, G - s.masks)) for c, s in zip(conf, st)]).to(dev))


@torch.inference_mode()
def advance_blocks(forward_batch: Any, full_logits: torch.Tensor, states: list[BlockState], *,
                   block_size: int, mask_id: int, end_of_text_ids: tuple[int, ...] = (),
                   row_sets: PerRows[RowSet] | None = None, edit_ids: tuple[int, ...] = ()) -> list[bool]:
    """One step of every unfinished block, written into `forward_batch.input_ids` in place.

    `end_of_text_ids` (the policy's: `end_of_text_ids(policy)`, the decoder's rule) let the
    end-of-text early stop fill a block whose remaining masks all predict end-of-text.
    `row_sets` keeps the blocks' `StepParams` between calls: they are rebuilt only when the set of
    unfinished blocks changes (a new block, a finished one), not at every step.

    Returns, per request, whether its block is done: only when a forward has already seen the
    block's final tokens (SGLang keeps that forward's KV for the block): at the call after the last
    confirmation, or, for a block a revision rule holds open (joint_threshold), at the step that
    closes it without changing anything, as SGLang's JointThreshold reports it. `edit_ids` (DELETE, SPLIT) are
    never written here."""
    B, L = forward_batch.batch_size, block_size
    ids = forward_batch.input_ids.view(B, L)  # (B, L), shares storage: written in place below
    masked_all = masked_positions(forward_batch, L, mask_id)  # (B, L)
    done = [n == 0 and not s.hold for n, s in zip(masked_all.sum(-1).tolist(), states)]
    active = [i for i, d in enumerate(done) if not d]
    if not active:
        return done
    dev = ids.device
    act = torch.tensor(active, device=dev)
    st = [states[i] for i in active]
    configs = [s.config for s in st]

    # SGLang's block rows -> the generated span of each request: (A, G), G the most masks of a block,
    # from the block's first masked position; one scratch column past the block (L) pads the others.
    def build() -> RowSet:  # the prompt lengths: the request's text before the span
        spans = Spans.at(torch.tensor([s.offset for s in st], device=dev),
                         torch.tensor([s.masks for s in st], device=dev), scratch=L)
        return RowSet.build(configs, spans, end_of_text_ids=tuple(end_of_text_ids), device=dev, mask_id=mask_id,
                            prompt_lengths=[s.start + s.offset for s in st], edit_ids=tuple(edit_ids))

    rows = (row_sets if row_sets is not None else PerRows()).get(st, build)
    spans = rows.spans
    block_ids = F.pad(ids[act], (0, 1))  # (A, L + 1)
    current = spans.read(block_ids)  # (A, G)
    masked = spans.read(F.pad(masked_all[act], (0, 1))) & spans.valid  # (A, G)
    logits = full_logits.view(B, L, -1)[act[masked.nonzero(as_tuple=True)[0]], spans.pos[masked]]  # (M, V)

    # Uniforms from each request's own generator, drawn on CPU so that every device and every
    # tensor-parallel rank sees the same stream: (2, M) per block step, as `decode` draws them.
    noise = draw_noise([s.generator for s in st], [s.masks for s in st], dev)  # (A, 2, G)
    temperature = rows.temperature_at(configs, [s.block_step for s in st], lambda: masked.sum(-1).tolist())  # (A,)
    long = lambda values: torch.tensor(values, dtype=torch.long, device=dev)  # noqa: E731
    params, G = rows.params, spans.width
    revision = _revision_state(st, G, dev) if params.revision is not None else None
    state = StepState(k=long([s.k for s in st]), block_step=long([s.block_step for s in st]),
                      block=long([0] * len(st)), temperature=temperature, revision=revision)
    seen, targets = None, None
    if params.revision is not None:
        targets = revision_targets(masked, spans.valid, params, state)
        if targets.hidden_count:
            raise RuntimeError("a verify pass (revise='wino') cannot run inside SGLang's step; Policy refuses it")
        if targets.any:  # joint_threshold reads this forward's logits at the block's decided slots
            where_rows = targets.where.nonzero(as_tuple=True)[0]
            at_targets = full_logits.view(B, L, -1)[act[where_rows], spans.pos[targets.where]]
            seen = candidate_logits(at_targets, mask_id, edit_ids)
    result = denoise_step(step_logits(logits), masked, params, state, noise, current=current,
                          valid=spans.valid, seen=seen, targets=targets)

    # Write back: the tokens into SGLang's tensor (in place), the schedule state onto the requests.
    ids.index_copy_(0, act, spans.write(block_ids, commit(result, current, mask_id=mask_id).span)[:, :L])
    for s, k, block_step in zip(st, result.next_k.tolist(), result.next_block_step.tolist()):
        s.k, s.block_step = k, block_step
    if result.next_revision is not None:
        nr = result.next_revision
        changed = (result.decided | result.revision.remasked).any(-1)  # type: ignore[union-attr]
        closed = (result.finished & ~changed).tolist()
        for a, (s, counter, hold) in enumerate(zip(st, nr.counter.tolist(), nr.hold.tolist())):
            s.counter, s.hold, s.decided_conf = counter, hold, nr.decided_conf[a, : s.masks].cpu()
            if closed[a]:  # a held block closed by a step that changed nothing: this forward saw its tokens
                done[active[a]] = True
    return done


@torch.inference_mode()
def advance_indel_blocks(forward_batch: Any, full_logits: torch.Tensor, states: list[BlockState], *,
                         block_size: int, tokens: EditTokens, carried: Carried) -> list[bool]:
    """One step of every unfinished block under an insert/delete rule (SGLang's JointThresholdInDel), written
    into `forward_batch.input_ids` in place: the rule's step on each whole block (`core.indel.indel_step`,
    its prompt part kept), the masks' tokens drawn from each block's generator at T > 0. `carried` keeps the
    rule's state of the blocks stepping together. Returns SGLang's done flags: a block the rule finished,
    at once when its last step changed nothing, else after one more forward (that sees its final tokens)."""
    B, L = forward_batch.batch_size, block_size
    ids = forward_batch.input_ids.view(B, L)  # (B, L), shares storage
    done = [s.config is None for s in states]  # a block with no mask; a finished one the rule answers itself
    active = [i for i, d in enumerate(done) if not d]
    if not active:
        return done
    st, dev = [states[i] for i in active], ids.device
    act = torch.tensor(active, device=dev)
    configs = [s.config for s in st]

    def build() -> RowsState:
        prompt = torch.arange(L, device=dev) < torch.tensor([s.offset for s in st], device=dev).unsqueeze(-1)  # (A, L)
        fresh = InDelState.initial(ids[act], prompt, tokens.mask)
        return RowsState(members=tuple(st), params=InDelParams.from_configs(configs, tokens, widths=[L] * len(st),
                                                                            device=dev),
                         state=stack([s.indel for s in st], fresh, tokens.mask),
                         index=torch.zeros(len(st), dtype=torch.long, device=dev),
                         geometry=rules.INDELS[configs[0].indel])

    rs = carried.get(st, build)
    block, logits = ids[act], full_logits.view(B, L, -1)[act].float()  # (A, L), (A, L, V)
    noise = draw_noise([s.generator for s in st], [s.masks for s in st], dev)  # (A, 2, M): the block's uniforms
    offset = torch.tensor([s.offset for s in st], device=dev).unsqueeze(-1)
    u = noise[:, 0].gather(1, (torch.arange(L, device=dev) - offset).clamp(min=0, max=max(0, noise.shape[-1] - 1)))
    temperature = torch.tensor([c.temperature for c in configs], dtype=torch.float32, device=dev)
    drawn = draw_masks(logits, ~rs.state.prompt & (block == tokens.mask), u, temperature=temperature,
                       vocab_top_k=torch.tensor([c.vocab_top_k or 0 for c in configs], device=dev),
                       top_p=torch.tensor([c.top_p or 1.0 for c in configs], dtype=torch.float32, device=dev),
                       mask_id=tokens.mask)
    out = rs.geometry.step(logits, block, rs.state, rs.params, drawn=drawn)
    rs.state = out.state
    ids.index_copy_(0, act, out.block.to(ids.dtype))
    for a, d in enumerate(out.done.tolist()):
        done[active[a]] = d
    return done
