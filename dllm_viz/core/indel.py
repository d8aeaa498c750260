"""Insert and delete edits (docs/indel.md): SGLang 0.5.23's ``JointThresholdInDel`` as pure, batched tensor functions.

Source: sgl-project/sglang 0.5.23, ``python/sglang/srt/dllm/algorithm/joint_threshold_indel.py``, class
``JointThresholdInDel`` (``__init__``, ``init_step_state``, ``step``, ``_apply_edit_operations``), SGLang PR
#31773, built for LLaDA 2.2's "Levenshtein editing". It is JointThreshold (``core.revision._joint_threshold``)
with two edit tokens: a model may write DELETE at a position (the position is removed, the block closes up
and gets a mask at its end) or SPLIT (a new mask opens before the token there, which moves one place right;
the block is cut to its size). SGLang loops over the rows of a batch; here every function works on all
rows at once, with each row's own settings (`InDelParams`), and gives the same blocks (tests/sglang).

One step of a block, `indel_step`, in SGLang's order:
  (1) x = argmax of the logits at every position, p = softmax(logits)[x] where it decides (`confidence`);
  (2) the block's masks, original (masks the block began with, and the positions they moved to) or
      introduced (opened by a split, padded after a delete); the budget (`budget`): every step counts one
      update, every step with no original mask left counts one post-edit step, cumulatively (a mask that
      comes back does not reset it, which SGLang's docstring says departs from the released decoder); the
      step is the final clean-up once the post-edit count reaches `max_post_edit_steps` (or with a budget of
      0, once no original mask is left), or once the updates pass block size + budget;
  (3) outside the clean-up, a MASK predicted at an original mask falls back to the best other token
      (`fallback_at_original_masks`): an original mask must resolve;
  (4) mask to token (`select_masks`): while original masks remain, every mask above `threshold` if they
      are at least 1 + the introduced masks, else that many of the most probable (``torch.topk``); once none
      remains, every mask; in the clean-up every mask;
  (5) token to token: every visible generated token whose argmax differs, with p > `edit_threshold`;
  (6) the clean-up may not write MASK, DELETE or SPLIT: there the best other token (`scrub`);
  (7) anti-loop (`anti_loop`): a block seen before as a step's input changes, at its least confident
      changing position, to the best token not yet written there in this block;
  (8) the writes, then DELETE and SPLIT (`core.alignment.apply_edits`), and the record of what moved.
A step with nothing to write finishes the row; a clean-up finishes it too, and it may emit at once when
the clean-up changed nothing (SGLang's ``done``: else one more forward sees the final block first).

Shapes: A rows (requests), L positions of the block tensor, V the vocabulary. A row's block may be
narrower than L (`InDelParams.width`); its positions at and past the width are outside and never change.
The prompt part of a block (SGLang's ``prompt_index``: committed tokens before the generated span, always
a prefix) never changes either.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import torch

from dllm_viz.core.alignment import EditTokens, StepEdits, apply_edits

# SGLang's defaults (JointThresholdInDel.__init__: algorithm_config.get(name, default)) and LLaDA 2's block
# (sglang/srt/dllm/config.py, DLLM_PARAMS["LLaDA2MoeModelLM"]["block_size"]).
SGLANG_DEFAULTS = {"threshold": 0.5, "edit_threshold": 0.0, "max_post_edit_steps": 16}
LLADA2_BLOCK_SIZE = 32


@dataclass(frozen=True, kw_only=True)
class InDelSettings:
    """One request's knobs of the insert/delete rule, SGLang's defaults (`SGLANG_DEFAULTS`) unless given."""

    threshold: float = 0.5  # mask to token: masks whose probability of the argmax > threshold
    edit_threshold: float = 0.0  # token to token: visible tokens whose argmax differs, probability > this
    max_post_edit_steps: int = 16  # steps with no original mask left, cumulative, before the clean-up (>= 0)
    block_size: int = LLADA2_BLOCK_SIZE  # positions per block (the clean-up comes by block_size + budget updates)

    def __post_init__(self) -> None:
        check_settings(threshold=self.threshold, edit_threshold=self.edit_threshold,
                       max_post_edit_steps=self.max_post_edit_steps, block_size=self.block_size)


def check_settings(*, threshold: Any, edit_threshold: Any, max_post_edit_steps: Any, block_size: Any) -> None:
    """ValueError naming the first bad knob: thresholds in [0, 1], `max_post_edit_steps` an int >= 0 (SGLang
    raises for a negative one), `block_size` an int >= 1."""
    for name, value in (("threshold", threshold), ("edit_threshold", edit_threshold)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
            raise ValueError(f"{name}={value!r} is invalid: expected a number in [0, 1]")
    for name, value, low in (("max_post_edit_steps", max_post_edit_steps, 0), ("block_size", block_size, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"{name}={value!r} is invalid: expected an int >= {low}")


def check_edit_tokens(vocab_size: int, mask_id: int, delete_id: Any, split_id: Any) -> EditTokens:
    """The model's edit tokens, or the ValueError SGLang's DllmConfig raises (named): both present, ints in
    the vocabulary, distinct from each other and from the mask."""
    if delete_id is None or split_id is None:
        raise ValueError(f"delete_token_id={delete_id!r}, split_token_id={split_id!r} is invalid: insert/delete "
                         "edits need a model that declares both edit tokens (one trained to edit lengths)")
    for name, value in (("delete_token_id", delete_id), ("split_token_id", split_id)):
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < vocab_size:
            raise ValueError(f"{name}={value!r} is invalid: expected an int in the vocabulary [0, {vocab_size})")
    if len({mask_id, delete_id, split_id}) != 3:
        raise ValueError(f"delete_token_id={delete_id}, split_token_id={split_id} is invalid: expected ids distinct "
                         f"from each other and from mask_token_id={mask_id}")
    return EditTokens(mask=mask_id, delete=delete_id, split=split_id)


def check_model(model: Any) -> EditTokens:
    """`check_edit_tokens` of a denoiser's attributes (`delete_token_id`, `split_token_id`, `vocab_size` or
    its tokenizer's length, `mask_token_id`): a model that cannot edit lengths is a named ValueError."""
    vocab = getattr(model, "vocab_size", None)
    tokenizer = getattr(model, "tokenizer", None)
    if vocab is None and tokenizer is not None:
        vocab = len(tokenizer) if hasattr(tokenizer, "__len__") else getattr(tokenizer, "vocab_size", None)
    if not isinstance(vocab, int):
        raise ValueError(f"model={getattr(model, 'name', model)!r} is invalid: its vocabulary size is unknown")
    return check_edit_tokens(vocab, model.mask_token_id, getattr(model, "delete_token_id", None),
                             getattr(model, "split_token_id", None))


@dataclass(frozen=True)
class InDelParams:
    """Every request's settings, one row per request, built once (`from_settings`)."""

    threshold: torch.Tensor  # (A,) float32 (SGLang compares a float32 probability with the Python float)
    edit_threshold: torch.Tensor  # (A,) float32
    budget: torch.Tensor  # (A,) long: max_post_edit_steps
    width: torch.Tensor  # (A,) long: block size
    tokens: EditTokens

    @classmethod
    def from_settings(cls, settings: Sequence[InDelSettings], tokens: EditTokens, *,
                      device: torch.device | str = "cpu") -> InDelParams:
        def col(values: list, dtype: torch.dtype) -> torch.Tensor:
            return torch.tensor(values, dtype=dtype, device=device)

        s = list(settings)
        return cls(threshold=col([x.threshold for x in s], torch.float32),
                   edit_threshold=col([x.edit_threshold for x in s], torch.float32),
                   budget=col([x.max_post_edit_steps for x in s], torch.long),
                   width=col([x.block_size for x in s], torch.long), tokens=tokens)

    @classmethod
    def from_configs(cls, configs: Sequence[Any], tokens: EditTokens, *, widths: Sequence[int] | None = None,
                     device: torch.device | str = "cpu") -> InDelParams:
        """The rows of DecodeConfigs (their `threshold`, `edit_threshold`, `max_post_edit_steps`); each row's
        block is `widths[a]` positions (SGLang's block, prompt part included), else its `block_size`."""
        ws = list(widths) if widths is not None else [c.block_size for c in configs]
        return cls.from_settings([InDelSettings(threshold=c.threshold, edit_threshold=c.edit_threshold,
                                                max_post_edit_steps=c.max_post_edit_steps, block_size=w)
                                  for c, w in zip(configs, ws)], tokens, device=device)


@dataclass(frozen=True)
class InDelState:
    """What a row carries from step to step within one block (SGLang's per-request state dict)."""

    prompt: torch.Tensor  # (A, L) bool: committed positions of the block (a prefix), never written
    orig: torch.Tensor  # (A, L) bool: SGLang's is_orig_mask, moved with the token by deletes and splits
    updates: torch.Tensor  # (A,) long: num_update_steps
    post_edit: torch.Tensor  # (A,) long: post_edit_steps (cumulative)
    finished: torch.Tensor  # (A,) bool
    seen: torch.Tensor  # (A, S, L) long: the block entering each earlier step (-1: none), the anti-loop's keys
    history: torch.Tensor  # (A, S, L) long: the token each earlier step wrote at each position (-1: none)

    @classmethod
    def initial(cls, block: torch.Tensor, prompt: torch.Tensor, mask_id: int) -> InDelState:
        """The state of blocks `block (A, L)` about to take their first step (SGLang's init_step_state):
        the original masks are the masks outside the prompt."""
        A, L = block.shape
        zero = torch.zeros(A, dtype=torch.long, device=block.device)
        empty = torch.zeros(A, 0, L, dtype=torch.long, device=block.device)
        return cls(prompt=prompt, orig=~prompt & (block == mask_id), updates=zero, post_edit=zero.clone(),
                   finished=torch.zeros(A, dtype=torch.bool, device=block.device), seen=empty, history=empty.clone())


@dataclass(frozen=True)
class InDelStep:
    """What one step did, one row per request."""

    block: torch.Tensor  # (A, L) long: the block after the step (the next forward's input)
    state: InDelState  # the state after it
    done: torch.Tensor  # (A,) bool: the row may emit its block now (SGLang's `done`)
    cleanup: torch.Tensor  # (A,) bool: this step was the row's final clean-up
    confidence: torch.Tensor  # (A, L) float: p of the argmax (after the fallback) where read, 0 elsewhere
    edits: StepEdits  # the operations at each input position and the map from input to output positions


def confidence(logits: torch.Tensor, x: torch.Tensor, read: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """`(p (A, L), probs (K, V))`: softmax(logits)[x] of `logits (A, L, V)` at the argmax `x (A, L)` where
    `read (A, L)` holds (0 elsewhere), and the K softmax rows of those positions (row-major), which the
    fallback reads again. SGLang's float ops (softmax over the vocabulary, then gather), on fewer rows."""
    probs = torch.softmax(logits[read], dim=-1)  # (K, V)
    p = torch.zeros(read.shape, dtype=probs.dtype, device=logits.device)
    p[read] = probs.gather(-1, x[read].unsqueeze(-1)).squeeze(-1)
    return p, probs


@dataclass(frozen=True)
class Budget:
    """Step (2): the masks of each row and where its budget stands."""

    masks: torch.Tensor  # (A, L) bool: masks of the block outside the prompt
    original: torch.Tensor  # (A, L) bool: ... that are original
    n_original: torch.Tensor  # (A,) long
    n_masks: torch.Tensor  # (A,) long
    updates: torch.Tensor  # (A,) long: num_update_steps after this step
    post_edit: torch.Tensor  # (A,) long: post_edit_steps after this step
    cleanup: torch.Tensor  # (A,) bool: the final clean-up (before select_masks may add the zero-budget case)


def budget(block: torch.Tensor, state: InDelState, params: InDelParams, inside: torch.Tensor) -> Budget:
    """Step (2) for every row (finished rows count nothing)."""
    active = ~state.finished
    masks = inside & ~state.prompt & (block == params.tokens.mask)  # (A, L)
    original = state.orig & masks
    n_original, n_masks = original.sum(-1), masks.sum(-1)
    updates = state.updates + active.long()
    post_edit = state.post_edit + (active & (n_original == 0)).long()
    b = params.budget
    cleanup = (((b > 0) & (post_edit >= b)) | ((b == 0) & (n_original == 0)) | (updates > params.width + b))
    return Budget(masks=masks, original=original, n_original=n_original, n_masks=n_masks, updates=updates,
                  post_edit=post_edit, cleanup=cleanup & active)


def fallback_at_original_masks(logits: torch.Tensor, x: torch.Tensor, p: torch.Tensor, probs: torch.Tensor,
                               read: torch.Tensor, where: torch.Tensor, mask_id: int) -> tuple[torch.Tensor, ...]:
    """Step (3): at `where (A, L)` (original masks outside the clean-up whose argmax is MASK), the argmax of
    the logits without MASK, and its probability under the same softmax. Returns new `(x, p)`."""
    if not bool(where.any()):
        return x, p
    alt = logits[where].index_fill(-1, torch.tensor([mask_id], device=logits.device), float("-inf")).argmax(-1)
    row_of = torch.full(read.shape, -1, dtype=torch.long, device=read.device)
    row_of[read] = torch.arange(int(read.sum()), device=read.device)  # (A, L): each read position's softmax row
    x, p = x.clone(), p.clone()
    x[where] = alt
    p[where] = probs[row_of[where], alt]
    return x, p


def select_masks(p: torch.Tensor, bud: Budget, params: InDelParams) -> tuple[torch.Tensor, torch.Tensor]:
    """Step (4): `(chosen (A, L), cleanup (A,))`, the masks written this step, and the clean-up flag with the
    zero-budget case added (the step that resolves the last original masks cleans up at once)."""
    masks, n_orig = bud.masks, bud.n_original
    conf = torch.where(masks, p, float("-inf"))  # (A, L)
    high = (conf > params.threshold.to(p.dtype).unsqueeze(-1)) & masks  # in p's dtype, as SGLang's float
    required = 1 + bud.n_masks - n_orig  # (A,): 1 + the introduced masks
    enough = high.sum(-1) >= required
    top = _topk_rows(conf, torch.minimum(required, bud.n_masks), params.width, (n_orig > 0) & ~enough & ~bud.cleanup)
    chosen = torch.where((n_orig > 0).unsqueeze(-1), torch.where(enough.unsqueeze(-1), high, top), masks)
    resolved = (params.budget == 0) & (n_orig > 0) & ~(bud.original & ~chosen).any(-1)
    cleanup = bud.cleanup | resolved
    return torch.where(cleanup.unsqueeze(-1), masks, chosen), cleanup


def _topk_rows(conf: torch.Tensor, k: torch.Tensor, width: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """`(A, L)` bool: the `k[a]` positions of `torch.topk(conf[a, :width[a]], k[a])` in each row of `rows`.

    SGLang calls topk on one row of its block size at a time; topk's order among equal values may depend
    on k and the row's length, so rows are grouped by (k, width) and each group runs the same call."""
    out = torch.zeros(conf.shape, dtype=torch.bool, device=conf.device)
    if not bool(rows.any()):
        return out
    index = rows.nonzero(as_tuple=True)[0]
    for kk, ww in sorted(set(zip(k[index].tolist(), width[index].tolist()))):
        group = index[(k[index] == kk) & (width[index] == ww)]
        if kk > 0:
            picked = torch.topk(conf[group, :ww], k=kk, dim=-1).indices  # (R, kk)
            out[group.unsqueeze(-1), picked] = True
    return out


def scrub(logits: torch.Tensor, x: torch.Tensor, where: torch.Tensor, tokens: EditTokens) -> torch.Tensor:
    """Step (6): at `where (A, L)`, the argmax without MASK, DELETE and SPLIT. Returns new `x`."""
    bad = where & ((x == tokens.mask) | (x == tokens.delete) | (x == tokens.split))
    if not bool(bad.any()):
        return x
    banned = torch.tensor([tokens.mask, tokens.delete, tokens.split], device=logits.device)
    x = x.clone()
    x[bad] = logits[bad].index_fill(-1, banned, float("-inf")).argmax(-1)
    return x


def anti_loop(logits: torch.Tensor, x: torch.Tensor, p: torch.Tensor, block: torch.Tensor, write: torch.Tensor,
              rows: torch.Tensor, state: InDelState, original: torch.Tensor, mask_id: int) -> torch.Tensor:
    """Step (7): in `rows (A,)` whose input block was an earlier step's input too, the changing write of least
    p (the first on ties) takes the best token not written there before in this block (nor MASK at an
    original mask). Returns new `x`."""
    if state.seen.shape[1] == 0:
        return x
    changing = write & (x != block)
    repeat = rows & changing.any(-1) & (state.seen == block.unsqueeze(1)).all(-1).any(-1)  # (A,)
    if not bool(repeat.any()):
        return x
    r = repeat.nonzero(as_tuple=True)[0]  # (R,)
    pos = torch.where(changing[r], p[r], float("inf")).argmin(-1)  # (R,): first least p among the changing
    cand = logits[r, pos].clone()  # (R, V)
    hist = state.history[r, :, pos]  # (R, S): what earlier steps wrote there
    hr, hs = (hist >= 0).nonzero(as_tuple=True)
    cand[hr, hist[hr, hs]] = float("-inf")
    cand[original[r, pos], mask_id] = float("-inf")
    x = x.clone()
    x[r, pos] = cand.argmax(-1)
    return x


def indel_step(logits: torch.Tensor, block: torch.Tensor, state: InDelState, params: InDelParams, *,
               drawn: torch.Tensor | None = None) -> InDelStep:
    """One step of every row's block: `logits (A, L, V)` of the model at each position of `block (A, L)`.

    `drawn (A, L)`: the token each chosen mask writes, drawn by the caller (a request at temperature > 0:
    the article's draw, from each request's generator), -1 where the argmax writes; the choice of masks
    still ranks the raw argmax's probability. None: the argmax everywhere, as SGLang (which decodes
    greedily) writes it."""
    A, L, _ = logits.shape
    tok = params.tokens
    active = ~state.finished
    inside = torch.arange(L, device=block.device) < params.width.unsqueeze(-1)  # (A, L)
    bud = budget(block, state, params, inside)
    generated = inside & ~state.prompt & active.unsqueeze(-1)
    x = logits.argmax(-1)  # (A, L)
    read = generated & (bud.masks | (x != block))  # where p decides anything: masks and differing tokens
    p, probs = confidence(logits, x, read)
    fall = bud.original & (x == tok.mask) & ~bud.cleanup.unsqueeze(-1)
    x, p = fallback_at_original_masks(logits, x, p, probs, read, fall, tok.mask)
    chosen, cleanup = select_masks(p, bud, params)
    if drawn is not None:
        x = torch.where(chosen & (drawn >= 0), drawn, x)
    edit = generated & ~bud.masks & (p > params.edit_threshold.to(p.dtype).unsqueeze(-1)) & (block != x)
    write = (chosen | edit) & active.unsqueeze(-1)
    go = write.any(-1)  # (A,) rows that write; an active row that does not is finished, unchanged
    cleanup = cleanup & go
    x = scrub(logits, x, write & cleanup.unsqueeze(-1), tok)
    x = anti_loop(logits, x, p, block, write, go & ~cleanup, state, bud.original, tok.mask)
    written = torch.where(write, x, -1)  # (A, L)
    new_block, new_orig, edits = apply_edits(block, written, state.orig, state.prompt, inside, tok)
    changed = (write & (x != block)).any(-1)
    finished = state.finished | (active & ~go) | cleanup
    keep = ~go.unsqueeze(-1)
    nxt = InDelState(prompt=state.prompt, orig=torch.where(keep, state.orig, new_orig),
                     updates=bud.updates, post_edit=bud.post_edit, finished=finished,
                     seen=torch.cat([state.seen, torch.where(keep, -1, block).unsqueeze(1)], dim=1),
                     history=torch.cat([state.history, written.unsqueeze(1)], dim=1))
    return InDelStep(block=torch.where(keep, block, new_block), state=nxt,
                     done=state.finished | (active & ~go) | (cleanup & ~changed), cleanup=cleanup,
                     confidence=p, edits=edits.where_rows(go))
