"""Quality floor of the embedded model at the article's presets (and, with --speed, its speed).

    python bench/model_quality.py                      # shipped model, all four presets
    python bench/model_quality.py --path RUN_EXPORT    # any folder written by `dllm_viz.train export`
    python bench/model_quality.py --speed              # + forward 8 x 128, re-decode 64 tokens, cold load

Figures per preset (64 generated tokens, our own prompts, several seeds):
- dict%: share of generated words found in /usr/share/dict/words (Debian wamerican), compared
  as written or lower-cased; a last word cut off by the end of the canvas is not counted;
- rep3w% / rep3t%: share of word / token 3-grams that repeat an earlier one in the same sample;
- logp: mean log-probability of the drawn tokens (from the trace), nfe: forward passes.
The same figures for held-out Austen passages of the same length are printed as a reference
when --heldout is given. The issue's floor: balanced dict% >= 90 and rep3 < 15.

Baseline figures for the next model (issue 12), each optional:
- --judge DATA/judge.txt: fluency = perplexity of the generated words under a word trigram
  Kneser-Ney model built from text no model trains on (``bench/ngram.py``), divided by the same
  for held-out Austen passages of the same token length (needs --heldout); 1.0 reads like Austen
  to the judge, higher is worse. Copying training text gains nothing: the judge never saw it.
- --loops: share of greedy (temperature 0) outputs, per preset schedule, with a repeated word 4-gram.
- --bpc: held-out bits/char (the ELBO bound of ``dllm_viz.train.evaluation.evaluate``: 48 windows of 256
  tokens, 8 noise levels; needs --heldout).
- --word-errors TRAIN_TEXT: what the words outside the dictionary are made of. Each generated
  word is mapped to the tokens that spell it: one piece (a fragment, or a word the dictionary
  lacks: TRAIN_TEXT's own word forms, such as Austen's names and British spellings, are counted
  apart), or several pieces joined in one step (confirmed side by side, each without seeing the
  other: parallel decoding's mistake) or across steps (the later piece saw the earlier one).
- --json PATH: every figure and the samples, for the model card and later comparisons.
"""
from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from a checkout
sys.path.insert(0, str(Path(__file__).resolve().parent))

from ngram import KneserNeyTrigram, has_repeated_ngram, word_tokens  # noqa: E402

from dllm_viz import DecodeConfig, decode
from dllm_viz.core.config import PRESETS
from dllm_viz.models.embedded import load_embedded

# Our own prompts (not taken from the corpus), in the register of the training text.
PROMPTS = (
    "It was a cold morning in November, and the whole family",
    "Mrs. Palmer had never been so much surprised in her life as when",
    "\"My dear sister,\" said she, \"I cannot think",
    "The house stood at the end of a long avenue of elms, and",
    "He had not been in the room five minutes before",
    "Nothing could be more agreeable than the prospect of",
    "She wrote to her brother the next day, telling him that",
    "Their conversation at dinner turned chiefly upon",
)
WORD = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)?")


def load_dictionary(path: Path = Path("/usr/share/dict/words")) -> set[str]:
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: install Debian's wamerican package")
    return {w.strip() for w in path.read_text(encoding="utf-8", errors="replace").splitlines() if w.strip()}


def word_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of the words of a generated text, without a last word cut off by the end of
    the canvas."""
    spans = [m.span() for m in WORD.finditer(text)]
    if spans and text[-1].isalpha():
        spans = spans[:-1]
    return spans


def words_of(text: str) -> list[str]:
    """Words of a generated text, without a last word cut off by the end of the canvas."""
    return [text[a:b] for a, b in word_spans(text)]


def repeat_share(items: list, n: int = 3) -> float:
    grams = [tuple(items[i : i + n]) for i in range(len(items) - n + 1)]
    return 1 - len(set(grams)) / len(grams) if grams else 0.0


def text_figures(texts: list[str], dictionary: set[str]) -> dict[str, float]:
    words = [words_of(t) for t in texts]
    flat = [w for ws in words for w in ws]
    known = sum(w in dictionary or w.lower() in dictionary for w in flat)
    return {
        "dict%": 100 * known / max(1, len(flat)),
        "rep3w%": 100 * statistics.mean(repeat_share([w.lower() for w in ws]) for ws in words),
        "words": len(flat),
    }


def run_preset(model, name: str, gen_length: int, seeds: int, dictionary: set[str],
               author_words: set[str] | None = None) -> tuple[dict, list[str]]:
    prompts = [p for p in PROMPTS for _ in range(seeds)]
    configs = [DecodeConfig.preset(name, gen_length, seed=s) for _ in PROMPTS for s in range(seeds)]
    with torch.inference_mode():
        traces = decode(model, prompts, configs, record_candidates=0)
    texts = [t.text or "" for t in traces]
    figures = text_figures(texts, dictionary)
    figures["rep3t%"] = 100 * statistics.mean(t.metrics["repeat_3"] for t in traces)
    figures["logp"] = statistics.mean(t.metrics["mean_logprob"] for t in traces)
    figures["nfe"] = statistics.mean(t.nfe for t in traces)
    if author_words is not None:
        figures["word_errors"] = word_errors(traces, model.tokenizer, dictionary, author_words)
    return figures, texts


WORD_ERROR_KINDS = ("one_piece", "joined_in_one_step", "joined_across_steps")


def spelled_words(pieces: list[str]) -> list[tuple[str, list[int]]]:
    """The words of ``"".join(pieces)`` (as ``words_of`` finds them), each with the indices of the
    pieces that spell it."""
    text = "".join(pieces)
    starts = [0]
    for piece in pieces:
        starts.append(starts[-1] + len(piece))
    return [(text[a:b], [i for i in range(len(pieces)) if starts[i] < b and starts[i + 1] > a])
            for a, b in word_spans(text)]


def word_errors(traces: list, tokenizer, dictionary: set[str], author_words: set[str]) -> dict[str, int]:
    """Counts of the generated words (as ``text_figures`` counts them) and of those outside the
    dictionary, by how they were spelled: ``one_piece`` (of them ``one_piece_author``: a word form of
    the author's text), ``joined_in_one_step`` (several pieces confirmed in the same step),
    ``joined_across_steps``; ``pieces_joined`` counts every word of several pieces, in the dictionary
    or not. A trace whose pieces do not spell its text (a tokenizer that merges bytes) is ``skipped``."""
    counts = dict.fromkeys(("words", "not_in_dictionary", *WORD_ERROR_KINDS, "one_piece_author", "pieces_joined",
                            "skipped"), 0)
    for trace in traces:
        pieces = [tokenizer.decode([i]) for i in trace.token_ids[: trace.text_end]]
        if "".join(pieces) != (trace.text or ""):
            counts["skipped"] += 1
            continue
        for word, tokens in spelled_words(pieces):
            counts["words"] += 1
            counts["pieces_joined"] += len(tokens) > 1
            if word in dictionary or word.lower() in dictionary:
                continue
            counts["not_in_dictionary"] += 1
            if len(tokens) == 1:
                counts["one_piece"] += 1
                counts["one_piece_author"] += word in author_words
            else:
                steps = {trace.order[i] for i in tokens}
                counts["joined_in_one_step" if len(steps) == 1 else "joined_across_steps"] += 1
    return counts


def text_word_errors(tokenizer, windows: list[list[int]], dictionary: set[str],
                     author_words: set[str]) -> dict[str, int]:
    """The reference row of ``word_errors`` for real text (token ``windows``, no steps): words, those
    outside the dictionary, of them the author's own word forms, and words of several pieces."""
    spelled = [w for ids in windows for w in spelled_words([tokenizer.decode([i]) for i in ids])]
    outside = [w for w, _ in spelled if w not in dictionary and w.lower() not in dictionary]
    return {"words": len(spelled), "not_in_dictionary": len(outside),
            "not_in_dictionary_author": sum(w in author_words for w in outside),
            "pieces_joined": sum(len(t) > 1 for _, t in spelled)}


def word_error_line(counts: dict[str, int]) -> str:
    """``counts`` as points of all words: the non-words, split by kind."""
    pts = {k: 100 * v / max(1, counts["words"]) for k, v in counts.items()}
    return (f"not in dictionary {pts['not_in_dictionary']:.1f} = one piece {pts['one_piece']:.1f} "
            f"(the author's own word forms {pts['one_piece_author']:.1f}) + joined in one step "
            f"{pts['joined_in_one_step']:.1f} + joined across steps {pts['joined_across_steps']:.1f}; "
            f"{counts['pieces_joined']} of {counts['words']} words have several pieces"
            + (f"; {counts['skipped']} traces skipped" if counts["skipped"] else ""))


def heldout_windows(model, path: Path, gen_length: int, count: int) -> list[list[int]]:
    """``count`` evenly spaced windows of ``gen_length`` tokens of the held-out text."""
    ids = model.tokenizer.encode(path.read_text())
    starts = torch.linspace(0, len(ids) - gen_length - 1, count).long().tolist()
    return [ids[s : s + gen_length] for s in starts]


def heldout_reference(model, path: Path, gen_length: int, count: int, dictionary: set[str]) -> tuple[dict, list[str]]:
    windows = heldout_windows(model, path, gen_length, count)
    texts = [model.tokenizer.decode(w) for w in windows]
    figures = text_figures(texts, dictionary)
    figures["rep3t%"] = 100 * statistics.mean(repeat_share(w) for w in windows)
    return figures, texts


def build_judge(path: Path) -> KneserNeyTrigram:
    """The fluency judge: a word trigram KN model of ``path`` (one paragraph per line)."""
    return KneserNeyTrigram().fit(word_tokens(line) for line in path.read_text().split("\n") if line.strip())


def judge_figures(judge: KneserNeyTrigram, texts: list[str], ref: dict | None = None) -> dict[str, float]:
    """Judge perplexity and context gain (bits/word), and both relative to the held-out row ``ref``.

    fluency = perplexity / held-out perplexity (lower is better; bland text of common words also
    scores low); gain = context gain / held-out context gain (higher is better; 1.0 like Austen).
    """
    words = [word_tokens(t) for t in texts]
    out = {"judge_ppl": judge.perplexity(words), "context_gain": judge.context_gain(words)}
    if ref is not None:
        out["fluency"] = out["judge_ppl"] / ref["judge_ppl"]
        out["gain"] = out["context_gain"] / ref["context_gain"]
    return out


def rescore(path: Path, judge: KneserNeyTrigram, heldout: Path, dictionary: set[str],
            out: Path | None = None) -> None:
    """Judge figures and T=0 loop shares of the samples a ``--json`` run stored (no decoding).

    With ``out``, the record is written there with every preset's and the held-out row's judge
    figures recomputed (``context_gain`` and ``gain`` included), e.g. to bring an older record
    up to date for ``bench/compare_models.py``.
    """
    record = json.loads(path.read_text())
    model = load_embedded(device="cpu", path=record["path"])
    ref, ref_texts = heldout_reference(model, heldout, record["gen_length"], len(PROMPTS) * record["seeds"], dictionary)
    ref.update(judge_figures(judge, ref_texts))
    print(f"{record['model']} ({record['path'] or 'dllm_viz/assets/embedded'}), samples of {path}")
    print(f"{'preset':10} {'dict%':>6} {'judge ppl':>9} {'fluency':>7} {'gain b/w':>8} {'gain':>5} {'T=0 loops':>9}")
    for name, texts in record["samples"].items():
        fig = {**text_figures(texts, dictionary), **judge_figures(judge, texts, ref)}
        greedy = record.get("greedy_samples", {}).get(name)
        loops = (statistics.mean(has_repeated_ngram([w.lower() for w in words_of(t)], 4) for t in greedy)
                 if greedy else math.nan)
        print(f"{name:10} {fig['dict%']:6.1f} {fig['judge_ppl']:9.1f} {fig['fluency']:7.2f} {fig['context_gain']:8.2f} "
              f"{fig['gain']:5.2f} {loops:9.2f}")
        record["presets"][name].update({k: fig[k] for k in ("judge_ppl", "context_gain", "fluency", "gain")})
    print(f"{'heldout':10} {ref['dict%']:6.1f} {ref['judge_ppl']:9.1f} {1.0:7.2f} {ref['context_gain']:8.2f} "
          f"{1.0:5.2f}")
    sh = judge_figures(judge, shuffled(ref_texts), ref)
    print(f"{'shuffled':10} {'':>6} {sh['judge_ppl']:9.1f} {sh['fluency']:7.2f} {sh['context_gain']:8.2f} "
          f"{sh['gain']:5.2f}"
          f"   (held-out words shuffled within each passage)")
    if out is not None:
        ref.update(fluency=1.0, gain=1.0, fluency_shuffled=sh["fluency"], gain_shuffled=sh["gain"])
        record["heldout"] = ref
        out.write_text(json.dumps(record, indent=2))
        print(f"wrote {out}")


def shuffled(texts: list[str]) -> list[str]:
    """The same words in random order within each text (explicit generator): the word-salad end of the scale."""
    gen = torch.Generator().manual_seed(0)
    return [" ".join(ws[i] for i in torch.randperm(len(ws), generator=gen).tolist())
            for ws in (word_tokens(t) for t in texts)]


def greedy_loops(model, name: str, gen_length: int) -> tuple[float, list[str]]:
    """Share of temperature-0 outputs (one per prompt, the preset's schedule) with a repeated word 4-gram."""
    configs = DecodeConfig.preset(name, gen_length, temperature=0.0)
    with torch.inference_mode():
        traces = decode(model, list(PROMPTS), configs, record_candidates=0)
    texts = [t.text or "" for t in traces]
    return statistics.mean(has_repeated_ngram([w.lower() for w in words_of(t)], 4) for t in texts), texts


def heldout_bits_per_char(model, path: Path, *, bf16: bool) -> dict[str, float]:
    """ELBO bits/char on the held-out text, as ``dllm_viz.train`` evaluates it (48 windows, 8 noise levels)."""
    from dllm_viz.train.config import TrainConfig
    from dllm_viz.train.evaluation import evaluate

    text = path.read_text()
    tokens = torch.tensor(model.tokenizer.encode(text), dtype=torch.int32)
    cfg = TrainConfig(vocab_size=model.vocab_size, max_length=model.max_length, eval_windows=48, bf16=bf16)
    return evaluate(model, tokens, len(text) / tokens.numel(), cfg)


def speed(model, path: str | None, threads: int) -> None:
    gen = torch.Generator().manual_seed(0)
    x = torch.randint(0, model.vocab_size, (8, 128), generator=gen)
    with torch.inference_mode():
        model(x)  # warm-up
        times = []
        for _ in range(5):
            t0 = time.perf_counter()
            model(x)
            times.append(time.perf_counter() - t0)
        print(f"forward batch 8 x 128 tokens, {threads} threads: median {1000 * statistics.median(times):.1f} ms")
        cfg = DecodeConfig.preset("balanced", 64)
        decode(model, [PROMPTS[0]], cfg, record_candidates=5)
        t0 = time.perf_counter()
        trace = decode(model, [PROMPTS[0]], cfg, record_candidates=5)[0]
        print(f"re-decode 64 tokens, batch 1, balanced preset: {1000 * (time.perf_counter() - t0):.0f} ms "
              f"({trace.nfe} forwards)")
    code = (
        "import time; t0 = time.perf_counter(); from dllm_viz.models.embedded import load_embedded; "
        f"m = load_embedded(device='cpu', path={path!r}); print(time.perf_counter() - t0)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    print(f"cold load (new process: imports + weights + tokenizer): {float(out.stdout.strip()):.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--path", default=None, help="model folder (default: dllm_viz/assets/embedded)")
    parser.add_argument("--gen-length", type=int, default=64)
    parser.add_argument("--seeds", type=int, default=3, help="samples per prompt and preset")
    parser.add_argument("--presets", nargs="+", default=list(PRESETS), choices=list(PRESETS))
    parser.add_argument("--heldout", type=Path, default=None, help="held-out text for a reference row")
    parser.add_argument("--samples", type=int, default=1, help="sample texts printed per preset")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--speed", action="store_true")
    parser.add_argument("--judge", type=Path, default=None, help="judge text (prepare_data's judge.txt): fluency")
    parser.add_argument("--loops", action="store_true", help="share of greedy outputs with a repeated 4-gram")
    parser.add_argument("--bpc", action="store_true", help="held-out bits/char (needs --heldout)")
    parser.add_argument("--bpc-bf16", action="store_true", help="evaluate bits/char under bf16 autocast")
    parser.add_argument("--word-errors", type=Path, default=None, metavar="TRAIN_TEXT",
                        help="break the non-dictionary words down by how they were spelled; TRAIN_TEXT's word forms "
                             "count as the author's own")
    parser.add_argument("--json", type=Path, default=None,
                        help="write every figure and sample here (with --rescore: the rescored record)")
    parser.add_argument("--rescore", type=Path, default=None,
                        help="a --json file: judge its stored samples again (needs --judge, --heldout), no decoding")
    args = parser.parse_args()
    if (args.judge is not None or args.bpc) and args.heldout is None:
        parser.error("--judge and --bpc need --heldout (the held-out Austen text)")
    torch.set_num_threads(args.threads)
    if args.rescore is not None:
        if args.judge is None:
            parser.error("--rescore needs --judge and --heldout")
        rescore(args.rescore, build_judge(args.judge), args.heldout, load_dictionary(), args.json)
        return
    model = load_embedded(device="cpu", path=args.path)
    dictionary = load_dictionary()
    author_words = None
    if args.word_errors is not None:
        author_words = set(WORD.findall(args.word_errors.read_text(encoding="utf-8")))
    print(f"model {model.name}: {model.num_parameters() / 1e6:.2f}M parameters; {len(PROMPTS)} prompts x "
          f"{args.seeds} seeds, {args.gen_length} tokens")
    judge = build_judge(args.judge) if args.judge is not None else None
    ref, ref_texts = (None, [])
    if args.heldout is not None:
        ref, ref_texts = heldout_reference(model, args.heldout, args.gen_length, len(PROMPTS) * args.seeds, dictionary)
        if judge is not None:
            ref.update(judge_figures(judge, ref_texts))
            ref["fluency"], ref["gain"] = 1.0, 1.0
            sh = judge_figures(judge, shuffled(ref_texts), ref)  # the scale's other end: word salad
            ref["fluency_shuffled"], ref["gain_shuffled"] = sh["fluency"], sh["gain"]
    header = f"{'preset':10} {'dict%':>6} {'rep3w%':>7} {'rep3t%':>7} {'logp':>7} {'nfe':>5} {'words':>6}"
    header += f" {'judge ppl':>9} {'fluency':>7} {'gain':>5}" if judge else ""
    header += f" {'T=0 loops':>9}" if args.loops else ""
    print(header)
    samples, figures, greedy = {}, {}, {}
    for name in args.presets:
        fig, texts = run_preset(model, name, args.gen_length, args.seeds, dictionary, author_words)
        samples[name] = texts
        line = (f"{name:10} {fig['dict%']:6.1f} {fig['rep3w%']:7.1f} {fig['rep3t%']:7.1f} {fig['logp']:7.2f} "
                f"{fig['nfe']:5.1f} {fig['words']:6d}")
        if judge is not None:
            fig.update(judge_figures(judge, texts, ref))
            line += f" {fig['judge_ppl']:9.1f} {fig['fluency']:7.2f} {fig['gain']:5.2f}"
        if args.loops:
            fig["greedy_loop_share"], greedy[name] = greedy_loops(model, name, args.gen_length)
            line += f" {fig['greedy_loop_share']:9.2f}"
        figures[name] = fig
        print(line)
    if ref is not None:
        line = (f"{'heldout':10} {ref['dict%']:6.1f} {ref['rep3w%']:7.1f} {ref['rep3t%']:7.1f} {'':>7} {'':>5} "
                f"{ref['words']:6d}")
        line += f" {ref['judge_ppl']:9.1f} {ref['fluency']:7.2f} {ref['gain']:5.2f}" if judge else ""
        print(line)
        if judge is not None:
            print(f"{'shuffled':10} (held-out words shuffled within each passage) "
                  f"fluency {ref['fluency_shuffled']:.2f}, "
                  f"gain {ref['gain_shuffled']:.2f}")
    if author_words is not None:
        print("\nwords outside the dictionary, in points of all words:")
        for name, fig in figures.items():
            print(f"{name:10} {word_error_line(fig['word_errors'])}")
        if ref is not None:
            windows = heldout_windows(model, args.heldout, args.gen_length, len(PROMPTS) * args.seeds)
            e = ref["word_errors"] = text_word_errors(model.tokenizer, windows, dictionary, author_words)
            print(f"{'heldout':10} not in dictionary {100 * e['not_in_dictionary'] / max(1, e['words']):.1f}, of which "
                  f"the author's own word forms {100 * e['not_in_dictionary_author'] / max(1, e['words']):.1f}; "
                  f"{e['pieces_joined']} of {e['words']} words have several pieces")
    bpc = None
    if args.bpc:
        bpc = heldout_bits_per_char(model, args.heldout, bf16=args.bpc_bf16)
        print(f"held-out ELBO: {bpc['bits_per_char']:.3f} bits/char, {bpc['bits_per_token']:.2f} bits/token "
              f"({'bf16 autocast' if args.bpc_bf16 else 'fp32'}); "
              + ", ".join(f"{k} {100 * v:.1f}%" for k, v in bpc.items() if k.startswith("acc")))
    if args.json is not None:
        record = {"model": model.name, "path": args.path, "parameters": model.num_parameters(),
                  "gen_length": args.gen_length, "seeds": args.seeds, "prompts": list(PROMPTS), "presets": figures,
                  "heldout": ref, "heldout_bits": bpc, "samples": samples, "greedy_samples": greedy}
        args.json.write_text(json.dumps(record, indent=2, default=lambda x: None if isinstance(x, float) and
                                        math.isnan(x) else x))
    for name, texts in samples.items():
        for i in range(min(args.samples, len(texts))):
            prompt = PROMPTS[i]
            print(f"\n[{name}] {prompt}|{texts[i * args.seeds] if args.seeds else texts[i]}")
    if args.speed:
        print()
        speed(model, args.path, args.threads)


if __name__ == "__main__":
    main()
