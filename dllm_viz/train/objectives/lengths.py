"""The length-editing objective (docs/indel.md), on with ``--length-fraction`` > 0: LLaDA 2.1's two streams plus a
third whose targets are LLaDA 2.2's edit tokens, DELETE and SPLIT (SGLang's ``JointThresholdInDel`` reads them).

LLaDA 2.2's recipe for the two tokens is not published (its report and SGLang PR #31773 describe the decoding
only), so the targets are the decoder's operations read backwards (`train.indel.corrupt_lengths`): an extra
token inserted into the clean text has the target DELETE, the token after a removed one the target SPLIT,
every other position LLaDA 2.1's target (the original token). In a share ``length_fraction`` of the rows,
before each token an insertion or a removal with probability ``length_rate * (1 - t) / 2`` each; then the
masks (only where the target is the token itself: a length error is seen, not guessed), the clean prompts
(``prompt_fraction``) and the random replacements of the editing stream (``edit_fraction``, ``edit_rate``),
as `objectives.editing` draws them; the loss at every position (`editing.mixed_loss`). The source windows are
a quarter longer than the model's context (`sampler`), so the window is full after the removals.

The objective adds the two tokens to the start model's vocabulary (`tokens`; ``--init-from`` is required): the
run's tokenizer is the start model's with ``<delete>`` and ``<split>`` appended (old ids unchanged), their
embedding rows start small and random (`models.embedded` ties the head, so their logits start near 0), and the
model declares them (``delete_token_id``, ``split_token_id``). The recipe of ``dllm_viz/assets/world-indel``
(its MODEL_CARD.md) is this objective from ``dllm_viz/assets/world``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from dllm_viz.models.embedded import EmbeddedDenoiser
from dllm_viz.models.tokenizer import EmbeddedTokenizer
from dllm_viz.train.config import TrainConfig
from dllm_viz.train.data import Batch
from dllm_viz.train.indel import AFTER_GAP, EXTRA, PLAIN, corrupt_lengths
from dllm_viz.train.objectives.base import Net, Objective
from dllm_viz.train.objectives.editing import mixed_loss, ordinary_ids, replace_visible
from dllm_viz.train.objectives.masked import MaskedObjective, keep_prompts, stratified_t
from dllm_viz.train.pairs import Rows

DELETE, SPLIT = "<delete>", "<split>"  # the edit tokens' names in the tokenizer (LLaDA 2.2's DELETE and SPLIT)
PROBE_RATE = 0.1  # the held-out probe: an operation before each token with this probability, nothing masked


@dataclass(frozen=True)
class LengthBatch:
    """One batch of the three streams."""

    inputs: torch.Tensor  # (B, N) long: what the model reads (masks, replacements, length errors)
    target: torch.Tensor  # (B, N) long: original tokens, DELETE, SPLIT
    masked: torch.Tensor  # (B, N) bool
    t: torch.Tensor  # (B,) mask rates
    kind: torch.Tensor  # (B, N) long: train.indel.PLAIN / EXTRA / AFTER_GAP


class LengthObjective(Objective):
    """Masks, random replacements and length errors; the loss at every position."""

    name = "lengths"
    can_edit = True
    tokens = (DELETE, SPLIT)

    def __init__(self, cfg: TrainConfig, *, mask_token_id: int, delete_id: int, split_id: int,
                 ordinary: torch.Tensor) -> None:
        self.cfg, self.mask_token_id, self.delete_id, self.split_id = cfg, mask_token_id, delete_id, split_id
        self.ordinary = ordinary  # (K,) sorted: what replacements and extra tokens draw

    @classmethod
    def selected(cls, cfg: TrainConfig) -> bool:
        return cfg.length_fraction > 0

    @classmethod
    def model_fields(cls, tokenizer: EmbeddedTokenizer) -> dict[str, Any]:
        ids = tokenizer.get_vocab()
        return {"delete_token_id": ids[DELETE], "split_token_id": ids[SPLIT]}

    @classmethod
    def for_run(cls, cfg: TrainConfig, *, model: EmbeddedDenoiser, train: torch.Tensor | Rows) -> LengthObjective:
        if cfg.pairs:
            raise ValueError("pairs=True is invalid with length_fraction > 0: the length errors are made in "
                             "running text")
        specials = [model.mask_token_id, model.pad_token_id, model.eos_token_id, model.delete_token_id,
                    model.split_token_id]
        return cls(cfg, mask_token_id=model.mask_token_id, delete_id=model.delete_token_id,
                   split_id=model.split_token_id, ordinary=ordinary_ids(model.vocab_size, specials))

    def sampler(self, cfg: TrainConfig, train: torch.Tensor | Rows) -> Callable[[torch.Generator], Batch]:
        """``batch_size`` random windows of ``max_length + max_length // 4`` tokens: room for the removals."""
        n = cfg.max_length + cfg.max_length // 4

        def draw(generator: torch.Generator) -> Batch:
            starts = torch.randint(0, train.numel() - n, (cfg.batch_size,), generator=generator)  # type: ignore[union-attr]
            return Batch(train[starts[:, None] + torch.arange(n)].long())  # type: ignore[index]

        return draw

    def corrupt(self, batch: Batch, generator: torch.Generator) -> LengthBatch:
        """`corrupt_lengths` at rate ``length_rate * (1 - t)``, masks on the plain positions, clean prompts,
        then the editing stream's replacements (everywhere but the masks and the edit targets)."""
        cfg = self.cfg
        B, N = batch.x.shape[0], cfg.max_length
        t = stratified_t(B, cfg.t_min, generator)  # (B,)
        c = corrupt_lengths(batch.x, N, cfg.length_fraction, cfg.length_rate * (1 - t), self.ordinary,
                            self.delete_id, self.split_id, generator)
        plain = c.kind == PLAIN
        masked = (torch.rand(B, N, generator=generator) < t[:, None]) & plain
        masked = keep_prompts(masked, cfg.prompt_fraction, generator)
        shown, _ = replace_visible(c.tokens, masked | ~plain, cfg.edit_fraction, cfg.edit_rate * (1 - t),
                                   self.ordinary, generator)
        return LengthBatch(inputs=torch.where(masked, self.mask_token_id, shown), target=c.target, masked=masked, t=t,
                           kind=c.kind)

    def loss(self, net: Net, corrupted: LengthBatch) -> torch.Tensor:
        c, dev = corrupted, net.device
        with net.autocast():
            logits = net.model.head(net.features(c.inputs.to(dev)))  # (B, N, V): every position is scored
        return mixed_loss(logits, c.target.to(dev), c.masked.to(dev), c.t.to(dev))

    @classmethod
    def heldout_figures(
        cls, model: EmbeddedDenoiser, heldout: torch.Tensor | Rows, chars_per_token: float, cfg: TrainConfig,
        generator: torch.Generator, *, n_t: int,
    ) -> dict[str, float]:
        """The masked objective's figures, then the length probe (`probe`)."""
        out = MaskedObjective.heldout_figures(model, heldout, chars_per_token, cfg, generator, n_t=n_t)
        return {**out, **probe(model, heldout, generator)}  # type: ignore[arg-type]


@torch.no_grad()
def probe(model: EmbeddedDenoiser, stream: torch.Tensor, generator: torch.Generator, *, windows: int = 64
          ) -> dict[str, float]:
    """How the argmax reads length errors on fixed held-out windows with nothing masked (an operation before each
    token with probability `PROBE_RATE`): ``delete@extra`` (DELETE at an extra token), ``split@gap`` (SPLIT after
    a removed one), ``edit@plain`` (DELETE or SPLIT at a right token, a wrong edit), ``keep@plain`` (the token
    itself there); and ``edit@mask`` (DELETE or SPLIT predicted at a mask, half the tokens masked)."""
    N = model.max_length
    S = N + N // 4
    specials = [model.mask_token_id, model.pad_token_id, model.eos_token_id, model.delete_token_id,
                model.split_token_id]
    ordinary = ordinary_ids(model.vocab_size, specials)
    starts = torch.linspace(0, stream.numel() - S - 1, windows).long()
    source = stream[starts[:, None] + torch.arange(S)].long()  # (W, S)
    c = corrupt_lengths(source, N, 1.0, PROBE_RATE, ordinary, model.delete_token_id, model.split_token_id, generator)
    dev = model.device
    pred = model(c.tokens.to(dev)).argmax(-1).cpu()  # (W, N)
    edits = (pred == model.delete_token_id) | (pred == model.split_token_id)
    masked = torch.rand(source[:, :N].shape, generator=generator) < 0.5
    pred_m = model(torch.where(masked, model.mask_token_id, source[:, :N]).to(dev)).argmax(-1).cpu()
    edits_m = (pred_m == model.delete_token_id) | (pred_m == model.split_token_id)

    def share(hit: torch.Tensor, where: torch.Tensor) -> float:
        return round(float((hit & where).sum()) / max(1, int(where.sum())), 4)

    plain = c.kind == PLAIN
    return {"delete@extra": share(pred == model.delete_token_id, c.kind == EXTRA),
            "split@gap": share(pred == model.split_token_id, c.kind == AFTER_GAP),
            "edit@plain": share(edits, plain), "keep@plain": share(pred == c.tokens, plain),
            "edit@mask": share(edits_m, masked)}


OBJECTIVE = LengthObjective
