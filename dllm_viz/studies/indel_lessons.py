"""Insert and delete, counted (docs/indel.md): the `llada22_indel` floor and the lesson of drafts with a word wrong.

On the world model fine-tuned to edit lengths (`dllm_viz/assets/world-indel`), whose checker judges every
run, every decode goes through `dllm_viz.decode` (the step core's insert/delete rule, `core.indel_decode`):

  floor   `llada22_indel` (SGLang's defaults; one block of 48, since 32 does not split 48) on the 4 world
          prompts x 16 seeds, prompt + 48 tokens: valid runs (95% Wilson). The preset is argmax, so the 16
          seeds of a prompt give one decode; the same runs with draws at T = 0.7 (each request's own
          generator; masks still ranked by the argmax's probability) give 64.
  lesson  first drafts with a length error made on purpose: for each prompt and seed a sentence of the
          language that continues the prompt, with one word removed ("missing") or said twice ("extra")
          (`draft`), then masks. The model's first forward proposes the draft (`FirstDraft`: certain at the
          draft's positions, flat after it), so a decode's first step writes it and its later steps may
          mend it: with InDel (`llada22_indel`), and with JointThreshold (`llada21`: the same threshold and
          edits, positions that stay: it can only rewrite in place); "none" (the right draft) is the control.

    python -m dllm_viz.studies.indel_lessons     # writes dllm_viz/assets/world-indel/indel_eval.json
    python bench/indel_world.py                  # the same, the floor's command

The prose (en, zh) is `indel_study` in ``dllm_viz/assets/lessons.yaml``; its numbers and claims are checked
against the JSON (`dllm_viz.studies.claims`).
"""
from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch
import yaml

from dllm_viz import assets
from dllm_viz.core.config import DecodeConfig
from dllm_viz.core.decoder import decode
from dllm_viz.core.trace import Trace
from dllm_viz.studies.stats import format_rate, rate
from dllm_viz.studies.world_score import WORLD_PROMPTS, trace_text
from dllm_viz.world.checker import check
from dllm_viz.world.generator import sample_facts, sentence

EVAL_PATH = assets.path("world-indel", "indel_eval.json")
GEN_LENGTH = 48
SEEDS = range(16)
KINDS = ("missing", "extra", "none")
RULES = {"indel": "llada22_indel", "joint_threshold": "llada21"}  # the rule -> its "as shipped" preset
TEMPERATURE = 0.7  # the floor's draws
CERTAIN = 30.0  # the draft's logit over the rest: p = 1 in float32 at a vocabulary of hundreds


class FirstDraft:
    """`model`, but a row's first forward (its whole generation masked) proposes a first draft: at the draft's
    positions the draft's token is certain, after it every token is equally likely (below any threshold).

    `drafts` maps each prompt's ids to its draft; the prompts of one decode must differ (one draft each)."""

    def __init__(self, model: Any, drafts: dict[tuple[int, ...], list[int]]) -> None:
        self.model, self.drafts = model, drafts

    def __getattr__(self, name: str) -> Any:  # mask_token_id, tokenizer, edit tokens, name, ...
        return getattr(self.model, name)

    def _first(self, row: torch.Tensor) -> tuple[int, list[int]] | None:
        """`(prompt length, draft)` when `row (N,)` is a prompt of `drafts` followed by masks only."""
        for prompt, draft in self.drafts.items():
            P = len(prompt)
            if row[:P].tolist() == list(prompt) and bool((row[P:P + len(draft) + 1] == self.mask_token_id).all()):
                return P, draft
        return None

    def _propose(self, logits: torch.Tensor, ids: torch.Tensor, rows: torch.Tensor, cols: torch.Tensor
                 ) -> torch.Tensor:
        """`logits (K, V)` at `(rows, cols)` of `ids`, with the first drafts in."""
        out = logits.clone()
        for r in rows.unique().tolist():
            found = self._first(ids[r])
            if found is None:
                continue
            P, draft = found
            here = (rows == r).nonzero(as_tuple=True)[0]
            for k, j in zip(here.tolist(), (cols[here] - P).tolist()):
                if j >= 0:
                    out[k] = 0.0
                    if j < len(draft):
                        out[k, draft[j]] = CERTAIN
        return out

    def logits_at(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, rows: torch.Tensor,
                  cols: torch.Tensor) -> torch.Tensor:
        return self._propose(self.model.logits_at(input_ids, attention_mask, rows, cols), input_ids, rows, cols)

    def __call__(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        out = self.model(input_ids, attention_mask)  # (B, N, V)
        B, N = input_ids.shape
        rows, cols = torch.arange(B).repeat_interleave(N), torch.arange(N).repeat(B)
        return self._propose(out.reshape(B * N, -1), input_ids, rows, cols).view(B, N, -1)


def draft(tokenizer: Any, prompt: str, seed: int, kind: str) -> list[int]:
    """The ids of a sentence of the language that continues `prompt` (the first one a `random.Random(seed)`
    draws), after the prompt, with one word (not punctuation, drawn by the same generator) removed
    (`kind="missing"`), said twice (`"extra"`), or neither (`"none"`)."""
    if kind not in KINDS:
        raise ValueError(f"kind={kind!r} is invalid: expected one of {' | '.join(KINDS)}")
    rng = random.Random(seed)
    for _ in range(1_000_000):
        text = sentence(sample_facts(rng))
        if text.startswith(prompt) and text[len(prompt)] in " ,":
            break
    else:
        raise ValueError(f"prompt={prompt!r} is invalid: no sentence of the language continues it")
    ids = tokenizer.encode(text[len(prompt):])
    words = [i for i, t in enumerate(ids) if tokenizer.decode([t]).strip().isalnum()]
    i = rng.choice(words)
    if kind == "missing":
        return ids[:i] + ids[i + 1:]
    if kind == "extra":
        return ids[: i + 1] + [ids[i]] + ids[i + 1:]
    return ids


def load_eval(path: Path = EVAL_PATH) -> dict[str, Any]:
    """The measured floor and lesson (`indel_eval.json`); empty when the file is absent."""
    return json.loads(path.read_text()) if path.exists() else {}


def load_study_text(path: Path = assets.path("lessons.yaml")) -> dict[str, Any]:
    """The ``indel_study`` entry of the lessons file (title, text in en and zh, checks); {} without one."""
    entry = yaml.safe_load(path.read_text(encoding="utf-8")).get("indel_study") or {}
    for name in ("title", "text"):
        if entry and set(entry.get(name, {})) != {"en", "zh"}:
            raise ValueError(f"{path.name}: indel_study {name} needs exactly the languages en, zh")
    return entry


def table(data: dict[str, Any], header: Sequence[str], names: dict[str, str]) -> str:
    """Markdown table of the lesson: per first draft, each rule's valid runs (Wilson) and operations."""
    rows = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for kind, rules in data["lesson"].items():
        cells = [names[kind]]
        for rule in RULES:
            s = rules[rule]
            ops = ", ".join(f"{n} {names.get(op, op)}" for op, n in s["ops"].items() if op != "fill")
            cells.append(f"{format_rate(s['valid_runs'])}" + (f" ({ops})" if ops else ""))
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def summary(traces: Sequence[Trace]) -> dict[str, Any]:
    """Valid runs (Wilson), forwards per run, and the operations of the runs by kind."""
    ops: Counter = Counter()
    for rec in (rec for t in traces for rec in t.steps):
        if rec.indel is not None:  # an insert/delete step lists every operation
            ops.update(e[1] for e in rec.indel["edits"])
        else:  # a step whose positions stay: its fills, rewrites and re-masks
            ops.update({"fill": len(rec.selected), "rewrite": len(rec.edited or ()), "remask": len(rec.remasked or ())})
    ops = +ops  # the kinds that happened
    return {"valid_runs": rate(sum(check(trace_text(t)).valid for t in traces), len(traces)),
            "forwards": round(statistics.mean(t.nfe for t in traces), 2), "ops": dict(sorted(ops.items()))}


def floor(model: Any, *, temperature: float = 0.0) -> list[Trace]:
    """The 64 runs of the floor: 4 prompts x 16 seeds, in one decode."""
    configs = [DecodeConfig.preset(RULES["indel"], GEN_LENGTH, seed=s, temperature=temperature)
               for _ in WORLD_PROMPTS for s in SEEDS]
    return decode(model, [p for p in WORLD_PROMPTS for _ in SEEDS], configs, record_candidates=0)


def lesson(model: Any, kind: str, rule: str) -> list[Trace]:
    """The lesson's 64 runs of one kind of first draft under `rule`: one decode per seed (the 4 prompts)."""
    tok, out = model.tokenizer, []
    for s in SEEDS:
        drafts = {tuple(tok.encode(p)): draft(tok, p, 1000 * i + s, kind) for i, p in enumerate(WORLD_PROMPTS)}
        out += decode(FirstDraft(model, drafts), list(WORLD_PROMPTS),
                      DecodeConfig.preset(RULES[rule], GEN_LENGTH, seed=s), record_candidates=0)
    return [out[s * len(WORLD_PROMPTS) + i] for i in range(len(WORLD_PROMPTS)) for s in SEEDS]


def measure(model: Any, log: Callable[[str], None] = print) -> dict[str, Any]:
    """The floor and the lesson, as `indel_eval.json` holds them."""
    t0 = time.time()
    out: dict[str, Any] = {"model": model.name, "gen_length": GEN_LENGTH, "prompts": list(WORLD_PROMPTS),
                           "seeds": len(SEEDS), "rules": dict(RULES), "temperature": TEMPERATURE,
                           "floor": {"argmax": summary(floor(model)),
                                     "draws": summary(floor(model, temperature=TEMPERATURE))}, "lesson": {}}
    for kind in KINDS:
        out["lesson"][kind] = {rule: summary(lesson(model, kind, rule)) for rule in RULES}
        log(f"{kind}: " + ", ".join(f"{r} {format_rate(v['valid_runs'])}" for r, v in out["lesson"][kind].items()))
    out["seconds"] = round(time.time() - t0, 1)
    return out


def report(out: dict[str, Any]) -> str:
    lines = [f"{out['model']}: llada22_indel through decode(), 4 prompts x {out['seeds']} seeds, prompt + "
             f"{out['gen_length']} tokens ({out['seconds']} s)"]
    for label, s in out["floor"].items():
        lines.append(f"  floor, {label:8} {format_rate(s['valid_runs']):>14}  "
                     f"forwards {s['forwards']:5.2f}  {s['ops']}")
    for kind, rules in out["lesson"].items():
        for rule, s in rules.items():
            lines.append(f"  lesson, first draft {kind:8} {rule:16} {format_rate(s['valid_runs']):>14}  "
                         f"forwards {s['forwards']:5.2f}  {s['ops']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="world-indel", help="a shipped name or an exported folder")
    parser.add_argument("--json", type=Path, default=EVAL_PATH, help="where to write the figures")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    from dllm_viz.models import load_model

    out = measure(load_model(args.model, device="cpu"))
    print(report(out))
    args.json.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
