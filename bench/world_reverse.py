"""Which training masks teach the world model a name's gender from its pronoun (the quality preset's gap).

The shipped world model picks the right pronoun for a visible name but gives a masked name no
information from a visible pronoun (``bench/world_bench.py`` probes: 1.000 and 0.500), and the
quality preset draws the pronoun first. This script continues a training checkpoint for ``--steps``
steps at a constant learning rate under one mask recipe and prints both probes as it goes, so the
recipes can be compared from the same weights:

- ``uniform``: the trainer's masks (``mask_tokens``, then ``keep_prompts`` as the run had them);
- ``rare-first``: the same, with ``--fraction`` of the rows masked rarest tokens first
  (``rare_first_masks``, the trainer's ``--rare-first-fraction``);
- ``pronoun-visible``: a diagnostic, not a recipe: in ``--fraction`` of the sentences the name and
  surname are masked and the pronoun shown, whatever the row's noise level. It names the language's
  slots, so the trainer does not offer it; it measures how often that configuration must be
  trained for the mapping to be learnt.

    python bench/world_reverse.py --run RUN --mode pronoun-visible --fraction 0.5 --steps 400 --save OUT
    python -m dllm_viz.train export --run OUT --out OUT/export   # then: bench/world_bench.py --model OUT/export
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import asdict
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing
sys.path.insert(0, str(Path(__file__).resolve().parent))

from world_bench import probes  # noqa: E402

from dllm_viz.train.train import (  # noqa: E402
    TrainConfig,
    build_model,
    keep_prompts,
    mask_tokens,
    rare_first_masks,
    sample_windows,
    stratified_t,
    unigram_surprisal,
)
from dllm_viz.models.tokenizer import EmbeddedTokenizer  # noqa: E402
from dllm_viz.world import SLOTS  # noqa: E402
from dllm_viz.world.language import FEMALE, MALE  # noqa: E402

PRONOUN_OFFSET = SLOTS.index("pronoun") - SLOTS.index("first")  # 15 tokens: every word is one token


def pronoun_visible(x: torch.Tensor, masked: torch.Tensor, first_names: torch.Tensor, fraction: float,
                    generator: torch.Generator) -> torch.Tensor:
    """Mask name and surname and unmask the pronoun of ``fraction`` of the sentences in ``x (B, N)``."""
    starts = first_names[x[:, : x.shape[1] - PRONOUN_OFFSET]].nonzero()  # (S, 2): (row, first-name position)
    chosen = starts[torch.rand(len(starts), generator=generator) < fraction]
    rows, cols = chosen[:, 0], chosen[:, 1]
    masked = masked.clone()
    masked[rows, cols], masked[rows, cols + 1], masked[rows, cols + PRONOUN_OFFSET] = True, True, False
    return masked


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--run", type=Path, required=True, help="run folder: ckpt.pt, tokenizer.json, tokens.pt")
    parser.add_argument("--mode", choices=("uniform", "rare-first", "pronoun-visible"), default="uniform")
    parser.add_argument("--fraction", type=float, default=0.5)
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--every", type=int, default=50)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--save", type=Path, default=None, help="write OUT/ckpt.pt + tokenizer.json (trainer format)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    state = torch.load(args.run / "ckpt.pt", weights_only=False)
    cfg = TrainConfig(**state["train_config"])
    tokenizer = EmbeddedTokenizer.from_file(args.run / "tokenizer.json")
    model = build_model(cfg, tokenizer)
    model.load_state_dict(state["model"])
    train = torch.load(args.run / "tokens.pt")["train"]
    surprisal = unigram_surprisal(train, tokenizer.vocab_size)  # (V,)
    first_names = torch.zeros(tokenizer.vocab_size, dtype=torch.bool)  # (V,)
    first_names[[tokenizer.encode(n)[0] for n in FEMALE + MALE]] = True
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.98), weight_decay=cfg.weight_decay)
    gen = torch.Generator().manual_seed(args.seed)
    print(f"{args.run} step {state['step']}, mode {args.mode}, fraction {args.fraction}, lr {args.lr}", flush=True)
    for step in range(args.steps + 1):
        if step % args.every == 0:
            model.eval()
            print(step, probes(model), flush=True)
            model.train()
        if step == args.steps:
            break
        x = sample_windows(train, cfg.batch_size, cfg.max_length, gen)  # (B, N)
        t = stratified_t(cfg.batch_size, cfg.t_min, gen)
        _, masked = mask_tokens(x, t, model.mask_token_id, gen)
        if args.mode == "rare-first":
            masked = rare_first_masks(x, t, surprisal, args.fraction, masked, gen)
        masked = keep_prompts(masked, cfg.prompt_fraction, gen)
        if args.mode == "pronoun-visible":
            masked = pronoun_visible(x, masked, first_names, args.fraction, gen)
        h = model.features(torch.where(masked, model.mask_token_id, x))[masked]  # (M, D)
        ce = F.cross_entropy(model.head(h), x[masked], reduction="none")  # (M,)
        loss = (ce * (1.0 / t)[:, None].expand_as(x)[masked]).sum() / x.numel()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        opt.step()
    if args.save is not None:
        args.save.mkdir(parents=True, exist_ok=True)
        tokenizer.save(args.save / "tokenizer.json")
        torch.save({"model": model.state_dict(), "step": state["step"] + args.steps, "train_config": asdict(cfg)},
                   args.save / "ckpt.pt")


if __name__ == "__main__":
    main()
