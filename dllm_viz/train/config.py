"""The recipe of one training run (`TrainConfig`): the model's shape, the data, the objective's knobs,
the optimiser's schedule. Saved in every checkpoint, so ``--resume`` continues the same recipe; the
command line derives one flag per field (`cli`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class TrainConfig:
    """One training run; saved in every checkpoint so ``--resume`` continues the same recipe."""

    vocab_size: int = 4096  # BPE vocabulary, special tokens included
    d_model: int = 256  # see EmbeddedConfig
    n_layers: int = 6
    n_heads: int = 4
    d_ff: int = 704
    conv_kernel: int = 5
    max_length: int = 256  # model context; also the training window
    batch_size: int = 32  # windows per step
    short_fraction: float = 0.25  # share of steps trained on a shorter random window (playground canvases)
    prompt_fraction: float = 0.0  # share of rows whose random prefix stays clean, as a prompt does (LLaDA SFT)
    # share of rows masked rarest tokens first, as a confidence-first decode leaves them
    rare_first_fraction: float = 0.0
    pairs: bool = False  # data lines are prompt<TAB>answer: one example per row, only the answer masked (pairs.py)
    # share of rows whose visible tokens are replaced at random (LLaDA 2.1 T2T stream); > 0: loss at every position
    edit_fraction: float = 0.0
    # in those rows, a visible token is replaced by another ordinary token with probability edit_rate * (1 - t)
    edit_rate: float = 0.2
    # share of rows with tokens inserted and removed (DELETE / SPLIT targets, LLaDA 2.2); > 0 needs --init-from
    length_fraction: float = 0.0
    # in those rows, an insertion or a removal before each token with probability length_rate * (1 - t)
    length_rate: float = 0.12
    steps: int = 6000  # optimiser steps
    lr: float = 2e-3  # peak AdamW learning rate
    min_lr_ratio: float = 0.1  # cosine floor, as a fraction of lr
    warmup: int = 200  # linear warm-up steps
    weight_decay: float = 0.1
    grad_clip: float = 1.0
    t_min: float = 1e-3  # smallest noise level (keeps the 1/t weight finite)
    seed: int = 0
    bf16: bool = True  # bf16 autocast (CPU AMX / CUDA)
    eval_every: int = 250
    eval_windows: int = 64  # held-out windows per evaluation
    ckpt_every: int = 250

    def __post_init__(self) -> None:
        positive = ("vocab_size", "d_model", "n_layers", "n_heads", "d_ff", "batch_size", "steps", "eval_every",
                    "eval_windows", "ckpt_every")
        for field in positive:
            if getattr(self, field) < 1:
                raise ValueError(f"{field}={getattr(self, field)} must be >= 1")
        if self.max_length < 16:
            raise ValueError(f"max_length={self.max_length} must be >= 16")
        for field in ("short_fraction", "prompt_fraction", "rare_first_fraction", "edit_fraction", "edit_rate",
                      "length_fraction", "length_rate"):
            if not 0.0 <= getattr(self, field) <= 1.0:
                raise ValueError(f"{field}={getattr(self, field)} must be in [0, 1]")
        if not 0.0 < self.lr < 1.0:
            raise ValueError(f"lr={self.lr} must be in (0, 1)")
        if not 0.0 <= self.min_lr_ratio <= 1.0:
            raise ValueError(f"min_lr_ratio={self.min_lr_ratio} must be in [0, 1]")
        if not 0.0 < self.t_min < 1.0:
            raise ValueError(f"t_min={self.t_min} must be in (0, 1)")
        if self.warmup < 0:
            raise ValueError(f"warmup={self.warmup} must be >= 0")
        if self.pairs and (self.rare_first_fraction or self.prompt_fraction):
            raise ValueError(f"pairs=True needs rare_first_fraction=0 and prompt_fraction=0 (a pair's prompt is never "
                             f"masked already), got {self.rare_first_fraction} and {self.prompt_fraction}")
        if self.pairs and self.edit_fraction:
            raise ValueError(f"pairs=True needs edit_fraction=0 (the editing stream replaces tokens of running text), "
                             f"got {self.edit_fraction}")
