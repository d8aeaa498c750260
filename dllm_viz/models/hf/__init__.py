"""Adapters that turn local Hugging Face checkpoints into denoisers (see `models.base.Denoiser`).

One adapter per convention, one module each, kept in the `ADAPTERS` registry (`load`) and picked
from `config.json`:

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

Every adapter returns float32 logits (`adapter.HFDenoiser.forward`): confidence is a softmax over the
whole vocabulary, and bf16 would round away the differences the schedule ranks by. `load_hf` reads
local files only (every `from_pretrained` gets `local_files_only=True`); a Hub id is put in the
Hugging Face cache first by `dllm_viz.models.hub`. A masked LM's special tokens other than
end-of-text ([CLS], [SEP], [UNK], [PAD], [MASK]) get `NEVER_LOGIT`: an encoder ranks them high at the
edges of a canvas, and they are never text.

A new convention is one module here (a subclass of `HFDenoiser` with `kind`, `matches` and
`_logits`) plus its place in `load.ADAPTERS`, whose order is the order of detection.
"""
from __future__ import annotations

from dllm_viz.models.hf.adapter import HFDenoiser
from dllm_viz.models.hf.dream import DreamDenoiser, unshift_logits
from dllm_viz.models.hf.llada import LLaDADenoiser
from dllm_viz.models.hf.load import (
    ADAPTERS,
    KINDS,
    TOKENIZER_FILES,
    detect_kind,
    load_hf,
    model_class,
    needs_remote_code,
)
from dllm_viz.models.hf.masked_lm import MaskedLMDenoiser
from dllm_viz.models.hf.tokenizer import HFTokenizer

__all__ = [
    "ADAPTERS",
    "KINDS",
    "TOKENIZER_FILES",
    "DreamDenoiser",
    "HFDenoiser",
    "HFTokenizer",
    "LLaDADenoiser",
    "MaskedLMDenoiser",
    "detect_kind",
    "load_hf",
    "model_class",
    "needs_remote_code",
    "unshift_logits",
]
