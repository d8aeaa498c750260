"""The training run's number format: bf16 autocast where the device has bf16 units, else fp32."""

from __future__ import annotations

from contextlib import AbstractContextManager

import torch


def autocast(enabled: bool, device: torch.device) -> AbstractContextManager:
    """bf16 autocast on ``device`` (a no-op when not ``enabled``): the forwards of training and evaluation."""
    return torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=enabled)


def cpu_has_bf16_units() -> bool:
    """Whether this CPU has bf16 matrix units (AMX tiles or AVX512-BF16); without them bf16 autocast
    runs slower than fp32 (5x for the embedded model's forwards on an AMD EPYC, MODEL_CARD.md)."""
    probes = ("_is_amx_tile_supported", "_is_avx512_bf16_supported")
    return any(getattr(torch.cpu, name, lambda: False)() for name in probes)
