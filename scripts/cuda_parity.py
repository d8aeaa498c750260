"""Every shipped model under every preset: the same tokens on a second device as on the CPU.

For each shipped model (`load_model()`, "world", "tasks", "world-indel", "world-renoise") and each
preset `DecodeConfig.preset` knows (the article's table, the samplers as shipped, the revision and
canvas rules) and a few variants of them with other knobs (`VARIANTS`), the same prompts are
decoded twice in fp32: once on the CPU, once on `--device` (CUDA by default). A preset the model
refuses (a canvas rule on a masked model, say) raises `ValueError` on the CPU and is listed as
refused; any other exception on either device is an error and makes the exit status 1.

What "the same" can mean differs by kind. A masked decode draws from one CPU `torch.Generator` per
request whatever the model's device, so its token ids must be equal unless the two devices differ
in a near-tie: the float32 logits rank two tokens differently, or a tie of equal scores is broken
differently by the device's own `torch.topk` (as the reference code would break it there). A
differing request is reported with its first differing step and a diagnosis of which it is (the
decode run on the CPU with the other device's logits; `diagnose`). The renoising decode draws its
noise on the model's device (as transformers' `generate()` does), whose random streams differ
between CPU and CUDA: there only the lengths are compared, not the ids.

    python scripts/cuda_parity.py --out cuda_parity.json               # CUDA vs CPU
    python scripts/cuda_parity.py --device cpu --models world --out x.json   # the script itself, anywhere
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run from a checkout without installing

from dllm_viz import DecodeConfig, decode, load_model  # noqa: E402
from dllm_viz.core.presets import CANVAS_PRESETS, PRESETS, REVISION_PRESETS, SHIPPED_PRESETS  # noqa: E402

MODELS = ("austen", "world", "tasks", "world-indel", "world-renoise")
PROMPTS = {"austen": ["It is a truth universally acknowledged", "Mr. Darcy", "She was"]}
ALL_PRESETS = (*PRESETS, *SHIPPED_PRESETS, *REVISION_PRESETS, *CANVAS_PRESETS)
# Knobs the presets leave at their defaults, each on the preset that reads it: label -> (preset, overrides).
VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    "remdm/rescale": ("remdm", {"remask_sigma": "rescale"}),
    "remdm/conf": ("remdm", {"remask_sigma": "conf"}),
    "remdm/loop": ("remdm", {"remask_sigma": "loop"}),
    "remdm_counted/loop": ("remdm_counted", {"remask_sigma": "loop"}),
    "fast_dllm/prefix": ("fast_dllm", {"cache": "prefix"}),
    "fast_dllm/dual": ("fast_dllm", {"cache": "dual", "block_length": 8, "cache_drift": True}),
    "balanced/blocks": ("balanced", {"block_length": 8, "block_schedule": "restart"}),
    "balanced/filters": ("balanced", {"top_p": 0.9, "vocab_top_k": 5, "temperature_stages": (1.2, 1.0, 0.5)}),
    "balanced/all": ("balanced", {"sample_scope": "all", "confidence_from": "sampled", "rng": "shared"}),
    "balanced/early_stop": ("balanced", {"early_stop": True, "confidence": "margin"}),
    "llada21/edits": ("llada21", {"edit_threshold": 0.5, "penalty_lambda": 0.5}),
    "diffusion_gemma/raw": ("diffusion_gemma", {"acceptance_from": "raw", "entropy_bound": 0.5}),
}
CASES = (*ALL_PRESETS, *VARIANTS)


def prompts_for(name: str, model: Any) -> list[Any]:
    """Three prompts the model can read: text where it has a tokenizer, else its first ids."""
    if name in PROMPTS:
        return PROMPTS[name]
    if getattr(model, "tokenizer", None) is not None:
        return ["a", "the", "one"]
    return [[1, 2, 3], [4, 5], [6]]


def first_difference(a: Any, b: Any) -> int | None:
    """The first step whose confirmed ids differ between two masked traces (None: none differ)."""
    steps_a, steps_b = a.steps, b.steps
    for i, (sa, sb) in enumerate(zip(steps_a, steps_b)):
        if (sa.selected, sa.tokens) != (sb.selected, sb.tokens):
            return i
    return None if len(steps_a) == len(steps_b) else min(len(steps_a), len(steps_b))


class LogitsOnCpu:
    """A model on another device whose logits come back to the CPU, so that the decode's own tensor ops run on
    the CPU with that device's logits (`__call__` only: the model's optional fast paths are left out)."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.mask_token_id = inner, inner.mask_token_id
        self.tokenizer, self.can_edit = getattr(inner, "tokenizer", None), getattr(inner, "can_edit", False)
        self.device = torch.device("cpu")

    def __call__(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        dev = self.inner.device
        mask = attention_mask.to(dev) if attention_mask is not None else None
        return self.inner(input_ids.to(dev), mask).float().cpu()


def diagnose(models: dict[str, Any], prompts: list[Any], config: DecodeConfig, here: list[Any],
             there: list[Any]) -> str:
    """Which half differs: the same decode on the CPU fed the other device's logits either matches the CPU
    (then the decode's own ops break a tie differently on that device) or the other device (then its logits
    order a near-tie differently)."""
    try:
        mixed = decode(LogitsOnCpu(models["other"]), prompts, config)
    except Exception as error:  # noqa: BLE001 - a model without the fast path a rule needs
        return f"not diagnosed: {type(error).__name__}: {str(error)[:120]}"
    ids = [t.token_ids for t in mixed]
    if ids == [t.token_ids for t in there]:
        return "logits: the CPU's ops on the other device's logits give the other device's tokens"
    if ids == [t.token_ids for t in here]:
        return "ops: the CPU's ops on the other device's logits give the CPU's tokens (a tie broken differently)"
    return "both: the CPU's ops on the other device's logits give a third result"


def timed_decode(model: Any, prompts: list[Any], config: DecodeConfig, device: torch.device) -> tuple[list[Any], float]:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    start = time.perf_counter()
    traces = decode(model, prompts, config)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return traces, time.perf_counter() - start


def one_case(name: str, models: dict[str, Any], preset: str, gen_length: int) -> dict[str, Any]:
    """Decode `preset` on both devices; what came out and whether it agrees."""
    prompts = prompts_for(name, models["cpu"])
    row: dict[str, Any] = {"model": name, "preset": preset}
    try:
        base, overrides = VARIANTS.get(preset, (preset, {}))
        config = DecodeConfig.preset(base, gen_length, **{"seed": 7, **overrides})
        here, t_here = timed_decode(models["cpu"], prompts, config, torch.device("cpu"))
    except ValueError as error:
        return {**row, "status": "refused", "reason": str(error).splitlines()[0][:200]}
    except Exception:  # noqa: BLE001 - a crash is what this script reports
        return {**row, "status": "error", "where": "cpu", "traceback": traceback.format_exc()[-2000:]}
    try:
        there, t_there = timed_decode(models["other"], prompts, config, models["device"])
    except Exception:  # noqa: BLE001
        return {**row, "status": "error", "where": str(models["device"]), "traceback": traceback.format_exc()[-2000:]}
    renoise = name == "world-renoise"
    same = [len(a.token_ids) == len(b.token_ids) if renoise else a.token_ids == b.token_ids
            for a, b in zip(here, there)]
    row.update(status="same" if all(same) else "differs", compared="lengths" if renoise else "ids",
               same_per_prompt=same, seconds={"cpu": round(t_here, 4), str(models["device"]): round(t_there, 4)})
    if not all(same):
        row["first_different_step"] = [first_difference(a, b) for a, b in zip(here, there)]
        row["diagnosis"] = diagnose(models, prompts, config, here, there)
    return row


def run(args: argparse.Namespace) -> dict[str, Any]:
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    rows = []
    for name in args.models:
        path = None if name == "austen" else name
        models = {"cpu": load_model(path, device="cpu", dtype="fp32"),
                  "other": load_model(path, device=device, dtype="fp32"), "device": device}
        for preset in args.presets:
            row = one_case(name, models, preset, args.gen_length)
            print(f"{name:14s} {preset:22s} {row['status']:8s} {row.get('seconds', '')} {row.get('diagnosis', '')}",
                  flush=True)
            rows.append(row)
    counts = {s: sum(r["status"] == s for r in rows) for s in ("same", "differs", "refused", "error")}
    info = {"torch": torch.__version__, "device": str(device)}
    if device.type == "cuda":
        info["gpu"] = torch.cuda.get_device_name(device)
    return {"machine": info, "gen_length": args.gen_length, "counts": counts, "cases": rows}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="write every case to this JSON file")
    parser.add_argument("--device", default=None, help="the second device (default: CUDA when available)")
    parser.add_argument("--models", nargs="+", choices=MODELS, default=list(MODELS))
    parser.add_argument("--presets", nargs="+", choices=CASES, default=list(CASES),
                        help="presets, and variants of them (VARIANTS: a preset with some knobs changed)")
    parser.add_argument("--gen-length", type=int, default=32)
    args = parser.parse_args(argv)
    results = run(args)
    Path(args.out).write_text(json.dumps(results, indent=1))
    print(json.dumps(results["counts"]))
    return 1 if results["counts"]["error"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
