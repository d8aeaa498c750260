"""The approximate key-value cache in the decoding loop (Fast-dLLM's prefix and dual cache): which forward each step
runs, the caches the requests hold between steps, and the drift of a cached step against the exact one.

Fast-dLLM's loop (NVlabs/Fast-dLLM, ``llada/generate.py``: ``generate_with_prefix_cache``,
``generate_with_dual_cache``), per request and per block:

- the block's first step is a full forward of the row; it refreshes the cache (every layer's keys
  and values, and for the embedded models the local mixing's input: `models.kv_cache`);
- each later step of the block computes a window against that cache: the current block and
  everything after it (``prefix``), or the current block alone (``dual``).

`DecodeConfig.cache_refresh` = r also refreshes at steps r, 2r, ... of a block (dKV-Cache's
interval, Ma et al. 2025); r = 1 is a full forward at every step. A full forward gives logits at
every masked position, as an uncached step does; a window at the masked positions of the current
block only, the only ones a step may confirm (`core.step.choose` picks inside the current block),
so a cached step's record leaves the other positions unscored (NaN, as confirmed ones).

A window's logits differ from the exact forward's: the cached keys were computed when the canvas
held what it held at the refresh. `drift` measures that at one step: the exact forward's logits at
the same positions go through the same step (same state, same uniforms), and the record says by how
much the confidence moved and whether the confirmed set, or the tokens drawn where the cached step
confirmed, would differ. It costs an exact forward per cached step, so it runs only on request
(`DecodeConfig.cache_drift`).

Shapes: A requests (rows), G generated positions per row, M positions scored over all rows (packed
row-major, the order of `masked.nonzero()`), V the vocabulary.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Sequence

import torch

from dllm_viz.core.config import FORWARD_KINDS, DecodeConfig
from dllm_viz.core.step import StepParams, StepResult, StepState, pack
from dllm_viz.models.base import logits_at, logits_shadow

__all__ = ["FORWARD_KINDS", "CacheStore", "Drift", "Forward", "RowsForward", "drift", "exact_logits", "forward_rows",
           "plan"]


@dataclass(frozen=True)
class Forward:
    """The forward one request's step runs: canvas columns ``[start, end)`` of its row."""

    kind: str  # one of FORWARD_KINDS
    start: int  # first canvas column computed
    end: int  # one past the last

    @property
    def computed(self) -> int:
        """Positions the forward computed (prompt included for a full forward)."""
        return self.end - self.start


def plan(config: DecodeConfig, *, prompt_length: int, block: int, steps_in_block: int | None) -> Forward:
    """The forward of a request's next step. `block` is its current block (the first that holds a mask),
    `steps_in_block` the steps it has taken in that block with a cache, None when it holds none."""
    length = prompt_length + config.gen_length
    r = config.cache_refresh
    refresh = steps_in_block is None or steps_in_block == 0 or (r is not None and steps_in_block % r == 0)
    if config.cache == "none" or refresh:
        return Forward("full", 0, length)
    start = prompt_length + block * config.block_size
    return Forward(config.cache, start, length if config.cache == "prefix" else start + config.block_size)


@dataclass
class _Held:
    cache: Any  # the model's opaque cache (`Denoiser.logits_cached`)
    block: int  # the block it was refreshed for
    steps: int  # steps the request has taken in that block since


class CacheStore:
    """The cache each request (by slot index) holds between its steps.

    What a step's forwards change (a refresh's new cache, a window's step count) is pending until
    the step succeeds (`commit`); a step that raises leaves the store as it was (`discard`), so a
    retried step plans the same forwards.
    """

    def __init__(self) -> None:
        self._held: dict[int, _Held] = {}
        self._pending: dict[int, _Held] = {}

    def drop(self, index: int) -> None:
        """Forget slot `index`'s cache (its request finished or left)."""
        self._held.pop(index, None)
        self._pending.pop(index, None)

    def __len__(self) -> int:
        return len(self._held)

    def commit(self) -> None:
        """Keep what the last step's forwards did."""
        self._held.update(self._pending)
        self._pending.clear()

    def discard(self) -> None:
        """Forget what a step that did not finish did (`DecodeBatch.step` on an error: never committed by the next
        step that succeeds, which may be a retry of some of its rows)."""
        self._pending.clear()

    def plan(self, index: int, config: DecodeConfig, *, prompt_length: int, block: int) -> Forward:
        held = self._held.get(index)
        steps = held.steps if held is not None and held.block == block else None
        return plan(config, prompt_length=prompt_length, block=block, steps_in_block=steps)

    def forward(self, model: Any, index: int, ids: torch.Tensor, forward: Forward, cols: torch.Tensor,
                block: int) -> torch.Tensor:
        """Run `forward` on the row `ids (N,)` of slot `index`; the logits `(m, V)` at the canvas columns `cols`."""
        if forward.kind == "full":
            logits, cache = model.logits_cached(ids[None, : forward.end], None, start=0, cols=cols)
            self._pending[index] = _Held(cache, block, 1)
            return logits
        held = self._held.get(index)
        assert held is not None and held.block == block  # `plan` runs a window only against this block's cache
        logits, _ = model.logits_cached(ids[None, forward.start : forward.end], held.cache, start=forward.start,
                                        cols=cols)
        self._pending[index] = _Held(held.cache, block, held.steps + 1)
        return logits


@dataclass(frozen=True)
class RowsForward:
    """The logits of one step of every row, the cached ones' windows included."""

    logits: torch.Tensor  # (M, V) at the True entries of `scored`, packed row-major
    scored: torch.Tensor  # (A, G) bool: masked positions the forward gave logits for (the step's candidates)
    forwards: list[Forward | None]  # per row; None for a request without a cache (an uncached step)
    seconds: list[float | None]  # per row: the cached forward's wall time; None without a cache
    also: torch.Tensor | None = None  # (F, V) at the True entries of `forward_rows`' `also`, row-major
    shadow: torch.Tensor | None = None  # (H, V) from WINO's shadow rows at `forward_rows`' `shadow` positions


def current_blocks(masked: torch.Tensor, configs: Sequence[DecodeConfig]) -> list[int]:
    """Each row's current block: the block of its first masked position (0 when none is left)."""
    first = torch.where(masked.any(-1), masked.float().argmax(-1), 0).tolist()  # (A,)
    return [g // max(1, c.block_size) for g, c in zip(first, configs)]


def forward_rows(model: Any, store: CacheStore, slots: Sequence[int], configs: Sequence[DecodeConfig],
                 prompt_lengths: Sequence[int], canvas: torch.Tensor, attention: torch.Tensor, pos: torch.Tensor,
                 masked: torch.Tensor, also: torch.Tensor | None = None,
                 shadow: tuple[torch.Tensor, torch.Tensor] | None = None) -> RowsForward:
    """One step's forward for the rows of slots `slots`: `canvas (A, n)`, `attention (A, n)`, `pos (A, G)`
    the canvas column of each generated position, `masked (A, G)` the positions still masked; `also
    (A, G)`: more positions to read in the same forward (a revision rule's decided ones; rows without a
    cache only); `shadow`: `(blocks (A, 2), hidden (A, G))`, WINO's shadow block ``[lo, hi)`` of each row
    (canvas columns, lo == hi: none) and the positions read from its shadow rows (`models.base.logits_shadow`;
    rows without a cache only).

    Rows without a cache go through `models.base.logits_at` together, in one call, exactly as an
    uncached step; each row with one runs its planned forward alone (`plan`, `CacheStore.forward`).
    """
    A, G = masked.shape
    cached = [a for a, c in enumerate(configs) if c.cache != "none"]
    forwards: list[Forward | None] = [None] * A
    seconds: list[float | None] = [None] * A
    if also is not None and cached and bool(also[cached].any()):
        raise ValueError("also is invalid: a row with a cache reads its window only; expected no position there")
    if shadow is not None and cached and bool(shadow[1][cached].any()
                                              or (shadow[0][cached, 1] > shadow[0][cached, 0]).any()):
        raise ValueError("shadow is invalid: a row with a cache reads its window only; expected no shadow block there")
    if shadow is not None and not cached:  # WINO's shadow block in the step's forward (no revision with a cache)
        logits, extra, hidden = _shadowed(model, canvas, attention, pos, masked, also, shadow)
        return RowsForward(logits, masked, forwards, seconds, extra, hidden)
    if not cached:  # an uncached step, as ever
        logits, extra = _plain(model, canvas, attention, pos, masked, also)
        return RowsForward(logits, masked, forwards, seconds, extra)
    scored = masked.clone()
    blocks = current_blocks(masked, configs)
    g = torch.arange(G, device=masked.device)
    for a in cached:
        c = configs[a]
        forwards[a] = store.plan(slots[a], c, prompt_length=prompt_lengths[a], block=blocks[a])
        if forwards[a].kind != "full":  # a window scores the current block only
            scored[a] &= (g // c.block_size) == blocks[a]
    packed_index = scored.flatten().cumsum(0).sub(1).view(A, G)  # (A, G) row-major index into the packed logits
    M = int(scored.sum())
    logits: torch.Tensor | None = None
    extra = hidden = None
    plain = scored.clone()
    plain[cached] = False
    if shadow is not None:  # the uncached rows' forward carries their shadow blocks
        got, extra, hidden = _shadowed(model, canvas, attention, pos, plain, also, shadow)
        logits = got.new_empty(M, got.shape[-1])
        logits[packed_index[plain]] = got
    elif plain.any() or also is not None:
        got, extra = _plain(model, canvas, attention, pos, plain, also)  # (M_plain, V), (F, V)
        logits = got.new_empty(M, got.shape[-1])
        logits[packed_index[plain]] = got
    for a in cached:
        where = scored[a]
        t0 = time.perf_counter()
        got = store.forward(model, slots[a], canvas[a], forwards[a], pos[a][where], blocks[a])  # (m_a, V)
        seconds[a] = time.perf_counter() - t0
        if A == 1:  # the row's logits are the packed ones
            logits = got
            break
        if logits is None:
            logits = got.new_empty(M, got.shape[-1])
        logits[packed_index[a][where]] = got
    assert logits is not None
    return RowsForward(logits=logits, scored=scored, forwards=forwards, seconds=seconds, also=extra, shadow=hidden)


def _plain(model: Any, canvas: torch.Tensor, attention: torch.Tensor, pos: torch.Tensor, where: torch.Tensor,
           also: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor | None]:
    """One `logits_at` call: the logits at the True entries of `where (A, G)`, `(M, V)`, and at those of
    `also` after them, `(F, V)` (None without `also`), each row-major."""
    rows, gs = where.nonzero(as_tuple=True)
    M = rows.shape[0]
    if also is not None:
        more_rows, more_gs = also.nonzero(as_tuple=True)
        rows, gs = torch.cat([rows, more_rows]), torch.cat([gs, more_gs])
    logits = logits_at(model, canvas, attention, rows, pos[rows, gs])  # (M + F, V)
    return (logits, None) if also is None else (logits[:M], logits[M:])


def _shadowed(model: Any, canvas: torch.Tensor, attention: torch.Tensor, pos: torch.Tensor, where: torch.Tensor,
              also: torch.Tensor | None, shadow: tuple[torch.Tensor, torch.Tensor]
              ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor]:
    """`_plain`'s two, and the logits of the shadow rows at the True entries of `shadow[1]`, `(H, V)`, all from
    one forward with each row's shadow block (`models.base.logits_shadow`)."""
    blocks, hidden = shadow
    rows, gs = where.nonzero(as_tuple=True)
    M = rows.shape[0]
    if also is not None:
        more_rows, more_gs = also.nonzero(as_tuple=True)
        rows, gs = torch.cat([rows, more_rows]), torch.cat([gs, more_gs])
    hr, hg = hidden.nonzero(as_tuple=True)
    logits, shadowed = logits_shadow(model, canvas, attention, rows, pos[rows, gs], blocks, hr, pos[hr, hg])
    return logits[:M], (None if also is None else logits[M:]), shadowed


def exact_logits(model: Any, rows_forward: RowsForward, rows: Sequence[int], canvas: torch.Tensor,
                 attention: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
    """`rows_forward.logits` with the rows `rows` recomputed by the exact (uncached) forward, `(M, V)`."""
    out = rows_forward.logits.clone()
    want = torch.zeros_like(rows_forward.scored)
    want[list(rows)] = rows_forward.scored[list(rows)]
    r, gs = want.nonzero(as_tuple=True)
    if r.numel():
        index = rows_forward.scored.flatten().cumsum(0).sub(1).view(want.shape)
        out[index[r, gs]] = logits_at(model, canvas, attention, r, pos[r, gs]).to(out.dtype)
    return out


@dataclass(frozen=True)
class Drift:
    """A cached step against the exact one, one row per request."""

    change: torch.Tensor  # (A,) largest |confidence - exact confidence| over the scored positions
    exact_confidence: torch.Tensor  # (A, G) the exact forward's confidence (what the schedule ranks by)
    selected_differ: torch.Tensor  # (A,) bool: the exact forward would confirm another set of positions
    tokens_differ: torch.Tensor  # (A,) bool: where the cached step confirmed, the exact one would draw another token


def drift(cached: StepResult, exact: StepResult, exact_packed: torch.Tensor, params: StepParams, state: StepState,
          noise: torch.Tensor) -> Drift:
    """Compare a step run on cached logits with the same step run on the exact logits `exact_packed (M, 1, V)`
    (same `params`, `state` and uniforms `noise (A, 2, G)`). The tokens are compared where the cached
    step confirmed: the exact distribution's draw there, with the same uniform of each position."""
    scored = cached.masked
    diff = (cached.confidence - exact.confidence).abs().masked_fill(~scored, 0)  # (A, G)
    x = pack(exact_packed, scored, params, state, noise)
    where = cached.selected[scored]  # (M,)
    tok, _ = x.draw(where, with_prob=False)
    redrawn = torch.full_like(cached.tokens, -1).masked_scatter(cached.selected, tok)  # (A, G)
    return Drift(
        change=diff.amax(-1) if diff.numel() else diff.sum(-1),
        exact_confidence=exact.confidence.masked_fill(~scored, float("nan")),
        selected_differ=(cached.selected != exact.selected).any(-1),
        tokens_differ=((redrawn != cached.tokens) & cached.selected).any(-1),
    )
