"""Adapters that turn local Hugging Face checkpoints into denoisers (see `base.Denoiser`).

One adapter per convention, kept in the `ADAPTERS` registry and picked from `config.json`:

- `masked_lm`: any `AutoModelForMaskedLM` (BERT, RoBERTa, ModernBERT and the diffusion chat models
  fine-tuned from it). Logits at i predict token i; the mask id is the tokenizer's mask token.
- `llada`: LLaDA (Nie et al. 2025, arXiv:2502.09992), custom code (`trust_remote_code`). Logits at i
  predict token i; the mask id comes from `config.mask_token_id` or the tokenizer. Some releases of
  its modeling file turn attention *causal* as soon as an attention mask is passed (or ignore it), so
  the adapter probes once at load time and, if the mask is not honoured, runs each group of equally
  long rows on its own, unpadded (exact, one forward per distinct length).
- `dream`: Dream (Ye et al. 2025), custom code, initialised from an autoregressive model, so its logits
  at i predict token i + 1. The adapter shifts them back (`unshift_logits`) so that every adapter
  keeps the decoder's convention: logits at i predict token i.

Every adapter returns float32 logits: confidence is a softmax over the whole vocabulary, and bf16
would round away the differences the schedule ranks by. `load_hf` reads local files only (every
`from_pretrained` gets `local_files_only=True`); a Hub id is put in the Hugging Face cache first by
`dllm_viz.models.hub`. A masked LM's special tokens other than end-of-text ([CLS], [SEP], [UNK],
[PAD], [MASK]) get `NEVER_LOGIT`: an encoder ranks them high at the edges of a canvas, and they are
never text.
"""
from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Any, ClassVar

import torch
import transformers
from torch import nn
from transformers import AutoModel, AutoModelForMaskedLM, AutoTokenizer
from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES
from transformers.models.auto.modeling_auto import MODEL_FOR_MASKED_LM_MAPPING_NAMES

from dllm_viz.models.base import NEVER_LOGIT, check_inputs, read_config

log = logging.getLogger(__name__)

# A checkpoint has a tokenizer when one of these files sits next to config.json.
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "vocab.json", "tokenizer.model")

# LLaDA's reserved mask token, looked up by name in the tokenizer when the config gives no id.
LLADA_MASK_TOKEN = "<|mdm_mask|>"

# Relative logit error under which the padding probe counts the attention mask as honoured.
PROBE_TOLERANCE: dict[torch.dtype, float] = {torch.float32: 1e-3, torch.bfloat16: 3e-2, torch.float16: 1e-2}


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
        self._special_texts = {*hf.all_special_tokens, *(t.content for t in added.values() if getattr(t, "special", False))}

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


def _first_int(*candidates: Any) -> int | None:
    """The first candidate that is a token id; a list (several EOS ids) gives its first entry."""
    for value in candidates:
        if isinstance(value, (list, tuple)) and value:
            value = value[0]
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
    return None


def _all_ints(*candidates: Any) -> tuple[int, ...]:
    """Every token id among the candidates (lists flattened), first occurrence first."""
    out: list[int] = []
    for value in candidates:
        for item in value if isinstance(value, (list, tuple)) else [value]:
            if isinstance(item, int) and not isinstance(item, bool) and item >= 0 and item not in out:
                out.append(item)
    return tuple(out)


def _config_int(config: Any, keys: Iterable[str]) -> int | None:
    return _first_int(*(getattr(config, key, None) for key in keys))


def unshift_logits(logits: torch.Tensor) -> torch.Tensor:
    """Re-align next-token logits (i predicts i + 1) to the decoder's convention (i predicts i).

    The logits for token i are the model's output at i - 1. Position 0 has no predecessor and copies
    position 0's output, as Dream's own sampler does; it is always a prompt position anyway.
    """
    return torch.cat([logits[:, :1], logits[:, :-1]], dim=1)  # (B, N, V)


class HFDenoiser(nn.Module):
    """Base adapter: validates a call, moves it to the model's device, returns float32 logits.

    Subclasses set `kind`, say which configs they `match`, how to find the mask id, and implement
    `_logits(input_ids, attention_mask)`; `attention_mask` reaches them only when a row is padded.
    """

    kind: ClassVar[str] = ""
    auto_class: ClassVar[Any] = AutoModel
    max_length_keys: ClassVar[tuple[str, ...]] = ("max_position_embeddings",)
    # Whether a generated padding token ends the text too (instruction-tuned diffusion models pad the
    # unused tail of the canvas, e.g. Dream with <|endoftext|> beside its <|im_end|>).
    padding_ends_text: ClassVar[bool] = True
    # No approximate key-value cache (issue 31; `base.check_cache` reads this): the adapters run the
    # checkpoint's own modeling code, whose forward takes a whole canvas.
    cache_note: ClassVar[str] = (
        "Hugging Face checkpoints run their own modeling code, which offers no forward over a window of the "
        "canvas against cached keys (Fast-dLLM ships modified modeling files for LLaDA and Dream to get one)"
    )

    def __init__(
        self,
        model: nn.Module,
        *,
        mask_token_id: int,
        tokenizer: HFTokenizer | None = None,
        name: str = "",
        max_length: int | None = None,
        eos_token_id: int | None = None,
        pad_token_id: int | None = None,
        vocab_size: int | None = None,
        end_of_text_ids: tuple[int, ...] | None = None,
    ) -> None:
        super().__init__()
        self.model = model.eval()
        self.mask_token_id = mask_token_id
        self.tokenizer = tokenizer
        self.name = name or type(model).__name__
        self.max_length = max_length
        self.eos_token_id = eos_token_id
        # Every id that ends a text (EOS first): the text is cut at the first, the early stop fills with them.
        self.end_of_text_ids: tuple[int, ...] = (
            end_of_text_ids if end_of_text_ids is not None else _all_ints(eos_token_id)
        )
        self.pad_token_id = pad_token_id
        # Ids the tokenizer can write. Checkpoints round their output matrix up for speed (LLaDA has 126464
        # rows, Qwen-based Dream 152064): rows past the tokenizer's tokens are never drawn.
        self.vocab_size = vocab_size
        # Ids that are never drawn into a text (a masked LM's [CLS], [SEP], [PAD], ...): NEVER_LOGIT.
        self.never_token_ids: tuple[int, ...] = ()

    # --- which checkpoints, and what to read from them -------------------------------------------

    @classmethod
    def matches(cls, config: dict[str, Any]) -> bool:
        """Whether a raw config.json dict follows this adapter's convention."""
        raise NotImplementedError

    @classmethod
    def find_mask_token_id(cls, config: Any, tokenizer: HFTokenizer | None) -> int | None:
        hf = tokenizer.hf if tokenizer is not None else None
        return _first_int(getattr(config, "mask_token_id", None), getattr(hf, "mask_token_id", None))

    @classmethod
    def context_limit(cls, model: nn.Module, tokenizer: HFTokenizer | None) -> int | None:
        """The longest input the checkpoint accepts, from its config (and the tokenizer's own cap)."""
        limit = _config_int(model.config, cls.max_length_keys)
        tokenizer_cap = getattr(tokenizer.hf, "model_max_length", None) if tokenizer is not None else None
        # Tokenizers without a stated limit report a huge sentinel (int(1e30)); ignore those.
        if isinstance(tokenizer_cap, int) and 0 < tokenizer_cap < 10**9:
            limit = tokenizer_cap if limit is None else min(limit, tokenizer_cap)
        return limit

    @classmethod
    def from_loaded(cls, model: nn.Module, tokenizer: HFTokenizer | None, *, name: str) -> HFDenoiser:
        """Wrap a loaded model; ValueError when no mask token id can be found."""
        config = model.config
        mask_id = cls.find_mask_token_id(config, tokenizer)
        if mask_id is None:
            raise ValueError(
                f"mask_token_id=None is invalid for {name!r} ({cls.kind}): expected a mask token in the "
                "config (mask_token_id) or the tokenizer (mask_token)"
            )
        hf = tokenizer.hf if tokenizer is not None else None
        # The tokenizer first: config ids are often template defaults. A BERT-style encoder without
        # an EOS has no end-of-text token: its [SEP] separates segments and is never drawn.
        eos = _first_int(getattr(hf, "eos_token_id", None), getattr(config, "eos_token_id", None))
        pad = _first_int(getattr(hf, "pad_token_id", None), getattr(config, "pad_token_id", None))
        generation = getattr(model, "generation_config", None)
        ends = _all_ints(eos, getattr(config, "eos_token_id", None), getattr(generation, "eos_token_id", None),
                         pad if cls.padding_ends_text else None)
        return cls(
            model,
            mask_token_id=mask_id,
            tokenizer=tokenizer,
            name=name,
            max_length=cls.context_limit(model, tokenizer),
            eos_token_id=eos,
            pad_token_id=pad,
            vocab_size=len(tokenizer) if tokenizer is not None else None,
            end_of_text_ids=tuple(i for i in ends if i != mask_id),
        )

    # --- the call --------------------------------------------------------------------------------

    @property
    def device(self) -> torch.device:
        """Where inputs go: the input embeddings' device (the first shard under a device_map)."""
        embeddings = self.model.get_input_embeddings() if hasattr(self.model, "get_input_embeddings") else None
        if embeddings is not None:
            return embeddings.weight.device
        return next(self.model.parameters()).device

    @torch.no_grad()
    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        """input_ids (B, N), attention_mask (B, N) bool right-padded -> float32 logits (B, N, V)."""
        check_inputs(input_ids, attention_mask, max_length=self.max_length)
        ids = input_ids.to(self.device, torch.long)
        mask = None
        if attention_mask is not None and not bool(attention_mask.all()):
            mask = attention_mask.to(self.device)
        logits = self._logits(ids, mask).float()  # (B, N, V)
        if self.vocab_size is not None and logits.shape[-1] > self.vocab_size:
            logits[..., self.vocab_size :] = NEVER_LOGIT  # padding rows: no token stands for them
        if self.never_token_ids:
            logits[..., torch.tensor(self.never_token_ids, device=logits.device)] = NEVER_LOGIT
        return logits

    def _logits(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
        raise NotImplementedError

    def extra_repr(self) -> str:
        return (
            f"kind={self.kind!r}, name={self.name!r}, mask_token_id={self.mask_token_id}, "
            f"max_length={self.max_length}"
        )


def _architectures(config: dict[str, Any]) -> list[str]:
    return [a for a in config.get("architectures") or [] if isinstance(a, str)]


class MaskedLMDenoiser(HFDenoiser):
    """Any `AutoModelForMaskedLM`: one bidirectional forward, logits at i predict token i."""

    kind = "masked_lm"
    auto_class = AutoModelForMaskedLM
    padding_ends_text = False  # [PAD] is a special token, never drawn (see from_loaded)

    @classmethod
    def matches(cls, config: dict[str, Any]) -> bool:
        architectures = _architectures(config)
        if architectures:
            return any(a.endswith("ForMaskedLM") for a in architectures)
        return config.get("model_type") in MODEL_FOR_MASKED_LM_MAPPING_NAMES

    @classmethod
    def from_loaded(cls, model: nn.Module, tokenizer: HFTokenizer | None, *, name: str) -> HFDenoiser:
        """The adapter, with every special token of the tokenizer but end-of-text never drawn."""
        adapter = super().from_loaded(model, tokenizer, name=name)
        if tokenizer is not None:
            rows = _config_int(model.config, ("vocab_size",))  # the logits' width
            special = set(tokenizer.hf.all_special_ids) - set(adapter.end_of_text_ids)
            adapter.never_token_ids = tuple(sorted(i for i in special if rows is None or 0 <= i < rows))
        return adapter

    @classmethod
    def find_mask_token_id(cls, config: Any, tokenizer: HFTokenizer | None) -> int | None:
        # The tokenizer owns [MASK] for encoders; configs rarely name it.
        hf = tokenizer.hf if tokenizer is not None else None
        return _first_int(getattr(hf, "mask_token_id", None), getattr(config, "mask_token_id", None))

    @classmethod
    def context_limit(cls, model: nn.Module, tokenizer: HFTokenizer | None) -> int | None:
        limit = super().context_limit(model, tokenizer)
        # RoBERTa-family position ids start after the padding index, so that many rows of the
        # position table can never be used by real tokens.
        for module_name, module in model.named_modules():
            if (
                module_name.endswith("position_embeddings")
                and isinstance(module, nn.Embedding)
                and module.padding_idx is not None
                and limit is not None
            ):
                return min(limit, module.num_embeddings - module.padding_idx - 1)
        return limit

    def _logits(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
        mask = None if attention_mask is None else attention_mask.long()
        return self.model(input_ids=input_ids, attention_mask=mask).logits  # (B, N, V)


def is_out_of_memory(err: BaseException) -> bool:
    """A failed allocation: torch's OutOfMemoryError (CUDA, MPS) or the CPU allocator's RuntimeError."""
    text = str(err).lower()
    return isinstance(err, torch.OutOfMemoryError) or "out of memory" in text or "can't allocate memory" in text


class LLaDADenoiser(HFDenoiser):
    """LLaDA: a bidirectional Llama-style mask predictor; logits at i predict token i.

    `padding` says how padded batches are run: "mask" passes the attention mask to the model,
    "split" runs each group of equally long rows unpadded. `from_loaded` chooses by `probe_padding`.
    """

    kind = "llada"
    max_length_keys = ("max_sequence_length", "max_position_embeddings")
    PADDING_MODES: ClassVar[tuple[str, ...]] = ("mask", "split")
    MODEL_TYPES: ClassVar[tuple[str, ...]] = ("llada", "lladamoe")
    ARCHITECTURES: ClassVar[tuple[str, ...]] = ("LLaDAModelLM", "LLaDAMoEModelLM")

    def __init__(self, model: nn.Module, *, padding: str = "split", **kwargs: Any) -> None:
        super().__init__(model, **kwargs)
        if padding not in self.PADDING_MODES:
            raise ValueError(f"padding={padding!r} is invalid: expected one of {' | '.join(self.PADDING_MODES)}")
        self.padding = padding

    @classmethod
    def matches(cls, config: dict[str, Any]) -> bool:
        architectures = _architectures(config)
        return config.get("model_type") in cls.MODEL_TYPES or any(a in cls.ARCHITECTURES for a in architectures)

    @classmethod
    def find_mask_token_id(cls, config: Any, tokenizer: HFTokenizer | None) -> int | None:
        found = super().find_mask_token_id(config, tokenizer)
        if found is None and tokenizer is not None:
            vocab = tokenizer.hf.get_vocab()
            found = vocab.get(LLADA_MASK_TOKEN)
        return found

    @classmethod
    def from_loaded(cls, model: nn.Module, tokenizer: HFTokenizer | None, *, name: str) -> HFDenoiser:
        adapter = super().from_loaded(model, tokenizer, name=name)
        adapter.padding = "mask" if adapter.probe_padding() else "split"
        return adapter

    @torch.no_grad()
    def probe_padding(self) -> bool:
        """Whether the model's attention mask makes a padded row equal to the same row unpadded.

        Runs three tokens alone and then with one padded token after them. An ignored mask lets the
        pad token change the three; a mask that switches attention to causal (as in some releases)
        changes them too. A TypeError, ValueError or RuntimeError from the masked call (remote code
        that takes no mask, or one of another shape) also counts as "not honoured". Either way the
        fallback to split mode (slower: one forward per row length) is logged with its reason. Out of
        memory is not a verdict on the mask: it is raised, never read as "split".
        """
        vocab = self.model.get_input_embeddings().num_embeddings
        ids = (torch.arange(4, device=self.device) * (vocab // 4)).unsqueeze(0)  # (1, 4) spread over the vocab
        mask = torch.tensor([[1, 1, 1, 0]], device=self.device)  # (1, 4) the last token is padding
        reference = self.model(ids[:, :3]).logits.float()  # (1, 3, V)
        try:
            padded = self.model(ids, attention_mask=mask).logits[:, :3].float()  # (1, 3, V)
        except (TypeError, ValueError, RuntimeError) as err:
            if is_out_of_memory(err):
                raise
            log.warning("%s: the attention-mask probe failed (%s: %s); padded batches run in split mode "
                        "(one forward per row length)", self.name, type(err).__name__, " ".join(str(err).split()))
            return False
        dtype = next(self.model.parameters()).dtype
        scale = reference.abs().max().clamp_min(torch.finfo(torch.float32).tiny)
        error = float((padded - reference).abs().max() / scale)
        tolerance = PROBE_TOLERANCE.get(dtype, max(PROBE_TOLERANCE.values()))
        if error > tolerance:
            log.warning("%s does not honour its attention mask (padding changes a row's logits by %.3g, tolerance "
                        "%g); padded batches run in split mode (one forward per row length)", self.name, error, tolerance)
        return error <= tolerance

    def _logits(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
        if attention_mask is None:
            return self.model(input_ids).logits  # (B, N, V)
        if self.padding == "mask":
            return self.model(input_ids, attention_mask=attention_mask.long()).logits
        # One forward per distinct row length, each group cut to its length: no padding at all.
        lengths = attention_mask.sum(dim=1)  # (B,)
        logits = None
        for length in lengths.unique().tolist():
            if length == 0:
                continue
            rows = (lengths == length).nonzero().squeeze(1)  # (b,)
            part = self.model(input_ids[rows, :length]).logits  # (b, length, V)
            if logits is None:
                logits = part.new_zeros(*input_ids.shape, part.shape[-1])  # (B, N, V) zeros at padding
            logits[rows, :length] = part
        return logits if logits is not None else self.model(input_ids).logits


class DreamDenoiser(HFDenoiser):
    """Dream: a bidirectional Qwen2-style model whose logits at i predict token i + 1 (undone here)."""

    kind = "dream"
    MODEL_TYPES: ClassVar[tuple[str, ...]] = ("dream",)
    ARCHITECTURES: ClassVar[tuple[str, ...]] = ("DreamModel",)

    @classmethod
    def matches(cls, config: dict[str, Any]) -> bool:
        model_type = str(config.get("model_type", "")).lower()
        return model_type in cls.MODEL_TYPES or any(a in cls.ARCHITECTURES for a in _architectures(config))

    def _logits(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
        if attention_mask is None:
            raw = self.model(input_ids).logits  # (B, N, V)
        else:
            batch, length = input_ids.shape
            # Dream takes a (B, 1, N, N) bool mask, True where a query may attend to a key. Every query,
            # padded ones included, sees exactly the real keys: a query that sees nothing would turn
            # attention into NaN. Right padding keeps Dream's default positions 0..N-1 correct.
            pairs = attention_mask[:, None, None, :].expand(batch, 1, length, length)  # (B, 1, N, N)
            raw = self.model(input_ids, attention_mask=pairs).logits
        return unshift_logits(raw)


# Detection tries these in order: the specific conventions first, the generic masked LM last.
ADAPTERS: dict[str, type[HFDenoiser]] = {cls.kind: cls for cls in (LLaDADenoiser, DreamDenoiser, MaskedLMDenoiser)}
KINDS: tuple[str, ...] = ("auto", *ADAPTERS)


def detect_kind(config: dict[str, Any]) -> str:
    """The name of the first adapter in `ADAPTERS` whose convention the config follows."""
    for kind, adapter in ADAPTERS.items():
        if adapter.matches(config):
            return kind
    raise ValueError(
        f"model_type={config.get('model_type')!r} (architectures={_architectures(config)}) is not recognised: "
        f"pass kind= one of {' | '.join(ADAPTERS)}"
    )


def needs_remote_code(config: dict[str, Any]) -> bool:
    """Whether loading runs modeling code shipped with the checkpoint (auto_map, type unknown here)."""
    return bool(config.get("auto_map")) and config.get("model_type") not in CONFIG_MAPPING_NAMES


def model_class(config: dict[str, Any], adapter: type[HFDenoiser]) -> Any:
    """The class that loads the checkpoint with its head, for the adapter chosen.

    Custom code: the adapter's Auto class when the checkpoint's auto_map has it, else another Auto
    class it maps. Built-in models: the class named in `architectures` (the one the weights were
    saved from, so a forced `kind` still gets its LM head), else the adapter's Auto class.
    """
    if needs_remote_code(config):
        auto_map = config["auto_map"]
        for name in (adapter.auto_class.__name__, "AutoModel", "AutoModelForMaskedLM", "AutoModelForCausalLM"):
            if name in auto_map:
                return getattr(transformers, name)
        raise ValueError(f"auto_map={auto_map!r} is invalid: expected an AutoModel entry for the modeling code")
    architectures = _architectures(config)
    found = getattr(transformers, architectures[0], None) if architectures else None
    return found if found is not None else adapter.auto_class


def load_hf(
    path: Path,
    *,
    device: torch.device | None,
    dtype: torch.dtype,
    kind: str = "auto",
    device_map: str | dict[str, Any] | None = None,
    trust_remote_code: bool = False,
    chat: bool = False,
    name: str | None = None,
) -> HFDenoiser:
    """Load a local checkpoint directory into the adapter for its convention (see module doc).

    `name` is what traces record (default: the folder's name); a Hub snapshot passes "org/name@<commit>".
    """
    if kind not in KINDS:
        raise ValueError(f"kind={kind!r} is invalid: expected one of {' | '.join(KINDS)}")
    config = read_config(path)
    adapter = ADAPTERS[detect_kind(config) if kind == "auto" else kind]
    if needs_remote_code(config) and not trust_remote_code:
        raise ValueError(
            f"trust_remote_code=False is invalid for {str(path)!r}: its config.json maps model_type="
            f"{config.get('model_type')!r} to modeling code in the checkpoint; "
            "read it, then pass trust_remote_code=True"
        )
    common = {"local_files_only": True, "trust_remote_code": trust_remote_code}
    tokenizer = None
    if any((path / name).is_file() for name in TOKENIZER_FILES):
        tokenizer = HFTokenizer(AutoTokenizer.from_pretrained(path, **common), chat=chat)
    elif chat:
        raise ValueError(
            f"chat=True is invalid for {str(path)!r}: it has no tokenizer files ({', '.join(TOKENIZER_FILES)})"
        )
    placement = {"device_map": device_map} if device_map is not None else {}
    model = model_class(config, adapter).from_pretrained(path, dtype=dtype, **placement, **common)
    if device_map is None:
        model.to(device)
    return adapter.from_loaded(model, tokenizer, name=name or path.resolve().name)
