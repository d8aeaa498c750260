"""Prompt/answer pairs as training rows: one example per row, only the answer ever masked.

The stream source (``train.txt`` read as one token stream, random windows, every token maskable)
teaches a language; a task model must instead learn ``p(answer | prompt)``, as LLaDA's supervised
fine-tuning does (Nie et al. 2025, section 2.3: the prompt is never masked, the response is masked
at rate ``t`` and weighted by ``1 / t``). With ``--pairs`` every line of ``train.txt`` /
``heldout.txt`` is ``prompt<TAB>answer``; a batch is ``B`` lines of about one length
(`sample_batch`), right-padded with the pad id (padded keys are never attended), and the same noise
levels and ``1 / t`` weights as the stream apply to the answer tokens alone. A ``tokenizer.json``
beside the data is the vocabulary to use as is (the tasks' word-level one), instead of a BPE
trained on the text.
"""
from __future__ import annotations

import shutil
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from dllm_viz.models.tokenizer import EmbeddedTokenizer


@dataclass(frozen=True)
class Rows:
    """Tokenised pairs, one per row."""

    ids: torch.Tensor  # (R, L) int32: prompt then answer, right-padded with the pad id
    prompt_len: torch.Tensor  # (R,) int32: tokens of the prompt
    length: torch.Tensor  # (R,) int32: prompt + answer tokens

    def __len__(self) -> int:
        return self.ids.shape[0]


def read_pairs(path: Path, tokenizer: EmbeddedTokenizer) -> Rows:
    """Every non-empty line ``prompt<TAB>answer`` of ``path``; ValueError on a line without one tab."""
    prompts, answers = [], []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line:
            continue
        if line.count("\t") != 1:
            raise ValueError(f"{path}:{n}: expected 'prompt<TAB>answer', got {line[:60]!r}")
        prompt, answer = line.split("\t")
        prompts.append(tokenizer.encode(prompt))
        answers.append(tokenizer.encode(answer))
    if not prompts:
        raise ValueError(f"{path}: no pairs")
    length = torch.tensor([len(p) + len(a) for p, a in zip(prompts, answers)], dtype=torch.int32)  # (R,)
    ids = torch.full((len(prompts), int(length.max())), tokenizer.pad_token_id, dtype=torch.int32)  # (R, L)
    for r, (p, a) in enumerate(zip(prompts, answers)):
        ids[r, : len(p) + len(a)] = torch.tensor(p + a, dtype=torch.int32)
    return Rows(ids, torch.tensor([len(p) for p in prompts], dtype=torch.int32), length)


def batch_of(rows: Rows, index: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Rows ``index (B,)`` cut to their longest: ``x (B, N)`` long, ``real (B, N)`` (not padding) and
    ``answer (B, N)`` (maskable) booleans."""
    n = int(rows.length[index].max())
    x = rows.ids[index, :n].long()  # (B, N)
    pos = torch.arange(n)[None, :]  # (1, N)
    real = pos < rows.length[index, None]  # (B, N)
    answer = real & (pos >= rows.prompt_len[index, None])  # (B, N)
    return x, real, answer


def by_length(rows: Rows, generator: torch.Generator) -> torch.Tensor:
    """A permutation ``(R,)`` of the rows sorted by length, ties in random order."""
    shuffled = torch.randperm(len(rows), generator=generator)  # (R,)
    return shuffled[torch.sort(rows.length[shuffled], stable=True).indices]


def sample_batch(rows: Rows, order: torch.Tensor, batch: int, generator: torch.Generator
                 ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``batch`` rows of about one length: a random run of ``batch`` consecutive rows of ``order``
    (`by_length`), so a batch is barely padded (pairs of 12 and 35 tokens would otherwise make half a
    batch padding). Every row is drawn about equally often; see `batch_of` for what is returned."""
    start = int(torch.randint(0, max(1, len(rows) - batch + 1), (), generator=generator))
    return batch_of(rows, order[start:start + batch])


def mask_answers(x: torch.Tensor, answer: torch.Tensor, t: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Mask each answer token of ``x (B, N)`` with probability ``t (B,)``; prompts and padding never."""
    return (torch.rand(x.shape, generator=generator) < t[:, None]) & answer  # (B, N)


def load_pairs(data: Path, run: Path, vocab_size: int) -> tuple[EmbeddedTokenizer, Rows, Rows, float]:
    """The run's tokenizer and both splits as `Rows`, cached in ``run/tokens.pt`` like the stream's.

    The tokenizer is ``data/tokenizer.json`` when there is one (a fixed vocabulary, copied into the
    run), else a BPE of ``vocab_size`` pieces trained on the training lines. The last value is the
    held-out answers' characters per answer token (for the bits-per-character figure).
    """
    tok_path, cache = run / "tokenizer.json", run / "tokens.pt"
    if not tok_path.is_file():
        if (data / "tokenizer.json").is_file():
            shutil.copyfile(data / "tokenizer.json", tok_path)
        else:
            text = (data / "train.txt").read_text().replace("\t", " ")
            EmbeddedTokenizer.train(text.split("\n"), vocab_size=vocab_size).save(tok_path)
    tokenizer = EmbeddedTokenizer.from_file(tok_path)
    if cache.is_file():
        splits = {name: Rows(**fields) for name, fields in torch.load(cache).items()}
    else:
        splits = {name: read_pairs(data / f"{name}.txt", tokenizer) for name in ("train", "heldout")}
        torch.save({name: asdict(rows) for name, rows in splits.items()}, cache)
    held = splits["heldout"]
    answer_chars = sum(len(line.split("\t")[1]) for line in (data / "heldout.txt").read_text().splitlines() if line)
    return tokenizer, splits["train"], held, answer_chars / int((held.length - held.prompt_len).sum())
