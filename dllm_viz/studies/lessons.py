"""The Compare tab's one-click pairs: the article's lessons, each with what to look for and what we measured.

Each lesson is two sets of `DecodeConfig` overrides (A, B) over the balanced preset, decoded on the
same prompt and seed; its prose (both languages) lives in `dllm_viz/assets/lessons.yaml`. `measure` runs a
lesson over several prompts and seeds and returns the numbers the prose quotes;
`python -m dllm_viz.studies.lessons` re-measures every lesson on the embedded model and writes
`dllm_viz/assets/lessons.json`, which the UI shows next to the text; then it measures the same pairs and
the correctness studies on the world model (`world_lessons`, `dllm_viz/assets/world/lessons.json`).
"""
from __future__ import annotations

import argparse
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from dllm_viz import assets
from dllm_viz.core.analysis import P_FLOOR, events
from dllm_viz.core.config import DecodeConfig
from dllm_viz.core.decoder import Runner
from dllm_viz.core.trace import Trace

LANGS = ("en", "zh")  # the languages of the lessons' prose (the page's: dllm_viz.app.strings, a test checks)
LOW_P = 0.1  # a drawn token whose raw probability is below this counts as a "low-probability" token
MEASURED_PATH = assets.path("lessons.json")  # numbers, written by `python -m dllm_viz.studies.lessons`
LESSONS_PATH = assets.path("lessons.yaml")  # prose in both languages, and what it quotes and claims (`claims`)
# Prompts in the embedded model's domain: the playground's first prompt, the measurement set, and
# the neighbours that share the batch in the RNG lesson.
DEFAULT_PROMPTS = ("It is a truth universally acknowledged, that", "Elizabeth", "Mr. Darcy said that",
                   "The weather was fine, and")
NEIGHBOURS = ("Her sister", "In the morning")


@dataclass(frozen=True)
class Lesson:
    """One Compare-tab pair; the prose in both languages comes from dllm_viz/assets/lessons.yaml."""

    key: str
    title: dict[str, str]  # lang -> text
    a: dict[str, Any]  # DecodeConfig overrides of side A over the balanced preset
    b: dict[str, Any]  # ... and of side B
    look_for: dict[str, str]  # lang -> what the figures will show
    measured: dict[str, str]  # lang -> our reading of the numbers in dllm_viz/assets/lessons.json
    neighbours: int = 0  # decode A and B each in a batch with this many other prompts
    timed: bool = False  # decode each run's A and B alone, one after the other, so their wall times compare

    def configs(self, gen_length: int, seed: int) -> tuple[DecodeConfig, DecodeConfig]:
        base = DecodeConfig.preset("balanced", gen_length, seed=seed)
        return base.replace(**self.a), base.replace(**self.b)

    def text(self, field_name: str, lang: str) -> str:
        return getattr(self, field_name)[lang]


def load_lessons(path: Path = LESSONS_PATH) -> dict[str, Lesson]:
    """The lessons of the data file, by key, in file order. Raises ValueError on a malformed entry."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    out: dict[str, Lesson] = {}
    for entry in data["lessons"]:
        try:
            lesson = Lesson(
                key=entry["key"], title=dict(entry["title"]), a=dict(entry["a"]), b=dict(entry["b"]),
                look_for=dict(entry["look_for"]), measured=dict(entry["measured"]),
                neighbours=int(entry.get("neighbours", 0)),
                timed=bool(entry.get("timed", False)),
            )
        except (KeyError, TypeError) as err:
            raise ValueError(f"{path.name}: lesson {entry.get('key')!r} is missing or has a malformed field: "
                             f"{err}") from err
        for name in ("title", "look_for", "measured"):
            if set(getattr(lesson, name)) != set(LANGS):
                raise ValueError(f"{path.name}: lesson {lesson.key!r} {name} needs exactly the languages {LANGS}")
        lesson.configs(64, 0)  # the overrides must make valid configs
        out[lesson.key] = lesson
    return out


LESSONS: dict[str, Lesson] = load_lessons()


# ----- measurement ---------------------------------------------------------------------------
def draws(trace: Trace) -> int:
    """Tokens drawn by the sampler: every masked position per step under global sampling."""
    if trace.config.sample_scope == "all":
        return sum(sum(not math.isnan(c) for c in rec.raw) for rec in trace.steps)
    return sum(rec.k for rec in trace.steps)


def _mean(values: Sequence[float]) -> float:
    return round(math.fsum(values) / len(values), 4) if values else 0.0


def final_logprob(trace: Trace) -> float:
    """Mean raw log-prob of the tokens the text ends with, each at the step that last decided it (a
    token taken back and confirmed again counts once, with its last draw; a rewrite with the
    probability it was rewritten with). Without revisions: the mean log-prob of the drawn tokens."""
    last = [next((e for e in reversed(evs) if e.kind != "remask"), None) for evs in events(trace)]
    probs = [e.prob for e in last if e is not None]
    return math.fsum(math.log(max(p, P_FLOOR)) for p in probs) / len(probs) if probs else 0.0


def summarise(traces: Sequence[Trace], *, timed: bool = False, revising: bool = False) -> dict[str, float]:
    """Means over runs of the numbers the lesson texts quote (`timed`: each run was decoded alone, so
    its wall time is its own, and the mean is one of them; `revising`: what a revision rule changes,
    the final tokens' log-prob and the tokens taken back or rewritten per run)."""
    ms = [tr.metrics for tr in traces]
    early = []  # raw confidence of the tokens confirmed in the first quarter of the steps
    for tr in traces:
        cut = max(1, len(tr.steps) // 4)
        early += [rec.raw[p] for rec in tr.steps[:cut] for p in rec.selected]
    drawn_p = [math.exp(lp) for tr in traces for rec in tr.steps for lp in rec.logprobs]
    # How much the first step's confidences (what the schedule ranks by) differ across positions.
    spread, level = [], []
    for tr in traces:
        conf = [c for c in tr.steps[0].confidence if not math.isnan(c)] if tr.steps else []
        spread.append(max(conf) - min(conf) if conf else 0.0)
        level.append(math.fsum(conf) / len(conf) if conf else 0.0)
    return {
        "steps": _mean([m["nfe"] for m in ms]),
        "mean_confidence": _mean([m["mean_confidence"] for m in ms]),
        "early_raw_confidence": _mean(early),
        "mean_logprob": _mean([m["mean_logprob"] for m in ms]),
        "repeat_3": _mean([m["repeat_3"] for m in ms]),
        "distinct_2": _mean([m["distinct_2"] for m in ms]),
        "low_p_share": _mean([float(p < LOW_P) for p in drawn_p]),
        "first_step_spread": _mean(spread),
        "first_step_mean": _mean(level),  # how deep the heatmap's first row is coloured
        "draws": _mean([draws(tr) for tr in traces]),
        **({"seconds": _mean([tr.wall_time for tr in traces])} if timed else {}),
        **({"final_logprob": _mean([final_logprob(tr) for tr in traces]),
            "revisions": _mean([float(sum(rec.revisions for rec in tr.steps)) for tr in traces])} if revising else {}),
    }


def measure(run: Runner, lesson: Lesson, prompts: Sequence[str], seeds: Sequence[int], gen_length: int = 64
            ) -> dict[str, Any]:
    """Decode the lesson for every (prompt, seed), A and B batched together; return A/B summaries.

    `same_text`: share of runs where B's text equals A's. For lessons with neighbours, each run is
    decoded in a batch with `lesson.neighbours` other prompts and `solo_match_*` is the share of runs
    whose text equals the same request decoded alone. A `timed` lesson decodes each run's A and B
    alone, one after the other (so load hits both alike), and adds `seconds` to each side and
    `speedup`, B's mean time over A's. `tokens_differ`: positions whose token differs, per run.
    """
    runs = [(p, s) for p in prompts for s in seeds]
    pairs = [lesson.configs(gen_length, s) for _, s in runs]
    extra: dict[str, Any] = {}
    if lesson.timed:
        a_traces, b_traces = [], []
        for (prompt, _), (ca, cb) in zip(runs, pairs):
            a_traces += run([prompt], [ca])
            b_traces += run([prompt], [cb])
    elif lesson.neighbours:
        others = list(NEIGHBOURS[: lesson.neighbours])
        batched: dict[str, list[Trace]] = {"a": [], "b": []}
        for (prompt, _), (ca, cb) in zip(runs, pairs):
            out = run([prompt, *others, prompt, *others], [ca] * (1 + len(others)) + [cb] * (1 + len(others)))
            batched["a"].append(out[0])
            batched["b"].append(out[1 + len(others)])
        solo = run([p for p, _ in runs] * 2, [a for a, _ in pairs] + [b for _, b in pairs])
        a_traces, b_traces = batched["a"], batched["b"]
        extra = {
            "solo_match_a": _mean([float(x.token_ids == y.token_ids) for x, y in zip(a_traces, solo[: len(runs)])]),
            "solo_match_b": _mean([float(x.token_ids == y.token_ids) for x, y in zip(b_traces, solo[len(runs):])]),
        }
    else:
        out = run([p for p, _ in runs] * 2, [a for a, _ in pairs] + [b for _, b in pairs])
        a_traces, b_traces = out[: len(runs)], out[len(runs):]
    same = [float(x.token_ids == y.token_ids and x.order == y.order) for x, y in zip(a_traces, b_traces)]
    same_order = [sum(p == q for p, q in zip(x.order, y.order)) / max(1, gen_length)
                  for x, y in zip(a_traces, b_traces)]
    revising = lesson.a.get("revise", "none") != "none" or lesson.b.get("revise", "none") != "none"
    a_sum = summarise(a_traces, timed=lesson.timed, revising=revising)
    b_sum = summarise(b_traces, timed=lesson.timed, revising=revising)
    if lesson.timed:
        extra["speedup"] = round(b_sum["seconds"] / max(a_sum["seconds"], 1e-9), 2)
    differ = [sum(p != q for p, q in zip(x.token_ids, y.token_ids)) for x, y in zip(a_traces, b_traces)]
    return {
        "lesson": lesson.key, "runs": len(runs), "gen_length": gen_length,
        "a": a_sum, "b": b_sum, "same_trace": _mean(same),
        "same_step_share": _mean(same_order), "tokens_differ": _mean(differ), **extra,
    }


def load_measured(path: Path = MEASURED_PATH) -> dict[str, dict[str, Any]]:
    """Measurements by lesson key; empty when the file is absent (the UI then shows the text only)."""
    if not path.exists():
        return {}
    data = json.loads(path.read_text())
    return {m["lesson"]: m for m in data.get("lessons", [])}


def measured_model(path: Path = MEASURED_PATH) -> str:
    """The model the lessons' numbers were measured on (its name in assets/lessons.json)."""
    if not path.exists():
        return "austen-mdlm"
    return str(json.loads(path.read_text()).get("model") or "austen-mdlm")


# Rows of the measured table: (label key, field, format). One format per row, so a step count
# reads "64.0" and a share "49%", never "63.9688 steps" next to "49%". The label keys are the page's
# strings (`dllm_viz.app.views.lessons` renders the table in the page's language).
TABLE_ROWS = (
    ("mt_steps", "steps", "{:.1f}"), ("mt_mean_confidence", "mean_confidence", "{:.3f}"),
    ("mt_early", "early_raw_confidence", "{:.3f}"), ("mt_first_mean", "first_step_mean", "{:.3f}"),
    ("mt_spread", "first_step_spread", "{:.3f}"), ("mt_logprob", "mean_logprob", "{:.2f}"),
    ("mt_repeat", "repeat_3", "{:.2%}"), ("mt_distinct", "distinct_2", "{:.3f}"), ("mt_low_p", "low_p_share", "{:.0%}"),
    ("mt_draws", "draws", "{:.1f}"), ("mt_seconds", "seconds", "{:.3f}"),
    ("mt_final_logprob", "final_logprob", "{:.2f}"), ("mt_revisions", "revisions", "{:.1f}"),
)
# The rows after the A/B numbers: (label key, field, format of A, of B or None).
PAIR_ROWS = (("mt_same_trace", "same_trace", "{:.0%}", None), ("mt_same_step", "same_step_share", "{:.0%}", None),
             ("mt_solo", "solo_match", "{:.0%}", "{:.0%}"), ("mt_tokens_differ", "tokens_differ", "{:.1f}", None),
             ("mt_speedup", "speedup", "{:.2f}×", None))


COMMAND_LINE = {"side_a": "A", "side_b": "B", "mt_footer": "{n} runs (prompts x seeds), gen_length {g}."}


def field_label(key: str, **values: Any) -> str:
    """A row's label on the command line: the measurement's own field name (the page translates the key)."""
    names = {k: name for k, name, *_ in (*TABLE_ROWS, *PAIR_ROWS)}
    return names.get(key) or COMMAND_LINE[key].format(**values)


def table(measured: dict[str, Any], label: Callable[..., str] = field_label) -> str:
    """Markdown table of one lesson's A/B numbers; `label(key, **values)` names each row (the page
    passes its strings in the page's language, `p` and `n`, `g` fill their placeholders)."""
    lines = [f"| | {label('side_a')} | {label('side_b')} |", "|---|---:|---:|"]
    for key, name, fmt in TABLE_ROWS:
        if name in measured["a"]:
            a, b = fmt.format(measured["a"][name]), fmt.format(measured["b"][name])
            lines.append(f"| {label(key, p=LOW_P)} | {a} | {b} |")
    for key, name, fmt_a, fmt_b in PAIR_ROWS:
        if fmt_b is not None and f"{name}_a" in measured:
            a, b = fmt_a.format(measured[name + "_a"]), fmt_b.format(measured[name + "_b"])
            lines.append(f"| {label(key)} | {a} | {b} |")
        elif fmt_b is None and name in measured:
            lines.append(f"| {label(key)} | {fmt_a.format(measured[name])} | |")
    lines.append("\n*" + label("mt_footer", n=measured["runs"], g=measured["gen_length"]) + "*")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Measure every Compare-tab lesson on the embedded model.")
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--gen-length", type=int, default=64)
    parser.add_argument("--out", type=Path, default=MEASURED_PATH)
    parser.add_argument("--world-seeds", type=int, default=8, help="seeds per world prompt; 0 skips the world model")
    parser.add_argument("--world-only", action="store_true",
                        help="measure only the world model (its studies and these pairs), e.g. after retraining it")
    parser.add_argument("--only", action="append", choices=list(LESSONS), default=None,
                        help="re-measure only this lesson (repeatable), on both models, and keep the other entries")
    args = parser.parse_args(argv)
    if args.only:
        return measure_only(args.only, seeds=args.seeds, gen_length=args.gen_length, world_seeds=args.world_seeds,
                            out=args.out)
    from dllm_viz.core.decoder import decode
    from dllm_viz.models import load_model

    if not args.world_only:
        model = load_model()

        def run(prompts, configs, *, on_step=None, record_candidates=0):
            return decode(model, prompts, configs, record_candidates=record_candidates, on_step=on_step)

        results = []
        for lesson in LESSONS.values():
            m = measure(run, lesson, DEFAULT_PROMPTS, range(args.seeds), args.gen_length)
            results.append(m)
            print(f"## {lesson.text('title', 'en')}\n{table(m)}\n", flush=True)
        args.out.write_text(json.dumps({"model": getattr(model, "name", "model"), "lessons": results}, indent=1) + "\n")
        print(f"wrote {args.out}")
    if args.world_seeds:  # the same pairs and the correctness studies, on the world model
        from dllm_viz.studies.world_lessons import measure_and_write

        pairs = {key: (lesson.text("title", "en"), lesson.a, lesson.b) for key, lesson in LESSONS.items()}
        measure_and_write(seeds=args.world_seeds, pairs=pairs)


def measure_only(keys: Sequence[str], *, seeds: int, gen_length: int, world_seeds: int,
                 out: Path = MEASURED_PATH) -> None:
    """Re-measure the lessons `keys` (a new lesson, say) on the embedded model and as world-model pairs,
    replacing their entries in assets/lessons.json and assets/world/lessons.json and keeping the rest."""
    from dllm_viz.studies.world_lessons import WORLD_MEASURED_PATH, measure_pairs
    from dllm_viz.core.decoder import decode
    from dllm_viz.models import load_model

    model = load_model()

    def run(prompts, configs, *, on_step=None, record_candidates=0):
        return decode(model, prompts, configs, record_candidates=record_candidates, on_step=on_step)

    data = json.loads(out.read_text()) if out.exists() else {"model": getattr(model, "name", "model"), "lessons": []}
    kept = [m for m in data["lessons"] if m["lesson"] not in keys]
    fresh = []
    for key in keys:
        m = measure(run, LESSONS[key], DEFAULT_PROMPTS, range(seeds), gen_length)
        fresh.append(m)
        print(f"## {LESSONS[key].text('title', 'en')}\n{table(m)}\n", flush=True)
    order = list(LESSONS)
    data["lessons"] = sorted(kept + fresh,
                             key=lambda m: order.index(m["lesson"]) if m["lesson"] in order else len(order))
    out.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {out}")
    if world_seeds:
        pairs = {key: (LESSONS[key].text("title", "en"), LESSONS[key].a, LESSONS[key].b) for key in keys}
        measure_pairs(pairs, seeds=world_seeds, out=WORLD_MEASURED_PATH)


if __name__ == "__main__":
    main()
