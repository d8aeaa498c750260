"""The article's lessons measured as correctness on the world model (`dllm_viz.world`).

Each study decodes every (prompt, seed) under each of its variants in ONE batched `decode` call
(the threshold study needs two: the threshold run fixes the step budget the top-k run must match)
and scores every trace with the world checker. Rates come with 95% Wilson intervals.

    python -m dllm_viz.studies.world_lessons        # writes dllm_viz/assets/world/lessons.json, prints the tables
    python -m dllm_viz.studies.lessons              # the Austen lessons, then these (with the A/B pairs)

Studies (variant labels are what the UI and docs/tour.md show), each over the quality preset's schedule
(`STUDY_PRESET`, see below) with one switch changed:
- polluted: raw vs tempered ("polluted") confidence at T = 1.0, 1.5, 2.0;
- global: confirmed-only sampling vs global sampling ranked by the sampled token's probability;
- parallel: constant k tokens per step (decay 1) at T = 1, k = 1 .. 48: broken two-word names as k grows;
- threshold: confidence threshold 0.9 vs top-k decay with the same mean number of steps;
- staged: constant T = 1.0 vs staged (1.2, 1.0, 0.7);
- presets: the article's four presets, correctness against steps.
"""
from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dllm_viz import assets
from dllm_viz.core.config import PRESETS, DecodeConfig
from dllm_viz.core.decoder import Runner
from dllm_viz.core.schedules import planned_steps
from dllm_viz.world.language import RULES
from dllm_viz.studies.world_score import WORLD_PROMPTS, correctness, format_rate

WORLD_MEASURED_PATH = assets.path("world", "lessons.json")
GEN_LENGTH = 48
Variants = dict[str, Callable[[int], DecodeConfig]]  # label -> seed -> config


# The studies vary one switch over the quality preset's schedule (k0 = L/6, decay 0.95: 20 steps for
# 48 tokens), where a model that knows the language perfectly (`WorldOracle`) writes only valid
# runs, so what a switch breaks shows. On the balanced schedule (k0 = L/4, decay 0.9: 6 steps)
# parallel decoding alone breaks every run of that perfect model, and every switch would read 0%.
# The Compare-tab pairs keep the balanced preset, as the Compare tab does.
STUDY_PRESET = "quality"
PAIR_PRESET = "balanced"


def _preset(name: str, **overrides: Any) -> Callable[[int], DecodeConfig]:
    return lambda seed: DecodeConfig.preset(name, GEN_LENGTH, seed=seed).replace(**overrides)


def _study(**overrides: Any) -> Callable[[int], DecodeConfig]:
    return _preset(STUDY_PRESET, **overrides)


@dataclass(frozen=True)
class Study:
    key: str
    title: str
    claim: str  # what the article predicts, in one line
    variants: Variants


def _polluted() -> Variants:
    out: Variants = {}
    for t in (1.0, 1.5, 2.0):
        out[f"raw, T={t:g}"] = _study(temperature=t)
        out[f"polluted, T={t:g}"] = _study(temperature=t, confidence_from="tempered")
    return out


PARALLEL_KS = (1, 2, 4, 8, 16, 48)

STUDIES: dict[str, Study] = {
    s.key: s
    for s in (
        Study("polluted", "Correct vs polluted confidence",
              "ranking by tempered probabilities hurts, more so as T grows", _polluted()),
        Study("global", "Confirmed-only vs global sampling with sampled confidence",
              "ranking by the sampled token's probability locks in unlucky draws",
              {"confirmed-only": _study(temperature=1.0),
               "global, sampled confidence": _study(temperature=1.0, sample_scope="all", confidence_from="sampled")}),
        Study("parallel", "Many tokens per step vs few (constant k, T = 1)",
              "drawing many tokens at once breaks words that belong together",
              {f"k={k}": _study(temperature=1.0, top_k=k, decay=1.0) for k in PARALLEL_KS}),
        Study("staged", "Constant vs staged temperature",
              "exploring early and settling late (1.2, 1.0, 0.7) beats a constant 1.0",
              {"constant T=1.0": _study(temperature=1.0),
               "staged 1.2/1.0/0.7": _study(temperature_stages=(1.2, 1.0, 0.7))}),
        Study("presets", "The four presets: correctness against steps",
              "quality > balanced > speed; creative trades correctness for variety",
              {name: (lambda seed, name=name: DecodeConfig.preset(name, GEN_LENGTH, seed=seed)) for name in PRESETS}),
    )
}
THRESHOLD = Study("threshold", "Confidence threshold vs top-k decay at equal average steps",
                  "a threshold spends its steps where the model is unsure, so it wins at the same cost",
                  {"threshold 0.9": _study(schedule="threshold", threshold=0.9)})


def _run_variants(run: Runner, variants: Variants, prompts: Sequence[str], seeds: Sequence[int]) -> dict[str, Any]:
    """Decode all variants x prompts x seeds in one call; score each variant's traces."""
    labels = list(variants)
    cells = [(label, p, s) for label in labels for p in prompts for s in seeds]
    traces = run([p for _, p, _ in cells], [variants[label](s) for label, _, s in cells], record_candidates=0)
    per = len(prompts) * len(seeds)
    out = {}
    for i, label in enumerate(labels):
        group = traces[i * per:(i + 1) * per]
        out[label] = {"steps": round(statistics.mean(t.nfe for t in group), 2), **correctness(group)}
    return out


# Decays the threshold study's top-k side may use to match a budget: below 1, since a decay of 1 is the
# parallel study's constant k. With k0 in 1..48 they plan every step count from 1 to 48 but 10 and 25.
MATCH_DECAYS = tuple(round(0.5 + 0.05 * i, 2) for i in range(10))


def matching_topk(steps: float) -> tuple[int, float]:
    """The (top_k, decay) whose planned steps are closest to ``steps``; among equally close ones, the
    decay nearest the study preset's, then the larger k. Planned steps jump with k0 at one decay (at
    the quality preset's 0.95: 20 steps for k0 = 8, 12 for k0 = 9), so k0 alone cannot meet most
    budgets; the decay closes the gap."""
    base = DecodeConfig.preset(STUDY_PRESET, GEN_LENGTH)

    def key(kd: tuple[int, float]) -> tuple[float, float, int]:
        k, d = kd
        return abs(planned_steps(base.replace(top_k=k, decay=d)) - steps), abs(d - base.decay), -k

    return min(((k, d) for d in MATCH_DECAYS for k in range(1, GEN_LENGTH + 1)), key=key)


def measure_all(run: Runner, prompts: Sequence[str] = WORLD_PROMPTS, seeds: Sequence[int] = range(8),
                log: Callable[[str], None] = print,
                pairs: dict[str, tuple[str, dict[str, Any], dict[str, Any]]] | None = None) -> dict[str, Any]:
    """Every study, then every Compare-tab pair in ``pairs`` (key -> (title, A overrides, B overrides)
    over the balanced preset, as in `lessons.LESSONS`), each pair as one batched decode."""
    results: dict[str, Any] = {}
    for study in STUDIES.values():
        results[study.key] = {"title": study.title, "claim": study.claim,
                              "variants": _run_variants(run, study.variants, prompts, seeds)}
        log(table(results[study.key]))
    # Threshold: first find its mean step count, then give top-k decay the same budget.
    thr = _run_variants(run, THRESHOLD.variants, prompts, seeds)
    k, d = matching_topk(thr["threshold 0.9"]["steps"])
    topk = _run_variants(run, {f"top-k decay, k0={k}, decay={d:g}": _study(top_k=k, decay=d)}, prompts, seeds)
    results["threshold"] = {"title": THRESHOLD.title, "claim": THRESHOLD.claim, "variants": {**thr, **topk}}
    log(table(results["threshold"]))
    measured_pairs: dict[str, Any] = {}
    for key, (title, a, b) in (pairs or {}).items():
        variants = {"A": _preset(PAIR_PRESET, **a), "B": _preset(PAIR_PRESET, **b)}
        measured_pairs[key] = {"title": title, "claim": "A vs B as in the Compare tab",
                               "variants": _run_variants(run, variants, prompts, seeds)}
        log(table(measured_pairs[key]))
    return {"pairs": measured_pairs, "model": "world", "gen_length": GEN_LENGTH, "prompts": list(prompts),
            "seeds": len(seeds), "studies": results}


MEANING_RULES = tuple(r for r in RULES if r not in ("grammar", "entity"))  # the rules the last column counts
# The table's column titles and claim line on the command line (the page passes its own, in its language).
HEAD = ("variant", "steps", "valid runs", "valid sentences", "broken two-word names",
        "runs breaking " + " / ".join(MEANING_RULES))
CLAIM = "Claim: {c}."


def table(result: dict[str, Any], *, head: Sequence[str] = HEAD, claim_line: str = CLAIM, title: str | None = None,
          claim: str | None = None) -> str:
    """Markdown table of one study: steps, valid runs and sentences, broken names (95% Wilson
    intervals), and the share of runs breaking each meaning rule. `title` and `claim` replace the
    study's own (English) ones: the Compare tab names a pair by its lesson's title; `head` and
    `claim_line` (with `{c}`) are the column titles and the claim's sentence."""
    lines = [f"### {title or result['title']}", f"*{claim_line.format(c=claim or result['claim'])}*", "",
             "| " + " | ".join(head) + " |", "|---|---:|---|---|---|---|"]
    for label, v in result["variants"].items():
        breaking = " / ".join(f"{v['runs_breaking'][r]['rate']:.0%}" for r in MEANING_RULES)
        lines.append(f"| {label} | {v['steps']:g} | {format_rate(v['valid_runs'])} "
                     f"| {format_rate(v['valid_sentences'])} | {format_rate(v['broken_entities'])} | {breaking} |")
    return "\n".join(lines) + "\n"


def load_world_measured(path: Path = WORLD_MEASURED_PATH) -> dict[str, Any]:
    """Studies by key; empty when the file is absent."""
    if not path.exists():
        return {}
    return json.loads(path.read_text())["studies"]


def load_world_measured_model(path: Path = WORLD_MEASURED_PATH) -> str | None:
    """The model the world pairs were measured on (assets/world/lessons.json), or None when absent."""
    if not path.exists():
        return None
    return json.loads(path.read_text()).get("model")


def load_world_pairs(path: Path = WORLD_MEASURED_PATH) -> dict[str, Any]:
    """Compare-tab pairs measured on the world model, by lesson key; empty when absent."""
    if not path.exists():
        return {}
    return json.loads(path.read_text()).get("pairs", {})


def measure_and_write(*, seeds: int = 8, out: Path = WORLD_MEASURED_PATH, model_path: str = "world",
                      pairs: dict[str, tuple[str, dict[str, Any], dict[str, Any]]] | None = None) -> dict[str, Any]:
    from dllm_viz.core.decoder import decode
    from dllm_viz.models import load_model
    from dllm_viz.world.oracle import WorldOracle

    model = WorldOracle() if model_path == "oracle" else load_model(model_path, device="cpu")

    def run(prompts, configs, *, on_step=None, record_candidates=0):
        return decode(model, prompts, configs, record_candidates=record_candidates, on_step=on_step)

    data = measure_all(run, seeds=range(seeds), pairs=pairs)
    data["model"] = getattr(model, "name", "world")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {out}")
    return data


def measure_pairs(pairs: dict[str, tuple[str, dict[str, Any], dict[str, Any]]], *, seeds: int = 8,
                  out: Path = WORLD_MEASURED_PATH) -> dict[str, Any]:
    """Measure only the Compare-tab `pairs` on the world model and replace their entries in `out`
    (the studies and the other pairs stay as they were measured)."""
    from dllm_viz.core.decoder import decode
    from dllm_viz.models import load_model

    model = load_model("world", device="cpu")

    def run(prompts, configs, *, on_step=None, record_candidates=0):
        return decode(model, prompts, configs, record_candidates=record_candidates, on_step=on_step)

    data = json.loads(out.read_text())
    if data.get("seeds") != seeds:
        raise ValueError(f"seeds={seeds} is invalid: expected {data.get('seeds')}, "
                         f"the seeds of {out.name}'s other entries")
    for key, (title, a, b) in pairs.items():
        variants = {"A": _preset(PAIR_PRESET, **a), "B": _preset(PAIR_PRESET, **b)}
        data["pairs"][key] = {"title": title, "claim": "A vs B as in the Compare tab",
                              "variants": _run_variants(run, variants, WORLD_PROMPTS, range(seeds))}
        print(table(data["pairs"][key]))
    out.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {out}")
    return data


def pairs_table(data: dict[str, Any], keys: Sequence[str]) -> str:
    """Compare-tab pairs on the world model, A / B side by side (docs/shipped_samplers.md)."""
    lines = ["| pair | steps A / B | valid sentences A / B | broken two-word names A / B | valid runs A / B |",
             "|---|---|---|---|---|"]
    for key in keys:
        pair = data["pairs"][key]
        a, b = pair["variants"]["A"], pair["variants"]["B"]
        cell = lambda name: f"{format_rate(a[name])} / {format_rate(b[name])}"  # noqa: E731
        lines.append(f"| {pair['title']} | {a['steps']:g} / {b['steps']:g} | {cell('valid_sentences')} "
                     f"| {cell('broken_entities')} | {cell('valid_runs')} |")
    return "\n".join(lines)


def summary_table(data: dict[str, Any]) -> str:
    """One Markdown table of every study (docs/tour.md): steps, valid sentences, broken names, 95% Wilson intervals."""
    lines = ["| study | variant | steps | valid sentences | broken two-word names |", "|---|---|---:|---|---|"]
    for key in (*STUDIES, THRESHOLD.key):
        study = data["studies"][key]
        for label, v in study["variants"].items():
            lines.append(f"| {key} | {label} | {v['steps']:g} | {format_rate(v['valid_sentences'])} "
                         f"| {format_rate(v['broken_entities'])} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Measure the lessons as correctness rates on the world model.")
    parser.add_argument("--seeds", type=int, default=8, help="seeds per prompt (the shipped lessons.json: 8)")
    parser.add_argument("--out", type=Path, default=WORLD_MEASURED_PATH)
    parser.add_argument("--model", default="world",
                        help="'world' (dllm_viz/assets/world), an exported run folder, or 'oracle' "
                             "(the language's exact marginals: what a perfect model reaches)")
    args = parser.parse_args(argv)
    measure_and_write(seeds=args.seeds, out=args.out, model_path=args.model)


if __name__ == "__main__":
    main()

