"""The record of an insert/delete step (docs/indel.md): each row's `StepRecord`, its "indel" section included.

A row whose rule moves positions records its step like any other (the same fields, so every view reads
it), in the coordinates of the span that entered the step: the masks it filled (`selected`, `tokens`), the
tokens it rewrote (`edited`...) or took back (`remasked`...), the confidence the rule ranked the block's
masks by (SGLang's softmax probability, the mask token included) and the raw distribution's elsewhere; and
a section (`StepRecord.indel`, trace format version 3) with every operation `[position, kind, old token]`
(`core.alignment.OP_NAMES` and "cut") and `source`, the map from this step's span positions to the last
one's (-1: a new mask). Every tensor crosses to the host once per step, whatever the batch.
"""
from __future__ import annotations

from typing import Any

import torch

from dllm_viz.core.alignment import FILL, REMASK, REWRITE, operations_of
from dllm_viz.core.indel import InDelStep
from dllm_viz.core.scoring import Distribution
from dllm_viz.core.trace import StepRecord, quantize


def indel_records(slots: list[Any], idx_list: list[int], *, raw: Distribution, masked: torch.Tensor,
                  logits: torch.Tensor, cols: torch.Tensor, inside: torch.Tensor, out: InDelStep,
                  source: torch.Tensor, index: torch.Tensor, temperature: torch.Tensor, remaining: torch.Tensor,
                  open_: torch.Tensor, candidates: int) -> dict[int, StepRecord]:
    """Each slot's record: `raw` the distribution at the packed `masked (A, G)` positions, `logits (A, W, V)` at the
    blocks' positions `cols (A, W)` (`inside`), `out` the rule's step, `source (A, G)` its span-wide map,
    `index (A,)` the blocks stepped; advances the slots' counters (`remaining`, `open_`: the block still open)."""
    nan = float("nan")
    A, G = masked.shape
    dev = masked.device
    e = out.edits
    top_p, top_i = raw.top  # (M, 1, N)
    conf = torch.full((A, G), nan, device=dev).masked_scatter(masked, top_p[:, 0, 0].float())
    argmax = torch.full((A, G), -1, dtype=torch.long, device=dev).masked_scatter(masked, top_i[:, 0, 0])
    block_mask = inside & masked.gather(1, cols)  # (A, W): the blocks' masks, ranked by the rule's own p
    conf = _put(conf, cols, block_mask, out.confidence.float())
    at = lambda op: inside & (e.op == op)  # noqa: E731
    fill, rewrite, remask = at(FILL), at(REWRITE), at(REMASK)
    written = e.written.clamp(min=0)
    logp = raw.logp  # (M, 1, V): log-probabilities of the tokens written at masks
    packed = torch.full((A, G), -1, dtype=torch.long, device=dev).masked_scatter(
        masked, torch.arange(int(masked.sum()), device=dev))
    fill_rows = packed.gather(1, cols)  # (A, W)
    lp = torch.zeros(A, cols.shape[1], device=dev)
    if bool(fill.any()):
        lp[fill] = logp[fill_rows[fill], 0].gather(-1, written[fill].unsqueeze(-1)).squeeze(-1).float()
    old_p = torch.zeros(A, cols.shape[1], device=dev)
    if bool(rewrite.any()):  # the old token's probability under the same softmax the rule read
        old_p[rewrite] = torch.softmax(logits[rewrite], -1).gather(-1, e.old[rewrite].unsqueeze(-1)).squeeze(-1)
    host = {"cols": cols, "op": e.op, "cut": e.cut, "fill": fill, "rewrite": rewrite, "remask": remask, "old": e.old,
            "written": e.written, "p": out.confidence.float(), "lp": lp, "old_p": old_p, "source": source, "conf": conf,
            "argmax": argmax, "masked": masked, "index": index, "temperature": temperature, "remaining": remaining,
            "open": open_}
    if candidates:
        host["cand_p"] = _unpack(top_p[:, 0, :candidates], masked)
        host["cand_i"] = _unpack(top_i[:, 0, :candidates], masked)
    host = {k: v.cpu() for k, v in host.items()}
    # Every row's floats rounded at once (`quantize` of a tensor: the numbers Python's round gives).
    rounded = {"conf": quantize(host["conf"].double())}
    if candidates:
        rounded["cand_p"] = quantize(host["cand_p"].double())
    records = {}
    for a, (index_, s) in enumerate(zip(idx_list, slots)):
        ops = operations_of(host["op"][a].tolist(), host["old"][a].tolist(), host["cut"][a].tolist())
        records[index_] = _record(a, s, host, rounded, ops, candidates)
    return records


def _put(t: torch.Tensor, cols: torch.Tensor, where: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    """`t (A, G)` with `values (A, W)` at `cols` where `where` (a new tensor)."""
    G = t.shape[1]
    wide = torch.nn.functional.pad(t, (0, 1))
    return wide.scatter(1, torch.where(where, cols, G), values.to(t.dtype))[:, :G]


def _unpack(packed: torch.Tensor, where: torch.Tensor) -> torch.Tensor:
    A, G = where.shape
    n = packed.shape[-1]
    out = torch.zeros(A, G, n, dtype=packed.dtype, device=packed.device)
    return out.masked_scatter(where.unsqueeze(-1).expand(A, G, n), packed)


def _record(a: int, s: Any, h: dict[str, torch.Tensor], rounded: dict[str, list], ops: list[tuple[int, str, int]],
            candidates: int) -> StepRecord:
    G = s.config.gen_length
    cols = h["cols"][a].tolist()
    fill = [j for j, f in enumerate(h["fill"][a].tolist()) if f]
    p = h["p"][a].tolist()
    fill.sort(key=lambda j: -p[j])  # most confident first, the earlier position on ties (a stable sort)
    written, old = h["written"][a].tolist(), h["old"][a].tolist()
    rec = StepRecord(
        step=s.step, block=int(h["index"][a]), k=len(fill), temperature=round(float(h["temperature"][a]), 6),
        confidence=rounded["conf"][a][:G], argmax=h["argmax"][a, :G].tolist(),
        selected=[cols[j] for j in fill], tokens=[written[j] for j in fill],
        logprobs=quantize([float(h["lp"][a, j]) for j in fill]),
    )
    if candidates:
        masked = h["masked"][a, :G].tolist()
        ids, ps = h["cand_i"][a, :G].tolist(), rounded["cand_p"][a][:G]
        rec.candidates = [c if m else [] for c, m in zip(ids, masked)]
        rec.candidate_probs = [q if m else [] for q, m in zip(ps, masked)]
    remask = [j for j, f in enumerate(h["remask"][a].tolist()) if f]
    if remask:
        rec.remasked, rec.remasked_tokens = [cols[j] for j in remask], [old[j] for j in remask]
        rec.remask_probs = quantize([p[j] for j in remask])
    rewrite = [j for j, f in enumerate(h["rewrite"][a].tolist()) if f]
    if rewrite:
        rec.edited, rec.edited_from = [cols[j] for j in rewrite], [old[j] for j in rewrite]
        rec.edited_to, rec.edit_probs = [written[j] for j in rewrite], quantize([p[j] for j in rewrite])
        rec.edit_from_probs = quantize([float(h["old_p"][a, j]) for j in rewrite])
    rec.indel = {"edits": [[cols[j], kind, tok] for j, kind, tok in ops], "source": h["source"][a, :G].tolist()}
    s.step += 1
    s.remaining = int(h["remaining"][a])
    s.hold = bool(h["open"][a])
    s.records.append(rec)
    return rec
