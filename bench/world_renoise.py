"""The renoising world model (dllm_viz/assets/world-renoise) under transformers' own ``generate()``.

(a) valid runs: the 4 world prompts x 16 seeds, prompt + 48 tokens (3 canvases of 16), each run
    ``torch.manual_seed(seed); model.generate(prompt_ids)`` at batch 1 with the checkpoint's
    ``generation_config.json`` (DiffusionGemma's defaults: 48 steps at most per canvas, entropy bound
    0.1, temperature 0.8 -> 0.4, stability 1, confidence 0.005); a run is valid when the checker
    finds a complete sentence and no broken rule in prompt + text. 95% Wilson intervals.
(b) the oracles beside, run inside the same ``generate()`` (temperature schedule, multinomial proposal,
    entropy-bound acceptance from the tempered logits, renoise, stop: transformers' loop unchanged; only
    the logits come from the language's definition instead of a network):
    - "oracle, exact posterior" (``RenoisePosterior``): the optimum of the training objective, what a
      perfectly trained renoise model predicts. Given the clean context and the noisy canvas, the exact
      posterior of each clean canvas token under the world language (uniform free choices) and the
      training corruption (each token replaced with probability t by a uniform id, t ~ U(0, 1)
      integrated out on a grid). It is told nothing about which tokens are noise;
    - "oracle, told where" (``RenoiseOracle``): ``WorldOracle``, the masked model of the language's
      exact marginals, with the positions ``generate()`` accepted at the step before visible and the
      others hidden: a perfect masked model in a renoise loop, never misled by noise.
    So (b) is what the shipped settings do to a model that knows the language; (a) - (b) is what the
    trained model has not learnt.

    python bench/world_renoise.py                          # the shipped model
    python bench/world_renoise.py --model RUN/export --seeds 4 --no-oracle
    python bench/world_renoise.py --json out.json
"""
from __future__ import annotations

import argparse
import json
import math
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
from dllm_viz.world.language import SLOT_WORDS  # noqa: E402
from dllm_viz.world.oracle import GROUPS, NEWLINE, SENTENCE  # noqa: E402
from dllm_viz.studies.world_score import WORLD_PROMPTS, format_rate, rate  # noqa: E402

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


def _slot_bpe(tokenizer: EmbeddedTokenizer, slot: int, word: str) -> int:
    """The BPE id of ``word`` in sentence slot ``slot`` (a first name starts a line; punctuation and the
    newline take no space; every other word one)."""
    start = slot < len(SLOTS) and SLOTS[slot] == "first"
    piece = word if start or word in ",." or word == NEWLINE else " " + word
    ids = tokenizer.encode(piece)
    if len(ids) != 1:
        raise ValueError(f"word={word!r}: {len(ids)} tokens in slot {slot}; the world tokenizer has one per word")
    return ids[0]


class RenoiseOracle(DiffusionGemmaForBlockDiffusion):
    """``WorldOracle`` inside ``DiffusionGemmaForBlockDiffusion.generate()``, told where the noise is (module doc).

    Three hooks of the generation mixin record what the oracle needs; ``forward`` returns its logits.
    The network weights are never used."""

    def bind(self, tokenizer: EmbeddedTokenizer) -> RenoiseOracle:
        self.oracle = WorldOracle()
        words = self.oracle.tokenizer
        self.to_bpe = torch.full((SENTENCE, self.oracle.vocab_size), -1, dtype=torch.long)  # (23, W): -1 off the slot
        for slot, name in enumerate((*SLOTS, NEWLINE)):
            for word in SLOT_WORDS.get(name, {NEWLINE}):
                self.to_bpe[slot, words.ids[word]] = _slot_bpe(tokenizer, slot, word)
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


class RenoisePosterior(DiffusionGemmaForBlockDiffusion):
    """The exact denoiser of the uniform-noise objective on the world language (module doc, (b)).

    Sentences are independent, and within one the free choices fall into groups (``oracle.GROUPS``:
    the person, the city, the counts); every other slot is fixed by the template. For each noise level
    t of a grid, a group's rows (its possible fillings, uniform a priori, filtered by the clean
    context) are weighted by the likelihood of the canvas tokens in their slots, prod((1 - t) [x = row]
    + t / V); the levels are weighted by the likelihood of the whole canvas. The network weights are
    never used."""

    T_GRID = (torch.arange(200, dtype=torch.float64) + 0.5) / 200  # t ~ U(0, 1), midpoint rule

    def bind(self, tokenizer: EmbeddedTokenizer) -> RenoisePosterior:
        self.groups = [([SLOTS.index(s) for s in slots],
                        torch.tensor([[_slot_bpe(tokenizer, SLOTS.index(s), w) for s, w in zip(slots, row)]
                                      for row in rows]))
                       for slots, rows in GROUPS.items()]  # (slot indices, (R, k) BPE ids)
        grouped = {i for idx, _ in self.groups for i in idx}
        self.fixed = {i: _slot_bpe(tokenizer, i, next(iter(SLOT_WORDS[s]))) for i, s in enumerate(SLOTS)
                      if i not in grouped}
        self.fixed[len(SLOTS)] = _slot_bpe(tokenizer, len(SLOTS), NEWLINE)
        return self

    def _prepare_encoder_inputs(self, input_ids, *args, **kwargs):
        self._context = input_ids.clone()  # (B, L): prompt and every canvas so far
        return super()._prepare_encoder_inputs(input_ids, *args, **kwargs)

    def forward(self, decoder_input_ids=None, **kwargs):
        B, C = decoder_input_ids.shape
        logits = torch.full((B, C, self.config.text_config.vocab_size), NEVER_LOGIT)
        for b in range(B):
            logits[b] = self._posterior(self._context[b].cpu(), decoder_input_ids[b].cpu())
        return ModelOutput(logits=logits.to(decoder_input_ids.device))

    def _posterior(self, context: torch.Tensor, canvas: torch.Tensor) -> torch.Tensor:
        """``(C, V)`` log-posteriors of the clean canvas tokens."""
        L, C, V = context.numel(), canvas.numel(), self.config.text_config.vocab_size
        t = self.T_GRID  # (K,)
        # (K,) a token equal to / other than the clean one
        log_hit, log_miss = torch.log((1 - t) + t / V), torch.log(t / V)
        log_evidence = torch.zeros_like(t)  # (K,) log-likelihood of the canvas at each t
        marginals = []  # (canvas position, (R,) row ids, (R, K) log weights) per group position
        for first in range((L // SENTENCE) * SENTENCE, L + C, SENTENCE):  # sentences that meet the canvas
            for idx, table in self.groups:
                rows = table
                for j, slot in enumerate(idx):  # the clean context filters the rows
                    pos = first + slot
                    if pos < L:
                        keep = rows[:, j] == context[pos]
                        rows = rows[keep] if keep.any() else rows
                log_w = torch.zeros(rows.shape[0], t.numel(), dtype=torch.float64)  # (R, K)
                for j, slot in enumerate(idx):
                    pos = first + slot
                    if L <= pos < L + C:
                        hit = (rows[:, j] == canvas[pos - L]).unsqueeze(1)  # (R, 1)
                        log_w = log_w + torch.where(hit, log_hit, log_miss)
                log_z = torch.logsumexp(log_w, 0) - math.log(rows.shape[0])  # (K,)
                log_evidence = log_evidence + log_z
                for j, slot in enumerate(idx):
                    pos = first + slot
                    if L <= pos < L + C:
                        marginals.append((pos - L, rows[:, j], log_w - log_z - math.log(rows.shape[0])))
            for slot, token in self.fixed.items():
                pos = first + slot
                if L <= pos < L + C:
                    log_evidence = log_evidence + torch.where(canvas[pos - L] == token, log_hit, log_miss)
        post_t = torch.softmax(log_evidence, 0)  # (K,) p(t | canvas)
        out = torch.full((C, V), NEVER_LOGIT)
        probs = torch.zeros(C, V, dtype=torch.float64)
        for c, ids, log_w in marginals:  # p(x0 = row's token) = sum_t p(t | canvas) p(row | canvas, t)
            probs[c].index_add_(0, ids, (log_w.exp() * post_t).sum(1))
        for c in range(C):
            slot = (L + c) % SENTENCE
            if slot in self.fixed:
                probs[c, self.fixed[slot]] = 1.0
        return torch.where(probs > 0, probs.clamp_min(1e-300).log().float(), out)


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
        t = time.perf_counter()
        posterior = RenoisePosterior.from_pretrained(args.model).eval().bind(tokenizer)
        rows["oracle, exact posterior"] = measure(posterior, tokenizer, args.seeds)
        rows["oracle, exact posterior"]["wall_s"] = round(time.perf_counter() - t, 1)
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
