"""The embedded default model: a small bidirectional transformer trained as a masked-diffusion LM.

Architecture (chosen by measurement, see ``dllm_viz/assets/embedded/MODEL_CARD.md``): token embedding,
``n_layers`` pre-norm blocks of (depthwise local mixing, full bidirectional self-attention with
rotary positions, SwiGLU MLP), final RMSNorm and an output head tied to the embedding. There is no
causal mask and no time embedding: like LLaDA, the model reads the noise level off the masks.

The depthwise convolution lets each position mix with its immediate neighbours before attention;
in a feasibility run it is what let the model leave the unigram plateau within a minute.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from dllm_viz import assets
from dllm_viz.models import kv_cache, shadow
from dllm_viz.models.base import NEVER_LOGIT, check_inputs, check_positions
from dllm_viz.models.rotary import apply_rotary, rotary_tables
from dllm_viz.models.tiles import dense, tiled_linear
from dllm_viz.models.tokenizer import EmbeddedTokenizer

ASSET_DIR = assets.path("embedded")


@dataclass(frozen=True, kw_only=True)
class EmbeddedConfig:
    """Hyper-parameters of :class:`EmbeddedDenoiser`; stored as ``config.json`` next to the weights."""

    vocab_size: int  # tokenizer vocabulary, special tokens included
    mask_token_id: int  # the [MASK] id the decoder writes into the canvas
    pad_token_id: int  # id used for right padding (its key positions are ignored)
    eos_token_id: int  # end-of-text id (never produced by training on running text)
    d_model: int = 256  # residual width
    n_layers: int = 6  # number of blocks
    n_heads: int = 4  # attention heads; d_model / n_heads is the head size
    d_ff: int = 704  # SwiGLU hidden width (about 8/3 * d_model, rounded to 64)
    conv_kernel: int = 5  # width of the depthwise local mixing step (odd: centred)
    max_length: int = 256  # longest canvas (prompt + generation) the model accepts
    rope_base: float = 10000.0  # rotary frequency base
    name: str = "austen-mdlm"  # human-readable model name
    # Trained to predict at visible positions too (LLaDA 2.1's editing stream, `python -m dllm_viz.train
    # --edit-fraction`), so token-to-token edits may read its logits there (`models.base.can_edit`). A
    # config.json without it (written before the field existed) loads as False: a masked-only model.
    can_edit: bool = False
    # Its ids of LLaDA 2.2's edit tokens (docs/indel.md): DELETE removes the position it is predicted at, SPLIT
    # inserts a mask before it (`core.indel`). Both or neither; a config.json without them loads as None,
    # a model that cannot edit lengths (`train.objectives.lengths`, `models.base.edit_token_ids`).
    delete_token_id: int | None = None
    split_token_id: int | None = None

    def __post_init__(self) -> None:
        for field in ("vocab_size", "d_model", "n_layers", "n_heads", "d_ff", "max_length"):
            value = getattr(self, field)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{field}={value!r} must be a positive int")
        for field in ("mask_token_id", "pad_token_id", "eos_token_id"):
            value = getattr(self, field)
            if not 0 <= value < self.vocab_size:
                raise ValueError(f"{field}={value} must be in [0, vocab_size={self.vocab_size})")
        if self.d_model % self.n_heads or (self.d_model // self.n_heads) % 2:
            raise ValueError(
                f"d_model={self.d_model} must be a multiple of 2 * n_heads={2 * self.n_heads} (even rotary head size)"
            )
        if self.conv_kernel < 1 or self.conv_kernel % 2 == 0:
            raise ValueError(f"conv_kernel={self.conv_kernel} must be a positive odd int")
        if self.rope_base <= 1.0:
            raise ValueError(f"rope_base={self.rope_base} must be > 1")
        if not isinstance(self.can_edit, bool):
            raise ValueError(f"can_edit={self.can_edit!r} must be a bool")
        edits = (self.delete_token_id, self.split_token_id)
        if (edits[0] is None) != (edits[1] is None):
            raise ValueError(f"delete_token_id={edits[0]!r}, split_token_id={edits[1]!r}: give both or neither")
        for field in ("delete_token_id", "split_token_id"):
            value = getattr(self, field)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                      or not 0 <= value < self.vocab_size):
                raise ValueError(f"{field}={value!r} must be an int in [0, vocab_size={self.vocab_size})")
        if edits[0] is not None and len({*edits, self.mask_token_id, self.pad_token_id, self.eos_token_id}) != 5:
            raise ValueError(f"delete_token_id={edits[0]}, split_token_id={edits[1]} must differ from each other and "
                             f"from mask, pad and eos ({self.mask_token_id}, {self.pad_token_id}, {self.eos_token_id})")

    @classmethod
    def from_json(cls, path: str | Path) -> EmbeddedConfig:
        return cls(**json.loads(Path(path).read_text()))

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2)


Rows = list[tuple[int, int]]  # (start, length) of each canvas row packed in an (R, D) tensor


def _linear(layer: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """`layer(x)`: a plain `nn.Linear` through `tiles.dense` (the products `logits_at` makes), any other layer
    (a quantized one that replaced it, say) by itself."""
    return dense(x, layer.weight) if type(layer) is nn.Linear else layer(x)


class Block(nn.Module):
    """Pre-norm block: local depthwise mixing, bidirectional attention, SwiGLU MLP."""

    def __init__(self, cfg: EmbeddedConfig) -> None:
        super().__init__()
        d = cfg.d_model
        self.n_heads = cfg.n_heads
        self.norm_mix = nn.RMSNorm(d)
        self.mix = nn.Conv1d(d, d, cfg.conv_kernel, padding=cfg.conv_kernel // 2, groups=d)
        self.norm_attn = nn.RMSNorm(d)
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.proj = nn.Linear(d, d, bias=False)
        self.norm_mlp = nn.RMSNorm(d)
        self.up = nn.Linear(d, 2 * cfg.d_ff, bias=False)
        self.down = nn.Linear(cfg.d_ff, d, bias=False)

    def forward(
        self, x: torch.Tensor, keep: torch.Tensor, key_mask: torch.Tensor | None, cos: torch.Tensor, sin: torch.Tensor
    ) -> torch.Tensor:
        B, N, D = x.shape
        # Zero padded positions before the convolution so they act like the conv's own zero padding:
        # a row's outputs are then identical with or without right padding.
        h = self.norm_mix(x) * keep  # (B, N, D)
        x = x + self.mix(h.transpose(1, 2)).transpose(1, 2)
        qkv = _linear(self.qkv, self.norm_attn(x)).view(B, N, 3, self.n_heads, D // self.n_heads)  # (B, N, 3, H, Dh)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)  # (B, H, N, Dh) each
        q, k = apply_rotary(q, cos, sin), apply_rotary(k, cos, sin)  # (B, H, N, Dh)
        att = F.scaled_dot_product_attention(q, k, v, attn_mask=key_mask)  # (B, H, N, Dh), no causal mask
        x = x + _linear(self.proj, att.transpose(1, 2).reshape(B, N, D))
        gate, up = _linear(self.up, self.norm_mlp(x)).chunk(2, dim=-1)  # (B, N, d_ff) each
        return x + _linear(self.down, F.silu(gate) * up)

    def packed(self, x: torch.Tensor, rows: Rows, cos: torch.Tensor, sin: torch.Tensor,
               shadows: list[shadow.Shadow] | None = None) -> torch.Tensor:
        """The block over canvas rows packed one after another, `x (R, D)`, each row at its real length.

        The same operations as `forward` on each row alone, in the same order: the per-position ones
        (norms, rotary, SwiGLU, residuals) on all R positions at once, the linear layers as products
        of `ROW_TILE` rows (`tiled_linear`), the depthwise mixing and the attention row by row. No
        result of a row depends on another row. `cos, sin (R, Dh/2)`: each position's rotary angles.
        With `shadows`, WINO's shadow blocks follow the canvas rows in `x` (`models.shadow`: they read the
        canvas rows, which never read them).
        """
        R, D = x.shape
        H = self.n_heads
        h = self.norm_mix(x)  # (R, D)
        mixed = [self.mix(h[s : s + n].t().unsqueeze(0))[0].t() for s, n in rows]
        if shadows:
            mixed.append(shadow.mix(self.mix, h, rows, shadows))
        x = x + (mixed[0] if len(mixed) == 1 else torch.cat(mixed))  # (R, D)
        qkv = tiled_linear(self.norm_attn(x), self.qkv.weight).view(R, 3, H, D // H)  # (R, 3, H, Dh)
        qkv = qkv.permute(1, 2, 0, 3).contiguous()  # (3, H, R, Dh): as `forward` lays a row out
        (q, k), v = apply_rotary(qkv[:2], cos, sin), qkv[2]  # one elementwise rotation of queries and keys
        att = []
        for s, n in rows:
            one = lambda t: t[:, s : s + n].unsqueeze(0)  # (1, H, n, Dh)  # noqa: E731
            att.append(F.scaled_dot_product_attention(one(q), one(k), one(v))[0].transpose(0, 1).reshape(n, D))
        if shadows:
            att.append(shadow.attend(q, k, v, rows, shadows))
        x = x + tiled_linear(att[0] if len(att) == 1 else torch.cat(att), self.proj.weight)  # (R, D)
        gate, up = tiled_linear(self.norm_mlp(x), self.up.weight).chunk(2, dim=-1)  # (R, d_ff) each
        return x + tiled_linear(F.silu(gate) * up, self.down.weight)


class EmbeddedDenoiser(nn.Module):
    """Masked-diffusion denoiser: ``input_ids (B, N)`` with some ``mask_token_id`` -> ``logits (B, N, V)``."""

    # the approximate caches it runs (`logits_cached`: Fast-dLLM's prefix and dual cache)
    cache_modes = kv_cache.CACHE_MODES

    def __init__(
        self, cfg: EmbeddedConfig, tokenizer: EmbeddedTokenizer | None = None, *,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__()
        self.config = cfg
        self.tokenizer = tokenizer
        self.name = cfg.name
        self.mask_token_id = cfg.mask_token_id
        self.pad_token_id = cfg.pad_token_id
        self.eos_token_id = cfg.eos_token_id
        self.max_length = cfg.max_length
        self.vocab_size = cfg.vocab_size
        self.can_edit = cfg.can_edit  # predicts at visible positions too (token-to-token edits)
        self.delete_token_id = cfg.delete_token_id  # LLaDA 2.2's edit tokens (None: cannot edit lengths)
        self.split_token_id = cfg.split_token_id
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.norm_out = nn.RMSNorm(cfg.d_model)
        specials = sorted({cfg.mask_token_id, cfg.pad_token_id, cfg.eos_token_id})
        self.register_buffer("special_ids", torch.tensor(specials), persistent=False)
        cos, sin = rotary_tables(cfg.max_length, cfg.d_model // cfg.n_heads, cfg.rope_base)
        self.register_buffer("rope_cos", cos, persistent=False)
        self.register_buffer("rope_sin", sin, persistent=False)
        self.reset_parameters(generator if generator is not None else torch.Generator().manual_seed(0))

    def reset_parameters(self, generator: torch.Generator | None = None) -> None:
        """Normal(0, 0.02) weights, residual output projections scaled by depth (GPT-2 style).

        Every parameter is (re)drawn here from ``generator``, so the initial model is a pure
        function of the seed and never touches the global RNG.
        """
        std = 0.02
        for name, p in self.named_parameters():
            if name.endswith("mix.bias"):
                nn.init.zeros_(p)
            elif p.dim() == 1:  # RMSNorm gains
                nn.init.ones_(p)
            elif name.endswith("mix.weight"):  # (D, 1, K): start close to an average of neighbours
                nn.init.normal_(p, mean=0.0, std=1 / p.shape[-1], generator=generator)
            else:
                residual = name.endswith(("proj.weight", "down.weight"))
                scale = 1 / math.sqrt(2 * self.config.n_layers) if residual else 1.0
                nn.init.normal_(p, std=std * scale, generator=generator)

    @property
    def device(self) -> torch.device:
        return self.embed.weight.device

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        """Logits ``(B, N, V)``; ``attention_mask (B, N)`` bool marks real (True) vs padded keys.

        The special tokens (mask, pad, eos) get a logit of -1e4 everywhere: the training text never
        has them as targets, and a denoiser must never "unmask" a position into [MASK] (MDLM's
        zero-masking-probability rule). A finite value keeps entropy and log-prob finite.
        """
        logits = self.head(self.features(input_ids, attention_mask))  # (B, N, V)
        return logits.index_fill(-1, self.special_ids, NEVER_LOGIT)

    def logits_at(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None, rows: torch.Tensor, cols: torch.Tensor
    ) -> torch.Tensor:
        """``forward(input_ids, attention_mask)[rows, cols]``, ``(M, V)``, computed the same way whatever
        else is in the batch: a row's logits are bit for bit those of the row alone.

        The canvas rows asked for are packed one after another at their real lengths (right padding
        is the only padding ``check_inputs`` accepts), with no padding between them, and run through
        `Block.packed`: each linear layer as products of exactly ``ROW_TILE`` rows (`tiled_linear`,
        whose docstring says why a product's row count must not vary), the attention and the
        depthwise mixing row by row at the row's length. The output head runs at the M positions
        asked for only, in tiles too: it (N x D x V) costs as much as a third of a forward at this
        vocabulary, and a decode step needs logits at its still-masked positions alone.

        So the engine's promise (each request gets the trace it gets alone) holds exactly, and one
        forward serves every request of a step (the products of all requests share their tiles,
        which is what makes batching pay on a CPU). A row asked for at a padded position runs alone
        at its padded length (`features` with the mask).
        """
        check_inputs(input_ids, attention_mask, max_length=self.max_length)
        check_positions(rows, cols, tuple(input_ids.shape))
        B, N = input_ids.shape
        lengths = [N] * B if attention_mask is None else attention_mask.sum(1).tolist()  # real length of each row
        longest = torch.full((B,), -1, dtype=torch.long).scatter_reduce_(0, rows.cpu(), cols.cpu(), "amax").tolist()
        asked = [r for r in range(B) if longest[r] >= 0]
        packed = [r for r in asked if longest[r] < lengths[r]]  # the rest is asked at a padded position
        start = torch.zeros(B, dtype=torch.long)
        spans: Rows = []
        for r in packed:
            spans.append((spans[-1][0] + spans[-1][1] if spans else 0, int(lengths[r])))
            start[r] = spans[-1][0]
        h = self.embed.weight.new_empty(0, self.config.d_model)  # (0, D)
        if packed:
            h = self.packed_features(torch.cat([input_ids[r, :n] for r, (_, n) in zip(packed, spans)]), spans)  # (R, D)
        at = start.to(rows.device)[rows] + cols  # (M,) each position's packed row
        if len(packed) < len(asked):  # a row asked at a padded position: the row alone at its padded length
            for r in (r for r in asked if r not in packed):
                mask = None if attention_mask is None else attention_mask[r : r + 1]
                at = torch.where(rows == r, h.shape[0] + cols, at)
                h = torch.cat([h, self.features(input_ids[r : r + 1], mask)[0]])  # (R + N, D)
        logits = tiled_linear(self.norm_out(h[at]), self.embed.weight)  # (M, V)
        return logits.index_fill_(-1, self.special_ids, NEVER_LOGIT)

    def packed_features(self, ids: torch.Tensor, rows: Rows, shadows: list[shadow.Shadow] | None = None
                        ) -> torch.Tensor:
        """Final hidden states ``(R, D)`` of canvas rows packed one after another, ``ids (R,)``; ``rows``
        the (start, length) of each. Each row's states are those of the row alone (`Block.packed`). With
        `shadows`, ``ids`` end with their shadow rows (masks) and the states with theirs (`logits_shadow`)."""
        x = self.embed(ids)  # (R, D)
        pos = [torch.arange(n, device=ids.device) for _, n in rows]  # each position in its row
        pos += [torch.arange(sh.lo, sh.lo + sh.size, device=ids.device) for sh in shadows or ()]  # at the block's ids
        cos, sin = self.rope_cos[torch.cat(pos)], self.rope_sin[torch.cat(pos)]  # (R, Dh/2)
        for block in self.blocks:
            x = block.packed(x, rows, cos, sin, shadows)
        return x

    def logits_shadow(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None, rows: torch.Tensor,
                      cols: torch.Tensor, blocks: torch.Tensor, hidden_rows: torch.Tensor,
                      hidden_cols: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """`logits_at(input_ids, attention_mask, rows, cols)` `(M, V)`, and from the same packed forward the
        logits of WINO's shadow rows at `(hidden_rows, hidden_cols)` `(K, V)`: each row with a block
        ``blocks[r] = [lo, hi)`` carries its shadow block (`models.shadow`: what it means with this model's
        depthwise mixing). The canvas rows' logits are bit for bit `logits_at`'s; every row's are its own
        whatever the batch. Every position asked lies inside its row's real length."""
        check_inputs(input_ids, attention_mask, max_length=self.max_length)
        check_positions(rows, cols, tuple(input_ids.shape))
        B, N = input_ids.shape
        lengths = [N] * B if attention_mask is None else attention_mask.sum(1).tolist()
        spans = blocks.tolist()
        wanted = set(rows.tolist()) | {r for r, (lo, hi) in enumerate(spans) if hi > lo}
        packed = sorted(wanted)
        start = torch.zeros(B, dtype=torch.long)
        layout: Rows = []
        for r in packed:
            layout.append((layout[-1][0] + layout[-1][1] if layout else 0, int(lengths[r])))
            start[r] = layout[-1][0]
        R = layout[-1][0] + layout[-1][1] if layout else 0
        shadows, first = [], torch.zeros(B, dtype=torch.long)
        for i, r in enumerate(packed):
            lo, hi = spans[r]
            if hi > lo:
                shadows.append(shadow.Shadow(row=i, first=R + sum(sh.size for sh in shadows), lo=lo, size=hi - lo))
                first[r] = shadows[-1].first - lo
        ids = torch.cat([input_ids[r, :n] for r, (_, n) in zip(packed, layout)]
                        + [torch.full((sh.size,), self.mask_token_id, dtype=input_ids.dtype, device=input_ids.device)
                           for sh in shadows])
        h = self.packed_features(ids, layout, shadows)  # (R + S, D)
        at = torch.cat([start.to(rows.device)[rows] + cols, first.to(rows.device)[hidden_rows] + hidden_cols])
        logits = tiled_linear(self.norm_out(h[at]), self.embed.weight).index_fill_(-1, self.special_ids, NEVER_LOGIT)
        return logits[: rows.shape[0]], logits[rows.shape[0]:]

    def logits_cached(self, input_ids: torch.Tensor, cache: kv_cache.KVCache | None, *, start: int,
                      cols: torch.Tensor) -> tuple[torch.Tensor, kv_cache.KVCache]:
        """The logits ``(M, V)`` at the canvas positions `cols` of one row, with an approximate cache:
        a full forward that returns a new cache (`cache` None), or the window ``[start, start + W)``
        that `input_ids (1, W)` holds against `cache` (see `dllm_viz.models.kv_cache`)."""
        return kv_cache.logits_cached(self, input_ids, cache, start=start, cols=cols)

    def head(self, h: torch.Tensor) -> torch.Tensor:
        """Output logits from final hidden states ``(..., D) -> (..., V)`` (tied to the embedding)."""
        return dense(self.norm_out(h), self.embed.weight)

    def features(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        """Final hidden states ``(B, N, D)`` before the output head (training scores masked rows only)."""
        check_inputs(input_ids, attention_mask, max_length=self.max_length)
        B, N = input_ids.shape
        keep = torch.ones(B, N, 1, dtype=torch.bool, device=input_ids.device)
        key_mask = None
        if attention_mask is not None:
            attention_mask = attention_mask.to(device=input_ids.device)
            keep = attention_mask[:, :, None]  # (B, N, 1)
            key_mask = attention_mask[:, None, None, :]  # (B, 1, 1, N): padded keys are never attended
        x = self.embed(input_ids)  # (B, N, D)
        keep = keep.to(x.dtype)
        cos, sin = self.rope_cos[:N], self.rope_sin[:N]  # (N, Dh/2)
        for block in self.blocks:
            x = block(x, keep, key_mask, cos, sin)
        return x  # (B, N, D)


def load_embedded(
    device: str | torch.device | None = None, dtype: torch.dtype | None = None, path: str | Path | None = None
) -> EmbeddedDenoiser:
    """Load the shipped model from ``dllm_viz/assets/embedded`` (or ``path``): eval mode, on ``device``.

    ``device`` defaults to CUDA when available, else CPU; ``dtype`` defaults to float32 (the
    weights are stored in float16 and up-cast, which is the fastest choice on CPU).
    """
    from safetensors.torch import load_file

    folder = Path(path) if path is not None else ASSET_DIR
    for file in ("config.json", "tokenizer.json", "model.safetensors"):
        if not (folder / file).is_file():
            raise FileNotFoundError(f"embedded model: {folder / file} is missing")
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    dtype = dtype or torch.float32
    if not dtype.is_floating_point:
        raise ValueError(f"dtype={dtype} must be a floating point dtype")
    cfg = EmbeddedConfig.from_json(folder / "config.json")
    tokenizer = EmbeddedTokenizer.from_file(folder / "tokenizer.json")
    if tokenizer.mask_token_id != cfg.mask_token_id or tokenizer.vocab_size != cfg.vocab_size:
        raise ValueError(f"embedded model: tokenizer.json and config.json in {folder} disagree")
    model = EmbeddedDenoiser(cfg, tokenizer)
    state = load_file(str(folder / "model.safetensors"))
    model.load_state_dict({k: v.float() for k, v in state.items()})
    return model.to(device=device, dtype=dtype).eval().requires_grad_(False)
