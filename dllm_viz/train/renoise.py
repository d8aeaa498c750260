"""A renoising world model in transformers' own ``DiffusionGemmaForBlockDiffusion``: model and objective.

DiffusionGemma's canvases are never masked: ``generate()`` starts a canvas of ``canvas_length`` tokens
from uniformly random ids, and after every step re-draws the positions it did not accept
(``transformers/models/diffusion_gemma/generation_diffusion_gemma.py``, ``EntropyBoundSampler``). A
model for it is trained on the forward process that makes such canvases, uniform-state discrete
diffusion (D3PM's uniform kernel, Austin et al. 2021; UDLM, Schiff et al. 2025), with the recipe
NVIDIA's two DiffusionGemma fine-tuning stacks publish (NeMo AutoModel, ``docs/guides/dllm/
diffusiongemma.md``, ``DiffusionGemmaSFTRecipe``; Megatron-Bridge, ``models/diffusion_gemma/
diffusion_gemma_step.py`` and ``loss.py``, variant ``base-sft``):

1. **Corruption** (``corrupt``): one level ``t ~ U(t_min, 1)`` per row; each canvas token is replaced,
   with probability ``t``, by a token drawn uniformly from the *whole* vocabulary (the draw of
   ``initialize_canvas``, special ids included). There is no mask token.
2. **Blocks** (``sample_blocks``): the clean context goes through the encoder (causal, it writes the
   KV cache), the corrupted canvas of ``canvas_length`` tokens that follows it through the decoder
   (bidirectional over cache and canvas), one canvas per row as in AutoModel's "one canvas per step".
3. **Self-conditioning** (Chen et al. 2023, "Analog Bits"; the two-pass form both stacks
   use): a first decoder pass without gradients, then with probability ``self_cond_p`` per row its
   logits go back in as ``self_conditioning_logits`` of the second pass (``self_conditioning_mask``,
   the argument the model's forward offers for this); the other rows get the zero signal of a first step.
4. **Loss** (``renoise_loss``): the flat mean cross-entropy to the clean token over every canvas
   position, corrupted or not, with no ``1/t`` weight (``base-sft``), plus the encoder's next-token
   cross-entropy on the clean context (AutoModel's ``encoder_loss_weight``, 1.0 by default).

Training calls the model's own ``forward`` (encoder, then decoder reading the encoder's cache), so the
shipped weights run unchanged in ``generate()``. The loop, evaluation and export live in
``renoise_fit.py``; ``MODEL_CARD.md`` of ``dllm_viz/assets/world-renoise`` has the measured recipe.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from transformers import DiffusionGemmaConfig, DiffusionGemmaForBlockDiffusion, DynamicCache

from dllm_viz.models.tokenizer import EmbeddedTokenizer

# The vision tower is part of the architecture (the encoder builds it); a text model ships the smallest one.
TINY_VISION = {"model_type": "gemma4_vision", "hidden_size": 8, "intermediate_size": 16, "num_hidden_layers": 1,
               "num_attention_heads": 1, "num_key_value_heads": 1, "head_dim": 8, "position_embedding_size": 8,
               "patch_size": 2}


@dataclass(frozen=True, kw_only=True)
class RenoiseConfig:
    """One renoise training run; saved in every checkpoint so ``--resume`` continues the same recipe. The
    defaults are the shipped model's (``dllm_viz/assets/world-renoise/train_config.json``)."""

    hidden_size: int = 128  # DiffusionGemmaTextConfig.hidden_size
    n_layers: int = 4  # one stack, shared by encoder and decoder (the model ties them)
    n_heads: int = 4
    n_kv_heads: int = 2
    head_dim: int = 32  # also the full-attention layers' head size (Gemma 4's global_head_dim)
    intermediate_size: int = 256  # the dense MLP beside the experts, and the self-conditioning MLP
    num_experts: int = 2
    top_k_experts: int = 1
    moe_intermediate_size: int = 128
    sliding_window: int = 128  # longer than any context + canvas trained or decoded here
    canvas_length: int = 16  # decoder block; 48 generated tokens = 3 canvases
    max_context: int = 46  # longest clean context (two sentences of the world language)
    batch_size: int = 64  # rows (one canvas each) per step
    steps: int = 10000
    lr: float = 4e-3  # peak AdamW learning rate
    min_lr_ratio: float = 0.05  # cosine floor, as a fraction of lr
    warmup: int = 200
    weight_decay: float = 0.1
    grad_clip: float = 1.0
    t_min: float = 1e-3  # smallest corruption level (AutoModel's dllm.eps)
    self_cond_p: float = 0.5  # share of rows whose second pass reads the first pass's logits
    encoder_loss_weight: float = 1.0  # weight of the encoder's next-token loss on the clean context
    seed: int = 0
    eval_every: int = 500
    eval_windows: int = 128  # held-out blocks per evaluation
    ckpt_every: int = 250

    def __post_init__(self) -> None:
        positive = ("hidden_size", "n_layers", "n_heads", "n_kv_heads", "head_dim", "intermediate_size", "num_experts",
                    "top_k_experts", "moe_intermediate_size", "canvas_length", "max_context", "batch_size", "steps",
                    "eval_every", "eval_windows", "ckpt_every")
        for field in positive:
            if getattr(self, field) < 1:
                raise ValueError(f"{field}={getattr(self, field)} must be >= 1")
        if self.top_k_experts > self.num_experts:
            raise ValueError(f"top_k_experts={self.top_k_experts} must be <= num_experts={self.num_experts}")
        if self.n_heads % self.n_kv_heads:
            raise ValueError(f"n_heads={self.n_heads} must be a multiple of n_kv_heads={self.n_kv_heads}")
        if self.sliding_window < self.max_context + self.canvas_length:
            raise ValueError(f"sliding_window={self.sliding_window} must be >= max_context + canvas_length "
                             f"({self.max_context + self.canvas_length})")
        for field in ("self_cond_p", "min_lr_ratio"):
            if not 0.0 <= getattr(self, field) <= 1.0:
                raise ValueError(f"{field}={getattr(self, field)} must be in [0, 1]")
        if not 0.0 < self.t_min < 1.0:
            raise ValueError(f"t_min={self.t_min} must be in (0, 1)")
        if not 0.0 < self.lr < 1.0:
            raise ValueError(f"lr={self.lr} must be in (0, 1)")
        if self.encoder_loss_weight < 0 or self.warmup < 0:
            raise ValueError(f"encoder_loss_weight={self.encoder_loss_weight} and warmup={self.warmup} must be >= 0")

    def to_dict(self) -> dict:
        return asdict(self)


def model_config(cfg: RenoiseConfig, tokenizer: EmbeddedTokenizer) -> DiffusionGemmaConfig:
    """The ``DiffusionGemmaConfig`` of a run: text stack from ``cfg``, ids from the tokenizer, the tiny vision tower.

    Every layer but the last uses sliding attention (Gemma 4 requires the last to be full); the window is
    longer than any sequence here, so every layer sees the whole context. The image ids keep their
    defaults, outside the vocabulary: ``generate()`` compares prompts with ``image_token_id``, never matched here.
    """
    layers = ["sliding_attention"] * (cfg.n_layers - 1) + ["full_attention"]
    text = {"vocab_size": tokenizer.vocab_size, "hidden_size": cfg.hidden_size,
            "intermediate_size": cfg.intermediate_size, "num_hidden_layers": cfg.n_layers,
            "num_attention_heads": cfg.n_heads, "num_key_value_heads": cfg.n_kv_heads,
            "head_dim": cfg.head_dim, "global_head_dim": cfg.head_dim, "num_global_key_value_heads": cfg.n_kv_heads,
            "layer_types": layers, "sliding_window": cfg.sliding_window,
            "max_position_embeddings": 4 * cfg.sliding_window,
            "num_experts": cfg.num_experts, "top_k_experts": cfg.top_k_experts,
            "moe_intermediate_size": cfg.moe_intermediate_size, "pad_token_id": tokenizer.pad_token_id,
            "eos_token_id": tokenizer.eos_token_id, "bos_token_id": None}
    return DiffusionGemmaConfig(text_config=text, vision_config=dict(TINY_VISION), canvas_length=cfg.canvas_length)


def build_model(cfg: RenoiseConfig, tokenizer: EmbeddedTokenizer) -> DiffusionGemmaForBlockDiffusion:
    """A freshly initialised model, the same for the same ``cfg.seed``. transformers initialises from
    torch's global generator; it is forked here, so the caller's global RNG state is left as it was."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(cfg.seed)
        return DiffusionGemmaForBlockDiffusion(model_config(cfg, tokenizer))


def sentence_starts(tokens: torch.Tensor, newline_id: int, span: int) -> torch.Tensor:
    """Positions ``(S,)`` of a token stream ``(T,)`` where a line starts and ``span`` tokens follow."""
    after = (tokens[:-1] == newline_id).nonzero().squeeze(1) + 1  # (S',)
    starts = torch.cat([torch.zeros(1, dtype=torch.long), after])
    return starts[starts + span <= tokens.numel()]


def sample_blocks(
    tokens: torch.Tensor, starts: torch.Tensor, batch: int, context: int, canvas: int, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """``batch`` rows of a clean context ``(B, context)`` that starts a line, as a prompt does, and the
    ``(B, canvas)`` tokens after it (the clean canvas). ``starts`` from ``sentence_starts(.., context + canvas)``."""
    pick = starts[torch.randint(0, starts.numel(), (batch,), generator=generator)]  # (B,)
    rows = tokens[pick[:, None] + torch.arange(context + canvas)].long()  # (B, context + canvas)
    return rows[:, :context], rows[:, context:]


def sample_t(batch: int, t_min: float, generator: torch.Generator) -> torch.Tensor:
    """Corruption levels ``(B,)`` in ``[t_min, 1)``, stratified: ``(u + i) / B`` for one shared
    ``u ~ U(0, 1)`` (each level is uniform; the batch covers the range evenly), as ``train.stratified_t``."""
    u = torch.rand((), generator=generator)
    t = (u + torch.arange(batch, dtype=torch.float32)) / batch
    return t_min + (1.0 - t_min) * t


def corrupt(x0: torch.Tensor, t: torch.Tensor, vocab_size: int, generator: torch.Generator
            ) -> tuple[torch.Tensor, torch.Tensor]:
    """Uniform-state forward process: each token of ``x0 (B, C)`` is replaced with probability ``t (B,)`` by an
    id drawn uniformly from ``[0, vocab_size)`` (the draw that starts a canvas in ``generate()``, so now and
    then the token itself). Returns ``(xt, replaced)``, both ``(B, C)``."""
    replaced = torch.rand(x0.shape, generator=generator) < t[:, None]  # (B, C)
    noise = torch.randint(0, vocab_size, x0.shape, generator=generator)  # (B, C)
    return torch.where(replaced, noise, x0), replaced


def _softcap(logits: torch.Tensor, cap: float | None) -> torch.Tensor:
    """The output head's tanh soft cap, as ``DiffusionGemmaForBlockDiffusion.forward`` applies it."""
    logits = logits.float()
    return logits if not cap else torch.tanh(logits / cap) * cap


@dataclass(frozen=True)
class RenoiseOutput:
    """One step's forward: the loss and what it was made of."""

    loss: torch.Tensor  # () diffusion + encoder_loss_weight * encoder
    diffusion: torch.Tensor  # () flat mean canvas cross-entropy, nats
    encoder: torch.Tensor  # () next-token cross-entropy on the clean context, nats (0 with weight 0)
    logits: torch.Tensor  # (B, C, V) the second pass's canvas logits


def encode(model: DiffusionGemmaForBlockDiffusion, context: torch.Tensor) -> tuple[DynamicCache, torch.Tensor]:
    """Run the encoder over a clean ``context (B, L)`` into a fresh cache, as ``generate()`` prefills it.
    Returns the cache (the decoder reads it; gradients flow through its keys and values) and the
    encoder's last hidden states ``(B, L, D)``."""
    cache = DynamicCache(config=model.config.get_text_config(decoder=True))
    out = model.model.encoder(input_ids=context, cache=cache)
    return out.cache, out.last_hidden_state


def renoise_loss(
    model: DiffusionGemmaForBlockDiffusion, context: torch.Tensor, x0: torch.Tensor, t: torch.Tensor,
    generator: torch.Generator, *, self_cond_p: float, encoder_loss_weight: float,
) -> RenoiseOutput:
    """The training objective on clean ``context (B, L)`` and canvas ``x0 (B, C)`` at levels ``t (B,)`` (module doc)."""
    V = model.config.text_config.vocab_size
    xt, _ = corrupt(x0, t, V, generator)  # (B, C)
    use_sc = torch.rand(x0.shape[0], generator=generator) < self_cond_p  # (B,)
    cache, hidden = encode(model, context)
    with torch.no_grad():  # pass 1: no self-conditioning, no gradient (Analog Bits)
        first = model(cache=cache, decoder_input_ids=xt).logits  # (B, C, V)
    logits = model(cache=cache, decoder_input_ids=xt, self_conditioning_logits=first,
                   self_conditioning_mask=use_sc).logits  # (B, C, V)
    diffusion = F.cross_entropy(logits.transpose(1, 2), x0)  # mean over B * C: every row has C tokens
    encoder = torch.zeros(())
    if encoder_loss_weight > 0:
        targets = torch.cat([context[:, 1:], x0[:, :1]], dim=1)  # (B, L): each position's next clean token
        ar = _softcap(model.lm_head(hidden), model.final_logit_softcapping)  # (B, L, V)
        encoder = F.cross_entropy(ar.transpose(1, 2), targets)
    return RenoiseOutput(diffusion + encoder_loss_weight * encoder, diffusion, encoder, logits)
