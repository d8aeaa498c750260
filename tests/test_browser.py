"""The page in a real browser: Debian's chromium driven by Playwright.

Loads the playground (tiny model), moves the temperature slider, and checks that the heatmap and
the canvas text update from the slider release alone (no Run click); switches the language;
saves a screenshot under the test's tmp dir. CI installs chromium (`apt-get install chromium`).
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from playwright import sync_api as playwright

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
HEATMAP_Z = """() => { const el = document.querySelector('#dv-heatmap .js-plotly-plot');
  return el && el.data && el.data.length ? JSON.stringify(el.data[0].z) : null; }"""
CANVAS_TEXT = "() => document.querySelector('#dv-canvas .dv-text').innerText"
TIMEOUT_MS = 60_000  # generous: the CI machine is shared; nothing here measures speed


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    from tests.ui_model import launch_tiny_demo

    demo, url = launch_tiny_demo(str(tmp_path_factory.mktemp("exports")))
    try:
        yield url
    finally:
        demo.close()


@pytest.fixture()
def page(url):
    assert Path(CHROMIUM).exists(), "chromium is missing: bash scripts/test-deps.sh installs it (Debian package)"
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1500, "height": 1000})
            errors: list[str] = []
            page.on("pageerror", lambda err: errors.append(str(err)))
            page.goto(url)
            page.wait_for_selector("#dv-heatmap .js-plotly-plot", timeout=TIMEOUT_MS)
            page.errors = errors
            yield page
        finally:
            browser.close()


def test_slider_release_updates_heatmap_and_text(page, tmp_path):
    # The example trace is on the page before any click.
    z0, text0 = page.evaluate(HEATMAP_Z), page.evaluate(CANVAS_TEXT)
    assert z0 and text0.startswith("the cat ")
    slider = page.locator("#dv-temperature input[type=range]")
    before = float(slider.input_value())
    box = slider.bounding_box()
    page.mouse.click(box["x"] + 0.85 * box["width"], box["y"] + box["height"] / 2)  # press and release
    page.wait_for_function(f"(old) => ({HEATMAP_Z})() !== old", arg=z0, timeout=TIMEOUT_MS)
    page.wait_for_function(f"(old) => ({CANVAS_TEXT})() !== old", arg=text0, timeout=TIMEOUT_MS)
    assert float(slider.input_value()) > before
    shot = tmp_path / "playground.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000
    assert page.errors == []


def test_language_switch_relabels_the_page(page):
    page.get_by_text("中文", exact=True).click()
    page.wait_for_function("() => document.body.innerText.includes('生成长度')", timeout=TIMEOUT_MS)
    page.wait_for_function("() => document.querySelector('#dv-canvas').innerText.includes('完成')", timeout=TIMEOUT_MS)
    page.get_by_text("English", exact=True).click()
    page.wait_for_function("() => document.body.innerText.includes('gen length')", timeout=TIMEOUT_MS)
    assert page.errors == []


def test_scrubbing_replays_the_stored_trace(page):
    frame = page.locator("#dv-frame input[type=range]")
    box = frame.bounding_box()
    page.mouse.click(box["x"] + 2, box["y"] + box["height"] / 2)  # drag to the start: every position masked
    page.wait_for_function("() => document.querySelector('#dv-canvas .dv-text .dv-tok') === null", timeout=TIMEOUT_MS)
    assert page.locator("#dv-canvas .dv-text .dv-mask").count() == 32
    assert float(frame.input_value()) == 0


def test_dragging_the_temperature_retempers_the_inspector_in_the_page(page):
    text0 = page.evaluate(CANVAS_TEXT)
    before = page.locator("#dv-inspector .dv-insp-tlab").all_inner_texts()
    # An input event without a release: the inspector follows, no decode runs.
    page.evaluate("""() => { const r = document.querySelector('#dv-temperature input[type=range]');
        r.value = '2.5'; r.dispatchEvent(new Event('input', {bubbles: true})); }""")
    page.wait_for_function("() => document.querySelector('#dv-inspector .dv-insp-tkey').textContent.includes('T=2.5')",
                           timeout=TIMEOUT_MS)
    after = page.locator("#dv-inspector .dv-insp-tlab").all_inner_texts()
    spread = lambda labels: max(map(int, (x.rstrip("%") for x in labels))) - min(map(int, (x.rstrip("%") for x in labels)))  # noqa: E731
    assert spread(after) < spread(before)  # T = 2.5 flattens the shares of the stored candidates
    assert page.evaluate(CANVAS_TEXT) == text0
