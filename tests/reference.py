"""An independent, deliberately plain reference of the decoding semantics: one request, Python loops.

It follows the rules of docs/python_api.md (One step), not decoder.py's code, so the decoder is checked against the
spec.
"""
from __future__ import annotations

import math

import torch

from dllm_viz import DecodeConfig
from dllm_viz.core.schedules import planned_steps


def _quota(cfg: DecodeConfig, k: int, block_step: int, eligible: int, above: int) -> int:
    M = cfg.block_size
    if cfg.schedule == "topk_decay":
        q = k
    elif cfg.schedule == "fixed_steps":
        s = cfg.total_steps // cfg.num_blocks
        q = M // s + (1 if block_step < M % s else 0)
    elif cfg.schedule == "threshold":
        q = max(above, cfg.min_k)
    else:  # adaptive
        q = max(cfg.min_k, math.ceil(cfg.initial_k * eligible / M))
    return min(q, eligible)


def _stage_temperature(cfg: DecodeConfig, step: int, confirmed: float) -> float:
    if cfg.temperature_stages is None:
        return cfg.temperature
    T = planned_steps(cfg)
    stage = min(2, 3 * step // T) if T else min(2, int(3 * confirmed))
    return cfg.temperature_stages[stage]


@torch.no_grad()
def reference_decode(model, prompt: list[int], cfg: DecodeConfig) -> dict:
    mask = model.mask_token_id
    gen = torch.Generator().manual_seed(cfg.seed)
    P, G = len(prompt), cfg.gen_length
    canvas = list(prompt) + [mask] * G
    k, prev_block, block_step, step = cfg.initial_k, 0, 0, 0
    records = []
    while mask in canvas[P:]:
        u = torch.rand(2, G, generator=gen)
        ids = torch.tensor([canvas])
        logits = model(ids, torch.ones_like(ids, dtype=torch.bool))[0, P : P + G].float().clone()
        logits[:, mask] = float("-inf")
        probs = torch.softmax(logits, -1)
        masked = [i for i in range(G) if canvas[P + i] == mask]
        conf = {i: float(probs[i].max()) for i in masked}
        block = min(i // cfg.block_size for i in masked)
        if block != prev_block:
            block_step = 0
            if cfg.block_schedule == "restart":
                k = cfg.initial_k
        eligible = [i for i in masked if i // cfg.block_size == block]
        above = sum(conf[i] >= cfg.threshold for i in eligible)
        q = _quota(cfg, k, block_step, len(eligible), above)
        chosen = sorted(eligible, key=lambda i: (-conf[i], i))[:q]
        T = _stage_temperature(cfg, step, 1 - len(masked) / G)
        tokens = []
        for i in chosen:
            if T == 0:
                tok = int(logits[i].argmax())
            else:
                p = torch.softmax(logits[i] / T, -1)
                cdf = p.cumsum(-1)
                tok = int(torch.searchsorted(cdf, (u[0, i] * cdf[-1]).reshape(1), right=True).clamp(max=len(p) - 1))
            tokens.append(tok)
            canvas[P + i] = tok
        records.append({"selected": chosen, "tokens": tokens, "confidence": conf, "temperature": T})
        k = max(cfg.min_k, math.floor(k * cfg.decay))
        block_step += 1
        prev_block = block
        step += 1
    return {"token_ids": canvas[P:], "records": records}
