"""Visitors of the served page, for bench/reliability_bench.py (issue 42): a browser visitor that times its
decodes, raw-HTTP sessions that stream decodes, and an API client in a process of its own.

The browser is Debian's chromium through Playwright (as tests/test_browser.py drives it); the raw
sessions call the page's own Run event (tests/raw_http.py), with its inputs' values as the page
sends them, some set by label.
"""
from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from typing import Any
from urllib.parse import quote

import httpx

from dllm_viz.app.strings import t
from tests.raw_http import RawSession, event_index

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
TIMEOUT_MS = 600_000
# Armed before a Run click; resolves with [ms to the first painted step, ms to the finished canvas,
# the status the live canvas showed while the request waited for a slot (null if it never did)].
PROBE = """() => { const t0 = performance.now(); let first = null, queued = null;
  const old = (document.querySelector('#dv-canvas .dv-player:not(.dv-live)') || {}).outerHTML;
  window.__dvProbe = new Promise((done) => { const tick = () => {
    const live = document.querySelector('#dv-canvas .dv-live');
    if (live) { const d = JSON.parse(live.dataset.trace);
      if (d.queue && queued === null) queued = live.querySelector('.dv-status').textContent;
      if (d.n >= 1 && first === null) first = performance.now() - t0; }
    const fin = document.querySelector('#dv-canvas .dv-player:not(.dv-live)');
    if (fin && fin.outerHTML !== old && !live) { const now = performance.now() - t0;
      done([first === null ? now : first, now, queued]); return; }
    setTimeout(tick, 5); }; tick(); }); }"""


# Installed before a link opens the page: the ms from navigation to the link's first painted step (a
# live canvas after a step, or the link's finished trace when it came before any live canvas was seen).
OPENING = """(prompt) => { const tick = () => { if (window.__dvFirstStep !== undefined) return;
  const live = document.querySelector('#dv-canvas .dv-live');
  const d = live ? JSON.parse(live.dataset.trace) : null;
  const shown = window.__dv && window.__dv.data && window.__dv.data.link;
  if ((d && d.n >= 1) || (shown && shown.prompt === prompt)) window.__dvFirstStep = performance.now();
  else setTimeout(tick, 5); }; tick(); }"""


def link(url: str, model: str, prompt: str, config: dict[str, Any]) -> str:
    """A link that opens the page on `model` with `prompt` and `config` (and decodes it)."""
    return f"{url}?model={quote(model)}&prompt={quote(prompt)}&config={quote(json.dumps(config))}"


class Visitor:
    """A page in chromium, opened through a link (its settings and model set, its trace decoded)."""

    def __init__(self, playwright: Any, opened: str, prompt: str) -> None:
        self.browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
        self.page = self.browser.new_page(viewport={"width": 1400, "height": 900})
        self.page.add_init_script("localStorage.setItem('dv-tour', 'done')")
        self.page.add_init_script(
            f"document.addEventListener('DOMContentLoaded', () => ({OPENING})({json.dumps(prompt)}))")
        self.page.goto(opened)
        self.page.wait_for_function("() => window.__dvFirstStep !== undefined", timeout=TIMEOUT_MS)
        self.first_step = self.page.evaluate("() => window.__dvFirstStep") / 1000  # from navigation, seconds
        self.page.wait_for_function(f"() => !document.querySelector('#dv-canvas .dv-live') && window.__dv.data.link"
                                    f" && window.__dv.data.link.prompt === {json.dumps(prompt)}", timeout=TIMEOUT_MS)
        self.page.wait_for_timeout(500)

    def decode(self) -> tuple[float, float, str | None]:
        """Click "new seed" (a new seed, then a decode with it: each round another trace): seconds to the
        first painted step, to the finished canvas, and the queue status its live canvas showed."""
        self.page.evaluate(PROBE)
        self.page.get_by_role("button", name=t("new_seed", "en"), exact=True).click()
        first, done, queued = self.page.evaluate("() => window.__dvProbe")
        self.page.wait_for_timeout(300)  # the figures that follow
        return first / 1000, done / 1000, queued

    def close(self) -> None:
        self.browser.close()


def run_event(url: str, client: httpx.Client, **by_label: Any) -> tuple[int, list[Any]]:
    """The page's Run event (its fn_index) and its inputs' values as the page sends them, those named
    in `by_label` (a component's English label or its key, e.g. `gen_length=64`) set."""
    fn = event_index(url, client, "button", "click", value=t("run", "en"))
    config = client.get(url + "config").json()
    comps = {c["id"]: c for c in config["components"]}
    wanted = {t(key, "en"): value for key, value in by_label.items()}
    values = []
    for cid in config["dependencies"][fn]["inputs"]:
        props = comps[cid].get("props", {})
        label = props.get("label")
        values.append(wanted[label] if label in wanted
                      else (None if comps[cid]["type"] == "state" else props.get("value")))
    return fn, values


def stream_decodes(url: str, users: int, **by_label: Any) -> tuple[list[threading.Thread], list[float]]:
    """`users` raw-HTTP sessions, each running one streamed decode of the Run event; returns the
    threads (started) and the list their durations land in."""
    with httpx.Client(timeout=600) as client:
        fn, values = run_event(url, client, **by_label)
    took: list[float] = []

    def one() -> None:
        with httpx.Client(timeout=1200) as c:
            t0 = time.perf_counter()
            message = RawSession(url, c).call(fn, values)
            if message.get("success"):
                took.append(time.perf_counter() - t0)

    threads = [threading.Thread(target=one, daemon=True) for _ in range(users)]
    for th in threads:
        th.start()
    return threads, took


ATTACKER = """
import json, sys, time
from gradio_client import Client
client = Client(sys.argv[1], verbose=False, httpx_kwargs={"timeout": 3600})
jobs = [client.submit("It is a truth ", sys.argv[2], api_name="/generate") for _ in range(int(sys.argv[3]))]
time.sleep(10.0)  # a refusal comes at once; the accepted ones decode for minutes
refused = [job for job in jobs if job.done() and job.exception() is not None]
print(json.dumps({"refused": len(refused), "said": str(refused[0].exception())[:160] if refused else None}), flush=True)
time.sleep(3600)
"""


def api_attacker(url: str, config: dict[str, Any], requests: int) -> subprocess.Popen:
    """One gradio_client in a process of its own sending `requests` /generate calls of `config` at once;
    it prints how many were refused, then waits on the rest until killed (a client that leaves)."""
    return subprocess.Popen([sys.executable, "-c", ATTACKER, url, json.dumps(config), str(requests)],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
