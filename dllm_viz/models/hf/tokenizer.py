"""The Hugging Face tokenizer behind the playground's `encode` / `decode` surface (see `HFTokenizer`)."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch


def _leading_special_ids(hf: Any) -> tuple[int, ...]:
    """The special tokens the tokenizer's own template puts before a text ([CLS], <s>, BOS)."""
    probe = "a b"
    plain = hf.encode(probe, add_special_tokens=False)
    full = hf.encode(probe, add_special_tokens=True)
    special = set(hf.all_special_ids)
    for start in range(len(full) - len(plain) + 1):
        if full[start : start + len(plain)] == plain:
            prefix = full[:start]
            return tuple(prefix) if all(i in special for i in prefix) else ()
    return ()


class HFTokenizer:
    """A Hugging Face tokenizer behind the playground's `encode` / `decode` surface.

    `encode` adds only the *leading* special tokens the tokenizer's own template adds ([CLS] for
    BERT, <s> for RoBERTa, BOS for LLaDA), because the models saw them at position 0 in training.
    Trailing ones ([SEP], </s>) are left out: the masked canvas follows the prompt directly.
    With `chat=True` (instruction-tuned checkpoints such as LLaDA-Instruct or Dream-Instruct) the
    prompt becomes one user turn of the tokenizer's own chat template, generation prompt included;
    the template writes its own special tokens. The wrapped tokenizer stays available as `.hf`.
    """

    def __init__(self, hf: Any, *, leading_special: bool = True, chat: bool = False) -> None:
        if chat and not getattr(hf, "chat_template", None):
            raise ValueError(
                f"chat=True is invalid for {getattr(hf, 'name_or_path', 'this tokenizer')!r}: its tokenizer has no "
                "chat_template; expected an instruction-tuned checkpoint, or chat=False"
            )
        self.hf = hf
        self.chat = chat
        self.prefix_ids: tuple[int, ...] = _leading_special_ids(hf) if leading_special and not chat else ()
        added = getattr(hf, "added_tokens_decoder", {}) or {}
        added_special = (t.content for t in added.values() if getattr(t, "special", False))
        self._special_texts = {*hf.all_special_tokens, *added_special}

    def _text_ids(self, text: str) -> list[int]:
        """Ids of what a person typed: special-token names in it ("[CLS]", "<|eot_id|>") stay text."""
        return self.hf.encode(text, add_special_tokens=False, split_special_tokens=True)

    def encode(self, text: str) -> list[int]:
        if not isinstance(text, str):
            raise ValueError(f"text={text!r} is invalid: expected a string")
        if not self.chat:
            return [*self.prefix_ids, *self._text_ids(text)]
        if not any(special in text for special in self._special_texts):
            turn = [{"role": "user", "content": text}]
            rendered = self.hf.apply_chat_template(turn, add_generation_prompt=True, tokenize=False)
            return self.hf.encode(rendered, add_special_tokens=False)
        # The template's own special tokens count, the user's typed ones do not: render around a
        # placeholder and encode the three parts apart.
        marker = "\ue000dllm-viz-prompt\ue000"
        rendered = self.hf.apply_chat_template([{"role": "user", "content": marker}], add_generation_prompt=True,
                                               tokenize=False)
        head, found, tail = rendered.partition(marker)
        if not found:
            raise ValueError("prompt: this checkpoint's chat template does not show the user's text as given, "
                             "so special-token names typed in it cannot be kept as text; remove them")
        return [*self.hf.encode(head, add_special_tokens=False), *self._text_ids(text),
                *self.hf.encode(tail, add_special_tokens=False)]

    def decode(self, ids: Iterable[int] | torch.Tensor, *, skip_special_tokens: bool = False) -> str:
        ids = ids.tolist() if isinstance(ids, torch.Tensor) else list(ids)
        return self.hf.decode(ids, skip_special_tokens=skip_special_tokens)

    def __len__(self) -> int:
        return len(self.hf)
