"""Tiny Hugging Face checkpoints for offline tests and the GPU bench: masked LMs, LLaDA and Dream stand-ins.

Masked LMs are real transformers classes (BERT, RoBERTa, ModernBERT). LLaDA and Dream ship their own
modeling code, so they are stood in for by small modules that follow their conventions (config
fields, `auto_map`, forward signature, Dream's next-token logits, LLaDA's uneven attention-mask
support), saved with that code and loaded with `trust_remote_code` exactly as a real checkpoint is.
`put_in_hub_cache` files a checkpoint into a Hugging Face cache directory with the hub library's
layout, so that it can be loaded by its Hub id with no network.
"""
from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from tokenizers import Tokenizer, models, pre_tokenizers, processors
from transformers import (
    AutoConfig,
    AutoModel,
    AutoModelForMaskedLM,
    BertConfig,
    ModernBertConfig,
    PreTrainedTokenizerFast,
    RobertaConfig,
)

WORDS = "the cat sat on a mat and dog ran far away to see big red sun".split()
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]
ROWS = [["the", "cat", "sat"], ["a", "dog", "ran", "far", "away", "to", "see", "the", "big", "red", "sun"]]


def make_tokenizer(
    *, mask_token: str = "[MASK]", declare_mask: bool = True, prefix: str | None = "[CLS]", eos_token: str | None = None
):
    """A WordLevel tokenizer over WORDS; `prefix` is what its template puts first (then [SEP] last).

    `eos_token` (like LLaDA's <|eot_id|> or Dream's <|endoftext|>) is appended last and declared the
    tokenizer's end-of-text token, so that every other id keeps its place.
    """
    vocab = {token: i for i, token in enumerate([*SPECIALS, mask_token, *WORDS, *([eos_token] if eos_token else [])])}
    core = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    core.pre_tokenizer = pre_tokenizers.Whitespace()
    if prefix is not None:
        core.post_processor = processors.TemplateProcessing(
            single=f"{prefix} $A [SEP]", special_tokens=[(prefix, vocab[prefix]), ("[SEP]", vocab["[SEP]"])]
        )
    roles = {"unk_token": "[UNK]", "pad_token": "[PAD]", "cls_token": "[CLS]", "sep_token": "[SEP]"}
    if declare_mask:
        roles["mask_token"] = mask_token
    if eos_token:
        roles["eos_token"] = eos_token
    hf = PreTrainedTokenizerFast(tokenizer_object=core, **roles)
    if not declare_mask:
        hf.add_special_tokens({"additional_special_tokens": [mask_token]})
    return hf, vocab


def ids_of(vocab: dict[str, int], words: list[str]) -> list[int]:
    return [vocab[w] for w in words]


def right_pad(rows: list[list[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(r) for r in rows)
    ids = torch.tensor([r + [pad_id] * (width - len(r)) for r in rows])  # (B, N)
    mask = torch.tensor([[True] * len(r) + [False] * (width - len(r)) for r in rows])  # (B, N)
    return ids, mask


def save_masked_lm(path: Path, family: str) -> dict[str, int]:
    hf, vocab = make_tokenizer()
    size = dict(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64)
    configs = {
        "bert": lambda: BertConfig(**size, max_position_embeddings=48),
        "roberta": lambda: RobertaConfig(
            **size, max_position_embeddings=40, pad_token_id=vocab["[PAD]"], bos_token_id=vocab["[CLS]"],
            eos_token_id=vocab["[SEP]"],
        ),
        "modernbert": lambda: ModernBertConfig(
            **size, max_position_embeddings=48, pad_token_id=vocab["[PAD]"], bos_token_id=vocab["[CLS]"],
            eos_token_id=vocab["[SEP]"], cls_token_id=vocab["[CLS]"], sep_token_id=vocab["[SEP]"],
        ),
    }
    config = configs[family]()
    with torch.random.fork_rng():
        torch.manual_seed(0)
        model = AutoModelForMaskedLM.from_config(config)
    model.save_pretrained(path)
    hf.save_pretrained(path)
    return vocab


# Stand-in modeling code, saved inside the checkpoint like LLaDA's and Dream's own files.
STANDIN_SOURCE = '''
import torch
import torch.nn.functional as F
from torch import nn
from transformers import PreTrainedConfig, PreTrainedModel
from transformers.modeling_outputs import MaskedLMOutput


class Block(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.qkv, self.out = nn.Linear(width, 3 * width), nn.Linear(width, width)
        self.mlp = nn.Sequential(nn.Linear(width, 2 * width), nn.GELU(), nn.Linear(2 * width, width))

    def forward(self, x, allowed):  # allowed: (B, 1, N|1, N) bool, True = may attend; None = all
        B, N, D = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(B, N, 3, self.heads, D // self.heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
        x = x + self.out(a.transpose(1, 2).reshape(B, N, D))
        return x + self.mlp(self.norm2(x))


class Core(nn.Module):
    """Token + learned positions, bidirectional blocks, LM head."""

    def __init__(self, vocab, width, layers, heads, max_len):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, width), nn.Embedding(max_len, width)
        self.blocks = nn.ModuleList(Block(width, heads) for _ in range(layers))
        self.norm, self.head = nn.LayerNorm(width), nn.Linear(width, vocab, bias=False)

    def forward(self, ids, allowed, positions=None):
        x = self.wte(ids) + self.wpe(torch.arange(ids.shape[1], device=ids.device) if positions is None else positions)
        for block in self.blocks:
            x = block(x, allowed)
        return self.head(self.norm(x))


def tail_bias(config, logits):
    """Push `tail_token_id` up by `tail_scale` at output positions >= `tail_from` (an end-of-text tail)."""
    if not config.tail_scale or config.tail_token_id is None:
        return logits
    bias = torch.zeros_like(logits)
    bias[:, config.tail_from :, config.tail_token_id] = config.tail_scale
    return logits + bias


class StandInPreTrained(PreTrainedModel):
    base_model_prefix = "model"

    def _init_weights(self, module):
        pass  # the test seeds torch's default initialisation

    def get_input_embeddings(self):
        return self.model.wte


class LLaDAConfig(PreTrainedConfig):
    model_type = "llada"

    def __init__(self, vocab_size=32, d_model=32, n_layers=2, n_heads=4, max_sequence_length=64,
                 mask_token_id=None, attention_mask_support="full", tail_token_id=None, tail_from=0,
                 tail_scale=0.0, shadow_support=False, **kwargs):
        self.vocab_size, self.d_model, self.n_layers, self.n_heads = vocab_size, d_model, n_layers, n_heads
        self.max_sequence_length, self.mask_token_id = max_sequence_length, mask_token_id
        self.attention_mask_support = attention_mask_support  # "full" | "causal" | "ignored"
        self.shadow_support = shadow_support  # takes a 4-D mask and position ids, as WINO's modified LLaDA
        self.tail_token_id, self.tail_from, self.tail_scale = tail_token_id, tail_from, tail_scale
        super().__init__(**kwargs)


class LLaDAModelLM(StandInPreTrained):
    config_class = LLaDAConfig

    def __init__(self, config):
        super().__init__(config)
        self.model = Core(config.vocab_size, config.d_model, config.n_layers, config.n_heads,
                          config.max_sequence_length)
        self.post_init()

    def forward(self, input_ids, attention_mask=None, position_ids=None, **kwargs):
        if self.config.shadow_support and attention_mask is not None and attention_mask.dim() == 4:
            return MaskedLMOutput(logits=tail_bias(self.config, self.model(input_ids, attention_mask.bool(),
                                                                           position_ids)))
        allowed = None
        support = self.config.attention_mask_support
        if attention_mask is not None and support != "ignored":
            allowed = attention_mask.bool()[:, None, None, :]  # (B, 1, 1, N) key padding
            if support == "causal":  # as in early releases: a mask brings back the causal bias
                n = input_ids.shape[1]
                allowed = allowed & torch.ones(n, n, dtype=torch.bool, device=input_ids.device).tril()
        return MaskedLMOutput(logits=tail_bias(self.config, self.model(input_ids, allowed)))


class DreamConfig(PreTrainedConfig):
    model_type = "Dream"

    def __init__(self, vocab_size=32, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                 max_position_embeddings=64, mask_token_id=None, oracle_scale=0.0, tail_token_id=None,
                 tail_from=0, tail_scale=0.0, **kwargs):
        self.vocab_size, self.hidden_size = vocab_size, hidden_size
        self.num_hidden_layers, self.num_attention_heads = num_hidden_layers, num_attention_heads
        self.max_position_embeddings, self.mask_token_id = max_position_embeddings, mask_token_id
        self.oracle_scale = oracle_scale
        self.tail_token_id, self.tail_from, self.tail_scale = tail_token_id, tail_from, tail_scale
        super().__init__(**kwargs)


class DreamModel(StandInPreTrained):
    config_class = DreamConfig

    def __init__(self, config):
        super().__init__(config)
        self.model = Core(config.vocab_size, config.hidden_size, config.num_hidden_layers,
                          config.num_attention_heads, config.max_position_embeddings)
        self.post_init()

    def forward(self, input_ids, attention_mask=None, position_ids=None, **kwargs):
        tensor = isinstance(attention_mask, torch.Tensor)
        if tensor and (attention_mask.dim() != 4 or attention_mask.dtype != torch.bool):
            raise ValueError("Dream takes a (B, 1, N, N) bool attention mask")
        allowed = attention_mask if tensor else None
        logits = tail_bias(self.config, self.model(input_ids, allowed))  # (B, N, V)
        # Next-token convention made visible: output i also votes for input token i + 1.
        following = F.one_hot(input_ids[:, 1:], self.config.vocab_size).to(logits.dtype)  # (B, N - 1, V)
        return MaskedLMOutput(logits=logits + self.config.oracle_scale * F.pad(following, (0, 0, 0, 1)))
'''


STANDIN_CLASSES = {"llada": ("llada", "LLaDAConfig", "LLaDAModelLM"), "dream": ("Dream", "DreamConfig", "DreamModel")}


def write_standin(path: Path, kind: str, *, vocab_size: int, **fields: Any) -> None:
    """Write the stand-in code and a config.json that maps to it (no weights)."""
    path.mkdir(parents=True, exist_ok=True)
    (path / "modeling_standin.py").write_text(STANDIN_SOURCE)
    model_type, config_class, model_class = STANDIN_CLASSES[kind]
    config = {
        "model_type": model_type,
        "architectures": [model_class],
        "auto_map": {"AutoConfig": f"modeling_standin.{config_class}", "AutoModel": f"modeling_standin.{model_class}"},
        "vocab_size": vocab_size,
        **fields,
    }
    (path / "config.json").write_text(json.dumps(config))


def save_standin(path: Path, kind: str, *, vocab_size: int, **fields: Any) -> None:
    """Write the stand-in code and a config.json that maps to it, then seeded weights."""
    write_standin(path, kind, vocab_size=vocab_size, **fields)
    loaded = AutoConfig.from_pretrained(path, trust_remote_code=True, local_files_only=True)
    with torch.random.fork_rng():
        torch.manual_seed(1)
        model = AutoModel.from_config(loaded, trust_remote_code=True)
    model.save_pretrained(path)


def save_dream(path: Path, oracle_scale: float, *, eos_token: str | None = None, **fields: Any) -> dict[str, int]:
    hf, vocab = make_tokenizer(mask_token="<|mask|>", prefix=None, eos_token=eos_token)
    if eos_token:
        fields.setdefault("tail_token_id", vocab[eos_token])
    save_standin(path, "dream", vocab_size=len(vocab), mask_token_id=vocab["<|mask|>"], oracle_scale=oracle_scale,
                 **fields)
    hf.save_pretrained(path)
    return vocab




def save_llada(path: Path, *, eos_token: str | None = None, **fields: Any) -> dict[str, int]:
    """A LLaDA stand-in with a tokenizer (BOS-free template); `tail_*` fields bias its end-of-text token."""
    hf, vocab = make_tokenizer(prefix=None, eos_token=eos_token)
    if eos_token:
        fields.setdefault("tail_token_id", vocab[eos_token])
    save_standin(path, "llada", vocab_size=len(vocab), mask_token_id=vocab["[MASK]"], **fields)
    hf.save_pretrained(path)
    return vocab


# --- a Hugging Face cache, offline ------------------------------------------------------------


def fake_commit(repo_id: str, branch: str) -> str:
    """A 40-hex commit id, fixed for (repo, branch)."""
    return hashlib.sha1(f"{repo_id}@{branch}".encode()).hexdigest()


def put_in_hub_cache(cache: Path, repo_id: str, build: Callable[[Path], Any], *, branch: str = "main") -> str:
    """File a checkpoint built by `build(folder)` into `cache` as huggingface_hub lays a download out.

    models--org--name/blobs/<sha256> holds each file once; snapshots/<commit>/<file> links to it
    (relative symlinks, as the library writes them); refs/<branch> holds the commit. Returns the commit.
    """
    commit = fake_commit(repo_id, branch)
    repo = cache / f"models--{repo_id.replace('/', '--')}"
    staging = repo / "staging"
    build(staging)
    snapshot = repo / "snapshots" / commit
    for file in sorted(p for p in staging.rglob("*") if p.is_file()):
        digest = hashlib.sha256(file.read_bytes()).hexdigest()
        blob = repo / "blobs" / digest
        blob.parent.mkdir(parents=True, exist_ok=True)
        if not blob.exists():
            shutil.copyfile(file, blob)
        link = snapshot / file.relative_to(staging)
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(Path("../" * (len(link.relative_to(repo).parts) - 1)) / "blobs" / digest)
    shutil.rmtree(staging)
    (repo / "refs").mkdir(parents=True, exist_ok=True)
    (repo / "refs" / branch).write_text(commit)
    return commit
