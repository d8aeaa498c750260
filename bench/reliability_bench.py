"""Reliability under attack and under load (issue 13), loopback only, printed as one report.

  1. exact under load: N random valid requests (default 200; every schedule, measure, filter,
     block and teaching switch but rng="shared") from 16 client threads through one Engine, each
     compared bit for bit (ids, order, every record) with the same request decoded alone (one
     forward over every active request; the model keeps a row independent of the batch);
  2. the app served in this process (app.create_demo, launched as app.main launches it, on
     127.0.0.1): first decode, then the upload attacks (an over-size file POSTed to Gradio's upload
     route; oversized and malformed traces through the upload handler's parser and the figures),
     then M random requests from 16 gradio_client threads to /generate, each compared with the
     same request decoded alone;
  3. resident memory (this process: server, engine and clients) after the first decode, after the
     attacks and after the load; the floor is within 200 MB of the first.

    OMP_NUM_THREADS=1 python bench/reliability_bench.py                # 200 engine, 48 HTTP requests
    OMP_NUM_THREADS=1 python bench/reliability_bench.py --quick        # 40 engine, 16 HTTP
    python bench/reliability_bench.py --torch-threads 2 --requests 60  # with 2 intra-op threads

Timings are wall-clock on a shared machine: read them as rough.
"""
from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # app.py and tests/ from a checkout

import app  # noqa: E402 - sets the offline environment before gradio is imported
from dllm_viz import DecodeConfig, decode, load_model  # noqa: E402
from dllm_viz.app import figures  # noqa: E402
from dllm_viz.core.trace import Trace  # noqa: E402
from dllm_viz.core.trace_schema import MAX_TRACE_BYTES  # noqa: E402
from tests import stress  # noqa: E402
from tests.ui_model import free_port  # noqa: E402

RSS_BUDGET_MB = 200


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
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
    got = stress.through_engine(model, requests, clients=clients, max_batch=app.MAX_BATCH)
    s = time.perf_counter() - t0
    print(f"engine  {compare(requests, got, want)}  {s:.1f} s", flush=True)


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
    figs = [figures.confidence_heatmap(trace), figures.order_map(trace), figures.steps_plot(trace)]
    shipped = sum(len(f.to_json()) for f in figs)
    print(f"  largest real trace: {len(big) / 2**20:.1f} MB ({len(trace.steps)} steps x {trace.config.gen_length}) "
          f"parsed+checked in {parse:.2f} s, figures {time.perf_counter() - t0 - parse:.2f} s, {shipped / 2**20:.1f} MB of figure JSON")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--requests", type=int, default=200, help="random requests through the engine")
    ap.add_argument("--http-requests", type=int, default=48, help="random requests through the HTTP server")
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--torch-threads", type=int, default=1)
    ap.add_argument("--quick", action="store_true", help="40 engine and 16 HTTP requests")
    ap.add_argument("--seed", type=int, default=2026)
    args = ap.parse_args()
    if args.quick:
        args.requests, args.http_requests = 40, 16
    torch.set_num_threads(args.torch_threads)
    model = load_model(device="cpu")
    print(f"model {model.name}, torch {torch.__version__}, {args.torch_threads} intra-op thread(s), "
          f"{args.clients} clients", flush=True)

    # 1. exact under load, through the engine
    requests = stress.random_requests(args.requests, seed=args.seed)
    t0 = time.perf_counter()
    want = stress.alone(model, requests)
    print(f"alone: {len(requests)} requests one after another in {time.perf_counter() - t0:.1f} s", flush=True)
    engine_load(model, requests, want, args.clients)

    # 2. the app, served here as app.main serves it
    from gradio_client import Client

    from dllm_viz.app.ui import launch_options

    demo = app.create_demo(model)
    port = free_port()
    demo.queue(default_concurrency_limit=app.MAX_BATCH).launch(
        server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True,
        max_file_size=MAX_TRACE_BYTES, **launch_options())
    url = f"http://127.0.0.1:{port}/"
    try:
        client = Client(url, verbose=False)
        first = DecodeConfig.preset("balanced", 64, seed=1)
        _, good = client.predict("It is a truth ", json.dumps(first.to_dict()), api_name="/generate")
        rss = {"after first decode": rss_mb()}
        big = decode(model, ["It is a truth "], DecodeConfig(gen_length=240, top_k=1, decay=1.0, seed=2))[0].to_json()
        print("upload attacks:", flush=True)
        upload_attacks(url, good, big)
        del big
        rss["after upload attacks"] = rss_mb()

        http = stress.random_requests(args.http_requests, seed=args.seed + 1)
        # One gradio_client per client thread, made before the load; its 20 s default read timeout is
        # lifted, since 16 concurrent decodes on a shared 2-core machine can take longer than that.
        pool = [Client(url, verbose=False, httpx_kwargs={"timeout": 600}) for _ in range(args.clients)]
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
        rss["after load"] = rss_mb()
    finally:
        demo.close()
    base = rss["after first decode"]
    for name, mb in rss.items():
        print(f"RSS {name:22} {mb:7.1f} MB  ({mb - base:+.1f})")
    worst = max(rss.values()) - base
    print(f"RSS growth {worst:.1f} MB: {'within' if worst <= RSS_BUDGET_MB else 'OVER'} the {RSS_BUDGET_MB} MB budget")


if __name__ == "__main__":
    main()
