"""Drawing tokens at the positions the schedule confirmed (article step 3).

Logits processors in the style of transformers: each is a small pure function
`logits (n, V) -> logits (n, V)` with one parameter per row, never editing its input in place;
`process` chains them in the article's order (temperature, then the vocabulary filters on the
tempered distribution) and skips a processor when every row has its neutral value.

Draws use inverse-CDF sampling with one uniform per position, taken from the request's own
generator by the caller. One uniform per position (not one per vocabulary entry) keeps the random
stream of a request independent of its neighbours and of which positions were chosen.
"""
from __future__ import annotations

import torch

NEG_INF = float("-inf")


def apply_temperature(logits: torch.Tensor, temperature: torch.Tensor) -> torch.Tensor:
    """`logits / T` per row `(n, V)`; rows with T == 0 are left as they are (drawn by argmax)."""
    safe = torch.where(temperature > 0, temperature, torch.ones_like(temperature))
    return logits / safe.unsqueeze(-1).to(logits.dtype)


def filter_vocab_top_k(logits: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """Keep the k largest logits of each row (k == 0 keeps all). `(n, V)`, `k (n,)`."""
    vocab = logits.shape[-1]
    k = torch.where(k > 0, k.clamp(max=vocab), torch.full_like(k, vocab))
    kth = torch.sort(logits, dim=-1, descending=True).values.gather(-1, (k - 1).unsqueeze(-1))  # (n, 1)
    return logits.masked_fill(logits < kth, NEG_INF)


def filter_top_p(logits: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
    """Nucleus filter: the smallest set of tokens whose probability reaches p (p == 1 keeps all)."""
    sorted_logits, order = torch.sort(logits, dim=-1, descending=True)  # (n, V)
    probs = torch.softmax(sorted_logits, dim=-1)
    before = probs.cumsum(-1) - probs  # mass of strictly more likely tokens
    p = p.unsqueeze(-1).to(probs.dtype)
    # p == 1 is "off": float rounding can bring the running mass to 1 before the tail, so such
    # rows must drop nothing even when a neighbour in the batch filters.
    drop_sorted = (before >= p) & (p < 1)
    drop_sorted[..., 0] = False  # the most likely token always survives
    drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)
    return logits.masked_fill(drop, NEG_INF)


def process(
    logits: torch.Tensor, temperature: torch.Tensor, vocab_top_k: torch.Tensor, top_p: torch.Tensor
) -> torch.Tensor:
    """The sampling distribution's logits `(n, V)`: temperature, then vocab top-k, then top-p."""
    if bool(((temperature != 1) & (temperature > 0)).any()):  # x / 1 is x: T = 0 and T = 1 rows need no pass
        logits = apply_temperature(logits, temperature)
    if bool((vocab_top_k > 0).any()):
        logits = filter_vocab_top_k(logits, vocab_top_k)
    if bool((top_p < 1).any()):
        logits = filter_top_p(logits, top_p)
    return logits


def inverse_cdf(probs: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """Token ids `(n,)` with P(id) = probs[id]: the first index whose cumulative mass exceeds u * total.

    Scaling u by the row's total (instead of assuming 1) keeps float rounding from ever choosing a
    zero-probability token at the end of the vocabulary.
    """
    cdf = probs.cumsum(-1)  # (n, V)
    target = (u.to(cdf.dtype) * cdf[..., -1]).unsqueeze(-1)  # (n, 1)
    return torch.searchsorted(cdf, target, right=True).squeeze(-1).clamp(max=probs.shape[-1] - 1)


def greedy_ids(logits: torch.Tensor) -> torch.Tensor:
    """`logits.argmax(-1)`: the first maximum of each row, found by `max`, which returns the same index
    (PyTorch documents both as the first maximal value) several times faster on the CPU."""
    return logits.max(-1).indices


def draw(
    logits: torch.Tensor,
    u: torch.Tensor,
    *,
    temperature: torch.Tensor,
    vocab_top_k: torch.Tensor,
    top_p: torch.Tensor,
    with_prob: bool = True,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Draw one token per row of `logits (n, V)` with uniforms `u (n,)`.

    Returns `(tokens (n,), prob (n,))`: the ids and their probability under the sampling
    distribution, softmax of the processed logits. Temperature 0 means argmax of the unfiltered
    logits; its probability is then taken under the filtered, untempered distribution (the argmax
    always survives the filters), as Dream's `sample_tokens` reports it. `with_prob=False` skips
    the probability (None) and, when every row is argmax, the whole sampling distribution.
    """
    if logits.shape[0] == 0:
        empty = logits.new_zeros(0)
        return empty.long(), empty
    if not with_prob and not bool((temperature > 0).any()):
        return greedy_ids(logits), None
    processed = process(logits.float(), temperature, vocab_top_k, top_p)
    probs = torch.softmax(processed, dim=-1)  # (n, V)
    greedy = greedy_ids(logits)
    hot = temperature > 0
    tokens = torch.where(hot, inverse_cdf(probs, u), greedy) if bool(hot.any()) else greedy  # (no CDF at T = 0)
    return tokens, probs.gather(-1, tokens.unsqueeze(-1)).squeeze(-1) if with_prob else None
