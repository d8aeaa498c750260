"""The renoising decode against transformers' own `generate()`, side by side in one run (issue 36).

Both decode the same prompts with the same DiffusionGemma model and the same settings; the stop
rule is switched off (confidence threshold 1e-12, which no mean entropy gets under) so that both run
every step of every canvas: the same number of decoder forwards, counted and checked. Ours is the
product's path, `decode(model, prompts, DecodeConfig(...))`, which returns the version-3 `Trace`s
(every step's canvases, acceptance, entropy, stop state) built while it is timed; the loop alone
(`renoise_decode`, tensors only) is timed beside it for reference. Rounds alternate the order; each
figure is the median over rounds of wall time; the ratio is ours / generate(). At batch 1 the run also
checks exactness: the same seed gives the same ids as `generate()` after `torch.manual_seed(seed)`.

Floor (CPU, the tiny model, one thread): ratio <= 1.10 at batch 1 and at batch 8.

    python bench/renoise_bench.py                                   # tiny model, CPU, one thread
    python bench/renoise_bench.py --out renoise_bench.json --rounds 9
    # GPU recipe: the released checkpoint (download it first: hf download google/diffusiongemma-26B-A4B-it)
    python bench/renoise_bench.py --model google/diffusiongemma-26B-A4B-it --device cuda --dtype bf16 \\
        --steps 48 --new-tokens 256 --batches 1 4 --rounds 3 --threads 0 --out renoise_gpu.json
"""
from __future__ import annotations

import argparse
import datetime
import json
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run from a checkout without installing

from dllm_viz import DecodeConfig, decode  # noqa: E402
from dllm_viz.core.renoise import RenoiseSettings  # noqa: E402
from dllm_viz.core.renoise_decoder import renoise_decode  # noqa: E402
from dllm_viz.models.diffusion_gemma import DiffusionGemmaRenoiser  # noqa: E402

FLOOR = 1.10
NEVER = 1e-12  # a confidence threshold no mean entropy gets under: every step runs (transformers wants > 0)


def load(args: argparse.Namespace) -> DiffusionGemmaRenoiser:
    if args.model == "tiny":
        from tests.diffusion_gemma_tiny import tiny_model

        return DiffusionGemmaRenoiser(tiny_model(sharpness=12.0, canvas_length=args.canvas), name="tiny")
    from dllm_viz.models import load_model

    model = load_model(args.model, device=args.device, dtype=args.dtype)
    if not isinstance(model, DiffusionGemmaRenoiser):
        raise SystemExit(f"--model {args.model!r} is not a DiffusionGemma checkpoint")
    checkpoint = model.generation_defaults
    # generate() is called without end-of-text ids (every canvas runs): decode() reads them from here, so the same
    model.generation_defaults = lambda: {**checkpoint(), "eos_token_id": None, "pad_token_id": None}  # type: ignore
    return model


def config(args: argparse.Namespace, seed: int, canvas: int) -> DecodeConfig:
    """The same settings as a `DecodeConfig`, for `decode()`."""
    return DecodeConfig(gen_length=args.new_tokens, seed=seed, entropy_bound=args.entropy_bound, t_min=0.4, t_max=0.8,
                        max_denoising_steps=args.steps, stability_threshold=1, confidence_threshold=NEVER,
                        canvas_length=canvas)


def settings(args: argparse.Namespace, seed: int, canvas: int) -> RenoiseSettings:
    return RenoiseSettings(entropy_bound=args.entropy_bound, t_min=0.4, t_max=0.8, max_denoising_steps=args.steps,
                           stability_threshold=1, confidence_threshold=NEVER, canvas_length=canvas,
                           max_new_tokens=args.new_tokens, seed=seed)


def run_generate(model: DiffusionGemmaRenoiser, ids: torch.Tensor, args: argparse.Namespace, seed: int) -> Any:
    from transformers.models.diffusion_gemma.generation_diffusion_gemma import EntropyBoundSamplerConfig

    torch.manual_seed(seed)
    return model.model.generate(ids, max_new_tokens=args.new_tokens, max_denoising_steps=args.steps, t_min=0.4,
                                t_max=0.8, sampler_config=EntropyBoundSamplerConfig(entropy_bound=args.entropy_bound),
                                stability_threshold=1, confidence_threshold=NEVER, eos_token_id=None, pad_token_id=None)


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def measure(model: DiffusionGemmaRenoiser, batch: int, args: argparse.Namespace) -> dict[str, Any]:
    """Median wall times of generate() and ours at one batch size, and what each computed."""
    canvas = model.canvas_length
    prompt = [2, *range(10, 10 + args.prompt_length - 1)]
    ids = torch.tensor([prompt] * batch, device=model.device)
    names = ("generate", "ours", "loop")
    times: dict[str, list[float]] = {name: [] for name in names}
    cpu: dict[str, list[float]] = {name: [] for name in names}
    last: dict[str, Any] = {}
    for r in range(args.rounds + 1):  # round 0 warms every path up and is not counted
        seeds = [100 * r + b for b in range(batch)]
        order = names if r % 2 == 0 else names[::-1]
        for name in order:
            synchronize(model.device)
            start, start_cpu = time.perf_counter(), time.process_time()
            if name == "generate":
                out = run_generate(model, ids, args, seeds[0])
            elif name == "ours":
                out = decode(model, [prompt] * batch, [config(args, s, canvas) for s in seeds])
            else:
                out = renoise_decode(model, [prompt] * batch, [settings(args, s, canvas) for s in seeds])
            synchronize(model.device)
            if r:
                times[name].append(time.perf_counter() - start)
                cpu[name].append(time.process_time() - start_cpu)
            last[name] = (seeds, out)
    (seeds, theirs), (_, ours), (_, loop) = last["generate"], last["ours"], last["loop"]
    canvases = -(-args.new_tokens // canvas)
    forwards = {"generate": canvases * args.steps * batch, "ours": sum(t.nfe for t in ours)}
    record = {
        "batch": batch, "generate_s": statistics.median(times["generate"]), "ours_s": statistics.median(times["ours"]),
        "loop_s": statistics.median(times["loop"]),
        "forwards": forwards["ours"], "same_forwards": forwards["ours"] == forwards["generate"] == sum(
            r.forwards for r in loop),
        "recorded_steps": sum(len(t.steps) for t in ours),
    }
    record["ratio"] = record["ours_s"] / record["generate_s"]
    record["loop_ratio"] = record["loop_s"] / record["generate_s"]
    # CPU time of the process beside it: what load from other processes on a shared machine barely moves
    record["cpu_ratio"] = statistics.median(cpu["ours"]) / statistics.median(cpu["generate"])
    if batch == 1:  # the same seed: the same ids as generate()
        record["exact"] = ours[0].token_ids == theirs.sequences[0, len(prompt):].tolist() == list(loop[0].token_ids)
    return record


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="tiny", help="'tiny' (built here) or a DiffusionGemma path / Hub id")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default=None, help="bf16 | fp16 | fp32 (default: bf16 on CUDA, fp32 else)")
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--steps", type=int, default=8, help="max_denoising_steps (all run: the stop is off)")
    parser.add_argument("--new-tokens", type=int, default=16, help="max_new_tokens (canvases = ceil(/ canvas))")
    parser.add_argument("--canvas", type=int, default=8, help="canvas length of the tiny model")
    parser.add_argument("--prompt-length", type=int, default=6)
    parser.add_argument("--entropy-bound", type=float, default=0.7)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (0: leave torch's default)")
    parser.add_argument("--out", default=None, help="write the figures as JSON here")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    model = load(args)
    results = [measure(model, b, args) for b in args.batches]
    report = {
        "when": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": {"device": str(model.device), "cpu": platform.processor() or platform.machine(),
                    "threads": torch.get_num_threads(), "torch": torch.__version__,
                    "gpu": torch.cuda.get_device_name(model.device) if model.device.type == "cuda" else None},
        "model": {"name": model.name, "canvas_length": model.canvas_length, "vocab_size": model.vocab_size,
                  "dtype": str(model.model.dtype).replace("torch.", "")},
        "settings": {"steps": args.steps, "new_tokens": args.new_tokens, "entropy_bound": args.entropy_bound,
                     "rounds": args.rounds},
        "floor": FLOOR, "results": results,
    }
    for r in results:
        exact = f"  exact vs generate(): {r['exact']}" if "exact" in r else ""
        print(f"batch {r['batch']}: generate() {r['generate_s'] * 1e3:.1f} ms, ours {r['ours_s'] * 1e3:.1f} ms "
              f"(decode(), traces of {r['recorded_steps']} steps), ratio {r['ratio']:.3f} (floor {FLOOR}), "
              f"[cpu time {r['cpu_ratio']:.3f}; the loop alone {r['loop_ratio']:.3f}], "
              f"forwards {r['forwards']} same={r['same_forwards']}{exact}")
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return report


if __name__ == "__main__":
    main()
