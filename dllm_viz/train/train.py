"""Train (and export) the embedded masked-diffusion model: ``python -m dllm_viz.train {fit,tokenize,average,export}``.

Objective (MDLM, Sahoo et al. 2024; LLaDA, Nie et al. 2025): for each sequence draw a noise level
``t`` in (0, 1], mask every token independently with probability ``t`` and minimise the
cross-entropy on the masked tokens weighted by ``1 / t``. Averaged over ``t ~ U(0, 1)`` this is an
upper bound (ELBO) on the sequence's negative log-likelihood, which is what the held-out
bits-per-character figure reports. The ``t`` of a batch are stratified (one per ``1/B`` slice,
sharing one uniform offset) so the gradient estimate has low variance.

Two options reshape *which* tokens of a row are masked, never the per-token weight: the targets
are the same conditionals, but canvases like the ones decoding visits are trained more often.
``--prompt-fraction``: a clean prefix, as a prompt is. ``--rare-first-fraction``: the rarest
tokens masked first, as a confidence-first schedule leaves them (``rare_first_masks``).

``--edit-fraction`` turns on the editing objective of LLaDA 2.1 (Bie et al. 2026, "LLaDA2.1:
Speeding Up Text Diffusion via Token Editing", section 3.1, "Mixture of M2T and T2T"): beside the
drafting stream above (predict the token at each masked position), an editing stream in which the
model recovers the original tokens from random perturbations. In a share ``edit_fraction`` of the
rows each visible token is replaced, with probability ``edit_rate * (1 - t)``, by a uniformly drawn
other ordinary token (``replace_visible``), and the loss covers every position (``mixed_loss``): the
masked ones as above (cross-entropy / t, the ELBO term), the visible ones, replaced or not, at
weight 1 (restore what was replaced, keep what was not). A model trained so predicts a token at a
visible position too, which token-to-token edits read (``EmbeddedConfig.can_edit``). The report
gives the ratios of neither stream; ours are chosen in ``dllm_viz/assets/world/MODEL_CARD.md``. The ``1 - t``
is ours: a canvas with few visible tokens gets few wrong ones. With a rate independent of ``t`` the
world model stopped trusting a lone prompt word (its first-step confidence in the template words
after "Ana" fell from 0.999 to 0.89), since one replaced token in ten was then some other first
name, the word that fixes where a sentence starts (the card has the measurements).

The recipe of ``dllm_viz/assets/embedded`` (data from ``scripts/prepare_data.py``; details and figures in
``dllm_viz/assets/embedded/MODEL_CARD.md``)::

    python -m dllm_viz.train fit --data DATA --out RUN --threads 1 --steps 2000 --batch-size 16 \\
        --warmup 100 --lr 2e-3 --eval-every 200 --eval-windows 48 --ckpt-every 100 --resume
    python -m dllm_viz.train fit --data DATA --out FT --init-from RUN/ckpt.pt --threads 1 --steps 500 \\
        --batch-size 16 --warmup 50 --lr 6e-4 --prompt-fraction 0.5 --eval-every 100 --eval-windows 48
    python -m dllm_viz.train fit --data DATA --out FT3 --init-from FT/ckpt.pt --threads 1 --steps 1400 \\
        --batch-size 16 --warmup 50 --lr 5e-4 --min-lr-ratio 0.02 --prompt-fraction 0.5 --eval-every 200
    python -m dllm_viz.train fit --data DATA --out GROW --init-from FT3/ckpt.pt --vocab-size 12288 \\
        --threads 2 --steps 3200 --batch-size 16 --warmup 50 --lr 8e-4 --min-lr-ratio 0.05 --prompt-fraction 0.5
    python -m dllm_viz.train fit --data DATA --out GROW16 --init-from GROW/ckpt.pt --vocab-size 16384 \\
        --bf16 false --threads 2 --steps 1150 --batch-size 16 --warmup 100 --lr 4e-4 --min-lr-ratio 0.02 \\
        --prompt-fraction 0.5 --time-limit 62
    python -m dllm_viz.train export --run GROW16 --out dllm_viz/assets/embedded

The last two phases grow the vocabulary (``--vocab-size`` larger than the ``--init-from`` run's): a BPE
trained on the same text with more merges keeps every old piece at its id, so the old embedding
rows carry over and each new piece starts at the mean of the pieces that spell it
(``grow_embedding``). Longer pieces mean fewer words split across tokens, which is what parallel
decoding gets wrong: pieces of one word drawn in the same step fuse into non-words. A larger
``--n-layers`` than the ``--init-from`` run's grows the depth the same way: new blocks start as
identities (``grow_depth``), so capacity is added without losing what was learnt.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import torch
import torch.nn.functional as F
from tqdm import tqdm

from dllm_viz.models.embedded import EmbeddedConfig, EmbeddedDenoiser
from dllm_viz.models.tokenizer import EmbeddedTokenizer
from dllm_viz.train.pairs import Rows, batch_of, by_length, load_pairs, mask_answers, sample_batch

log = logging.getLogger(__name__)

EVAL_MASK_RATIOS = (0.15, 0.5, 0.85, 1.0)
EVAL_EDIT_MASK_RATIOS = (0.0, 0.5)  # mask ratios of the edit probe (0: a finished canvas, every token visible); rate edit_rate * (1 - r)


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
    rare_first_fraction: float = 0.0  # share of rows masked rarest tokens first, as a confidence-first decode leaves them
    pairs: bool = False  # data lines are prompt<TAB>answer: one example per row, only the answer masked (pairs.py)
    edit_fraction: float = 0.0  # share of rows whose visible tokens are replaced at random (LLaDA 2.1 T2T stream); > 0: loss at every position
    edit_rate: float = 0.2  # in those rows, a visible token is replaced by another ordinary token with probability edit_rate * (1 - t)
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
        for field in ("short_fraction", "prompt_fraction", "rare_first_fraction", "edit_fraction", "edit_rate"):
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
    ``tensor[masked]`` gives (what `fit` computes: the output head runs on masked rows alone);
    x, masked: (B, N); t: (B,). Either form gives the same value, bit for bit.
    """
    if logits.dim() == 3:
        logits = logits[masked]  # (M, V)
    weight = (1.0 / t)[:, None].expand_as(x)[masked]  # (M,)
    ce = F.cross_entropy(logits.float(), x[masked], reduction="none")  # (M,)
    return (ce * weight).sum() / x.numel()


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


RARE_FIRST_NOISE = 2.0  # nats of uniform noise added to each token's surprisal before ranking


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


def lr_at(step: int, cfg: TrainConfig) -> float:
    """Linear warm-up then cosine decay to ``min_lr_ratio * lr``."""
    if step < cfg.warmup:
        return cfg.lr * (step + 1) / cfg.warmup
    progress = min(1.0, (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup))
    return cfg.lr * (cfg.min_lr_ratio + (1 - cfg.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * progress)))


def sample_windows(tokens: torch.Tensor, batch: int, length: int, generator: torch.Generator) -> torch.Tensor:
    """``batch`` random contiguous windows ``(B, length)`` of a token stream."""
    starts = torch.randint(0, tokens.numel() - length, (batch,), generator=generator)
    return tokens[starts[:, None] + torch.arange(length)].long()


def _autocast(enabled: bool, device: torch.device):
    return torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=enabled)


def cpu_has_bf16_units() -> bool:
    """Whether this CPU has bf16 matrix units (AMX tiles or AVX512-BF16); without them bf16 autocast
    runs slower than fp32 (5x for the embedded model's forwards on an AMD EPYC, MODEL_CARD.md)."""
    probes = ("_is_amx_tile_supported", "_is_avx512_bf16_supported")
    return any(getattr(torch.cpu, name, lambda: False)() for name in probes)


def _heldout_chunks(data: torch.Tensor | Rows, cfg: TrainConfig):
    """Fixed held-out batches ``(x (b, N), real (b, N) | None, maskable (b, N))``: evenly spaced windows of
    the stream (every token maskable), or evenly spaced pairs (their answers maskable)."""
    if isinstance(data, Rows):
        for index in torch.linspace(0, len(data) - 1, min(cfg.eval_windows, len(data))).long().split(16):
            yield batch_of(data, index)
        return
    n = cfg.max_length
    starts = torch.linspace(0, data.numel() - n, cfg.eval_windows).long()
    for chunk in data[starts[:, None] + torch.arange(n)].long().split(16):  # (W, N) in chunks
        yield chunk, None, torch.ones_like(chunk, dtype=torch.bool)


@torch.no_grad()
def evaluate(
    model: EmbeddedDenoiser, tokens: torch.Tensor | Rows, chars_per_token: float, cfg: TrainConfig, *, n_t: int = 8
) -> dict[str, float]:
    """Held-out ELBO (bits/char, bits/token) and masked-token accuracy at fixed mask ratios.

    Windows (or pairs, whose answer tokens alone are scored) are fixed and the generator is re-seeded,
    so successive evaluations compare like with like.
    """
    was_training = model.training
    model.eval()
    device = model.device
    gen = torch.Generator().manual_seed(1234)
    nats, count = 0.0, 0
    correct = {r: 0 for r in EVAL_MASK_RATIOS}
    total = {r: 0 for r in EVAL_MASK_RATIOS}
    for chunk, real, maskable in _heldout_chunks(tokens, cfg):
        keys = None if real is None else real.to(device)
        for j in range(n_t):  # midpoint rule in t: an ELBO estimate with low variance
            t = torch.full((chunk.shape[0],), (j + 0.5) / n_t)
            noisy, masked = mask_tokens(chunk, t, model.mask_token_id, gen)
            noisy, masked = torch.where(maskable, noisy, chunk), masked & maskable
            with _autocast(cfg.bf16, device):
                logits = model(noisy.to(device), keys).float().cpu()
            nats += diffusion_loss(logits, chunk, masked, t).item() * chunk.numel() / n_t
        count += int(maskable.sum())
        for r in EVAL_MASK_RATIOS:
            t = torch.full((chunk.shape[0],), r)
            noisy, masked = mask_tokens(chunk, t, model.mask_token_id, gen)
            noisy, masked = torch.where(maskable, noisy, chunk), masked & maskable
            with _autocast(cfg.bf16, device):
                pred = model(noisy.to(device), keys).argmax(-1).cpu()
            correct[r] += int(((pred == chunk) & masked).sum())
            total[r] += int(masked.sum())
    bits_per_token = nats / count / math.log(2)
    out = {"bits_per_token": bits_per_token, "bits_per_char": bits_per_token / chars_per_token}
    out.update({f"acc@{r:g}": correct[r] / max(1, total[r]) for r in EVAL_MASK_RATIOS})
    if cfg.edit_fraction > 0:  # the editing stream (windows only): restored replacements, wrongly changed kept tokens
        windows = torch.cat([chunk for chunk, _, _ in _heldout_chunks(tokens, cfg)])  # (W, N)
        for r in EVAL_EDIT_MASK_RATIOS:
            c = edit_counts(model, windows, r, cfg.edit_rate * (1 - r), gen)
            out[f"restore@{r:g}"] = c["restored"] / max(1, c["replaced"])
            out[f"wrong_edit@{r:g}"] = c["changed"] / max(1, c["kept"])
    model.train(was_training)
    return out


def _load_corpus(data: Path, run: Path, vocab_size: int) -> tuple[EmbeddedTokenizer, torch.Tensor, torch.Tensor, float]:
    """Tokenizer (trained on the training split once, then reused) and both token streams.

    ``train.txt`` is read only when the run has no tokenizer or token cache yet, so a run folder
    tokenised elsewhere (``python -m dllm_viz.train tokenize``) needs only ``heldout.txt`` beside it.
    """
    heldout_text = (data / "heldout.txt").read_text()
    tok_path, cache = run / "tokenizer.json", run / "tokens.pt"
    train_text = None if tok_path.is_file() and cache.is_file() else (data / "train.txt").read_text()
    if tok_path.is_file():
        tokenizer = EmbeddedTokenizer.from_file(tok_path)
    else:
        tokenizer = EmbeddedTokenizer.train(train_text.split("\n"), vocab_size=vocab_size)
        tokenizer.save(tok_path)
    if cache.is_file():
        streams = torch.load(cache)
    else:
        streams = {
            name: torch.tensor(tokenizer.encode(text), dtype=torch.int32)
            for name, text in (("train", train_text), ("heldout", heldout_text))
        }
        torch.save(streams, cache)
    chars_per_token = len(heldout_text) / streams["heldout"].numel()
    return tokenizer, streams["train"], streams["heldout"], chars_per_token


def build_model(cfg: TrainConfig, tokenizer: EmbeddedTokenizer) -> EmbeddedDenoiser:
    mcfg = EmbeddedConfig(
        vocab_size=tokenizer.vocab_size,
        mask_token_id=tokenizer.mask_token_id,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        d_model=cfg.d_model,
        n_layers=cfg.n_layers,
        n_heads=cfg.n_heads,
        d_ff=cfg.d_ff,
        conv_kernel=cfg.conv_kernel,
        max_length=cfg.max_length,
        can_edit=cfg.edit_fraction > 0,
    )
    return EmbeddedDenoiser(mcfg, tokenizer, generator=torch.Generator().manual_seed(cfg.seed))


def grow_embedding(weight: torch.Tensor, old: EmbeddedTokenizer, new: EmbeddedTokenizer) -> torch.Tensor:
    """Embedding ``(V_old, D) -> (V_new, D)`` for a larger vocabulary that extends ``old``.

    BPE trained on the same text with more merges keeps the first merges, so every old piece keeps
    its id (checked: a ``ValueError`` otherwise). Old rows are copied; a new piece starts at the mean
    of the rows of the old pieces it is made of, so the tied head scores it like its spelling.
    """
    old_vocab, new_vocab = old.get_vocab(), new.get_vocab()
    moved = [piece for piece, i in old_vocab.items() if new_vocab.get(piece) != i]
    if moved or weight.shape[0] != len(old_vocab):
        raise ValueError(f"vocab_size={len(new_vocab)}: the new tokenizer must keep all {len(old_vocab)} pieces of "
                         f"the old one at their ids ({len(moved)} moved); train it on the same text")
    grown = weight.new_empty(len(new_vocab), weight.shape[1])  # (V_new, D)
    grown[: weight.shape[0]] = weight
    for piece, i in new_vocab.items():
        if i >= weight.shape[0]:
            grown[i] = weight[old.piece_ids(piece)].mean(0)
    return grown


# The residual outputs of a block: with these at zero a block adds nothing to the stream (an identity).
_RESIDUAL_OUTPUTS = ("mix.weight", "mix.bias", "proj.weight", "down.weight")


def n_blocks(weights: dict[str, torch.Tensor]) -> int:
    """How many blocks a state dict of ``EmbeddedDenoiser`` holds (``blocks.{i}.*`` keys)."""
    return 1 + max(int(k.split(".")[1]) for k in weights if k.startswith("blocks."))


def grow_depth(weights: dict[str, torch.Tensor], n_layers: int) -> dict[str, torch.Tensor]:
    """A state dict of ``L`` blocks -> one of ``n_layers > L`` blocks that computes the same function.

    Each new block is a copy of the block before it with its residual outputs (the local mixing,
    the attention projection, the MLP's down projection) set to zero, so it starts as an identity
    and the grown model's logits equal the old model's; its other weights start trained, so every
    gradient is non-zero from the second step (depth up-scaling, as LLaMA Pro does it). The new
    blocks are spread evenly: 6 -> 8 puts one after blocks 2 and 5.
    Raises ``ValueError`` if ``n_layers`` is not larger than the blocks in ``weights``.
    """
    old = n_blocks(weights)  # L
    if n_layers <= old:
        raise ValueError(f"n_layers={n_layers} must be > the {old} blocks of the checkpoint to grow it")
    after = [(j + 1) * old // (n_layers - old) - 1 for j in range(n_layers - old)]  # old blocks a new one follows
    order: list[tuple[int, bool]] = []  # (source block, is_new) in the grown model's order
    for i in range(old):
        order.append((i, False))
        order.extend((i, True) for _ in range(after.count(i)))
    grown = {k: v for k, v in weights.items() if not k.startswith("blocks.")}
    for new_index, (source, is_new) in enumerate(order):
        prefix = f"blocks.{source}."
        for key, value in weights.items():
            if key.startswith(prefix):
                name = key[len(prefix):]
                zero = is_new and name in _RESIDUAL_OUTPUTS
                grown[f"blocks.{new_index}.{name}"] = torch.zeros_like(value) if zero else value.clone()
    return grown


def _init_folder(init_from: Path) -> Path:
    """The folder holding ``init_from``'s tokenizer.json: the folder itself for an exported model, else the run."""
    return init_from if init_from.is_dir() else init_from.parent


def load_init_weights(init_from: Path) -> tuple[dict[str, torch.Tensor], int]:
    """``(state dict in float32, step)`` of a run's checkpoint (``RUN/ckpt.pt``) or of an exported model
    folder (``model.safetensors``, float16 as ``export`` writes it, e.g. ``dllm_viz/assets/world``), so a second
    phase can start from the shipped weights themselves."""
    if not init_from.is_dir():
        init = torch.load(init_from, weights_only=False)
        return init["model"], init["step"]
    from safetensors import safe_open

    with safe_open(str(init_from / "model.safetensors"), framework="pt") as f:
        step = int((f.metadata() or {}).get("step", 0))
        return {k: f.get_tensor(k).float() for k in f.keys()}, step


def _save_checkpoint(path: Path, **state: object) -> None:
    tmp = path.with_suffix(".tmp")
    torch.save(state, tmp)
    os.replace(tmp, path)  # atomic: a crash never leaves a half-written checkpoint


def fit(cfg: TrainConfig, *, data: Path, run: Path, resume: bool = False, init_from: Path | None = None,
        threads: int | None = None, device: str = "cpu", time_limit_min: float | None = None,
        progress: bool = True, compile: bool | str = False, keep_snapshots: bool = False) -> dict[str, float]:
    """Train into ``run/`` (tokenizer.json, tokens.pt, ckpt.pt, log.jsonl). Returns the last eval.

    ``init_from``: a checkpoint of an earlier run (or an exported model folder) whose weights (only)
    start this one, for a second phase with its own optimiser and schedule; its tokenizer is reused. A larger ``vocab_size``
    grows the embedding (``grow_embedding``), a larger ``n_layers`` adds identity blocks
    (``grow_depth``): either way the second phase starts from the old model's function.
    ``compile``: ``torch.compile`` the model body for the training steps (True: inductor; a string
    names another backend, e.g. "eager" in tests). Window lengths vary (``short_fraction``), so it
    is compiled with dynamic shapes; checkpoints and evaluation use the plain module.
    ``keep_snapshots``: at every checkpoint also keep the weights alone as
    ``run/snapshots/step-NNNNNN.pt``, for ``average_checkpoints``.
    """
    if threads is not None:
        torch.set_num_threads(threads)
    if cfg.bf16 and torch.device(device).type == "cpu" and not cpu_has_bf16_units():
        log.warning("bf16=True on a CPU without AMX or AVX512-BF16: slower than fp32 here; "
                    "pass --bf16 false for a CPU run")
    run.mkdir(parents=True, exist_ok=True)
    ckpt_path, log_path = run / "ckpt.pt", run / "log.jsonl"
    init_tokenizer = None
    if init_from is not None:
        init_tokenizer = EmbeddedTokenizer.from_file(_init_folder(init_from) / "tokenizer.json")
        if init_tokenizer.vocab_size == cfg.vocab_size and not (run / "tokenizer.json").is_file():
            init_tokenizer.save(run / "tokenizer.json")  # same vocabulary: reuse it
    load = load_pairs if cfg.pairs else _load_corpus
    tokenizer, train_tokens, heldout_tokens, cpt = load(data, run, cfg.vocab_size)
    if resume and ckpt_path.is_file():
        state = torch.load(ckpt_path, weights_only=False)
        # The saved recipe wins, except the step budget: resuming with a larger --steps extends a run.
        cfg = replace(TrainConfig(**state["train_config"]), steps=cfg.steps)
    dev = torch.device(device)
    model = build_model(cfg, tokenizer).to(dev)
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2 or "mix" in n]
    decay = [p for n, p in model.named_parameters() if not (p.dim() < 2 or "mix" in n)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": cfg.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=cfg.lr, betas=(0.9, 0.98))
    gen = torch.Generator().manual_seed(cfg.seed)
    step, elapsed = 0, 0.0
    if resume and ckpt_path.is_file():
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optim"])
        gen.set_state(state["generator"])
        step, elapsed = state["step"], state["elapsed"]
    elif init_from is not None:
        weights, init_step = load_init_weights(init_from)
        if init_tokenizer.vocab_size != tokenizer.vocab_size:  # a larger vocabulary grown from the old one
            weights["embed.weight"] = grow_embedding(weights["embed.weight"], init_tokenizer, tokenizer)
            log.info("vocabulary grown %d -> %d", init_tokenizer.vocab_size, tokenizer.vocab_size)
        elif init_tokenizer.get_vocab() != tokenizer.get_vocab():  # same size, other pieces: rows would mean other tokens
            raise ValueError(f"init_from={init_from}: its tokenizer and {run / 'tokenizer.json'} have the same size but "
                             f"other pieces; copy {_init_folder(init_from) / 'tokenizer.json'} into the run before tokenizing")
        blocks = n_blocks(weights)
        if cfg.n_layers > blocks:  # a deeper model grown from the old one, same function at the start
            weights = grow_depth(weights, cfg.n_layers)
            log.info("depth grown %d -> %d blocks", blocks, cfg.n_layers)
        model.load_state_dict(weights)
        log.info("initialised from %s (step %d)", init_from, init_step)
    (run / "train_config.json").write_text(json.dumps(asdict(cfg), indent=2))
    features = model.features
    if compile:
        features = torch.compile(model.features, dynamic=True, backend="inductor" if compile is True else compile)
    if dev.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True  # fp32 leftovers (norms, loss) on tensor cores
    if cfg.rare_first_fraction > 0:
        surprisal = unigram_surprisal(train_tokens, tokenizer.vocab_size)  # (V,)
    if cfg.edit_fraction > 0:
        ordinary = ordinary_ids(tokenizer.vocab_size, model.special_ids.tolist())  # (K,)
    if cfg.pairs:
        order = by_length(train_tokens, torch.Generator().manual_seed(cfg.seed))  # (R,): batches of one length
    model.train()
    size = (lambda d: f"{len(d)} pairs") if cfg.pairs else (lambda d: f"{d.numel()} tokens")
    log.info("model: %.2fM parameters; train %s, held-out %s (%.2f chars/token); starting at step %d",
             model.num_parameters() / 1e6, size(train_tokens), size(heldout_tokens), cpt, step)
    last_eval: dict[str, float] = {}
    t0 = time.time() - elapsed
    bar = tqdm(total=cfg.steps, initial=step, disable=not progress, mininterval=10, dynamic_ncols=True)
    while step < cfg.steps:
        real = None  # (B, N) keys that are not padding; None: a window of the stream, all real
        if cfg.pairs:
            x, real, answer = sample_batch(train_tokens, order, cfg.batch_size, gen)  # (B, N) each
            t = stratified_t(cfg.batch_size, cfg.t_min, gen)
            masked = mask_answers(x, answer, t, gen)
        else:
            length = cfg.max_length
            if torch.rand((), generator=gen) < cfg.short_fraction:
                length = int(torch.randint(16, cfg.max_length, (), generator=gen))
            x = sample_windows(train_tokens, cfg.batch_size, length, gen)  # (B, N)
            t = stratified_t(cfg.batch_size, cfg.t_min, gen)
            _, masked = mask_tokens(x, t, model.mask_token_id, gen)
        if cfg.rare_first_fraction > 0:
            masked = rare_first_masks(x, t, surprisal, cfg.rare_first_fraction, masked, gen)
        if cfg.prompt_fraction > 0:
            masked = keep_prompts(masked, cfg.prompt_fraction, gen)
        edit = cfg.edit_fraction > 0
        shown = x
        if edit:  # LLaDA 2.1's editing stream: some visible tokens replaced, the loss at every position
            shown, _ = replace_visible(x, masked, cfg.edit_fraction, cfg.edit_rate * (1 - t), ordinary, gen)
        noisy = torch.where(masked, model.mask_token_id, shown)
        for group in opt.param_groups:
            group["lr"] = lr_at(step, cfg)
        x, masked, t = x.to(dev), masked.to(dev), t.to(dev)
        if edit:
            with _autocast(cfg.bf16, dev):
                logits = model.head(features(noisy.to(dev)))  # (B, N, V): every position is scored
            loss = mixed_loss(logits, x, masked, t)
        else:
            with _autocast(cfg.bf16, dev):
                h = features(noisy.to(dev), None if real is None else real.to(dev))[masked]  # (M, D): masked rows only
                logits = model.head(h)  # (M, V)
            loss = diffusion_loss(logits, x, masked, t)  # per token of the batch
        if real is not None:  # pairs: per answer token, the tokens the estimator averages over
            loss = loss * x.numel() / int(answer.sum())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        opt.step()
        step += 1
        bar.update(1)
        bar.set_postfix(loss=f"{loss.item():.3f}", refresh=False)
        done = step == cfg.steps or (time_limit_min is not None and time.time() - t0 > 60 * time_limit_min)
        if step % cfg.eval_every == 0 or done:
            last_eval = evaluate(model, heldout_tokens, cpt, cfg)
            record = {"step": step, "elapsed_s": round(time.time() - t0, 1), "train_loss": loss.item(), **last_eval}
            with log_path.open("a") as f:
                f.write(json.dumps(record) + "\n")
            log.info("%s", json.dumps(record))  # also in log.jsonl
        if step % cfg.ckpt_every == 0 or done:
            _save_checkpoint(ckpt_path, model=model.state_dict(), optim=opt.state_dict(), step=step,
                             generator=gen.get_state(), elapsed=time.time() - t0, train_config=asdict(cfg))
            if keep_snapshots:
                (run / "snapshots").mkdir(exist_ok=True)
                _save_checkpoint(run / "snapshots" / f"step-{step:06d}.pt", model=model.state_dict(), step=step)
        if done:
            break
    bar.close()
    return last_eval


def average_checkpoints(paths: Sequence[Path]) -> dict[str, torch.Tensor]:
    """The uniform mean of the ``model`` weights of checkpoints of one architecture (a "model soup").

    Checkpoints of one run, or of a run and the one it was initialised from, lie in one basin, so
    their mean is a model too, often with lower held-out loss than either (the card measures it).
    Raises ``ValueError`` if the checkpoints do not hold the same tensors (names and shapes).
    """
    return _average([torch.load(p, map_location="cpu", weights_only=False)["model"] for p in paths], paths)


def _average(states: Sequence[dict[str, torch.Tensor]], paths: Sequence[Path]) -> dict[str, torch.Tensor]:
    """Uniform mean of state dicts loaded from ``paths`` (named in the errors)."""
    if not states:
        raise ValueError("paths: give at least one checkpoint")
    first = states[0]
    for path, state in zip(paths[1:], states[1:]):
        if state.keys() != first.keys():
            raise ValueError(f"{path}: other tensors than {paths[0]} ({sorted(state.keys() ^ first.keys())[:3]} ...)")
        for key, value in state.items():
            if value.shape != first[key].shape:
                raise ValueError(f"{path}: {key} has shape {tuple(value.shape)}, {paths[0]} {tuple(first[key].shape)}")
    return {key: (sum(state[key].double() for state in states) / len(states)).to(first[key].dtype) for key in first}


def write_average(run: Path, paths: Sequence[Path], out: Path) -> Path:
    """Write ``out/`` as a run folder holding the average of ``paths`` (``ckpt.pt`` + ``run``'s tokenizer
    and recipe), so that ``export --run out`` ships it like any run."""
    recipe = json.loads((run / "train_config.json").read_text())
    checkpoints = [torch.load(p, map_location="cpu", weights_only=False) for p in paths]  # each read once
    weights = _average([c["model"] for c in checkpoints], paths)
    out.mkdir(parents=True, exist_ok=True)
    EmbeddedTokenizer.from_file(run / "tokenizer.json").save(out / "tokenizer.json")
    _save_checkpoint(out / "ckpt.pt", model=weights, step=max(c.get("step", 0) for c in checkpoints),
                     train_config=recipe, averaged_from=[str(p) for p in paths])
    return out


def export(run: Path, out: Path, *, name: str | None = None) -> Path:
    """Write ``model.safetensors`` (float16), ``config.json`` and ``tokenizer.json`` to ``out``.

    ``name``: the model name stored in ``config.json`` (what traces record); default the
    ``EmbeddedConfig`` default.
    """
    from safetensors.torch import save_file

    state = torch.load(run / "ckpt.pt", weights_only=False)
    cfg = TrainConfig(**state["train_config"])
    tokenizer = EmbeddedTokenizer.from_file(run / "tokenizer.json")
    model = build_model(cfg, tokenizer)
    model.load_state_dict(state["model"])
    out.mkdir(parents=True, exist_ok=True)
    save_file({k: v.detach().half().contiguous() for k, v in model.state_dict().items()}, str(out / "model.safetensors"),
              metadata={"step": str(state["step"])})
    config = model.config if name is None else replace(model.config, name=name)
    (out / "config.json").write_text(config.to_json() + "\n")
    tokenizer.save(out / "tokenizer.json")
    return out


FLAG_VALUES = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}


def bool_flag(text: str) -> bool:
    """A boolean flag's value, strictly: true / false, 1 / 0, yes / no in any case. Anything else
    ("flase") is a usage error, never False (the rule of `python -m dllm_viz generate`'s flags too)."""
    value = FLAG_VALUES.get(text.strip().lower())
    if value is None:
        raise argparse.ArgumentTypeError(f"{text!r} is invalid: expected one of {', '.join(FLAG_VALUES)}")
    return value


class _CliFormatter(logging.Formatter):
    """The command line's own lines as plain text; warnings and errors say what they are."""

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        return text if record.levelno <= logging.INFO else f"{record.levelname.lower()}: {text}"


def log_to_stdout() -> None:
    """For the command line (``python -m dllm_viz.train``): what the library logs (fit's progress at
    INFO, warnings) becomes the command's output, one plain line each. A program that calls `fit`
    configures logging its own way."""
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(_CliFormatter("%(message)s"))
    logger = logging.getLogger("dllm_viz")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m dllm_viz.train", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p_fit = sub.add_parser("fit", help="train (or resume) a run")
    p_fit.add_argument("--data", type=Path, required=True, help="folder with train.txt and heldout.txt")
    p_fit.add_argument("--out", type=Path, required=True, help="run folder (checkpoints, logs)")
    p_fit.add_argument("--resume", action="store_true", help="continue from OUT/ckpt.pt if present")
    p_fit.add_argument("--init-from", type=Path, default=None,
                       help="start from this checkpoint's weights (RUN/ckpt.pt, or an exported folder such as "
                            "dllm_viz/assets/world)")
    p_fit.add_argument("--threads", type=int, default=None, help="torch.set_num_threads")
    p_fit.add_argument("--device", default="cpu")
    p_fit.add_argument("--time-limit", type=float, default=None, help="stop (and checkpoint) after N minutes")
    p_fit.add_argument("--no-progress", action="store_true")
    p_fit.add_argument("--keep-snapshots", action="store_true",
                       help="also keep each checkpoint's weights as OUT/snapshots/step-NNNNNN.pt (for `average`)")
    p_fit.add_argument("--compile", nargs="?", const=True, default=False,
                       help="torch.compile the model body (optionally name a backend: --compile eager)")
    for name, default in asdict(TrainConfig()).items():
        flag = "--" + name.replace("_", "-")
        if isinstance(default, bool):  # "--bf16" alone means true; "--bf16 false" still works; "flase" is an error
            p_fit.add_argument(flag, type=bool_flag, nargs="?", const=True, default=default, metavar="{true,false}")
        else:
            p_fit.add_argument(flag, type=type(default), default=default)
    p_tok = sub.add_parser("tokenize", help="train the tokenizer and cache both token streams in a run folder")
    p_tok.add_argument("--data", type=Path, required=True, help="folder with train.txt and heldout.txt")
    p_tok.add_argument("--out", type=Path, required=True, help="run folder (tokenizer.json, tokens.pt)")
    p_tok.add_argument("--vocab-size", type=int, default=TrainConfig().vocab_size)
    p_exp = sub.add_parser("export", help="write assets (safetensors fp16, config, tokenizer)")
    p_exp.add_argument("--run", type=Path, required=True)
    p_exp.add_argument("--out", type=Path, required=True)
    p_exp.add_argument("--name", default=None, help="model name written to config.json")
    p_avg = sub.add_parser("average", help="average checkpoints' weights into a run folder that `export` takes")
    p_avg.add_argument("--run", type=Path, required=True, help="run whose tokenizer and recipe the average keeps")
    p_avg.add_argument("--out", type=Path, required=True)
    p_avg.add_argument("checkpoints", type=Path, nargs="+", help="ckpt.pt files or snapshots, one architecture")
    args = parser.parse_args(argv)
    if args.command == "average":
        print(write_average(args.run, args.checkpoints, args.out))
        return
    if args.command == "tokenize":
        args.out.mkdir(parents=True, exist_ok=True)
        tokenizer, train_tokens, heldout_tokens, cpt = _load_corpus(args.data, args.out, args.vocab_size)
        print(json.dumps({"vocab_size": tokenizer.vocab_size, "train_tokens": train_tokens.numel(),
                          "heldout_tokens": heldout_tokens.numel(), "heldout_chars_per_token": round(cpt, 3)}))
        return
    if args.command == "export":
        print(export(args.run, args.out, name=args.name))
        return
    cfg = TrainConfig(**{k: getattr(args, k) for k in asdict(TrainConfig())})
    fit(cfg, data=args.data, run=args.out, resume=args.resume, init_from=args.init_from, threads=args.threads,
        device=args.device,
        time_limit_min=args.time_limit, progress=not args.no_progress, compile=args.compile,
        keep_snapshots=args.keep_snapshots)


if __name__ == "__main__":
    main()
