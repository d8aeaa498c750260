"""MDPO's Running Confidence Remasking at temperature 0: a clean re-implementation (tests/mdpo/README.md).

Re-implemented from autonomousvision/mdpo at e6ae439, `src/mdlm_generation_utils.py`
(`diffusion_generate` with rcr=True, `top_p_logits`) and `src/llada/generate.py`
(`get_num_transfer_tokens_maskgit`, `gamma_func` "linear"); MDPO has no licence, so none of its
code is copied here. One canvas row, `model(ids (1, N)) -> logits (1, N, V)`.

The rule, as the original computes it:
  quotas    per block of M masks in S steps, after step t the block has M - floor(M * r_t) tokens,
            r_t = clip(1 - (t + 1) / S, 1e-6, 1) in float64: quota_t is the difference (64 masks in 24
            steps: 3, 3, 2, 3, 3, 2, ...);
  fill      every step: confidence = the maximum of softmax(logits) (after the nucleus, when top_p < 1),
            -inf outside the masks of the row up to the current block's end; fill the top
            sum(quota_t, ...) of the whole row (`torch.topk`, its order among ties) with the argmax and
            record each filled position's confidence in the running confidence of the whole sequence;
  take back except at a block's last step: the sum(quota_{t+1}, ...) positions of the whole row with the
            lowest running confidence (0, never decided, read as 1.0; `torch.topk(largest=False)`) go
            back to the mask, earlier blocks' tokens and, on ties at 1.0, prompt positions included.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import torch

Model = Callable[[torch.Tensor], torch.Tensor]  # ids (1, N) -> logits (1, N, V)


def maskgit_linear_quotas(masks: int, steps: int) -> list[int]:
    """Tokens to reveal at each of `steps` steps for `masks` masks (MaskGIT's linear schedule)."""
    shown = [masks - math.floor(masks * min(max(1.0 - (t + 1) / steps, 1e-6), 1.0)) for t in range(steps)]
    return [b - a for a, b in zip([0] + shown[:-1], shown)]


def nucleus(logits: torch.Tensor, top_p: float) -> torch.Tensor:
    """The logits with every token outside the top-p nucleus set to the dtype's minimum: a token is
    dropped once the probability mass of the tokens ranked before it exceeds `top_p`."""
    ranked, order = torch.sort(logits, dim=-1, descending=True)
    before = torch.softmax(ranked, dim=-1).cumsum(-1)
    drop = torch.zeros_like(before, dtype=torch.bool)
    drop[..., 1:] = before[..., :-1] > top_p
    return logits.masked_fill(torch.zeros_like(drop).scatter(-1, order, drop), torch.finfo(logits.dtype).min)


@dataclass
class RcrRun:
    """The row after each step (prompt included) and what each step filled and took back."""

    rows: list[list[int]] = field(default_factory=list)
    filled: list[list[int]] = field(default_factory=list)  # positions given the argmax (row positions)
    taken_back: list[list[int]] = field(default_factory=list)  # positions set to the mask after filling
    forwards: int = 0


@torch.no_grad()
def rcr_generate(model: Model, prompt: list[int], *, mask_id: int, steps: int, gen_length: int,
                 block_length: int, top_p: float | None = None) -> tuple[list[int], RcrRun]:
    """The generated ids and the run, as MDPO's diffusion_generate(rcr=True, temperature=0)."""
    if gen_length % block_length:
        raise ValueError("gen_length must be a multiple of block_length, as MDPO asserts")
    P = len(prompt)
    x = torch.full((1, P + gen_length), mask_id, dtype=torch.long)
    x[0, :P] = torch.tensor(prompt, dtype=torch.long)
    blocks = gen_length // block_length
    per_block = max(1, steps // blocks)
    running = torch.zeros(x.shape, dtype=torch.float32)  # each position's confidence when last filled; 0: never
    run = RcrRun()
    for b in range(blocks):
        end = P + (b + 1) * block_length
        quotas = maskgit_linear_quotas(int((x[0, end - block_length:end] == mask_id).sum()), per_block)
        for t in range(per_block):
            masked = x == mask_id
            logits = model(x)
            run.forwards += 1
            if top_p is not None and top_p < 1:
                logits = nucleus(logits, top_p)
            conf, pred = torch.softmax(logits, dim=-1).max(dim=-1)  # (1, N) each, in the logits' dtype
            conf[:, end:] = -math.inf
            pred = torch.where(masked, pred, x)
            conf = torch.where(masked, conf, torch.tensor(-math.inf, dtype=conf.dtype))
            fill = torch.topk(conf[0], k=sum(quotas[t:])).indices
            x[0, fill] = pred[0, fill]
            running[0, fill] = conf[0, fill]  # float32 logits: as the original (a bf16 softmax cannot be written here)
            back = torch.zeros(0, dtype=torch.long)
            if t != per_block - 1:
                score = torch.where(running == 0.0, 1.0, running)[0]
                back = torch.topk(score, k=sum(quotas[t + 1:]), largest=False).indices
                x[0, back] = mask_id
            run.rows.append(x[0].tolist())
            run.filled.append(sorted(fill.tolist()))
            run.taken_back.append(sorted(back.tolist()))
    return x[0, P:].tolist(), run
