"""The page in a real browser: Debian's chromium driven by Playwright, against the tiny model.

Covers what only a browser shows: a slider release updates canvas and heatmap with no Run click;
playback runs in the page (buttons, arrow keys) without a request per frame; one step cursor and
one selected position are shared by the canvas and the figures (clicks on heatmap and order-map
cells select, hovering a token marks its column); the walkthrough in both languages; each lesson
click runs one compare; a preset after the threshold schedule enables its sliders; the 中文 page
has no stray English; the 390 px layout; no console error and no request to another host.
CI installs chromium and a CJK font (`scripts/test-deps.sh`).
"""
from __future__ import annotations

import re
import shutil
from pathlib import Path
from urllib.parse import urlparse

import pytest
from playwright import sync_api as playwright

from tests.test_i18n import english_words

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
HEATMAP_Z = """() => { const el = document.querySelector('#dv-heatmap .js-plotly-plot');
  return el && el.data && el.data.length ? JSON.stringify(el.data[0].z) : null; }"""
CANVAS_TEXT = "() => document.querySelector('#dv-canvas .dv-text').innerText"
FRAME = "() => Number(document.querySelector('#dv-canvas .dv-player').dataset.frame)"
SELECTED = "() => Number(document.querySelector('#dv-canvas .dv-player').dataset.selected)"
DRAWS = "() => [window.__dv.draws || 0, window.__dv.skippedDraws || 0]"  # counted by page.js
ORDER_DATA = "() => { const e = document.querySelector('#dv-order .js-plotly-plot'); return e && e.data ? e.data[0] : null; }"
TIMEOUT_MS = 60_000  # generous: the CI machine is shared; nothing here measures speed


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    from tests.ui_model import launch_tiny_demo

    demo, url = launch_tiny_demo(str(tmp_path_factory.mktemp("exports")))
    try:
        yield demo, url
    finally:
        demo.close()


@pytest.fixture(scope="module")
def url(served):
    return served[1]


def open_page(p, url, *, width=1440, height=900, tour=False):
    browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
    page = browser.new_page(viewport={"width": width, "height": height})
    page.errors, page.hosts, page.requests = [], set(), []
    page.on("pageerror", lambda err: page.errors.append(str(err)))
    page.on("console", lambda msg: page.errors.append(msg.text) if msg.type == "error" else None)
    page.on("request", lambda req: (page.hosts.add(urlparse(req.url).netloc), page.requests.append(req.url)))
    if not tour:
        page.add_init_script("localStorage.setItem('dv-tour', 'done')")
    page.goto(url)
    page.wait_for_selector("#dv-heatmap .js-plotly-plot", timeout=TIMEOUT_MS)
    page.wait_for_function("() => document.querySelector('#dv-canvas .dv-player') !== null", timeout=TIMEOUT_MS)
    return browser, page


@pytest.fixture()
def page(url):
    assert Path(CHROMIUM).exists(), "chromium is missing: bash scripts/test-deps.sh installs it (Debian package)"
    with playwright.sync_playwright() as p:
        browser, page = open_page(p, url)
        try:
            yield page
            assert page.errors == []
            assert page.hosts <= {urlparse(url).netloc}, page.hosts
        finally:
            browser.close()


def wait_played_out(page):
    page.wait_for_function("() => { const r = document.querySelector('#dv-canvas .dv-player');"
                           " return r && r.dataset.frame === r.querySelector('.dv-scrub').max && "
                           "r.querySelector('.dv-play').textContent.includes('Play'); }", timeout=TIMEOUT_MS)


def test_the_page_opens_on_a_playing_example_and_release_reruns(page, tmp_path):
    wait_played_out(page)  # the example played to its end by itself
    z0, text0 = page.evaluate(HEATMAP_Z), page.evaluate(CANVAS_TEXT)
    assert z0 and text0.startswith("the cat ")
    slider = page.locator("#dv-temperature input[type=range]")
    box = slider.bounding_box()
    page.evaluate(f"() => {{ window.__order0 = ({ORDER_DATA})(); }}")
    draws0 = page.evaluate(DRAWS)
    page.mouse.click(box["x"] + 0.85 * box["width"], box["y"] + box["height"] / 2)  # press and release
    page.wait_for_function(f"(old) => ({HEATMAP_Z})() !== old", arg=z0, timeout=TIMEOUT_MS)
    page.wait_for_function(f"(old) => ({CANVAS_TEXT})() !== old", arg=text0, timeout=TIMEOUT_MS)
    page.wait_for_function(f"() => ({ORDER_DATA})() !== window.__order0", timeout=TIMEOUT_MS)  # the rest follow
    page.wait_for_timeout(500)
    drawn, skipped = (a - b for a, b in zip(page.evaluate(DRAWS), draws0))
    # Gradio remounts a gr.Plot on each new value; page.js lets only the mounted div draw: each of
    # the three figures a decode updates (heatmap, order map, per-step plot) is drawn once.
    assert (drawn, skipped) == (3, 3)
    page.screenshot(path=str(tmp_path / "playground.png"), full_page=True)
    # Each figure's declared margins hold its colour bar, labels and legend: plotly never needs a
    # second full draw to grow them (figures.py; a third of the time to the heatmap drawn).
    grown = page.evaluate("""() => [...document.querySelectorAll('.js-plotly-plot')].filter((e) => e.offsetParent)
        .map((e) => [e.closest('[id]').id, ['l', 'r', 't', 'b'].filter((k) => e._fullLayout._size[k] > e.layout.margin[k] + 0.5)
                                          .map((k) => `${k} ${e._fullLayout._size[k]} > ${e.layout.margin[k]} (${e._fullLayout.width} px)`)])
        .filter(([, sides]) => sides.length)""")
    assert page.locator("#dv-heatmap .js-plotly-plot").count() == 1 and grown == []


def test_a_number_typed_into_a_slider_box_reruns(page):
    wait_played_out(page)
    z0 = page.evaluate(HEATMAP_Z)
    box = page.locator("#dv-temperature input[type=number]")
    box.fill("2.2")
    box.press("Enter")
    page.wait_for_function(f"(old) => ({HEATMAP_Z})() !== old", arg=z0, timeout=TIMEOUT_MS)


def test_playback_runs_in_the_page_with_buttons_and_arrow_keys(page):
    wait_played_out(page)
    n = page.evaluate(FRAME)
    before = len(page.requests)
    page.locator("#dv-canvas .dv-first").click()
    assert page.evaluate(FRAME) == 0
    assert page.locator("#dv-canvas .dv-text .dv-tok").count() == 0
    assert page.locator("#dv-canvas .dv-text .dv-mask").count() == 32
    page.locator("body").click(position={"x": 5, "y": 5})
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    assert page.evaluate(FRAME) == 2
    page.keyboard.press("ArrowLeft")
    assert page.evaluate(FRAME) == 1
    y0 = page.locator("#dv-heatmap").bounding_box()["y"]
    page.locator("#dv-canvas .dv-play").click()
    wait_played_out(page)
    assert page.evaluate(FRAME) == n
    assert page.locator("#dv-heatmap").bounding_box()["y"] == y0  # a fixed-height canvas: nothing below moves
    # Frames came from the page itself: at most the settled selections went to the server.
    assert len([u for u in page.requests[before:] if "/queue/join" in u]) <= 4


def test_one_cursor_links_canvas_heatmap_and_order_map(page):
    wait_played_out(page)
    heat = page.locator('#dv-heatmap .nsewdrag[data-subplot="xy"]').bounding_box()
    n = page.evaluate("() => JSON.parse(document.querySelector('#dv-canvas .dv-player').dataset.trace).n")
    # Click the cell of position 5 at step 2.
    page.mouse.click(heat["x"] + (5.5 / 32) * heat["width"], heat["y"] + (1.5 / n) * heat["height"])
    page.wait_for_function(f"() => ({SELECTED})() === 5 && ({FRAME})() === 2", timeout=TIMEOUT_MS)
    assert "dv-sel" in page.locator('#dv-canvas [data-pos="5"]').get_attribute("class")
    page.wait_for_function("() => document.querySelector('#dv-inspector h4').textContent.includes('position 5')",
                           timeout=TIMEOUT_MS)
    # The order map: a click on a cell selects that position at the step that confirmed it.
    order = page.locator('#dv-order .nsewdrag[data-subplot="xy"]').bounding_box()
    rows = 32 // 8
    page.mouse.click(order["x"] + (2.5 / 8) * order["width"], order["y"] + (1.5 / rows) * order["height"])
    page.wait_for_function(f"() => ({SELECTED})() === 10", timeout=TIMEOUT_MS)
    step = page.evaluate("() => JSON.parse(document.querySelector('#dv-canvas .dv-player').dataset.trace).order[10] + 1")
    assert page.evaluate(FRAME) == step
    # Hovering a token marks its column in the heatmap.
    page.locator('#dv-canvas [data-pos="7"]').hover()
    heat = page.locator('#dv-heatmap .nsewdrag[data-subplot="xy"]').bounding_box()  # after any scrolling
    page.wait_for_function("""(x) => { const h = document.querySelector('#dv-heatmap .dv-ol-hover');
        return h && Math.abs(h.getBoundingClientRect().left - x) < 3; }""",
                           arg=heat["x"] + 7 / 32 * heat["width"], timeout=TIMEOUT_MS)


def test_the_walkthrough_speaks_both_languages(url):
    with playwright.sync_playwright() as p:
        browser, page = open_page(p, url, tour=True)
        try:
            page.wait_for_selector(".dv-tour", timeout=TIMEOUT_MS)
            steps = 0
            while page.locator(".dv-tour").count():
                assert page.locator(".dv-tour-text").inner_text().strip()
                page.locator(".dv-tour-next").click()
                steps += 1
            assert 5 <= steps <= 7
            page.get_by_text("中文", exact=True).click()
            page.wait_for_function("() => document.querySelector('#dv-canvas').innerText.includes('播放')",
                                   timeout=TIMEOUT_MS)
            page.locator("#dv-canvas .dv-tour-start").click()
            page.wait_for_selector(".dv-tour", timeout=TIMEOUT_MS)
            assert re.search(r"[\u4e00-\u9fff]", page.locator(".dv-tour-text").inner_text())
            page.locator(".dv-tour-skip").click()
            assert page.locator(".dv-tour").count() == 0
            assert page.errors == []
        finally:
            browser.close()


def test_each_lesson_click_runs_one_compare_and_labels_both_sides(page, served):
    from dllm_viz.app.lessons import LESSONS

    calls = served[0].decode_calls
    wait_played_out(page)
    page.wait_for_timeout(500)  # the settled cursor's one inspector request, before counting
    page.get_by_role("tab", name="Compare").click()
    heat_b = "() => { const e = document.querySelector('#dv-cmp-heat-b .js-plotly-plot'); return e && e.data ? e.data[0] : null; }"
    for key in ("global", "lock_in", "rng", "staged", "threshold", "polluted"):
        before = len(calls)
        page.evaluate(f"() => {{ window.__heat = ({heat_b})(); }}")
        page.locator(f"#dv-lesson-{key}").click()
        title = LESSONS[key].text("title", "en")
        page.wait_for_function("(t) => document.querySelector('#dv-lesson-text').innerText.includes(t) && "
                               "document.querySelector('#dv-cmp-summary').innerText.length > 0", arg=title,
                               timeout=TIMEOUT_MS)
        page.wait_for_function(f"() => ({heat_b})() !== window.__heat", timeout=TIMEOUT_MS)  # figures follow
        page.wait_for_timeout(300)
        assert len(calls) - before == 1, key  # one batched compare per click, figures included
        assert page.locator(".dv-busy").count() == 0, key  # the canvases' busy look ended with the event
    assert page.locator("#dv-cmp-canvas-a .dv-side-a").count() == 1
    a = page.locator("#dv-cmp-heat-a .js-plotly-plot").bounding_box()
    b = page.locator("#dv-cmp-heat-b .js-plotly-plot").bounding_box()
    assert a["height"] == b["height"]


def test_a_preset_after_the_threshold_schedule_enables_its_sliders(page):
    wait_played_out(page)
    page.locator("#dv-schedule input").click()
    page.get_by_role("option", name="threshold", exact=True).click()
    page.wait_for_function("() => document.querySelector('#dv-decay input[type=range]').disabled", timeout=TIMEOUT_MS)
    page.get_by_role("button", name="balanced", exact=True).click()
    page.wait_for_function("() => !document.querySelector('#dv-decay input[type=range]').disabled", timeout=TIMEOUT_MS)


def test_the_chinese_page_shows_no_untranslated_english(page, tmp_path):
    page.get_by_text("中文", exact=True).click()
    page.wait_for_function("() => document.querySelector('#dv-canvas').innerText.includes('播放')", timeout=TIMEOUT_MS)
    page.wait_for_timeout(500)
    text = page.evaluate("""() => { const c = document.querySelector('.gradio-container').cloneNode(true);
        c.querySelectorAll('footer').forEach((f) => f.remove());  // Gradio's own footer, not the page's strings
        document.body.appendChild(c); const s = c.innerText; c.remove(); return s; }""")
    text = text.replace(page.evaluate(CANVAS_TEXT), " ")  # the model's own text
    leaks = english_words(text) - {"tiny", "the", "cat"}
    assert leaks == set()
    page.screenshot(path=str(tmp_path / "zh.png"), full_page=True)


def test_the_phone_layout_puts_the_canvas_first(url, tmp_path):
    with playwright.sync_playwright() as p:
        browser, page = open_page(p, url, width=390, height=844)
        try:
            canvas = page.locator("#dv-canvas").bounding_box()
            knobs = page.locator("#dv-knobs").bounding_box()
            assert canvas["y"] < knobs["y"]
            assert canvas["y"] < 2 * 844  # above the fold of the second screen at most
            assert page.evaluate("() => document.documentElement.scrollWidth") <= 390 + 1
            page.screenshot(path=str(tmp_path / "phone.png"), full_page=False)
            assert page.errors == []
        finally:
            browser.close()


def test_a_no_effect_banner_opens_its_compare_lesson(page, served):
    from dllm_viz.app.lessons import LESSONS

    calls = served[0].decode_calls
    wait_played_out(page)
    page.get_by_text("Teaching switches", exact=False).first.click()
    page.locator('input[type=radio][value="shared"]').check()  # alone, with one request: no effect
    page.wait_for_selector('#dv-banner a[href="#dv-open-lesson-rng"]', timeout=TIMEOUT_MS)
    page.wait_for_timeout(300)
    before = len(calls)
    page.locator('#dv-banner a[href="#dv-open-lesson-rng"]').click()
    title = LESSONS["rng"].text("title", "en")
    page.wait_for_function("(t) => document.querySelector('#dv-lesson-text').innerText.includes(t) && "
                           "document.querySelector('#dv-cmp-summary').innerText.length > 0", arg=title,
                           timeout=TIMEOUT_MS)
    assert page.locator("#dv-lesson-text").is_visible()  # the Compare tab is the one on show
    page.wait_for_timeout(300)
    assert len(calls) - before == 1  # one batched compare, nothing else


def test_a_shared_trace_with_markup_in_its_vocabulary_makes_no_request(page, tmp_path):
    """Issue 33 item 3: a trace whose vocabulary holds an image tag (or Markdown image) pointing at
    another host is shown as text everywhere (canvas, inspector, figures, error toast): nothing is
    fetched from that host, the page's own images included."""
    import json

    from dllm_viz import DecodeConfig, Trace, decode
    from tests.ui_model import make_text_model

    host = "198.51.100.7"  # TEST-NET-2: unreachable, and any request to it is seen below
    evil = [f'<img src="http://{host}/pixel.png">', f"![x](http://{host}/md.png)", f"<a href='http://{host}/'>x</a>"]
    wait_played_out(page)
    trace = decode(make_text_model(), ["the cat "], DecodeConfig.preset("balanced", 32, seed=5))[0]
    d = json.loads(trace.to_json())
    d["vocab"] = {k: evil[i % len(evil)] for i, k in enumerate(d["vocab"])}
    path = tmp_path / "shared.json"
    path.write_text(json.dumps(d), encoding="utf-8")
    Trace.from_json(path.read_text())  # a valid trace: it loads
    page.locator("input[type=file]").first.set_input_files(str(path))
    page.wait_for_function(f"(s) => ({CANVAS_TEXT})().includes(s)", arg=evil[0], timeout=TIMEOUT_MS)
    for pos in (0, 1, 2):  # the inspector (Markdown explanation, candidate bars) of several pieces
        page.locator(f'#dv-canvas [data-pos="{pos}"]').click()
        page.wait_for_function(f"() => document.querySelector('#dv-inspector h4').textContent.includes('position {pos}')",
                               timeout=TIMEOUT_MS)
    page.wait_for_timeout(1000)  # let any image the page would load start loading
    # A malformed trace whose message echoes the markup: the error toast shows it as text.
    d["config"]["schedule"] = evil[0]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(d), encoding="utf-8")
    page.locator("input[type=file]").first.set_input_files(str(bad))
    page.wait_for_function("(s) => [...document.querySelectorAll('[data-testid=toast-text]')].some((e) => e.textContent.includes(s))",
                           arg="schedule=", timeout=TIMEOUT_MS)
    page.wait_for_timeout(1000)
    images = page.evaluate("() => [...document.querySelectorAll('img, image, a[href]')].map((e) => e.src || e.href || e.getAttribute('href'))")
    assert not [u for u in page.requests if host in u], [u for u in page.requests if host in u]
    assert not [u for u in images if u and host in str(u)]
