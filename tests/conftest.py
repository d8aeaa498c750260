"""Test-wide settings: one torch thread (the suite's models are tiny; thread start-up costs more
than it saves on a 2-core machine), and no network for Hugging Face code."""
from __future__ import annotations

import os

import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
torch.set_num_threads(1)
