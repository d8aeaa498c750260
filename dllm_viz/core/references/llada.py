"""LLaDA's own `generate` (ML-GSAI/LLaDA, ``generate.py``, ``generate`` with ``remasking="low_confidence"``),
down to its ties, dtypes and candidates; Fast-dLLM's `generate` is a fork of it (`fast_dllm`).

  - The softmax and the argmax run over the whole vocabulary, so the mask token may be what a position
    predicts: it stays a candidate for its block's first `block_size` steps (`keeps_mask`), and where it
    is drawn at a chosen position, ``x[transfer_index] = x0[transfer_index]`` writes the mask back: the
    pick is spent, nothing is placed (`unplaced_masks`). After as many steps as the block has positions
    the best real token is drawn instead (LLaDA would leave the block with the mask in place);
  - the confidence is the probability of the drawn token, ``F.softmax(logits, dim=-1)`` in the logits'
    own dtype (at b7e6c35; float64 was removed in f51cb17), gathered at it (`sampled_raw`);
  - the positions are ``torch.topk(confidence, k=quota)`` over the canvas row, prompt included, -inf
    where not eligible: that call's own order among equal values (`pick`).

Example (LLaDA's rule in float32 and bfloat16 ranks in the logits' dtype, Fast-dLLM's in float64):

>>> import torch
>>> from dllm_viz import DecodeConfig
>>> from dllm_viz.core.references import follows
>>> ref = follows(DecodeConfig.preset("llada", 8))
>>> ref.name, ref.wide(torch.bfloat16), follows(DecodeConfig.preset("fast_dllm", 8)).wide(torch.bfloat16)
('llada', False, True)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import torch

from dllm_viz.core.packed import Drawn, Packed


@dataclass(frozen=True, kw_only=True)
class Reference:
    """A reference implementation whose code a config's rule is, and how it computes."""

    name: str
    follows: Callable[[Any], bool]  # config -> its rule is this code's
    wide: Callable[[torch.dtype], bool]  # logits' dtype -> it computes the softmax and ranks in float64
    ranks_all: bool  # topk over every eligible position, the first `count` kept (else topk of k=count)
    source: str  # repository, file and function
    keeps_mask: bool = True  # the mask token stays a candidate in a young row (its code's softmax keeps it)
    tail: Callable[[Any], int] = lambda config: 0  # config -> columns its code's row has after the canvas
    #                                               (WINO's shadow block), -inf there
    first_max: bool = False  # a pick of one is its code's `torch.argmax` (the first maximum), not `topk(k=1)`


def _follows(config: Any) -> bool:
    # The confidence its code computes, and no revision rule (a rule follows its own code: WINO's).
    return config.confidence_from == "sampled_raw" and config.revise == "none" and config.schedule != "threshold"


REFERENCE = Reference(name="llada", follows=_follows, wide=lambda dtype: dtype == torch.float64, ranks_all=False,
                      source="ML-GSAI/LLaDA, generate.py, generate(remasking='low_confidence')")


def keeps_mask(young: torch.Tensor, masked: torch.Tensor) -> torch.Tensor:
    """`(M, 1)` bool: the packed positions of the `young (A,)` reference rows (the mask stays a candidate)."""
    return young[masked.nonzero(as_tuple=True)[0]].view(-1, 1)


def unplaced_masks(selected: torch.Tensor, tokens: torch.Tensor, count: torch.Tensor,
                   mask_id: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Where a reference row drew the mask token at a chosen position, nothing is placed: the position
    was one of the step's picks (its quota is spent) but stays masked. `(selected, tokens, count)`."""
    wasted = selected & (tokens == mask_id)  # (A, G)
    return selected & ~wasted, tokens.masked_fill(wasted, -1), count - wasted.sum(-1)


def pick(quirks: Any, selected: torch.Tensor, conf: torch.Tensor, eligible: torch.Tensor, count: torch.Tensor,
         dtype: torch.dtype) -> torch.Tensor:
    """`selected (A, G)` with each reference row's pick redone as its code does it, ties included.

    Both codes rank one canvas row, `prompt + generated` columns, with -inf wherever a position is
    not eligible, by `torch.topk`, whose order among equal values is its own: LLaDA's `generate`
    takes `topk(confidence, k=quota)`; Fast-dLLM's `get_transfer_index` takes `topk` over every
    masked position and keeps the first plus those at or above the threshold (the first `count`
    of that order, `count` counted by the threshold schedule in the same float64). The row is laid out
    here the same way (`prompt_length` columns of -inf, then the row's own `gen_length`), in
    the dtype the code ranks in (`Reference.wide`), so the same call breaks ties the same way.
    """
    P, G = quirks.prompt_length, quirks.gen_length
    out = selected.clone()
    for r in quirks.rows.nonzero().flatten().tolist():
        ref = quirks.refs[r]
        p, g, n = int(P[r]), int(G[r]), int(count[r])
        row = torch.full((p + g + quirks.tails[r],), float("-inf"), dtype=torch.float64, device=conf.device)
        row[p:p + g] = conf[r, :g].double().masked_fill(~eligible[r, :g], float("-inf"))
        k = int(eligible[r].sum()) if ref.ranks_all else n
        row = row.to(torch.float64 if ref.wide(dtype) else dtype)
        if n == 1 and ref.first_max:  # its code's torch.argmax: the first maximum
            picks = row.argmax().view(1) - p
        else:
            picks = torch.topk(row, k).indices[:n] - p  # (n,)
        out[r] = False
        out[r, picks] = True
    return out


def sampled_raw(raw_conf: torch.Tensor, x: Packed, params: Any, drawn: Drawn | None) -> torch.Tensor:
    """The RAW probability of the drawn token (LLaDA's ``low_confidence``, Fast-dLLM's threshold),
    computed as the cited code computes it: softmax over the whole vocabulary, the mask token
    included, in that code's dtype (`Reference.wide`), gathered at the drawn token. Float64 out
    (exact for every dtype), so the threshold compares it exactly and the ranking sees its ties.
    Rows with a revision rule (WINO) keep their rule's reference: float64, rounded to float32.
    """
    assert drawn is not None  # the config validator ties this source to sample_scope="all"
    ids = drawn.tokens[x.masked].clamp(min=0).view(-1, 1, 1)  # (M, 1, 1)
    quirks = params.quirks
    ref = quirks.rows[x.rows] if quirks.any else None  # (M,) the rows computed as their code does
    plain = None if ref is None else ~ref
    if ref is None or bool(plain.any()):  # a revision rule's rows (WINO's canvases): float64, rounded to float32
        logits = x.logits.double() if ref is None else x.logits[plain].double()  # (m, 1, V)
        at = ids if ref is None else ids[plain]
        logp = logits.gather(-1, at).squeeze(-1) - torch.logsumexp(logits, dim=-1)  # (m, 1)
        done = logp.exp().float().double()
        out = done if ref is None else torch.zeros(ids.shape[0], 1, dtype=torch.float64, device=ids.device)
        if ref is not None:
            out[plain] = done
    else:
        out = torch.zeros(ids.shape[0], 1, dtype=torch.float64, device=ids.device)
    if quirks.any:  # the rows computed as LLaDA's, Fast-dLLM's or WINO's code does
        wide = quirks.wide(x.dtype)[x.rows]  # (M,) True: float64, False: the logits' dtype
        for dtype, where in ((torch.float64, ref & wide), (x.dtype, ref & ~wide)):
            if bool(where.all()):  # every position: the packed logits themselves, no copy
                out = torch.softmax(x.logits.to(dtype), dim=-1).gather(-1, ids).squeeze(-1).double()
            elif bool(where.any()):
                p = torch.softmax(x.logits[where].to(dtype), dim=-1).gather(-1, ids[where])  # (m, 1, 1)
                out[where] = p.squeeze(-1).double()
    return x.unpack(out)
