"""Train and export the renoising world model: ``python -m dllm_viz.train renoise {fit,export}``.

The objective and the model are in ``renoise.py``; this module holds the loop (AdamW, warm-up then
cosine, checkpoints that ``--resume`` continues exactly, a held-out evaluation), the export to a folder
that ``DiffusionGemmaForBlockDiffusion.from_pretrained`` loads offline, and the command line. The corpus
is the world model's (``scripts/make_world_data.py``), tokenised by the world model's own tokenizer
through the trainer's data pipeline (``train.data.load_corpus``).
"""
from __future__ import annotations

import argparse
import json
import logging
import math
import shutil
import time
from dataclasses import asdict, fields, replace
from pathlib import Path

import torch
import torch.nn.functional as F
from transformers.models.diffusion_gemma.generation_diffusion_gemma import (
    DiffusionGemmaGenerationConfig,
    EntropyBoundSamplerConfig,
)

from dllm_viz import assets
from dllm_viz.models.tokenizer import EmbeddedTokenizer
from dllm_viz.train.renoise import (
    RenoiseConfig,
    build_model,
    corrupt,
    encode,
    renoise_loss,
    sample_blocks,
    sample_t,
    sentence_starts,
)
from dllm_viz.train.checkpoint import save_checkpoint
from dllm_viz.train.data import load_corpus
from dllm_viz.train.optim import lr_at

log = logging.getLogger(__name__)

# transformers' AutoTokenizer reads the world tokenizer.json through this (the same ids as EmbeddedTokenizer).
TOKENIZER_CONFIG = {"tokenizer_class": "PreTrainedTokenizerFast", "pad_token": "<pad>", "eos_token": "<eos>",
                    "mask_token": "<mask>", "clean_up_tokenization_spaces": False}
PROGRESS_EVERY = 100  # steps between progress lines
EVAL_T = (0.25, 0.5, 0.75, 1.0)  # corruption levels of the held-out evaluation
EVAL_CONTEXTS = (1, 9, 23, 41)  # clean context lengths: the shortest prompt, the longest, and whole sentences after
# generate()'s own defaults (DiffusionGemmaGenerationConfig._get_default_generation_params), 48 new tokens.
SHIPPED_GENERATION = {"max_new_tokens": 48, "max_denoising_steps": 48, "entropy_bound": 0.1, "t_min": 0.4,
                      "t_max": 0.8, "stability_threshold": 1, "confidence_threshold": 0.005}


def generation_config(tokenizer: EmbeddedTokenizer, **settings: float) -> DiffusionGemmaGenerationConfig:
    """The ``generation_config.json`` the model ships: ``SHIPPED_GENERATION`` with ``settings`` over it."""
    s = {**SHIPPED_GENERATION, **settings}
    return DiffusionGemmaGenerationConfig(
        max_new_tokens=int(s["max_new_tokens"]), max_denoising_steps=int(s["max_denoising_steps"]),
        sampler_config=EntropyBoundSamplerConfig(entropy_bound=float(s["entropy_bound"])), t_min=float(s["t_min"]),
        t_max=float(s["t_max"]), stability_threshold=int(s["stability_threshold"]),
        confidence_threshold=float(s["confidence_threshold"]), pad_token_id=tokenizer.pad_token_id)


@torch.no_grad()
def evaluate(model, tokens: torch.Tensor, newline_id: int, cfg: RenoiseConfig) -> dict[str, float]:
    """Held-out figures on fixed blocks (a fixed generator, so evaluations compare like with like).

    ``ce@t``: the canvas cross-entropy (bits/token) at corruption level t, one pass, no self-conditioning;
    ``acc@t``: argmax accuracy over the canvas; ``ce_sc@1``: at t = 1 (pure noise, a decode's first step)
    after one self-conditioning pass, as ``generate()``'s second step reads it; ``encoder_bits``: the
    encoder's next-token cross-entropy on the clean contexts (bits/token).
    """
    was_training = model.training
    model.eval()
    gen = torch.Generator().manual_seed(1234)
    per = max(1, cfg.eval_windows // len(EVAL_CONTEXTS))
    sums: dict[str, float] = {}
    for length in EVAL_CONTEXTS:
        starts = sentence_starts(tokens, newline_id, length + cfg.canvas_length)
        pick = starts[torch.linspace(0, starts.numel() - 1, per).long()]  # (W,) evenly spaced lines
        rows = tokens[pick[:, None] + torch.arange(length + cfg.canvas_length)].long()
        context, x0 = rows[:, :length], rows[:, length:]  # (W, L), (W, C)
        cache, hidden = encode(model, context)
        targets = torch.cat([context[:, 1:], x0[:, :1]], dim=1)
        ar = torch.tanh(model.lm_head(hidden).float() / model.final_logit_softcapping) * model.final_logit_softcapping
        sums["encoder_bits"] = sums.get("encoder_bits", 0.0) + F.cross_entropy(ar.transpose(1, 2), targets).item()
        for t_value in EVAL_T:
            xt, _ = corrupt(x0, torch.full((per,), t_value), model.config.text_config.vocab_size, gen)
            logits = model(cache=cache, decoder_input_ids=xt).logits  # (W, C, V)
            ce = F.cross_entropy(logits.transpose(1, 2), x0).item()
            acc = (logits.argmax(-1) == x0).float().mean().item()
            sums[f"ce@{t_value:g}"] = sums.get(f"ce@{t_value:g}", 0.0) + ce
            sums[f"acc@{t_value:g}"] = sums.get(f"acc@{t_value:g}", 0.0) + acc
            if t_value == 1.0:
                again = model(cache=cache, decoder_input_ids=xt, self_conditioning_logits=logits).logits
                sums["ce_sc@1"] = sums.get("ce_sc@1", 0.0) + F.cross_entropy(again.transpose(1, 2), x0).item()
    model.train(was_training)
    out = {k: v / len(EVAL_CONTEXTS) for k, v in sums.items()}
    return {k: (v / math.log(2) if not k.startswith("acc") else v) for k, v in out.items()}


def _corpus(data: Path, run: Path) -> tuple[EmbeddedTokenizer, torch.Tensor, torch.Tensor]:
    """The world tokenizer (copied into the run, never retrained) and both token streams."""
    run.mkdir(parents=True, exist_ok=True)
    if not (run / "tokenizer.json").is_file():
        shutil.copy(assets.path("world") / "tokenizer.json", run / "tokenizer.json")
    tokenizer, train_tokens, heldout_tokens, _ = load_corpus(data, run, 0)
    return tokenizer, train_tokens, heldout_tokens


def fit(cfg: RenoiseConfig, *, data: Path, run: Path, resume: bool = False, threads: int | None = None,
        time_limit_min: float | None = None) -> dict[str, float]:
    """Train into ``run/`` (tokenizer.json, tokens.pt, ckpt.pt, log.jsonl). Returns the last evaluation.

    Each step draws one context length for the batch (uniform in ``[1, max_context]``, so no padding),
    then ``batch_size`` line-aligned blocks, and takes one AdamW step on ``renoise_loss``. All randomness
    comes from one generator seeded by ``cfg.seed`` and saved in the checkpoint.
    """
    if threads is not None:
        torch.set_num_threads(threads)
    tokenizer, train_tokens, heldout_tokens = _corpus(data, run)
    newline = tokenizer.encode("\n")[0]
    ckpt_path, log_path = run / "ckpt.pt", run / "log.jsonl"
    state = None
    if resume and ckpt_path.is_file():
        state = torch.load(ckpt_path, weights_only=False)
        cfg = replace(RenoiseConfig(**state["train_config"]), steps=cfg.steps)  # the saved recipe wins, but --steps
    model = build_model(cfg, tokenizer)
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": cfg.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=cfg.lr, betas=(0.9, 0.98))
    gen = torch.Generator().manual_seed(cfg.seed)
    step, elapsed, cpu = 0, 0.0, 0.0
    if state is not None:
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optim"])
        gen.set_state(state["generator"])
        step, elapsed, cpu = state["step"], state["elapsed"], state.get("cpu", 0.0)
    (run / "train_config.json").write_text(json.dumps(asdict(cfg), indent=2))
    starts = {n: sentence_starts(train_tokens, newline, n + cfg.canvas_length) for n in range(1, cfg.max_context + 1)}
    log.info("model: %.2fM parameters (%.2fM without the vision tower); train %d tokens; starting at step %d",
             model.num_parameters() / 1e6, text_parameters(model) / 1e6, train_tokens.numel(), step)
    model.train()
    last: dict[str, float] = {}
    t0, c0 = time.time() - elapsed, time.process_time() - cpu  # wall clock and this process's CPU time
    while step < cfg.steps:
        length = int(torch.randint(1, cfg.max_context + 1, (), generator=gen))
        context, x0 = sample_blocks(train_tokens, starts[length], cfg.batch_size, length, cfg.canvas_length, gen)
        t = sample_t(cfg.batch_size, cfg.t_min, gen)
        for group in opt.param_groups:
            group["lr"] = lr_at(step, cfg)
        out = renoise_loss(model, context, x0, t, gen, self_cond_p=cfg.self_cond_p,
                           encoder_loss_weight=cfg.encoder_loss_weight)
        opt.zero_grad(set_to_none=True)
        out.loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        opt.step()
        step += 1
        if step % PROGRESS_EVERY == 0:
            log.info("step %d loss %.3f (diffusion %.3f, encoder %.3f) %.0f s wall, %.0f s CPU", step, out.loss.item(),
                     out.diffusion.item(), out.encoder.item(), time.time() - t0, time.process_time() - c0)
        done = step == cfg.steps or (time_limit_min is not None and time.time() - t0 > 60 * time_limit_min)
        if step % cfg.eval_every == 0 or done:
            last = evaluate(model, heldout_tokens, newline, cfg)
            record = {"step": step, "elapsed_s": round(time.time() - t0, 1),
                      "cpu_s": round(time.process_time() - c0, 1),
                      "train_loss": out.loss.item(),
                      "train_diffusion": out.diffusion.item(), "train_encoder": out.encoder.item(), **last}
            with log_path.open("a") as f:
                f.write(json.dumps(record) + "\n")
            log.info("%s", json.dumps(record))
        if step % cfg.ckpt_every == 0 or done:
            save_checkpoint(ckpt_path, model=model.state_dict(), optim=opt.state_dict(), step=step,
                             generator=gen.get_state(), elapsed=time.time() - t0, cpu=time.process_time() - c0,
                             train_config=asdict(cfg))
        if done:
            break
    return last


def text_parameters(model) -> int:
    """Parameters without the (unused, minimal) vision tower and its projection, tied weights once."""
    return sum(p.numel() for n, p in model.named_parameters() if "vision" not in n)


def export(run: Path, out: Path, *, dtype: torch.dtype = torch.float32, **settings: float) -> Path:
    """Write ``out/``: ``config.json``, ``model.safetensors`` (``dtype``), ``generation_config.json``
    (``SHIPPED_GENERATION`` with ``settings`` over it), the world ``tokenizer.json`` and the run's
    ``train_log.jsonl``: a folder ``DiffusionGemmaForBlockDiffusion.from_pretrained`` loads offline, and
    ``AutoTokenizer.from_pretrained`` too (``tokenizer_config.json``)."""
    state = torch.load(run / "ckpt.pt", weights_only=False)
    cfg = RenoiseConfig(**state["train_config"])
    tokenizer = EmbeddedTokenizer.from_file(run / "tokenizer.json")
    model = build_model(cfg, tokenizer)
    model.load_state_dict(state["model"])
    model.generation_config = generation_config(tokenizer, **settings)
    out.mkdir(parents=True, exist_ok=True)
    model.to(dtype).save_pretrained(out)
    tokenizer.save(out / "tokenizer.json")
    (out / "tokenizer_config.json").write_text(json.dumps(TOKENIZER_CONFIG, indent=1) + "\n")
    if (run / "log.jsonl").is_file():
        shutil.copy(run / "log.jsonl", out / "train_log.jsonl")
    (out / "train_config.json").write_text(json.dumps({**asdict(cfg), "trained_steps": state["step"]}, indent=2) + "\n")
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m dllm_viz.train renoise", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p_fit = sub.add_parser("fit", help="train (or resume) a renoise run")
    p_fit.add_argument("--data", type=Path, required=True, help="folder with train.txt and heldout.txt (world corpus)")
    p_fit.add_argument("--out", type=Path, required=True, help="run folder (checkpoints, logs)")
    p_fit.add_argument("--resume", action="store_true", help="continue from OUT/ckpt.pt if present")
    p_fit.add_argument("--threads", type=int, default=None, help="torch.set_num_threads")
    p_fit.add_argument("--time-limit", type=float, default=None, help="stop (and checkpoint) after N minutes")
    for f in fields(RenoiseConfig):
        p_fit.add_argument("--" + f.name.replace("_", "-"), type=type(f.default), default=f.default)
    p_exp = sub.add_parser("export",
                           help="write a from_pretrained folder (config, safetensors, generation config, tokenizer)")
    p_exp.add_argument("--run", type=Path, required=True)
    p_exp.add_argument("--out", type=Path, required=True)
    p_exp.add_argument("--dtype", choices=("float32", "float16"), default="float32")
    args = parser.parse_args(argv)
    if args.command == "export":
        print(export(args.run, args.out, dtype=getattr(torch, args.dtype)))
        return
    cfg = RenoiseConfig(**{f.name: getattr(args, f.name) for f in fields(RenoiseConfig)})
    fit(cfg, data=args.data, run=args.out, resume=args.resume, threads=args.threads, time_limit_min=args.time_limit)
