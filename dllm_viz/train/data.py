"""Where the training rows come from: the text stream (``train.txt`` read as one token stream, random
windows, every token maskable) or prompt/answer pairs (`pairs`, ``--pairs``: one example per row,
only the answer maskable). Both reach the objective as the same record, a clean `Batch`."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import torch

from dllm_viz.models.tokenizer import EmbeddedTokenizer
from dllm_viz.train.config import TrainConfig
from dllm_viz.train.pairs import Rows, batch_of, by_length, load_pairs, sample_batch


@dataclass(frozen=True)
class Batch:
    """Clean training rows, before any corruption."""

    x: torch.Tensor  # (B, N) long: token ids
    real: torch.Tensor | None = None  # (B, N) bool: keys that are not padding; None: a window, all real
    maskable: torch.Tensor | None = None  # (B, N) bool: what the corruption may touch (a pair's answer); None: all


def load_corpus(data: Path, run: Path, vocab_size: int) -> tuple[EmbeddedTokenizer, torch.Tensor, torch.Tensor, float]:
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


def load_data(
    cfg: TrainConfig, data: Path, run: Path
) -> tuple[EmbeddedTokenizer, torch.Tensor | Rows, torch.Tensor | Rows, float]:
    """The run's tokenizer, its training and held-out data (streams, or `Rows` with ``pairs``), and the
    held-out characters per scored token (for the bits-per-character figure)."""
    return (load_pairs if cfg.pairs else load_corpus)(data, run, cfg.vocab_size)


def sample_windows(tokens: torch.Tensor, batch: int, length: int, generator: torch.Generator) -> torch.Tensor:
    """``batch`` random contiguous windows ``(B, length)`` of a token stream."""
    starts = torch.randint(0, tokens.numel() - length, (batch,), generator=generator)
    return tokens[starts[:, None] + torch.arange(length)].long()


def batch_sampler(cfg: TrainConfig, train: torch.Tensor | Rows) -> Callable[[torch.Generator], Batch]:
    """A function that draws one training `Batch` from the run's generator.

    Stream: ``batch_size`` windows of ``max_length`` tokens, or in a share ``short_fraction`` of the
    steps of a shorter random length (the playground's canvases are short). Pairs: ``batch_size``
    rows of about one length (`pairs.sample_batch`, over an order fixed by the seed).
    """
    if cfg.pairs:
        order = by_length(train, torch.Generator().manual_seed(cfg.seed))  # (R,): batches of one length

        def draw_pairs(generator: torch.Generator) -> Batch:
            x, real, answer = sample_batch(train, order, cfg.batch_size, generator)  # (B, N) each
            return Batch(x, real, answer)

        return draw_pairs

    def draw_windows(generator: torch.Generator) -> Batch:
        length = cfg.max_length
        if torch.rand((), generator=generator) < cfg.short_fraction:
            length = int(torch.randint(16, cfg.max_length, (), generator=generator))
        return Batch(sample_windows(train, cfg.batch_size, length, generator))  # (B, N)

    return draw_windows


def heldout_batches(data: torch.Tensor | Rows, cfg: TrainConfig) -> Iterator[Batch]:
    """Fixed held-out batches of at most 16 rows: ``eval_windows`` evenly spaced windows of the stream
    (every token maskable), or evenly spaced pairs (their answers maskable)."""
    if isinstance(data, Rows):
        for index in torch.linspace(0, len(data) - 1, min(cfg.eval_windows, len(data))).long().split(16):
            yield Batch(*batch_of(data, index))
        return
    n = cfg.max_length
    starts = torch.linspace(0, data.numel() - n, cfg.eval_windows).long()
    for chunk in data[starts[:, None] + torch.arange(n)].long().split(16):  # (W, N) in chunks
        yield Batch(chunk)
