"""What the trainer's tests share: a tiny recipe and a small synthetic corpus drawn from an explicit
generator (no real data in the tests)."""
from __future__ import annotations

from pathlib import Path

import torch

from dllm_viz.train.config import TrainConfig

TINY = TrainConfig(
    vocab_size=300, d_model=32, n_layers=2, n_heads=2, d_ff=64, max_length=32, batch_size=4, steps=4,
    warmup=2, eval_every=2, eval_windows=4, ckpt_every=2, bf16=False,
)

WORDS = "the lady said that she was very happy to see him at the ball and all her sisters".split()


def write_corpus(root: Path) -> Path:
    """``root/train.txt`` (60 paragraphs of 40 words of a 17-word language) and ``root/heldout.txt`` (8)."""
    gen = torch.Generator().manual_seed(0)

    def paragraph() -> str:
        idx = torch.randint(0, len(WORDS), (40,), generator=gen)
        return " ".join(WORDS[i] for i in idx).capitalize() + "."
    (root / "train.txt").write_text("\n".join(paragraph() for _ in range(60)) + "\n")
    (root / "heldout.txt").write_text("\n".join(paragraph() for _ in range(8)) + "\n")
    return root
