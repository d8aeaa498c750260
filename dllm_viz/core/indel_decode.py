"""One step of the playground decoder's insert/delete rows (`DecodeConfig.indel`, docs/indel.md).

`core.batch.DecodeBatch.step` hands the rows whose rule moves positions here, and the others to
`denoise_step`, so a batch may mix them and the masked path is untouched when no row runs one. Per step,
in the order of the article's loop:
  (1) one forward for the rows: the logits at every mask of their spans (the record's distribution) and at
      the visible positions of their current blocks (the rule reads every position of a block);
  (2)-(4) the rule's step on each row's block (`core.indel.indel_step`: masks to tokens, rewrites, DELETE,
      SPLIT, from the same forward), the masks' tokens drawn from each request's own uniforms at T > 0;
  (5) the blocks written back into the canvas, the confirmation order moved with the tokens; a row whose
      block the rule finished starts the next block (`core.indel_rows.next_blocks`);
  (6) the records (`core.indel_record`), the "indel" section with the step's operations and position map.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from dllm_viz.core import rules
from dllm_viz.core.cache import forward_rows
from dllm_viz.core.canvas import Spans, constant_temperature, draw_noise, step_temperature
from dllm_viz.core.indel import InDelParams, InDelState
from dllm_viz.core.indel_record import indel_records
from dllm_viz.core.indel_rows import (
    RowsState, block_at, block_logits, block_tokens, commit_span, draw_masks, in_blocks, next_blocks, stack,
)
from dllm_viz.core.scoring import Distribution
from dllm_viz.core.trace import StepRecord


@dataclass(frozen=True)
class Geometry:
    """What stays fixed while the same rows step together."""

    idx: torch.Tensor  # (A,) slot indices
    n: int  # the forward's width (longest prompt + gen_length)
    spans: Spans
    size: torch.Tensor  # (A,) long: each row's block size
    temperature: torch.Tensor | None  # (A,) when no row stages its temperature
    vocab_top_k: torch.Tensor  # (A,) long, 0 = off
    top_p: torch.Tensor  # (A,) float32, 1 = off
    rule: Any  # the rows' insert/delete plug-in


def build(batch: Any, idx_list: list[int], slots: list[Any]) -> RowsState:
    """The rows' parameters, geometry and carried state (each slot's memory, or the start of its first block)."""
    dev, cs = batch.device, [s.config for s in slots]
    names = {c.indel for c in cs}
    if len(names) != 1:  # one plug-in today; a second one would step its rows in a loop over names here
        raise ValueError(f"indel={sorted(names)} is invalid in one step: expected one insert/delete rule per batch")
    idx = torch.tensor(idx_list, device=dev)
    col = lambda v, dt=torch.long: torch.tensor(v, dtype=dt, device=dev)  # noqa: E731
    geo = Geometry(idx=idx, n=max(s.length for s in slots),
                   spans=Spans.at(batch.gen_start[idx], batch.gen_len[idx], scratch=batch.max_length),
                   size=col([c.block_size for c in cs]), temperature=constant_temperature(cs, dev),
                   vocab_top_k=col([c.vocab_top_k or 0 for c in cs]),
                   top_p=col([c.top_p if c.top_p is not None else 1.0 for c in cs], torch.float32),
                   rule=rules.INDELS[names.pop()])
    index = col([s.indel.index if s.indel is not None else 0 for s in slots])
    current = geo.spans.read(batch.canvas[idx])
    cols, inside = block_at(index, geo.size, geo.spans.width)
    blocks = block_tokens(current, cols, inside, batch.mask_id)
    fresh = InDelState.initial(blocks, torch.zeros_like(inside), batch.mask_id)
    return RowsState(members=tuple(slots), params=InDelParams.from_configs(cs, batch.edit_tokens, device=dev),
                     state=stack([s.indel for s in slots], fresh, batch.mask_id), index=index, geometry=geo)


def step_rows(batch: Any, idx_list: list[int], shared: torch.Generator | None,
              still_step: Callable[[list[int], torch.Generator | None], dict[int, StepRecord]]
              ) -> dict[int, StepRecord]:
    """One step of the rows `idx_list` of `batch`: those with an insert/delete rule here, the others by `still_step`
    (`DecodeBatch`'s own step), the insert/delete rows' forward first: a failure there or in the others' step
    leaves every row as it was (the engine retries a failed step on halves of the batch)."""
    moving = [i for i in idx_list if batch.slots[i].config.indel != "none"]
    still = [i for i in idx_list if batch.slots[i].config.indel == "none"]
    prepared = prepare(batch, moving, [batch.slots[i] for i in moving], shared) if moving else None
    records = still_step(still, shared) if still else {}
    return records | (finish(batch, prepared) if prepared is not None else {})


@dataclass(frozen=True)
class Prepared:
    """A step's forward and uniforms, before anything of the rows changes."""

    rows: RowsState
    slots: list[Any]
    idx_list: list[int]
    canvas: torch.Tensor  # (A, N + 1)
    current: torch.Tensor  # (A, G)
    masked: torch.Tensor  # (A, G) bool
    cols: torch.Tensor  # (A, W)
    inside: torch.Tensor  # (A, W) bool
    masked_logits: torch.Tensor  # (M, V) at `masked`
    logits: torch.Tensor  # (A, W, V) at every position of the blocks
    noise: torch.Tensor  # (A, 2, G)


@torch.inference_mode()
def prepare(batch: Any, idx_list: list[int], slots: list[Any], shared: torch.Generator | None) -> Prepared:
    """(1) The forward of the insert/delete rows `idx_list` of `batch` (a `DecodeBatch`) and their uniforms:
    every mask of their spans and the visible positions of their blocks. Changes nothing but the generators
    (which a caller that retries restores), so a failed forward leaves the rows as they were."""
    rs = batch.indel_rows.get(slots, lambda: build(batch, idx_list, slots))
    g: Geometry = rs.geometry
    canvas = batch.canvas[g.idx]  # (A, N + 1)
    current = g.spans.read(canvas)  # (A, G)
    valid = g.spans.valid
    masked = (current == batch.mask_id) & valid
    cols, inside = block_at(rs.index, g.size, g.spans.width)
    also = ~masked & in_blocks(cols, inside, masked.shape[1]) & valid  # the blocks' visible positions
    cs = [s.config for s in slots]
    fwd = forward_rows(batch.model, batch.caches, idx_list, cs, [len(s.prompt_ids) for s in slots],
                       canvas[:, : g.n], batch.attention[g.idx, : g.n], g.spans.pos, masked, also=also)
    noise = draw_noise([shared if (c.rng == "shared" and shared is not None) else s.generator
                        for c, s in zip(cs, slots)], [c.gen_length for c in cs], batch.device)  # (A, 2, G)
    return Prepared(rows=rs, slots=slots, idx_list=idx_list, canvas=canvas, current=current, masked=masked,
                    cols=cols, inside=inside, masked_logits=fwd.logits,
                    logits=block_logits(fwd.logits, masked, fwd.also, also, cols, inside), noise=noise)


@torch.inference_mode()
def finish(batch: Any, p: Prepared) -> dict[int, StepRecord]:
    """(2)-(6) The rule's step on the prepared rows, the commit and the records."""
    rs, slots, mask = p.rows, p.slots, batch.mask_id
    g: Geometry = rs.geometry
    cs = [s.config for s in slots]
    block = block_tokens(p.current, p.cols, p.inside, mask)  # (A, W)
    temperature = g.temperature if g.temperature is not None else step_temperature(
        cs, [s.step for s in slots], [s.remaining for s in slots], batch.device)
    # (2)-(4) the rule's step on each block, its masks' tokens drawn at T > 0
    drawn = draw_masks(p.logits, p.inside & (block == mask), p.noise[:, 0].gather(1, p.cols), temperature=temperature,
                       vocab_top_k=g.vocab_top_k, top_p=g.top_p, mask_id=mask)
    out = g.rule.step(p.logits, block, rs.state, rs.params, drawn=drawn)
    rs.state = out.state
    # (5) commit: the blocks into the canvas, the order moved with the tokens; the next block where one ended
    G = g.spans.width
    steps_now = torch.tensor([s.step for s in slots], device=batch.device)
    done = commit_span(p.current, batch.order[g.idx, :G], out, p.cols, p.inside, steps_now)
    batch.canvas[g.idx] = g.spans.write(p.canvas, done.span)
    batch.order[g.idx, :G] = done.order
    stepped = rs.index.clone()
    left, open_ = next_blocks(rs, done.span, g.spans.valid, g.size, mask)
    # (6) the records
    raw = Distribution(p.masked_logits.float().unsqueeze(1), top=batch.record_candidates)
    return indel_records(slots, p.idx_list, raw=raw, masked=p.masked, logits=p.logits, cols=p.cols, inside=p.inside,
                         out=out, source=done.source, index=stepped, temperature=temperature, remaining=left,
                         open_=open_, candidates=batch.record_candidates)
