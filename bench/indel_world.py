"""Insert/delete edits on the world model (issue 37): the llada22_indel floor and the counted lesson.

Until `core.indel` is wired into `dllm_viz.decode`, `decode_blocks` is a small standalone loop that runs it
with a model's logits: the canvas is each prompt + `gen_length` positions (masks, or a first draft and
masks), decoded block by block (SGLang's sync loop: one forward for every row, then `indel_step` on each
row's current block, until every row may emit); the prompt is the context before the first block, and a
draft's tokens are visible generated tokens of the block (editable, not original masks).

  floor   `llada22_indel` (SGLang's defaults, one block of 48 since 32 does not split 48) on the 4 world
          prompts x 16 seeds, prompt + 48 tokens: valid runs under the world checker (95% Wilson). The
          preset is greedy, so the 16 seeds of a prompt give one decode; the same 64 runs with draws at
          T = 0.7 (each run's own generator; masks still ranked by the raw argmax's probability) give 64.
  lesson  first drafts with a length error made on purpose: for each prompt and seed a sentence of the
          language that continues the prompt, with one word removed ("missing") or said twice ("extra")
          (`draft`), then masks; decoded with InDel, and with the same loop with DELETE and SPLIT banned
          (their logits -inf: JointThreshold's rule, which can only rewrite tokens in place); "none"
          (the right draft) is the control. Valid runs of each, Wilson.

    python bench/indel_world.py                                  # dllm_viz/assets/world-indel
    python bench/indel_world.py --model RUN_EXPORT --json out.json
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from dllm_viz.core.indel import InDelParams, InDelSettings, InDelState, check_model, indel_step  # noqa: E402
from dllm_viz.studies.stats import format_rate, rate  # noqa: E402
from dllm_viz.world.checker import check  # noqa: E402
from dllm_viz.world.generator import sample_facts, sentence  # noqa: E402
from dllm_viz.studies.world_score import WORLD_PROMPTS  # noqa: E402

GEN_LENGTH = 48
SEEDS = range(16)
KINDS = ("missing", "extra", "none")


@dataclass
class Run:
    text: str  # prompt + generation
    forwards: int = 0  # steps the row took (each one a forward it needed)
    ops: Counter = field(default_factory=Counter)  # operations by kind over the run (core.alignment)

    @property
    def valid(self) -> bool:
        return check(self.text).valid


def settings_for(gen_length: int) -> InDelSettings:
    """`llada22_indel`'s knobs: SGLang's defaults on 32-position blocks where 32 splits the span, else one."""
    block = 32 if gen_length > 32 and gen_length % 32 == 0 else gen_length
    return InDelSettings(block_size=block)


def _draw(logits: torch.Tensor, temperature: float, gens: list[torch.Generator], mask_id: int) -> torch.Tensor:
    """`(A, W)` tokens drawn from softmax(logits / T) (never MASK), one uniform per position from each row's
    generator, by the inverse CDF."""
    probs = torch.softmax((logits / temperature).index_fill(-1, torch.tensor([mask_id]), float("-inf")), dim=-1)
    u = torch.stack([torch.rand(logits.shape[1], generator=g) for g in gens])  # (A, W)
    cdf = probs.cumsum(-1)
    return torch.searchsorted(cdf, (u * cdf[..., -1]).unsqueeze(-1)).squeeze(-1).clamp(max=logits.shape[-1] - 1)


@torch.no_grad()
def decode_blocks(model, prompts: list[list[int]], *, gen_length: int = GEN_LENGTH, drafts: list[list[int]] | None = None,
                  ban_edits: bool = False, temperature: float = 0.0, seeds: list[int] | None = None,
                  settings: InDelSettings | None = None) -> list[Run]:
    """Each prompt + `gen_length` positions decoded with the insert/delete step (`core.indel`); see the module."""
    tokens = check_model(model)
    settings = settings or settings_for(gen_length)
    A = len(prompts)
    start = torch.tensor([len(p) for p in prompts])  # (A,)
    N = int(start.max()) + gen_length
    ids = torch.full((A, N), model.pad_token_id, dtype=torch.long)
    real = torch.zeros(A, N, dtype=torch.bool)
    for a, p in enumerate(prompts):
        gen = (list(drafts[a]) if drafts else [])[:gen_length]
        ids[a, : len(p) + gen_length] = torch.tensor(p + gen + [tokens.mask] * (gen_length - len(gen)))
        real[a, : len(p) + gen_length] = True
    gens = [torch.Generator().manual_seed(s) for s in (seeds or [0] * A)]
    runs = [Run(text="") for _ in range(A)]
    for b0 in range(0, gen_length, settings.block_size):
        w = min(settings.block_size, gen_length - b0)
        params = InDelParams.from_settings([InDelSettings(threshold=settings.threshold,
                                                          edit_threshold=settings.edit_threshold,
                                                          max_post_edit_steps=settings.max_post_edit_steps,
                                                          block_size=w)] * A, tokens)
        cols = start.unsqueeze(-1) + b0 + torch.arange(w)  # (A, w)
        block = ids.gather(1, cols)
        state = InDelState.initial(block, torch.zeros_like(block, dtype=torch.bool), tokens.mask)
        done = torch.zeros(A, dtype=torch.bool)
        while not bool(done.all()):
            logits = model(ids, real).float()  # (A, N, V)
            here = logits.gather(1, cols.unsqueeze(-1).expand(A, w, logits.shape[-1]))  # (A, w, V)
            if ban_edits:
                here = here.index_fill(-1, torch.tensor([tokens.delete, tokens.split]), float("-inf"))
            drawn = _draw(here, temperature, gens, tokens.mask) if temperature > 0 else None
            out = indel_step(here, block, state, params, drawn=drawn)
            for a in (~state.finished).nonzero(as_tuple=True)[0].tolist():
                runs[a].forwards += 1
                runs[a].ops.update(kind for _, kind, _ in out.edits.operations(a))
            block, state, done = out.block, out.state, out.done
            ids.scatter_(1, cols, block)
    for a, p in enumerate(prompts):
        runs[a].text = model.tokenizer.decode(ids[a, : len(p) + gen_length].tolist())
    return runs


def draft(tokenizer, prompt: str, seed: int, kind: str) -> list[int]:
    """The ids of a sentence of the language that continues `prompt` (the first one a `random.Random(seed)`
    draws), after the prompt, with one word (not punctuation, drawn by the same generator) removed
    (`kind="missing"`), said twice (`"extra"`), or neither (`"none"`)."""
    if kind not in KINDS:
        raise ValueError(f"kind={kind!r} is invalid: expected one of {KINDS}")
    rng = random.Random(seed)
    for _ in range(1_000_000):
        text = sentence(sample_facts(rng))
        if text.startswith(prompt) and text[len(prompt)] in " ,":
            break
    else:
        raise ValueError(f"prompt={prompt!r} is invalid: no sentence of the language continues it")
    ids = tokenizer.encode(text[len(prompt):])
    words = [i for i, t in enumerate(ids) if tokenizer.decode([t]).strip().isalnum()]
    i = rng.choice(words)
    if kind == "missing":
        return ids[:i] + ids[i + 1:]
    if kind == "extra":
        return ids[: i + 1] + [ids[i]] + ids[i + 1:]
    return ids


def floor(model, *, temperature: float = 0.0) -> list[Run]:
    """The 64 runs of the floor: 4 prompts x 16 seeds."""
    prompts = [model.tokenizer.encode(p) for p in WORLD_PROMPTS for _ in SEEDS]
    seeds = [s for _ in WORLD_PROMPTS for s in SEEDS]
    return decode_blocks(model, prompts, temperature=temperature, seeds=seeds)


def lesson(model, kind: str, *, ban_edits: bool) -> list[Run]:
    """The lesson's 64 runs of one kind of first draft: 4 prompts x 16 seeds."""
    tok = model.tokenizer
    prompts = [tok.encode(p) for p in WORLD_PROMPTS for _ in SEEDS]
    drafts = [draft(tok, p, 1000 * i + s, kind) for i, p in enumerate(WORLD_PROMPTS) for s in SEEDS]
    return decode_blocks(model, prompts, drafts=drafts, ban_edits=ban_edits)


def summary(runs: list[Run]) -> dict:
    ops = Counter()
    for r in runs:
        ops.update(r.ops)
    return {"valid_runs": rate(sum(r.valid for r in runs), len(runs)),
            "forwards": round(sum(r.forwards for r in runs) / len(runs), 2), "ops": dict(sorted(ops.items()))}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="world-indel", help="a shipped name or an exported folder")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    from dllm_viz import load_model

    model = load_model(args.model, device="cpu")
    t0 = time.time()
    out: dict = {"model": model.name, "floor": {}, "lesson": {}}
    for label, temperature in (("argmax (as shipped; 4 distinct decodes)", 0.0), ("draws at T = 0.7", 0.7)):
        out["floor"][label] = summary(floor(model, temperature=temperature))
    for kind in KINDS:
        out["lesson"][kind] = {rule: summary(lesson(model, kind, ban_edits=rule == "joint_threshold"))
                               for rule in ("indel", "joint_threshold")}
    out["seconds"] = round(time.time() - t0, 1)
    print(f"{model.name}: llada22_indel, 4 prompts x 16 seeds, prompt + {GEN_LENGTH} tokens ({out['seconds']} s)")
    for label, s in out["floor"].items():
        print(f"  floor, {label:42} {format_rate(s['valid_runs']):>14}  forwards {s['forwards']:5.2f}  {s['ops']}")
    for kind, rules in out["lesson"].items():
        for rule, s in rules.items():
            print(f"  lesson, first draft {kind:8} {rule:16} {format_rate(s['valid_runs']):>14}  "
                  f"forwards {s['forwards']:5.2f}  {s['ops']}")
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
