"""The plain step: rows whose every choice but the positions is known on the host, stepped in about half the ops.

A plain row decodes greedily (temperature 0, no staged temperature, drawn at the confirmed positions only), ranks
by the raw maximum probability, follows a planned schedule (its counts known from its config: `planned_states`)
and nothing else: no revision or insert/delete rule, no cache, no early stop, no reference quirks, never switched
by a fork. For such rows `denoise_step` computes, of its schedule state, only what the plan already says (the
block, the count, the block's step, topk_decay's k), and of its draw only the argmax the top candidate is. So a
set of plain rows (each at its own step: an engine's rows joined at different times) steps here: the same
forward, the same candidates (`Distribution`), the same selection and tokens and the same `StepResult`, record and
buffers as `DecodeBatch._step` gives, with the schedule state read off the plan instead of computed (about 40
torch calls where the general step makes 58; at batch 1 the calls, not the arithmetic, are most of a step).
`tests/test_plain.py` holds the two paths to the same traces, bit for bit, over the schedules, blocks, batches,
prompts and candidates they share.
"""
from __future__ import annotations

import itertools
import operator
from dataclasses import dataclass
from typing import Any, Sequence

import torch

from dllm_viz.core import rules
from dllm_viz.core.canvas import commit
from dllm_viz.core.packed import unpack
from dllm_viz.core.forward import step_forward
from dllm_viz.core.record import step_records
from dllm_viz.core.rules.base import select_top
from dllm_viz.core.schedules import planned_states
from dllm_viz.core.scoring import Distribution
from dllm_viz.core.step import StepResult, mask_out, no_stop
from dllm_viz.core.trace import StepRecord


def is_plain(config: Any) -> bool:
    """Whether `config` decodes as a plain row (the module's docstring): everything but the positions known."""
    c = config
    return (c.temperature == 0 and c.temperature_stages is None and c.sample_scope == "selected"
            and c.confidence == "max_prob" and c.confidence_from == "raw" and c.revise == "none"
            and c.indel == "none" and c.cache == "none" and not c.cache_drift and not c.early_stop
            and rules.SCHEDULES[c.schedule].rank is None and planned_states(c) is not None)


@dataclass(frozen=True)
class PlainRows:
    """A set of plain rows: each row's plan (`planned_states`) and the plan's columns at the rows' steps as `(A,)`
    tensors (made once per step number where every row is at it: `decode`'s rows step together)."""

    plans: tuple[tuple[tuple[int, int, int, int], ...], ...]  # per row, per step: (count, block, block_step, k)
    left: tuple[tuple[int, ...], ...]  # per row, per step: the masks it has entering that step
    one_block: bool  # every row's span is one block: the current block's masks are all its masks
    device: torch.device

    def at(self, steps: list[int]) -> dict[str, Any] | None:
        """The rows' plans at their `steps` (row a at steps[a]): counts (host), and count, block, block_step, k,
        (A,) each; None past a row's plan."""
        if any(step >= len(p) for step, p in zip(steps, self.plans)):
            return None
        if steps.count(steps[0]) == len(steps):  # every row at one step (`decode`'s): a view of the plans' table
            table = self._table()[steps[0]]  # (4, A)
        else:  # rows at several steps (an engine's): their columns made for this step
            table = torch.tensor(list(zip(*(p[s] for s, p in zip(steps, self.plans)))), dtype=torch.long,
                                 device=self.device)
        count, block, block_step, k = table.unbind(0)
        return {"counts": [p[s][0] for s, p in zip(steps, self.plans)], "count": count, "block": block,
                "block_step": block_step, "k": k}

    def _table(self) -> torch.Tensor:
        """`(S, 4, A)` long: every row's plan at each step s they all have, made once (one transfer, not one a step)."""
        made = self.__dict__  # beside the frozen fields, as cached_property does
        if "_all" not in made:
            S = min(len(p) for p in self.plans)
            made["_all"] = torch.tensor([list(zip(*(p[s] for p in self.plans))) for s in range(S)], dtype=torch.long,
                                        device=self.device).view(S, 4, len(self.plans))
        return made["_all"]


def plain_rows(configs: Sequence[Any], *, in_place: bool, reference: bool, width: int,
               device: torch.device) -> PlainRows | None:
    """The plain rows of a set of stepping rows, or None when one of them is not plain (`is_plain`), the rows are
    not the buffers' first (`in_place`), or one follows a reference's code (`reference`). `width`: the spans' G."""
    if not in_place or reference or not all(is_plain(c) for c in configs):
        return None
    plans = tuple(planned_states(c) for c in configs)
    left = tuple(tuple(itertools.accumulate((n for n, *_ in p), operator.sub, initial=c.gen_length))
                 for p, c in zip(plans, configs))
    return PlainRows(plans=plans, left=left, one_block=all(c.block_size >= width for c in configs),
                     device=torch.device(device))


def plain_step(batch: Any, rows: Any, idx_list: list[int], slots: list[Any], *,
               later: bool) -> dict[int, StepRecord] | None:
    """One step of the rows `idx_list` of `batch` (a `DecodeBatch`; `rows` its `_Rows` for them) when they are
    plain (`rows.plain`), each within its plan and with the masks it expects there; else None, and nothing done
    (the caller steps them the general way). Advances the buffers, the slots and the records as
    `DecodeBatch._step` does; `later`: the caller reads no record (`Later`)."""
    plain, steps = rows.plain, [s.step for s in slots]
    if plain is None or any(s.replanned for s in slots):
        return None
    plan = plain.at(steps)
    if plan is None or any(s.remaining != left[step] for s, step, left in zip(slots, steps, plain.left)):
        return None
    v, spans, params, G = rows.views, rows.set.spans, rows.set.params, rows.set.spans.width
    current = spans.read(v.canvas)  # (A, G)
    masked = spans.masked(current, batch.mask_id)  # (A, G)
    fwd, _, _ = step_forward(batch.model, batch.caches, batch.mask_id, idx_list, [s.config for s in slots],
                             [len(s.prompt_ids) for s in slots], v.ids, v.attention, spans, masked, None, None,
                             params.block_size, batch.edit_ids, {})
    logits = mask_out(fwd.logits.unsqueeze(1), params.mask_token_id, None, params.edit_token_ids)  # (M, 1, V)
    raw = Distribution(logits, top=batch.record_candidates)
    conf = unpack(raw.top[0][..., 0], masked)  # (A, G) the raw max probability, 0 where not masked
    eligible = masked if plain.one_block else masked & (params.position_blocks(G) == plan["block"].unsqueeze(-1))
    selected = _select(conf, eligible, plan)
    first = raw.first_max  # (M, 1): each position's argmax (None: a tie `top_k` left open)
    tokens = torch.where(selected, unpack(first if first is not None else logits.max(-1).indices, masked, -1), -1)
    result = StepResult(
        confidence=conf, raw_confidence=conf, selected=selected, tokens=tokens, count=plan["count"],
        block=plan["block"], next_k=plan["k"], next_block_step=plan["block_step"], temperature=rows.set.temperature,
        masked=masked, raw=raw, stopped=no_stop(params), greedy_logp=raw.top_logp[0][..., :1])
    step = steps[0] if steps.count(steps[0]) == len(steps) else torch.tensor(steps, device=masked.device)
    done = commit(result, current, order=v.order, step=step)
    spans.write_(v.canvas, done.span)
    v.order.copy_(done.order)
    v.k.copy_(result.next_k)
    v.block_step.copy_(result.next_block_step)
    v.block.copy_(result.block)
    left = [s.remaining - n for s, n in zip(slots, plan["counts"])]
    if later:
        batch.later.add(slots, result, left)
        records: dict[int, StepRecord] = {}
    else:
        batch.flush()
        records = step_records(slots, idx_list, result, current, None, torch.tensor(left, device=masked.device), fwd,
                               None, candidates=batch.record_candidates, reused=[])
    batch.caches.commit()
    for i in idx_list:
        batch.reused.pop(i, None)
    return records


def _select(conf: torch.Tensor, eligible: torch.Tensor, plan: dict[str, Any]) -> torch.Tensor:
    """`(A, G)` bool: each row's planned count of its most confident eligible positions, ties to the earlier
    (`select_top`; with one count for every row, its sorted order's first columns, a rank mask's work less)."""
    counts = plan["counts"]
    if counts.count(counts[0]) != len(counts):
        return select_top(conf, eligible, plan["count"])
    order = torch.sort(torch.where(eligible, conf, float("-inf")), dim=-1, descending=True, stable=True).indices
    # (a count never exceeds the eligible: the plan confirms its masks, so the first columns are all eligible)
    return torch.zeros_like(eligible).scatter_(-1, order[:, :counts[0]], True)
