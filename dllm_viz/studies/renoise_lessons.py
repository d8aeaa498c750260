"""The article's question on a renoising decoder, counted (docs/renoise.md, "Lessons, counted").

DiffusionGemma (transformers, SGLang) ranks acceptance by the entropy of the *tempered* logits: the choice
the source article warns about for masked models, where confidence for scheduling should come from the raw
logits and temperature only shape what is drawn. On the renoising world model
(`dllm_viz/assets/world-renoise`, `load_model("world-renoise")`), whose checker judges every run
(`dllm_viz.world.check`), this study counts:
- acceptance: acceptance_from "tempered" (as shipped) against "raw" (the article's rule), at the shipped
  schedule (t 0.8 -> 0.4) and at flat temperatures (`SCHEDULES`): valid runs, tokens per forward;
- bound: the entropy bound against valid runs and tokens per forward, for both sources, as accuracy
  against parallelism with d3LLM's AUP (`studies.curves.aup`, one y_max for both curves);
- stability: the stop rule's stability threshold 0, 1, 2 at the shipped settings.
Every other knob is the checkpoint's (the `diffusion_gemma` preset: generate()'s own defaults); every cell
decodes the 4 world prompts x `seeds` seeds (48 new tokens: three canvases of 16) in one batched
`decode`, each request with its own seed. Rates with 95% Wilson intervals (`studies.stats`).

    python -m dllm_viz.studies.renoise_lessons          # writes dllm_viz/assets/world-renoise/lessons.json

The prose (en, zh) is `renoise_study` in ``dllm_viz/assets/lessons.yaml``, with the numbers it quotes and
what it claims (its ``checks``, `dllm_viz.studies.claims`).
"""
from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml

from dllm_viz import assets
from dllm_viz.core.config import DecodeConfig
from dllm_viz.core.decoder import Runner
from dllm_viz.core.trace import Trace
from dllm_viz.studies.curves import aup
from dllm_viz.studies.stats import format_rate, rate
from dllm_viz.studies.world_score import WORLD_PROMPTS, verdict_of

RENOISE_PATH = assets.path("world-renoise", "lessons.json")
GEN_LENGTH = 48
SOURCES = ("tempered", "raw")
FLAT = (0.4, 0.8, 1.2, 1.6)  # flat temperatures around the shipped schedule
# name -> (t_min, t_max): the shipped linear schedule, then the flat ones
SCHEDULES: dict[str, tuple[float, float]] = {"shipped": (0.4, 0.8), **{f"flat {t:g}": (t, t) for t in FLAT}}
BOUNDS = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0)
STABILITY = (0, 1, 2)
SHIPPED = {"entropy_bound": 0.1, "stability_threshold": 1, "schedule": "shipped", "acceptance_from": "tempered"}

Cell = tuple[tuple[str, Any], ...]  # a config's renoise knobs, sorted: the key of one measured cell


def cell(*, schedule: str = "shipped", acceptance_from: str = "tempered", entropy_bound: float = 0.1,
         stability_threshold: int = 1) -> Cell:
    t_min, t_max = SCHEDULES[schedule]
    return tuple(sorted(dict(t_min=t_min, t_max=t_max, acceptance_from=acceptance_from, entropy_bound=entropy_bound,
                             stability_threshold=stability_threshold).items()))


def config(key: Cell, seed: int) -> DecodeConfig:
    """One run of a cell: the checkpoint's settings (`diffusion_gemma`) with the cell's knobs."""
    return DecodeConfig.preset("diffusion_gemma", GEN_LENGTH, seed=seed, **dict(key))


def world_valid(trace: Trace) -> bool:
    return verdict_of(trace).valid


def score(traces: Sequence[Trace], valid: Callable[[Trace], bool]) -> dict[str, Any]:
    """Valid runs (Wilson), mean tokens per forward and forwards, mean canvases the stop rule ended."""
    return {"valid_runs": rate(sum(valid(t) for t in traces), len(traces)),
            "tpf": round(statistics.mean(t.metrics["tokens_per_forward"] for t in traces), 3),
            "nfe": round(statistics.mean(t.nfe for t in traces), 2),
            "stops": round(statistics.mean(t.metrics["stops_fired"] for t in traces), 2)}


def cells() -> list[Cell]:
    """Every distinct cell of the three parts, in a fixed order."""
    keys = [cell(schedule=s, acceptance_from=a) for s in SCHEDULES for a in SOURCES]
    keys += [cell(acceptance_from=a, entropy_bound=b) for a in SOURCES for b in BOUNDS]
    keys += [cell(stability_threshold=s) for s in STABILITY]
    return list(dict.fromkeys(keys))


def measure_cells(run: Runner, prompts: Sequence[str], seeds: Sequence[int], valid: Callable[[Trace], bool],
                  keys: Sequence[Cell], log: Callable[[str], None] = print) -> dict[Cell, dict[str, Any]]:
    """Each cell's score: one batched decode of prompts x seeds per cell."""
    out = {}
    for key in keys:
        runs = [(p, s) for p in prompts for s in seeds]
        traces = run([p for p, _ in runs], [config(key, s) for _, s in runs], record_candidates=0)
        out[key] = score(traces, valid)
        log(f"{dict(key)}: {format_rate(out[key]['valid_runs'])} valid, {out[key]['tpf']} tokens per forward")
    return out


def tables(measured: dict[Cell, dict[str, Any]]) -> dict[str, Any]:
    """The three parts from the measured cells: acceptance by schedule and source, the bound curves with their
    AUP (one y_max: the best accuracy of either curve), the stability points."""
    acceptance = {"shipped": {a: measured[cell(acceptance_from=a)] for a in SOURCES},
                  "flat": [{"value": t,
                            **{a: measured[cell(schedule=f"flat {t:g}", acceptance_from=a)] for a in SOURCES}}
                           for t in FLAT]}
    curves = {a: [{"value": b, **measured[cell(acceptance_from=a, entropy_bound=b)]} for b in BOUNDS] for a in SOURCES}
    y_max = max(100 * p["valid_runs"]["rate"] for points in curves.values() for p in points)
    bound = {a: {"points": curves[a], "aup": round(aup([(p["tpf"], 100 * p["valid_runs"]["rate"]) for p in curves[a]],
                                                       y_max), 2) if y_max > 0 else 0.0} for a in SOURCES}
    stability = [{"value": s, **measured[cell(stability_threshold=s)]} for s in STABILITY]
    return {"acceptance": acceptance, "bound": {**bound, "y_max": y_max}, "stability": stability}


def measure_all(run: Runner, prompts: Sequence[str] = WORLD_PROMPTS, seeds: Sequence[int] = range(16),
                valid: Callable[[Trace], bool] = world_valid, log: Callable[[str], None] = print) -> dict[str, Any]:
    measured = measure_cells(run, prompts, seeds, valid, cells(), log)
    return {"gen_length": GEN_LENGTH, "prompts": list(prompts), "seeds": len(seeds), "shipped": SHIPPED,
            "schedules": {k: list(v) for k, v in SCHEDULES.items()}, **tables(measured)}


# ----- reading ------------------------------------------------------------------------------------
def load_renoise(path: Path = RENOISE_PATH) -> dict[str, Any]:
    """The measured study; empty when the file is absent."""
    return json.loads(path.read_text()) if path.exists() else {}


ENGLISH = {"temperature": "temperature", "shipped": "shipped", "flat": "flat", "tempered": "tempered",
           "raw": "raw", "valid_tpf": "valid runs, tokens/forward", "bound": "entropy bound", "aup": "AUP",
           "stability": "stability threshold", "valid": "valid runs", "tpf": "tokens/forward",
           "stops": "canvases the stop ended"}


def table(data: dict[str, Any], words: dict[str, str] | None = None) -> str:
    """The study as Markdown tables, its three parts; `words` names the columns and rows (default `ENGLISH`;
    the page passes its language's)."""
    w = {**ENGLISH, **(words or {})}
    head = " | ".join(f"{w[a]}: {w['valid_tpf']}" for a in SOURCES)
    lines = [f"| {w['temperature']} | {head} |", "|---|---|---|"]
    rows = [(f"0.8 -> 0.4 ({w['shipped']})", data["acceptance"]["shipped"])]
    rows += [(f"{p['value']:g} ({w['flat']})", p) for p in data["acceptance"]["flat"]]
    for name, row in rows:
        lines.append(f"| {name} | " + " | ".join(f"{format_rate(row[a]['valid_runs'])}, {row[a]['tpf']:g}"
                                                 for a in SOURCES) + " |")
    lines += ["", f"| {w['bound']} | {head} |", "|---|---|---|"]
    for i, b in enumerate(BOUNDS):
        cells = [data["bound"][a]["points"][i] for a in SOURCES]
        lines.append(f"| {b:g} | " + " | ".join(f"{format_rate(c['valid_runs'])}, {c['tpf']:g}" for c in cells) + " |")
    lines.append(f"| {w['aup']} | " + " | ".join(f"{data['bound'][a]['aup']:g}" for a in SOURCES) + " |")
    lines += ["", f"| {w['stability']} | {w['valid']} | {w['tpf']} | {w['stops']} |", "|---|---|---|---|"]
    lines += [f"| {p['value']} | {format_rate(p['valid_runs'])} | {p['tpf']:g} | {p['stops']:g} |"
              for p in data["stability"]]
    return "\n".join(lines)


def load_study_text(path: Path = assets.path("lessons.yaml")) -> dict[str, Any]:
    """The ``renoise_study`` entry of the lessons file (title, text in en and zh, checks); {} without one."""
    entry = yaml.safe_load(path.read_text(encoding="utf-8")).get("renoise_study") or {}
    for name in ("title", "text") if entry else ():
        if set(entry.get(name, {})) != {"en", "zh"}:
            raise ValueError(f"{path.name}: renoise_study {name} needs exactly the languages en, zh")
    return entry


def measure_and_write(*, seeds: int = 16, out: Path = RENOISE_PATH, model_path: str = "world-renoise"
                      ) -> dict[str, Any]:
    from dllm_viz.core.decoder import decode
    from dllm_viz.models import load_model

    model = load_model(model_path, device="cpu")

    def run(prompts, configs, *, on_step=None, record_candidates=0):
        return decode(model, prompts, configs, on_step=on_step)

    data = {"model": model.name, **measure_all(run, seeds=range(seeds))}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=1) + "\n")
    print(table(data))
    print(f"wrote {out}")
    return data


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Measure the renoising decoder's knobs as correctness on the "
                                                 "renoising world model.")
    parser.add_argument("--seeds", type=int, default=16, help="seeds per prompt (the shipped lessons.json: 16)")
    parser.add_argument("--out", type=Path, default=RENOISE_PATH)
    parser.add_argument("--model", default="world-renoise", help="'world-renoise' or an exported run folder")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (0: torch's default)")
    args = parser.parse_args(argv)
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    measure_and_write(seeds=args.seeds, out=args.out, model_path=args.model)


if __name__ == "__main__":
    main()
