"""The editing objective of LLaDA 2.1 (Bie et al. 2026, "LLaDA2.1: Speeding Up Text Diffusion via Token
Editing", section 3.1, "Mixture of M2T and T2T"), on with ``--edit-fraction`` > 0.

Beside the drafting stream of the masked objective (predict the token at each masked position), an
editing stream in which the model recovers the original tokens from random perturbations. In a
share ``edit_fraction`` of the rows each visible token is replaced, with probability
``edit_rate * (1 - t)``, by a uniformly drawn other ordinary token (`replace_visible`), and the loss
covers every position (`mixed_loss`): the masked ones as the masked objective scores them
(cross-entropy / t, the ELBO term), the visible ones, replaced or not, at weight 1 (restore what was
replaced, keep what was not). A model trained so predicts a token at a visible position too, which
token-to-token edits read (``EmbeddedConfig.can_edit``). The report gives the ratios of neither
stream; ours are chosen in ``dllm_viz/assets/world/MODEL_CARD.md``. The ``1 - t`` is ours: a canvas
with few visible tokens gets few wrong ones. With a rate independent of ``t`` the world model stopped
trusting a lone prompt word (its first-step confidence in the template words after "Ana" fell from
0.999 to 0.89), since one replaced token in ten was then some other first name, the word that fixes
where a sentence starts (the card has the measurements).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import torch
import torch.nn.functional as F

from dllm_viz.models.embedded import EmbeddedDenoiser
from dllm_viz.train.config import TrainConfig
from dllm_viz.train.data import Batch, heldout_batches
from dllm_viz.train.objectives.base import Corrupted, Net
from dllm_viz.train.objectives.masked import MaskedObjective
from dllm_viz.train.pairs import Rows

# Mask ratios of the edit probe (0: a finished canvas, every token visible); replacement rate edit_rate * (1 - r).
EVAL_EDIT_MASK_RATIOS = (0.0, 0.5)


def random_other_tokens(x: torch.Tensor, ordinary: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """For each token of ``x (B, N)``, another token drawn uniformly from the ``ordinary (K,)`` ids (sorted:
    the vocabulary without mask, pad and eos), never the token itself. ``x`` must hold ordinary ids only."""
    K = ordinary.numel()
    index = torch.searchsorted(ordinary, x)  # (B, N): x's place among the ordinary ids
    shift = torch.randint(1, K, x.shape, generator=generator)  # (B, N): 1 .. K-1 places on, so never x itself
    return ordinary[(index + shift) % K]


def replace_visible(
    x: torch.Tensor, masked: torch.Tensor, fraction: float, rate: float | torch.Tensor, ordinary: torch.Tensor,
    generator: torch.Generator,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The editing stream's input: in a ``fraction`` of the rows of ``x (B, N)``, each visible token
    (``~masked``) is replaced with probability ``rate`` (a float, or one per row ``(B,)``) by another ordinary token
    (``random_other_tokens``). Returns ``(ids, replaced)``, both ``(B, N)``: ``ids`` holds the mask
    id nowhere (the caller masks), ``replaced`` marks the positions whose token was changed.

    LLaDA 2.1 (section 3.1) trains its editing stream to "recover original tokens from random noise
    perturbations"; masked positions are never replaced, so the drafting stream is unchanged.
    """
    B, _ = x.shape
    rows = torch.rand(B, generator=generator) < fraction  # (B,)
    per_row = torch.as_tensor(rate, dtype=torch.float32).reshape(-1, 1)  # (B, 1) or (1, 1)
    replaced = rows[:, None] & ~masked & (torch.rand(x.shape, generator=generator) < per_row)  # (B, N)
    replaced &= torch.isin(x, ordinary)  # a special id in the text (none in training text) stays as it is
    other = random_other_tokens(x.where(replaced, ordinary[0]), ordinary, generator)  # (B, N)
    return torch.where(replaced, other, x), replaced


def mixed_loss(logits: torch.Tensor, x: torch.Tensor, masked: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """The mixed M2T + T2T objective in nats per token: ``diffusion_loss``'s masked term (CE / t) plus
    the cross-entropy to the original token at every visible position (weight 1), divided by ``B * N``.

    logits: (B, N, V); x (the clean tokens), masked: (B, N); t: (B,). Visible positions include the
    replaced ones (learn to restore) and the kept ones (learn to keep): a model scored only where
    tokens were replaced would learn that every visible token is wrong.
    """
    ce = F.cross_entropy(logits.float().transpose(1, 2), x, reduction="none")  # (B, N)
    weight = torch.where(masked, 1.0 / t[:, None], torch.ones_like(ce))  # (B, N)
    return (ce * weight).sum() / x.numel()


def ordinary_ids(vocab_size: int, special_ids: Sequence[int]) -> torch.Tensor:
    """The sorted ids ``(K,)`` of a vocabulary without its special ids: what a random replacement draws."""
    keep = torch.ones(vocab_size, dtype=torch.bool)
    keep[list(special_ids)] = False
    return keep.nonzero().squeeze(1)


@torch.no_grad()
def edit_counts(
    model: EmbeddedDenoiser, x: torch.Tensor, t: float, rate: float, generator: torch.Generator
) -> dict[str, int]:
    """How the model's argmax treats visible tokens of clean windows ``x (W, N)``: mask a share ``t``,
    replace each visible token with probability ``rate`` (``replace_visible``), predict every position.

    Returns counts: ``replaced`` (visible tokens replaced), ``restored`` (of those, argmax = the
    original), ``kept`` (visible tokens left alone) and ``changed`` (of those, argmax != the token:
    an edit a token-to-token rule would make wrongly).
    """
    ordinary = ordinary_ids(model.vocab_size, model.special_ids.tolist())  # (K,)
    masked = torch.rand(x.shape, generator=generator) < t  # (W, N)
    shown, replaced = replace_visible(x, masked, 1.0, rate, ordinary, generator)
    pred = model(torch.where(masked, model.mask_token_id, shown).to(model.device)).argmax(-1).cpu()  # (W, N)
    kept = ~masked & ~replaced
    return {"replaced": int(replaced.sum()), "restored": int(((pred == x) & replaced).sum()),
            "kept": int(kept.sum()), "changed": int(((pred != x) & kept).sum())}


class EditObjective(MaskedObjective):
    """The masked objective's corruption, then random replacements of visible tokens in a share of the
    rows; the loss at every position (`mixed_loss`). Windows of the stream only (not ``pairs``)."""

    name = "edit"
    can_edit = True

    def __init__(self, cfg: TrainConfig, *, mask_token_id: int, surprisal: torch.Tensor | None = None,
                 ordinary: torch.Tensor) -> None:
        super().__init__(cfg, mask_token_id=mask_token_id, surprisal=surprisal)
        self.ordinary = ordinary  # (K,) sorted: the ids a replacement draws

    @classmethod
    def selected(cls, cfg: TrainConfig) -> bool:
        return cfg.edit_fraction > 0 and not cfg.length_fraction  # the length objective runs this stream too

    @classmethod
    def for_run(cls, cfg: TrainConfig, *, model: EmbeddedDenoiser, train: torch.Tensor | Rows) -> EditObjective:
        masked = MaskedObjective.for_run(cfg, model=model, train=train)
        ordinary = ordinary_ids(model.vocab_size, model.special_ids.tolist())  # (K,)
        return cls(cfg, mask_token_id=masked.mask_token_id, surprisal=masked.surprisal, ordinary=ordinary)

    def corrupt(self, batch: Batch, generator: torch.Generator) -> Corrupted:
        """The masked objective's corruption, then `replace_visible` at rate ``edit_rate * (1 - t)``."""
        c = super().corrupt(batch, generator)
        rate = self.cfg.edit_rate * (1 - c.t)  # (B,)
        shown, _ = replace_visible(c.x, c.masked, self.cfg.edit_fraction, rate, self.ordinary, generator)
        return replace(c, noisy=torch.where(c.masked, self.mask_token_id, shown))  # (B, N)

    def loss(self, net: Net, corrupted: Corrupted) -> torch.Tensor:
        c = corrupted.to(net.device)
        with net.autocast():
            logits = net.model.head(net.features(c.noisy))  # (B, N, V): every position is scored
        return mixed_loss(logits, c.x, c.masked, c.t)

    @classmethod
    def heldout_figures(
        cls, model: EmbeddedDenoiser, heldout: torch.Tensor | Rows, chars_per_token: float, cfg: TrainConfig,
        generator: torch.Generator, *, n_t: int,
    ) -> dict[str, float]:
        """The masked objective's figures, then the edit probe at each mask ratio of
        ``EVAL_EDIT_MASK_RATIOS`` on the held-out windows (`edit_counts`): the share of replaced tokens
        restored (``restore@r``), of kept ones wrongly changed (``wrong_edit@r``)."""
        out = super().heldout_figures(model, heldout, chars_per_token, cfg, generator, n_t=n_t)
        windows = torch.cat([batch.x for batch in heldout_batches(heldout, cfg)])  # (W, N)
        for r in EVAL_EDIT_MASK_RATIOS:
            c = edit_counts(model, windows, r, cfg.edit_rate * (1 - r), generator)
            out[f"restore@{r:g}"] = c["restored"] / max(1, c["replaced"])
            out[f"wrong_edit@{r:g}"] = c["changed"] / max(1, c["kept"])
        return out

OBJECTIVE = EditObjective
