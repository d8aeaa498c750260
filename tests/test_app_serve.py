"""app/serve.py: the served app's bounds (sweeps through the shared engine, connections, sessions, the log)."""
from __future__ import annotations

import json
import math
import os
import resource
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import CancelledError
from pathlib import Path

import httpx
from gradio_client import Client

from dllm_viz.app import serve as app
from dllm_viz import DecodeConfig, Trace, decode
from dllm_viz.app.handlers.asking import Ticket, asking
from dllm_viz.app.handlers.sweep_grid import MAX_SWEEP_REQUESTS, SWEEP_CHUNK, SweepGrid, run_sweep
from dllm_viz.app.layout.sweep import SWEEP_DECAYS, SWEEP_DIVISORS, SWEEP_TEMPERATURES
from dllm_viz.core.budget import Budget
from dllm_viz.serve.engine import Engine, Fairness
from tests.ui_model import free_port, make_text_model, wait_for_client

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT = 120  # seconds: a bound against hangs, never a timing assertion


def test_the_widgets_largest_sweep_runs_through_the_shared_engine():
    """Every box ticked, 8 seeds, two prompts: 1920 requests, which once got "engine queue is full"
    on an idle server (MAX_QUEUE = 512); the sweep now submits SWEEP_CHUNK at a time."""
    assert SWEEP_CHUNK <= app.MAX_QUEUE
    grid = SweepGrid(temperatures=SWEEP_TEMPERATURES, divisors=SWEEP_DIVISORS, decays=SWEEP_DECAYS,
                     seeds=tuple(range(8)), prompts=("the cat ", "a dog "), gen_length=8)
    assert grid.size == MAX_SWEEP_REQUESTS
    model = make_text_model()
    with Engine(model, max_batch=app.MAX_BATCH, max_queue=app.MAX_QUEUE, budget=Budget(max_cells=app.REQUEST_CELLS),
                fairness=app.FAIRNESS) as engine:  # as app.py serves
        with asking(Ticket(client=("sweep", None))):
            result = run_sweep(app.make_runner(model, engine), grid)
        assert engine.stats()["rejected"] == 0
    assert len(result.rows) == len(grid.cells) and all(r["runs"] == 16 for r in result.rows)


def test_the_served_runner_submits_as_its_ticket_s_client_and_says_where_it_waits():
    """app.make_runner reads the handler's ticket (`app.asking`): it submits as the ticket's client, and
    sets `waiting` (the queue position the page shows) and `cancel` (Stop, a client that left)."""
    model = make_text_model()
    config = DecodeConfig.preset("balanced", 16, seed=2)
    with Engine(model, max_batch=1, fairness=Fairness(client_slots=1)) as engine:
        run = app.make_runner(model, engine)
        hold, held = threading.Event(), threading.Event()

        def blocking(i, rec):  # holds the engine's worker after the first request's first step
            held.set()
            assert hold.wait(TIMEOUT)

        first = threading.Thread(target=lambda: run(["the cat "], [config], on_step=blocking))
        first.start()
        assert held.wait(TIMEOUT)
        tickets, out = [Ticket(client=("page", name)) for name in ("s2", "s3")], {}

        def call(ticket: Ticket) -> None:
            with asking(ticket):
                try:
                    out[ticket.client] = run(["a dog "], [config])[0]
                except CancelledError as err:
                    out[ticket.client] = err

        callers = [threading.Thread(target=call, args=(t,)) for t in tickets]
        for c in callers:
            c.start()
        deadline = time.monotonic() + TIMEOUT
        while [t.waiting() for t in tickets] != [(0, None), (1, None)] and time.monotonic() < deadline:
            time.sleep(0.01)  # polling for the two submits to land in the queue
        assert [t.waiting() for t in tickets] == [(0, None), (1, None)]  # no slot freed yet: no estimate
        assert engine.stats()["clients"] == 2
        tickets[1].cancel()  # s3 stops while it waits
        hold.set()
        for thread in (first, *callers):
            thread.join(TIMEOUT)
    assert isinstance(out[("page", "s3")], CancelledError)
    assert out[("page", "s2")].token_ids == decode(make_text_model(), ["a dog "], config)[0].token_ids


def test_a_crowd_of_silent_sockets_at_the_descriptor_limit_stops_nothing(tmp_path):
    """app.py under a 256-descriptor limit and 400 silent sockets (issue 30 item 9, issue 33 item 9):
    the page and /generate still answer, and the log holds no flood of accept failures."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    log = tmp_path / "app.log"
    env = {**os.environ, "GRADIO_SERVER_PORT": str(port), "DLLM_VIZ_HEADER_TIMEOUT": "3"}

    def low_descriptor_limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))

    with open(log, "w") as out:
        proc = subprocess.Popen([sys.executable, "app.py"], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
                                text=True, preexec_fn=low_descriptor_limit)
    crowd: list[socket.socket] = []
    started = time.monotonic()
    try:
        wait_for_client(proc, url)
        for _ in range(400):
            crowd.append(socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT))
        assert httpx.get(url, timeout=TIMEOUT).status_code == 200
        client = Client(url, verbose=False, httpx_kwargs={"timeout": TIMEOUT})
        try:
            text, trace_json = client.predict("It is a truth", json.dumps({"gen_length": 8}), api_name="/generate")
        finally:
            client.close()
        assert Trace.from_json(trace_json).text == text
    finally:
        for s in crowd:
            s.close()
        proc.terminate()
        proc.wait(timeout=30)
    seconds = time.monotonic() - started
    lines = log.read_text(errors="replace").splitlines()
    flood = [line for line in lines if "accept" in line or "Too many open files" in line]
    assert len(flood) <= math.ceil(seconds) + 1, (seconds, flood[:10])  # one line a second at most, whatever the load
    assert len(lines) < 200, lines[-20:]


def test_the_served_page_keeps_half_the_slots_from_api_callers():
    """As served (`create_demo`): the engine bounds each request's work (REQUEST_CELLS) and shares itself
    by client (FAIRNESS); /generate runs in a group of its own, at most half the engine's slots at once,
    so sixteen maximal API calls never hold the page's decode events (issue 42 item 2); /fork and the inspector's
    fork in a small group of their own."""
    from dllm_viz.app.ui import FORK_CONCURRENCY

    demo = app.create_demo(make_text_model())
    try:
        engine = demo.engine
        assert engine.budget.max_cells == app.REQUEST_CELLS and engine._queue.fairness == app.FAIRNESS
        groups = {}
        for fn in demo.fns.values():
            groups.setdefault(fn.concurrency_id, set()).add((fn.api_name, fn.concurrency_limit))
        api = {(name, limit) for name, limit in groups["api"]}
        assert api == {("generate", app.MAX_BATCH // 2)}  # the API alone in its group: half the slots
        # /fork and the inspector's fork (a private event of the page), both bounded by the one group
        assert ("fork", FORK_CONCURRENCY) in groups["fork"] and len(groups["fork"]) == 2
        assert {limit for _, limit in groups["fork"]} == {FORK_CONCURRENCY}
        decode = {limit for _, limit in groups["decode"]}
        assert decode == {2 * app.MAX_BATCH}  # the page's decodes beyond the slots reach the engine's queue
    finally:
        demo.engine.close()


def test_the_page_opens_on_the_model_asked_for(monkeypatch):
    """`python app.py --model world-renoise` (DLLM_VIZ_MODEL): the page opens on that model with its own first
    prompt (the world language's), not on the first example's model; with no model asked for, on the first
    example (the world model's)."""
    from dllm_viz.studies.world_score import WORLD_PROMPTS

    monkeypatch.setenv("DLLM_VIZ_MODEL", "world-renoise")
    page = app.create_demo(use_engine=False).page
    assert page.model_pick.value == "world-renoise" and page.prompt.value == WORLD_PROMPTS[0]
    assert page.example.value is None and not page.schedule_box.visible  # the renoise canvas's knobs show
    monkeypatch.delenv("DLLM_VIZ_MODEL")
    first = app.load_examples()[0][1]
    page = app.create_demo(use_engine=False).page
    assert page.model_pick.value == first.model and page.prompt.value == first.prompt_text


def test_a_shipped_model_asked_for_by_name_keeps_the_hub_offline():
    """`--model world-renoise` left the Hub online (the name is no local path); only a Hub id "org/name" may be
    fetched. An environment that sets HF_HUB_OFFLINE itself keeps its value."""
    for named, offline in (("world-renoise", "1"), ("world", "1"), (None, "1"), ("org/name", None),
                           (str(ROOT / "dllm_viz"), "1")):
        environ = {} if named is None else {"DLLM_VIZ_MODEL": named}
        app._offline_environment(environ)
        assert environ.get("HF_HUB_OFFLINE") == offline and environ["HF_HUB_DISABLE_TELEMETRY"] == "1", named
    environ = {"DLLM_VIZ_MODEL": "world-renoise", "HF_HUB_OFFLINE": "0"}
    app._offline_environment(environ)
    assert environ["HF_HUB_OFFLINE"] == "0"


def test_the_served_queue_looks_for_events_every_poll_interval_and_still_answers(monkeypatch):
    """`quiet_queue` (serve() applies it to the running server): Gradio's queue, with no event, looks for one every
    QUEUE_POLL_SECONDS instead of every 1 ms (each look takes Python's lock from a decode in progress); an event
    still runs and answers. Fails on a Gradio whose queue no longer has that setting, so an upgrade says so."""
    import gradio as gr
    from gradio import queueing

    with gr.Blocks() as demo:
        box = gr.Textbox()
        gr.Button().click(lambda s: s[::-1], box, box, api_name="echo")
    port = free_port()
    demo.queue().launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True)
    try:
        looks = []
        real = queueing.Queue.__len__
        monkeypatch.setattr(queueing.Queue, "__len__", lambda self: looks.append(1) or real(self))  # one a look
        time.sleep(0.2)
        looks.clear()
        time.sleep(0.5)
        before = len(looks)  # Gradio's own 1 ms: hundreds in 0.5 s
        assert app.quiet_queue(demo) and demo._queue.sleep_when_free == app.QUEUE_POLL_SECONDS
        time.sleep(0.1)
        looks.clear()
        time.sleep(0.5)
        after = len(looks)
        assert after <= 0.5 / app.QUEUE_POLL_SECONDS + 10 < before, (before, after)
        assert Client(f"http://127.0.0.1:{port}/", verbose=False).predict("abc", api_name="/echo") == "cba"
    finally:
        demo.close()
