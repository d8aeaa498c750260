"""app/web/reads.js: a trace's answers streamed from the server (an event each), parsed as the pieces come.

In Debian's chromium, on a page of a made-up origin, with `fetch` replaced by one that answers from pieces the
test chooses (a line split anywhere, several lines in a piece, a character split between pieces), and a
stand-in for Gradio's `server` (its `dv_session`). The stream in the real app: tests/test_browser.py.
"""
from __future__ import annotations

import json

import pytest

from dllm_viz.app.views import web
from tests.renderer import opened_at

ORIGIN = "http://dv.test"
# reads.js installed on the page; `window.__pieces` is what the next fetch's body streams (an Error in it: the
# stream breaks there), `window.__fetched` what was fetched, `window.__answer` (`ok`, `reject`) how it answers.
INSTALL = """([code]) => {
  window.__fetched = []; window.__pieces = []; window.__answer = "ok";
  window.fetch = async (url, init) => {
    window.__fetched.push({url: String(url), init: {...init, body: JSON.parse(init.body)}});
    if (window.__answer === "reject") throw new TypeError("Failed to fetch");
    const pieces = window.__pieces, bytes = new TextEncoder();
    const body = new ReadableStream({async pull(c) {
      await new Promise((r) => setTimeout(r, 1));
      const p = pieces.shift();
      if (p === undefined) c.close(); else if (p instanceof Error) c.error(p); else c.enqueue(bytes.encode(p));
    }});
    return new Response(body, {status: window.__answer === "ok" ? 200 : 500, headers: window.__headers || {}});
  };
  window.RD = new Function(code + "\\nreturn {dvStreamed, dvStarting};")();
}"""
# The answers of one stream, with a `server` whose `dv_session` answers `session` (or throws).
TAKE = """async ([session, fn, data]) => {
  window.__sessions = (window.__sessions || 0);
  const server = {dv_session: async () => { window.__sessions += 1; if (!session) throw new Error("lost");
                                            return session; }};
  const out = [];
  for await (const answer of RD.dvStreamed(server, fn, data)) out.push(answer);
  return out;
}"""


@pytest.fixture(scope="module")
def page():
    with opened_at(ORIGIN) as page:
        yield page


def stream(page, pieces: list, *, session=("abc", 7), fn="dv_stream", data=("H", 0), answer="ok", config=None):
    page.evaluate(INSTALL, [(web.WEB / "reads.js").read_text(encoding="utf-8")])
    page.evaluate("""([pieces, answer, config]) => {
      window.__pieces = pieces.map((p) => p === null ? new Error('cut') : p);
      window.__answer = answer;
      if (config) window.gradio_config = config; else delete window.gradio_config;
    }""", [pieces, answer, config])
    got = page.evaluate(TAKE, [list(session) if session else None, fn, list(data)])
    return got, page.evaluate("() => window.__fetched")


ANSWERS = [{"chunks": [{"head": {"text": "a é"}}], "state": "live", "next": 1},
           {"chunks": [{"steps": {"from": 1}}, {"steps": {"from": 2}}], "state": "live", "next": 3},
           {"chunks": [], "state": "live", "next": 3},
           {"chunks": [{"done": {"n": 3}}], "state": "done", "next": 4}]


def event(answer) -> str:
    """An answer as the server streams it (page_server.events)."""
    return f"data: {json.dumps(answer, ensure_ascii=False)}\n\n"


def test_each_event_is_an_answer_however_the_pieces_fall(page):
    text = "".join(event(a) for a in ANSWERS)
    raw = text.encode()
    cut = raw.index("é".encode()) + 1  # inside the two bytes of é
    splits = {
        "one piece": [text],
        "a piece an event": [event(a) for a in ANSWERS],
        "every 7 characters": [text[i:i + 7] for i in range(0, len(text), 7)],
        "newlines alone": [p for a in ANSWERS for p in ("data: " + json.dumps(a, ensure_ascii=False), "\n", "\n")],
        "with a comment and other fields": [": ping\n\n", "event: answer\n" + event(ANSWERS[0]), ": ping\n\n",
                                            *(event(a) for a in ANSWERS[1:])],
    }
    for name, pieces in splits.items():
        got, fetched = stream(page, pieces)
        assert got == ANSWERS, name
        assert len(fetched) == 1, name
    # a character split between two pieces (bytes, as the network may cut them): decoded whole
    page.evaluate(INSTALL, [(web.WEB / "reads.js").read_text(encoding="utf-8")])
    got = page.evaluate("""async ([a, b]) => {
      const real = window.fetch;
      window.fetch = async (url, init) => { await real(url, init);
        const parts = [new Uint8Array(a), new Uint8Array(b)];
        return new Response(new ReadableStream({pull(c) { const p = parts.shift(); if (p) c.enqueue(p);
                                                          else c.close(); }}));
      };
      const out = [];
      for await (const x of RD.dvStreamed({dv_session: async () => ["s", 1]}, "dv_stream", ["H", 0])) out.push(x);
      return out;
    }""", [list(raw[:cut]), list(raw[cut:])])
    assert got == ANSWERS


def test_the_request_is_gradios_component_server_call_with_the_pages_session(page):
    got, fetched = stream(page, ["data: []\n\n"], fn="dv_stream_pair", data=[[["A", 0], ["B", 2]]],
                          config={"root": f"{ORIGIN}/app", "api_prefix": "/gradio_api"})
    assert got == [[]]
    (call,) = fetched
    assert call["url"] == f"{ORIGIN}/app/gradio_api/component_server/"
    assert call["init"]["method"] == "POST" and call["init"]["credentials"] == "same-origin"
    assert call["init"]["body"] == {"data": [[["A", 0], ["B", 2]]], "component_id": 7, "fn_name": "dv_stream_pair",
                                    "session_hash": "abc"}
    # without Gradio's config: the route beside the page
    _, fetched = stream(page, [], config=None)
    assert fetched[0]["url"] == f"{ORIGIN}/app/gradio_api/component_server/"
    # a root on another host (a proxy's): its origin; on this page's host: this page's origin
    _, fetched = stream(page, [], config={"root": "https://elsewhere.test/x/", "api_prefix": "/gradio_api"})
    assert fetched[0]["url"] == "https://elsewhere.test/x/gradio_api/component_server/"


def test_the_route_the_server_says_is_called_instead_of_gradios(page):
    """fn_route.py: the same call, on the route `dv_session` names (under the app's root); a route that is not a
    path of the app's (another host's, say) is not taken: Gradio's then."""
    config = {"root": f"{ORIGIN}/app", "api_prefix": "/gradio_api"}
    got, fetched = stream(page, ["data: []\n\n"], session=("abc", 7, "/dv/fn"), config=config)
    assert got == [[]] and fetched[0]["url"] == f"{ORIGIN}/app/dv/fn"
    assert fetched[0]["init"]["body"] == {"data": ["H", 0], "component_id": 7, "fn_name": "dv_stream",
                                          "session_hash": "abc"}
    for route in ("//elsewhere.test/dv/fn", "https://elsewhere.test/", "/dv/fn?x=1", None, 3):
        _, fetched = stream(page, [], session=("abc", 7, route), config=config)
        assert fetched[0]["url"] == f"{ORIGIN}/app/gradio_api/component_server/", route


def test_a_stream_that_cannot_be_had_or_breaks_ends_and_the_session_is_asked_again(page):
    """What the caller gets is the answers before the trouble, then the end (it reads on from there)."""
    line = event(ANSWERS[0])
    assert stream(page, [line], answer="reject")[0] == []
    assert stream(page, [line], answer="error")[0] == []  # a 500
    assert stream(page, [line, None, event(ANSWERS[1])])[0] == [ANSWERS[0]]  # cut off
    assert stream(page, [line, "data: {not json\n\n", line])[0] == [ANSWERS[0]]
    assert stream(page, [line, event(ANSWERS[1])[:-2]])[0] == [ANSWERS[0]]  # a last line never ended: not taken
    # no session (the call failed): nothing fetched; the next stream asks for it again
    page.evaluate(INSTALL, [(web.WEB / "reads.js").read_text(encoding="utf-8")])
    page.evaluate("() => { window.__sessions = 0; }")
    assert page.evaluate(TAKE, [None, "dv_stream", ["H", 0]]) == []
    assert page.evaluate("() => window.__fetched.length") == 0
    page.evaluate("(line) => { window.__pieces = [line]; }", line)
    assert page.evaluate(TAKE, [["s", 3], "dv_stream", ["H", 0]]) == [ANSWERS[0]]
    assert page.evaluate("() => [window.__sessions, window.__fetched.length]") == [2, 1]
    # once known, the session is not asked again
    page.evaluate("(line) => { window.__pieces = [line]; }", line)
    assert page.evaluate(TAKE, [["s", 3], "dv_stream", ["H", 0]]) == [ANSWERS[0]]
    assert page.evaluate("() => window.__sessions") == 2



def test_a_stream_left_after_its_last_answer_is_read_to_its_end_or_cancelled(page):
    """The caller breaks off once it has the answer that ends the trace: what is left of the stream (the server's
    end of it) is read in the background, so that its connection serves the next request, not cut off; a stream
    that goes on regardless is cancelled after DRAIN_MS."""
    page.evaluate(INSTALL, [(web.WEB / "reads.js").read_text(encoding="utf-8")])
    first = """async ([forever]) => {
      const real = window.fetch;
      window.__cancelled = false;
      window.fetch = async (url, init) => { await real(url, init);
        return new Response(new ReadableStream({
          pull(c) { const p = window.__pieces.shift();
                    if (p !== undefined) c.enqueue(new TextEncoder().encode(p));
                    else if (!forever) c.close();
                    else return new Promise(() => {}); },  // nothing more, ever
          cancel() { window.__cancelled = true; }}));
      };
      for await (const x of RD.dvStreamed({dv_session: async () => ["s", 1]}, "dv_stream", ["H", 0])) return x;
    }"""
    page.evaluate("(pieces) => { window.__pieces = pieces; }", [event(ANSWERS[0]), event(ANSWERS[1]), ": end\n\n"])
    assert page.evaluate(first, [False]) == ANSWERS[0]
    page.wait_for_function("() => window.__pieces.length === 0", timeout=3_000)  # the rest read, to its end
    assert page.evaluate("() => window.__cancelled") is False
    page.evaluate(INSTALL, [(web.WEB / "reads.js").read_text(encoding="utf-8")])
    page.evaluate("(pieces) => { window.__pieces = pieces; }", [event(ANSWERS[0])])
    assert page.evaluate(first, [True]) == ANSWERS[0]
    page.wait_for_timeout(300)
    assert page.evaluate("() => window.__cancelled") is False  # still read, for a while
    page.wait_for_function("() => window.__cancelled", timeout=3_000)


# A stream that starts its decode (reads.js `dvStarting`): the stream's data with `{start: begin}` last, and the
# server's answer from the stream's header, else `dv_start` asked apart with `begin`. Returns [the answer, the
# answers streamed, what `opened` was called with ("response", null), the calls of `dv_start`].
STARTING = """async ([headers, answer, starts]) => {
  window.__headers = headers; window.__answer = answer;
  const calls = [], seen = [];
  const server = {dv_session: async () => ["s", 1],
                  dv_start: async (...args) => { calls.push(args); if (starts === "throw") throw new Error("lost");
                                                 return starts; }};
  const starting = RD.dvStarting(server, ["H", ["args"], null, "play"]);
  const opened = (r) => { seen.push(r === null ? null : "response"); starting.opened(r); };
  const out = [];
  for await (const x of RD.dvStreamed(server, "dv_stream", starting.data(["H", 0]), opened)) out.push(x);
  return [await starting.started, out, seen, calls];
}"""


def test_a_stream_that_starts_its_decode_says_the_servers_answer_and_else_it_is_asked_apart(page):
    page.evaluate(INSTALL, [(web.WEB / "reads.js").read_text(encoding="utf-8")])
    line = event(ANSWERS[0])
    begin = ["H", ["args"], None, "play"]

    def run(headers, answer="ok", starts=None, pieces=(line,)):
        page.evaluate("(pieces) => { window.__pieces = pieces; }", list(pieces))
        return page.evaluate(STARTING, [headers, answer, starts])

    # the server started it (null) or says why not: that answer, and no `dv_start` apart
    assert run({"X-DV-Started": "null"}) == [None, [ANSWERS[0]], ["response"], []]
    assert run({"X-DV-Started": '"busy"'}) == ["busy", [ANSWERS[0]], ["response"], []]
    body = page.evaluate("() => window.__fetched.at(-1).init.body")
    assert body["data"] == ["H", 0, {"start": begin}] and body["fn_name"] == "dv_stream"
    # a server that does not say (an older one), or says what is not JSON: asked apart, the stream read all the same
    assert run({}, starts="started apart") == ["started apart", [ANSWERS[0]], ["response"], [begin]]
    assert run({"X-DV-Started": "{no"}, starts=None) == [None, [ANSWERS[0]], ["response"], [begin]]
    # no stream (refused, a 500): asked apart, `opened` told so once; a lost `dv_start` answers "lost"
    assert run({"X-DV-Started": "null"}, answer="reject", starts=None) == [None, [], [None], [begin]]
    assert run({"X-DV-Started": "null"}, answer="error", starts="throw") == ["lost", [], [None], [begin]]
