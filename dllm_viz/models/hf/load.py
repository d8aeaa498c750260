"""Loading a local checkpoint: which adapter its config.json follows (`ADAPTERS`, `detect_kind`), which
class loads its weights (`model_class`), and `load_hf`, which reads local files only."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
import transformers
from transformers import AutoTokenizer
from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

from dllm_viz.models.base import read_config
from dllm_viz.models.hf.adapter import HFDenoiser, architectures_of
from dllm_viz.models.hf.dream import DreamDenoiser
from dllm_viz.models.hf.llada import LLaDADenoiser
from dllm_viz.models.hf.masked_lm import MaskedLMDenoiser
from dllm_viz.models.hf.tokenizer import HFTokenizer

# A checkpoint has a tokenizer when one of these files sits next to config.json.
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "vocab.json", "tokenizer.model")


# Detection tries these in order: the specific conventions first, the generic masked LM last.
ADAPTERS: dict[str, type[HFDenoiser]] = {cls.kind: cls for cls in (LLaDADenoiser, DreamDenoiser, MaskedLMDenoiser)}
KINDS: tuple[str, ...] = ("auto", *ADAPTERS)


def detect_kind(config: dict[str, Any]) -> str:
    """The name of the first adapter in `ADAPTERS` whose convention the config follows."""
    for kind, adapter in ADAPTERS.items():
        if adapter.matches(config):
            return kind
    raise ValueError(
        f"model_type={config.get('model_type')!r} (architectures={architectures_of(config)}) is not recognised: "
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
    names = architectures_of(config)
    found = getattr(transformers, names[0], None) if names else None
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
