"""Where a slider release's time goes in the page, on one clock, round by round (bench/ui_bench.py times the
totals; this says what fills them).

The app served in this process as app.py serves it (the embedded model, gen_length 64, the balanced preset,
as ui_bench.py), Debian's chromium on it; per temperature-slider release, counted from the release as the page
saw it (ms):
  marks     the page's own performance marks (start.js, page.js, views.js): `dv-start` (the page asks the
            server to decode), each answer read (`dv-read-done`, streamed or not: how many, the last), the
            finished canvas (`dv-canvas`) and each figure drawn (`dv-drawn-*`), and ui_bench.py's view times
            (the first step, the canvas and heatmap, every figure);
  cpu       CPU ms from the release to every figure drawn: the decode's thread (`dllm-viz-engine`) and the
            rest of this process (the web server, and Playwright's client), and chromium by process type
            (renderer: the page's main thread and its painting; browser and utility: the network);
  long      the page's long tasks (> 50 ms) in that window, as [start, duration];
  direct    `decode(model, [prompt], config)` in this process, timed after the round once the page is idle.
The last line is the median of each column.

    OMP_NUM_THREADS=1 python bench/ui_timeline.py --rounds 5
"""
from __future__ import annotations

import argparse
import re
import statistics
import sys
import threading
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # ui_bench, beside this file

import ui_bench as B  # noqa: E402

# The release's time origin, and the long tasks after it (armed once).
PROBE = """() => { window.__dvLT = []; new PerformanceObserver((l) => { for (const e of l.getEntries())
  window.__dvLT.push([e.startTime, e.duration]); }).observe({type: 'longtask'});
  document.addEventListener('pointerup', (e) => { window.__dvT0 = e.timeStamp; }, true); }"""
MARKS = """() => { const t0 = window.__dvT0 || 0, r = (x) => Math.round(x - t0);
  const marks = performance.getEntriesByType('mark').filter((e) => e.startTime >= t0);
  return {marks: marks.map((e) => [e.name, r(e.startTime)]),
          long: window.__dvLT.filter((e) => e[0] >= t0).map((e) => [r(e[0]), Math.round(e[1])])}; }"""


def _ticks_ms(stat: str) -> float:
    fields = stat.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 10.0  # utime + stime, 100 ticks a second


def thread_cpu() -> dict[str, float]:
    """CPU ms of this process's threads, by Python thread name (the engine's `dllm-viz-engine`; "other")."""
    names = {t.native_id: t.name for t in threading.enumerate()}
    out: dict[str, float] = {}
    for task in Path("/proc/self/task").iterdir():
        try:
            ms = _ticks_ms((task / "stat").read_text())
        except OSError:
            continue
        name = "engine" if names.get(int(task.name)) == "dllm-viz-engine" else "other"
        out[name] = out.get(name, 0.0) + ms
    return out


def chromium_cpu() -> dict[str, float]:
    """CPU ms of chromium's processes (this process's descendants), by process type."""
    kids: dict[int, list[int]] = {}
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            parent = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError):
            continue
        kids.setdefault(parent, []).append(int(proc.name))
    out: dict[str, float] = {}
    todo = list(kids.get(int(Path("/proc/self").resolve().name), []))
    while todo:
        pid = todo.pop()
        todo += kids.get(pid, [])
        try:
            cmd = (Path("/proc") / str(pid) / "cmdline").read_text()
            ms = _ticks_ms((Path("/proc") / str(pid) / "stat").read_text())
        except OSError:
            continue
        if "chrom" not in cmd:
            continue  # Playwright's driver
        found = re.search(r"--type=([a-z-]+)", cmd)
        kind = found.group(1) if found else "browser"
        out[kind] = out.get(kind, 0.0) + ms
    return out


def minus(after: dict[str, float], before: dict[str, float]) -> dict[str, float]:
    return {k: after[k] - before.get(k, 0.0) for k in after}


def release_rounds(url: str, rounds: int, direct: Any) -> list[dict[str, Any]]:
    """One dict per release (after a warm-up one): the views' times, the marks, CPU and long tasks."""
    from playwright.sync_api import sync_playwright

    out = []
    with sync_playwright() as p:
        page = B.open_page(p, url)
        page.evaluate(PROBE)
        page.evaluate(B.ARM, [B.DONE_CANVAS, *B.FIGURES])
        page.get_by_role("button", name="balanced", exact=True).click()
        page.evaluate(B.DONE)
        B.settle(page)
        slider = page.locator("#dv-temperature input[type=range]")
        for i in range(rounds + 1):
            slider.scroll_into_view_if_needed()
            box = slider.bounding_box()
            frac = (0.2 if float(slider.input_value()) > 1.25 else 0.75) + 0.01 * (i % 5)
            page.evaluate(B.ARM, [B.TEXT, B.DONE_CANVAS, *B.FIGURES])
            server, browser = thread_cpu(), chromium_cpu()
            page.mouse.click(box["x"] + frac * box["width"], box["y"] + box["height"] / 2)
            text, done, heat, *rest = page.evaluate(B.DONE)
            server, browser = minus(thread_cpu(), server), minus(chromium_cpu(), browser)
            seen = page.evaluate(MARKS)
            B.settle(page)
            if i:
                out.append({"views": {"first step": min(text, done), "canvas+heatmap": max(done, heat),
                                      "every figure": max(done, heat, *rest)},
                            "marks": seen["marks"], "long": seen["long"], "server": server, "chromium": browser,
                            "direct": 1000 * B.timed(direct)})
        page.context.browser.close()
    return out


def summary(r: dict[str, Any]) -> dict[str, float]:
    """One round's numbers by name (ms)."""
    marks: dict[str, list[int]] = {}
    for name, at in r["marks"]:
        marks.setdefault(name, []).append(at)
    row = {name: float(at) for name, at in r["views"].items()}
    row |= {"start": marks.get("dv-start", [float("nan")])[0], "reads": len(marks.get("dv-read-done", [])),
            "last read": max(marks.get("dv-read-done", [float("nan")]))}
    row |= {name[3:]: float(max(ats)) for name, ats in marks.items()
            if name == "dv-canvas" or name.startswith("dv-drawn-")}
    row |= {"cpu " + k: v for k, v in r["server"].items()} | {"cpu " + k: v for k, v in r["chromium"].items()}
    row |= {"long tasks": sum(d for _, d in r["long"]), "direct": r["direct"]}
    return row


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", choices=("auto", "embedded", "tiny"), default="auto")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)

    import torch

    from dllm_viz import DecodeConfig, decode
    from dllm_viz.app import serve as app

    torch.set_num_threads(app.THREADS)
    model = B.load(args.model)
    cfg = DecodeConfig.preset("balanced", 64)
    demo, engine, _, url = B.serve_page(model)
    direct = lambda: decode(model, [B.PROMPT], cfg)  # noqa: E731
    for _ in range(3):
        direct()
    rows = [summary(r) for r in release_rounds(url, args.rounds, direct)]
    demo.close()
    engine.close()
    names = list(dict.fromkeys(k for row in rows for k in row))
    print("ms from the slider release (views, marks), CPU ms in that window, direct decode ms; one line per round")
    print(" | ".join(names))
    for row in rows + [{k: statistics.median(r.get(k, float("nan")) for r in rows) for k in names}]:
        print(" | ".join(f"{row.get(k, float('nan')):.0f}" for k in names))
    med = {k: statistics.median(r.get(k, float("nan")) for r in rows) for k in names}
    print(f"median x direct: canvas+heatmap {med['canvas+heatmap'] / med['direct']:.2f}, "
          f"every figure {med['every figure'] / med['direct']:.2f}, last read {med['last read'] / med['direct']:.2f}")


if __name__ == "__main__":
    main()
