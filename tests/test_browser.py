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

import json
import re
import shutil
import time
from pathlib import Path
from urllib.parse import urlparse

import pytest
from playwright import sync_api as playwright

from dllm_viz.app import fn_route
from dllm_viz.app.handlers.traces import WAIT_SECONDS
from dllm_viz.app.strings import t
from tests.test_strings import english_words, unglossed

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
HEATMAP_Z = """() => { const el = document.querySelector('#dv-heatmap .dv-fig');
  return el && el.data && el.data.length ? JSON.stringify(el.data[0].z) : null; }"""
CANVAS_TEXT = "() => document.querySelector('#dv-canvas .dv-text').innerText"
FRAME = "() => Number(document.querySelector('#dv-canvas .dv-player').dataset.frame)"
SELECTED = "() => Number(document.querySelector('#dv-canvas .dv-player').dataset.selected)"
# Each figure's draws (views.js counts them) and its plot area, placed from its own layout.
DRAWS = """() => ['dv-heatmap', 'dv-order', 'dv-steps'].map((id) => {
  const gd = document.querySelector(`#${id} .dv-fig`); return gd ? gd.__dvDraws || 0 : 0; })"""
AREA = """(id) => { const a = window.__dv.lib.dvArea(document.querySelector(`#${id} .dv-fig`));
  return a && {x: a.left, y: a.top, width: a.width, height: a.height}; }"""
ORDER_DATA = ("() => { const e = document.querySelector('#dv-order .dv-fig'); "
              "return e && e.data ? e.data[0] : null; }")
# The page's own calls to the server (`dv_start`, `dv_read`; its streams on fn_route's route where the server says it)
CALLS = ("**/component_server**", f"**{fn_route.PATH}")
LOST = ("**/queue/join*", *CALLS)  # Gradio's events, and the page's own calls
TIMEOUT_MS = 60_000  # generous: the CI machine is shared; nothing here measures speed


def server_call(url: str) -> bool:
    """A call of the page's to a server function of the canvas: Gradio's `component_server`, or fn_route's."""
    return "/component_server" in url or urlparse(url).path.endswith(fn_route.PATH)


def refuse_streams(page, refused: bool = True) -> None:
    """A stream's request (`dv_stream`, `dv_stream_pair`, on either route) refused on the way, as a proxy might
    (`refused`), or no more; every other call goes on."""
    def refuse(route) -> None:
        if '"fn_name":"dv_stream' in (route.request.post_data or ""):
            route.abort()
        else:
            route.continue_()
    for path in CALLS:
        if refused:
            page.route(path, refuse)
        else:
            page.unroute(path)


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
    return browser, new_page(browser, url, width=width, height=height, tour=tour)


def new_page(browser, url, *, width=1440, height=900, tour=False):
    """A page of `browser` on `url`, recording errors, hosts and requests, once the page is up."""
    page = browser.new_page(viewport={"width": width, "height": height})
    page.errors, page.hosts, page.requests = [], set(), []
    page.on("pageerror", lambda err: page.errors.append(str(err)))
    page.on("console", lambda msg: page.errors.append(msg.text) if msg.type == "error" else None)
    page.on("request", lambda req: (page.hosts.add(urlparse(req.url).netloc), page.requests.append(req.url)))
    if not tour:
        page.add_init_script("localStorage.setItem('dv-tour', 'done')")
    page.goto(url)
    # a link may open Compare
    page.wait_for_selector("#dv-heatmap .dv-fig", state="attached", timeout=TIMEOUT_MS)
    page.wait_for_function("() => document.querySelector('#dv-canvas .dv-player') !== null", timeout=TIMEOUT_MS)
    return page


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
                           " const s = r && r.querySelector('.dv-scrub'); return !!s && r.dataset.frame === s.max && "
                           "r.querySelector('.dv-play').textContent.includes('Play'); }", timeout=TIMEOUT_MS)


def release(page, elem_id: str, at: float) -> None:
    """Press and release the slider `elem_id` at `at` of its width (a click: one release)."""
    slider = page.locator(f"#{elem_id} input[type=range]")
    slider.scroll_into_view_if_needed()
    box = slider.bounding_box()
    page.mouse.click(box["x"] + at * box["width"], box["y"] + box["height"] / 2)


# "figure id: text" of every text of a figure shown that lies outside the figure's box (its title, colour bar,
# labels and legend are in its stated margins: figures.js; a narrow per-step figure grows for its legend: views.js).
OUTSIDE = """() => [...document.querySelectorAll('.dv-fig')].filter((e) => e.offsetParent)
    .flatMap((e) => { const r = e.getBoundingClientRect();
      return [...e.querySelectorAll('text')].filter((t) => t.textContent.trim())
        .map((t) => [e.parentElement.closest('[id]').id, t.textContent, t.getBoundingClientRect()])
        .filter(([, , b]) => b.width && (b.left < r.left - 1 || b.right > r.right + 1
          || b.top < r.top - 1 || b.bottom > r.bottom + 1)).map(([id, text]) => `${id}: ${text}`); })"""


def test_the_page_opens_on_a_playing_example_and_release_reruns(page, tmp_path):
    wait_played_out(page)  # the example played to its end by itself
    z0, text0 = page.evaluate(HEATMAP_Z), page.evaluate(CANVAS_TEXT)
    assert z0 and text0.startswith("the cat ")
    page.evaluate(f"() => {{ window.__order0 = ({ORDER_DATA})(); }}")
    draws0 = page.evaluate(DRAWS)
    release(page, "dv-temperature", 0.85)
    page.wait_for_function(f"(old) => ({HEATMAP_Z})() !== old", arg=z0, timeout=TIMEOUT_MS)
    page.wait_for_function(f"(old) => ({CANVAS_TEXT})() !== old", arg=text0, timeout=TIMEOUT_MS)
    page.wait_for_function(f"() => ({ORDER_DATA})() !== window.__order0", timeout=TIMEOUT_MS)  # the rest follow
    page.wait_for_timeout(500)
    # The page draws each of the three figures once per decode, from the trace it read once.
    assert [a - b for a, b in zip(page.evaluate(DRAWS), draws0)] == [1, 1, 1]
    page.screenshot(path=str(tmp_path / "playground.png"), full_page=True)
    # Each figure's stated margins hold its title, colour bar, labels and legend (no margin grows:
    # figures.js): no text of a figure lies outside it.
    assert page.locator("#dv-heatmap .dv-fig").count() == 1 and page.evaluate(OUTSIDE) == []


def test_a_release_starts_its_decode_from_the_page_and_its_event_adopts_it(page, served):
    # The page asks for the decode itself as the release's event starts (`dv_start`), and the event, when it
    # comes, waits on that decode: one decode per release, under the handle the page drew.
    demo = served[0]
    wait_played_out(page)
    z0, calls = page.evaluate(HEATMAP_Z), len(demo.decode_calls)
    release(page, "dv-temperature", 0.7)
    page.wait_for_function(f"(old) => ({HEATMAP_Z})() !== old", arg=z0, timeout=TIMEOUT_MS)
    ref = page.evaluate("() => window.__dv.shownRef")
    assert adopted(page, demo.starts["play"], ref) and len(demo.decode_calls) == calls + 1
    # The next release starts its decode at the release itself (start.js: the last event's inputs, the
    # sliders read from the page), before Gradio makes its event; the event, with the same inputs, takes it.
    z1 = page.evaluate(HEATMAP_Z)
    page.locator("#dv-canvas .dv-first").click()  # the player at its start: the decode that finishes shows its end
    release(page, "dv-temperature", 0.3)
    page.wait_for_function(f"(old) => ({HEATMAP_Z})() !== old", arg=z1, timeout=TIMEOUT_MS)
    ref = page.evaluate("() => window.__dv.shownRef")
    assert adopted(page, demo.starts["play"], ref) and len(demo.decode_calls) == calls + 2
    assert page.evaluate("() => window.__dvEarly.count") == {"started": 1, "taken": 1, "missed": 0}
    assert page.evaluate(FRAME) == page.evaluate("() => window.__dv.data.n") > 0
    # A lesson's click: its compare too (both sides under the handles the page drew).
    page.get_by_role("tab", name="Compare").click()
    page.locator("#dv-lesson-polluted").click()
    page.wait_for_function("() => !!document.querySelector('#dv-cmp-heat-a .dv-fig')", timeout=TIMEOUT_MS)
    ref = page.evaluate("() => document.querySelector('[data-dv-side=\"a\"]').__dvRef")
    assert adopted(page, demo.starts["compare"], ref) and len(demo.decode_calls) == calls + 3


def adopted(page, starts, ref) -> bool:
    """Whether the page started what `ref` names and its event adopted it (the event may come after it ended)."""
    started = [slot for (_, handle), slot in starts._claims.items() if handle == ref]
    for _ in range(200):
        if started and started[0].adopted:
            break
        page.wait_for_timeout(50)
    page.wait_for_timeout(300)
    return [(slot.by_page, slot.adopted) for slot in started] == [(True, True)] and starts.pending() == 0


def test_a_release_event_leaves_the_page_once_its_decode_is_drawn(page):
    # Gradio's event for a decode the page started waits (start.js) until the page has drawn every view of it:
    # Gradio's work for the event, in the page and on the server, never competes with the decode and its views.
    wait_played_out(page)
    z0 = page.evaluate(HEATMAP_Z)
    page.evaluate("() => { performance.clearResourceTimings(); performance.clearMarks(); }")
    release(page, "dv-temperature", 0.65)
    page.wait_for_function(f"(old) => ({HEATMAP_Z})() !== old", arg=z0, timeout=TIMEOUT_MS)
    joined = "() => performance.getEntriesByType('resource').filter((e) => e.name.includes('/queue/join'))"
    page.wait_for_function(f"() => ({joined})().length > 0", timeout=TIMEOUT_MS)
    drawn, join = page.evaluate(f"""() => [performance.getEntriesByType('mark')
      .filter((m) => m.name.startsWith('dv-drawn-')).map((m) => m.startTime), ({joined})().map((e) => e.startTime)]""")
    assert len(drawn) >= 3 and len(join) == 1 and max(drawn) < join[0]


# Records when Gradio makes each decode event of the page (its js, start.js `__dvNewRef`, runs as it does).
MADE = """() => { window.__made = []; const f = window.__dvNewRef;
  window.__dvNewRef = (...a) => { window.__made.push(performance.now()); return f(...a); }; }"""


def test_a_release_the_page_starts_reaches_gradio_once_its_decode_is_drawn(page, served):
    # A release whose decode the page starts itself (the second: the first event's inputs are known) is kept from
    # Gradio's slider until the page has drawn that decode (start.js `released`): Gradio makes its event (a long
    # task of its page) only then, and the event adopts the decode: one decode per release.
    demo = served[0]
    wait_played_out(page)
    z0, calls = page.evaluate(HEATMAP_Z), len(demo.decode_calls)
    release(page, "dv-temperature", 0.7)  # Gradio's event: the page learns its inputs
    page.wait_for_function(f"(old) => ({HEATMAP_Z})() !== old", arg=z0, timeout=TIMEOUT_MS)
    page.wait_for_timeout(500)
    page.evaluate("() => performance.clearMarks()")
    page.evaluate(MADE)
    z1 = page.evaluate(HEATMAP_Z)
    release(page, "dv-temperature", 0.3)
    page.wait_for_function(f"(old) => ({HEATMAP_Z})() !== old", arg=z1, timeout=TIMEOUT_MS)
    page.wait_for_function("() => window.__made.length > 0", timeout=TIMEOUT_MS)
    drawn = page.evaluate("() => performance.getEntriesByType('mark').filter((m) => m.name.startsWith('dv-drawn-'))"
                          ".map((m) => m.startTime)")
    made = page.evaluate("() => window.__made")
    assert len(drawn) >= 3 and len(made) == 1 and max(drawn) < made[0]
    ref = page.evaluate("() => window.__dv.shownRef")
    assert adopted(page, demo.starts["play"], ref) and len(demo.decode_calls) == calls + 2
    assert page.evaluate("() => window.__dvEarly.count") == {"started": 1, "taken": 1, "missed": 0}
    # Held mid-decode, the release goes on to Gradio as soon as the visitor acts again (a key pressed), so Gradio's
    # events keep the order of the visitor's acts; its event adopts the decode in progress.
    demo.hold[0] = 1
    demo.gate.clear()
    try:
        release(page, "dv-temperature", 0.75)
        page.wait_for_function("() => !!document.querySelector('#dv-canvas .dv-live .dv-text .dv-tok')",
                               timeout=TIMEOUT_MS)
        page.wait_for_timeout(300)
        assert len(page.evaluate("() => window.__made")) == 1  # held: no event made yet
        page.keyboard.press("Shift")
        page.wait_for_function("() => window.__made.length === 2", timeout=TIMEOUT_MS)
    finally:
        demo.hold[0] = None
        demo.gate.set()
    page.wait_for_function("() => !document.querySelector('#dv-canvas .dv-live')", timeout=TIMEOUT_MS)
    ref = page.evaluate("() => window.__dv.shownRef")
    assert adopted(page, demo.starts["play"], ref) and len(demo.decode_calls) == calls + 3
    assert page.evaluate("() => window.__dvEarly.count") == {"started": 2, "taken": 2, "missed": 0}


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
    # Frames, the cursor and the inspector come from the page itself: nothing went to the server.
    assert [u for u in page.requests[before:] if "/queue/join" in u] == []


def test_one_cursor_links_canvas_heatmap_and_order_map(page):
    wait_played_out(page)
    heat = page.evaluate(AREA, "dv-heatmap")
    n = page.evaluate("() => window.__dv.data.n")
    # Click the cell of position 5 at step 2.
    page.mouse.click(heat["x"] + (5.5 / 32) * heat["width"], heat["y"] + (1.5 / n) * heat["height"])
    page.wait_for_function(f"() => ({SELECTED})() === 5 && ({FRAME})() === 2", timeout=TIMEOUT_MS)
    assert "dv-sel" in page.locator('#dv-canvas [data-pos="5"]').get_attribute("class")
    page.wait_for_function("() => document.querySelector('#dv-inspector h4').textContent.includes('position 5')",
                           timeout=TIMEOUT_MS)
    # The order map: a click on a cell selects that position at the step that confirmed it.
    order = page.evaluate(AREA, "dv-order")
    rows = 32 // 8
    page.mouse.click(order["x"] + (2.5 / 8) * order["width"], order["y"] + (1.5 / rows) * order["height"])
    page.wait_for_function(f"() => ({SELECTED})() === 10", timeout=TIMEOUT_MS)
    step = page.evaluate("() => window.__dv.data.order[10] + 1")
    assert page.evaluate(FRAME) == step
    # Hovering a token marks its column in the heatmap.
    page.locator('#dv-canvas [data-pos="7"]').hover()
    heat = page.evaluate(AREA, "dv-heatmap")  # after any scrolling
    page.wait_for_function("""(x) => { const h = document.querySelector('#dv-heatmap .dv-ol-hover');
        return h && Math.abs(h.getBoundingClientRect().left - x) < 3; }""",
                           arg=heat["x"] + 7 / 32 * heat["width"], timeout=TIMEOUT_MS)


ABORTED = ("ERR_FAILED", "AbortError: signal is aborted", "errored out")  # an aborted request's console lines


def test_an_aborted_request_never_freezes_the_cursor_or_the_inspector(page, served):
    # The server is unreachable for a while (every event request and every call of the page's own
    # aborted, as a dropped connection would): a decode is lost, and the cursor, scrubbing, hover and
    # inspector still follow, since they are drawn in the page from the trace it holds. Then the next
    # decode goes through.
    wait_played_out(page)
    z0, n = page.evaluate(HEATMAP_Z), page.evaluate("() => window.__dv.data.n")
    calls = len(served[0].decode_calls)
    for path in LOST:
        page.route(path, lambda route: route.abort())
    release(page, "dv-temperature", 0.85)  # a decode, lost
    page.wait_for_timeout(300)
    heat = page.evaluate(AREA, "dv-heatmap")
    page.mouse.click(heat["x"] + (9.5 / 32) * heat["width"], heat["y"] + (1.5 / n) * heat["height"])
    page.wait_for_function(f"() => ({SELECTED})() === 9 && ({FRAME})() === 2", timeout=5_000)
    order9 = page.evaluate("() => window.__dv.data.order[9]")  # the record the inspector shows at frame 2:
    shown = order9 if order9 < 2 else min(2, n - 1)  # the confirming step's, or the next forward pass's
    assert page.locator("#dv-inspector h4").inner_text() == f"Top candidates at position 9, step {shown + 1}"
    page.locator('#dv-canvas [data-pos="4"]').click()
    assert "position 4" in page.locator("#dv-inspector h4").inner_text()
    page.locator("#dv-canvas .dv-scrub").fill("1")  # scrubbing
    assert page.evaluate(FRAME) == 1 and "step 1" in page.locator("#dv-inspector h4").inner_text()
    page.locator('#dv-canvas [data-pos="7"]').hover()
    heat = page.evaluate(AREA, "dv-heatmap")
    page.wait_for_function("""(x) => { const h = document.querySelector('#dv-heatmap .dv-ol-hover');
        return h && Math.abs(h.getBoundingClientRect().left - x) < 3; }""", arg=heat["x"] + 7 / 32 * heat["width"],
                           timeout=5_000)
    assert page.evaluate(HEATMAP_Z) == z0 and len(served[0].decode_calls) == calls  # the lost decode never ran
    for path in LOST:
        page.unroute(path)
    release(page, "dv-temperature", 0.3)
    page.wait_for_function(f"(old) => ({HEATMAP_Z})() !== old", arg=z0, timeout=TIMEOUT_MS)
    # What the requests aborted on purpose logged (the browser's ERR_FAILED; Gradio's AbortError and "Connection
    # errored out", which can come late, so they are left out once the next decode is drawn); any other error stays.
    page.errors[:] = [e for e in page.errors if not any(m in e for m in ABORTED)]


def test_a_decode_is_read_in_one_streamed_request_and_step_by_step_where_that_fails(page):
    """Issue 43: the page reads a decode's steps from one streamed request (`dv_stream`: an answer a line, as the
    steps come; on fn_route's route), not a request a step, and that request starts the decode; where the stream
    cannot be had (refused on the way, as a proxy might) it starts it apart (`dv_start`) and reads its steps one
    request an answer (`dv_read`), and the decode is drawn all the same."""
    wait_played_out(page)
    sent: list[str] = []

    streams: list[str] = []  # the path each stream was asked on

    def record(req) -> None:
        if server_call(req.url):
            sent.append(json.loads(req.post_data or "{}").get("fn_name", "?"))
            if sent[-1] == "dv_stream":
                streams.append(urlparse(req.url).path)

    page.on("request", record)
    for streamed, frac in ((True, 0.8), (False, 0.3)):
        sent.clear()
        if not streamed:
            refuse_streams(page)
        z0 = page.evaluate(HEATMAP_Z)
        release(page, "dv-temperature", frac)
        page.wait_for_function(f"(old) => ({HEATMAP_Z})() !== old", arg=z0, timeout=TIMEOUT_MS)
        page.wait_for_function("() => !document.querySelector('#dv-canvas .dv-live')", timeout=TIMEOUT_MS)
        if streamed:  # its steps came as answers of the one request, which started it too (no `dv_start` apart)
            assert sent.count("dv_stream") == 1 and not {"dv_read", "dv_start"} & set(sent), sent
        else:  # the stream never reached the server: the decode is started apart
            assert sent.count("dv_stream") == 1 and sent.count("dv_read") >= 1 and sent.count("dv_start") == 1, sent
            refuse_streams(page, False)
    page.remove_listener("request", record)
    assert streams == [fn_route.PATH] * 2  # on the route the server serves them on, past Gradio's
    page.errors[:] = [e for e in page.errors if not any(m in e for m in ABORTED)]


def test_during_playback_the_inspector_says_what_the_canvas_shows(page):
    wait_played_out(page)
    page.locator('#dv-canvas [data-pos="0"]').click()
    page.locator("#dv-canvas .dv-first").click()
    page.locator("#dv-canvas .dv-play").click()
    seen = set()
    for _ in range(60):
        shown = page.evaluate("""() => [
            document.querySelector('#dv-canvas [data-pos="0"]').classList.contains('dv-tok'),
            document.querySelector('#dv-inspector').innerText.includes('Still masked'),
            Number(document.querySelector('#dv-canvas .dv-player').dataset.frame)]""")
        written, masked_says, frame = shown
        assert written != masked_says, frame  # never "still masked" beside a written token, nor the reverse
        seen.add(written)
        if page.evaluate("() => !window.__dv.playing"):
            break
        page.wait_for_timeout(100)
    assert seen == {True, False}  # it was seen masked and then written


def test_the_walkthrough_speaks_both_languages(url):
    with playwright.sync_playwright() as p:
        browser, page = open_page(p, url, tour=True)
        try:
            page.wait_for_selector(".dv-tour", timeout=TIMEOUT_MS)
            page.locator(".dv-tour-next").click()  # the second step, in English
            assert not re.search(r"[\u4e00-\u9fff]", page.locator(".dv-tour-text").inner_text())
            page.get_by_text("中文", exact=True).click()  # the open card follows the switch, at the same step
            page.wait_for_function("() => /[\u4e00-\u9fff]/.test(document.querySelector('.dv-tour-text').innerText)",
                                   timeout=TIMEOUT_MS)
            assert page.locator(".dv-tour span").inner_text().startswith("2 / ")
            steps = 1
            while page.locator(".dv-tour").count():
                assert page.locator(".dv-tour-text").inner_text().strip()
                page.locator(".dv-tour-next").click()
                steps += 1
            assert 5 <= steps <= 7
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
    from dllm_viz.studies.lessons import LESSONS

    calls = served[0].decode_calls
    wait_played_out(page)
    page.wait_for_timeout(500)  # the settled cursor's one inspector request, before counting
    page.get_by_role("tab", name="Compare").click()
    heat_b = ("() => { const e = document.querySelector('#dv-cmp-heat-b .dv-fig'); "
              "return e && e.data ? e.data[0] : null; }")
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
    a = page.locator("#dv-cmp-heat-a .dv-fig").bounding_box()
    b = page.locator("#dv-cmp-heat-b .dv-fig").bounding_box()
    assert a["height"] == b["height"]


def test_a_lesson_click_reads_both_sides_together_and_its_event_waits_for_their_figures(page):
    """The page reads a compare's two sides in one streamed request (`dv_stream_pair`), never one by one, and
    holds the click's Gradio event until the pair's figures are drawn (`dv_shown` goes first): Gradio's work
    for the event never takes the page's time from the compare and its figures."""
    wait_played_out(page)
    page.get_by_role("tab", name="Compare").click()
    page.wait_for_timeout(300)
    sent: list[str] = []

    def record(req) -> None:
        if "/queue/join" in req.url:
            sent.append("join")
        elif server_call(req.url):
            sent.append(json.loads(req.post_data or "{}").get("fn_name", "?"))

    page.on("request", record)
    page.locator("#dv-lesson-staged").click()
    page.wait_for_function("() => document.querySelector('#dv-cmp-summary').innerText.length > 0",
                           timeout=TIMEOUT_MS)
    page.wait_for_timeout(300)
    # ... a request that also starts the compare (its `{"start": ...}`): no `dv_start` apart
    assert sent.count("dv_stream_pair") == 1, sent
    assert not {"dv_read", "dv_read_pair", "dv_stream", "dv_start"} & set(sent), sent
    assert sent.count("join") == 1 and sent.index("dv_shown") < sent.index("join"), sent
    # Where the stream cannot be had (refused on the way, as a proxy might), the sides are read together, a
    # request an answer, and drawn all the same.
    sent.clear()
    refuse_streams(page)
    summary = page.inner_text("#dv-cmp-summary")
    heat = "() => { const f = document.querySelector('#dv-cmp-heat-a .dv-fig'); return f && f.data && f.data[0]; }"
    before = page.evaluate(f"() => JSON.stringify(({heat})())")
    page.locator("#dv-lesson-polluted").click()
    page.wait_for_function(f"([old, s]) => JSON.stringify(({heat})()) !== old && "
                           "document.querySelector('#dv-cmp-summary').innerText !== s", arg=[before, summary],
                           timeout=TIMEOUT_MS)
    refuse_streams(page, False)
    page.remove_listener("request", record)
    assert sent.count("dv_stream_pair") == 1 and sent.count("dv_read_pair") >= 1 and "dv_read" not in sent, sent
    assert sent.count("dv_start") == 1, sent  # the stream never reached the server: the compare is started apart
    page.errors[:] = [e for e in page.errors if not any(m in e for m in ABORTED)]


# Marks each frame the page paints ("probe-frame"), each Gradio event it sends ("probe-join"), and the times the
# Compare player is drawn (its `data-frame`, set by every render of pair.js's dvPairRender) in `window.__renders`.
FRAMES_AND_JOINS = """() => { performance.clearMarks(); window.__renders = [];
  const frame = () => { performance.mark('probe-frame'); requestAnimationFrame(frame); }; requestAnimationFrame(frame);
  new MutationObserver((rs) => rs.forEach(() => window.__renders.push(performance.now())))
    .observe(document.querySelector('#dv-cmp-player'), {subtree: true, attributeFilter: ['data-frame']});
  const real = window.fetch;
  window.fetch = function (u, o) { if (String(u).includes('/queue/join')) performance.mark('probe-join');
    return real.apply(this, arguments); }; }"""


def test_a_lesson_s_heatmaps_are_painted_before_its_other_figures_and_those_before_its_event(page):
    """Both sides of a compare end in one answer: each side's finished canvas and both heatmaps in that task; the
    order and per-step figures, and the pair's player (both canvases in step: drawn once for the two, not once per
    side), once those are painted; the click's Gradio event once those are painted too (page.js drawCompareFigures,
    showPairSoon): the lesson's figures wait neither for the others nor for Gradio's work on the event."""
    wait_played_out(page)
    page.get_by_role("tab", name="Compare").click()
    page.wait_for_timeout(300)
    page.evaluate(FRAMES_AND_JOINS)
    page.locator("#dv-lesson-staged").click()
    page.wait_for_function("() => performance.getEntriesByName('probe-join').length > 0 && "
                           "document.querySelector('#dv-cmp-summary').innerText.length > 0", timeout=TIMEOUT_MS)
    marks: dict[str, list[float]] = {}
    for name, at in page.evaluate("() => performance.getEntriesByType('mark').map((m) => [m.name, m.startTime])"):
        marks.setdefault(name, []).append(at)
    heat, rest = marks["dv-drawn-heatmap"], marks["dv-drawn-compare"] + marks["dv-drawn-steps"]
    frames, join = marks["probe-frame"], min(marks["probe-join"])
    assert len(heat) == 2 and len(rest) == 3, marks.keys()
    assert any(max(heat) < f < min(rest) for f in frames)  # the heatmaps painted before the others are drawn
    assert any(max(rest) < f < join for f in frames)  # ... and those before Gradio's event leaves
    renders = [t for t in page.evaluate("() => window.__renders") if t < join]
    assert len(renders) == 1, renders  # the pair's player: both sides' canvases, drawn once
    assert any(max(heat) < f < renders[0] for f in frames)  # once the heatmaps are painted


def test_a_preset_after_the_threshold_schedule_enables_its_sliders(page):
    wait_played_out(page)
    page.locator("#dv-schedule input").click()
    page.locator("li[role=option][aria-label=threshold]").click()  # (the inspector's knob list has one too)
    page.wait_for_function("() => document.querySelector('#dv-knob-decay input[type=range]').disabled",
                           timeout=TIMEOUT_MS)
    page.get_by_role("button", name="balanced", exact=True).click()
    page.wait_for_function("() => !document.querySelector('#dv-knob-decay input[type=range]').disabled",
                           timeout=TIMEOUT_MS)


def test_the_opening_example_plays_on_through_a_switch_of_language(page):
    """A switch to 中文 while the opening example plays draws it again in Chinese and lets it play on from where it
    was (views.js dvShow: it stopped at the step it was on, step 0 of 6 where the switch came first)."""
    page.wait_for_function("() => window.__dv && window.__dv.playing && window.__dv.data && "
                           "window.__dv.frame < window.__dv.data.n", timeout=TIMEOUT_MS)
    page.get_by_text("中文", exact=True).click()
    page.wait_for_function("() => window.__dv.lang === 'zh' && /播放|暂停/.test(document.querySelector("
                           "'#dv-canvas .dv-player .dv-play').textContent)", timeout=TIMEOUT_MS)  # drawn in Chinese
    page.wait_for_function("() => { const r = document.querySelector('#dv-canvas .dv-player'), s = r.querySelector("
                           "'.dv-scrub'); return r.dataset.frame === s.max && "
                           "r.querySelector('.dv-play').textContent.includes('播放'); }", timeout=TIMEOUT_MS)


def test_the_chinese_page_shows_no_untranslated_english(page, tmp_path):
    page.get_by_text("中文", exact=True).click()
    page.wait_for_function("() => document.querySelector('#dv-canvas').innerText.includes('播放')", timeout=TIMEOUT_MS)
    # The whole page as a visitor sees it, the footer included (Gradio's own, in English, is hidden). The figures
    # are drawn again in Chinese after the canvas: on a loaded machine that takes more than a fixed wait.
    deadline = time.monotonic() + TIMEOUT_MS / 1000
    while True:
        text = page.evaluate("() => document.body.innerText")
        text = text.replace(page.evaluate(CANVAS_TEXT), " ")  # the model's own text
        # the models' names and prompts
        leaks = english_words(text) - {"tiny", "the", "cat", "dog", "big", "chars", "other"}
        if not leaks or time.monotonic() > deadline:
            break
        page.wait_for_timeout(200)
    assert leaks == set()
    assert unglossed(text) == []  # Shift, argmax, logits, distinct, 3-gram: each with a gloss in Chinese
    assert page.locator("#dv-footer").is_visible() and "API" in page.locator("#dv-footer").inner_text()
    assert page.evaluate(CACHE_FITS)  # the cache choice reads whole (issue 41 item 8)
    page.screenshot(path=str(tmp_path / "zh.png"), full_page=True)


TOP = "(sel) => Math.round(document.querySelector(sel).getBoundingClientRect().top + window.scrollY)"
CACHE_FITS = "() => { const i = document.querySelector('#dv-cache input'); return i.scrollWidth <= i.clientWidth + 1; }"
# Tokens of the canvas that its text box cuts: partly above its top or below its bottom edge.
CUT_LINES = """() => { const box = document.querySelector('#dv-canvas .dv-text'), b = box.getBoundingClientRect();
  return [...box.querySelectorAll('[data-pos]')].map((s) => [s.dataset.pos, s.getBoundingClientRect()])
    .filter(([, r]) => (r.top < b.top - 1 && r.bottom > b.top + 1) || (r.top < b.bottom - 1 && r.bottom > b.bottom + 1))
    .map(([p, r]) => [p, Math.round(r.top - b.top), Math.round(r.bottom - b.top), Math.round(b.height)]); }"""
# Each of the figure's parts inside what holds it: the title in the figure, the boxes in their cells,
# the order map's labels in theirs (cells placed from the figures' own layouts: views.js).
FITS = """() => { const heat = document.querySelector('#dv-heatmap .dv-fig'), fig = heat.getBoundingClientRect();
  const a = window.__dv.lib.dvArea(heat), L = heat.__dvFig.layout;
  const cell = Math.min(a.width / Math.abs(L.xaxis.range[1] - L.xaxis.range[0]),
    a.height / Math.abs(L.yaxis.range[0] - L.yaxis.range[1]));
  const c = heat.querySelector('canvas.dv-flat').getBoundingClientRect();  // the heatmap: plot2d.js's, its title's rows
  const rows = heat.__dvFlat.texts.filter((x) => x.title), tb = {left: c.left + Math.min(...rows.map((x) => x.left)),
    right: c.left + Math.max(...rows.map((x) => x.right))};
  const order = document.querySelector('#dv-order .dv-fig'), o = window.__dv.lib.dvArea(order),
    O = order.__dvFig.layout;
  const width = o.width / Math.abs(O.xaxis.range[1] - O.xaxis.range[0]);
  const oc = order.querySelector('canvas.dv-flat').getBoundingClientRect();  // plot2d.js's: its cells' texts
  const inside = order.__dvFlat.texts.filter((x) => x.cell).map((x) => ({left: oc.left + x.left,
    right: oc.left + x.right, top: oc.top + x.top, bottom: oc.top + x.bottom, width: x.right - x.left}))
    .filter((b) => b.width && b.left >= o.left && b.right <= o.right + 8 && b.top >= o.top && b.bottom <= o.bottom);
  return {title: rows.length > 0 && tb.left >= fig.left - 1 && tb.right <= fig.right + 1,
          marker: heat.data[1].marker.size <= cell,
          labels: inside.length > 0 && Math.max(...inside.map((b) => b.width)) <= width}; }"""


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_phone_layout_puts_the_first_things_to_try_on_the_first_two_screens(url, tmp_path, lang):
    with playwright.sync_playwright() as p:
        browser, page = open_page(p, url, width=390, height=844)
        try:
            wait_played_out(page)
            if lang == "zh":
                page.get_by_text("中文", exact=True).click()
                page.wait_for_function("() => document.querySelector('#dv-canvas').innerText.includes('播放')",
                                       timeout=TIMEOUT_MS)
            # Issue 41 item 7: every tab shows (none behind Gradio's "..." menu).
            tabs = page.evaluate("() => [...document.querySelectorAll('[role=tab]')].filter((b) => b.offsetParent)"
                                 ".map((b) => b.innerText.trim())")
            assert len(tabs) == 4 and t("tab_about", lang) in tabs, tabs
            assert page.evaluate(CACHE_FITS)  # the cache choice reads whole (issue 41 item 8)
            top = {name: page.evaluate(TOP, sel) for name, sel in (
                ("prompt", "#dv-prompt"), ("canvas", "#dv-canvas"), ("presets", "#dv-presets-article"),
                ("temperature", "#dv-temperature"), ("heatmap", "#dv-heatmap"))}
            bottom = page.evaluate("() => { const r = document.querySelector('#dv-temperature')"
                                   ".getBoundingClientRect(); return Math.round(r.bottom + window.scrollY); }")
            assert top["prompt"] < top["canvas"] < top["presets"] < top["temperature"] < top["heatmap"], top
            assert bottom <= 1700 and top["heatmap"] <= 2000, top  # two screens; the first figure soon after
            assert page.evaluate("() => document.documentElement.scrollWidth") <= 390 + 1
            page.wait_for_timeout(500)
            assert page.evaluate(FITS) == {"title": True, "marker": True, "labels": True}
            page.screenshot(path=str(tmp_path / f"phone-{lang}.png"), full_page=False)
            # The canvas on a long run: at every frame its box shows whole lines, none cut at its top or bottom.
            box = page.locator("#dv-gen-length input[type=number]")
            box.fill("240")
            box.press("Enter")
            page.wait_for_function("() => window.__dv.data && window.__dv.data.G === 240 && "
                                   "!document.querySelector('#dv-canvas .dv-live')", timeout=TIMEOUT_MS)
            page.locator("#dv-canvas .dv-text").scroll_into_view_if_needed()
            cut = []
            for frame in range(page.evaluate("() => window.__dv.data.n"), -1, -1):
                page.evaluate("(f) => window.__dv.lib.seek(f)", frame)
                cut += page.evaluate(CUT_LINES)
            assert cut == [], cut[:5]
            page.screenshot(path=str(tmp_path / f"phone-canvas-{lang}.png"), full_page=False)
            # The world model's example prompts (the longest) wrap inside the screen: none cut at its edge.
            page.locator("#dv-model input").click()
            page.get_by_role("option", name="world-mdlm", exact=True).click()
            page.wait_for_function("() => document.querySelectorAll('#dv-model-prompts .dv-chip').length === 4",
                                   timeout=TIMEOUT_MS)
            chips = page.evaluate("() => [...document.querySelectorAll('#dv-model-prompts .dv-chip')]"
                                  ".map((c) => { const r = c.getBoundingClientRect(); "
                                  "return [c.innerText, r.left, r.right, c.scrollWidth <= c.clientWidth + 1]; })")
            assert all(0 <= left and right <= 390 and whole for _, left, right, whole in chips), chips
            assert page.errors == []
        finally:
            browser.close()


def test_the_phone_layout_gives_compares_figures_their_width(url):
    """At 390 px Compare's two heatmaps and two per-step figures stand one above the other, each with a plot
    area (side by side, their margins left the heatmaps none); the lesson buttons stand on a grid, each wide
    enough for a few words and none over another (in one row, twelve were columns a few letters wide whose labels
    ran over each other)."""
    with playwright.sync_playwright() as p:
        browser, page = open_page(p, url, width=390, height=844)
        try:
            wait_played_out(page)
            page.get_by_role("tab", name="Compare").click()
            page.locator("#dv-lesson-polluted").click()
            figs = ("#dv-cmp-heat-a", "#dv-cmp-heat-b", "#dv-cmp-steps-a", "#dv-cmp-steps-b")
            # each figure's plot width: plotly's layout, or plot2d.js's (the heatmaps)
            page.wait_for_function("(s) => s.every((id) => { const e = document.querySelector(id + ' .dv-fig');"
                                   " return e && (e._fullLayout || e.__dvFlat); })", arg=list(figs), timeout=TIMEOUT_MS)
            page.wait_for_timeout(300)
            plots = page.evaluate("(s) => s.map((id) => { const e = document.querySelector(id + ' .dv-fig'),"
                                  " r = e.getBoundingClientRect(), w = e._fullLayout ? e._fullLayout._size.w"
                                  " : e.__dvFlat.box.w; return [w, r.left, r.right]; })", list(figs))
            assert all(w >= 120 and left >= 0 and right <= 390 + 1 for w, left, right in plots), plots
            boxes = page.evaluate("() => [...document.querySelectorAll('.dv-lesson-buttons button')].map((b) => {"
                                  " const r = b.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom,"
                                  " b.scrollWidth <= b.clientWidth + 1]; })")
            assert len(boxes) >= 2 and all(r - left >= 120 and left >= 0 and r <= 390 + 1 and fits
                                           for left, _, r, _, fits in boxes), boxes
            apart = [not (a[0] < b[2] - 1 and b[0] < a[2] - 1 and a[1] < b[3] - 1 and b[1] < a[3] - 1)
                     for i, a in enumerate(boxes) for b in boxes[i + 1:]]
            assert all(apart), boxes
            assert page.evaluate("() => document.documentElement.scrollWidth") <= 390 + 1
            assert page.errors == []
        finally:
            browser.close()


def test_a_no_effect_banner_opens_its_compare_lesson(page, served):
    from dllm_viz.studies.lessons import LESSONS

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


def test_a_position_selected_on_an_uploaded_trace_before_its_event_answers_stays_selected(page, tmp_path, monkeypatch):
    """The page shows an uploaded trace as soon as the server has parsed it, before Gradio's answer to the upload
    (start.js `__dvNewUpload`), with the first position selected; a position the visitor selects in between stays
    selected when that answer comes with the same cursor (page.js showDone)."""
    from dllm_viz import DecodeConfig, decode
    from dllm_viz.app.handlers import entry, play
    from tests.ui_model import make_text_model

    answered: list[float] = []

    def late(entries) -> None:  # the upload's answer held back a while after the page drew the trace
        entry.settle(entries)
        time.sleep(1.5)
        answered.append(time.monotonic())

    monkeypatch.setattr(play, "settle", late)
    wait_played_out(page)
    trace = decode(make_text_model(), ["the cat "], DecodeConfig.preset("balanced", 32, seed=5))[0]
    path = tmp_path / "upload.json"
    path.write_text(trace.to_json(), encoding="utf-8")
    old = page.evaluate(CANVAS_TEXT)
    page.locator("input[type=file]").first.set_input_files(str(path))
    page.wait_for_function(f"(old) => ({CANVAS_TEXT})() !== old && document.querySelector('#dv-inspector h4')"
                           ".textContent.includes('position 0')", arg=old, timeout=TIMEOUT_MS)
    page.locator('#dv-canvas [data-pos="5"]').click()
    page.wait_for_function("() => document.querySelector('#dv-inspector h4').textContent.includes('position 5')",
                           timeout=TIMEOUT_MS)
    assert answered == []  # selected before the answer came
    deadline = time.monotonic() + 30
    while not answered and time.monotonic() < deadline:
        page.wait_for_timeout(100)
    page.wait_for_timeout(800)  # the answer reaches the page and is applied
    assert answered and "position 5" in page.locator("#dv-inspector h4").inner_text()


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
        page.wait_for_function("() => document.querySelector('#dv-inspector h4')"
                               f".textContent.includes('position {pos}')",
                               timeout=TIMEOUT_MS)
    page.wait_for_timeout(1000)  # let any image the page would load start loading
    # A malformed trace whose message echoes the markup: the error toast shows it as text.
    d["config"]["schedule"] = evil[0]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(d), encoding="utf-8")
    page.locator("input[type=file]").first.set_input_files(str(bad))
    page.wait_for_function("(s) => [...document.querySelectorAll('[data-testid=toast-text]')]"
                           ".some((e) => e.textContent.includes(s))",
                           arg="schedule=", timeout=TIMEOUT_MS)
    page.wait_for_timeout(1000)
    images = page.evaluate("() => [...document.querySelectorAll('img, image, a[href]')]"
                           ".map((e) => e.src || e.href || e.getAttribute('href'))")
    assert not [u for u in page.requests if host in u], [u for u in page.requests if host in u]
    assert not [u for u in images if u and host in str(u)]


def test_your_own_prompt_in_one_step(page, served):
    calls = served[0].decode_calls
    wait_played_out(page)
    prompt, run = page.locator("#dv-prompt textarea"), page.locator("#dv-run")
    p, r = prompt.bounding_box(), run.bounding_box()
    assert r["y"] < 900 and r["y"] < p["y"] + p["height"] and p["y"] < r["y"] + r["height"]  # Run beside the prompt
    page.wait_for_timeout(300)
    before = len(calls)
    prompt.fill("ab")
    prompt.press("Shift+Enter")  # a new line, no run
    prompt.type("c")
    page.wait_for_timeout(500)
    assert prompt.input_value() == "ab\nc" and len(calls) == before
    prompt.press("Enter")  # runs
    page.wait_for_function("() => window.__dv.data && window.__dv.data.prompt === 'ab\\nc'", timeout=TIMEOUT_MS)
    page.wait_for_timeout(300)
    assert len(calls) == before + 1
    # An example prompt of the model, in the header: into the box, and run (one decode).
    page.locator('#dv-model-prompts .dv-chip[data-prompt="a dog "]').click()
    page.wait_for_function("() => window.__dv.data && window.__dv.data.prompt === 'a dog '", timeout=TIMEOUT_MS)
    page.wait_for_timeout(300)
    assert prompt.input_value() == "a dog " and len(calls) == before + 2


def test_a_compare_error_names_its_side_and_leaves_nothing_stale(page, served):
    wait_played_out(page)
    page.get_by_role("tab", name="Compare").click()
    page.locator("#dv-lesson-polluted").click()
    page.wait_for_selector("#dv-cmp-canvas-a .dv-tok", timeout=TIMEOUT_MS)
    page.wait_for_timeout(500)
    editor = page.locator("#dv-cmp-b .cm-content")
    editor.click()
    page.keyboard.press("Control+A")
    page.keyboard.type('{"temperature": "hot"}')
    page.locator("#dv-compare-run").click()
    toast = page.locator(".toast-body")
    toast.first.wait_for(timeout=TIMEOUT_MS)
    assert "config B" in toast.first.inner_text() and "temperature" in toast.first.inner_text()
    # The stale pair is gone and nothing stays dimmed.
    page.wait_for_function("() => !document.querySelector('#dv-cmp-canvas-a .dv-tok')", timeout=TIMEOUT_MS)
    page.wait_for_timeout(500)
    assert page.locator(".dv-busy").count() == 0
    page.errors[:] = [e for e in page.errors if "hot" not in e]  # the error the test asked for


# The words an error toast is headed with, as shown: Gradio's text, or the page's language's in its place.
TOAST_HEADING = """() => { const e = document.querySelector('.toast-title');
  const b = getComputedStyle(e, '::before').content, hidden = getComputedStyle(e).fontSize === '0px';
  return b && b !== 'none' && b !== 'normal' && hidden ? JSON.parse(b) : e.textContent.trim(); }"""


@pytest.mark.parametrize("lang, says", [("en", "seed=-1 is invalid: expected an integer in [0, "),
                                        ("zh", "seed=-1 无效：应为 [0, ")])
def test_a_bad_value_shows_one_error_in_the_page_s_language_and_the_session_goes_on(page, served, lang, says):
    """A seed of -1, then a gen length slider's release: the release decodes and redraws its k line (two
    events that read the seed). One error shows, once, in the page's language (Gradio's own check of the
    box's bounds refused it in English, once per event: two toasts); the widgets go back to the trace on
    show, and the next release decodes."""
    demo = served[0]
    wait_played_out(page)
    if lang == "zh":
        page.get_by_text("中文", exact=True).click()
        page.wait_for_function("() => document.querySelector('#dv-canvas').innerText.includes('播放')",
                               timeout=TIMEOUT_MS)
    seed = page.locator("#dv-seed input")
    shown_seed = seed.input_value()
    seed.click()
    page.keyboard.press("Control+A")
    page.keyboard.type("-1")
    page.keyboard.press("Tab")  # typed, not submitted: the next decode reads it
    calls = len(demo.decode_calls)
    release(page, "dv-gen-length", 0.3)
    texts = page.locator("[data-testid=toast-text]")
    texts.first.wait_for(timeout=TIMEOUT_MS)
    page.wait_for_timeout(1500)  # every event of the release has answered
    assert [e.strip() for e in texts.all_inner_texts()] == [texts.first.inner_text().strip()]
    assert says in texts.first.inner_text() and page.locator(".toast-body").count() == 1
    assert page.evaluate(TOAST_HEADING) == t("err_title", lang)  # its heading too, not Gradio's English one
    assert len(demo.decode_calls) == calls  # nothing decoded with it
    page.wait_for_function("(s) => document.querySelector('#dv-seed input').value === s", arg=shown_seed,
                           timeout=TIMEOUT_MS)  # the widgets went back to the trace on show
    page.locator("[data-testid=toast-close]").first.click()
    text0 = page.evaluate(CANVAS_TEXT)
    release(page, "dv-temperature", 0.8)
    page.wait_for_function(f"(old) => ({CANVAS_TEXT})() !== old", arg=text0, timeout=TIMEOUT_MS)
    page.wait_for_timeout(500)
    assert len(demo.decode_calls) == calls + 1 and page.locator(".toast-body").count() == 0
    page.errors[:] = [e for e in page.errors if "seed" not in e]  # the error the test asked for


def test_the_stage_sliders_are_live_only_with_staged_temperature(page):
    wait_played_out(page)
    early = "() => document.querySelector('#dv-t-early input[type=range]').disabled"
    assert page.evaluate(early)
    page.get_by_text("staged temperature", exact=True).click()
    page.wait_for_function(f"() => !({early})()", timeout=TIMEOUT_MS)


# Whether a character has a glyph in the page's fonts: drawn, it differs from a character no font has.
HAS_GLYPH = """(ch) => { const c = document.createElement('canvas'); c.width = 40; c.height = 40;
  const font = getComputedStyle(document.querySelector('#dv-canvas .dv-play')).fontFamily;
  const draw = (s) => { const g = c.getContext('2d'); g.clearRect(0, 0, 40, 40); g.font = '24px ' + font;
    g.fillText(s, 4, 30); return Array.from(g.getImageData(0, 0, 40, 40).data).join(','); };
  return draw(ch) !== draw('\\u{10FFFD}'); }"""


def test_every_symbol_of_the_player_is_drawn_by_a_font(page):
    symbols = set(page.evaluate("() => [...document.querySelectorAll('#dv-canvas .dv-controls button')]"
                                ".map((b) => b.textContent).join('') "
                                "+ window.__dv.data.t.pause + window.__dv.data.t.play"))
    symbols = {ch for ch in symbols if ord(ch) > 0x2000}
    assert symbols and {ch for ch in symbols if not page.evaluate(HAS_GLYPH, ch)} == set()
    assert not page.evaluate(HAS_GLYPH, "\u23f8")  # the check sees a missing glyph: the old pause sign


def test_the_page_has_one_kind_of_question_mark(page):
    # "?" opens the help of the view next to it, and nothing else is labelled "?" (the tour has its name).
    labels = page.evaluate("() => [...document.querySelectorAll('button, summary')].filter((b) => b.offsetParent)"
                           ".filter((b) => b.textContent.trim() === '?').map((b) => b.tagName)")
    assert labels and set(labels) == {"SUMMARY"}


def test_the_newest_tokens_stay_in_view_on_a_long_canvas(page):
    wait_played_out(page)
    box = page.locator("#dv-gen-length input[type=number]")
    box.fill("240")
    box.press("Enter")
    page.wait_for_function("() => window.__dv.data && window.__dv.data.G === 240", timeout=TIMEOUT_MS)
    n = page.evaluate("() => window.__dv.data.n")
    page.locator("#dv-canvas .dv-first").click()
    hidden = []
    for f in range(1, n + 1):
        page.locator("#dv-canvas .dv-next").click()
        seen = page.evaluate("""() => {
            const box = document.querySelector('#dv-canvas .dv-text').getBoundingClientRect();
            return [...document.querySelectorAll('#dv-canvas .dv-new')].some((s) => {
              const r = s.getBoundingClientRect();
              return r.top >= box.top - 1 && r.bottom <= box.bottom + 1; }); }""")
        if not seen:
            hidden.append(f)
    assert hidden == []


# Counts the animation frames the page asks for (installed before any script of the page: every ask passes here).
COUNT_FRAMES = """(() => { const ask = window.requestAnimationFrame; window.__frames = 0;
  window.requestAnimationFrame = function (callback) { window.__frames += 1; return ask.call(window, callback); };
})()"""


def test_an_idle_page_asks_for_no_frame(url):
    """Gradio's loader ("Loading...") leaves a timer behind that asked for a frame every 16 ms for as long as the
    page was open (app/web/early.js keeps it from starting): once the opening example has played, the page asks for
    none while nobody touches it."""
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1440, "height": 900})
            page.add_init_script(COUNT_FRAMES)
            page.add_init_script("localStorage.setItem('dv-tour', 'done')")
            page.goto(url)
            page.wait_for_selector("#dv-heatmap .dv-fig", state="attached", timeout=TIMEOUT_MS)
            wait_played_out(page)
            page.wait_for_timeout(1000)  # plotly's deferred resizes, the figures' cursors
            asked = page.evaluate("() => window.__frames")
            page.wait_for_timeout(1000)
            assert asked > 0 and page.evaluate("() => window.__frames") == asked
        finally:
            browser.close()


LIVE = "() => { const r = document.querySelector('#dv-canvas .dv-live'); return r ? Number(r.dataset.steps) : 0; }"


CANVAS_HEIGHT = "() => document.querySelector('#dv-canvas').getBoundingClientRect().height"


@pytest.mark.parametrize("width", [1440, 390])
def test_the_page_below_the_canvas_stays_put_as_a_decode_starts_and_ends(url, served, width):
    """A decode's live controls (its bar and Stop) stand as tall as the player's buttons and scrubber (views.js
    `__dvControlsPx`; on a phone those wrap into two rows): the canvas keeps its height from the player to the live
    decode and back, so nothing below it moves (it moved 9 px, 44 px on a phone, twice a decode)."""
    demo = served[0]
    with playwright.sync_playwright() as p:
        browser, page = open_page(p, url, width=width, height=844)
        try:
            wait_played_out(page)
            page.wait_for_timeout(300)
            before = page.evaluate(CANVAS_HEIGHT)
            demo.hold[0] = 1
            demo.gate.clear()
            try:
                release(page, "dv-temperature", 0.8)
                page.wait_for_function(f"() => ({LIVE})() === 2", timeout=TIMEOUT_MS)  # held after its 2nd step
                live = page.evaluate(CANVAS_HEIGHT)
            finally:
                demo.hold[0] = None
                demo.gate.set()
            page.wait_for_function("() => !document.querySelector('#dv-canvas .dv-live')", timeout=TIMEOUT_MS)
            after = page.evaluate(CANVAS_HEIGHT)
            assert page.errors == []
        finally:
            browser.close()
    assert abs(live - before) < 0.5 and abs(after - before) < 0.5, (before, live, after)


# The heights of both Compare sides and the pair's player at every change of theirs, with whether a side is still
# decoding (queued or live), from the click on: `window.__tall`, rows [a, b, player, decoding].
TALL = """() => { window.__tall = []; const ids = ['dv-cmp-canvas-a', 'dv-cmp-canvas-b', 'dv-cmp-player'];
  const row = () => [...ids.map((id) => document.getElementById(id).getBoundingClientRect().height),
                     !!document.querySelector('#dv-cmp-canvas-a .dv-live, #dv-cmp-canvas-b .dv-live')];
  const seen = () => window.__tall.push(row()); seen();
  const watch = new MutationObserver(seen);
  ids.forEach((id) => watch.observe(document.getElementById(id), {subtree: true, childList: true, attributes: true}));
  return row(); }"""


def test_a_compare_after_another_stands_as_tall_until_it_is_drawn(page):
    """A new compare's sides and its player hold the height the last compare ended at until they are drawn
    (pair.js `dvHoldHeight`): the page below does not jump up at the click (the sides had fallen to their
    status line, 343 -> 66 px, the player to nothing) and down again at the first step."""
    wait_played_out(page)
    page.get_by_role("tab", name="Compare").click()
    summary = "() => document.querySelector('#dv-cmp-summary').innerText"
    page.locator("#dv-lesson-staged").click()
    page.wait_for_function(f"() => ({summary})().length > 0", timeout=TIMEOUT_MS)
    page.wait_for_timeout(300)
    before = page.evaluate(TALL)
    assert min(before[:3]) > 40, before  # both sides and the player drawn
    page.locator("#dv-lesson-polluted").click()
    page.wait_for_function(f"(s) => ({summary})() !== s", arg=page.evaluate(summary), timeout=TIMEOUT_MS)
    rows = page.evaluate("() => window.__tall")
    decoding = [r for r in rows if r[3]]
    assert decoding, rows  # the sides were seen decoding
    for row in decoding:
        assert all(h >= b - 0.5 for h, b in zip(row[:3], before[:3])), (before, row)
    assert page.errors == []


def test_a_decode_paints_its_steps_as_they_come_and_stops(page, served):
    # LLaDA's rule confirms one position per step: 32 steps. The test holds the decode after its
    # step 6 (the runner waits there: tests/ui_model.py), so the page is seen mid-decode: the steps
    # so far painted, a bar of steps done against planned, and Stop, which ends the decode at its
    # next step and brings back the trace on show with its settings.
    demo = served[0]
    wait_played_out(page)
    steps = demo.decode_steps
    demo.hold[0] = 6
    demo.gate.clear()
    try:
        page.get_by_role("button", name="LLaDA as shipped", exact=True).click()
        page.wait_for_function(f"() => ({LIVE})() === 7", timeout=TIMEOUT_MS)  # steps 1..7 painted (0-based 6)
        status = page.locator("#dv-canvas .dv-live .dv-status").inner_text()
        assert status.startswith("computing: step 7 of 32 planned")
        width = page.evaluate("() => parseFloat(document.querySelector('#dv-canvas .dv-progress i').style.width)")
        assert abs(width - 100 * 7 / 32) < 0.1
        assert page.locator("#dv-canvas .dv-live .dv-text .dv-tok").count() == 7  # one confirmed per step, painted
        ran = len(steps)
        page.locator("#dv-canvas .dv-live .dv-stop").click()
        page.wait_for_timeout(300)
    finally:
        demo.hold[0] = None
        demo.gate.set()  # the held step ends; the next one raises (stopped)
    page.wait_for_function("() => !document.querySelector('#dv-canvas .dv-live') && window.__dv.data.n === 6",
                           timeout=TIMEOUT_MS)  # the example's run is back
    page.wait_for_timeout(1000)
    assert len(steps) - ran <= 2  # the other request of its batch may finish the step in progress; no more
    assert "Stopped" in page.locator("#dv-banner").inner_text()
    page.wait_for_function("() => document.querySelector('#dv-preset-badge').innerText.trim() === "
                           "'active preset: balanced'", timeout=TIMEOUT_MS)  # its settings came back


CMP_STOP = "#dv-cmp-canvas-a .dv-live .dv-stop"


def test_a_compare_stops_shows_it_stopped_and_the_next_lesson_runs(page, served):
    # A lesson's compare held after its step 3 (tests/ui_model.py): its live sides show the Playground's bar
    # and Stop; Stop ends it at its next step and the tab shows an empty pair under a banner; the next click
    # decodes one compare, to its end.
    from dllm_viz.studies.lessons import LESSONS

    demo = served[0]
    calls, steps = demo.decode_calls, demo.decode_steps
    wait_played_out(page)
    page.get_by_role("tab", name="Compare").click()
    held = 3
    demo.hold[0] = held
    demo.gate.clear()
    try:
        before, made = len(calls), len(steps)
        page.locator("#dv-lesson-shipped_llada").click()
        page.wait_for_selector(CMP_STOP, timeout=TIMEOUT_MS)
        assert page.locator("#dv-cmp-canvas-b .dv-live .dv-stop").inner_text() == "■ Stop"
        assert page.locator("#dv-cmp-canvas-a .dv-live .dv-progress").count() == 1
        deadline = time.monotonic() + TIMEOUT_MS / 1000  # Stop shows at the first step: the decode reaches its held
        while held not in steps[made:] and time.monotonic() < deadline:  # step later (on a busy machine, steps later)
            time.sleep(0.01)
        ran = len(steps)
        page.locator(CMP_STOP).click()
        page.wait_for_timeout(300)
    finally:
        demo.hold[0] = None
        demo.gate.set()
    page.wait_for_function("(t) => document.querySelector('#dv-cmp-summary').innerText.includes(t) && "
                           "!document.querySelector('#dv-cmp-canvas-a .dv-canvas') && "
                           "!document.querySelector('.dv-busy')", arg=t("cmp_stopped", "en")[:36], timeout=TIMEOUT_MS)
    assert len(calls) - before == 1 and len(steps) - ran <= 4, (len(calls) - before, steps[made:], ran - made)
    # (each side may finish the step in progress; no more)
    page.wait_for_timeout(1500)  # the click's event (held in the page while its pair was drawn) has ended too
    assert t("cmp_stopped", "en")[:36] in page.locator("#dv-cmp-summary").inner_text()
    assert "fixed_steps" in page.locator("#dv-cmp-a .cm-content").inner_text()  # the configs asked stay
    assert LESSONS["shipped_llada"].text("title", "en") in page.locator("#dv-lesson-text").inner_text()
    before = len(calls)
    page.locator("#dv-lesson-shipped_llada").click()
    page.wait_for_function("() => document.querySelector('#dv-cmp-summary').innerText.startsWith('Steps: A') && "
                           "!!document.querySelector('#dv-cmp-heat-b .dv-fig') && "
                           "!document.querySelector('#dv-cmp-canvas-a .dv-live')", timeout=TIMEOUT_MS)
    page.wait_for_timeout(300)
    assert len(calls) - before == 1 and page.locator(".dv-busy").count() == 0


INSPECTOR = "() => document.querySelector('#dv-inspector').innerText"


def view_of(page) -> dict:
    """What a visitor sees of the trace on show: its text at the step on show, the step, the selection,
    the inspector."""
    return {"text": page.evaluate(CANVAS_TEXT), "frame": page.evaluate(FRAME), "pos": page.evaluate(SELECTED),
            "inspector": page.evaluate(INSPECTOR),
            "temperature": page.locator("#dv-temperature input[type=number]").input_value(),
            "model": page.locator("#dv-model input").input_value(), "n": page.evaluate("() => window.__dv.data.n")}


def test_a_copied_link_reopens_the_same_trace_and_view(page, url, served):
    wait_played_out(page)
    page.get_by_role("button", name="quality", exact=True).click()  # a decode: the trace on show is not the example
    page.wait_for_function("() => window.__dv.data && window.__dv.data.n > 6 && !document.querySelector('.dv-live')",
                           timeout=TIMEOUT_MS)
    page.locator('#dv-canvas [data-pos="7"]').click()
    page.locator("#dv-canvas .dv-scrub").fill("3")
    page.locator("#dv-link-box button.dv-link").click()
    link = page.evaluate("() => window.__dv.lastLink")
    assert "step=3" in link and "pos=7" in link and page.evaluate("() => location.href") == link
    seen = view_of(page)
    calls = len(served[0].decode_calls)
    other = new_page(page.context.browser, link)  # a new tab
    try:
        other.wait_for_function("() => window.__dv.data && window.__dv.data.n === %d && "
                                "!document.querySelector('#dv-canvas .dv-live')" % seen["n"], timeout=TIMEOUT_MS)
        other.wait_for_function(f"() => ({SELECTED})() === 7", timeout=TIMEOUT_MS)
        assert view_of(other) == seen  # the same trace (decoding is deterministic), step, position, settings
        assert len(served[0].decode_calls) == calls + 1  # one decode opened it
        assert other.evaluate("() => window.__dv.playing") is False  # no example played over it
        assert other.errors == []
    finally:
        other.close()


MASKED_AT = """(f) => { const d = window.__dv.data;
  for (let p = 0; p < d.G; p++) { const st = window.__dv.lib.dvState(d, p, f); if (!st || st.taken) return p; }
  return -1; }"""


def test_the_inspectors_fork_is_shown_and_a_copied_link_reopens_the_fork(page, served):
    """A fork button of the inspector (a candidate of a position still masked on the canvas on show): the fork is on
    show, the position it changed selected, its fork point in the banner and the facts; a copied link reopens the
    fork itself (its decode, then its fork made again); a fork the server refuses is one error, the trace stays."""
    wait_played_out(page)
    ref, f = page.evaluate("() => window.__dv.shownRef"), 2
    pos = page.evaluate(MASKED_AT, f)
    page.evaluate("([f, p]) => window.__dv.select(f, p)", [f, pos])
    page.locator("#dv-inspector .dv-insp-row button.dv-insp-fork").nth(1).click()
    page.wait_for_function("(r) => window.__dv.shownRef !== r && window.__dv.data && !window.__dv.data.live && "
                           "window.__dv.data.forks.length === 1", arg=ref, timeout=TIMEOUT_MS)
    assert page.evaluate(SELECTED) == pos and page.evaluate("() => window.__dv.data.forks[0].step") == f
    page.wait_for_function("() => document.querySelector('#dv-banner').innerText.includes('Forked after step 2')",
                           timeout=TIMEOUT_MS)
    assert t("f_forked", "en") in page.inner_text("#dv-views-facts")
    forked = page.evaluate("() => window.__dv.shownRef")
    page.locator("#dv-banner a[href='#dv-open-fork-pair']").click()  # the fork beside the trace it left
    page.wait_for_function("([a, b]) => { const s = (x) => document.querySelector(`[data-dv-side=\"${x}\"]`);"
                           " return s('a') && s('a').__dvRef === a && s('b') && s('b').__dvRef === b && "
                           "!!document.querySelector('#dv-cmp-steps-b .dv-fig'); }", arg=[ref, forked],
                           timeout=TIMEOUT_MS)
    assert "A fork beside the trace it left" in page.inner_text("#dv-tab-compare")
    page.locator("#dv-link-box button.dv-link").click()  # Compare's link names the pair: it reopens beside the parent
    paired = page.evaluate("() => window.__dv.lastLink")
    assert "tab=compare" in paired and "pair=fork" in paired and "forks=" in paired and "lesson=" not in paired
    other = new_page(page.context.browser, paired)
    try:
        other.wait_for_function("() => { const s = (x) => document.querySelector(`[data-dv-side=\"${x}\"]`);"
                                " const d = window.__dv.data; return d && !d.live && d.forks && d.forks.length === 1"
                                " && s('b') && s('b').__dvRef === window.__dv.shownRef && s('a') && s('a').__dvRef"
                                " && s('a').__dvRef !== s('b').__dvRef; }", timeout=TIMEOUT_MS)
        assert "A fork beside the trace it left" in other.inner_text("#dv-tab-compare") and other.errors == []
    finally:
        other.close()
    page.locator("button[role=tab]", has_text="Playground").first.click()
    page.locator("#dv-link-box button.dv-link").click()
    link = page.evaluate("() => window.__dv.lastLink")
    assert "forks=" in link
    seen = view_of(page)
    other = new_page(page.context.browser, link)
    try:
        other.wait_for_function("(n) => window.__dv.data && window.__dv.data.n === n && window.__dv.data.forks && "
                                "window.__dv.data.forks.length === 1 && !document.querySelector('#dv-canvas .dv-live')",
                                arg=seen["n"], timeout=TIMEOUT_MS)
        other.wait_for_function(f"(p) => ({SELECTED})() === p", arg=pos, timeout=TIMEOUT_MS)
        assert view_of(other) == seen and other.errors == []
    finally:
        other.close()
    shown = page.evaluate("() => window.__dv.shownRef")
    page.evaluate("() => window.__dv.options.onFork({step: 999, remask: [0]})")  # a change the server refuses
    toast = page.locator("[data-testid=toast-text]")
    toast.first.wait_for(timeout=TIMEOUT_MS)
    assert "step=999 is invalid" in toast.first.inner_text() and page.locator(".toast-body").count() == 1
    page.wait_for_timeout(500)
    assert page.evaluate("() => window.__dv.shownRef") == shown
    page.errors[:] = [e for e in page.errors if "step=999" not in e]  # the error the test asked for


def fork_by_switch(page, knob: str, text: str, value) -> None:
    """Forks the trace on show by the inspector's settings row at step 2 (position 0 selected): `knob` is the knob it
    picks, `text` is typed, then fork. Waits for the fork on show, checks its fork point (as its link replays it: the
    page's own `forks` are the points that change the canvas, none here) and that the banner names the knob."""
    ref = page.evaluate("() => window.__dv.shownRef")
    page.evaluate("() => { window.__dv.stop(); window.__dv.select(2, 0); }")
    row = page.locator("#dv-inspector .dv-insp-switch")
    assert row.locator("select").input_value() == knob
    row.locator("input").fill(text)
    row.locator("button").click()
    page.wait_for_function("(r) => { const d = window.__dv.data; return window.__dv.shownRef !== r && d && !d.live && "
                           "d.link && d.link.forks && d.link.forks.length === 1; }", arg=ref, timeout=TIMEOUT_MS)
    assert page.evaluate("() => window.__dv.data.link.forks[0]") == {"step": 2, "force": [], "remask": [],
                                                                     "knobs": {knob: value}}
    page.wait_for_function("(k) => document.querySelector('#dv-banner').innerText.includes(k)", arg=knob,
                           timeout=TIMEOUT_MS)


def test_the_inspectors_switch_row_forks_with_a_setting_changed(page, served):
    """The inspector's last row forks the trace on show from the step on show with one setting changed: the fork is on
    show with that fork point (its knobs), the banner names the setting; a value the server refuses is one error."""
    wait_played_out(page)
    fork_by_switch(page, "temperature", "0", 0)
    row = page.locator("#dv-inspector .dv-insp-switch")
    shown = page.evaluate("() => window.__dv.shownRef")
    page.evaluate("() => window.__dv.select(2, 0)")
    row.locator("input").fill("-3")
    row.locator("input").press("Enter")
    toast = page.locator("[data-testid=toast-text]")
    toast.first.wait_for(timeout=TIMEOUT_MS)
    assert "temperature=-3 is invalid" in toast.first.inner_text()
    page.wait_for_timeout(300)
    assert page.evaluate("() => window.__dv.shownRef") == shown
    page.errors[:] = [e for e in page.errors if "temperature=-3" not in e]  # the error the test asked for


# The step of Compare's player and of its two side canvases.
PAIR_AT = """() => ['#dv-cmp-player .dv-pair', '#dv-cmp-canvas-a .dv-canvas', '#dv-cmp-canvas-b .dv-canvas']
  .map((sel) => { const el = document.querySelector(sel); return el ? el.dataset.frame || null : null; })"""


def test_a_link_of_a_lesson_reopens_it_at_its_step(page, served):
    wait_played_out(page)
    page.get_by_role("tab", name="Compare").click()
    page.locator("#dv-lesson-rng").click()
    page.wait_for_function("() => document.querySelector('#dv-cmp-summary').innerText.startsWith('Steps:')",
                           timeout=TIMEOUT_MS)  # the summary itself, not a progress note in its place
    summary = page.locator("#dv-cmp-summary").inner_text()
    # Compare in step: one player moves both sides; the link carries its step (cmp_step) and reopens there.
    page.wait_for_selector("#dv-cmp-player .dv-first", timeout=TIMEOUT_MS)
    page.locator("#dv-cmp-player .dv-first").click()
    page.locator("#dv-cmp-player .dv-next").click()
    page.locator("#dv-cmp-player .dv-next").click()
    assert page.evaluate(PAIR_AT) == ["2", "2", "2"]
    marked = page.evaluate("() => document.querySelector('#dv-cmp-player .dv-pair').dataset.marked")
    page.locator("#dv-link-box button.dv-link").click()
    link = page.evaluate("() => window.__dv.lastLink")
    assert "tab=compare" in link and "lesson=rng" in link and "cmp_step=2" in link
    other = new_page(page.context.browser, link)  # a new tab
    try:
        other.wait_for_function("(s) => document.querySelector('#dv-cmp-summary').innerText === s", arg=summary,
                                timeout=TIMEOUT_MS)
        assert other.locator("#dv-lesson-text").is_visible()  # the Compare tab is the one on show
        other.wait_for_function(f"() => ({PAIR_AT})().join() === '2,2,2'", timeout=TIMEOUT_MS)
        assert other.evaluate("() => document.querySelector('#dv-cmp-player .dv-pair').dataset.marked") == marked
        assert other.errors == []
    finally:
        other.close()


RING_OFF = """(sel) => { const t = document.querySelector(sel).getBoundingClientRect(),
  r = document.querySelector('.dv-tour-ring').getBoundingClientRect();
  return Math.max(Math.abs(r.top + 4 - t.top), Math.abs(r.left + 4 - t.left)); }"""


def test_the_walkthrough_follows_the_page_keeps_its_clicks_and_stays_on_the_playground(url):
    with playwright.sync_playwright() as p:
        browser, page = open_page(p, url, tour=True)
        try:
            page.wait_for_selector(".dv-tour", timeout=TIMEOUT_MS)
            assert page.evaluate(RING_OFF, "#dv-canvas .dv-text") < 2
            page.mouse.wheel(0, 300)  # the page scrolls: the ring stays on its target
            page.wait_for_function(f"() => ({RING_OFF})('#dv-canvas .dv-text') < 2", timeout=5_000)
            # The card lies over the heatmap: a click on Skip is the tour's, not the figure's.
            page.locator(".dv-tour-next").click()
            page.locator(".dv-tour-next").click()  # step 3: the heatmap
            heat = page.evaluate(AREA, "dv-heatmap")
            page.evaluate("([x, y]) => { const c = document.querySelector('.dv-tour'); c.style.left = x + 'px'; "
                          "c.style.top = y + 'px'; }", [heat["x"] + 10, heat["y"] + 10])
            before = [page.evaluate(FRAME), page.evaluate(SELECTED), page.evaluate("() => window.__dv.playing")]
            skip = page.locator(".dv-tour-skip").bounding_box()
            page.mouse.click(skip["x"] + skip["width"] / 2, skip["y"] + skip["height"] / 2)
            assert page.locator(".dv-tour").count() == 0
            after = [page.evaluate(FRAME), page.evaluate(SELECTED), page.evaluate("() => window.__dv.playing")]
            assert after[1] == before[1] and (after[0] == before[0] or before[2])  # no cell was selected
            # Started again, it closes when another tab is shown, and does not start on one.
            page.locator("#dv-canvas .dv-tour-start").click()
            page.wait_for_selector(".dv-tour", timeout=TIMEOUT_MS)
            page.get_by_role("tab", name="Compare").click()
            page.wait_for_function("() => !document.querySelector('.dv-tour')", timeout=5_000)
            assert page.errors == []
        finally:
            browser.close()


def test_scrubbing_across_a_take_back_brings_the_mask_back_and_forth(page, tmp_path):
    """Issue 28 item 5: a trace whose rule took a token back (ReMDM on the world model), uploaded and
    scrubbed with the arrow keys across that step: the token shows, then the mask returns, then the
    token again; the canvas is the trace's canvas at each frame."""
    from dllm_viz import DecodeConfig, decode, load_model
    from dllm_viz.core.analysis import piece

    wait_played_out(page)
    tr = decode(load_model("world"), ["Tom Lopez of"], DecodeConfig.preset("remdm", 32, seed=1))[0]
    pos, f = next((p, g) for g in range(2, len(tr.steps) + 1)
                  for p, (a, b) in enumerate(zip(tr.canvas_at(g - 2), tr.canvas_at(g - 1)))
                  if a is not None and b is None)
    path = tmp_path / "remdm.json"
    path.write_text(tr.to_json(), encoding="utf-8")
    page.locator("input[type=file]").first.set_input_files(str(path))
    page.wait_for_function("(n) => document.querySelector('#dv-canvas .dv-scrub').max === String(n)",
                           arg=len(tr.steps), timeout=TIMEOUT_MS)
    wait_played_out(page)
    span = page.locator(f'#dv-canvas [data-pos="{pos}"]')
    page.locator("#dv-canvas .dv-first").click()
    page.locator("body").click(position={"x": 5, "y": 5})
    for _ in range(f - 1):
        page.keyboard.press("ArrowRight")
    token = piece(tr, tr.canvas_at(f - 2)[pos])
    for frame in (f - 1, f, f - 1, f):  # across the take-back, forwards, backwards and forwards
        assert page.evaluate(FRAME) == frame
        cls = span.get_attribute("class")
        if frame == f - 1:
            assert "dv-tok" in cls and span.inner_text() == token
        else:
            assert ("dv-mask" in cls and "dv-remasked" in cls
                    and f"taken back at step {f}" in span.get_attribute("title"))
        shown = page.evaluate("() => [...document.querySelectorAll('#dv-canvas .dv-text [data-pos]')]"
                              ".map((s) => s.classList.contains('dv-tok') ? s.textContent : null)")
        assert shown == [None if c is None else piece(tr, c) for c in tr.canvas_at(frame - 1)]
        page.keyboard.press("ArrowLeft" if frame == f else "ArrowRight")


def test_a_link_asking_for_a_billion_positions_is_refused_before_the_server_allocates(page, url, served):
    """Issue 42 item 1: `/?config={"gen_length":1000000000}` once made the server allocate ~20 GB (the
    page sends the decode itself on load). Opened in Chromium, it is refused naming the model's
    context, the server's resident memory grows by at most 50 MB while it opens, and the page stays
    usable: the next decode runs."""
    import threading
    import time

    def rss_mb() -> float:
        for line in Path("/proc/self/status").read_text().splitlines():  # the tiny demo serves in this process
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        raise AssertionError("no VmRSS")

    wait_played_out(page)
    calls = len(served[0].decode_calls)
    base, peak, watching = rss_mb(), [0.0], threading.Event()

    def watch() -> None:
        while not watching.is_set():
            peak[0] = max(peak[0], rss_mb())
            time.sleep(0.005)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    other = new_page(page.context.browser, url + '?config={"gen_length":1000000000}')
    try:
        toast = other.locator(".toast-body")
        toast.first.wait_for(timeout=TIMEOUT_MS)
        said = toast.first.inner_text()
        assert "gen_length" in said and "max_length=256" in said, said
        other.wait_for_timeout(1000)
    finally:
        watching.set()
        watcher.join()
    try:
        assert peak[0] - base <= 50, f"RSS grew from {base:.0f} MB to {peak[0]:.0f} MB"
        assert len(served[0].decode_calls) == calls  # nothing reached the model
        other.get_by_role("button", name="quality", exact=True).click()  # the session is still usable
        other.wait_for_function("() => !document.querySelector('#dv-canvas .dv-live') && "
                                "document.querySelector('#dv-preset-badge').innerText.includes('quality')",
                                timeout=TIMEOUT_MS)
        assert len(served[0].decode_calls) == calls + 1
        assert [e for e in other.errors if "gen_length" not in e] == []
    finally:
        other.close()


def test_a_trace_is_read_by_its_handle_and_only_by_its_own_session(page, served, url):
    """Issue 43: the page reads each trace once, by its handle, from the canvas's server function; a
    handle is bound to the session that made it (another session reads it as gone), and only the
    example traces shown to everyone are public."""
    import httpx

    demo = served[0]
    wait_played_out(page)
    example = page.evaluate("() => window.__dv.shownRef")
    page.get_by_role("button", name="quality", exact=True).click()  # a decode of this session
    page.wait_for_function("(old) => window.__dv.shownRef && window.__dv.shownRef !== old", arg=example,
                           timeout=TIMEOUT_MS)
    mine = page.evaluate("() => window.__dv.shownRef")
    got = page.evaluate("(ref) => window.__dv.server.dv_read(ref, 0)", mine)
    assert got["state"] == "done" and got["next"] == len(got["chunks"]) >= 2
    assert got["chunks"][0]["key"] and "head" in got["chunks"][1]  # a decode's Stop key, for its own session only

    def read_as(session: str, ref: str) -> dict:
        body = {"data": [ref, 0], "component_id": demo.page.canvas._id, "fn_name": "dv_read", "session_hash": session}
        return httpx.post(url + "gradio_api/component_server/", json=body, timeout=30).json()

    # A well-formed handle no decode of the session has made yet is waited for, `wait_seconds` (10 s as
    # served): a second here, so that the two reads below that come to nothing do not sit out 20 s.
    demo.traces.wait_seconds = 1.0
    try:
        assert read_as("another-visitor", mine) == {"chunks": [], "state": "gone", "next": 0}
        assert read_as("another-visitor", example)["state"] == "done"  # an example: shown to everyone
        assert read_as("another-visitor", "guessed" + mine[7:]) == {"chunks": [], "state": "gone", "next": 0}
    finally:
        demo.traces.wait_seconds = WAIT_SECONDS


def test_the_trace_on_show_downloads_as_an_animation_and_diffs_against_an_uploaded_trace(page, tmp_path):
    """Issue 39 items 2 and 5 in the page: the animation button writes the trace on show as a GIF to
    download; a trace file uploaded to diff says where it parts from the trace on show; a trace of another
    prompt is a named error and the page goes on."""
    from dllm_viz import DecodeConfig, decode
    from dllm_viz.app.views.diff import summary
    from dllm_viz.core.diff import diff
    from tests.ui_model import make_text_model

    wait_played_out(page)
    page.locator("#dv-anim-make").click()
    link = page.locator("#dv-anim-file a[download]")
    link.wait_for(timeout=TIMEOUT_MS)
    with page.expect_download(timeout=TIMEOUT_MS) as got:
        link.click()
    data = Path(got.value.path()).read_bytes()
    assert data[:6] == b"GIF89a" and got.value.suggested_filename.endswith(".gif")

    model = make_text_model()  # the example on show: "the cat ", balanced, 32 positions, seed 1 (ui_model)
    shown = decode(model, ["the cat "], [DecodeConfig.preset("balanced", 32, seed=1)])[0]
    other = decode(model, ["the cat "], [DecodeConfig.preset("speed", 32, seed=1)])[0]
    first = summary(diff(shown, other), shown, other, "en").splitlines()[0]
    path = tmp_path / "other.json"
    path.write_text(other.to_json(), encoding="utf-8")
    upload = page.locator("input[type=file]").nth(1)  # the replay upload, then the diff's
    upload.set_input_files(str(path))
    page.wait_for_function("(s) => document.querySelector('#dv-diff-summary').innerText.includes(s)",
                           arg=first.split(" (A:")[0], timeout=TIMEOUT_MS)
    elsewhere = decode(model, ["a dog "], [DecodeConfig.preset("balanced", 32, seed=1)])[0]
    path = tmp_path / "elsewhere.json"  # another name: the same one again is not a new upload
    path.write_text(elsewhere.to_json(), encoding="utf-8")
    upload.set_input_files(str(path))
    page.wait_for_function("(s) => [...document.querySelectorAll('[data-testid=toast-text]')]"
                           ".some((e) => e.textContent.includes(s))", arg="same prompt", timeout=TIMEOUT_MS)
    page.wait_for_function("() => !document.querySelector('#dv-diff-summary').innerText.includes('part at')",
                           timeout=TIMEOUT_MS)  # the other file's summary is gone
    again = tmp_path / "again.json"  # the session goes on: the first file diffs again
    again.write_text(other.to_json(), encoding="utf-8")
    upload.set_input_files(str(again))
    page.wait_for_function("(s) => document.querySelector('#dv-diff-summary').innerText.includes(s)",
                           arg=first.split(" (A:")[0], timeout=TIMEOUT_MS)
