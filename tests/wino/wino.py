"""WINO's `decoding_wino` at temperature 0: a clean re-implementation (tests/wino/README.md).

Re-implemented from Feng-Hong/WINO-DLLM at 9549a1d, `LLaDA/decoding.py`, `decoding_wino` (lines
113-198); the repository has no licence, so none of its code is copied here. One row; the model
has LLaDA's calling convention as WINO's modified `modeling_llada.py` takes it:
`model(ids (1, N + B), attention_mask=(1, 1, N + B, N + B) bool, position_ids=(N + B,)).logits`.

The canvas is the prompt and the generated positions (N) followed by a shadow block of B mask
tokens whose position ids are those of the current block. One forward per step:
  main rows   attend to the N canvas positions only (never to the shadow block);
  shadow row i  attends to every canvas position except the block's position i, and to every shadow
            row (its own included): what the block's position i is predicted to be without its own
            token, with the block's other positions doubled by a mask at the same position id.
Per step, from that one forward (float64 softmax of the logits):
  draft     the block's masks whose probability of the argmax > threshold; more than
            max_accept = min(max(int(0.7 m), 5), 20) (m masks at the step's start): the top max_accept
            (`torch.topk`); none: the most probable (`torch.argmax`). The drafts are written.
  verify    each decided position of the block at the step's start scores the shadow row's
            probability of the token it holds; when more than one was drafted, those < threshold_back
            go back to the mask, or, when they are at least last_accept (the previous step's drafts, 30
            at a block's first step), the last_accept - 1 lowest (`torch.topk(largest=False)`).
The block loops until no mask is left, with no cap on its steps; the function returns WINO's step
count, one per forward.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch

FIRST_LAST_ACCEPT = 30


def shadow_inputs(P: int, gen_length: int, block_length: int, block: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The attention mask `(1, 1, N + B, N + B)` bool and position ids `(N + B,)` of block `block`'s forwards."""
    N, B = P + gen_length, block_length
    lo, hi = P + block * B, P + (block + 1) * B
    allowed = torch.ones(N + B, N + B, dtype=torch.bool)
    allowed[:, N:] = False  # nobody sees the shadow block ...
    allowed[N:, N:] = True  # ... but the shadow rows, which see each other
    allowed[N:, lo:hi] = ~torch.eye(B, dtype=torch.bool)  # shadow row i sees the block but its position i
    positions = torch.cat([torch.arange(N), torch.arange(lo, hi)])
    return allowed.view(1, 1, N + B, N + B), positions


@dataclass
class WinoRun:
    """Per step: the positions drafted and taken back (canvas positions), the canvas after (N ids)."""

    drafted: list[list[int]] = field(default_factory=list)
    taken_back: list[list[int]] = field(default_factory=list)
    rows: list[list[int]] = field(default_factory=list)
    verify: list[dict[int, float]] = field(default_factory=list)  # position -> its verify probability
    steps: int = 0  # WINO's count: forwards


def _pick(score: torch.Tensor, k: int, *, largest: bool) -> torch.Tensor:
    """`(1, L)` bool: the k positions `torch.topk` picks from the flattened scores."""
    out = torch.zeros(score.numel(), dtype=torch.bool)
    out[torch.topk(score.reshape(-1), k=k, largest=largest).indices] = True
    return out.view(score.shape)


@torch.no_grad()
def wino_generate(model, prompt: list[int], *, gen_length: int, block_length: int, mask_id: int,
                  threshold: float = 0.6, threshold_back: float = 0.9) -> tuple[list[int], WinoRun]:
    """The generated ids and the run, as decoding_wino(temperature=0)."""
    if gen_length % block_length:
        raise ValueError("gen_length must be a multiple of block_length, as WINO asserts")
    P, B = len(prompt), block_length
    N = P + gen_length
    x = torch.full((1, N + B), mask_id, dtype=torch.long)  # the canvas, then the shadow block (always masks)
    x[0, :P] = torch.tensor(prompt, dtype=torch.long)
    run = WinoRun()
    for b in range(gen_length // B):
        lo, hi = P + b * B, P + (b + 1) * B
        open_ = x == mask_id  # (1, N + B): masks of the canvas up to this block's end
        open_[:, hi:] = False
        checked = torch.zeros_like(open_)  # shadow rows whose block position holds a token
        checked[:, N:] = ~open_[:, lo:hi]
        allowed, positions = shadow_inputs(P, gen_length, B, b)
        last_accept = FIRST_LAST_ACCEPT
        while bool(open_.any()):
            max_accept = min(max(int(open_.sum() * 0.7), 5), 20)
            logits = model(x, attention_mask=allowed, position_ids=positions).logits  # (1, N + B, V)
            pred = logits.argmax(-1)  # (1, N + B); temperature 0: no Gumbel noise
            pred[0, N:] = torch.where(checked[0, N:], x[0, lo:hi], pred[0, N:])  # a shadow row scores its token
            prob = torch.softmax(logits.to(torch.float64), -1).gather(-1, pred.unsqueeze(-1)).squeeze(-1)
            pred = torch.where(open_, pred, x)
            draft_score = torch.where(open_, prob, -torch.inf)
            verify_score = torch.where(checked, prob, torch.inf)
            run.verify.append({lo + j: float(prob[0, N + j]) for j in checked[0, N:].nonzero().flatten().tolist()})
            drafted = draft_score > threshold
            if int(drafted.sum()) > max_accept:
                drafted = _pick(draft_score, max_accept, largest=True)
            elif not bool(drafted.any()):
                drafted = torch.zeros_like(drafted).view(-1)
                drafted[torch.argmax(draft_score)] = True
                drafted = drafted.view(open_.shape)
            x[drafted] = pred[drafted]
            accepted = int(drafted.sum())
            back = torch.zeros_like(drafted)  # over the shadow rows
            if accepted > 1:
                back = verify_score < threshold_back
                if int(back.sum()) >= last_accept:
                    back = _pick(verify_score, last_accept - 1, largest=False)
            back_main = torch.zeros_like(back)
            back_main[:, lo:hi] = back[:, N:]
            x[back_main] = mask_id
            open_[drafted] = False
            open_[back_main] = True
            drafted_shadow = torch.zeros_like(drafted)
            drafted_shadow[:, N:] = drafted[:, lo:hi]
            checked[drafted_shadow] = True
            checked[back] = False
            last_accept = accepted
            run.steps += 1
            run.drafted.append(drafted[0].nonzero().flatten().tolist())
            run.taken_back.append(back_main[0].nonzero().flatten().tolist())
            run.rows.append(x[0, :N].tolist())
    return x[0, P:N].tolist(), run
