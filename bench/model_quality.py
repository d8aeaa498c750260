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
"""
from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from a checkout

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


def words_of(text: str) -> list[str]:
    """Words of a generated text, without a last word cut off by the end of the canvas."""
    words = WORD.findall(text)
    if words and text and text[-1].isalpha():
        words = words[:-1]
    return words


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


def run_preset(model, name: str, gen_length: int, seeds: int, dictionary: set[str]) -> tuple[dict, list[str]]:
    prompts = [p for p in PROMPTS for _ in range(seeds)]
    configs = [DecodeConfig.preset(name, gen_length, seed=s) for _ in PROMPTS for s in range(seeds)]
    with torch.inference_mode():
        traces = decode(model, prompts, configs, record_candidates=0)
    texts = [t.text or "" for t in traces]
    figures = text_figures(texts, dictionary)
    figures["rep3t%"] = 100 * statistics.mean(t.metrics["repeat_3"] for t in traces)
    figures["logp"] = statistics.mean(t.metrics["mean_logprob"] for t in traces)
    figures["nfe"] = statistics.mean(t.nfe for t in traces)
    return figures, texts


def heldout_reference(model, path: Path, gen_length: int, count: int, dictionary: set[str]) -> dict:
    ids = model.tokenizer.encode(path.read_text())
    starts = torch.linspace(0, len(ids) - gen_length - 1, count).long().tolist()
    texts = [model.tokenizer.decode(ids[s : s + gen_length]) for s in starts]
    figures = text_figures(texts, dictionary)
    figures["rep3t%"] = 100 * statistics.mean(repeat_share(ids[s : s + gen_length]) for s in starts)
    return figures


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
    parser.add_argument("--path", default=None, help="model folder (default: assets/embedded)")
    parser.add_argument("--gen-length", type=int, default=64)
    parser.add_argument("--seeds", type=int, default=3, help="samples per prompt and preset")
    parser.add_argument("--presets", nargs="+", default=list(PRESETS), choices=list(PRESETS))
    parser.add_argument("--heldout", type=Path, default=None, help="held-out text for a reference row")
    parser.add_argument("--samples", type=int, default=1, help="sample texts printed per preset")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--speed", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    model = load_embedded(device="cpu", path=args.path)
    dictionary = load_dictionary()
    print(f"model {model.name}: {model.num_parameters() / 1e6:.2f}M parameters; {len(PROMPTS)} prompts x "
          f"{args.seeds} seeds, {args.gen_length} tokens")
    header = f"{'preset':10} {'dict%':>6} {'rep3w%':>7} {'rep3t%':>7} {'logp':>7} {'nfe':>5} {'words':>6}"
    print(header)
    samples = {}
    for name in args.presets:
        fig, texts = run_preset(model, name, args.gen_length, args.seeds, dictionary)
        samples[name] = texts
        print(f"{name:10} {fig['dict%']:6.1f} {fig['rep3w%']:7.1f} {fig['rep3t%']:7.1f} {fig['logp']:7.2f} "
              f"{fig['nfe']:5.1f} {fig['words']:6d}")
    if args.heldout is not None:
        ref = heldout_reference(model, args.heldout, args.gen_length, len(PROMPTS) * args.seeds, dictionary)
        print(f"{'heldout':10} {ref['dict%']:6.1f} {ref['rep3w%']:7.1f} {ref['rep3t%']:7.1f} {'':>7} {'':>5} "
              f"{ref['words']:6d}")
    for name, texts in samples.items():
        for i in range(min(args.samples, len(texts))):
            prompt = PROMPTS[i]
            print(f"\n[{name}] {prompt}|{texts[i * args.seeds] if args.seeds else texts[i]}")
    if args.speed:
        print()
        speed(model, args.path, args.threads)


if __name__ == "__main__":
    main()
