"""What reproduces a reference implementation's ties, dtypes and candidates, beside the shared step.

The step (`core.step.denoise_step`) is the article's; a few presets must also decide exactly as the
code they cite, down to that code's float ops and tie order (tests/test_shipped_presets.py). Those
quirks live here, one module per reference, and the step applies them around its own steps through
one `Quirks` object (`StepParams.quirks`), whose every method returns its input unchanged when no row
follows a reference:
  - `keeps_mask`: before (1), the mask token stays a candidate in a young reference row;
  - `wide`: in (3), the rows whose reference ranks and compares its threshold in float64;
  - `pick`: after (3), the positions picked as that code's own `torch.topk` call picks them;
  - `placed`: after (4), a drawn mask places nothing.
A row follows a reference when its config is that code's rule (`Reference.follows`): LLaDA's
`generate` (`llada`), Fast-dLLM's threshold (`fast_dllm`), WINO's `decoding_wino` (`wino`). `sglang` holds SGLang's
softmax confidence (`confidence_from="softmax"`), a source of its own rather than a row quirk.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import torch

from dllm_viz.core.references import fast_dllm, llada, wino
from dllm_viz.core.references.llada import Reference

REFERENCES: tuple[Reference, ...] = (llada.REFERENCE, fast_dllm.REFERENCE, wino.REFERENCE)


def follows(config: Any) -> Reference | None:
    """The reference whose code `config`'s rule is, or None."""
    return next((ref for ref in REFERENCES if ref.follows(config)), None)


@dataclass(frozen=True)
class Quirks:
    """The reference quirks of a set of rows (`(A,)` tensors); `rows` None: no row follows a reference."""

    rows: torch.Tensor | None = None  # (A,) bool: rows computed as the code they cite
    refs: tuple[Reference | None, ...] = ()  # each row's reference
    prompt_length: torch.Tensor | None = None  # (A,) long: canvas columns before each row's span
    gen_length: torch.Tensor | None = None  # (A,) long: each row's own generated positions
    tails: tuple[int, ...] = ()  # columns each row's code has after its canvas (WINO's shadow block)
    keeps: torch.Tensor | None = None  # (A,) bool: the rows whose code keeps the mask token a candidate
    _wide: dict = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def of(cls, configs: Sequence[Any], *, prompt_lengths: Sequence[int], device: torch.device | str) -> Quirks:
        refs = tuple(follows(c) for c in configs)
        if all(r is None for r in refs):
            return NONE
        col = lambda values: torch.tensor(values, device=device)  # noqa: E731
        return cls(rows=col([r is not None for r in refs]), refs=refs, prompt_length=col(list(prompt_lengths)),
                   gen_length=col([c.gen_length for c in configs]),
                   tails=tuple(r.tail(c) if r is not None else 0 for r, c in zip(refs, configs)),
                   keeps=col([r is not None and r.keeps_mask for r in refs]))

    @property
    def any(self) -> bool:
        return self.rows is not None

    def wide(self, dtype: torch.dtype) -> torch.Tensor | None:
        """`(A,)` bool: the reference rows that compute in float64 for logits of `dtype` (else in that dtype)."""
        if self.rows is None:
            return None
        if dtype not in self._wide:
            self._wide[dtype] = torch.tensor([r is not None and r.wide(dtype) for r in self.refs],
                                             device=self.rows.device)
        return self._wide[dtype]

    def keeps_mask(self, masked: torch.Tensor, young: Callable[[], torch.Tensor]) -> torch.Tensor | None:
        """`(M, 1)` bool: packed positions whose row keeps the mask token a candidate (`llada.keeps_mask`);
        `young()` gives `(A,)` the rows still within their block's first block_size steps."""
        if self.rows is None:
            return None
        return llada.keeps_mask(self.keeps & young(), masked)

    def pick(self, selected: torch.Tensor, conf: torch.Tensor, eligible: torch.Tensor, count: torch.Tensor,
             dtype: torch.dtype) -> torch.Tensor:
        """`selected (A, G)` with each reference row's pick redone by its code's `torch.topk` (`llada.pick`)."""
        if self.rows is None:
            return selected
        return llada.pick(self, selected, conf, eligible, count, dtype)

    def placed(self, selected: torch.Tensor, tokens: torch.Tensor, count: torch.Tensor,
               mask_id: int | None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """`(selected, tokens, count)` without the positions where a reference row drew the mask."""
        if self.rows is None or mask_id is None:
            return selected, tokens, count
        return llada.unplaced_masks(selected, tokens, count, mask_id)


NONE = Quirks()
