"""The forward a decoding step runs (the decoder's step (1)): the logits at the masked positions, and where
the rows' revision rules read decided positions, the logits there (`seen`).

  - rows with a cache: their planned forward (`core.cache.forward_rows`: a refresh or a window);
  - a rule that reads the step's own forward there (token editing): the same forward, at those positions;
  - WINO's verify as WINO computes it (`verify_pass="shadow"`, on a model that takes a shadow block,
    `models.base.shadow_kind`): the same forward, carrying the current block's shadow rows
    (`models.base.logits_shadow`), one forward per step;
  - our verify pass of its own (`verify_pass="canvases"`, or a model that takes no shadow block): one canvas
    per decided position with that position hidden (`models.base.logits_hidden`), a second forward.

Shapes: A rows, G generated positions per row, K positions the rules read, V the vocabulary.
"""
from __future__ import annotations

from typing import Any, Sequence

import torch

from dllm_viz.core.cache import CacheStore, RowsForward, forward_rows
from dllm_viz.core.canvas import Spans, candidate_logits
from dllm_viz.core.config import DecodeConfig
from dllm_viz.core.revision import RevisionTargets
from dllm_viz.models.base import logits_hidden


def step_forward(model: Any, caches: CacheStore, mask_id: int, slots: Sequence[int], configs: Sequence[DecodeConfig],
                 prompt_lengths: Sequence[int], ids: torch.Tensor, attention: torch.Tensor, spans: Spans,
                 masked: torch.Tensor, targets: RevisionTargets | None, shadow: torch.Tensor | None,
                 block_size: torch.Tensor, edit_ids: tuple[int, ...] = (), reused: dict[int, torch.Tensor] | None = None
                 ) -> tuple[RowsForward, torch.Tensor | None, torch.Tensor | None]:
    """The logits at the masked positions each row's forward scores (all of them, or a cached window's
    current block), and `seen (K, 1, V)` at the decided positions the rows' revision rules read (None when
    none), from the same forward: the canvas rows, or WINO's shadow rows in the `shadow (A,)` rows (None: no
    row), or from a verify pass of its own; with `(A,)` bool, the rows whose verify pass of its own ran (None
    when none did). `ids, attention (A, n)`: the canvas rows; `block_size (A,)`; `edit_ids`: the model's edit
    tokens, never a candidate where a rule reads; `reused`: row -> the logits `(m, V)` at its masks from the
    step before, for a row that runs no forward (ReMDM reuses its p_x0 when a step changed nothing: the canvas,
    and so its masks, are the same). A row has a cache or a revision rule, never both (DecodeConfig refuses it)."""
    if reused:
        return _reusing(model, caches, mask_id, slots, configs, prompt_lengths, ids, attention, spans, masked,
                        targets, shadow, block_size, edit_ids, reused)
    read, hidden = None, None  # (A, G): where the forward reads for the rules, where the verify pass does
    if targets is not None and targets.any:
        if targets.hidden_count:
            hidden = targets.hidden_where  # (the targets know where the verify pass reads)
            if hidden is None:
                hidden = torch.zeros_like(masked).masked_scatter(targets.where, targets.hidden)
        if targets.count > targets.hidden_count:  # some positions are read by the forward itself
            read = targets.where if hidden is None else targets.where & ~hidden
    shadowed = None  # (blocks (A, 2), positions (A, G)) of WINO's shadow blocks
    if shadow is not None:
        shadowed = (shadow_blocks(targets, spans, shadow, block_size),
                    hidden & shadow.unsqueeze(-1) if hidden is not None else torch.zeros_like(masked))
    fwd = forward_rows(model, caches, slots, configs, prompt_lengths, ids, attention, spans.pos, masked, also=read,
                       shadow=shadowed)
    if targets is None or not targets.any:
        return fwd, None, None
    seen = None if fwd.also is None else candidate_logits(fwd.also, mask_id, edit_ids)  # (F, 1, V)
    verified = None
    if hidden is not None:
        verify, verified = _verify(model, mask_id, edit_ids, ids, attention, spans, hidden, shadowed, fwd)
        if seen is None:
            seen = verify
        else:  # rows of both kinds: place each pass's logits in row-major order
            both = seen.new_empty((targets.count, 1, seen.shape[-1]))
            both[~targets.hidden], both[targets.hidden] = seen, verify
            seen = both
    return fwd, seen, verified


def _reusing(model: Any, caches: CacheStore, mask_id: int, slots: Sequence[int], configs: Sequence[DecodeConfig],
             prompt_lengths: Sequence[int], ids: torch.Tensor, attention: torch.Tensor, spans: Spans,
             masked: torch.Tensor, targets: RevisionTargets | None, shadow: torch.Tensor | None,
             block_size: torch.Tensor, edit_ids: tuple[int, ...], reused: dict[int, torch.Tensor]
             ) -> tuple[RowsForward, torch.Tensor | None, torch.Tensor | None]:
    """`step_forward` where the rows of `reused` take their logits from it and the others run the forward (none
    when every row reuses). A reusing rule reads no decided position (ReMDM), so `seen` is the others'."""
    rows = list(reused)
    computed = masked.clone()
    computed[rows] = False
    at = masked.flatten().cumsum(0).sub(1).view(masked.shape)  # (A, G) each mask's row in the packed logits
    some = next(iter(reused.values()))
    logits = some.new_empty(int(masked.sum()), some.shape[-1])
    fwd, seen, verified = None, None, None
    if len(rows) < masked.shape[0]:
        fwd, seen, verified = step_forward(model, caches, mask_id, slots, configs, prompt_lengths, ids, attention,
                                           spans, computed, targets, shadow, block_size, edit_ids)
        logits[at[fwd.scored]] = fwd.logits.to(logits.dtype)
    for a, got in reused.items():
        logits[at[a][masked[a]]] = got
    A = masked.shape[0]
    return (RowsForward(logits=logits, scored=masked, forwards=fwd.forwards if fwd else [None] * A,
                        seconds=fwd.seconds if fwd else [None] * A, also=fwd.also if fwd else None,
                        shadow=fwd.shadow if fwd else None), seen, verified)


def _verify(model: Any, mask_id: int, edit_ids: tuple[int, ...], ids: torch.Tensor, attention: torch.Tensor,
            spans: Spans, hidden: torch.Tensor, shadowed: tuple[torch.Tensor, torch.Tensor] | None, fwd: RowsForward
            ) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The logits at the `hidden (A, G)` positions with their tokens hidden, `(H, 1, V)` row-major: from the
    shadow rows where the forward carried them, else by a pass of its own (`logits_hidden`); and `(A,)` the
    rows where that pass ran (None: none)."""
    by_shadow = shadowed[1][hidden] if shadowed is not None else None  # (H,) read from a shadow row
    own = hidden if shadowed is None else hidden & ~shadowed[1]  # a verify pass of its own: canvases
    canvases, verified = None, None
    if bool(own.any()):
        hr, hc = own.nonzero(as_tuple=True)
        canvases = logits_hidden(model, ids, attention, hr, spans.pos[hr, hc])  # (H_own, V)
        verified = own.any(-1)
    if by_shadow is None or not bool(by_shadow.any()):
        return candidate_logits(canvases, mask_id, edit_ids), verified  # type: ignore[arg-type]
    assert fwd.shadow is not None
    if canvases is None:
        return candidate_logits(fwd.shadow, mask_id, edit_ids), verified
    verify = fwd.shadow.new_empty((int(hidden.sum()), fwd.shadow.shape[-1]))  # rows of both kinds, row-major
    verify[by_shadow], verify[~by_shadow] = fwd.shadow, canvases.to(verify.dtype)
    return candidate_logits(verify, mask_id, edit_ids), verified


def shadow_blocks(targets: RevisionTargets | None, spans: Spans, shadow: torch.Tensor,
                  size: torch.Tensor) -> torch.Tensor:
    """`(A, 2)` long: the canvas columns ``[lo, hi)`` of the current block (of `size (A,)` positions) of each
    `shadow (A,)` row: WINO's shadow block; lo == hi elsewhere."""
    assert targets is not None and targets.block is not None  # a shadow row has a revision rule
    block = targets.block[0]  # (A,)
    first = (block * size).clamp(max=max(0, spans.width - 1))  # (A,) the block's first generated position
    lo = spans.pos.gather(1, first.unsqueeze(-1)).squeeze(-1)
    hi = lo + torch.minimum(size, spans.valid.sum(-1) - block * size).clamp(min=0)
    return torch.stack([torch.where(shadow, lo, 0), torch.where(shadow, hi, 0)], -1)
