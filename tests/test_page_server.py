"""app/page_server.py: what the page asks the server directly. A stream that starts the decode it reads.

The canvas's server functions called as Gradio's `component_server` calls them (the call's data, the request), with
a stand-in for the trace store and the Playground's handlers that records what they are asked; the whole path in
chromium: tests/test_browser.py (`test_a_decode_is_read_in_one_streamed_request_and_step_by_step_where_that_fails`).
"""
from __future__ import annotations

import asyncio
import json
from types import SimpleNamespace

import gradio as gr

from dllm_viz.app import page_server


class Page:
    """A page whose decode event sends a prompt, a language, a model, the trace, the handle and one slider."""

    def __init__(self) -> None:
        self.prompt, self.lang, self.model_pick = gr.Textbox(), gr.Textbox(), gr.Textbox()
        self.trace, self.ref, self.knobs = gr.State(), gr.Textbox(), [gr.Slider(0.0, 2.0, step=0.05)]
        self._names = {id(self.prompt): "prompt", id(self.lang): "lang", id(self.model_pick): "model_pick",
                       id(self.trace): "trace", id(self.ref): "ref", id(self.knobs[0]): "temperature"}

    def name_of(self, component) -> str:
        return self._names[id(component)]


class Store:
    """What the streams read: each ask recorded; one answer, done (also tests/test_fn_route.py's)."""

    def __init__(self) -> None:
        self.asked: list[tuple] = []

    def answers(self, session, handle, start):
        self.asked.append((session, handle, start))
        return self.done('{"chunks": [], "state": "done", "next": 0}')

    def answers_together(self, session, asks):
        self.asked.append((session, asks))
        return self.done('[{"chunks": [], "state": "done", "next": 0}]')

    @staticmethod
    def done(answer: str):
        async def one():
            yield answer
        return one()


class Play:
    def __init__(self, answer) -> None:
        self.answer, self.calls = answer, []

    def start(self, **asked):
        self.calls.append(asked)
        return self.answer


def stream(data, answer=None):
    """dv_stream called with `data` in session "s": (the response, what the store was asked, what play.start was)."""
    store, play = Store(), Play(answer)
    fns = {fn.__name__: fn for fn in page_server.read_traces(store, play, page_of=Page)}
    response = asyncio.run(fns["dv_stream"](data, SimpleNamespace(session_hash="s")))
    return response, store.asked, play.calls


ARGS = ["the cat", "en", "", None, "H", 0.7]  # what the page's decode event sends (the handle "H" drawn in)


def test_a_stream_with_a_start_starts_its_decode_first_and_says_the_answer_in_a_header():
    response, asked, calls = stream(["H", 0, {"start": ["H", ARGS, "OLD", "play"]}])
    assert json.loads(response.headers[page_server.STARTED_HEADER]) is None  # started
    assert asked == [("s", "H", 0)]  # the stream reads that decode, from its start
    assert calls == [{"session": "s", "ref": "H", "shown_ref": "OLD", "prompt": "the cat", "lang": "en",
                      "model_pick": "", "temperature": 0.7}]
    # why it did not start (the event then decodes, or reports, itself): said, ASCII, the stream read all the same
    response, asked, _ = stream(["H", 0, {"start": ["H", ARGS, None, "play"]}], answer="busy: é")
    assert json.loads(response.headers[page_server.STARTED_HEADER]) == "busy: é"
    assert response.headers[page_server.STARTED_HEADER].isascii() and asked == [("s", "H", 0)]
    # inputs not the event's shape: not started, nothing asked of the handlers
    response, _, calls = stream(["H", 0, {"start": ["H", ARGS[:3], None, "play"]}])
    assert json.loads(response.headers[page_server.STARTED_HEADER]) == "not started" and calls == []


def test_a_stream_without_a_start_starts_nothing_and_says_nothing():
    response, asked, calls = stream(["H", 3])
    assert page_server.STARTED_HEADER not in response.headers and calls == [] and asked == [("s", "H", 3)]
    response, asked, calls = stream(["H", 3, {"other": 1}])  # (a last item that is no start)
    assert page_server.STARTED_HEADER not in response.headers and calls == []
