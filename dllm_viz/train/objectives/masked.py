"""The masked-diffusion objective (MDLM, Sahoo et al. 2024; LLaDA, Nie et al. 2025): the default.

For each sequence draw a noise level ``t`` in (0, 1], mask every token independently with
probability ``t`` and minimise the cross-entropy on the masked tokens weighted by ``1 / t``.
Averaged over ``t ~ U(0, 1)`` this is an upper bound (ELBO) on the sequence's negative
log-likelihood, which is what the held-out bits-per-character figure reports. The ``t`` of a batch
are stratified (one per ``1/B`` slice, sharing one uniform offset) so the gradient estimate has low
variance. With pairs (``--pairs``) only the answer tokens are masked and scored (`pairs`).

Two options reshape *which* tokens of a row are masked, never the per-token weight: the targets
are the same conditionals, but canvases like the ones decoding visits are trained more often.
``--prompt-fraction``: a clean prefix, as a prompt is (`keep_prompts`). ``--rare-first-fraction``:
the rarest tokens masked first, as a confidence-first schedule leaves them (`rare_first_masks`).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from dllm_viz.models.embedded import EmbeddedDenoiser
from dllm_viz.train.config import TrainConfig
from dllm_viz.train.data import Batch, heldout_batches
from dllm_viz.train.objectives.base import Corrupted, Net, Objective
from dllm_viz.train.pairs import Rows, mask_answers
from dllm_viz.train.precision import autocast

RARE_FIRST_NOISE = 2.0  # nats of uniform noise added to each token's surprisal before ranking
EVAL_MASK_RATIOS = (0.15, 0.5, 0.85, 1.0)  # mask ratios of the held-out accuracy


def stratified_t(batch: int, t_min: float, generator: torch.Generator) -> torch.Tensor:
    """Low-discrepancy noise levels ``(B,)``: ``(u + i) / B`` for one shared ``u ~ U(0, 1)``."""
    u = torch.rand((), generator=generator)
    t = (u + torch.arange(batch, dtype=torch.float32)) / batch
    return t.clamp(min=t_min)


def mask_tokens(
    x: torch.Tensor, t: torch.Tensor, mask_id: int, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """Forward process: mask each token of ``x (B, N)`` with probability ``t (B,)``. Returns (noisy, masked)."""
    masked = torch.rand(x.shape, generator=generator) < t[:, None]  # (B, N)
    return torch.where(masked, torch.full_like(x, mask_id), x), masked


def diffusion_loss(logits: torch.Tensor, x: torch.Tensor, masked: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """Per-token ELBO estimate in nats: ``sum_masked CE / t`` divided by ``B * N``.

    The masked-diffusion bound (MDLM, Sahoo et al. 2024, eq. 10; LLaDA, Nie et al. 2025, eq. 3):
    only masked positions are scored, each weighted by 1 / t, its row's mask rate.

    logits: (B, N, V) at every position, or (M, V) at the M masked positions only, in the order
    ``tensor[masked]`` gives (what `MaskedObjective.loss` computes: the output head runs on masked
    rows alone); x, masked: (B, N); t: (B,). Either form gives the same value, bit for bit.
    """
    if logits.dim() == 3:
        logits = logits[masked]  # (M, V)
    weight = (1.0 / t)[:, None].expand_as(x)[masked]  # (M,)
    ce = F.cross_entropy(logits.float(), x[masked], reduction="none")  # (M,)
    return (ce * weight).sum() / x.numel()


def keep_prompts(
    masked: torch.Tensor, fraction: float, generator: torch.Generator
) -> torch.Tensor:
    """Unmask a random prefix (up to half the window) in a ``fraction`` of the rows of ``masked (B, N)``.

    Decoding fills a masked suffix after a clean prompt; training rows shaped like that (as in
    LLaDA's supervised fine-tuning, where the prompt is never masked) close the gap between the
    uniform masks of pre-training and the canvases the playground shows.
    """
    B, N = masked.shape
    rows = torch.rand(B, generator=generator) < fraction  # (B,)
    prefix = torch.randint(1, max(2, N // 2), (B,), generator=generator)  # (B,)
    clean = rows[:, None] & (torch.arange(N)[None, :] < prefix[:, None])  # (B, N)
    return masked & ~clean


def unigram_surprisal(tokens: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """``-log p(token)`` of the training stream ``(T,)``, add-one smoothed: ``(V,)`` in nats."""
    counts = torch.bincount(tokens.long(), minlength=vocab_size).float() + 1.0  # (V,)
    return -(counts / counts.sum()).log()


def rare_first_masks(
    x: torch.Tensor, t: torch.Tensor, surprisal: torch.Tensor, fraction: float, masked: torch.Tensor,
    generator: torch.Generator,
) -> torch.Tensor:
    """In a ``fraction`` of the rows of ``x (B, N)``, mask the ``round(t * N)`` rarest tokens instead of a
    uniform draw (rarity: unigram surprisal plus ``U(0, RARE_FIRST_NOISE)`` nats); other rows keep ``masked``.

    A confidence-first schedule confirms predictable words first, so the canvases it decodes from hold
    the frequent words and miss the rare ones. Uniform masks rarely reach such a state when it needs
    several rare words masked and a frequent one visible (t^2(1-t) for a two-word name masked and a
    pronoun visible). The mask rate stays ``t``, as does the ``1/t`` weight. Measured on the world
    language's pronoun version (dllm_viz/assets/world/MODEL_CARD.md, "The pronoun version"), half the rows
    masked this way did not teach the name's gender from the pronoun in 1500 steps, and from scratch
    they delayed the opposite direction past 3600 steps: the option is kept to reproduce those runs.
    """
    B, N = x.shape
    score = surprisal[x] + RARE_FIRST_NOISE * torch.rand(x.shape, generator=generator)  # (B, N)
    rank = score.argsort(dim=1, descending=True).argsort(dim=1)  # (B, N): 0 = rarest
    rare = rank < (t * N).round().clamp(min=1)[:, None]  # (B, N)
    rows = torch.rand(B, generator=generator) < fraction  # (B,)
    return torch.where(rows[:, None], rare, masked)


class MaskedObjective(Objective):
    """Mask at rate ``t`` (a pair's answer only), optionally reshaped (prompts, rare words first); score
    the masked positions alone with ``diffusion_loss`` (the output head runs on their rows only)."""

    name = "masked"

    def __init__(self, cfg: TrainConfig, *, mask_token_id: int, surprisal: torch.Tensor | None = None) -> None:
        self.cfg = cfg
        self.mask_token_id = mask_token_id
        self.surprisal = surprisal  # (V,) unigram surprisal of the training data; with rare_first_fraction > 0

    @classmethod
    def for_run(cls, cfg: TrainConfig, *, model: EmbeddedDenoiser, train: torch.Tensor | Rows) -> MaskedObjective:
        surprisal = unigram_surprisal(train, model.vocab_size) if cfg.rare_first_fraction > 0 else None  # (V,)
        return cls(cfg, mask_token_id=model.mask_token_id, surprisal=surprisal)

    def corrupt(self, batch: Batch, generator: torch.Generator) -> Corrupted:
        """``t`` per row (`stratified_t`), the mask (`mask_tokens`; `pairs.mask_answers` for pairs), then
        the mask's reshaping: rarest tokens first, then a clean prefix, each in its share of rows."""
        cfg, x = self.cfg, batch.x
        t = stratified_t(cfg.batch_size, cfg.t_min, generator)  # (B,)
        if batch.maskable is None:
            _, masked = mask_tokens(x, t, self.mask_token_id, generator)  # (B, N)
        else:
            masked = mask_answers(x, batch.maskable, t, generator)  # (B, N)
        if cfg.rare_first_fraction > 0:
            masked = rare_first_masks(x, t, self.surprisal, cfg.rare_first_fraction, masked, generator)
        if cfg.prompt_fraction > 0:
            masked = keep_prompts(masked, cfg.prompt_fraction, generator)
        noisy = torch.where(masked, self.mask_token_id, x)  # (B, N)
        return Corrupted(x, noisy, masked, t, batch.real, batch.maskable)

    def loss(self, net: Net, corrupted: Corrupted) -> torch.Tensor:
        """``diffusion_loss`` per token of the batch; for pairs, per answer token (the tokens the
        estimator averages over)."""
        c = corrupted.to(net.device)
        with net.autocast():
            h = net.features(c.noisy, c.real)[c.masked]  # (M, D): masked rows only
            logits = net.model.head(h)  # (M, V)
        loss = diffusion_loss(logits, c.x, c.masked, c.t)
        if c.real is not None:
            loss = loss * c.x.numel() / int(c.maskable.sum())
        return loss

    @classmethod
    def heldout_figures(
        cls, model: EmbeddedDenoiser, heldout: torch.Tensor | Rows, chars_per_token: float, cfg: TrainConfig,
        generator: torch.Generator, *, n_t: int,
    ) -> dict[str, float]:
        """The held-out ELBO (bits/char, bits/token: `diffusion_loss` by the midpoint rule over ``n_t``
        noise levels) and masked-token accuracy (``acc@r``) at each of ``EVAL_MASK_RATIOS``; of a pair,
        the answer tokens alone are masked and scored."""
        device = model.device
        nats, count = 0.0, 0
        correct = {r: 0 for r in EVAL_MASK_RATIOS}
        total = {r: 0 for r in EVAL_MASK_RATIOS}
        for batch in heldout_batches(heldout, cfg):
            chunk = batch.x  # (b, N)
            maskable = torch.ones_like(chunk, dtype=torch.bool) if batch.maskable is None else batch.maskable
            keys = None if batch.real is None else batch.real.to(device)
            for j in range(n_t):  # midpoint rule in t: an ELBO estimate with low variance
                t = torch.full((chunk.shape[0],), (j + 0.5) / n_t)
                noisy, masked = mask_tokens(chunk, t, model.mask_token_id, generator)
                noisy, masked = torch.where(maskable, noisy, chunk), masked & maskable
                with autocast(cfg.bf16, device):
                    logits = model(noisy.to(device), keys).float().cpu()
                nats += diffusion_loss(logits, chunk, masked, t).item() * chunk.numel() / n_t
            count += int(maskable.sum())
            for r in EVAL_MASK_RATIOS:
                t = torch.full((chunk.shape[0],), r)
                noisy, masked = mask_tokens(chunk, t, model.mask_token_id, generator)
                noisy, masked = torch.where(maskable, noisy, chunk), masked & maskable
                with autocast(cfg.bf16, device):
                    pred = model(noisy.to(device), keys).argmax(-1).cpu()
                correct[r] += int(((pred == chunk) & masked).sum())
                total[r] += int(masked.sum())
        bits_per_token = nats / count / math.log(2)
        out = {"bits_per_token": bits_per_token, "bits_per_char": bits_per_token / chars_per_token}
        out.update({f"acc@{r:g}": correct[r] / max(1, total[r]) for r in EVAL_MASK_RATIOS})
        return out


OBJECTIVE = MaskedObjective
