"""Rotary positions (Su et al., 2021, RoFormer): the tables and the rotation the embedded models use.

Apart from `embedded.py` so that the cached forward (`kv_cache.py`) rotates a window's queries and
keys with the same function as the full forward, without importing the model module back.
"""
from __future__ import annotations

import torch


def rotary_tables(n: int, head_dim: int, base: float) -> tuple[torch.Tensor, torch.Tensor]:
    """cos/sin tables for rotary positions (Su et al., 2021), each ``(n, head_dim / 2)``."""
    inv_freq = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim)  # (D/2,)
    angles = torch.arange(n, dtype=torch.float32)[:, None] * inv_freq[None, :]  # (N, D/2)
    return angles.cos(), angles.sin()


def apply_rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate pairs (first half, second half) of the head dimension. x: (B, H, N, D)."""
    x1, x2 = x.chunk(2, dim=-1)  # (B, H, N, D/2) each
    cos, sin = cos.to(x.dtype), sin.to(x.dtype)
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)
