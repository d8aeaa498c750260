"""The masked positions of one step, packed row-major, and the draws made at them.

The step (`core.step`) works on M packed positions, the True entries of `masked (A, G)` in row-major
order (the order of `masked.nonzero()` and of `masked_scatter`): `Packed` holds their logits beside
each one's row parameters and uniforms; `unpack` scatters packed values back to `(A, G)`. `Drawn` is
the teaching switch's draw at every masked position (`global_draw`); `draw_chosen` the article's draw
at the confirmed ones only.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import torch

from dllm_viz.core import sampling


@dataclass(frozen=True)
class Packed:
    """The masked positions of one step, packed row-major: M rows. Each position's row, uniforms and row
    parameters are gathered when first read (a greedy step ranked by a measure of the logits reads none)."""

    logits: torch.Tensor  # (M, 1, V) float32 raw logits; the mask token is -inf (but in young reference rows)
    masked: torch.Tensor  # (A, G) bool: where the packed rows come from
    uniforms: torch.Tensor  # (A, 2, G): each row's uniforms (`noise` packs them)
    params: Any  # the rows' `StepParams`, `(A,)` each
    row_temperature: torch.Tensor  # (A,) float32: the step's temperature of each row
    dtype: torch.dtype = torch.float32  # the dtype the model gave its logits in
    greedy: bool = False  # every row's temperature is 0 (known on the host: no draw needs more than the argmax)

    @cached_property
    def rows(self) -> torch.Tensor:  # (M,) long: request row of each packed position
        return self.masked.nonzero(as_tuple=True)[0]

    @cached_property
    def noise(self) -> torch.Tensor:  # (2, M): [0] inverse-CDF uniform, [1] the `random` score
        return self.uniforms.permute(1, 0, 2)[:, self.masked]

    @cached_property
    def temperature(self) -> torch.Tensor:  # (M,) float32
        return self.row_temperature[self.rows]

    @cached_property
    def vocab_top_k(self) -> torch.Tensor:  # (M,) long
        return self.params.vocab_top_k[self.rows]

    @cached_property
    def top_p(self) -> torch.Tensor:  # (M,) float32
        return self.params.top_p[self.rows]

    @cached_property
    def measure_id(self) -> torch.Tensor:  # (M,) long
        return self.params.measure_id[self.rows]

    def unpack(self, values: torch.Tensor, fill: float = 0) -> torch.Tensor:
        """`values (M, 1, ...)` back to `(A, G, ...)`."""
        return unpack(values, self.masked, fill)

    def draw(self, where: torch.Tensor | None, *, with_prob: bool = True) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Tokens (and their sampling probability) at the packed positions where `where (M,)` holds (None: at
        every one, read in place)."""
        if not with_prob and self.greedy:  # every row at temperature 0: the argmax, nothing else read
            return sampling.greedy_ids(self.logits[:, 0] if where is None else self.logits[where, 0]), None
        every = where is None or bool(where.all())  # every position: the packed logits themselves, no copy
        if every:
            return sampling.draw(self.logits[:, 0], self.noise[0], temperature=self.temperature,
                                 vocab_top_k=self.vocab_top_k, top_p=self.top_p, with_prob=with_prob)
        return sampling.draw(self.logits[where, 0], self.noise[0][where], temperature=self.temperature[where],
                             vocab_top_k=self.vocab_top_k[where], top_p=self.top_p[where], with_prob=with_prob)


def pack(logits: torch.Tensor, masked: torch.Tensor, params: Any, state: Any, noise: torch.Tensor, *,
         dtype: torch.dtype = torch.float32) -> Packed:
    """Gather each masked position's row parameters (`StepParams`) and uniforms beside its logits
    (`dtype`: the model's); `state.temperature (A,)` is the step's temperature."""
    return Packed(logits=logits, masked=masked, uniforms=noise, params=params, row_temperature=state.temperature,
                  dtype=dtype, greedy=params.greedy)


def unpack(packed: torch.Tensor, where: torch.Tensor, fill: float = 0) -> torch.Tensor:
    """Scatter `packed (M, 1, ...)` back to `(A, G, ...)` at the True entries of `where (A, G)`.

    Row-major, the order `where.nonzero()` packed them in; `fill` elsewhere.
    """
    A, G = where.shape
    tail = packed.shape[2:]
    out = torch.full((A, G, *tail), fill, dtype=packed.dtype, device=packed.device)
    if not tail:
        return out.masked_scatter(where, packed)
    return out.masked_scatter(where.view(A, G, *[1] * len(tail)).expand(A, G, *tail), packed)


@dataclass(frozen=True)
class Drawn:
    """Tokens drawn at every masked position of the `draw_all` rows (the global-sampling switch)."""

    where: torch.Tensor  # (A, G) bool: positions drawn
    tokens: torch.Tensor  # (A, G) long; -1 elsewhere
    prob: torch.Tensor  # (A, G) probability of each under the tempered, filtered distribution; 0 elsewhere


def global_draw(x: Packed, draw_all: torch.Tensor, *, with_prob: bool = True) -> Drawn:
    """Sample at every masked position of the rows with `sample_scope="all"` (`draw_all (A,)`), before scheduling.

    The article's "global sampling" (2.1, 2.3): wasted work, and with a confidence taken from the
    sampled token, a low-probability draw gets locked in. Each position uses its own uniform, so
    the tokens at the positions finally chosen equal those `draw_chosen` would give.
    """
    A, G = x.masked.shape
    where = x.masked & draw_all.unsqueeze(-1)  # (A, G)
    tok, prob = x.draw(None if bool(draw_all.all()) else where[x.masked], with_prob=with_prob)  # (None: every row)
    tokens = torch.full((A, G), -1, dtype=torch.long, device=where.device).masked_scatter(where, tok)
    probs = torch.zeros(A, G, device=where.device)  # only the "sampled" source reads them (`with_prob`)
    return Drawn(where=where, tokens=tokens, prob=probs.masked_scatter(where, prob) if prob is not None else probs)


def draw_chosen(x: Packed, selected: torch.Tensor, drawn: Drawn | None,
                first_max: torch.Tensor | None = None) -> torch.Tensor:
    """Tokens at the selected positions, `(A, G)` (-1 elsewhere): drawn there, or taken from `drawn`. A greedy
    step with `first_max (M, 1)`, each packed position's argmax of the logits (`Distribution.first_max`), places
    those: the draw would find the same ones again."""
    if first_max is not None and x.greedy and drawn is None:
        return torch.where(selected, x.unpack(first_max, -1), -1)
    A, G = selected.shape
    tokens = torch.full((A, G), -1, dtype=torch.long, device=selected.device)
    here = selected
    if drawn is not None:
        here = selected & ~drawn.where
        tokens = torch.where(selected & drawn.where, drawn.tokens, tokens)
    tok, _ = x.draw(here[x.masked], with_prob=False)
    return tokens.masked_scatter(here, tok)
