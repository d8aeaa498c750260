"""Confirmations taken back, counted: does a revision rule repair what confirming breaks?

On the world model (`dllm_viz.world`), whose checker judges every run, and on its exact oracle
(`WorldOracle(can_edit=True)`: the perfect model, and the perfect editor of LLaDA 2.1's objective),
each regime below decodes every (prompt, seed) with each rule in ONE batched `decode` and scores
valid runs, broken two-word names and wrong sums with 95% Wilson intervals (`studies.stats`). A rule
that adds forward passes (WINO's verify pass, ReMDM's loop, JointThreshold's edit-only steps) is
also measured against the monotone decoder given the same number of forwards: top-k decay whose
planned steps match the rule's mean NFE (`world_lessons.matching_topk`), decoded in a second call.

    python -m dllm_viz.studies.revision_lessons     # writes dllm_viz/assets/world/revision.json, prints the tables
    python -m dllm_viz.studies.lessons --world-only  # the world lessons, then these

Regimes (T = 1, so there are sampling errors to take back):
- threshold: the confidence threshold 0.9 (`schedule="threshold"`), monotone, and with each rule;
- k4: four tokens per step (constant k, decay 1), where confirming dependent words together breaks
  names and sums even for the oracle: what a rule would have to repair.
Rules: RCR and ReMDM in counts (ours, the `rcr` and `remdm` rules: ReMDM with sigma cap, eta 0.02, its counts
confirm one more mask per token taken back; ReMDM-loop: eta 0.02 once 90% is visible, 16 loop steps), WINO
(verify 0.9, WINO's shadow block in the step's one forward) and token editing (JointThreshold:
edit_threshold 0, 16 edit-only steps; only on a model that can edit, `models.base.can_edit`, the row says
so otherwise).
- shipped: the "as shipped" presets, each the original's own loop, beside our count-based
  variants (`SHIPPED`): `rcr` (MDPO's RCR: MaskGIT's split, one running confidence over the sequence) and
  `rcr_counted`, `remdm` (ReMDM's sampler: a coin per position by time, then noise removal) and
  `remdm_counted`, `wino` (the shadow block) and `wino_canvases` (a verify pass of its own); the
  monotone row is the plain schedule at half as many steps as positions. Each at T = 1 (the presets of
  RCR and WINO ship at T = 0: here their draws are sampled, the rule is theirs).

The prose (en, zh) is `revision_study` in ``dllm_viz/assets/lessons.yaml``, with the numbers it quotes
and what it claims (its ``checks``, `dllm_viz.studies.claims`). The Compare tab shows it in the page's
language (`dllm_viz.app.views.lessons.study_md`).
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
from dllm_viz.studies.world_lessons import matching_topk
from dllm_viz.core.config import DecodeConfig
from dllm_viz.core.decoder import Runner
from dllm_viz.studies.stats import format_rate
from dllm_viz.core.trace import Trace
from dllm_viz.studies.world_score import WORLD_PROMPTS, correctness

REVISION_PATH = assets.path("world", "revision.json")
LESSONS_PATH = assets.path("lessons.yaml")
GEN_LENGTH = 48
TEMPERATURE = 1.0
REGIMES: dict[str, dict[str, Any]] = {
    "threshold": dict(schedule="threshold", threshold=0.9, min_k=1),
    "k4": dict(schedule="topk_decay", top_k=4, decay=1.0, min_k=1),
}
RULES: dict[str, dict[str, Any]] = {
    "monotone": {},
    "rcr": dict(revise="rcr"),
    "remdm_cap": dict(revise="remdm", remask_sigma="cap", remask_eta=0.02),
    "remdm_loop": dict(revise="remdm", remask_sigma="loop", remask_eta=0.02, remask_alpha_on=0.9, remask_loop_steps=16),
    "wino": dict(revise="wino", verify_threshold=0.9),
    "editing": dict(revise="joint_threshold", edit_threshold=0.0, max_post_edit_steps=16),
}
# The presets as shipped and our count-based variants (regime "shipped"): row -> preset (None: the monotone row).
SHIPPED: dict[str, str | None] = {"monotone": None, "rcr": "rcr", "rcr_counted": "rcr_counted", "remdm": "remdm",
                                  "remdm_counted": "remdm_counted", "wino": "wino", "wino_canvases": "wino_canvases"}
LABELS = {"monotone": "monotone", "rcr": "+ RCR (ours, in counts)", "remdm_cap": "+ ReMDM (ours, cap)",
          "remdm_loop": "+ ReMDM-loop (ours)", "wino": "+ WINO", "editing": "+ editing (JointThreshold)"}
SHIPPED_LABELS = {"monotone": "monotone (fixed steps)", "rcr": "RCR as shipped (MDPO)",
                  "rcr_counted": "RCR in counts (ours)", "remdm": "ReMDM as shipped",
                  "remdm_counted": "ReMDM in counts (ours)", "wino": "WINO as shipped (shadow block)",
                  "wino_canvases": "WINO, verify by canvases (ours)"}
NFE_SLACK = 0.5  # a rule within this many forwards of the monotone decode needs no matched row


def rules_of(regime: str) -> tuple[str, ...]:
    """The rows of a regime: the rules on top of a schedule, or the presets as shipped and ours."""
    return tuple(SHIPPED) if regime == "shipped" else tuple(RULES)


def config(regime: str, rule: str, seed: int) -> DecodeConfig:
    if regime == "shipped":
        preset = SHIPPED[rule]
        if preset is None:
            return DecodeConfig(gen_length=GEN_LENGTH, temperature=TEMPERATURE, seed=seed, schedule="fixed_steps",
                                steps=GEN_LENGTH // 2)
        return DecodeConfig.preset(preset, GEN_LENGTH, temperature=TEMPERATURE, seed=seed)
    return DecodeConfig(gen_length=GEN_LENGTH, temperature=TEMPERATURE, seed=seed, **REGIMES[regime], **RULES[rule])


def matched_config(nfe: float, seed: int) -> DecodeConfig:
    """The monotone decoder with about `nfe` forwards: top-k decay at the matching (k0, decay)."""
    k, decay = matching_topk(nfe)
    return DecodeConfig(gen_length=GEN_LENGTH, temperature=TEMPERATURE, seed=seed, schedule="topk_decay", top_k=k,
                        decay=decay, min_k=1)


def score(traces: Sequence[Trace]) -> dict[str, Any]:
    """NFE, what the checker says, and how much each run took back and rewrote."""
    c = correctness(traces)
    return {"nfe": round(statistics.mean(t.nfe for t in traces), 2), "valid_runs": c["valid_runs"],
            "broken_entities": c["broken_entities"], "wrong_sums": c["runs_breaking"]["sum"],
            "remasked": round(statistics.mean(sum(len(r.remasked or ()) for r in t.steps) for t in traces), 2),
            "edited": round(statistics.mean(sum(len(r.edited or ()) for r in t.steps) for t in traces), 2)}


def measure_decoder(run: Runner, can_edit: bool, prompts: Sequence[str], seeds: Sequence[int],
                    log: Callable[[str], None] = print) -> dict[str, Any]:
    """Every regime x rule for one decoder: one batched decode per regime, one more for the matched rows."""
    cells = [(p, s) for p in prompts for s in seeds]
    out: dict[str, Any] = {}
    for regime in (*REGIMES, "shipped"):
        rules = [r for r in rules_of(regime) if can_edit or r != "editing"]
        traces = run([p for r in rules for p, _ in cells], [config(regime, r, s) for r in rules for _, s in cells],
                     record_candidates=0)
        rows = {r: score(traces[i * len(cells):(i + 1) * len(cells)]) for i, r in enumerate(rules)}
        if not can_edit and regime != "shipped":
            rows["editing"] = {"skipped": "the model cannot edit (models.base.can_edit is False)"}
        base = rows["monotone"]["nfe"]
        need = [r for r in rules if abs(rows[r]["nfe"] - base) > NFE_SLACK]
        if need:
            matched = run([p for _ in need for p, _ in cells],
                          [matched_config(rows[r]["nfe"], s) for r in need for _, s in cells], record_candidates=0)
            for i, r in enumerate(need):
                k, decay = matching_topk(rows[r]["nfe"])
                rows[r]["matched"] = {"top_k": k, "decay": decay,
                                      **score(matched[i * len(cells):(i + 1) * len(cells)])}
        out[regime] = rows
        log(f"{regime}: " + ", ".join(f"{r} {v['valid_runs']['rate']:.0%} @ {v['nfe']:g}" for r, v in rows.items()
                                      if "nfe" in v))
    return out


def measure_all(decoders: dict[str, tuple[Runner, bool]], prompts: Sequence[str] = WORLD_PROMPTS,
                seeds: Sequence[int] = range(16), log: Callable[[str], None] = print) -> dict[str, Any]:
    """`decoders`: name -> (run, can_edit), e.g. {"model": ..., "oracle": ...}."""
    return {"gen_length": GEN_LENGTH, "temperature": TEMPERATURE, "prompts": list(prompts), "seeds": len(seeds),
            "regimes": {k: dict(v) for k, v in REGIMES.items()}, "rules": {k: dict(v) for k, v in RULES.items()},
            "shipped": dict(SHIPPED),
            "decoders": {name: measure_decoder(run, edit, prompts, seeds, log)
                         for name, (run, edit) in decoders.items()}}


# ----- reading ------------------------------------------------------------------------------------
def load_revision(path: Path = REVISION_PATH) -> dict[str, Any]:
    """The measured study; empty when the file is absent."""
    return json.loads(path.read_text()) if path.exists() else {}


def load_study_text(path: Path = LESSONS_PATH) -> dict[str, Any]:
    """The ``revision_study`` entry of the lessons file (title, text in en and zh, checks)."""
    entry = yaml.safe_load(path.read_text(encoding="utf-8")).get("revision_study")
    if not entry:
        return {}
    for name in ("title", "text"):
        if set(entry.get(name, {})) != {"en", "zh"}:
            raise ValueError(f"{path.name}: revision_study {name} needs exactly the languages en, zh")
    return entry


def table(data: dict[str, Any], regime: str, header: Sequence[str], names: dict[str, str] | None = None) -> str:
    """Markdown table of one regime: per rule, the model's and the oracle's NFE, valid runs, broken names,
    wrong sums (95% Wilson), tokens taken back and rewritten per run, and the monotone decoder at the
    same NFE. `header`: the column titles, `names`: the rules' and decoders' names (the caller's language;
    default `LABELS` and the decoders' keys)."""
    decoders = data["decoders"]
    names = {**(SHIPPED_LABELS if regime == "shipped" else LABELS), **{d: d for d in decoders}, **(names or {})}
    lines = ["| " + " | ".join(header) + " |", "|---|---|---:|---|---|---|---:|---|"]
    for rule in rules_of(regime):
        for decoder, regimes in decoders.items():
            row = regimes[regime].get(rule, {})
            if "nfe" not in row:
                lines.append(f"| {names[rule]} | {names[decoder]} | | {names.get('skipped', row.get('skipped', ''))} "
                             "| | | | |")
                continue
            m = row.get("matched")
            matched = f"{m['nfe']:g}: {format_rate(m['valid_runs'])}" if m else ""
            lines.append(f"| {names[rule]} | {names[decoder]} | {row['nfe']:g} | {format_rate(row['valid_runs'])} "
                         f"| {format_rate(row['broken_entities'])} | {format_rate(row['wrong_sums'])} "
                         f"| {row['remasked']:g} / {row['edited']:g} | {matched} |")
    return "\n".join(lines)


ENGLISH_HEADER = ("rule", "decoder", "NFE", "valid runs", "broken names", "wrong sums",
                  "taken back / rewritten per run", "monotone at the same NFE: NFE, valid runs")


def readme_table(data: dict[str, Any], decoder: str = "model") -> str:
    """The table of docs/revision.md: one row per rule, each regime's NFE and valid runs for `decoder`, and the
    monotone decoder's at the same NFE."""
    lines = ["| rule | threshold 0.9: NFE, valid runs | monotone, same NFE "
             "| k = 4: NFE, valid runs | monotone, same NFE |",
             "|---|---|---|---|---|"]
    for rule in RULES:
        cells = []
        for regime in REGIMES:
            row = data["decoders"][decoder][regime][rule]
            m = row.get("matched")
            cells += [f"{row['nfe']:g}: {format_rate(row['valid_runs'])}",
                      f"{m['nfe']:g}: {format_rate(m['valid_runs'])}" if m else "—"]
        lines.append(f"| {LABELS[rule]} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def measure_and_write(*, seeds: int = 16, out: Path = REVISION_PATH, model_path: str = "world") -> dict[str, Any]:
    from dllm_viz.core.decoder import decode
    from dllm_viz.models import load_model
    from dllm_viz.models.base import can_edit
    from dllm_viz.world.oracle import WorldOracle

    def runner(model: Any) -> Runner:
        def run(prompts, configs, *, on_step=None, record_candidates=0):
            return decode(model, prompts, configs, record_candidates=record_candidates, on_step=on_step)
        return run

    model, oracle = load_model(model_path, device="cpu"), WorldOracle(can_edit=True)
    data = measure_all({"model": (runner(model), can_edit(model)), "oracle": (runner(oracle), True)},
                       seeds=range(seeds))
    data["model"] = getattr(model, "name", model_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=1) + "\n")
    for regime in (*REGIMES, "shipped"):
        print(f"\n### {regime}\n{table(data, regime, ENGLISH_HEADER)}")
    print(f"wrote {out}")
    return data


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Measure the revision rules as correctness on the world model.")
    parser.add_argument("--seeds", type=int, default=16, help="seeds per prompt (the shipped revision.json: 16)")
    parser.add_argument("--out", type=Path, default=REVISION_PATH)
    parser.add_argument("--model", default="world", help="'world' (dllm_viz/assets/world) or an exported run folder")
    args = parser.parse_args(argv)
    measure_and_write(seeds=args.seeds, out=args.out, model_path=args.model)


if __name__ == "__main__":
    main()
