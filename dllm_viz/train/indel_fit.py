"""Fine-tune an embedded model to edit lengths: ``python -m dllm_viz.train.indel_fit {fit,export}`` (issue 37).

Starts from an exported embedded model that can edit already (``dllm_viz/assets/world``: LLaDA 2.1's two
streams, ``train.train``), grows its vocabulary by the two edit tokens of LLaDA 2.2 (``<delete>`` and
``<split>``, appended: every old id keeps its meaning; their embedding rows start small and random, so
the tied head gives them a logit near 0 at first) and trains three streams at once: the masked positions
(cross-entropy / t, the ELBO term), the visible ones replaced at random (restore) and kept (keep), both as
in ``train.train.mixed_loss``, and the length-editing stream of ``train.indel`` (DELETE at an extra token,
SPLIT after a removed one), whose targets enter the same mixed loss at weight 1. The recipe and its
figures are in ``dllm_viz/assets/world-indel/MODEL_CARD.md``::

    python -m dllm_viz.train.indel_fit fit --data DATA --out RUN --init-from dllm_viz/assets/world \\
        --threads 2 --steps 2400 --time-limit 58
    python -m dllm_viz.train.indel_fit export --run RUN --out dllm_viz/assets/world-indel --name world-indel
"""
from __future__ import annotations

import argparse
import json
import math
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import torch
from tokenizers import AddedToken

from dllm_viz.models.embedded import EmbeddedConfig, EmbeddedDenoiser, load_embedded
from dllm_viz.models.tokenizer import EmbeddedTokenizer
from dllm_viz.train.indel import AFTER_GAP, EXTRA, PLAIN, corrupt_lengths
from dllm_viz.train.objectives.editing import mixed_loss, ordinary_ids, replace_visible
from dllm_viz.train.objectives.masked import keep_prompts, stratified_t

DELETE, SPLIT = "<delete>", "<split>"  # the edit tokens' names in the tokenizer (LLaDA 2.2's DELETE and SPLIT)


@dataclass(frozen=True, kw_only=True)
class InDelTrainConfig:
    """One fine-tuning run; saved in every checkpoint so ``--resume`` continues the same recipe."""

    batch_size: int = 64  # windows per step
    max_length: int = 96  # window length (the model's context)
    steps: int = 2400  # optimiser steps of the cosine schedule
    lr: float = 5e-4  # peak AdamW learning rate
    min_lr_ratio: float = 0.05  # cosine floor, as a fraction of lr
    warmup: int = 50  # linear warm-up steps
    weight_decay: float = 0.1
    grad_clip: float = 1.0
    t_min: float = 1e-3  # smallest mask rate (keeps 1 / t finite)
    prompt_fraction: float = 0.5  # rows with a clean prefix, as a prompt is (train.train.keep_prompts)
    edit_fraction: float = 0.5  # rows whose visible tokens are replaced at random (LLaDA 2.1's editing stream)
    edit_rate: float = 0.2  # ... each with probability edit_rate * (1 - t)
    length_fraction: float = 0.5  # rows with tokens inserted and removed (the length-editing stream)
    length_rate: float = 0.12  # ... an operation before each token with probability length_rate * (1 - t)
    seed: int = 0
    eval_every: int = 200
    ckpt_every: int = 100

    def __post_init__(self) -> None:
        for name in ("batch_size", "steps", "eval_every", "ckpt_every"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name}={getattr(self, name)} is invalid: expected >= 1")
        for name in ("prompt_fraction", "edit_fraction", "edit_rate", "length_fraction", "length_rate",
                     "min_lr_ratio"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name}={getattr(self, name)} is invalid: expected a value in [0, 1]")
        if not 0.0 < self.lr < 1.0:
            raise ValueError(f"lr={self.lr} is invalid: expected a value in (0, 1)")


def grow_tokenizer(tokenizer: EmbeddedTokenizer) -> EmbeddedTokenizer:
    """``tokenizer`` with ``<delete>`` and ``<split>`` appended as special tokens (old ids unchanged)."""
    inner = EmbeddedTokenizer.from_file(_saved(tokenizer))._tok  # a copy: the caller's tokenizer stays as it is
    inner.add_special_tokens([AddedToken(DELETE, special=True), AddedToken(SPLIT, special=True)])
    grown = EmbeddedTokenizer(inner)
    old = tokenizer.get_vocab()
    if any(grown.get_vocab().get(piece) != i for piece, i in old.items()):
        raise ValueError("grow_tokenizer: an old piece moved; the edit tokens must be appended")
    return grown


def _saved(tokenizer: EmbeddedTokenizer) -> Path:
    import tempfile

    path = Path(tempfile.mkdtemp()) / "tokenizer.json"
    tokenizer.save(path)
    return path


def grow_model(model: EmbeddedDenoiser, tokenizer: EmbeddedTokenizer, generator: torch.Generator) -> EmbeddedDenoiser:
    """``model`` with its embedding (and tied head) grown to ``tokenizer``'s vocabulary and the edit tokens'
    ids in its config; new rows ~ N(0, 0.02^2), the old rows copied."""
    ids = tokenizer.get_vocab()
    cfg = replace(model.config, vocab_size=tokenizer.vocab_size, delete_token_id=ids[DELETE], split_token_id=ids[SPLIT])
    grown = EmbeddedDenoiser(cfg, tokenizer)
    state = model.state_dict()
    old = state["embed.weight"]  # (V_old, D)
    new = torch.randn(tokenizer.vocab_size - old.shape[0], old.shape[1], generator=generator) * 0.02
    state["embed.weight"] = torch.cat([old, new])  # (V_new, D)
    grown.load_state_dict(state)
    return grown


def lr_at(step: int, cfg: InDelTrainConfig) -> float:
    """Linear warm-up then cosine decay to ``min_lr_ratio * lr``."""
    if step < cfg.warmup:
        return cfg.lr * (step + 1) / cfg.warmup
    progress = min(1.0, (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup))
    return cfg.lr * (cfg.min_lr_ratio + (1 - cfg.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * progress)))


@dataclass(frozen=True)
class Batch:
    inputs: torch.Tensor  # (B, N) long: what the model reads (masks, replacements, length errors)
    target: torch.Tensor  # (B, N) long: original tokens, DELETE, SPLIT
    masked: torch.Tensor  # (B, N) bool
    t: torch.Tensor  # (B,) mask rates
    kind: torch.Tensor  # (B, N) long: train.indel.PLAIN / EXTRA / AFTER_GAP


def make_batch(stream: torch.Tensor, model: EmbeddedDenoiser, ordinary: torch.Tensor, cfg: InDelTrainConfig,
               generator: torch.Generator) -> Batch:
    """One batch of the three streams from random windows of the token ``stream``."""
    B, N = cfg.batch_size, cfg.max_length
    S = N + N // 4
    starts = torch.randint(0, stream.numel() - S, (B,), generator=generator)
    source = stream[starts[:, None] + torch.arange(S)].long()  # (B, S)
    t = stratified_t(B, cfg.t_min, generator)
    c = corrupt_lengths(source, N, cfg.length_fraction, cfg.length_rate * (1 - t), ordinary,
                        model.delete_token_id, model.split_token_id, generator)
    plain = c.kind == PLAIN
    masked = (torch.rand(B, N, generator=generator) < t[:, None]) & plain
    masked = keep_prompts(masked, cfg.prompt_fraction, generator)
    shown, _ = replace_visible(c.tokens, masked | ~plain, cfg.edit_fraction, cfg.edit_rate * (1 - t), ordinary,
                               generator)
    inputs = torch.where(masked, model.mask_token_id, shown)
    return Batch(inputs=inputs, target=c.target, masked=masked, t=t, kind=c.kind)


@torch.no_grad()
def probe(model: EmbeddedDenoiser, stream: torch.Tensor, ordinary: torch.Tensor, *, windows: int = 64,
          rate: float = 0.1, seed: int = 1234) -> dict[str, float]:
    """How the argmax reads length errors on fixed held-out windows with nothing masked (each token gets an
    operation before it with probability ``rate``): ``delete@extra`` (DELETE at an extra token),
    ``split@gap`` (SPLIT after a removed one), ``edit@plain`` (DELETE or SPLIT at a right token, a wrong
    edit), ``keep@plain`` (the token itself there); and ``acc@0.5`` (masked-token accuracy, half masked, no
    length errors) and ``edit@mask`` (DELETE or SPLIT predicted at a mask)."""
    was = model.training
    model.eval()
    g = torch.Generator().manual_seed(seed)
    N = model.max_length
    S = N + N // 4
    starts = torch.linspace(0, stream.numel() - S - 1, windows).long()
    source = stream[starts[:, None] + torch.arange(S)].long()  # (W, S)
    c = corrupt_lengths(source, N, 1.0, rate, ordinary, model.delete_token_id, model.split_token_id, g)
    pred = model(c.tokens).argmax(-1)  # (W, N)
    edits = (pred == model.delete_token_id) | (pred == model.split_token_id)
    plain = c.kind == PLAIN
    clean = source[:, :N]
    masked = torch.rand(clean.shape, generator=g) < 0.5
    pred_m = model(torch.where(masked, model.mask_token_id, clean)).argmax(-1)
    edits_m = (pred_m == model.delete_token_id) | (pred_m == model.split_token_id)
    model.train(was)

    def share(hit: torch.Tensor, where: torch.Tensor) -> float:
        return round(float((hit & where).sum()) / max(1, int(where.sum())), 4)

    return {"delete@extra": share(pred == model.delete_token_id, c.kind == EXTRA),
            "split@gap": share(pred == model.split_token_id, c.kind == AFTER_GAP),
            "edit@plain": share(edits, plain), "keep@plain": share(pred == c.tokens, plain),
            "acc@0.5": share(pred_m == clean, masked), "edit@mask": share(edits_m, masked)}


def _stream(path: Path, tokenizer: EmbeddedTokenizer, cache: Path) -> torch.Tensor:
    if cache.is_file():
        return torch.load(cache)
    out = torch.tensor(tokenizer.encode(path.read_text()), dtype=torch.int32)
    torch.save(out, cache)
    return out


def fit(cfg: InDelTrainConfig, *, data: Path, run: Path, init_from: Path, threads: int = 2,
        time_limit_min: float | None = None, resume: bool = True) -> dict[str, float]:
    """Train into ``run/`` (tokenizer.json, train.pt / heldout.pt token caches, ckpt.pt, log.jsonl)."""
    torch.set_num_threads(threads)
    run.mkdir(parents=True, exist_ok=True)
    ckpt, log_path = run / "ckpt.pt", run / "log.jsonl"
    gen = torch.Generator().manual_seed(cfg.seed)
    base = load_embedded(device="cpu", path=init_from)
    tokenizer = grow_tokenizer(base.tokenizer)
    tokenizer.save(run / "tokenizer.json")
    model = grow_model(base, tokenizer, torch.Generator().manual_seed(cfg.seed + 1))
    train_stream = _stream(data / "train.txt", tokenizer, run / "train.pt")
    held_stream = _stream(data / "heldout.txt", tokenizer, run / "heldout.pt")
    specials = [model.mask_token_id, model.pad_token_id, model.eos_token_id, model.delete_token_id,
                model.split_token_id]
    ordinary = ordinary_ids(model.vocab_size, specials)  # (K,): what replacements and extra tokens draw
    params = dict(model.named_parameters())
    decay = [p for n, p in params.items() if p.dim() >= 2 and "mix" not in n]
    no_decay = [p for n, p in params.items() if not (p.dim() >= 2 and "mix" not in n)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": cfg.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=cfg.lr, betas=(0.9, 0.98))
    step, elapsed = 0, 0.0
    if resume and ckpt.is_file():
        state = torch.load(ckpt, weights_only=False)
        cfg = replace(InDelTrainConfig(**state["config"]), steps=cfg.steps)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optim"])
        gen.set_state(state["generator"])
        step, elapsed = state["step"], state["elapsed"]
    else:
        record = {"step": 0, "elapsed_s": 0.0, **probe(model, held_stream, ordinary)}
        with log_path.open("a") as f:
            f.write(json.dumps(record) + "\n")
    (run / "config.json").write_text(json.dumps(asdict(cfg), indent=2))
    model.train()
    t0 = time.time() - elapsed
    last: dict[str, float] = {}
    while step < cfg.steps:
        b = make_batch(train_stream, model, ordinary, cfg, gen)
        for group in opt.param_groups:
            group["lr"] = lr_at(step, cfg)
        loss = mixed_loss(model.head(model.features(b.inputs)), b.target, b.masked, b.t)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        opt.step()
        step += 1
        done = step == cfg.steps or (time_limit_min is not None and time.time() - t0 > 60 * time_limit_min)
        if step % cfg.eval_every == 0 or done:
            last = {"step": step, "elapsed_s": round(time.time() - t0, 1), "train_loss": round(loss.item(), 4),
                    "lr": lr_at(step - 1, cfg), **probe(model, held_stream, ordinary)}
            with log_path.open("a") as f:
                f.write(json.dumps(last) + "\n")
            print(json.dumps(last), flush=True)
        if step % cfg.ckpt_every == 0 or done:
            tmp = ckpt.with_suffix(".tmp")
            torch.save({"model": model.state_dict(), "optim": opt.state_dict(), "step": step, "config": asdict(cfg),
                        "generator": gen.get_state(), "elapsed": time.time() - t0,
                        "model_config": asdict(model.config)}, tmp)
            tmp.replace(ckpt)
        if done:
            break
    return last


def export(run: Path, out: Path, *, name: str) -> Path:
    """Write ``model.safetensors`` (float16), ``config.json`` and ``tokenizer.json`` of ``run`` to ``out``."""
    from safetensors.torch import save_file

    state = torch.load(run / "ckpt.pt", weights_only=False)
    config = replace(EmbeddedConfig(**state["model_config"]), name=name)
    out.mkdir(parents=True, exist_ok=True)
    save_file({k: v.detach().half().contiguous() for k, v in state["model"].items()}, str(out / "model.safetensors"),
              metadata={"step": str(state["step"])})
    (out / "config.json").write_text(config.to_json() + "\n")
    EmbeddedTokenizer.from_file(run / "tokenizer.json").save(out / "tokenizer.json")
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m dllm_viz.train.indel_fit", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p_fit = sub.add_parser("fit", help="fine-tune (or resume) a run")
    p_fit.add_argument("--data", type=Path, required=True, help="folder with train.txt and heldout.txt")
    p_fit.add_argument("--out", type=Path, required=True, help="run folder")
    p_fit.add_argument("--init-from", type=Path, required=True, help="an exported embedded model folder")
    p_fit.add_argument("--threads", type=int, default=2)
    p_fit.add_argument("--time-limit", type=float, default=None, help="stop (and checkpoint) after N minutes")
    for field, default in asdict(InDelTrainConfig()).items():
        p_fit.add_argument("--" + field.replace("_", "-"), type=type(default), default=default)
    p_exp = sub.add_parser("export", help="write the asset folder")
    p_exp.add_argument("--run", type=Path, required=True)
    p_exp.add_argument("--out", type=Path, required=True)
    p_exp.add_argument("--name", default="world-indel")
    args = parser.parse_args(argv)
    if args.command == "export":
        print(export(args.run, args.out, name=args.name))
        return
    cfg = InDelTrainConfig(**{k: getattr(args, k) for k in asdict(InDelTrainConfig())})
    fit(cfg, data=args.data, run=args.out, init_from=args.init_from, threads=args.threads,
        time_limit_min=args.time_limit)


if __name__ == "__main__":
    main()
