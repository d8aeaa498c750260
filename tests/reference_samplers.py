"""LLaDA's and Fast-dLLM's samplers at temperature 0, re-implemented here from their code, not from dllm-viz.

Written from ML-GSAI/LLaDA `generate.py` at b7e6c35 (`generate`, `get_num_transfer_tokens`,
remasking="low_confidence") and NVlabs/Fast-dLLM `llada/generate.py` (`generate` with `threshold`,
`get_transfer_index`), keeping what decides a step: the canvas as one row `prompt + generated`;
`argmax` over the whole vocabulary (the mask token included); the softmax in the logits' dtype
(LLaDA) or in float64 (Fast-dLLM); -inf past the current block and wherever nothing is masked;
`torch.topk` over that row (its own order among equal values); the threshold compared with a
Python float; `x[transfer] = x0[transfer]`, which writes the mask back where it was the argmax.
Batch size one, no classifier-free guidance, no KV cache.

Each function returns the final row's generated part and, per step, the positions that received a
token (generated-relative, sorted) with the tokens they received, and the positions picked whose
argmax was the mask token (picked, nothing placed).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class RefStep:
    placed: list[tuple[int, int]]  # (position, token) that received a token, sorted by position
    wasted: list[int]  # positions picked whose argmax was the mask token: they stay masked


def _num_transfer_tokens(block_mask_index: torch.Tensor, steps: int) -> torch.Tensor:
    """LLaDA's get_num_transfer_tokens: `(1, steps)`, the remainder to the earliest steps."""
    mask_num = block_mask_index.sum(dim=1, keepdim=True)
    base, remainder = mask_num // steps, mask_num % steps
    out = torch.zeros(mask_num.size(0), steps, dtype=torch.int64) + base
    out[0, : int(remainder[0])] += 1
    return out


def _record(x_before: torch.Tensor, x0: torch.Tensor, transfer: torch.Tensor, P: int, mask_id: int) -> RefStep:
    picked = transfer[0].nonzero().flatten().tolist()
    placed = sorted((i - P, int(x0[0, i])) for i in picked if int(x0[0, i]) != mask_id)
    wasted = sorted(i - P for i in picked if int(x0[0, i]) == mask_id)
    assert all(int(x_before[0, i]) == mask_id for i in picked)
    return RefStep(placed=placed, wasted=wasted)


@torch.no_grad()
def llada_generate(model, prompt: list[int], *, steps: int, gen_length: int, block_length: int,
                   mask_id: int) -> tuple[list[int], list[RefStep]]:
    P = len(prompt)
    x = torch.full((1, P + gen_length), mask_id, dtype=torch.long)
    x[:, :P] = torch.tensor(prompt)
    num_blocks = gen_length // block_length
    steps_per_block = steps // num_blocks
    record = []
    for num_block in range(num_blocks):
        block_mask_index = x[:, P + num_block * block_length: P + (num_block + 1) * block_length] == mask_id
        num_transfer_tokens = _num_transfer_tokens(block_mask_index, steps_per_block)
        for i in range(steps_per_block):
            mask_index = x == mask_id
            logits = model(x)  # (1, N, V) in the model's dtype
            x0 = torch.argmax(logits, dim=-1)  # temperature 0: the Gumbel noise is off
            p = torch.softmax(logits, dim=-1)  # in the logits' dtype (float64 was removed in f51cb17)
            x0_p = torch.squeeze(torch.gather(p, dim=-1, index=torch.unsqueeze(x0, -1)), -1)
            x0_p[:, P + (num_block + 1) * block_length:] = -float("inf")
            x0 = torch.where(mask_index, x0, x)
            confidence = torch.where(mask_index, x0_p, -float("inf"))
            transfer = torch.zeros_like(x0, dtype=torch.bool)
            _, select_index = torch.topk(confidence[0], k=int(num_transfer_tokens[0, i]))
            transfer[0, select_index] = True
            record.append(_record(x, x0, transfer, P, mask_id))
            x[transfer] = x0[transfer]
    return x[0, P:].tolist(), record


@torch.no_grad()
def fast_dllm_generate(model, prompt: list[int], *, gen_length: int, block_length: int, threshold: float,
                       mask_id: int, max_steps: int = 10_000) -> tuple[list[int], list[RefStep]]:
    P = len(prompt)
    x = torch.full((1, P + gen_length), mask_id, dtype=torch.long)
    x[:, :P] = torch.tensor(prompt)
    record = []
    for num_block in range(gen_length // block_length):
        while True:
            if len(record) >= max_steps:
                raise RuntimeError("Fast-dLLM's loop did not end (a position keeps predicting the mask)")
            mask_index = x == mask_id
            logits = model(x)
            mask_index[:, P + (num_block + 1) * block_length:] = 0
            x0 = torch.argmax(logits, dim=-1)  # temperature 0
            p = torch.softmax(logits.to(torch.float64), dim=-1)
            x0_p = torch.squeeze(torch.gather(p, dim=-1, index=torch.unsqueeze(x0, -1)), -1)
            x0 = torch.where(mask_index, x0, x)
            confidence = torch.where(mask_index, x0_p, -float("inf"))
            transfer = torch.zeros_like(x0, dtype=torch.bool)
            num_transfer_tokens = mask_index.sum(dim=1, keepdim=True)
            _, select_index = torch.topk(confidence[0], k=int(num_transfer_tokens[0]))
            transfer[0, select_index] = True
            for k in range(1, int(num_transfer_tokens[0])):
                if confidence[0, select_index[k]] < threshold:
                    transfer[0, select_index[k]] = False
            record.append(_record(x, x0, transfer, P, mask_id))
            x[transfer] = x0[transfer]
            if (x[:, P + num_block * block_length: P + (num_block + 1) * block_length] == mask_id).sum() == 0:
                break
    return x[0, P:].tolist(), record
