"""The run's model: built from the recipe (`build_model`), or started from an earlier model's weights
(``--init-from``: `init_tokenizer`, `start_from`), grown where the recipe is larger.

A second phase may grow the vocabulary (``--vocab-size`` larger than the ``--init-from`` run's): a BPE
trained on the same text with more merges keeps every old piece at its id, so the old embedding
rows carry over and each new piece starts at the mean of the pieces that spell it
(`grow_embedding`). Longer pieces mean fewer words split across tokens, which is what parallel
decoding gets wrong: pieces of one word drawn in the same step fuse into non-words. A larger
``--n-layers`` than the ``--init-from`` run's grows the depth the same way: new blocks start as
identities (`grow_depth`), so capacity is added without losing what was learnt.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import torch

from dllm_viz.models.embedded import EmbeddedConfig, EmbeddedDenoiser
from dllm_viz.models.tokenizer import EmbeddedTokenizer
from dllm_viz.train.config import TrainConfig
from dllm_viz.train.objectives import objective_for

log = logging.getLogger(__name__)


def build_model(cfg: TrainConfig, tokenizer: EmbeddedTokenizer) -> EmbeddedDenoiser:
    """A fresh model of the recipe's shape for ``tokenizer``, initialised from ``cfg.seed``; it declares
    ``can_edit`` when the recipe's objective trains visible positions too."""
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
        can_edit=objective_for(cfg).can_edit,
        **objective_for(cfg).model_fields(tokenizer),
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


def init_folder(init_from: Path) -> Path:
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


def init_tokenizer(init_from: Path, run: Path, vocab_size: int, tokens: Sequence[str] = ()) -> EmbeddedTokenizer:
    """The tokenizer of the model ``init_from`` names; copied into ``run`` when the recipe keeps its size
    (and the run has none yet), so the run tokenises with the same pieces; with the objective's special
    `tokens` appended first (`append_tokens`), whose size the recipe then names."""
    tokenizer = EmbeddedTokenizer.from_file(init_folder(init_from) / "tokenizer.json")
    run_tokenizer = append_tokens(tokenizer, tokens) if tokens else tokenizer
    if tokens and run_tokenizer.vocab_size != vocab_size:
        raise ValueError(f"vocab_size={vocab_size} is invalid: the start model's {tokenizer.vocab_size} pieces and "
                         f"the objective's {list(tokens)} make {run_tokenizer.vocab_size}")
    if run_tokenizer.vocab_size == vocab_size and not (run / "tokenizer.json").is_file():
        run_tokenizer.save(run / "tokenizer.json")  # the same vocabulary (and the objective's tokens): reuse it
    return tokenizer


def append_tokens(tokenizer: EmbeddedTokenizer, tokens: Sequence[str]) -> EmbeddedTokenizer:
    """A copy of ``tokenizer`` with ``tokens`` appended as special tokens (every old piece keeps its id)."""
    import tempfile

    from tokenizers import AddedToken

    with tempfile.TemporaryDirectory() as folder:
        tokenizer.save(Path(folder) / "tokenizer.json")
        inner = EmbeddedTokenizer.from_file(Path(folder) / "tokenizer.json")._tok
    inner.add_special_tokens([AddedToken(piece, special=True) for piece in tokens])
    grown = EmbeddedTokenizer(inner)
    old = tokenizer.get_vocab()
    if any(grown.get_vocab().get(piece) != i for piece, i in old.items()):
        raise ValueError(f"tokens={list(tokens)} is invalid: appending them moved an old piece")
    return grown


def start_from(
    model: EmbeddedDenoiser, init_from: Path, old: EmbeddedTokenizer, new: EmbeddedTokenizer, run: Path, *,
    fresh: Sequence[str] = (), seed: int = 0,
) -> None:
    """Load ``init_from``'s weights (`load_init_weights`) into ``model``, the embedding grown from the
    ``old`` tokenizer to the run's ``new`` one when that is larger, blocks added when ``model`` is deeper.
    The rows of the ``fresh`` pieces (an objective's special tokens, appended) start ~ N(0, 0.02^2) instead,
    drawn in id order from a generator seeded ``seed + 1``.

    Raises ``ValueError`` when the two tokenizers have the same size but other pieces (the rows would
    mean other tokens).
    """
    weights, init_step = load_init_weights(init_from)
    if fresh:  # the objective's tokens, appended: small random rows (the tied head scores them near 0)
        weight = weights["embed.weight"]
        rows = torch.randn(new.vocab_size - weight.shape[0], weight.shape[1],
                           generator=torch.Generator().manual_seed(seed + 1)) * 0.02
        weights["embed.weight"] = torch.cat([weight, rows])
        log.info("vocabulary grown %d -> %d by %s", old.vocab_size, new.vocab_size, list(fresh))
    elif old.vocab_size != new.vocab_size:  # a larger vocabulary grown from the old one
        weights["embed.weight"] = grow_embedding(weights["embed.weight"], old, new)
        log.info("vocabulary grown %d -> %d", old.vocab_size, new.vocab_size)
    elif old.get_vocab() != new.get_vocab():  # same size, other pieces: rows would mean other tokens
        raise ValueError(f"init_from={init_from}: its tokenizer and {run / 'tokenizer.json'} have the same size "
                         f"but other pieces; copy {init_folder(init_from) / 'tokenizer.json'} into the run before "
                         "tokenizing")
    blocks, n_layers = n_blocks(weights), model.config.n_layers
    if n_layers > blocks:  # a deeper model grown from the old one, same function at the start
        weights = grow_depth(weights, n_layers)
        log.info("depth grown %d -> %d blocks", blocks, n_layers)
    model.load_state_dict(weights)
    log.info("initialised from %s (step %d)", init_from, init_step)
