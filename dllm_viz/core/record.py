"""The record of a step: each request's `StepRecord` from the step's `StepResult` (the decoder's (6)).

Every tensor the record reads crosses to the host once per step, whatever the batch; Python then
touches each row once and each value only to round it.
"""
from __future__ import annotations

import bisect
from typing import Any

import torch
import torch.nn.functional as F

from dllm_viz.core.cache import Drift, RowsForward
from dllm_viz.core.references.sglang import closes_blocks
from dllm_viz.core.revision import Plan
from dllm_viz.core.packed import unpack
from dllm_viz.core.step import StepResult
from dllm_viz.core.step_record import PackedCandidates, quantize_many
from dllm_viz.core.trace import StepRecord, quantize


def step_records(slots: list[Any], idx_list: list[int], result: StepResult, current: torch.Tensor,
                 verified: torch.Tensor | None, remaining: torch.Tensor, fwd: RowsForward,
                 drifts: Drift | None, *, candidates: int, reused: list[int] | None = None) -> dict[int, StepRecord]:
    """Each slot's StepRecord from the step's result (`candidates` raw candidates per position), with one
    device-to-host transfer per tensor; advances the slots' host-side counters (`core.batch.Slot`). The
    rows `reused` ran no forward (their logits were the step before's: `StepRecord.forwards` 0)."""
    nan, r = float("nan"), result
    # Each row's selected positions by confidence, most confident first, and their tokens and log-probabilities.
    sel = torch.sort(r.confidence.masked_fill(~r.selected, float("-inf")), dim=-1, descending=True,
                     stable=True).indices
    host = {
        "conf": r.confidence.masked_fill(~r.masked, nan), "argmax": r.argmax, "sel": sel,
        "sel_tokens": r.tokens.gather(1, sel), "sel_logp": r.logprobs.gather(1, sel), "count": r.count,
        "block": r.block, "remaining": remaining, "temperature": r.temperature, "stopped": r.stopped,
    }
    if candidates:
        host["n_masked"] = r.masked.sum(-1)
    if drifts is not None:
        host.update(drift=drifts.change, exact_conf=drifts.exact_confidence, drift_sel=drifts.selected_differ,
                    drift_tok=drifts.tokens_differ)
    wrong_from = any(s.config.confidence_from != "raw" for s in slots)
    if wrong_from:
        host["raw_conf"] = r.raw_confidence.masked_fill(~r.masked, nan)
    if candidates:  # packed: only the masked positions have candidates
        top_p, top_i = r.raw.top  # (M, 1, N) each
        host["cand_p"], host["cand_i"] = top_p[:, 0, :candidates], top_i[:, 0, :candidates]
    closing = [closes_blocks(s.config) for s in slots]
    if any(closing):  # SGLang's LowConfidence: the steps that leave their block without a mask
        host["closed"] = _closed(r, [s.config.block_size for s in slots])
    plan = r.revision
    revisions: dict[int, dict[str, Any]] = {}
    if plan is not None:
        revisions = revision_fields(plan, current, verified)
    if r.masked.device.type != "cpu":
        host = {k: v.cpu() for k, v in host.items()}
    lists = _as_lists(host)
    pack = PackedCandidates(host["cand_i"], host["cand_p"], lists["n_masked"]) if candidates else None
    out = {}
    for row, (index, s) in enumerate(zip(idx_list, slots)):
        rec = _record(lists, row, s.step, s.config, pack)
        if plan is not None:
            for key, values in revisions.get(row, {}).items():
                setattr(rec, key, values)
            s.hold = row in revisions[-1]["hold"]
        s.records.append(rec)
        forward = fwd.forwards[row]
        if forward is not None:  # a cached request records what each forward computed
            rec.forward_kind, rec.computed = forward.kind, forward.computed
            rec.forward_time = round(float(fwd.seconds[row] or 0.0), 6)
            if drifts is not None and s.config.cache_drift and forward.kind != "full":
                rec.drift = round(float(host["drift"][row]), 6)
                rec.drift_selected = bool(host["drift_sel"][row])
                rec.drift_tokens = bool(host["drift_tok"][row])
                rec.exact_confidence = quantize(host["exact_conf"][row, :s.config.gen_length].double().tolist())
        if reused and row in reused:
            rec.forwards = 0  # ReMDM reused the step before's p_x0: no forward, as ReMDM counts
        if closing[row] and bool(host["closed"][row]):
            rec.closing_forward = True  # SGLang runs one more forward on the finished block (`closes_blocks`)
        if bool(host["stopped"][row]):
            s.early_stop_step = s.step
        s.step += 1
        s.remaining = int(host["remaining"][row])
        out[index] = rec
    return out

def _closed(r: StepResult, block_sizes: list[int]) -> torch.Tensor:
    """`(A,)` bool: the rows whose step left its block without a mask."""
    blocks = torch.arange(r.masked.shape[1], device=r.masked.device).unsqueeze(0) // \
        torch.tensor([max(1, b) for b in block_sizes], device=r.masked.device).unsqueeze(-1)
    return ~(r.masked & ~r.selected & (blocks == r.block.unsqueeze(-1))).any(-1)


def _record(lists: dict[str, list], row: int, step: int, config: Any, pack: PackedCandidates | None) -> StepRecord:
    """Row `row` of the fields `lists` (`_as_lists`, `_later_lists`) as the StepRecord of step `step`: its
    selections most confident first, the raw confidence where the row ranks by another, and with `pack` its
    candidates, left packed until read (`StepRecord.unread`)."""
    G, n_sel = config.gen_length, lists["count"][row]
    argmax = lists["argmax"][row][:G]  # -1 where the position was not masked
    rec = StepRecord(
        step=step, block=lists["block"][row], k=n_sel, temperature=round(lists["temperature"][row], 6),
        confidence=lists["conf"][row][:G], argmax=argmax, selected=lists["sel"][row][:n_sel],
        tokens=lists["sel_tokens"][row][:n_sel], logprobs=lists["sel_logp"][row][:n_sel],
    )
    if config.confidence_from != "raw" and "raw_conf" in lists:
        rec.raw_confidence = lists["raw_conf"][row][:G]
    if pack is not None:
        rec.unread(pack.share(row))
    return rec


def _as_lists(host: dict[str, torch.Tensor]) -> dict[str, list]:
    """Every row's fields at once: one rounding pass over all the float fields (`quantize_many`) and one
    conversion to lists per field (the candidates stay tensors: `PackedCandidates`)."""
    floats = [k for k in ("conf", "sel_logp", "raw_conf") if k in host]
    keys = ("argmax", "sel", "sel_tokens", "count", "block", "temperature", "n_masked")
    out = {k: host[k].tolist() for k in keys if k in host}
    out.update(zip(floats, quantize_many([host[k] for k in floats])))
    return out


def revision_fields(plan: Plan, current: torch.Tensor, verified: torch.Tensor | None) -> dict[int, dict[str, Any]]:
    """The version-2 fields of each row's record (only rows the rules changed), a handful of transfers
    whatever the batch: `{row: {field: values}}`, and under -1 the rows holding their block open.

    Each kind of change is gathered at once (row-major, so each row's changes are one run) and cut
    into rows at the run boundaries: Python touches each row once and each value only to round it."""
    out: dict[int, dict[str, Any]] = {-1: {"hold": set(plan.hold.nonzero(as_tuple=True)[0].tolist())
                                                 if plan.holds else set()}}
    if verified is not None:
        for r, ran in enumerate(verified.tolist()):
            if ran:
                out.setdefault(r, {})["forwards"] = 2  # the verify pass ran for this row
    for edits, names in ((False, ("remasked", "remasked_tokens", "remask_probs")),
                         (True, ("edited", "edited_from", "edited_to", "edit_probs", "edit_from_probs"))):
        if edits and not plan.rewrites:
            continue
        row, pos = (plan.edited if edits else plan.remasked).nonzero(as_tuple=True)  # (C,) each, row-major
        if row.shape[0] == 0:
            continue
        if not edits:
            rows, *ids = torch.stack([row, pos, current[row, pos]]).tolist()
            probs = [plan.remask_score[row, pos].tolist()]
        else:
            rows, *ids = torch.stack([row, pos, current[row, pos], plan.edit_tokens[row, pos]]).tolist()
            probs = torch.stack([plan.edit_prob[row, pos], plan.edit_old_prob[row, pos]]).tolist()
        lo = 0
        while lo < len(rows):
            r = rows[lo]
            hi = bisect.bisect_right(rows, r, lo)
            fields = out.setdefault(r, {})
            for name, values in zip(names, ids):
                fields[name] = values[lo:hi]
            for name, values in zip(names[len(ids):], probs):
                fields[name] = [round(v, 6) for v in values[lo:hi]]
            lo = hi
    return out


class Later:
    """The records of steps made later, all at once (`flush`), for a caller that reads no record as it goes
    (`decode` without `on_step`): each step keeps its few tensors (`add`), and `flush` makes the StepRecords of
    every kept step together, the same records `step_records` makes step by step, with a handful of tensor ops
    and one conversion to lists per field for all of them instead of per step (per step, the ops of the record
    cost as much as the step's own at batch 1). Only steps with no revision plan, no cache, no drift and no
    closing forward are kept (`keeps`); the caller flushes before any record is read or made another way."""

    def __init__(self, candidates: int) -> None:
        self.candidates = candidates
        self.steps: list[tuple[list[Any], list[int], dict[str, torch.Tensor]]] = []  # (slots, step numbers, tensors)

    def __bool__(self) -> bool:
        return bool(self.steps)

    @staticmethod
    def keeps(result: StepResult, fwd: RowsForward, drifts: Drift | None, slots: list[Any],
              reused: list[int] | None) -> bool:
        """Whether a step's records can be made later: the fields of a plain step only."""
        return (result.revision is None and drifts is None and not reused and fwd.scored is result.masked
                and all(f is None for f in fwd.forwards) and not any(closes_blocks(s.config) for s in slots))

    def add(self, slots: list[Any], result: StepResult, remaining: torch.Tensor | list[int]) -> None:
        """Keep the step's tensors; advance the slots' host-side counters as `step_records` does (`remaining`: the
        masks each row has left, `(A,)`, or as ints when the caller knows them: `core.plain`)."""
        r = result
        top_p, top_i = r.raw.top  # (M, 1, N) each: the argmax and the candidates, cut at `flush`
        logp = r.greedy_logp  # (M, 1, 1): the drawn tokens' where a token was drawn (read at the selected only)
        if logp is None:
            ids = r.tokens.masked_select(r.masked).clamp_(min=0).view(-1, 1, 1)  # drawn (0 where nothing was)
            logp = r.raw.logp.gather(-1, ids)
        kept = {"masked": r.masked, "conf": r.confidence, "selected": r.selected, "tokens": r.tokens,
                "count": r.count, "block": r.block, "temperature": r.temperature, "stopped": r.stopped,
                "top_p": top_p, "top_i": top_i, "logp": logp}
        if any(s.config.confidence_from != "raw" for s in slots):
            kept["raw_conf"] = r.raw_confidence
        self.steps.append((slots, [s.step for s in slots], kept))
        for s, left in zip(slots, remaining.tolist() if isinstance(remaining, torch.Tensor) else remaining):
            s.step += 1
            s.remaining = left

    def flush(self) -> None:
        """Make the kept steps' records, in order, into their slots' `records`."""
        if not self.steps:
            return
        steps, self.steps = self.steps, []
        lists = _later_lists([kept for _, _, kept in steps], self.candidates)
        ids, probs = lists.pop("cand_i", None), lists.pop("cand_p", None)
        pack = PackedCandidates(ids, probs, lists["n_masked"]) if self.candidates else None
        row = 0
        for slots, numbers, _ in steps:
            for s, number in zip(slots, numbers):
                rec = _record(lists, row, number, s.config, pack)
                if lists["stopped"][row]:
                    s.early_stop_step = number
                s.records.append(rec)
                row += 1


def _later_lists(steps: list[dict[str, torch.Tensor]], candidates: int) -> dict[str, Any]:
    """The fields of every row of every kept step (`Later`), rows in step order then row order, as lists: the
    `(A, G)` fields padded to the widest G and stacked, the packed ones concatenated (step by step, row-major:
    the order of the stacked `masked`), each computed and converted once; the candidates as tensors
    (`PackedCandidates`)."""
    G = max(k["masked"].shape[1] for k in steps)

    def rows(key: str, fill: float | bool) -> torch.Tensor:  # (R, G)
        return torch.cat([F.pad(k[key], (0, G - k[key].shape[1]), value=fill) if k[key].shape[1] < G else k[key]
                          for k in steps])

    def flat(key: str) -> torch.Tensor:
        return torch.cat([k[key] for k in steps])

    masked, conf, selected = rows("masked", False), rows("conf", 0.0), rows("selected", False)
    count = flat("count")
    counts = count.tolist()
    # each row's selections, most confident first: the first max(count) columns of the order hold them all
    sel = torch.sort(conf.masked_fill(~selected, float("-inf")), dim=-1, descending=True,
                     stable=True).indices[:, :max(counts, default=0)]  # (R, n)
    top_i = flat("top_i")  # (M, 1, N) over every kept step
    floats = {"conf": conf.masked_fill(~masked, float("nan")),
              "sel_logp": unpack(flat("logp").view(-1), masked).gather(1, sel)}
    if any("raw_conf" in k for k in steps):
        raw = [F.pad(k["raw_conf"] if "raw_conf" in k else k["conf"], (0, G - k["conf"].shape[1])) for k in steps]
        floats["raw_conf"] = torch.cat(raw).masked_fill(~masked, float("nan"))
    out: dict[str, Any] = dict(zip(floats, quantize_many(list(floats.values()))))
    out.update(sel=sel.tolist(), sel_tokens=rows("tokens", -1).gather(1, sel).tolist(), count=counts,
               argmax=unpack(top_i[:, 0, 0], masked, -1).tolist(), n_masked=masked.sum(-1).tolist(),
               **{key: flat(key).tolist() for key in ("block", "temperature", "stopped")})
    if candidates:  # packed, as tensors on the host (`PackedCandidates`)
        out["cand_i"], out["cand_p"] = top_i[:, 0, :candidates].cpu(), flat("top_p")[:, 0, :candidates].cpu()
    return out
