"""Reliability under attack and under load (issues 13, 30, 33 and 42), loopback only, printed as one report.

  1. exact under load: N random valid requests (default 200; every schedule, measure, filter,
     block, teaching switch but rng="shared", revision rule a model that cannot edit runs, and
     cache) from 16 client threads through one Engine set up as app.py sets it (each thread a
     client, the forwards shared in turns: `serve.fair`), each compared bit for bit (ids, order,
     every record but a cached forward's wall time) with the same request decoded alone; the
     cross-talk is the count that differ;
  2. `python app.py` served as deployed (its own process, its bounds from app/guards.py), then the
     attacks, each followed by a normal request: an over-size upload; oversized and malformed
     traces through the parser; a ~8 MB trace uploaded in many raw-HTTP sessions that never close,
     and eight at once beside a timed /generate; 1 MB prompts; a deeply nested config; a Sweep grid
     over the cap and the widgets' largest grid; a crowd of silent sockets (default 5,000) held
     open while the page and /generate are asked for; then M random requests from 16
     gradio_client threads to /generate, each compared with the same request decoded alone;
  3. the server's resident memory after its first decode (the start), after each attack, and at
     the end, once idle sessions have expired (DLLM_VIZ_SESSION_IDLE, 20 s for this run; 900 s by
     default); the end must be within 200 MB of the start, and the next request must answer in
     under 1 s; and the server's log: lines in all, lines about failed connections, their most in
     one second;
  4. (issue 42, before the idle wait of 3.; Debian's chromium through Playwright plays the page's visitors)
     the budget attack: one client sends 16 maximal /generate requests (the most work the server
     runs per request); a page visitor's decode beside them must finish within 5x its time alone,
     medians of --rounds each; the client then leaves (its process killed) and the visitor's decode
     is timed again; and --users (40) streaming users (raw-HTTP sessions, each a streamed Austen decode of 64
     steps): a new visitor's first painted step must come within 10 s, and the page shows where its
     request waits whenever it waits for a slot.

    OMP_NUM_THREADS=1 python bench/reliability_bench.py                # 200 engine, 48 HTTP requests
    OMP_NUM_THREADS=1 python bench/reliability_bench.py --quick        # 40 engine, 16 HTTP, 1,000 sockets
    OMP_NUM_THREADS=1 python bench/reliability_bench.py --only crowds  # 4. alone
    OMP_NUM_THREADS=1 python bench/reliability_bench.py --only engine  # 1. alone
    python bench/reliability_bench.py --torch-threads 2 --requests 60  # with 2 intra-op threads

Timings are wall-clock on a shared machine: read them as rough.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # app.py and tests/ from a checkout

from dllm_viz.app import serve as app  # noqa: E402 - sets the offline environment before gradio is imported
from dllm_viz import DecodeConfig, decode, load_model  # noqa: E402
from dllm_viz.app.views import wire  # noqa: E402
from dllm_viz.app.strings import t  # noqa: E402
from dllm_viz.app.layout.sweep import SWEEP_DECAYS, SWEEP_DIVISORS, SWEEP_TEMPERATURES  # noqa: E402
from dllm_viz.core.trace import Trace  # noqa: E402
from dllm_viz.core.trace_schema import MAX_TRACE_BYTES  # noqa: E402
from tests import crowd, stress  # noqa: E402
from tests.raw_http import RawSession, event_index  # noqa: E402
from tests.ui_model import free_port, wait_for_client  # noqa: E402

RSS_BUDGET_MB = 200
NEXT_REQUEST_S = 1.0  # the request after the whole run answers within this
SESSION_IDLE_S, RELEASE_EVERY_S = 20, 2  # the server's session bound and memory release for this run (900 s, 5 s)
CONNECTION_LINE = re.compile(r"accept|Too many open files|Invalid HTTP request|out of system resource")


def rss_mb(pid: int | str = "self") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def compare(requests: list[stress.Request], got: list, want: list[Trace]) -> dict[str, int]:
    errors = sum(isinstance(g, BaseException) for g in got)
    for i, g in enumerate(got):
        if isinstance(g, BaseException):
            print(f"  request {i} {requests[i].config.to_dict()} failed: {g!r}"[:600], flush=True)
    ok = [(g, w) for g, w in zip(got, want) if not isinstance(g, BaseException)]
    return {"requests": len(requests), "errors": errors,
            "records_differ": sum(not stress.same(g, w) for g, w in ok),
            "tokens_differ": sum(g.token_ids != w.token_ids for g, w in ok)}


def engine_load(model, requests, want, clients: int) -> None:
    t0 = time.perf_counter()
    got = stress.through_engine(model, requests, clients=clients, max_batch=app.MAX_BATCH, fairness=app.FAIRNESS)
    s = time.perf_counter() - t0
    result = compare(requests, got, want)
    print(f"engine (as app.py serves: fairness {app.FAIRNESS}) {result}  {s:.1f} s; cross-talk "
          f"{result['records_differ']}/{result['requests']}", flush=True)


def upload_attacks(url: str, good: str, big: str) -> None:
    """What an attacker sends as a trace; each must be refused fast, naming the field or the limit."""
    import httpx

    junk = b"{" + b" " * (MAX_TRACE_BYTES + 1024) + b"}"
    r = httpx.post(url + "gradio_api/upload", files={"files": ("t.json", junk, "application/json")}, timeout=120)
    print(f"  HTTP upload of {len(junk) / 2**20:.1f} MB: status {r.status_code} {r.text[:100]!r}")
    d = json.loads(good)
    huge_piece = dict(d, vocab={k: "x" * 50_000_000 if i == 0 else v for i, (k, v) in enumerate(d["vocab"].items())})
    steps = dict(d, steps=d["steps"][:1] * 8333)
    long_gen = dict(d, config={**d["config"], "gen_length": 200_000})
    nested = "[" * 200_000 + "]" * 200_000
    attacks = {"50 MB token text": json.dumps(huge_piece), "8,333 steps": json.dumps(steps),
               "gen_length 200k": json.dumps(long_gen), "200k-deep nesting": nested,
               "selected 1e9": good.replace('"selected": [', '"selected": [1000000000, ', 1)}
    for name, text in attacks.items():
        t0 = time.perf_counter()
        try:
            Trace.from_json(text)
            outcome = "ACCEPTED"
        except ValueError as err:
            outcome = f"ValueError: {str(err)[:90]}"
        print(f"  {name:18} {len(text) / 2**20:6.1f} MB  {time.perf_counter() - t0:5.2f} s  {outcome}")
    t0 = time.perf_counter()
    trace = Trace.from_json(big)
    parse = time.perf_counter() - t0
    shipped = len(wire.dumps(wire.chunks(trace)))  # what the page reads of it, once (it draws the figures itself)
    print(f"  largest real trace: {len(big) / 2**20:.1f} MB ({len(trace.steps)} steps x {trace.config.gen_length}) "
          f"parsed+checked in {parse:.2f} s, its chunks {time.perf_counter() - t0 - parse:.2f} s, "
          f"{shipped / 2**20:.1f} MB for the page")


class Server:
    """`python app.py` in its own process (as deployed: system allocator, connection and session
    bounds), its log in a file; `rss` is its resident memory."""

    def __init__(self, log: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        env = {**os.environ, "GRADIO_SERVER_PORT": str(self.port), "DLLM_VIZ_SESSION_IDLE": str(SESSION_IDLE_S),
               "DLLM_VIZ_RELEASE_EVERY": str(RELEASE_EVERY_S), "OMP_NUM_THREADS": "1"}
        env.pop("PYTHONMALLOC", None)  # app.py chooses its allocator itself
        self.log = log
        with open(log, "w") as out:
            self.proc = subprocess.Popen([sys.executable, "app.py"], cwd=ROOT, env=env, stdout=out,
                                         stderr=subprocess.STDOUT, text=True)
        self.client = wait_for_client(self.proc, self.url, timeout=600)

    def rss(self) -> float:
        return rss_mb(self.proc.pid)

    def generate(self, prompt: str = "It is a truth ", **config) -> tuple[float, str]:
        """Seconds for one /generate (gen_length 16), from a new client (made before the clock starts)."""
        from gradio_client import Client

        client = Client(self.url, verbose=False, httpx_kwargs={"timeout": 600})
        t0 = time.perf_counter()
        text, _ = client.predict(prompt, json.dumps({"gen_length": 16, "seed": 1, **config}), api_name="/generate")
        return time.perf_counter() - t0, text

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=60)


def attempt(fn) -> str:
    """What a call answered: "ok", or the start of its error message."""
    try:
        fn()
        return "ok"
    except Exception as err:  # noqa: BLE001 - the report prints whatever came back
        return f"{type(err).__name__}: {str(err)[:110]}"


def session_uploads(server: Server, path: Path, sessions: int, at_once: int) -> None:
    """Upload `path` in `sessions` raw-HTTP sessions that never close (no heartbeat), then `at_once`
    more in parallel beside a timed /generate."""
    import httpx

    with httpx.Client(timeout=600) as client:
        upload = event_index(server.url, client, "uploadbutton", "upload")
        t0, ok = time.perf_counter(), 0
        for _ in range(sessions):
            s = RawSession(server.url, client)
            ok += bool(s.call(upload, [s.upload(path), "en"]).get("success"))
        print(f"  {sessions} sessions uploading a {path.stat().st_size / 2**20:.1f} MB trace: {ok} loaded, "
              f"{time.perf_counter() - t0:.1f} s, server RSS {server.rss():.0f} MB", flush=True)

    def one() -> None:
        with httpx.Client(timeout=600) as c:
            s = RawSession(server.url, c)
            s.call(upload, [s.upload(path), "en"])

    threads = [threading.Thread(target=one) for _ in range(at_once)]
    for th in threads:
        th.start()
    took, _ = server.generate()
    for th in threads:
        th.join()
    print(f"  {at_once} uploads at once: a /generate meanwhile took {took:.2f} s; server RSS {server.rss():.0f} MB",
          flush=True)


def request_attacks(server: Server) -> None:
    """Huge prompts, a deep config, a Sweep over the cap and the widgets' largest one."""
    from gradio_client import Client

    client = Client(server.url, verbose=False, httpx_kwargs={"timeout": 600})
    t0 = time.perf_counter()
    outcome = attempt(lambda: client.predict("x " * 500_000, "{}", api_name="/generate"))
    print(f"  1 MB prompt to /generate: {outcome} ({time.perf_counter() - t0:.1f} s)", flush=True)
    outcome = attempt(lambda: client.predict("Emma ", "[" * 5000 + "]" * 5000, api_name="/generate"))
    print(f"  5000-deep config_json: {outcome}", flush=True)
    import httpx

    with httpx.Client(timeout=1200) as raw:
        sweep = event_index(server.url, raw, "button", "click", value=t("sweep_run", "en"))
        s = RawSession(server.url, raw)
        every = dict(temps=list(SWEEP_TEMPERATURES), divisors=[f"L/{d}" for d in SWEEP_DIVISORS],
                     decays=list(SWEEP_DECAYS))
        t0 = time.perf_counter()
        lines = "\n".join(f"prompt {i}" for i in range(20_000))
        m = s.call(sweep, [every["temps"], every["divisors"], every["decays"], 8, lines, 8, "en"])
        said = (m.get("output") or {}).get("error") or m.get("title") or str(m)[:120]
        print(f"  Sweep of 20,000 prompt lines: {str(said)[:120]!r} ({time.perf_counter() - t0:.2f} s, "
              f"server RSS {server.rss():.0f} MB)", flush=True)
        t0 = time.perf_counter()
        m = s.call(sweep, [every["temps"], every["divisors"], every["decays"], 8, "It is a truth\nEmma said", 8, "en"])
        print(f"  the widgets' largest Sweep (1,920 requests, gen_length 8): success={m.get('success')} "
              f"({time.perf_counter() - t0:.0f} s, server RSS {server.rss():.0f} MB)", flush=True)


def silent_crowd(server: Server, n: int) -> None:
    """`n` connections that send nothing, held open while the page and /generate are asked for."""
    import httpx

    crowd, refused = [], 0
    t0 = time.perf_counter()
    for _ in range(n):
        try:
            crowd.append(socket.create_connection(("127.0.0.1", server.port), timeout=30))
        except OSError:
            refused += 1
    opened = time.perf_counter() - t0
    try:
        t1 = time.perf_counter()
        page = attempt(lambda: httpx.get(server.url, timeout=60).raise_for_status())
        page_s = time.perf_counter() - t1
        gen_s, _ = server.generate()
        closed = 0
        for sock in crowd[:200]:
            sock.settimeout(60)
            try:
                closed += sock.recv(1) == b""
            except OSError:
                closed += 1
        print(f"  {n} silent sockets ({refused} refused at connect, {opened:.1f} s to open): GET / {page} in "
              f"{page_s:.2f} s, /generate {gen_s:.2f} s, {closed} of the oldest 200 closed by the server; "
              f"server RSS {server.rss():.0f} MB", flush=True)
    finally:
        for sock in crowd:
            sock.close()


BESIDE_FLOOR, FIRST_STEP_FLOOR = 5.0, 10.0  # issue 42: the page beside an attack; a newcomer beside a crowd
PAGE_PROMPT = "It is a truth universally acknowledged"
PAGE_CONFIG = DecodeConfig.preset("balanced", 64, seed=1)  # the page's default decode, on the Austen model


def maximal_attack(model) -> dict:
    """The issue's loop attack (remdm loop in blocks of 2 at 240 positions) cut to the most work the
    server runs per request (app.REQUEST_CELLS): its loop steps as many as fit."""
    from dllm_viz.core.budget import bound_work
    from dllm_viz.core.decoder import encode_prompt

    base = {"gen_length": 240, "block_length": 2, "revise": "remdm", "remask_sigma": "loop", "remask_alpha_on": 0.4}
    prompt = len(encode_prompt(model, "It is a truth "))
    loops = max(n for n in range(0, 4097) if bound_work(DecodeConfig.preset("balanced", 240, **{
        **{k: v for k, v in base.items() if k != "gen_length"}, "remask_loop_steps": n}), prompt_length=prompt).cells
        <= app.REQUEST_CELLS)
    return {**base, "remask_loop_steps": loops}


def median(xs: list[float]) -> float:
    return sorted(xs)[len(xs) // 2]


def budget_attack(server: Server, visitor: crowd.Visitor, model, rounds: int) -> None:
    """16 maximal /generate requests from one client beside a page visitor's decodes; then it leaves."""
    visitor.decode()  # warm-up
    alone = [visitor.decode()[1] for _ in range(rounds)]
    config = maximal_attack(model)
    attacker = crowd.api_attacker(server.url, config, 16)
    said = json.loads(attacker.stdout.readline() or "{}")  # after 10 s: the accepted ones are decoding
    beside = [visitor.decode()[1] for _ in range(rounds)]
    attacker.kill()  # the client leaves: the server cancels what it asked for
    attacker.wait()
    time.sleep(3)
    after = [visitor.decode()[1] for _ in range(rounds)]
    ratio = median(beside) / median(alone)
    print(f"  16 maximal /generate requests from one client ({config}; {said.get('refused')} refused at once: "
          f"{said.get('said')!r}): the page's decode took {median(alone):.2f} s alone, {median(beside):.2f} s beside "
          f"them: {ratio:.2f}x ({'within' if ratio <= BESIDE_FLOOR else 'OVER'} {BESIDE_FLOOR:g}x); once the client "
          f"left, {median(after):.2f} s ({median(after) / median(alone):.2f}x); medians of {rounds}", flush=True)


def streaming_crowd(server: Server, visitor: crowd.Visitor, playwright, users: int) -> None:
    """`users` raw-HTTP sessions streaming Austen decodes of 64 steps; a new visitor arrives by link,
    and the visitor already on the page clicks Run."""
    threads, took = crowd.stream_decodes(server.url, users, prompt=PAGE_PROMPT, model="austen-mdlm", gen_length=64,
                                         schedule="fixed_steps", steps=64)
    time.sleep(3)  # every session's decode under way
    t0 = time.perf_counter()
    newcomer = crowd.Visitor(playwright, crowd.link(server.url, "austen-mdlm", PAGE_PROMPT, PAGE_CONFIG.to_dict()),
                             PAGE_PROMPT)
    first, done, queued = visitor.decode()
    print(f"  {users} streaming users (Austen, 64 steps): a new visitor's first painted step "
          f"{newcomer.first_step:.1f} s after it opened a link "
          f"({'within' if newcomer.first_step <= FIRST_STEP_FLOOR else 'OVER'} "
          f"{FIRST_STEP_FLOOR:g} s; the page itself loaded meanwhile); a visitor's Run: first step {first:.1f} s, "
          f"finished {done:.1f} s, the queue status it showed: {queued!r}", flush=True)
    newcomer.close()
    for th in threads:
        th.join()
    print(f"  the {users} users' decodes: {len(took)} finished, median {median(took):.0f} s, last "
          f"{max(took):.0f} s ({time.perf_counter() - t0:.0f} s since the newcomer came)", flush=True)


def crowds(server: Server, model, rounds: int, users: int) -> None:
    """Issue 42's attacks, with chromium as the page's visitors."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        visitor = crowd.Visitor(p, crowd.link(server.url, "austen-mdlm", PAGE_PROMPT, PAGE_CONFIG.to_dict()),
                                PAGE_PROMPT)
        try:
            budget_attack(server, visitor, model, rounds)
            streaming_crowd(server, visitor, p, users)
        finally:
            visitor.close()


def log_lines(log: Path) -> list[str]:
    return log.read_text(errors="replace").splitlines()


def log_report(log: Path, crowd: tuple[int, int, float]) -> None:
    """The server's log: its size, the lines about failed connections, and what it wrote while the
    silent sockets were held (`crowd`: lines before, lines after, seconds)."""
    lines = log_lines(log)
    failed = [line for line in lines if CONNECTION_LINE.search(line)]
    before, after, seconds = crowd
    print(f"server log: {len(lines)} lines, {sum(len(x) for x in lines) / 1024:.0f} KB; {len(failed)} about failed "
          f"connections; during the silent sockets {after - before} lines in {seconds:.0f} s "
          f"(at most one a second may be about failed connections: app/guards.py)")
    errors = collections.Counter(line.strip()[:80] for line in lines if "rror" in line)
    for what, n in errors.most_common(5):
        print(f"  {n:5} x {what}")


def http_load(server: Server, model, args: argparse.Namespace) -> None:
    """Random requests to /generate from `args.clients` gradio_client threads, each compared with the
    same request decoded alone."""
    from gradio_client import Client

    http = stress.random_requests(args.http_requests, seed=args.seed + 1, rules=True)
    # One gradio_client per client thread, made before the load; its 20 s default read timeout is
    # lifted, since 16 concurrent decodes on a shared 2-core machine can take longer than that.
    pool = [Client(server.url, verbose=False, httpx_kwargs={"timeout": 600}) for _ in range(args.clients)]
    local = threading.local()

    def call(r: stress.Request) -> Trace:
        if not hasattr(local, "client"):
            local.client = pool.pop()
        _, trace_json = local.client.predict(r.prompt, json.dumps(r.config.to_dict()), api_name="/generate")
        return Trace.from_json(trace_json)

    t0 = time.perf_counter()
    got = stress.from_clients(http, args.clients, call)
    s = time.perf_counter() - t0
    print(f"HTTP /generate: {compare(http, got, stress.alone(model, http))}  {s:.1f} s", flush=True)


def only_crowds(model, args: argparse.Namespace) -> None:
    server = Server(Path(tempfile.mkdtemp(prefix="reliability-")) / "app.log")
    try:
        print("crowds (issue 42):", flush=True)
        crowds(server, model, args.rounds, args.users)
    finally:
        server.close()
    print(f"load average (1, 5, 15 min) at the end {os.getloadavg()}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--requests", type=int, default=200, help="random requests through the engine")
    ap.add_argument("--http-requests", type=int, default=48, help="random requests through the HTTP server")
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--torch-threads", type=int, default=1)
    ap.add_argument("--sessions", type=int, default=16, help="raw-HTTP sessions uploading a large trace")
    ap.add_argument("--idle", type=int, default=5000, help="silent sockets held open at once")
    ap.add_argument("--quick", action="store_true", help="40 engine and 16 HTTP requests, 8 sessions, 1,000 sockets")
    ap.add_argument("--only", choices=("engine", "crowds"), default=None,
                    help="only the random requests through the engine (1.), or only the issue-42 crowds (4.)")
    ap.add_argument("--users", type=int, default=40, help="streaming users beside the newcomer (4.)")
    ap.add_argument("--rounds", type=int, default=3, help="page decodes per measurement (4.)")
    ap.add_argument("--seed", type=int, default=2026)
    args = ap.parse_args()
    if args.quick:
        args.requests, args.http_requests, args.sessions, args.idle = 40, 16, 8, 1000
    torch.set_num_threads(args.torch_threads)
    model = load_model(device="cpu")
    print(f"model {model.name}, torch {torch.__version__}, {args.torch_threads} intra-op thread(s), "
          f"{args.clients} clients; load average (1, 5, 15 min) {os.getloadavg()}", flush=True)
    if args.only == "crowds":
        return only_crowds(model, args)

    # 1. exact under load, through the engine
    requests = stress.random_requests(args.requests, seed=args.seed, rules=True)
    t0 = time.perf_counter()
    want = stress.alone(model, requests)
    print(f"alone: {len(requests)} requests one after another in {time.perf_counter() - t0:.1f} s", flush=True)
    engine_load(model, requests, want, args.clients)
    if args.only == "engine":
        print(f"load average (1, 5, 15 min) at the end {os.getloadavg()}", flush=True)
        return

    # 2. the app, served as deployed
    work = Path(tempfile.mkdtemp(prefix="reliability-"))
    big = decode(model, ["It is a truth "], DecodeConfig(gen_length=240, top_k=1, decay=1.0, seed=2),
                 record_candidates=16)[0].to_json()
    big_path = work / "big.json"
    big_path.write_text(big, encoding="utf-8")
    server = Server(work / "app.log")
    try:
        _, good = server.client.predict("It is a truth ",
                                        json.dumps(DecodeConfig.preset("balanced", 64, seed=1).to_dict()),
                                        api_name="/generate")
        rss = {"after the first decode": server.rss()}
        print(f"server pid {server.proc.pid}, RSS {rss['after the first decode']:.0f} MB after its first decode",
              flush=True)
        print("upload attacks:", flush=True)
        upload_attacks(server.url, good, big)
        session_uploads(server, big_path, args.sessions, at_once=8)
        rss["after the uploads"] = server.rss()
        print("request attacks:", flush=True)
        request_attacks(server)
        rss["after the request attacks"] = server.rss()
        print("connection attacks:", flush=True)
        before, t0 = len(log_lines(server.log)), time.perf_counter()
        silent_crowd(server, args.idle)
        socket_log = (before, len(log_lines(server.log)), time.perf_counter() - t0)
        rss["after the silent sockets"] = server.rss()

        http_load(server, model, args)
        rss["after the load"] = server.rss()
        print("crowds (issue 42):", flush=True)
        crowds(server, model, args.rounds, args.users)
        rss["after the crowds"] = server.rss()
        wait = SESSION_IDLE_S + 3 * RELEASE_EVERY_S
        print(f"waiting {wait} s: the sessions above expire after {SESSION_IDLE_S} s idle (DLLM_VIZ_SESSION_IDLE; "
              "900 s by default)", flush=True)
        time.sleep(wait)
        rss["at the end"] = server.rss()
        took, _ = server.generate("Emma said ")
    finally:
        server.close()
    base = rss["after the first decode"]
    for name, mb in rss.items():
        print(f"RSS {name:26} {mb:7.1f} MB  ({mb - base:+.1f})")
    end = rss["at the end"] - base
    print(f"RSS at the end {end:+.1f} MB: {'within' if end <= RSS_BUDGET_MB else 'OVER'} the {RSS_BUDGET_MB} MB "
          f"budget; the next request answered in {took:.2f} s "
          f"({'under' if took < NEXT_REQUEST_S else 'OVER'} {NEXT_REQUEST_S:g} s)")
    log_report(work / "app.log", socket_log)
    print(f"load average (1, 5, 15 min) at the end {os.getloadavg()}", flush=True)


if __name__ == "__main__":
    main()
