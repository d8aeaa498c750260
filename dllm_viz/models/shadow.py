"""WINO's shadow block (Feng-Hong/WINO-DLLM, ``LLaDA/decoding.py``, ``decoding_wino``): one forward that
gives a canvas's logits and, for each position of one block, its logits with its own token hidden.

The canvas row (N positions) is followed by a shadow block: one mask token per position of the row's
current block ``[lo, hi)``, at that position's id. On LLaDA, a transformer, WINO passes a 4-D boolean
attention mask (`shadow_inputs`): the canvas rows attend to the canvas only (so their logits are the plain
forward's), and shadow row i attends to every canvas position but ``lo + i``, later blocks' masks included,
and to every shadow row, its own included. Shadow row i so predicts position ``lo + i`` from everything
but its token, with the block's other positions doubled by masks at the same position ids.

The embedded models mix each position with its neighbours before attention (`Block.mix`, a depthwise
convolution of width 5), which no attention mask restricts. For them the shadow block means (`mix`,
`attend`): at every layer, shadow row i's convolution reads the canvas rows' states at the neighbouring
positions and its own state at its centre (the canvas with position ``lo + i`` replaced by the shadow
row, for that row alone), and its attention reads the canvas rows but ``lo + i`` and every shadow row, as
on LLaDA. The canvas rows never read a shadow row, so their logits are bit for bit those of the forward
without the block. One forward of N + B rows per step, whatever the number of decided positions.

Shapes: R canvas positions packed row after row, S shadow rows after them, D the model width, H heads.
"""
from __future__ import annotations

from typing import Callable, NamedTuple

import torch
import torch.nn.functional as F


class Shadow(NamedTuple):
    """One packed row's shadow block: the row (index into the packed rows), its first shadow row in the packed
    states, and the block's positions ``[lo, lo + size)`` in the row."""

    row: int
    first: int
    lo: int
    size: int


def shadow_inputs(n: int, lo: int, hi: int, device: torch.device | str = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
    """WINO's inputs for a canvas of `n` positions whose current block is ``[lo, hi)``: the boolean attention
    mask ``(1, 1, n + b, n + b)`` (True: may attend) and the position ids ``(n + b,)``, b = hi - lo."""
    b = hi - lo
    allowed = torch.ones(n + b, n + b, dtype=torch.bool, device=device)
    allowed[:, n:] = False  # nobody sees the shadow block ...
    allowed[n:, n:] = True  # ... but the shadow rows, which see each other
    allowed[n:, lo:hi] = ~torch.eye(b, dtype=torch.bool, device=device)  # shadow row i: the block but lo + i
    positions = torch.cat([torch.arange(n, device=device), torch.arange(lo, hi, device=device)])
    return allowed.view(1, 1, n + b, n + b), positions


def by_rows(call: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor],
            plain: Callable[[torch.Tensor, torch.Tensor], torch.Tensor], mask_token_id: int, input_ids: torch.Tensor,
            attention_mask: torch.Tensor | None, rows: torch.Tensor, cols: torch.Tensor, blocks: torch.Tensor,
            hidden_rows: torch.Tensor, hidden_cols: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """`models.base.logits_shadow` on LLaDA's convention: each row with a block alone, at its own length, as
    WINO calls it (`call(ids (1, n + b), allowed (1, 1, n + b, n + b), positions (n + b,)) -> (n + b, V)`,
    `shadow_inputs`), the others together (`plain(rows, cols) -> (m, V)`)."""
    spans = blocks.tolist()
    lengths = attention_mask.sum(1).tolist() if attention_mask is not None else [input_ids.shape[1]] * len(spans)
    full: dict[int, torch.Tensor] = {}
    for r, (lo, hi) in enumerate(spans):
        if hi > lo:
            n = int(lengths[r])
            allowed, positions = shadow_inputs(n, lo, hi, input_ids.device)
            masks = torch.full((hi - lo,), mask_token_id, dtype=input_ids.dtype, device=input_ids.device)
            full[r] = call(torch.cat([input_ids[r, :n], masks]).unsqueeze(0), allowed, positions)  # (n + b, V)
    alone = torch.tensor(sorted(full), dtype=rows.dtype, device=rows.device)
    together = ~torch.isin(rows, alone)
    others = plain(rows[together], cols[together]) if bool(together.any()) else None
    first = next(iter(full.values())) if full else others
    assert first is not None  # some row is asked or has a block
    out = torch.empty(rows.shape[0], first.shape[-1], dtype=first.dtype, device=first.device)
    if others is not None:
        out[together] = others.to(out.dtype)
    for r, logits in full.items():
        at = rows == r
        out[at] = logits[cols[at]].to(out.dtype)
    hidden = torch.stack([full[r][int(lengths[r]) + c - spans[r][0]] for r, c in
                          zip(hidden_rows.tolist(), hidden_cols.tolist())]) if hidden_rows.numel() else \
        out.new_empty(0, out.shape[-1])
    return out, hidden.to(out.dtype)


def mix(conv: torch.nn.Conv1d, h: torch.Tensor, rows: list[tuple[int, int]], shadows: list[Shadow]) -> torch.Tensor:
    """The depthwise mixing of the shadow rows `(S, D)`: each reads the canvas row's states `h` around its
    position, its own state at the centre (the embedded models' shadow block, module docstring)."""
    K = conv.kernel_size[0]
    pad = K // 2
    weight, bias = conv.weight[:, 0], conv.bias  # (D, K), (D,)
    out = []
    for sh in shadows:
        s, n = rows[sh.row]
        padded = F.pad(h[s:s + n].t(), (pad, pad))  # (D, n + 2 pad)
        window = padded.unfold(1, K, 1)[:, sh.lo:sh.lo + sh.size].clone()  # (D, b, K): centred at lo .. lo + b - 1
        window[:, :, pad] = h[sh.first:sh.first + sh.size].t()  # its own state at the centre
        mixed = (window * weight.unsqueeze(1)).sum(-1)  # (D, b)
        out.append((mixed + bias.unsqueeze(-1) if bias is not None else mixed).t())
    return torch.cat(out)  # (S, D)


def attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, rows: list[tuple[int, int]],
           shadows: list[Shadow]) -> torch.Tensor:
    """The attention of the shadow rows, `(S, D)` (heads concatenated): `q, k, v (H, R + S, Dh)`, rotated. Shadow
    row i attends to the canvas row but its block position ``lo + i``, and to every shadow row of its block."""
    H, _, Dh = q.shape
    out = []
    for sh in shadows:
        s, n = rows[sh.row]
        b = sh.size
        keys = torch.cat([k[:, s:s + n], k[:, sh.first:sh.first + b]], dim=1)  # (H, n + b, Dh)
        values = torch.cat([v[:, s:s + n], v[:, sh.first:sh.first + b]], dim=1)
        allowed = torch.ones(b, n + b, dtype=torch.bool, device=q.device)
        allowed[torch.arange(b), sh.lo + torch.arange(b)] = False
        att = F.scaled_dot_product_attention(q[:, sh.first:sh.first + b].unsqueeze(0), keys.unsqueeze(0),
                                             values.unsqueeze(0), attn_mask=allowed.view(1, 1, b, n + b))
        out.append(att[0].transpose(0, 1).reshape(b, H * Dh))
    return torch.cat(out)  # (S, D)
