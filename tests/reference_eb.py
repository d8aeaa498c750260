"""The EB-sampler as SGLang ships it, rewritten here from its file to check `dllm_viz.core.rules.eb`.

Written from sgl-project/sglang, ``python/sglang/srt/dllm/algorithm/eb_sampling.py``, ``EBSampling.run``
(the version whose `gamma` defaults to 0.15 and that suppresses the mask token), not from dllm-viz's code:
one request, its canvas cut into blocks as SGLang's loop visits them; for each block, until it has no
mask: one forward; the block's logits with the mask token set to the dtype's smallest finite value; the
argmax `x`; the entropies of the block's masked positions from ``log_softmax``; ``argsort`` of them; the
first position always revealed and each next one while ``cumsum`` of the entropies before it stays
``<= gamma``; `x` written at the revealed positions. (SGLang's `argsort` is not stable: among exactly
equal entropies its order is its own; the models here give none at the boundary.)
"""
from __future__ import annotations

import torch
import torch.nn.functional as F


def eb_sampling(model, prompt: list[int], *, gen_length: int, block_length: int, gamma: float):
    """`(canvas after the prompt, steps)`: each step's revealed `(position, token)` pairs, positions relative
    to the generated span, sorted."""
    mask = model.mask_token_id
    P = len(prompt)
    ids = torch.tensor([list(prompt) + [mask] * gen_length])  # (1, N)
    steps: list[list[tuple[int, int]]] = []
    for start in range(P, P + gen_length, block_length):
        end = start + block_length
        for _ in range(1, block_length + 1):
            block_mask = ids[0, start:end] == mask
            if not block_mask.any():
                break
            with torch.no_grad():
                logits = model(ids, torch.ones_like(ids, dtype=torch.bool))[0, start:end].float()  # (L, V)
            logits = logits.clone()
            logits[..., mask] = torch.finfo(logits.dtype).min
            x = torch.argmax(logits, dim=-1)
            positions = torch.nonzero(block_mask, as_tuple=False).flatten()
            log_probs = F.log_softmax(logits[positions], dim=-1)
            entropies = -(log_probs.exp() * log_probs).sum(dim=-1)
            order = torch.argsort(entropies, dim=0)
            sorted_positions, sorted_entropies = positions[order], entropies[order]
            reveal = torch.zeros_like(sorted_entropies, dtype=torch.bool)
            reveal[0] = True
            reveal[1:] = torch.cumsum(sorted_entropies[:-1], dim=0) <= gamma
            chosen = sorted_positions[reveal]
            ids[0, start + chosen] = x[chosen]
            steps.append(sorted((start - P + int(p), int(x[p])) for p in chosen))
    return ids[0, P:].tolist(), steps
