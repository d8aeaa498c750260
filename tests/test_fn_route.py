"""app/fn_route.py: the page's streams on a route of their own, answered as Gradio's `component_server` answers them.

On Gradio's own app, launched with the playground's options, with the canvas's real server functions
(`page_server.read_traces`) over a stand-in trace store that records what it is asked (tests/test_page_server.py's);
the route in the real page (a decode read by it): tests/test_browser.py.
"""
from __future__ import annotations

import json
import urllib.error
import urllib.request
from types import SimpleNamespace

import gradio as gr
import pytest

from dllm_viz.app import fn_route, page_server
from dllm_viz.app.ui import launch_options
from tests.test_page_server import Store
from tests.ui_model import free_port


def serve(**launch):
    store = Store()
    with gr.Blocks() as demo:
        canvas = gr.HTML("x", server_functions=page_server.read_traces(store))
    port = free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True,
                **launch_options(), **launch)
    return demo, store, canvas._id, f"http://127.0.0.1:{port}"


@pytest.fixture(scope="module")
def app():
    demo, store, canvas, url = serve()
    yield SimpleNamespace(demo=demo, store=store, canvas=canvas, url=url)
    demo.close()


def post(url: str, body: bytes | dict) -> tuple[int, dict, bytes]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    asked = urllib.request.Request(url, data=data, method="POST", headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(asked, timeout=30) as answer:
            return answer.status, dict(answer.headers), answer.read()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), err.read()


def call(app, fn: str, data, session: str = "s1", component: int | None = None) -> dict:
    return {"session_hash": session, "component_id": app.canvas if component is None else component,
            "fn_name": fn, "data": data}


def test_a_stream_is_answered_as_gradios_component_server_answers_it(app):
    for fn, data in (("dv_stream", ["H", 3]), ("dv_stream_pair", [[["A", 0], ["B", 2]]])):
        app.store.asked.clear()
        ours = post(app.url + fn_route.PATH, call(app, fn, data))
        asked_ours = list(app.store.asked)
        app.store.asked.clear()
        gradios = post(app.url + "/gradio_api/component_server/", call(app, fn, data))
        assert ours[0] == gradios[0] == 200
        assert ours[2] == gradios[2] and ours[2].startswith(b"data: ")  # the same events
        assert ours[1]["content-type"] == gradios[1]["content-type"] == page_server.EVENTS + "; charset=utf-8"
        assert asked_ours == app.store.asked and asked_ours[0][0] == "s1"  # the same asks, in the call's session


def test_the_page_is_told_the_route_where_the_app_serves_it(app):
    status, _, body = post(app.url + "/gradio_api/component_server/", call(app, "dv_session", []))
    assert status == 200 and json.loads(body) == ["s1", app.canvas, fn_route.PATH]
    assert fn_route.served_at(app.demo.app) == "/dv/fn"
    assert fn_route.served_at(SimpleNamespace(user_middleware=[])) is None  # an app without it: Gradio's route
    assert fn_route.served_at(None) is None


def test_a_call_that_is_not_a_streams_is_refused_as_gradio_refuses_it(app):
    app.store.asked.clear()
    assert post(app.url + fn_route.PATH, call(app, "dv_session", []))[0] == 404  # a server function, not a stream
    assert post(app.url + fn_route.PATH, call(app, "dv_stream", ["H", 0], component=10**6))[0] == 404
    assert post(app.url + fn_route.PATH, call(app, "__init__", []))[0] == 404
    assert post(app.url + fn_route.PATH, b"{not json")[0] == 400
    assert post(app.url + fn_route.PATH, {"component_id": "1", "fn_name": "dv_stream", "session_hash": "s"})[0] == 400
    assert post(app.url + fn_route.PATH, b" " * (fn_route.MAX_BODY + 1))[0] == 413
    assert app.store.asked == []  # nothing read
    # any other request passes on to the app (a GET of the route is not ours: Gradio's page-or-404 answers it)
    with urllib.request.urlopen(app.url + "/gradio_api/info", timeout=30) as answer:
        assert answer.status == 200


def test_an_app_that_asks_a_login_serves_no_stream_past_it():
    demo, store, canvas, url = serve(auth=("user", "secret"))
    try:
        status, _, _ = post(url + fn_route.PATH, {"session_hash": "s1", "component_id": canvas,
                                                  "fn_name": "dv_stream", "data": ["H", 0]})
        assert status != 200 and store.asked == []  # Gradio's login checks every call: no way round it here
        assert fn_route.served_at(SimpleNamespace(user_middleware=[fn_route.middleware()], auth=["x"])) is None
    finally:
        demo.close()


def test_the_route_is_found_under_the_apps_root():
    assert fn_route._route_path({"path": "/space/dv/fn", "root_path": "/space"}) == fn_route.PATH
    assert fn_route._route_path({"path": "/dv/fn", "root_path": ""}) == fn_route.PATH
    assert fn_route._route_path({"path": "/other/dv/fn", "root_path": "/space"}) != fn_route.PATH
