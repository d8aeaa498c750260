"""train.optim: the learning-rate schedule."""
from __future__ import annotations

from dataclasses import replace

import pytest

from dllm_viz.train.optim import lr_at
from tests.train_corpus import TINY


def test_lr_warms_up_then_decays_to_floor() -> None:
    cfg = replace(TINY, steps=100, warmup=10)
    assert lr_at(0, cfg) < lr_at(9, cfg) == pytest.approx(cfg.lr)
    assert lr_at(100, cfg) == pytest.approx(cfg.lr * cfg.min_lr_ratio)
