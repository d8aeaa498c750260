"""A tiny `DiffusionGemmaForBlockDiffusion` (transformers' own class) and a recorder of its `generate()`.

The tiny config: hidden size 64, two layers (one sliding-window, one full attention), two experts,
a one-layer vision tower, a vocabulary of 256 ids; about 0.2M parameters, so `generate()` runs a
step in a few milliseconds on a CPU. `sharpness` scales the tied embedding (and so the logits):
at 1 every position's entropy is near log(256) (one token accepted per step, the stop never fires);
at 12 the entropies spread from 0 to 3 nats, acceptance varies and the stop rule fires.

`record_generate` runs transformers' `generate()` unchanged and records its per-step states by
handing it recording subclasses of its own sampler and stopping criteria (instance attributes of
the model object, removed afterwards); transformers' code is not edited.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import torch
from tokenizers import Tokenizer, models, pre_tokenizers, processors
from transformers import DiffusionGemmaConfig, DiffusionGemmaForBlockDiffusion, PreTrainedTokenizerFast
from transformers.models.diffusion_gemma.generation_diffusion_gemma import (
    EntropyBoundSampler,
    StableAndConfidentStoppingCriteria,
)

VOCAB = 256
WORDS = ["<pad>", "<eos>", "<bos>", *"the cat sat on a mat and dog ran far away to see big red sun".split()]
TEXT = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=2,
            num_key_value_heads=1, head_dim=32, global_head_dim=32, num_experts=2, top_k_experts=1,
            moe_intermediate_size=64, layer_types=["sliding_attention", "full_attention"], sliding_window=16,
            max_position_embeddings=512, pad_token_id=0, eos_token_id=1, bos_token_id=2)
VISION = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2,
              head_dim=16, position_embedding_size=64)


def tiny_config(canvas_length: int = 8) -> DiffusionGemmaConfig:
    return DiffusionGemmaConfig(text_config=dict(TEXT), vision_config=dict(VISION), canvas_length=canvas_length,
                                image_token_id=VOCAB - 6, boi_token_id=VOCAB - 5, eoi_token_id=VOCAB - 4)


def tiny_model(*, sharpness: float = 12.0, seed: int = 0, canvas_length: int = 8) -> DiffusionGemmaForBlockDiffusion:
    """The tiny model with seeded random weights; the global RNG is left as it was."""
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = DiffusionGemmaForBlockDiffusion(tiny_config(canvas_length)).eval()
    with torch.no_grad():
        model.model.decoder.embed_tokens.weight.mul_(sharpness)  # tied: encoder embedding and LM head too
    return model


def tiny_tokenizer() -> PreTrainedTokenizerFast:
    """A whitespace tokenizer whose 256 ids match the model's vocabulary (<bos> put first)."""
    names = [*WORDS, *(f"t{i}" for i in range(len(WORDS), VOCAB))]
    core = Tokenizer(models.WordLevel({w: i for i, w in enumerate(names)}, unk_token="<pad>"))
    core.pre_tokenizer = pre_tokenizers.Whitespace()
    core.post_processor = processors.TemplateProcessing(single="<bos> $A", special_tokens=[("<bos>", 2)])
    return PreTrainedTokenizerFast(tokenizer_object=core, bos_token="<bos>", eos_token="<eos>", pad_token="<pad>")


GENERATION = {"max_new_tokens": 12, "max_denoising_steps": 5, "sampler_config": {"entropy_bound": 0.7,
              "_cls_name": "EntropyBoundSamplerConfig"}, "t_min": 0.3, "t_max": 1.1, "stability_threshold": 2,
              "confidence_threshold": 0.5, "eos_token_id": [1, 9], "pad_token_id": 0}


def save_tiny(path: Path, *, generation: dict | None = GENERATION, sharpness: float = 12.0) -> None:
    """A checkpoint folder: config.json, weights, tokenizer and (unless None) generation_config.json."""
    tiny_model(sharpness=sharpness).save_pretrained(path)
    tiny_tokenizer().save_pretrained(path)
    generation_file = path / "generation_config.json"
    generation_file.unlink(missing_ok=True)
    if generation is not None:
        generation_file.write_text(json.dumps(generation))


@dataclass
class Recorded:
    """generate()'s states: per canvas, per step (all tensors (B, L) but `stopped` (B,))."""

    canvases: list[list[dict]] = field(default_factory=list)
    sequences: torch.Tensor | None = None
    tokens_per_forward: torch.Tensor | None = None


def _recording_sampler(log: Recorded):
    class Recording(EntropyBoundSampler):
        renoising = False

        def initialize_canvas(self, batch_size, device):
            canvas = super().initialize_canvas(batch_size, device)
            if not self.renoising:  # a new canvas (1.b), not the noise of renoise_canvas
                log.canvases.append([])
            return canvas

        def accept_canvas(self, current_canvas, denoiser_canvas, logits, cur_step):
            accepted = super().accept_canvas(current_canvas, denoiser_canvas, logits, cur_step)
            log.canvases[-1].append({
                "steps_left": int(cur_step), "read": current_canvas.clone(), "proposal": denoiser_canvas.clone(),
                "accepted": self.accepted_token_mask.clone(), "argmax": logits.argmax(-1),
                "entropy": torch.distributions.Categorical(logits=logits).entropy()})
            return accepted

        def renoise_canvas(self, accepted_canvas, cur_step):
            self.renoising = True
            try:
                written = super().renoise_canvas(accepted_canvas, cur_step)
            finally:
                self.renoising = False
            log.canvases[-1][-1]["written"] = written.clone()
            return written

    return Recording


def _recording_stop(log: Recorded):
    class Recording(StableAndConfidentStoppingCriteria):
        def __call__(self, argmax_canvas, logits, **kwargs):
            stop = super().__call__(argmax_canvas, logits, **kwargs)
            log.canvases[-1][-1]["stopped"] = stop.clone()
            log.canvases[-1][-1]["stop_argmax"] = argmax_canvas.clone()
            return stop

    return Recording


def record_generate(model: DiffusionGemmaForBlockDiffusion, input_ids: torch.Tensor, *, seed: int,
                    **kwargs) -> Recorded:
    """`model.generate(input_ids, **kwargs)` after `torch.manual_seed(seed)`, recorded step by step.
    The global RNG state is restored afterwards."""
    log = Recorded()
    make_sampler, make_stop = model._prepare_sampler, model._prepare_diffusion_stopping_criteria

    def sampler(generation_config):
        inner = make_sampler(generation_config)
        recording = _recording_sampler(log)
        out = object.__new__(recording)
        out.__dict__.update(inner.__dict__)
        return out

    def stop(generation_config):
        inner = make_stop(generation_config)
        if inner is None:
            return None
        return _recording_stop(log)(inner.stability_threshold, inner.confidence_threshold)

    model._prepare_sampler, model._prepare_diffusion_stopping_criteria = sampler, stop
    try:
        with torch.random.fork_rng():
            torch.manual_seed(seed)
            out = model.generate(input_ids, **kwargs)
    finally:
        del model._prepare_sampler, model._prepare_diffusion_stopping_criteria
    log.sequences, log.tokens_per_forward = out.sequences, out.tokens_per_forward
    return log
