"""app/early.py and app/web/early.js: the page's first script, written into the head of each page the app serves.

The middleware on a small Starlette app (pages, other answers, a page in pieces) and on Gradio's own app; the script
in Debian's chromium on a page of a made-up origin, asked for frames from a file named as Gradio's status tracker
and from another. The real page, idle, asking for no frame: tests/test_browser.py.
"""
from __future__ import annotations

import gzip
import urllib.request

import gradio as gr
import pytest
from starlette.applications import Starlette
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from dllm_viz.app import early
from dllm_viz.app.ui import launch_options
from tests.renderer import opened_at
from tests.ui_model import free_port

PAGE = "<!doctype html><html><head><meta charset='utf-8'><title>t</title></head><body>é</body></html>"


def test_the_script_goes_first_in_the_head():
    page = early.with_early(PAGE.encode())
    assert page.startswith(b"<!doctype html><html><head>" + early.EARLY_TAG + b"<meta charset")
    assert page.count(early.EARLY_TAG) == 1 and page.endswith("é</body></html>".encode())
    # the head's opening tag with attributes, in capitals; not a <header>
    assert early.with_early(b"<HEAD lang='en'><x>") == b"<HEAD lang='en'>" + early.EARLY_TAG + b"<x>"
    assert early.with_early(b"<header></header>") == b"<header></header>"
    assert early.with_early(b"no page") == b"no page"


def app() -> TestClient:
    def pieces(request):
        parts = [b"<html><he", b"ad><title>a</title></head>", b"</html>"]  # the head's tag cut in two
        return StreamingResponse(iter(parts), media_type="text/html")

    routes = [Route("/", lambda r: HTMLResponse(PAGE), methods=["GET", "HEAD"]),
              Route("/json", lambda r: JSONResponse({"head": "<head>"})),
              Route("/pieces", pieces), Route("/post", lambda r: HTMLResponse(PAGE), methods=["POST"]),
              Route("/gz", lambda r: Response(gzip.compress(PAGE.encode()), media_type="text/html",
                                               headers={"Content-Encoding": "gzip"}))]
    return TestClient(Starlette(routes=routes, middleware=[early.middleware()]))


def test_each_html_page_gets_it_and_its_length_is_counted_again():
    client = app()
    for path in ("/", "/pieces"):
        r = client.get(path)
        assert r.status_code == 200 and early.EARLY_TAG in r.content, path
        assert int(r.headers["content-length"]) == len(r.content)
    assert client.get("/").content == early.with_early(PAGE.encode())
    head = client.head("/")  # what a GET would be sent: the same length
    assert head.content == b"" and int(head.headers["content-length"]) == len(early.with_early(PAGE.encode()))
    assert client.get("/pieces").content == b"<html><head>" + early.EARLY_TAG + b"<title>a</title></head></html>"


def test_a_page_too_big_to_hold_passes_as_it_comes(monkeypatch):
    monkeypatch.setattr(early, "MAX_HELD_BYTES", 20)
    r = app().get("/pieces")  # 9 bytes, then 26: past the bound, the answer goes on as it came
    assert r.content == b"<html><head><title>a</title></head></html>" and early.EARLY_TAG not in r.content


def test_every_other_answer_passes_untouched():
    client = app()
    assert client.get("/json").json() == {"head": "<head>"}
    assert client.post("/post").content == PAGE.encode()  # only a GET's page (or a HEAD's)
    r = client.get("/gz", headers={"Accept-Encoding": "identity"})
    assert r.content == PAGE.encode()  # decoded by the client: the compressed page itself was not touched
    assert client.get("/missing").status_code == 404


def test_gradio_serves_its_page_with_the_script_before_its_own():
    with gr.Blocks() as demo:
        gr.Markdown("x")
    port = free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True, **launch_options())
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=30) as answer:
            page = answer.read().decode("utf-8")
        asked = urllib.request.Request(f"http://127.0.0.1:{port}/", method="HEAD")
        with urllib.request.urlopen(asked, timeout=30) as answer:
            head_length = int(answer.headers["Content-Length"])
    finally:
        demo.close()
    assert page.index("<script") == page.index(early.EARLY_TAG.decode())  # the first script of all
    assert page.count(early.EARLY_TAG.decode()) == 1 and 'type="module"' in page
    assert head_length == len(page.encode("utf-8"))  # a HEAD says the length a GET gets


# ----- the script in the browser ---------------------------------------------------------------------------------
ORIGIN = "http://dv.test"
# Asks for a frame from a script of file `name` (its source URL); resolves whether the frame came in 150 ms, and the
# id the ask returned.
ASK = """async ([name]) => {
  window.__came = false;
  const id = new Function(`return requestAnimationFrame(() => { window.__came = true; });\\n//# sourceURL=${name}`)();
  await new Promise((r) => setTimeout(r, 150));
  return [window.__came, id];
}"""


@pytest.fixture(scope="module")
def page():
    with opened_at(ORIGIN) as page:
        page.add_script_tag(content=early.EARLY_JS)
        yield page


TRACKER = f"{ORIGIN}/assets/statustracker-DQF-KcRT.js"


def test_until_the_app_is_up_a_status_tracker_gets_no_frame(page):
    assert page.evaluate(ASK, [TRACKER]) == [False, 0]
    came, ident = page.evaluate(ASK, [f"{ORIGIN}/assets/Blocks-D1GWYZdr.js"])  # any other script: its frame
    assert came and ident > 0
    assert page.evaluate(ASK, [f"{ORIGIN}/assets/status-tracker.js"])[0]  # not Gradio's tracker's file


def test_once_the_app_is_up_every_frame_is_asked_for(page):
    page.add_script_tag(content=early.EARLY_JS)  # a second copy changes nothing: the first one stands
    page.evaluate("() => window.__dvAppUp()")
    came, ident = page.evaluate(ASK, [TRACKER])
    assert came and ident > 0
