"""The GPU path, measured side by side in one run (issue 14); also runs on CPU at tiny sizes.

On CUDA it builds a randomly initialised model at LLaDA-8B's proportions scaled to about 1B
parameters (LLaDA's vocabulary of 126464, width 2048, 15 blocks) from the LLaDA stand-in modelling
code the adapter tests use (`tests/checkpoints.py`), in bf16, with no download, and wraps it in the
real `LLaDADenoiser` adapter. The stand-in blocks are pre-norm LayerNorm / GELU-MLP / learned
positions, not LLaDA's RMSNorm / SwiGLU / rotary ones: the matrix shapes, and so the cost of a
forward, are of the same order, the predictions mean nothing. Then:

  1. `decode` / (NFE x one forward of the same batch) at batch 1 and 16 (target <= 1.05), and the
     host overhead per step in ms (the part of a step that is not the forward);
  2. the `Engine` with 16 requests submitted together vs the same 16 one after another (target
     >= 5x: on a GPU a batch of 16 costs little more than one);
  3. the embedded model at temperature 0: the same tokens on the target device (fp32) as on CPU.
Every figure is the median of `--repeats` rounds; the JSON named by `--out` gets all of them.

    python bench/gpu_bench.py --out gpu_bench.json                 # CUDA, the 1B model
    python bench/gpu_bench.py --device cpu --size tiny --out x.json --threads 1
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run from a checkout without installing

from dllm_viz import DecodeConfig, Engine, decode, load_model  # noqa: E402

# Model sizes: LLaDA-8B is vocab 126464, d_model 4096, 32 blocks, 32 heads.
SIZES: dict[str, dict[str, int]] = {
    "1b": dict(vocab_size=126464, d_model=2048, n_layers=15, n_heads=16, max_sequence_length=1024),
    "tiny": dict(vocab_size=512, d_model=64, n_layers=2, n_heads=4, max_sequence_length=256),
}
TARGETS = {"decode_over_forwards_max": 1.05, "engine_speedup_min": 5.0}
BATCHES = (1, 16)


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed(fn: Callable[[], Any], device: torch.device) -> float:
    """Seconds `fn` takes, with the device's queued work finished before and after."""
    sync(device)
    start = time.perf_counter()
    fn()
    sync(device)
    return time.perf_counter() - start


def median_time(fn: Callable[[], Any], device: torch.device, repeats: int) -> float:
    return statistics.median(timed(fn, device) for _ in range(repeats))


def build_llada(size: str, device: torch.device, dtype: torch.dtype) -> Any:
    """A random LLaDA-convention model from the stand-in code, inside the real adapter (no weights on disk)."""
    from transformers import AutoConfig, AutoModel

    from dllm_viz.models.hf import LLaDADenoiser
    from tests.checkpoints import write_standin

    fields = SIZES[size]
    with tempfile.TemporaryDirectory() as folder:
        # The mask id is LLaDA's own: the last reserved id below the rounded-up output rows.
        write_standin(Path(folder), "llada", mask_token_id=fields["vocab_size"] - 1, **fields)
        config = AutoConfig.from_pretrained(folder, trust_remote_code=True, local_files_only=True)
        cuda = [device.index if device.index is not None
                else torch.cuda.current_device()] if device.type == "cuda" else []
        with torch.random.fork_rng(devices=cuda):  # the seed below stays inside this build
            torch.manual_seed(0)
            with device:
                model = AutoModel.from_config(config, trust_remote_code=True, dtype=dtype)
    return LLaDADenoiser.from_loaded(model.eval(), None, name=f"llada-stand-in-{size}-random")


def prompts_for(model: Any, n: int, length: int, seed: int) -> list[list[int]]:
    """`n` random prompts of `length` ids (never the mask id), from an explicit generator."""
    g = torch.Generator().manual_seed(seed)
    vocab = model.model.get_input_embeddings().num_embeddings
    ids = torch.randint(0, vocab - 1, (n, length), generator=g)
    ids[ids == model.mask_token_id] = 0
    return ids.tolist()


def decode_ratio(model: Any, config: DecodeConfig, prompt_len: int, repeats: int) -> dict[str, dict[str, float]]:
    """Decode time over NFE x forward time, and host overhead per step, at each batch size."""
    device = model.device
    out = {}
    for batch in BATCHES:
        prompts = prompts_for(model, batch, prompt_len, seed=batch)
        canvas = torch.tensor([p + [model.mask_token_id] * config.gen_length for p in prompts], device=device)
        full = torch.ones_like(canvas, dtype=torch.bool)  # what the decoder passes: nothing padded
        decode(model, prompts, config)  # warm-up (kernels, allocator)
        forward = median_time(lambda: model(canvas, full), device, repeats)
        traces: list[Any] = []
        total = median_time(lambda: traces.__setitem__(slice(None), decode(model, prompts, config)), device, repeats)
        nfe = max(t.nfe for t in traces)
        out[str(batch)] = {
            "forward_ms": round(1000 * forward, 3),
            "decode_s": round(total, 4),
            "nfe": nfe,
            "ratio": round(total / (nfe * forward), 4),
            "host_overhead_ms_per_step": round(1000 * (total - nfe * forward) / nfe, 3),
        }
    return out


def profile_decode(model: Any, config: DecodeConfig, prompt_len: int, batch: int, path: Path) -> None:
    """One decode at `batch` under `torch.profiler` (CPU, and CUDA where it runs): its operators by self time
    on each, written to `path`, to show where a step's time goes beyond the forward."""
    from torch.profiler import ProfilerActivity, profile

    prompts = prompts_for(model, batch, prompt_len, seed=batch)
    decode(model, prompts, config)  # warm-up
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if model.device.type == "cuda" else [])
    with profile(activities=activities) as prof:
        decode(model, prompts, config)
        sync(model.device)
    table = prof.key_averages()
    parts = [f"# one decode at batch {batch}, {config.gen_length} tokens in {config.total_steps} steps"]
    for key in ("self_cpu_time_total", *(("self_device_time_total",) if model.device.type == "cuda" else ())):
        parts += [f"\n## by {key}\n", table.table(sort_by=key, row_limit=30, max_name_column_width=60)]
    path.write_text("\n".join(parts), encoding="utf-8")


def engine_speedup(model: Any, config: DecodeConfig, prompt_len: int, repeats: int, n: int = 16) -> dict[str, Any]:
    """16 requests submitted together to one Engine vs the same 16 one after another."""
    device = model.device
    prompts = prompts_for(model, n, prompt_len, seed=99)
    configs = [config.replace(seed=i) for i in range(n)]
    calls = {}
    with Engine(model, max_batch=n, max_queue=n, max_length=prompt_len + config.gen_length) as engine:
        engine.submit(prompts[0], configs[0]).result()  # warm-up

        def together() -> None:
            start = engine.forward_calls
            for f in [engine.submit(p, c) for p, c in zip(prompts, configs)]:
                f.result()
            calls["together"] = engine.forward_calls - start

        def serial() -> None:
            start = engine.forward_calls
            for p, c in zip(prompts, configs):
                engine.submit(p, c).result()
            calls["serial"] = engine.forward_calls - start

        t_together = median_time(together, device, repeats)
        t_serial = median_time(serial, device, repeats)
    return {
        "requests": n,
        "together_s": round(t_together, 4),
        "serial_s": round(t_serial, 4),
        "speedup": round(t_serial / t_together, 3),
        "forward_calls_together": calls["together"],
        "forward_calls_serial": calls["serial"],
    }


def embedded_same_tokens(device: torch.device, gen_length: int) -> dict[str, Any]:
    """The embedded model at T=0: tokens on `device` in fp32 equal the CPU's, prompt by prompt."""
    prompts = ["It is a truth universally acknowledged", "Mr. Darcy", "She was"]
    config = DecodeConfig(gen_length=gen_length, schedule="fixed_steps", steps=gen_length // 2, temperature=0.0)
    here = decode(load_model(device="cpu", dtype="fp32"), prompts, config)
    there = decode(load_model(device=device, dtype="fp32"), prompts, config)
    same = [a.token_ids == b.token_ids for a, b in zip(here, there)]
    return {"devices": ["cpu", str(device)], "prompts": len(prompts), "gen_length": gen_length,
            "same_tokens": all(same), "same_per_prompt": same}


def machine(device: torch.device) -> dict[str, Any]:
    info = {"python": platform.python_version(), "torch": torch.__version__, "cpu_count": os.cpu_count(),
            "torch_threads": torch.get_num_threads(), "device": str(device)}
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        info.update(gpu=props.name, gpu_memory_gib=round(props.total_memory / 2**30, 1), cuda=torch.version.cuda)
    return info


def run(args: argparse.Namespace) -> dict[str, Any]:
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    size = args.size or ("1b" if device.type == "cuda" else "tiny")
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    started = time.perf_counter()
    model = build_llada(size, device, dtype)
    config = DecodeConfig(gen_length=args.gen_length, schedule="fixed_steps", steps=args.steps, temperature=1.0)
    results = {
        "bench": "gpu_bench",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": machine(device),
        "model": {"name": model.name, "size": size, "parameters": sum(p.numel() for p in model.parameters()),
                  "dtype": str(dtype).removeprefix("torch."), **SIZES[size]},
        "settings": {"prompt_length": args.prompt_length, "gen_length": args.gen_length, "steps": args.steps,
                     "repeats": args.repeats, "schedule": "fixed_steps", "temperature": 1.0},
        "targets": TARGETS,
    }
    results["decode"] = decode_ratio(model, config, args.prompt_length, args.repeats)
    results["engine"] = engine_speedup(model, config, args.prompt_length, args.repeats)
    if args.profile:
        profile_decode(model, config, args.prompt_length, max(BATCHES), Path(args.profile))
    del model
    results["embedded_t0"] = embedded_same_tokens(device, args.embedded_gen_length)
    results["met"] = {
        "decode_over_forwards": all(r["ratio"] <= TARGETS["decode_over_forwards_max"]
                                    for r in results["decode"].values()),
        "engine_speedup": results["engine"]["speedup"] >= TARGETS["engine_speedup_min"],
        "embedded_same_tokens": results["embedded_t0"]["same_tokens"],
    }
    results["seconds"] = round(time.perf_counter() - started, 1)
    return results


def report(results: dict[str, Any]) -> str:
    m, t = results["model"], results["targets"]
    on = results["machine"].get("gpu", results["machine"]["device"])
    lines = [f"{m['name']}: {m['parameters']:,} parameters, {m['dtype']}, on {on}"]
    for batch, r in results["decode"].items():
        lines.append(f"  batch {batch:>2}: forward {r['forward_ms']:.2f} ms, decode {r['decode_s']:.3f} s for "
                     f"{r['nfe']} NFE -> decode / (NFE x forward) = {r['ratio']:.3f} (target <= "
                     f"{t['decode_over_forwards_max']}), host overhead {r['host_overhead_ms_per_step']:.2f} ms/step")
    e = results["engine"]
    lines.append(f"  engine: {e['requests']} together {e['together_s']:.3f} s "
                 f"({e['forward_calls_together']} forwards) vs "
                 f"one after another {e['serial_s']:.3f} s ({e['forward_calls_serial']} forwards) -> "
                 f"{e['speedup']:.2f}x (target >= {t['engine_speedup_min']})")
    x = results["embedded_t0"]
    lines.append(f"  embedded model, T=0, {' vs '.join(x['devices'])}: same tokens = {x['same_tokens']}")
    lines.append(f"  met: {results['met']}  ({results['seconds']} s in all)")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="write the figures to this JSON file")
    parser.add_argument("--device", default=None, help="cuda | cuda:N | cpu (default: CUDA when available)")
    parser.add_argument("--size", choices=list(SIZES), default=None, help="default: 1b on CUDA, tiny on CPU")
    parser.add_argument("--prompt-length", type=int, default=64)
    parser.add_argument("--gen-length", type=int, default=128)
    parser.add_argument("--steps", type=int, default=64, help="fixed_steps: the NFE of every request")
    parser.add_argument("--embedded-gen-length", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3, help="rounds per figure (the median is kept)")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    parser.add_argument("--profile", default=None, help="also profile one decode at the largest batch: operator "
                        "tables by self CPU and self device time, written to this text file")
    return parser


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = build_parser().parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    for name in ("prompt_length", "gen_length", "steps", "embedded_gen_length", "repeats"):
        if getattr(args, name) < 1:
            raise SystemExit(f"--{name.replace('_', '-')}={getattr(args, name)} is invalid: expected an integer >= 1")
    if args.device and args.device.startswith("cuda") and not torch.cuda.is_available():
        raise SystemExit(f"--device={args.device} is invalid: CUDA is not available on this machine (try --device cpu)")
    results = run(args)
    Path(args.out).write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(report(results))
    print(f"wrote {args.out}")
    return results


if __name__ == "__main__":
    main()
