"""Regenerate assets/screenshot.png: serve `app.py` (embedded model), load it in Debian's chromium, shoot.

    python scripts/screenshot.py                 # writes assets/screenshot.png
    python scripts/screenshot.py --out /tmp/shot.png --lang zh --width 390 --height 844

The page plays the first example trace by itself; the picture is taken once it has played to
the end (the walkthrough skipped), so it is reproducible: the same example, the same tokens
(only the wall time in the stats row changes).
"""
from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

from playwright import sync_api

ROOT = Path(__file__).resolve().parents[1]
READY = "#dv-heatmap .js-plotly-plot"
PLAYED = """() => { const r = document.querySelector('#dv-canvas .dv-player');
  const s = r && r.querySelector('.dv-scrub'); return !!s && r.dataset.frame === s.max; }"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def goto_when_up(page: sync_api.Page, server: subprocess.Popen, port: int, timeout: float = 180) -> None:
    """Open the app at `port` once `server` (app.py starting up) answers; raise if it exits first."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            page.goto(f"http://127.0.0.1:{port}/")
            return
        except sync_api.Error:
            if server.poll() is not None or time.monotonic() > deadline:
                raise
            time.sleep(0.5)  # polling for the server to come up


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=ROOT / "assets" / "screenshot.png")
    parser.add_argument("--width", type=int, default=1500)
    parser.add_argument("--height", type=int, default=1000)
    parser.add_argument("--lang", choices=("en", "zh"), default="en")
    parser.add_argument("--viewport-only", action="store_true", help="shoot the first screen, not the whole page")
    args = parser.parse_args(argv)
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    port = free_port()
    env = {**os.environ, "GRADIO_SERVER_PORT": str(port), "GRADIO_ANALYTICS_ENABLED": "False"}
    server = subprocess.Popen([sys.executable, "app.py"], cwd=ROOT, env=env)
    try:
        with sync_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=["--headless", "--no-sandbox", "--disable-gpu"])
            page = browser.new_page(viewport={"width": args.width, "height": args.height})
            page.add_init_script("localStorage.setItem('dv-tour', 'done')")  # no walkthrough in the picture
            goto_when_up(page, server, port)
            page.wait_for_selector(READY, timeout=120_000)
            page.wait_for_function(PLAYED, timeout=120_000)
            if args.lang == "zh":
                page.get_by_text("中文", exact=True).click()
                page.wait_for_function("() => document.querySelector('#dv-canvas').innerText.includes('播放')")
            page.wait_for_timeout(1500)  # let plotly finish its transitions before the picture
            page.screenshot(path=str(args.out), full_page=not args.viewport_only)
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=30)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
