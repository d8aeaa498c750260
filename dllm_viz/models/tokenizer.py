"""Byte-level BPE tokenizer of the embedded model (trained with the ``tokenizers`` library)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

# Special tokens take the first ids, in this order; ids are looked up by name, never hard-coded.
PAD, EOS, MASK = "<pad>", "<eos>", "<mask>"
SPECIAL_TOKENS = (PAD, EOS, MASK)


class EmbeddedTokenizer:
    """``encode(text) -> list[int]`` / ``decode(ids) -> str`` over a ``tokenizers.Tokenizer``."""

    def __init__(self, tokenizer: Tokenizer) -> None:
        # Typed text is text: "<pad>" or "<eos>" in a prompt is spelled out in ordinary pieces,
        # never turned into the special id (which the model was never trained to read mid-text).
        # The special ids still come from the names below and decode back to their names.
        tokenizer.encode_special_tokens = True
        self._tok = tokenizer
        ids = {name: tokenizer.token_to_id(name) for name in SPECIAL_TOKENS}
        missing = [name for name, i in ids.items() if i is None]
        if missing:
            raise ValueError(f"tokenizer: special tokens {missing} missing; required {list(SPECIAL_TOKENS)}")
        self.pad_token_id: int = ids[PAD]
        self.eos_token_id: int = ids[EOS]
        self.mask_token_id: int = ids[MASK]
        self.mask_token: str = MASK
        self.vocab_size: int = tokenizer.get_vocab_size()

    @classmethod
    def from_file(cls, path: str | Path) -> EmbeddedTokenizer:
        return cls(Tokenizer.from_file(str(path)))

    @classmethod
    def train(cls, texts: Iterable[str], *, vocab_size: int) -> EmbeddedTokenizer:
        """Train a byte-level BPE with the special tokens first."""
        if not 256 + len(SPECIAL_TOKENS) <= vocab_size <= 65535:
            raise ValueError(f"vocab_size={vocab_size} must be in [{256 + len(SPECIAL_TOKENS)}, 65535]")
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(
            vocab_size=vocab_size,
            special_tokens=list(SPECIAL_TOKENS),
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        )
        tok.train_from_iterator(texts, trainer=trainer)
        return cls(tok)

    def get_vocab(self) -> dict[str, int]:
        """Piece (byte-level alphabet) -> id, special tokens included."""
        return self._tok.get_vocab()

    def piece_ids(self, piece: str) -> list[int]:
        """Ids of one byte-level piece (a vocabulary entry of another tokenizer) split by this BPE."""
        return [t.id for t in self._tok.model.tokenize(piece)]

    def save(self, path: str | Path) -> None:
        self._tok.save(str(path))

    def encode(self, text: str) -> list[int]:
        """Ids of `text`; special-token names in it are encoded as the characters they are."""
        return self._tok.encode(text).ids

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = False) -> str:
        """Text of ``ids``; special tokens (``<mask>``) are shown unless skipped."""
        return self._tok.decode(list(map(int, ids)), skip_special_tokens=skip_special_tokens)

    def __len__(self) -> int:
        return self.vocab_size
