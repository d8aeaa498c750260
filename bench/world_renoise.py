"""The renoising world model (dllm_viz/assets/world-renoise) under transformers' own ``generate()``.

(a) valid runs: the 4 world prompts x 16 seeds, prompt + 48 tokens (3 canvases of 16), each run
    ``torch.manual_seed(seed); model.generate(prompt_ids)`` at batch 1 with the checkpoint's
    ``generation_config.json`` (DiffusionGemma's defaults: 48 steps at most per canvas, entropy bound
    0.1, temperature 0.8 -> 0.4, stability 1, confidence 0.005); a run is valid when the checker
    finds a complete sentence and no broken rule in prompt + text. 95% Wilson intervals.
(b) the oracle beside: ``WorldOracle`` is a masked model (exact marginals given the visible words). A
    renoise decoder shows it no masks, so it runs here as the perfect denoiser *told where the noise
    is*: at every step the positions ``generate()`` accepted at the step before are visible, the
    others (fresh uniform noise) are hidden, and its log-marginals are the logits. Everything else is
    transformers' loop unchanged (temperature schedule, multinomial proposal, entropy-bound acceptance
    from the tempered logits, renoise, stop), so (b) is what the shipped settings do to a model that
    knows the language and never mistakes noise for a word; (a) - (b) is what the trained model has not
    learnt, including telling noise from words, which the oracle is given.

    python bench/world_renoise.py                          # the shipped model
    python bench/world_renoise.py --model RUN/export --seeds 4 --no-oracle
    python bench/world_renoise.py --json out.json
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

import torch
from transformers import DiffusionGemmaForBlockDiffusion
from transformers.modeling_outputs import ModelOutput

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from dllm_viz import assets  # noqa: E402
from dllm_viz.models.base import NEVER_LOGIT  # noqa: E402
from dllm_viz.models.tokenizer import EmbeddedTokenizer  # noqa: E402
from dllm_viz.world import SLOTS, WorldOracle, check  # noqa: E402
from dllm_viz.world.oracle import NEWLINE, SENTENCE  # noqa: E402
from dllm_viz.world.score import WORLD_PROMPTS, format_rate, rate  # noqa: E402

MODEL_DIR = assets.path("world-renoise")


def run_generate(model, tokenizer: EmbeddedTokenizer, prompt: str, seed: int, **settings) -> tuple[str, float]:
    """One run: ``torch.manual_seed(seed)`` then transformers' ``generate()`` at batch 1. Returns the
    text (prompt + generation) and the decoder forwards it took."""
    ids = torch.tensor([tokenizer.encode(prompt)])
    torch.manual_seed(seed)
    out = model.generate(ids, **settings)
    new = out.sequences.shape[1] - ids.shape[1]
    return tokenizer.decode(out.sequences[0].tolist()), new / float(out.tokens_per_forward[0])


def measure(model, tokenizer: EmbeddedTokenizer, seeds: int, **settings) -> dict:
    """The floor's runs (``WORLD_PROMPTS`` x seeds 0..seeds-1): valid runs with their interval, the rules
    broken, mean decoder forwards, one example per prompt."""
    valid, rules, forwards, examples = 0, Counter(), [], {}
    for prompt in WORLD_PROMPTS:
        for seed in range(seeds):
            text, n = run_generate(model, tokenizer, prompt, seed, **settings)
            verdict = check(text)
            valid += verdict.valid
            rules.update(verdict.rules())
            forwards.append(n)
            examples.setdefault(prompt, text)
    runs = len(WORLD_PROMPTS) * seeds
    return {"valid_runs": rate(valid, runs), "runs_breaking": {r: rate(k, runs) for r, k in sorted(rules.items())},
            "mean_forwards": round(sum(forwards) / runs, 2), "examples": examples}


class RenoiseOracle(DiffusionGemmaForBlockDiffusion):
    """``WorldOracle`` inside ``DiffusionGemmaForBlockDiffusion.generate()``, told where the noise is (module doc).

    Three hooks of the generation mixin record what the oracle needs; ``forward`` returns its logits.
    The network weights are never used."""

    def bind(self, tokenizer: EmbeddedTokenizer) -> RenoiseOracle:
        self.oracle, self.tok = WorldOracle(), tokenizer
        words = self.oracle.tokenizer
        # BPE id of each (slot, oracle word): first names start a line, punctuation and the newline take no space.
        self.to_bpe = torch.full((SENTENCE, self.oracle.vocab_size), -1, dtype=torch.long)  # (23, W)
        for slot in range(SENTENCE):
            for word, j in words.ids.items():
                if word in ("<pad>", "<eos>", "<mask>"):
                    continue
                start = slot < len(SLOTS) and SLOTS[slot] == "first"
                piece = word if start or word in ",." or word == NEWLINE else " " + word
                ids = tokenizer.encode(piece)
                if len(ids) == 1:
                    self.to_bpe[slot, j] = ids[0]
        self.to_word = {}  # BPE id -> oracle word id (leading space dropped)
        for j, word in enumerate(words.pieces[3:], start=3):
            for piece in (word, " " + word):
                ids = tokenizer.encode(piece)
                if len(ids) == 1:
                    self.to_word[ids[0]] = j
        return self

    def _prepare_encoder_inputs(self, input_ids, *args, **kwargs):
        self._context = input_ids.clone()  # (B, L): prompt and every canvas so far
        return super()._prepare_encoder_inputs(input_ids, *args, **kwargs)

    def _prepare_sampler(self, generation_config):
        self._sampler = super()._prepare_sampler(generation_config)
        return self._sampler

    def _prepare_denoiser_inputs(self, *args, **kwargs):
        self._sampler.accepted_token_mask = None  # a new canvas: all noise
        return super()._prepare_denoiser_inputs(*args, **kwargs)

    def forward(self, decoder_input_ids=None, **kwargs):
        B, C = decoder_input_ids.shape
        accepted = self._sampler.accepted_token_mask
        visible = torch.zeros(B, C, dtype=torch.bool) if accepted is None else accepted.cpu()
        mask = self.oracle.mask_token_id
        context = self._context.cpu().clone().apply_(lambda i: self.to_word.get(i, mask))  # (B, L) oracle word ids
        canvas = decoder_input_ids.cpu().clone().apply_(lambda i: self.to_word.get(i, mask))
        words = torch.cat([context, torch.where(visible, canvas, torch.full_like(canvas, mask))], dim=1)
        log_p = self.oracle(words)[:, -C:]  # (B, C, W)
        slots = torch.arange(words.shape[1] - C, words.shape[1]) % SENTENCE  # (C,)
        logits = torch.full((B, C, self.config.text_config.vocab_size), NEVER_LOGIT)
        bpe = self.to_bpe[slots]  # (C, W)
        for c in range(C):
            keep = bpe[c] >= 0
            logits[:, c, bpe[c][keep]] = log_p[:, c, keep]
        return ModelOutput(logits=logits.to(decoder_input_ids.device))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", type=Path, default=MODEL_DIR, help="a from_pretrained folder (default: shipped)")
    parser.add_argument("--seeds", type=int, default=16, help="seeds per prompt (the floor: 16)")
    parser.add_argument("--no-oracle", action="store_true")
    parser.add_argument("--no-model", action="store_true", help="the oracle's rows only")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    tokenizer = EmbeddedTokenizer.from_file(args.model / "tokenizer.json")
    rows = {}
    if not args.no_model:
        t = time.perf_counter()
        model = DiffusionGemmaForBlockDiffusion.from_pretrained(args.model).eval()
        rows["model"] = measure(model, tokenizer, args.seeds)
        rows["model"]["wall_s"] = round(time.perf_counter() - t, 1)
    if not args.no_oracle:
        t = time.perf_counter()
        oracle = RenoiseOracle.from_pretrained(args.model).eval().bind(tokenizer)
        rows["oracle, told where"] = measure(oracle, tokenizer, args.seeds)
        rows["oracle, told where"]["wall_s"] = round(time.perf_counter() - t, 1)
    for name, row in rows.items():
        broken = ", ".join(f"{r} {format_rate(v)}" for r, v in row["runs_breaking"].items()) or "none"
        print(f"{name}: valid runs {row['valid_runs']['k']}/{row['valid_runs']['n']} {format_rate(row['valid_runs'])}; "
              f"mean forwards {row['mean_forwards']}; runs breaking: {broken}; {row['wall_s']} s")
        for prompt, text in row["examples"].items():
            print(f"    {text!r}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
