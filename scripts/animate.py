"""Make assets/playing.webp: the playground's canvas playing the first example, frame by frame.

Serves `app.py` (embedded model), opens it in Debian's chromium, steps the in-page player from
the start to the end and shoots the canvas at every frame, then writes an animated WebP (and a
GIF with --gif) with Pillow. Like scripts/screenshot.py, the picture comes from the real page.

    python scripts/animate.py                     # writes assets/playing.webp
    python scripts/animate.py --out /tmp/p.gif --gif
"""
from __future__ import annotations

import argparse
import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

from PIL import Image
from playwright import sync_api

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scripts.screenshot import free_port, goto_when_up  # noqa: E402

FRAME_MS = 600  # display time per frame; the last frame holds three times as long


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=ROOT / "assets" / "playing.webp")
    parser.add_argument("--gif", action="store_true", help="write a GIF instead of a WebP")
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--lang", choices=("en", "zh"), default="en")
    args = parser.parse_args(argv)
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    port = free_port()
    env = {**os.environ, "GRADIO_SERVER_PORT": str(port), "GRADIO_ANALYTICS_ENABLED": "False"}
    server = subprocess.Popen([sys.executable, "app.py"], cwd=ROOT, env=env)
    frames: list[Image.Image] = []
    try:
        with sync_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=["--headless", "--no-sandbox", "--disable-gpu"])
            page = browser.new_page(viewport={"width": args.width, "height": 900})
            page.add_init_script("localStorage.setItem('dv-tour', 'done')")
            goto_when_up(page, server, port)
            page.wait_for_selector("#dv-canvas .dv-player .dv-scrub", timeout=120_000)
            if args.lang == "zh":
                page.get_by_text("中文", exact=True).click()
                page.wait_for_function("() => document.querySelector('#dv-canvas').innerText.includes('播放')")
            page.locator("#dv-canvas .dv-first").click()
            n = int(page.locator("#dv-canvas .dv-scrub").get_attribute("max"))
            canvas = page.locator("#dv-canvas .dv-player")
            for f in range(n + 1):
                page.wait_for_function(f"() => document.querySelector('#dv-canvas .dv-player').dataset.frame === '{f}'")
                frames.append(Image.open(io.BytesIO(canvas.screenshot())).convert("RGB"))
                page.locator("#dv-canvas .dv-next").click()
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=30)
    durations = [FRAME_MS] * (len(frames) - 1) + [3 * FRAME_MS]
    fmt = dict(format="GIF", optimize=True) if args.gif else dict(format="WEBP", quality=80, method=6)
    frames[0].save(args.out, save_all=True, append_images=frames[1:], duration=durations, loop=0, **fmt)
    print(f"wrote {args.out}: {len(frames)} frames, {args.out.stat().st_size / 1e3:.0f} kB")


if __name__ == "__main__":
    main()
