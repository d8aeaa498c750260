"""The model protocol the decoder relies on, and the small helpers every model loader shares.

A denoiser is anything that maps a canvas of token ids to logits at every position. The decoder
needs nothing else: no tokenizer, no Hugging Face classes. The optional attributes below are read
with `getattr` and a default, so a five-line test model is a valid denoiser.
"""
from __future__ import annotations

import inspect
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import torch

NEVER_LOGIT = -1e4  # logit of ids a model must never produce (probability exp(-1e4) = 0)


@runtime_checkable
class TextTokenizer(Protocol):
    """Text <-> token ids, the only tokenizer surface the playground uses."""

    def encode(self, text: str) -> list[int]:
        """Token ids of `text`, ready to be placed before the masked canvas."""
        ...

    def decode(self, ids: Sequence[int]) -> str:
        """Text of `ids`; special tokens such as [MASK] stay visible."""
        ...


@runtime_checkable
class Denoiser(Protocol):
    """A masked-diffusion model as the decoder sees it.

    Required:
        mask_token_id: the id that marks a position still to be generated.
        __call__(input_ids (B, N) long, attention_mask (B, N) bool | None) -> logits (B, N, V):
            the logits at position i are the model's prediction of the token at position i.
            Batches are right-padded; `attention_mask` is True on real tokens, and a row's logits
            at its real positions must not depend on the padding or on the other rows.
    Optional (read with `getattr`): tokenizer (`TextTokenizer`), name (str), max_length (int, the
    context limit), device (torch.device), eos_token_id / pad_token_id (int | None), and
    logits_at(input_ids, attention_mask, rows (M,), cols (M,)) -> (M, V): the logits of
    `__call__` at the M positions `(rows[i], cols[i])` only. The decoder needs no more than the
    still-masked positions, so a model whose output head costs much (a large vocabulary) can skip
    it elsewhere; see `logits_at` below. can_edit (bool, default False): the model was trained to
    predict at visible positions too (LLaDA 2.1: visible tokens replaced by random ones, the loss at
    every position), so its logits there can rewrite a token (`can_edit` below).
    logits_hidden(input_ids, attention_mask, rows, cols) -> (K, V): the logits at each position with
    its own token hidden (see `logits_hidden` below), for a model that computes them in one pass.
    logits_shadow(input_ids, attention_mask, rows, cols, blocks, hidden_rows, hidden_cols) -> ((M, V), (K, V)):
    WINO's shadow block in one forward (see `logits_shadow` below); `can_shadow` (bool) may say it cannot.

    Batch invariance is this layer's job and no other's: the decoder and the engine put every
    request of a step in one call. A model whose `logits_at` gives a row the same bits whatever
    the other rows (the embedded model: products in fixed row tiles, `models.tiles`) makes every
    request's trace independent of its batch; one that does not (the Hugging Face adapters) can
    differ in the last bits (docs/engine.md).

    Optional, an approximate key-value cache (Fast-dLLM's prefix or dual cache; `check_cache` below): `cache_modes`, the
    caches it runs (a subset of ("prefix", "dual")), and
    logits_cached(input_ids, cache, *, start, cols (M,)) -> (logits (M, V), cache): one canvas row
    at a time; with `cache` None, `input_ids (1, N)` is the whole row, computed in full (a refresh),
    and the cache returned is what a window needs later (opaque to the caller); else
    `input_ids (1, W)` are the positions [start, start + W) only, computed against the cache (the
    rest of the row as the refresh saw it), and `cols` lie inside that window. A model without
    them, or that explains why in `cache_note` (str), decodes with cache="none" only.
    """

    mask_token_id: int

    def __call__(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None
    ) -> torch.Tensor: ...


def logits_at(
    model: Denoiser, input_ids: torch.Tensor, attention_mask: torch.Tensor | None, rows: torch.Tensor,
    cols: torch.Tensor,
) -> torch.Tensor:
    """The model's logits at positions `(rows[i], cols[i])`, `(M, V)`, in that order.

    Through `model.logits_at` when the model has one (it computes the output head there only),
    else the full `(B, N, V)` forward, gathered. Both give the same numbers up to float rounding.
    """
    at = getattr(model, "logits_at", None)
    if callable(at):
        return at(input_ids, attention_mask, rows, cols)
    return model(input_ids, attention_mask)[rows, cols]


def can_edit(model: Any) -> bool:
    """Whether `model` may rewrite visible tokens: its optional `can_edit` attribute, False by default.

    A masked-diffusion model trained only on masked positions predicts nothing meaningful where the
    token is visible; token-to-token edits (revision="joint_threshold") need one that was trained
    there too (LLaDA 2.1's objective). Re-masking rules (remdm, rcr, wino) work with any masked model.
    """
    return getattr(model, "can_edit", False) is True


HIDDEN_CHUNK_FLOATS = 1 << 25  # logits_hidden's fallback runs at most this many floats of logits at once


def logits_hidden(
    model: Denoiser, input_ids: torch.Tensor, attention_mask: torch.Tensor | None, rows: torch.Tensor,
    cols: torch.Tensor,
) -> torch.Tensor:
    """The logits at `(rows[i], cols[i])` with the token there hidden, `(K, V)`: what each position
    predicts from everything else but itself (WINO's verify pass, Feng-Hong/WINO-DLLM, `decoding_wino`).

    WINO computes all of them in one forward through a shadow block whose position i attends to
    everything but the token at i; a model with `logits_hidden` may do the same. Otherwise each
    position gets its own canvas, the row with that one position set to the mask token, run in
    chunks through `logits_at`: exact for any masked model, and as costly as K canvases.
    """
    at = getattr(model, "logits_hidden", None)
    if callable(at):
        return at(input_ids, attention_mask, rows, cols)
    K, N = int(rows.shape[0]), input_ids.shape[1]
    if K == 0:
        raise ValueError("rows is invalid: expected at least one position to hide")
    chunk = max(1, HIDDEN_CHUNK_FLOATS // max(1, N * _vocab_guess(model)))
    out = []
    for lo in range(0, K, chunk):
        r, c = rows[lo : lo + chunk], cols[lo : lo + chunk]
        n = torch.arange(len(r), device=input_ids.device)
        canvases = input_ids[r].clone()  # (n, N): one canvas per position, that position hidden
        canvases[n, c] = model.mask_token_id
        out.append(logits_at(model, canvases, attention_mask[r] if attention_mask is not None else None, n, c))
    return torch.cat(out)


def shadow_kind(model: Any) -> str | None:
    """How `model` takes WINO's shadow block (`logits_shadow`): "own" (its `logits_shadow`, unless its
    `can_shadow` is False), "llada" (its forward takes a 4-D boolean attention mask and `position_ids`,
    LLaDA's inputs as WINO's modified modeling file takes them), or None (it cannot: per-position canvases)."""
    if callable(getattr(model, "logits_shadow", None)):
        return "own" if getattr(model, "can_shadow", True) is True else None
    forward = getattr(model, "forward", None) or getattr(model, "__call__", None)
    try:
        names = inspect.signature(forward).parameters
    except (TypeError, ValueError):
        return None
    return "llada" if "position_ids" in names and "attention_mask" in names else None


def logits_shadow(
    model: Denoiser, input_ids: torch.Tensor, attention_mask: torch.Tensor | None, rows: torch.Tensor,
    cols: torch.Tensor, blocks: torch.Tensor, hidden_rows: torch.Tensor, hidden_cols: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """One forward with WINO's shadow block (`models.shadow`): the logits at `(rows[i], cols[i])`, `(M, V)`,
    and at each `(hidden_rows[j], hidden_cols[j])` with the token there hidden, `(K, V)`, read from the
    shadow row of that position. `blocks (B, 2)` long: each row's shadow block ``[lo, hi)`` in canvas
    columns (lo == hi: none); a hidden position lies in its row's block.

    Through the model's own `logits_shadow` (the embedded models: one packed forward, batch-invariant), else
    LLaDA's convention (`shadow_kind` "llada"): each row with a block alone, as WINO calls it, the others
    together through `logits_at`. A model that takes neither raises ValueError (`shadow_kind` says so first).
    """
    kind = shadow_kind(model)
    if kind == "own":
        return model.logits_shadow(input_ids, attention_mask, rows, cols, blocks, hidden_rows, hidden_cols)
    if kind is None:
        raise ValueError(f"{model_name(model)!r} takes no shadow block: expected a model with logits_shadow, or "
                         "a forward taking a 4-D attention mask and position_ids")
    from dllm_viz.models.shadow import by_rows

    def call(ids: torch.Tensor, allowed: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        out = model(ids, attention_mask=allowed, position_ids=positions)
        return getattr(out, "logits", out)[0]

    return by_rows(call, lambda r, c: logits_at(model, input_ids, attention_mask, r, c), model.mask_token_id,
                   input_ids, attention_mask, rows, cols, blocks, hidden_rows, hidden_cols)


def exact_shadow(
    model: Denoiser, input_ids: torch.Tensor, attention_mask: torch.Tensor | None, rows: torch.Tensor,
    cols: torch.Tensor, hidden_rows: torch.Tensor, hidden_cols: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """`logits_shadow` for an exact model (the world and tasks oracles): the logits at `(rows, cols)`, and
    at each hidden position its shadow row's: the marginal with that position hidden, since the other
    shadow rows are masks, which tell an exact model nothing (`logits_hidden` computes it)."""
    logits = model(input_ids, attention_mask)[rows, cols]  # (M, V)
    if hidden_rows.numel() == 0:
        return logits, logits.new_empty(0, logits.shape[-1])
    return logits, logits_hidden(model, input_ids, attention_mask, hidden_rows, hidden_cols)


def _vocab_guess(model: Any) -> int:
    """A model's vocabulary size when it states one (`vocab_size`), else a large guess, for chunking."""
    size = getattr(model, "vocab_size", None)
    return size if isinstance(size, int) and size > 0 else 1 << 15


def cache_modes(model: Any) -> tuple[str, ...]:
    """The approximate caches `model` runs: its `cache_modes` when it has `logits_cached`, else ()."""
    modes = getattr(model, "cache_modes", ())
    if not callable(getattr(model, "logits_cached", None)) or not isinstance(modes, (tuple, list)):
        return ()
    return tuple(m for m in modes if isinstance(m, str))


def check_cache(model: Any, cache: str) -> None:
    """Raise ValueError, naming the model and why, when `model` cannot run `cache` ("none" always runs)."""
    modes = cache_modes(model)
    if cache == "none" or cache in modes:
        return
    note = getattr(model, "cache_note", None)
    why = note if isinstance(note, str) and note else "it has no cached forward (logits_cached)"
    allowed = " | ".join(("none", *modes))
    raise ValueError(f"cache={cache!r} is invalid for {model_name(model)!r}: {why}; expected {allowed}")


def check_positions(rows: torch.Tensor, cols: torch.Tensor, shape: tuple[int, int]) -> None:
    """Validate the `(rows, cols)` of a `logits_at` call on a `(B, N)` canvas: two (M,) integer
    index tensors inside it."""
    B, N = shape
    for name, index, limit in (("rows", rows, B), ("cols", cols, N)):
        if not isinstance(index, torch.Tensor) or index.dim() != 1 or index.dtype.is_floating_point \
                or index.dtype == torch.bool:
            raise ValueError(f"{name} is invalid: expected a 1-D integer tensor of positions")
        if index.numel() and not (0 <= int(index.min()) and int(index.max()) < limit):
            raise ValueError(f"{name} is invalid: expected values in [0, {limit})")
    if rows.shape != cols.shape:
        raise ValueError(f"rows {tuple(rows.shape)} and cols {tuple(cols.shape)} are invalid: expected the same length")


def check_denoiser(model: Any) -> None:
    """Raise ValueError unless `model` has an integer `mask_token_id` and is callable."""
    mask_id = getattr(model, "mask_token_id", None)
    if not isinstance(mask_id, int) or isinstance(mask_id, bool) or mask_id < 0:
        raise ValueError(
            f"model.mask_token_id={mask_id!r} is invalid: expected a non-negative integer token id"
        )
    if not callable(model):
        raise ValueError(f"model={type(model).__name__} is invalid: expected a callable denoiser")


def model_name(model: Any) -> str:
    """`model.name`, or its class name when it has none."""
    name = getattr(model, "name", None)
    return name if isinstance(name, str) and name else type(model).__name__


def model_max_length(model: Any) -> int | None:
    """`model.max_length` (the context limit in tokens), or None when the model states none."""
    limit = getattr(model, "max_length", None)
    return limit if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0 else None


def model_device(model: Any) -> torch.device:
    """Where the model wants its inputs: `model.device`, else its first parameter's, else CPU."""
    device = getattr(model, "device", None)
    if device is not None:
        return torch.device(device)
    parameters = getattr(model, "parameters", None)
    if callable(parameters):
        first = next(iter(parameters()), None)
        if first is not None:
            return first.device
    return torch.device("cpu")


def check_inputs(
    input_ids: torch.Tensor, attention_mask: torch.Tensor | None, *, max_length: int | None
) -> None:
    """Validate a denoiser call: (B, N) integer ids, a matching right-padded bool mask, N <= limit."""
    if not isinstance(input_ids, torch.Tensor) or input_ids.dim() != 2:
        shape = tuple(input_ids.shape) if isinstance(input_ids, torch.Tensor) else type(input_ids)
        raise ValueError(f"input_ids with shape {shape} is invalid: expected a (B, N) tensor")
    if input_ids.dtype.is_floating_point or input_ids.dtype == torch.bool:
        raise ValueError(f"input_ids.dtype={input_ids.dtype} is invalid: expected an integer dtype")
    if max_length is not None and input_ids.shape[1] > max_length:
        raise ValueError(
            f"input length {input_ids.shape[1]} is invalid: expected at most max_length={max_length} "
            "tokens (prompt plus generation), the model's context limit"
        )
    if attention_mask is None:
        return
    if attention_mask.shape != input_ids.shape or attention_mask.dtype != torch.bool:
        raise ValueError(
            f"attention_mask with shape {tuple(attention_mask.shape)} and dtype {attention_mask.dtype} "
            f"is invalid: expected a bool tensor of shape {tuple(input_ids.shape)}"
        )
    # Right padding: once a row has a padded position, everything after it is padding too.
    if bool((attention_mask[:, 1:] & ~attention_mask[:, :-1]).any()):
        raise ValueError("attention_mask is invalid: expected right padding (True then False per row)")


def resolve_device(device: str | torch.device | None) -> torch.device:
    """`device`, or CUDA when available and CPU otherwise; ValueError for unknown or absent devices."""
    if device is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        resolved = torch.device(device)
    except (RuntimeError, TypeError) as err:
        raise ValueError(f"device={device!r} is invalid: expected 'cpu', 'cuda', 'cuda:N' or 'mps'") from err
    if resolved.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device={device!r} is invalid: CUDA is not available on this machine")
    if resolved.type == "mps" and not torch.backends.mps.is_available():
        raise ValueError(f"device={device!r} is invalid: MPS is not available on this machine")
    return resolved


DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32,
    "fp32": torch.float32,
    "bfloat16": torch.bfloat16,
    "bf16": torch.bfloat16,
    "float16": torch.float16,
    "fp16": torch.float16,
}


def resolve_dtype(dtype: str | torch.dtype | None, device: torch.device) -> torch.dtype:
    """`dtype` (a torch dtype or a name in DTYPES); by default bf16 on CUDA and fp32 elsewhere."""
    if dtype is None:
        return torch.bfloat16 if device.type == "cuda" else torch.float32
    if isinstance(dtype, torch.dtype) and dtype in DTYPES.values():
        return dtype
    if isinstance(dtype, str) and dtype in DTYPES:
        return DTYPES[dtype]
    raise ValueError(f"dtype={dtype!r} is invalid: expected one of {' | '.join(DTYPES)} or that torch dtype")


def read_config(path: Path) -> dict[str, Any]:
    """The raw config.json of a checkpoint directory; ValueError when there is none."""
    config_file = path / "config.json"
    if not path.is_dir() or not config_file.is_file():
        raise ValueError(f"path={str(path)!r} is invalid: expected a directory holding a config.json")
    return json.loads(config_file.read_text(encoding="utf-8"))
