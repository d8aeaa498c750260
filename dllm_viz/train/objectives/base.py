"""What a training objective is: how a clean `Batch` is corrupted (the forward process), how the
model's output on the corrupted batch is scored (the loss), and what is measured on held-out data.

The loop (`train.loop`) owns everything else: the data, the optimiser, checkpoints, when to
evaluate. Per step it calls ``objective.corrupt(batch, generator)`` then
``objective.loss(net, corrupted)``; every random draw of a step goes through that one generator, in
that order, so a run is reproducible from its seed and resumable from its checkpoint.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import torch

from dllm_viz.models.embedded import EmbeddedDenoiser
from dllm_viz.train.config import TrainConfig
from dllm_viz.models.tokenizer import EmbeddedTokenizer
from dllm_viz.train.data import Batch, batch_sampler
from dllm_viz.train.pairs import Rows
from dllm_viz.train.precision import autocast


@dataclass(frozen=True)
class Corrupted:
    """A batch after the forward process: the model's input and what its loss needs."""

    x: torch.Tensor  # (B, N) long: the clean tokens, the targets
    noisy: torch.Tensor  # (B, N) long: the model's input
    masked: torch.Tensor  # (B, N) bool: positions that hold the mask id in ``noisy``
    t: torch.Tensor  # (B,) float: each row's noise level
    real: torch.Tensor | None = None  # (B, N) bool: keys that are not padding; None: no padding
    maskable: torch.Tensor | None = None  # (B, N) bool: what could be corrupted (a pair's answer); None: all

    def to(self, device: torch.device) -> Corrupted:
        """The same batch on ``device``, but ``maskable``, which a loss only counts."""
        move = {name: getattr(self, name) for name in ("x", "noisy", "masked", "t", "real")}
        return replace(self, **{name: None if value is None else value.to(device) for name, value in move.items()})


@dataclass(frozen=True)
class Net:
    """The model as a training step runs it."""

    model: EmbeddedDenoiser  # the module: parameters, output head (``model.head``), mask id
    features: Callable[..., torch.Tensor]  # model.features or its compiled form: ids (B, N)[, keys] -> (B, N, D)
    bf16: bool  # the run's autocast (TrainConfig.bf16)
    device: torch.device

    def autocast(self) -> AbstractContextManager:
        """The context a forward runs in (bf16 autocast, or a no-op)."""
        return autocast(self.bf16, self.device)


class Objective:
    """Base class of a training objective; a module of `dllm_viz.train.objectives` that sets
    ``OBJECTIVE = TheClass`` is discovered.

    Subclasses set `name`, say when a recipe `selected` them (from its `TrainConfig` fields), build
    what they precompute in `for_run`, and implement `corrupt`, `loss` and `heldout_figures`;
    `can_edit`, `tokens`, `model_fields` and `sampler` are optional.
    """

    name: ClassVar[str] = ""
    # Trained to predict a token at visible positions too (EmbeddedConfig.can_edit, which token-to-token
    # edits read); `train.model.build_model` writes it into the model's config.
    can_edit: ClassVar[bool] = False
    # Special tokens the objective appends to the start model's vocabulary (``--init-from``; old ids unchanged,
    # their embedding rows start ~ N(0, 0.02^2): `train.model.start_from`).
    tokens: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def model_fields(cls, tokenizer: EmbeddedTokenizer) -> dict[str, Any]:
        """`EmbeddedConfig` fields the model declares for this objective (its `tokens`' ids)."""
        return {}

    def sampler(self, cfg: TrainConfig, train: torch.Tensor | Rows) -> Callable[[torch.Generator], Batch]:
        """What draws one clean `Batch` a step (`data.batch_sampler`, unless the objective reads other rows)."""
        return batch_sampler(cfg, train)

    @classmethod
    def selected(cls, cfg: TrainConfig) -> bool:
        """Whether the recipe asks for this objective (the default objective answers False)."""
        return False

    @classmethod
    def for_run(cls, cfg: TrainConfig, *, model: EmbeddedDenoiser, train: torch.Tensor | Rows) -> Objective:
        """The objective of one run; ``train`` is the training data, for statistics it precomputes."""
        raise NotImplementedError

    def corrupt(self, batch: Batch, generator: torch.Generator) -> Any:
        """The forward process on clean rows (CPU tensors): a `Corrupted`, or a record of the
        objective's own that its `loss` reads. Draws only from ``generator``."""
        raise NotImplementedError

    def loss(self, net: Net, corrupted: Any) -> torch.Tensor:
        """The scalar loss of one step (moves ``corrupted`` to ``net.device`` itself); it is logged as
        ``train_loss``."""
        raise NotImplementedError

    @classmethod
    def heldout_figures(
        cls, model: EmbeddedDenoiser, heldout: torch.Tensor | Rows, chars_per_token: float, cfg: TrainConfig,
        generator: torch.Generator, *, n_t: int,
    ) -> dict[str, float]:
        """What each evaluation logs about the held-out data (`train.evaluation.evaluate` calls it with
        the model in eval mode, gradients off, and ``generator`` seeded the same every time): the
        objective's bound in bits per character (``bits_per_char``, ``n_t`` noise levels) and whatever
        else shows it working."""
        raise NotImplementedError
