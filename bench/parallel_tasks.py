"""Accuracy against parallelism on the task families, for the tasks model and the exact oracle side by side.

For every family (`dllm_viz.tasks.FAMILIES`) and knob (`studies.curves.KNOBS`: confidence threshold,
constant k, top-k decay; five settings each), the benchmark's 64 prompts are decoded with every
setting in one batched call, for the trained model (``dllm_viz/assets/tasks``) and for `TaskOracle` (the
families' exact marginals). Each point: tokens per forward pass, the share of right answers with a
95% Wilson interval, and ParallelBench's bound along the runs (`curves.bound_bits`: bits of
conditional total correlation among tokens confirmed together). Then d3LLM's AUP per family, knob
and decoder (`curves.aup`, as d3LLM's `get_aup`; y_max is the family's best accuracy over every point of both
decoders); a curve get_aup refuses (its last point more than 5 accuracy points below its first) is stored as
``{"refused": reason}``, not scored.

Beside the schedule knobs, the threshold knob with each revision rule that takes back what it confirmed
(`curves.REVISION_KNOBS`: RCR, ReMDM, WINO; issue 32 item 5): the same points, where a WINO verify pass
counts as a forward, under each family's ``revision`` and their AUP under ``aup_revision`` (the schedule
knobs' y_max, raised only where a revision curve beats it, so the schedule knobs' AUP never moves).

Writes ``curves.json`` (every point) and ``curves.png`` (docs/tour.md's picture: the constant-k knob,
every family, model and oracle) into ``dllm_viz/assets/tasks/``, prints the tables, and the wall time of one
family's whole threshold curve (5 thresholds x 64 prompts) on one thread (the issue's floor: < 60 s).

    python bench/parallel_tasks.py                        # the shipped model; writes the two assets
    python bench/parallel_tasks.py --model RUN_EXPORT --out /tmp/c.json --png /tmp/c.png
    python bench/parallel_tasks.py --floor                # one token per step only: the card's floor table
    python bench/parallel_tasks.py --knobs threshold_rcr,threshold_remdm,threshold_wino --update  # those rows only
"""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from dllm_viz import assets, decode  # noqa: E402
from dllm_viz.studies.stats import format_rate  # noqa: E402
from dllm_viz.models.embedded import load_embedded  # noqa: E402
from dllm_viz.tasks import FAMILIES, TaskOracle, prompts  # noqa: E402
from dllm_viz.studies.curves import (  # noqa: E402
    ALL_KNOBS, KNOBS, PROMPT_SEED, PROMPTS_PER_FAMILY, REVISION_KNOBS, TEMPERATURE, aup_label, bound_bits, point,
    refused, scored,
)

ASSETS = assets.path("tasks")
DECODERS = ("model", "oracle")


def measure(model, family: str, knob: str, values=None, n: int = PROMPTS_PER_FAMILY) -> tuple[list[dict], float]:
    """Every setting of ``knob`` over ``n`` prompts of ``family`` in one batched decode: the points
    (as dicts, with ``bound_bits``, the mean bound per run) and the wall time of the decode."""
    tasks, spec = prompts(family, n, PROMPT_SEED), ALL_KNOBS[knob]
    values = spec.values if values is None else values
    cells = [(v, s, t) for v in values for s, t in enumerate(tasks)]
    start = time.perf_counter()
    traces = decode(model, [t.prompt for _, _, t in cells], [spec.make(t, v, s) for v, s, t in cells],
                    record_candidates=0)
    wall = time.perf_counter() - start
    out = []
    for i, v in enumerate(values):
        group = traces[i * n:(i + 1) * n]
        out.append({**point(knob, v, group).to_dict(),
                    "bound_bits": round(statistics.mean(bound_bits(t) for t in group), 4)})
    return out, wall


def aups(family_points: dict[str, dict[str, list[dict]]], floor_y_max: float = 1e-9,
         ) -> tuple[float, dict[str, dict[str, float | dict]]]:
    """y_max (the family's best accuracy, %, at least `floor_y_max`) and AUP per decoder and knob
    (`curves.scored`: the score, or ``{"refused": reason}``)."""
    y_max = max(100.0 * p["rate"] for d in family_points.values() for pts in d.values() for p in pts)
    y_max = max(y_max, floor_y_max)
    table = {}
    for decoder, knobs in family_points.items():
        table[decoder] = {}
        for knob, pts in knobs.items():
            curve = [(p["tpf"], 100.0 * p["rate"]) for p in pts if p["forwards"]]
            table[decoder][knob] = scored(curve, y_max)
    return y_max, table


def revision_aups(y_max: float,
                  revision_points: dict[str, dict[str, list[dict]]]) -> dict[str, dict[str, float | dict]]:
    """AUP of each revision curve (`REVISION_KNOBS`) per decoder, with the schedule knobs' y_max, raised
    only where a revision curve beats it (so adding them never changes the schedule knobs' AUP)."""
    return aups(revision_points, floor_y_max=y_max)[1]


FIGURE_KNOB = "constant_k"  # docs/tour.md's picture: every family on the same tokens-per-forward axis


def figure(data: dict, knob: str = FIGURE_KNOB):
    """One panel per family: right answers (95% Wilson bars) against tokens per forward (log axis), the
    model solid and the oracle dashed, for one knob."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    families = list(data["families"])
    fig = make_subplots(rows=2, cols=4, subplot_titles=[
        f"{f}  (AUP {aup_label(data['families'][f]['aup']['model'][knob])} / "
        f"{aup_label(data['families'][f]['aup']['oracle'][knob])})"
        for f in families], horizontal_spacing=0.06, vertical_spacing=0.16)
    style = {"model": dict(color="#1f5fa8", dash="solid", symbol="circle"),
             "oracle": dict(color="#c2452d", dash="dash", symbol="diamond-open")}
    for i, family in enumerate(families):
        row, col = 1 + i // 4, 1 + i % 4
        for decoder in DECODERS:
            pts = sorted(data["families"][family][decoder][knob], key=lambda p: p["tpf"])
            s = style[decoder]
            fig.add_trace(go.Scatter(
                x=[p["tpf"] for p in pts], y=[100 * p["rate"] for p in pts], mode="lines+markers",
                name="trained model" if decoder == "model" else "exact oracle", legendgroup=decoder,
                showlegend=i == 0, line=dict(color=s["color"], dash=s["dash"], width=2),
                marker=dict(symbol=s["symbol"], size=7, color=s["color"]),
                error_y=dict(type="data", symmetric=False, array=[100 * (p["hi"] - p["rate"]) for p in pts],
                             arrayminus=[100 * (p["rate"] - p["lo"]) for p in pts], width=3, thickness=1),
                text=[f"{knob} {p['value']:g}" for p in pts], hovertemplate="%{text}: %{y:.0f}%<extra></extra>",
            ), row=row, col=col)
        fig.update_yaxes(range=[-5, 105], row=row, col=col, title_text="right answers %" if col == 1 else None)
        fig.update_xaxes(row=row, col=col, type="log", range=[-0.08, 1.25], tickvals=[1, 2, 4, 8, 16],
                         title_text="tokens per forward" if row == 2 else None)
    fig.update_layout(
        width=1200, height=620, template="plotly_white", margin=dict(l=60, r=20, t=90, b=50),
        title=dict(text=f"Where parallel confirmation breaks: {KNOBS[knob].label}, {data['prompts']} prompts per "
                        f"family, T = {data['temperature']:g} (AUP model / oracle, d3LLM)", x=0.5),
        legend=dict(orientation="h", x=0.5, xanchor="center", y=1.1),
    )
    return fig


def write_png(fig, path: Path) -> None:
    """Render a Plotly figure with the project's own means: Debian's chromium through Playwright
    (as scripts/screenshot.py does), plotly.js inlined, no network."""
    from playwright import sync_api

    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    with tempfile.TemporaryDirectory() as tmp:
        page_path = Path(tmp) / "figure.html"
        page_path.write_text(fig.to_html(include_plotlyjs=True, full_html=True, config={"staticPlot": True}))
        with sync_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=["--headless", "--no-sandbox", "--disable-gpu"])
            page = browser.new_page(viewport={"width": fig.layout.width + 40, "height": fig.layout.height + 40})
            page.goto(page_path.as_uri())
            page.wait_for_selector(".js-plotly-plot .main-svg")
            page.locator(".js-plotly-plot").first.screenshot(path=str(path))
            browser.close()


def print_tables(data: dict) -> None:
    for knob in data["knobs"]:
        print(f"\n### {KNOBS[knob].label}: right answers (95% Wilson) at tokens per forward; model | oracle")
        print("| family | " + " | ".join(f"{v:g}" for v in KNOBS[knob].values) + " |")
        print("|---|" + "---|" * len(KNOBS[knob].values))
        for family, f in data["families"].items():
            cells = [f"{m['tpf']:.2f}: {format_rate(m)} \\| {o['tpf']:.2f}: {format_rate(o)}"
                     for m, o in zip(f["model"][knob], f["oracle"][knob])]
            print(f"| {family} | " + " | ".join(cells) + " |")
    for knob in data.get("revision_knobs", []):
        print(f"\n### {REVISION_KNOBS[knob].label}: right answers (95% Wilson) at tokens per forward; model | oracle")
        print("| family | " + " | ".join(f"{v:g}" for v in REVISION_KNOBS[knob].values) + " |")
        print("|---|" + "---|" * len(REVISION_KNOBS[knob].values))
        for family, f in data["families"].items():
            if knob in f.get("revision", {}).get("model", {}):
                cells = [f"{m['tpf']:.2f}: {format_rate(m)} \\| {o['tpf']:.2f}: {format_rate(o)}"
                         for m, o in zip(f["revision"]["model"][knob], f["revision"]["oracle"][knob])]
                print(f"| {family} | " + " | ".join(cells) + " |")
    print("\n### AUP (d3LLM), model / oracle")
    print("| family | " + " | ".join(data["knobs"]) + " |\n|---|" + "---|" * len(data["knobs"]))
    for family, f in data["families"].items():
        print(f"| {family} | " + " | ".join(f"{cell(f['aup']['model'][k])} / {cell(f['aup']['oracle'][k])}"
                                           for k in data["knobs"]) + " |")
    if data.get("revision_knobs"):
        print("\n### AUP (d3LLM) of the revision curves, model / oracle")
        print("| family | " + " | ".join(data["revision_knobs"]) + " |\n|---|" + "---|" * len(data["revision_knobs"]))
        for family, f in data["families"].items():
            rev = f.get("aup_revision", {})
            print(f"| {family} | " + " | ".join(f"{cell(rev['model'][k])} / {cell(rev['oracle'][k])}"
                                               for k in data["revision_knobs"] if k in rev.get("model", {})) + " |")
    refusals = [(family, decoder, knob, refused(value)) for family, f in data["families"].items()
                for table in (f["aup"], f.get("aup_revision", {})) for decoder, knobs in table.items()
                for knob, value in knobs.items() if refused(value) is not None]
    if refusals:
        print(f"\nRefused by d3LLM's get_aup ({len(refusals)} curves; not scored):")
        for family, decoder, knob, reason in refusals:
            print(f"- {family} / {decoder} / {knob}: {reason}")


def cell(value) -> str:
    """A stored AUP in a table: the score to 1 decimal, or "refused"."""
    return "refused" if refused(value) is not None else f"{value:.1f}"


def floor(model) -> None:
    """One token per step over the 64 prompts of every family, at T = 1 (the curves' temperature) and
    at T = 0 (argmax): the model card's floor table."""
    print("| family | right answers, one token per step, T = 1 | T = 0 (argmax) |\n|---|---|---|")
    for family in FAMILIES:
        tasks, make = prompts(family, PROMPTS_PER_FAMILY, PROMPT_SEED), KNOBS["constant_k"].make
        cells = []
        for temperature in (1.0, 0.0):
            configs = [make(t, 1, s).replace(temperature=temperature) for s, t in enumerate(tasks)]
            p = point("constant_k", 1, decode(model, [t.prompt for t in tasks], configs, record_candidates=0))
            cells.append(f"{p.right}/{p.runs} = {format_rate(p.accuracy)}")
        print(f"| {family} | " + " | ".join(cells) + " |", flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", type=Path, default=ASSETS,
                        help="an exported model folder (default: the shipped one)")
    parser.add_argument("--families", default=",".join(FAMILIES))
    parser.add_argument("--knobs", default=",".join(ALL_KNOBS),
                        help="schedule knobs and revision curves to measure (default: all of "
                             + ", ".join(ALL_KNOBS) + ")")
    parser.add_argument("--update", action="store_true",
                        help="merge the measured knobs into the existing --out file instead of starting it anew "
                             "(e.g. --knobs " + ",".join(REVISION_KNOBS) + " --update: only the revision curves)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, default=ASSETS / "curves.json")
    parser.add_argument("--png", type=Path, default=ASSETS / "curves.png")
    parser.add_argument("--no-png", action="store_true")
    parser.add_argument("--floor", action="store_true", help="only the one-token-per-step floor table")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    model = load_embedded(device="cpu", path=args.model)
    if args.floor:
        floor(model)
        return
    families, knobs = args.families.split(","), args.knobs.split(",")
    unknown = [k for k in knobs if k not in ALL_KNOBS]
    if unknown:
        parser.error(f"--knobs: {', '.join(unknown)} unknown; expected some of {', '.join(ALL_KNOBS)}")
    if args.update and args.out.exists():
        data = json.loads(args.out.read_text())
    else:
        data = {"model": model.name, "prompts": PROMPTS_PER_FAMILY, "prompt_seed": PROMPT_SEED,
                "temperature": TEMPERATURE, "threads": args.threads, "knobs": [], "values": {}, "families": {},
                "threshold_curve_seconds": {}}
    for k in knobs:
        listed = "knobs" if k in KNOBS else "revision_knobs"
        data.setdefault(listed, [])
        if k not in data[listed]:
            data[listed].append(k)
        data["values"][k] = list(ALL_KNOBS[k].values)
    decoders = {"model": model, "oracle": TaskOracle()}
    for family in families:
        fam = data["families"].setdefault(family, {})
        for knob in knobs:
            for name, decoder in decoders.items():
                pts, wall = measure(decoder, family, knob)
                (fam.setdefault(name, {}) if knob in KNOBS else
                 fam.setdefault("revision", {}).setdefault(name, {}))[knob] = pts
                if knob == "threshold":
                    data["threshold_curve_seconds"].setdefault(name, {})[family] = round(wall, 2)
                elif knob in REVISION_KNOBS:
                    seconds = data.setdefault("revision_curve_seconds", {}).setdefault(name, {})
                    seconds.setdefault(family, {})[knob] = round(wall, 2)
        if not all(fam.get(d) for d in DECODERS):
            parser.error(f"{family}: no schedule knobs measured yet; run without --update first")
        y_max, table = aups({d: fam[d] for d in DECODERS})
        fam.update(y_max=round(y_max, 2), aup=table)
        if fam.get("revision"):
            fam["aup_revision"] = revision_aups(y_max, fam["revision"])
        seconds = {d: data["threshold_curve_seconds"].get(d, {}).get(family) for d in DECODERS}
        print(f"{family}: threshold curve (5 x {PROMPTS_PER_FAMILY} decodes) in {seconds['model']} s (model), "
              f"{seconds['oracle']} s (oracle), {args.threads} thread(s); AUP model/oracle "
              + ", ".join(f"{k} {cell(table['model'][k])}/{cell(table['oracle'][k])}" for k in data["knobs"])
              + "".join(f"; {k} {cell(fam['aup_revision']['model'][k])}/{cell(fam['aup_revision']['oracle'][k])} in "
                        f"{data['revision_curve_seconds']['model'][family][k]} s (model)"
                        for k in knobs if k in REVISION_KNOBS), flush=True)
    print_tables(data)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {args.out}")
    if not args.no_png and FIGURE_KNOB in knobs and set(families) == set(FAMILIES):
        write_png(figure(data), args.png)
        print(f"wrote {args.png}")


if __name__ == "__main__":
    main()
