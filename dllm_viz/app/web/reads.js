// dllm-viz: a trace's answers streamed from the server (page_server `dv_stream`, `dv_stream_pair`): one request
// for a whole decode, an event per answer as its steps come (each "data: " and the answer `dv_read` /
// `dv_read_pair` gives, on a line of its own; the other lines of the stream say nothing),
// where a read a step costs the browser and the server a request each, beside the decode (bench/ui_bench.py).
// Gradio's page client waits for a whole answer, so the stream is opened here, with the session and the canvas's
// id the server says once (`dv_session`), as Gradio's client calls a server function (`component_server`), on the
// route the server says with them (fn_route.py: the same call, past Gradio's 3-4 ms of work before it), else on
// Gradio's. Where it cannot be opened, or it breaks, or an answer is not JSON, the stream ends: the caller reads on
// (`dv_read`) from the last answer it took.

let dvWhereAsked = null;  // a promise of {url, session, component}, or of null (asked again next time)

function dvStreamWhere(server) {
  if (!dvWhereAsked) {
    dvWhereAsked = (async () => {
      if (!server || !server.dv_session) return null;
      const [session, component, route] = await server.dv_session();
      if (typeof session !== "string" || !Number.isInteger(component)) return null;
      // the app's root as Gradio's client resolves it (its config's root; this page's origin on the same host)
      const config = window.gradio_config || {}, root = new URL(config.root || ".", location.href);
      const origin = root.hostname === location.hostname ? location.origin : root.origin;
      const path = typeof route === "string" && /^\/[\w/-]*$/.test(route) ? route
        : `${config.api_prefix || "/gradio_api"}/component_server/`;
      const url = `${origin}${root.pathname.replace(/\/$/, "")}${path}`;
      return {url, session, component};
    })().catch(() => null);
    dvWhereAsked.then((where) => { if (!where) dvWhereAsked = null; });
  }
  return dvWhereAsked;
}

// The answers of the server function `fn` called with `data` (as `server[fn](...data)` sends it), each parsed
// as its event's line comes; nothing where the stream cannot be had. `opened(response)` is called once, before
// any answer: with the stream's response (its headers say what the server did first: page.js `dvRead`), or with
// null where the stream cannot be had.
async function* dvStreamed(server, fn, data, opened = null) {
  const where = await dvStreamWhere(server);
  let response = null;
  try {
    response = where && await fetch(where.url, {
      method: "POST", credentials: "same-origin", headers: {"Content-Type": "application/json"},
      body: JSON.stringify({data, component_id: where.component, fn_name: fn, session_hash: where.session})});
  } catch (err) {
    response = null;
  }
  const open = !!(response && response.ok && response.body);
  if (opened) opened(open ? response : null);
  if (!open) return;
  const reader = response.body.getReader();
  const text = new TextDecoder();
  let held = [];  // the line's text so far (a 3 MB trace's one answer comes in many pieces: joined once)
  let ended = false;  // the server ended the stream (else what is left of it is let end: dvLetEnd)
  try {
    for (;;) {
      const {value, done} = await reader.read();
      if (done) { ended = true; return; }
      let piece = text.decode(value, {stream: true});
      for (let at = piece.indexOf("\n"); at >= 0; at = piece.indexOf("\n")) {
        held.push(piece.slice(0, at));
        piece = piece.slice(at + 1);
        const line = held.join("");
        held = [];
        if (line.startsWith("data: ")) yield JSON.parse(line.slice(6));
      }
      if (piece) held.push(piece);
    }
  } catch (err) {
    return;
  } finally {
    if (!ended) dvLetEnd(reader);
  }
}

// A decode asked for by the stream that reads it (page_server: the stream's data ends with {start: begin}, what
// `dv_start` would be sent): `started`, the server's answer (null once started, else why not), as the stream's
// STARTED_HEADER says it; where the stream cannot be had, or it does not say, `dv_start` is asked apart.
// `opened` is what the stream calls (dvStreamed's `opened`).
const DV_STARTED_HEADER = "X-DV-Started";  // page_server.STARTED_HEADER
function dvStarting(server, begin) {
  let said = null;
  const started = new Promise((done) => { said = done; });
  const opened = (response) => {
    if (!said) return;
    const head = response ? response.headers.get(DV_STARTED_HEADER) : null;
    let answer;
    try { answer = head === null ? undefined : JSON.parse(head); } catch (err) { answer = undefined; }
    said(answer !== undefined ? answer
      : server && server.dv_start ? server.dv_start(...begin).catch(() => "lost") : "not started");
    said = null;
  };
  return {started, opened, data: (data) => [...data, {start: begin}]};
}

// A stream its reader left (its last answer taken; the server ends it at once) read to its end in the background,
// at most DRAIN_MS, so that its connection serves the next request; cancelled past that, or when it breaks.
const DRAIN_MS = 1000;
function dvLetEnd(reader) {
  const timer = setTimeout(() => reader.cancel().catch(() => {}), DRAIN_MS);
  (async () => {
    try { while (!(await reader.read()).done); } catch (err) { /* broken: cancelled */ }
    clearTimeout(timer);
  })();
}
