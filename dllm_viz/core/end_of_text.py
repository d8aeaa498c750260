"""The end-of-text early stop: finish a request once the rest of its current block is padding.

Instruction-tuned LLaDA and Dream fill the unused tail of the canvas with their end-of-text token,
and often confirm it first because it is their most confident prediction. A request whose config
sets `early_stop` finishes in the step where every still-masked position of its current block
predicts an end-of-text token (its raw argmax is one of the model's end-of-text ids) with raw
probability >= `early_stop_threshold`: those positions and every later masked position are filled
in that step, each with the end-of-text token it predicts. The forwards that would
only have confirmed padding are saved; the text, which stops at the first end-of-text anyway, is
the same as it would have been had the schedule confirmed those tokens one step at a time
(given that every one of them would have been end-of-text).

Which ids end a text is one rule for every caller (`end_of_text_ids`): the playground's decoder
reads them off the model, the SGLang plugin off its policy, which carries the model's.

Pure, batched functions of the raw distribution, called from the step after the schedule chose.
"""
from __future__ import annotations

from typing import Any

import torch

from dllm_viz.core.schedules import block_of
from dllm_viz.core.scoring import Distribution


def end_of_text_ids(source: Any) -> tuple[int, ...]:
    """The ids that end a text, read off a model or a serving policy, in the same way for both.

    `source.end_of_text_ids` when it lists them (Hugging Face adapters list every token that ends a
    text: EOS, end of turn, padding; for LLaDA that is two ids; a `Policy` carries the list it was
    exported with), else `(source.eos_token_id,)`, else none. Anything that is not a non-negative
    integer is left out.
    """
    ids = getattr(source, "end_of_text_ids", None)
    if ids is None:
        eos = getattr(source, "eos_token_id", None)
        ids = (eos,) if eos is not None else ()
    return tuple(i for i in ids if isinstance(i, int) and not isinstance(i, bool) and i >= 0)


def end_of_text_rows(
    raw: Distribution,
    masked: torch.Tensor,
    block: torch.Tensor,
    block_size: torch.Tensor,
    *,
    end_ids: tuple[int, ...],
    enabled: torch.Tensor,
    threshold: torch.Tensor,
) -> torch.Tensor:
    """The rows that finish now, `(A,)` bool.

    `raw (M, 1, V)` is the raw distribution at the masked positions of `masked (A, G)` (packed
    row-major); `block (A,)` the block each row decodes this step, `block_size (A,)` its size;
    `end_ids` the model's end-of-text ids; `enabled (A,)` bool and `threshold (A,)` float come
    from each row's config.
    """
    A, G = masked.shape
    top_p, top_i = raw.top  # (M, 1, N) each, most likely first
    ends = torch.tensor(end_ids, dtype=top_i.dtype, device=top_i.device)
    rows = masked.nonzero(as_tuple=True)[0]  # (M,)
    predicts = torch.isin(top_i[:, 0, 0], ends) & (top_p[:, 0, 0] >= threshold[rows])  # (M,)
    at = torch.zeros(A, G, dtype=torch.bool, device=masked.device).masked_scatter(masked, predicts)  # (A, G)
    blocks = block_of(torch.arange(G, device=masked.device), block_size)  # (A, G)
    current = masked & (blocks == block.unsqueeze(-1))  # (A, G) still masked in the current block
    return enabled & current.any(-1) & (at | ~current).all(-1)


def fill_end_of_text(
    stop: torch.Tensor,
    masked: torch.Tensor,
    selected: torch.Tensor,
    tokens: torch.Tensor,
    count: torch.Tensor,
    *,
    fill_tokens: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """In the `stop (A,)` rows, every masked position is selected and gets `fill_tokens (A, G)`.

    `fill_tokens` is what each position predicts (its raw argmax: the end-of-text token in the
    current block). Returns new `(selected (A, G), tokens (A, G), count (A,))`; the other rows are
    unchanged and the inputs are not modified.
    """
    fill = masked & stop.unsqueeze(-1)  # (A, G)
    return (
        selected | fill,
        torch.where(fill, fill_tokens, tokens),
        torch.where(stop, masked.sum(-1), count),
    )
