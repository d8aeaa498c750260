"""How much the playground adds to a decode, measured side by side in one run (issue 4's speed check).

For gen_length 64 with the balanced preset, the median over interleaved rounds of:
  direct    `decode(model, [prompt], config)` in this process;
  engine    the same request through the shared `Engine` (what app.py routes decodes to);
  handlers  what the server runs for a slider release: `PlayHandlers.decode`, the decode with its
            steps encoded for the page as they come (`views.wire`; no network);
  api       `/generate` through the real `gradio_client`, against the app served in this process;
  compare   a direct two-sided compare (`CompareHandlers.run`, the polluted lesson's configs);
  lesson    a lesson click's handler (`CompareHandlers.lesson`: configs, text and its one compare);
  replay    a ~3 MB trace file shown by `PlayHandlers.upload` (parse once, render every view);
  browser   (with --browser) in Debian's chromium, after clicking the balanced preset: slider
            release to the first step painted (a decode streams: the page reads each step as it is
            computed), the last step read (the served decode and its transport, before any drawing of
            the finished trace), the finished canvas, the heatmap, and every figure updated; a lesson click to
            both compare canvases updated, then their heatmaps (the lesson's figures), then every
            figure of the pair; a 3 MB trace uploaded to the canvas updated, then its figures; one
            played frame drawn in the page (no server).
            Each round starts once the page is idle (no long task for 0.5 s), so rounds never overlap; each
            click holds its press 100 ms, as a visitor's does, and is timed from its release (--hold).
Each line prints the median in ms and the ratio to `direct` (lesson rows also to `compare`); the
browser rows' ratios use a reference timed again between those browser rounds, once the page is idle, since
this VM's speed drifts between the phases of one run: for a release the same decode (`decode` of what the
release asked: the page's prompt, seed and gen_length, the balanced preset at the temperature released; the
page's one-token prompt decodes 3-5% faster than PROMPT's eight), for a lesson click the same lesson's
handler on what the click sends (the page's prompt, seed and gen_length, which are not `compare`'s: the
clicks alternate two lessons), for an upload `direct` (no decode to match: the yardstick).
With a 3 MB trace loaded the page's gen_length is the trace's (240), so those clicks decode more; the
last lines compare each click with its own handler, loaded over not loaded. Then issue 43's floors (`FLOORS`),
each with this run's figure, met or not.

    python bench/ui_bench.py                 # embedded model (falls back to the tiny test model)
    python bench/ui_bench.py --browser --rounds 9
    python bench/ui_bench.py --browser --only release   # one part of the page: release, lessons, replay
    python bench/ui_bench.py --browser --pin            # the browser on cores of its own (see below)
    python bench/ui_bench.py --browser --plotly         # every figure plotly's (as before plot2d.js, chart2d.js)

With --pin (a machine of two or more cores) this process, the app it serves and every in-process decode run on the
first core it may use, and chromium (with Playwright's driver) on the others, re-pinned as it starts processes:
the visitor's browser on a machine of its own, as a served page has it, instead of two cores shared with it.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from dllm_viz import DecodeConfig, decode  # noqa: E402

PROMPT = "It is a truth universally acknowledged, that"
PLAYED = """() => { const r = document.querySelector('#dv-canvas .dv-player');
  const s = r && r.querySelector('.dv-scrub'); return !!s && r.dataset.frame === s.max; }"""
BROWSER_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def load(kind: str) -> Any:
    if kind in ("auto", "embedded"):
        try:
            from dllm_viz.models import load_model

            return load_model(device="cpu")
        except Exception as err:  # noqa: BLE001 - "auto" falls back, "embedded" reports
            if kind == "embedded":
                raise
            print(f"[embedded model unavailable ({type(err).__name__}: {err}); using the tiny test model]")
    from tests.ui_model import make_text_model

    return make_text_model()


def encoded() -> None:
    """Wait for the chunks of an upload to be made: `replay` answers while a thread of the store makes them (the
    page reads them as they come), and that thread would otherwise run in the next case's time (`direct`'s)."""
    for thread in threading.enumerate():
        if thread.name == "dllm-viz-encode":
            thread.join()


def timed(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


# Armed in the page before an action; `page.evaluate(DONE)` then waits until every watched view has
# changed and returns, per view, the ms at which it did, counted from the user's action as the page
# saw it: the first pointerup (a click, a slider release), keyup or change (a file chosen) after
# arming, by its event timestamp; Playwright's own checks before a click are not the app's latency.
# Without such an event (a frame step run inside the page) the count starts at arming. A canvas is
# watched through its text (or the trace it carries), a figure through its data object (a new spec's
# on every draw, by plotly or ours). Polled every 5 ms with cheap reads (no layout), so the probe costs
# the page next to nothing. A view that is not on the page (a figure remounting; the finished
# canvas while a live one stands in its place) has not changed yet: it changes when it is back, new.
ARM = """(watched) => { let t0 = performance.now(), acted = false;
  window.__dvT0 = t0;
  const act = (e) => { if (!acted) { acted = true; t0 = window.__dvT0 = e.timeStamp; } };
  const kinds = ['pointerup', 'keyup', 'change'];
  kinds.forEach((k) => document.addEventListener(k, act, true));
  const sig = (sel) => { const e = document.querySelector(sel); if (!e) return null;
    if (e.classList.contains('dv-fig')) return e.data && e.data.length ? e.data[0] : null;
    // a live canvas, once painted
    if (e.classList.contains('dv-text') && e.closest('.dv-live')) return e.firstChild ? 'live' : null;
    const s = e.textContent; return s.length + ':' + s.slice(0, 4000); };
  const old = watched.map(sig), at = watched.map(() => null), start = t0;
  window.__dvWatch = new Promise((done) => { const tick = () => { const now = performance.now();
    watched.forEach((sel, i) => { if (at[i] !== null) return; const s = sig(sel);
      if (s !== null && s !== old[i]) at[i] = now; });
    const finish = (xs) => { kinds.forEach((k) => document.removeEventListener(k, act, true));
      done(xs.map((x) => x - t0)); };
    if (at.every((x) => x !== null)) finish(at);
    else if (now - start > 120000) finish(at.map((x) => (x === null ? NaN : x)));
    else setTimeout(tick, 5); }; tick(); }); }"""
DONE = "() => window.__dvWatch"
# When the page had read a decode's last step (its last read, page.js `dvRead`), counted as DONE counts: what the
# served decode and its transport take, before the page draws the finished trace.
LAST_READ = """() => { const t0 = window.__dvT0, reads = performance.getEntriesByType('mark')
  .filter((m) => m.name === 'dv-read-done' && m.startTime >= t0);
  return reads.length ? reads[reads.length - 1].startTime - t0 : NaN; }"""
# Resolves once the page's main thread has had no long task (> 50 ms) for `quiet` ms: plotly draws
# each figure twice per update (Gradio remounts it) and resizes it 100 ms later, so "the last view
# changed" is not "the page is done"; a round that starts earlier would wait behind the last one.
SETTLE = """(quiet) => new Promise((done) => {
  if (!window.__dvLong) { window.__dvLong = {end: performance.now()};
    new PerformanceObserver((list) => { for (const e of list.getEntries())
      window.__dvLong.end = Math.max(window.__dvLong.end, e.startTime + e.duration); }).observe({type: 'longtask'}); }
  const tick = () => (performance.now() - window.__dvLong.end > quiet ? done(true) : setTimeout(tick, 50));
  tick(); })"""


# The in-process references, timed again between browser rounds (named rows of the report).
BETWEEN = {"direct": "same decode, between releases", "compare": "same lesson, between clicks",
           "replay": "direct, between uploads"}
PARTS = ("release", "lessons", "replay")  # the browser's parts (--only)
PLOTLY_ONLY = False  # --plotly
# How long a click holds the button down, in ms (--hold): a visitor's click lasts about 100 ms, and the page handles
# its press (a slider's value moved, the button's pressed look) in that time, before the release it is timed from.
# Playwright's own click presses and releases at once: the release then waits in the browser's queue behind the
# press's handling (6-9 ms of Gradio's work on a slider), and a round counted from it charges the press to the
# release (--hold 0 measures that).
HOLD_MS = 100


def settle(page: Any, quiet_ms: int = 500) -> None:
    page.wait_for_timeout(150)  # plotly's deferred resize starts 100 ms after a draw
    page.evaluate(SETTLE, quiet_ms)
# The canvas's text changes at the first step painted (live) or, for a decode done before its first
# live canvas was sent, at the finished one; the finished player is the canvas without `dv-live`.
TEXT, DONE_CANVAS, HEAT = "#dv-canvas .dv-text", "#dv-canvas .dv-player:not(.dv-live)", "#dv-heatmap .dv-fig"
FIGURES = (HEAT, "#dv-order .dv-fig", "#dv-steps .dv-fig")


# Issue 43's floors: (label, row, "ms" | "x direct" | "x compare", at most); the last one is computed from the rows
# of both phases (printed above it).
FLOORS = [("slider release to the first step painted", "browser: first step painted", "ms", 150),
          ("... to the finished canvas and heatmap", "browser: canvas + heatmap", "x direct", 1.3),
          ("... to every figure drawn", "browser: all figures drawn", "x direct", 1.5),
          ("a lesson click's figures (x its handler)", "browser: lesson figures", "x compare", 1.3),
          ("a 3 MB trace's canvas", "browser: 3 MB replay", "x direct", 2.5),
          ("... its figures", "browser: 3 MB replay figures", "x direct", 4.0),
          ("lesson click, 3 MB trace loaded / not", "", "x compare", 1.1)]


def open_page(p: Any, url: str) -> Any:
    """Chromium on the app, the walkthrough dismissed, after the opening example has played."""
    browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=BROWSER_ARGS)
    page = browser.new_page(viewport={"width": 1500, "height": 1000})
    page.add_init_script("localStorage.setItem('dv-tour', 'done')")  # no walkthrough over the sliders
    if PLOTLY_ONLY:
        page.add_init_script("window.__dvFlatOff = true")  # --plotly: every figure plotly's (ours left out)
    page.goto(url)
    page.wait_for_selector("#dv-canvas .dv-player .dv-scrub", timeout=120_000)
    page.wait_for_function(PLAYED, timeout=120_000)  # the example plays by itself first
    page.wait_for_selector(HEAT, timeout=120_000)
    settle(page)
    return page


def browser_latency(url: str, rounds: int, same: Callable[..., Any]) -> dict[str, list[float]]:
    """Seconds from a temperature slider release (balanced preset, L=64) to the canvas text, the
    heatmap, and every figure of the page updated, per round; and `same(prompt=, seed=, gen_length=,
    temperature=)`, the in-process decode of what the release asked, timed between rounds once the page is
    idle, so the ratio compares like with like on a VM whose speed drifts."""
    from playwright.sync_api import sync_playwright

    out: dict[str, list[float]] = {"browser: first step painted": [], "browser: last step read": [],
                                   "browser: finished canvas": [],
                                   "browser: canvas + heatmap": [], "browser: all figures drawn": [],
                                   BETWEEN["direct"]: []}
    with sync_playwright() as p:
        page = open_page(p, url)
        # The page opens on the quality example; the target is stated for the balanced preset.
        page.evaluate(ARM, [DONE_CANVAS, *FIGURES])
        page.get_by_role("button", name="balanced", exact=True).click()
        page.evaluate(DONE)
        settle(page)
        slider = page.locator("#dv-temperature input[type=range]")
        for i in range(rounds + 1):
            slider.scroll_into_view_if_needed()
            box = slider.bounding_box()
            current = float(slider.input_value())  # move well away from it, so every release changes the decode
            frac = (0.2 if current > 1.25 else 0.75) + 0.01 * (i % 5)
            page.evaluate("() => performance.clearMarks()")
            page.evaluate(ARM, [TEXT, DONE_CANVAS, *FIGURES])
            page.mouse.click(box["x"] + frac * box["width"], box["y"] + box["height"] / 2, delay=HOLD_MS)
            text, done, heat, *rest = page.evaluate(DONE)  # waits for every figure: rounds never overlap
            if i:  # round 0 warms up
                out["browser: first step painted"].append(min(text, done) / 1000)
                out["browser: last step read"].append(page.evaluate(LAST_READ) / 1000)
                out["browser: finished canvas"].append(done / 1000)
                out["browser: canvas + heatmap"].append(max(done, heat) / 1000)
                out["browser: all figures drawn"].append(max(text, done, heat, *rest) / 1000)
            settle(page)  # the download file, plotly's deferred resize
            if i:
                sent = page_request(page) | {"temperature": float(page.locator(
                    "#dv-temperature input[type=number]").input_value())}
                out[BETWEEN["direct"]].append(timed(lambda: same(**sent)))
        page.context.browser.close()
    return out


def make_big_trace(model: Any, path: Path, seed: int = 1) -> Path:
    """A trace of about 3 MB (240 positions, one confirmed per step, top-5 candidates) for the replay case."""
    cfg = DecodeConfig(gen_length=240, schedule="fixed_steps", steps=240, seed=seed)
    path.write_text(decode(model, [PROMPT], cfg)[0].to_json(), encoding="utf-8")
    return path


def page_request(page: Any) -> dict[str, Any]:
    """The prompt, seed and gen_length a lesson click on `page` sends (what the page shows)."""
    return {"prompt": page.locator("#dv-prompt textarea").input_value(),
            "seed": int(float(page.get_by_label("seed", exact=True).input_value())),
            "gen_length": int(float(page.locator("#dv-gen-length input[type=number]").input_value()))}


def browser_more(url: str, rounds: int, bigs: tuple[Path, Path], lesson: Callable[..., Any], direct: Callable[[], Any],
                 parts: frozenset[str] = frozenset(("lessons", "replay"))) -> dict[str, list[float]]:
    """Seconds per round, in the page: lesson click -> both compare canvases (then their figures);
    upload -> canvas (then the figures); one frame step drawn by page.js (measured inside the page,
    so only the browser's work). Lessons are clicked before any 3 MB trace is on the page: with
    one loaded (measured again at the end), the page has more to do. Between clicks,
    `lesson(key, prompt=, seed=, gen_length=)` times the same lesson's handler in this process, on
    what the page sends (its prompt, seed and gen_length): the click's reference; between uploads, `direct`
    (the uploads' reference, timed in their own minutes of the run)."""
    from playwright.sync_api import sync_playwright

    out: dict[str, list[float]] = {name: [] for name in (
        "browser: lesson click", "browser: lesson figures", "browser: lesson, every figure", "browser: 3 MB replay",
        "browser: 3 MB replay figures", "browser: frame step")}
    with sync_playwright() as p:
        page = open_page(p, url)
        # one played frame: seek forward and back inside the page, timed there
        for i in range(rounds + 1 if "lessons" in parts else 0):
            ms = page.evaluate("""() => { const b = document.querySelector('#dv-canvas .dv-next'),
                a = document.querySelector('#dv-canvas .dv-first'); a.click(); const t0 = performance.now();
                b.click(); document.querySelector('#dv-canvas .dv-text').getBoundingClientRect();
                return performance.now() - t0; }""")
            if i:
                out["browser: frame step"].append(ms / 1000)
        keys = ("polluted", "staged")
        cmp_views = ["#dv-cmp-canvas-a .dv-canvas", "#dv-cmp-canvas-b .dv-canvas",
                     "#dv-cmp-heat-a .dv-fig", "#dv-cmp-heat-b .dv-fig",  # the lesson's figures
                     "#dv-cmp-orders .dv-fig", "#dv-cmp-steps-a .dv-fig",
                     "#dv-cmp-steps-b .dv-fig"]

        def lessons(suffix: str) -> None:
            page.get_by_role("tab", name="Compare").click()
            settle(page)
            sent = page_request(page)
            for i in range(rounds + 1):
                page.evaluate(ARM, cmp_views)
                page.locator(f"#dv-lesson-{keys[i % 2]}").click(delay=HOLD_MS)
                a, b, heat_a, heat_b, *rest = page.evaluate(DONE)
                if i:
                    out.setdefault(f"browser: lesson click{suffix}", []).append(max(a, b) / 1000)
                    out.setdefault(f"browser: lesson figures{suffix}", []).append(max(a, b, heat_a, heat_b) / 1000)
                    out.setdefault(f"browser: lesson, every figure{suffix}", []).append(
                        max(a, b, heat_a, heat_b, *rest) / 1000)
                settle(page)
                if i:
                    key = keys[i % 2]
                    out.setdefault(BETWEEN["compare"] + suffix, []).append(timed(lambda: lesson(key, **sent)))

        if "lessons" in parts:
            lessons("")
        page.get_by_role("tab", name="Playground").click()
        settle(page)
        for i in range(rounds + 1 if "replay" in parts else 0):
            page.evaluate(ARM, ["#dv-canvas .dv-player", *FIGURES])
            # alternate: each upload changes the page
            page.set_input_files("#dv-knobs input[type=file]", str(bigs[i % 2]))
            canvas, *figs = page.evaluate(DONE)
            if i:
                out["browser: 3 MB replay"].append(canvas / 1000)
                out["browser: 3 MB replay figures"].append(max(canvas, *figs) / 1000)
            settle(page)
            if i:
                out.setdefault(BETWEEN["replay"], []).append(timed(direct))
        if parts == {"lessons", "replay"}:
            lessons(", 3 MB trace loaded")  # the same clicks with the big trace in the Playground tab
        page.context.browser.close()
    return out


def serve_page(model: Any) -> tuple[Any, Any, Any, str]:
    """The playground served in this process as app.py serves it (the shared `Engine`, the heap frozen), on
    the examples of the model measured (app.py's first is the world model's, which the page opens on):
    (demo, engine, runner, url)."""
    from dllm_viz.app import serve as app
    from dllm_viz.app.ui import build_demo, launch_options
    from dllm_viz.core.budget import Budget
    from dllm_viz.serve.engine import Engine
    from tests.ui_model import free_port

    engine = Engine(model, max_batch=app.MAX_BATCH, max_queue=app.MAX_QUEUE, fairness=app.FAIRNESS,
                    budget=Budget(max_cells=app.REQUEST_CELLS))
    run = app.make_runner(model, engine)
    examples = [(name, tr) for name, tr in app.load_examples() if tr.model == getattr(model, "name", None)]
    # the model's token texts as app.py passes them: without them the page shows a decode's tokens as `<id>`
    demo = build_demo(run, examples=examples or app.load_examples(), model_name=getattr(model, "name", "model"),
                      max_length=getattr(model, "max_length", None), token_text=app.token_text(model),
                      max_cells=app.REQUEST_CELLS, concurrency_limit=2 * app.MAX_BATCH,
                      api_concurrency_limit=app.MAX_BATCH // 2)
    port = free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True, **launch_options())
    app.quiet_queue(demo)
    app.freeze_heap()
    return demo, engine, run, f"http://127.0.0.1:{port}/"


def _threads(pid: int) -> list[int]:
    try:
        return [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        return []


def _descendants(root: int) -> list[int]:
    """The processes started by process `root`, at any depth (Playwright's driver, chromium's processes)."""
    parent: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    parent[int(name)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    out, todo = [], [root]
    while todo:
        at = todo.pop()
        kids = [p for p, pp in parent.items() if pp == at]
        out += kids
        todo += kids
    return out


def pin_apart() -> tuple[set[int], set[int]] | None:
    """--pin: every thread of this process on its first allowed core (and so every thread it starts later), and a
    daemon thread that keeps every process it starts (the browser) on the other cores. None on a single core."""
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        return None
    mine, theirs = {cores[0]}, set(cores[1:])
    for tid in _threads(os.getpid()):
        os.sched_setaffinity(tid, mine)

    def keep() -> None:
        while True:
            for pid in _descendants(os.getpid()):
                for tid in _threads(pid):
                    try:
                        if os.sched_getaffinity(tid) != theirs:
                            os.sched_setaffinity(tid, theirs)
                    except OSError:  # gone meanwhile
                        pass
            time.sleep(0.2)

    threading.Thread(target=keep, name="pin-browser", daemon=True).start()
    return mine, theirs


def main(argv: list[str] | None = None) -> None:
    global PLOTLY_ONLY, HOLD_MS
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", choices=("auto", "embedded", "tiny"), default="auto")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--gen-length", type=int, default=64)
    parser.add_argument("--browser", action="store_true", help="also measure slider release in chromium")
    parser.add_argument("--threads", type=int, default=None, help="torch intra-op threads (default: app.THREADS)")
    parser.add_argument("--only", choices=PARTS, action="append", help="with --browser: only these parts (repeatable)")
    parser.add_argument("--pin", action="store_true", help="with --browser: chromium on cores apart from the app's")
    parser.add_argument("--hold", type=int, default=HOLD_MS, metavar="MS",
                        help="with --browser: ms each click holds the button down (0: pressed and released at once)")
    parser.add_argument("--plotly", action="store_true",
                        help="with --browser: every figure drawn by plotly (as before plot2d.js and chart2d.js)")
    args = parser.parse_args(argv)
    PLOTLY_ONLY, HOLD_MS = args.plotly, args.hold
    pinned = pin_apart() if args.pin else None
    if pinned:
        print(f"pinned: this process (the app, every in-process decode) on CPU {sorted(pinned[0])}, "
              f"chromium on CPU {sorted(pinned[1])}")

    import torch
    from gradio_client import Client

    from dllm_viz.app import serve as app
    from dllm_viz.app.handlers.adapters import config_to_settings
    from dllm_viz.app.handlers.playground import Playground

    torch.set_num_threads(args.threads or app.THREADS)
    model = load(args.model)
    cfg = DecodeConfig.preset("balanced", args.gen_length)
    print(f"model: {getattr(model, 'name', type(model).__name__)}; torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads; gen_length {args.gen_length}, balanced preset, "
          f"median of {args.rounds} interleaved rounds")

    demo, engine, run, url = serve_page(model)
    pg = Playground(run)
    settings = config_to_settings(cfg)
    client = Client(url, verbose=False)
    config_json = json.dumps({"gen_length": args.gen_length})

    def handlers() -> None:
        pg.play.decode(prompt=PROMPT, lang="en", session="bench", **settings)  # streamed, as the page runs it

    import tempfile

    tmp = Path(tempfile.mkdtemp(prefix="dllm-viz-bench-"))
    bigs = (make_big_trace(model, tmp / "big-1.json", 1), make_big_trace(model, tmp / "big-2.json", 2))
    big = bigs[0]
    print(f"replay trace: {big.stat().st_size / 1e6:.2f} MB")
    lesson_a, lesson_b = '{"temperature": 1.5}', '{"temperature": 1.5, "confidence_from": "tempered"}'
    cases: dict[str, Callable[[], Any]] = {
        "direct": lambda: decode(model, [PROMPT], cfg),
        "engine": lambda: engine.submit(PROMPT, cfg).result(),
        "handlers": handlers,
        "api": lambda: client.predict(PROMPT, config_json, api_name="/generate"),
        "compare": lambda: pg.compare.run(prompt=PROMPT, seed=0, gen_length=args.gen_length, cmp_a=lesson_a,
                                          cmp_b=lesson_b, neighbours=0, lang="en"),
        "lesson": lambda: pg.compare.lesson("polluted", prompt=PROMPT, seed=0, gen_length=args.gen_length, lang="en"),
        "replay": lambda: pg.play.upload(upload=str(big), lang="en"),
    }
    times: dict[str, list[float]] = {name: [] for name in cases}
    for name, fn in cases.items():  # warm-up
        fn()
        encoded()
    for _ in range(args.rounds):
        for name, fn in cases.items():
            times[name].append(timed(fn))
            encoded()
    parts = frozenset(args.only or PARTS)
    if args.browser and "release" in parts:
        def same(*, prompt: str, seed: int, gen_length: int, temperature: float) -> Any:  # what a release asks
            asked = DecodeConfig.preset("balanced", gen_length, seed=seed, temperature=temperature)
            return decode(model, [prompt], asked)

        times |= browser_latency(url, args.rounds, same)
    if args.browser and parts & {"lessons", "replay"}:
        times |= browser_more(url, args.rounds, bigs, lambda key, **sent: pg.compare.lesson(key, lang="en", **sent),
                              cases["direct"], parts & {"lessons", "replay"})
    demo.close()
    engine.close()

    def median_of(name: str, fallback: str) -> float:
        return statistics.median(times.get(name) or times[fallback])

    print(f"{'path':28s} {'median ms':>10s} {'p90 ms':>8s} {'x direct':>9s} {'x compare':>10s}")
    print("(browser rows: ratios to the same decode, `direct` for uploads / the same lessons' handler, timed between "
          "those browser rounds)")

    def ratios(name: str) -> tuple[float, float]:
        """`name`'s median over its base (browser rows: the same decode timed between their rounds, an upload's the
        direct decode timed between uploads) and over the lessons' handler."""
        browser = name.startswith("browser")
        replayed = name.startswith("browser: 3 MB replay")  # its own minutes' direct decode
        base = median_of(BETWEEN["replay"] if replayed else BETWEEN["direct"] if browser else "direct", "direct")
        suffix = name[name.index(","):] if browser and "," in name else ""  # ", 3 MB trace loaded"
        cmp_base = median_of(BETWEEN["compare"] + suffix if browser else "compare", "compare")
        med = statistics.median(times[name])
        return med / base, med / cmp_base

    for name, values in times.items():
        if not values:  # a part not measured (--only)
            continue
        med = statistics.median(values)
        p90 = sorted(values)[max(0, int(round(0.9 * len(values))) - 1)]
        x_base, x_cmp = ratios(name)
        vs_cmp = f"{x_cmp:10.2f}" if "lesson" in name else ""
        print(f"{name:28s} {1000 * med:10.1f} {1000 * p90:8.1f} {x_base:9.2f} {vs_cmp}")
    loaded = ", 3 MB trace loaded"
    found: dict[str, float] = {}  # floor's row -> its figure in this run
    if times.get("browser: lesson figures" + loaded):
        # A loaded trace sets the page's gen_length to its own (240), so the clicks after it decode 240 positions,
        # not 64: the like-for-like figure is each click's time over its own handler's (the same lesson, on what
        # that click sent), loaded over not loaded.
        for row in ("browser: lesson figures", "browser: lesson, every figure"):
            with_trace = median_of(row + loaded, row) / median_of(BETWEEN["compare"] + loaded, "compare")
            without = median_of(row, row) / median_of(BETWEEN["compare"], "compare")
            print(f"{row[9:]}, 3 MB trace loaded / not, each x its handler: {with_trace / without:.2f}")
            found.setdefault("lesson click, 3 MB trace loaded / not", with_trace / without)
    for label, row, column, at_most in FLOORS:
        if times.get(row):
            ms = 1000 * statistics.median(times[row])
            found[label] = ms if column == "ms" else ratios(row)[column == "x compare"]
    if found:
        print("floors (issue 43):")
        for label, _, column, at_most in FLOORS:
            if label in found:
                unit = " ms" if column == "ms" else "x"
                verdict = "met" if found[label] <= at_most else "NOT met"
                print(f"  {label:42s} {found[label]:8.2f}{unit} <= {at_most}{unit}: {verdict}")


if __name__ == "__main__":
    main()
