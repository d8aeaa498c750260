"""DiffusionGemma behind the `Renoiser` protocol: transformers' native `DiffusionGemmaForBlockDiffusion`.

DiffusionGemma (Google DeepMind, 2026) is a block-autoregressive, uniform-noise ("renoising")
diffusion LM on Gemma 4's mixture-of-experts backbone: an autoregressive encoder caches the context,
a bidirectional decoder denoises a canvas of `config.canvas_length` tokens against that cache. The
class ships in transformers itself (5.24: `transformers/models/diffusion_gemma/`), so loading needs
no `trust_remote_code`.

Checkpoints on the Hugging Face Hub:
- `google/diffusiongemma-26B-A4B-it`: the released model (instruction-tuned; 25.2B parameters,
  3.8B active, 30 layers, canvas 256, vocabulary 262,144; Apache 2.0; bf16 weights about 52 GB).
  The model class's docstring and `auto_docstring(checkpoint=...)` in transformers name it.
- `hf-tiny-v2/tiny-random-DiffusionGemmaModel`: random weights from transformers' tiny-model bot
  (for smoke tests of the loading path; its output is noise).

Each call below repeats, with the same arguments, what `DiffusionGemmaGenerationMixin.generate`
(`generation_diffusion_gemma.py`) does, so the logits are the bits `generate()` sees:
- `encode` is generate's step 1.a (`_prepare_encoder_inputs`: the masks from
  `encoder.create_masks_for_generate`, then `model.model.encoder`) followed by the mask half of
  1.b (`_prepare_denoiser_inputs`: `decoder.create_diffusion_decoder_attention_mask`), and the
  bookkeeping of 1.f (`_prepare_kwargs_for_next_canvas`: masks padded by a canvas, positions moved);
- `denoise` is 1.c.i (`_denoising_step`: `self.forward` with the canvas, the self-conditioning
  logits in the embedding dtype, the masks, the cache and the canvas positions).
The cache is a `DynamicCache` over the text config, as `_prepare_cache_for_generation` makes it.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from torch.nn import functional as F

from dllm_viz.models.base import TextTokenizer
from dllm_viz.models.renoiser import RenoiseContext

KIND = "diffusion_gemma"  # `load_model(kind=...)` and the config.json model_type it detects
MODEL_TYPE = "diffusion_gemma"
ARCHITECTURE = "DiffusionGemmaForBlockDiffusion"
HUB_IDS = ("google/diffusiongemma-26B-A4B-it",)  # the released checkpoint(s)
TINY_HUB_ID = "hf-tiny-v2/tiny-random-DiffusionGemmaModel"  # random weights, for loading smoke tests
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model")


def is_diffusion_gemma(config: dict[str, Any]) -> bool:
    """Whether a raw config.json is a DiffusionGemma checkpoint (model_type or architecture)."""
    architectures = [a for a in config.get("architectures") or [] if isinstance(a, str)]
    return config.get("model_type") == MODEL_TYPE or ARCHITECTURE in architectures


class DiffusionGemmaRenoiser:
    """A loaded `DiffusionGemmaForBlockDiffusion` as a `Renoiser` (see module doc)."""

    kind = KIND

    def __init__(self, model: Any, *, tokenizer: TextTokenizer | None = None, name: str = "") -> None:
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.name = name or type(model).__name__
        self.vocab_size: int = int(model.config.text_config.vocab_size)
        self.canvas_length: int = int(model.config.canvas_length)
        self.max_length: int | None = getattr(model.config.text_config, "max_position_embeddings", None)

    @property
    def device(self) -> torch.device:
        return self.model.get_input_embeddings().weight.device

    def generation_defaults(self) -> dict[str, Any]:
        """The generation settings `generate()` would use, by `RenoiseSettings` name: the
        checkpoint's generation_config.json where it sets them, else transformers' global defaults
        (`DiffusionGemmaGenerationConfig._get_default_generation_params`). eos/pad come from the
        generation config only, as in `generate()` (None there: no end-of-text stop)."""
        config = self.model.generation_config
        defaults = type(config)._get_default_generation_params()
        sampler = getattr(config, "sampler_config", None) or defaults["sampler_config"]
        out = {name: getattr(config, name, None) for name in (
            "max_new_tokens", "max_denoising_steps", "t_min", "t_max", "stability_threshold", "confidence_threshold")}
        out = {k: (defaults[k] if v is None else v) for k, v in out.items()}
        out["entropy_bound"] = sampler.entropy_bound
        out["eos_token_id"] = getattr(config, "eos_token_id", None)
        out["pad_token_id"] = getattr(config, "pad_token_id", None)
        return out

    @torch.no_grad()
    def encode(self, ids: torch.Tensor, attention: torch.Tensor, context: RenoiseContext | None, *,
               canvas_length: int) -> RenoiseContext:
        """Read `ids (B, n)` into the cache after `context` (None: a new cache, `ids` the prompt)."""
        from transformers import DynamicCache

        rows, width = ids.shape
        device = self.device
        if context is None:
            cache = DynamicCache(config=self.model.config.get_text_config(decoder=True))
            seen, start = torch.zeros(rows, 0, dtype=torch.bool, device=device), 0
        else:
            cache, seen, start = context.cache, context.attention, context.length
        full = torch.cat([seen, attention.to(device, torch.bool)], dim=1)  # (B, T + n)
        positions = torch.arange(start, start + width, dtype=torch.int32, device=device).unsqueeze(0)  # (1, n)
        encoder = self.model.model.encoder
        shape_only = torch.empty((rows, width, 0), dtype=self.model.dtype, device=device)
        masks = encoder.create_masks_for_generate(config=self.model.config, inputs_embeds=shape_only,
                                                  attention_mask=full, cache=cache, position_ids=positions,
                                                  mm_token_type_ids=None)
        encoder(input_ids=ids.to(device).clone(memory_format=torch.contiguous_format), attention_mask=masks,
                cache=cache, position_ids=positions)
        return self._with_masks(RenoiseContext(cache=cache, attention=full, length=start + width,
                                               canvas_length=canvas_length))

    def _with_masks(self, context: RenoiseContext) -> RenoiseContext:
        """The decoder's masks for a canvas after `context` (`_prepare_denoiser_inputs`)."""
        rows, length = context.rows, context.canvas_length
        decoder_mask = F.pad(context.attention, (0, length), value=True)  # (B, T + L)
        shape_only = torch.empty((rows, length, 1), dtype=torch.long, device=self.device)  # canvas.unsqueeze(-1)
        masks = self.model.model.decoder.create_diffusion_decoder_attention_mask(
            config=self.model.config, inputs_embeds=shape_only, cache=context.cache,
            decoder_attention_mask=decoder_mask)
        return RenoiseContext(cache=context.cache, attention=context.attention, length=context.length,
                              canvas_length=length, masks=masks)

    @torch.no_grad()
    def denoise(self, canvas: torch.Tensor, context: RenoiseContext,
                self_conditioning: torch.Tensor | None) -> torch.Tensor:
        """Raw float32 logits `(B, L, V)` of the decoder on `canvas (B, L)` after `context`."""
        if context.masks is None:
            raise ValueError("context is invalid: it was narrowed by select(); encode() the next canvas first")
        if canvas.shape != (context.rows, context.canvas_length):
            raise ValueError(f"canvas with shape {tuple(canvas.shape)} is invalid: expected "
                             f"{(context.rows, context.canvas_length)}")
        device = self.device
        start = context.length
        positions = torch.arange(start, start + context.canvas_length, dtype=torch.int32, device=device).unsqueeze(0)
        if self_conditioning is not None:
            self_conditioning = self_conditioning.to(self.model.model.decoder.embed_tokens.weight.dtype)
        out = self.model(decoder_input_ids=canvas.to(device), self_conditioning_logits=self_conditioning,
                         decoder_attention_mask=context.masks, cache=context.cache, decoder_position_ids=positions)
        return out.logits  # (B, L, V) float32 after the soft-capping

    def select(self, context: RenoiseContext, rows: torch.Tensor) -> RenoiseContext:
        """Keep `rows` of the batch (the cache's rows too, in place)."""
        rows = rows.to(self.device, torch.long)
        context.cache.batch_select_indices(rows)
        return RenoiseContext(cache=context.cache, attention=context.attention[rows], length=context.length,
                              canvas_length=context.canvas_length)

    def __repr__(self) -> str:
        return (f"DiffusionGemmaRenoiser(name={self.name!r}, canvas_length={self.canvas_length}, "
                f"vocab={self.vocab_size})")


def load_diffusion_gemma(
    path: Path, *, device: torch.device | None, dtype: torch.dtype, device_map: str | dict[str, Any] | None = None,
    chat: bool = False, name: str | None = None,
) -> DiffusionGemmaRenoiser:
    """Load a local DiffusionGemma checkpoint directory (local files only; a Hub id reaches here as
    its snapshot in the Hugging Face cache, `models.hub`). Its generation_config.json, when present,
    becomes `generation_defaults()`, as `from_pretrained` gives it to `generate()`."""
    from transformers import AutoTokenizer, DiffusionGemmaForBlockDiffusion

    from dllm_viz.models.hf import HFTokenizer

    tokenizer = None
    if any((path / file).is_file() for file in TOKENIZER_FILES):
        tokenizer = HFTokenizer(AutoTokenizer.from_pretrained(path, local_files_only=True), chat=chat)
    elif chat:
        raise ValueError(f"chat=True is invalid for {str(path)!r}: it has no tokenizer files "
                         f"({', '.join(TOKENIZER_FILES)})")
    placement = {"device_map": device_map} if device_map is not None else {}
    model = DiffusionGemmaForBlockDiffusion.from_pretrained(path, dtype=dtype, local_files_only=True, **placement)
    if device_map is None:
        model.to(device)
    return DiffusionGemmaRenoiser(model, tokenizer=tokenizer, name=name or path.resolve().name)
