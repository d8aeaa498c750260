// dllm-viz: what the page starts itself as an event starts (after page.js: it uses the player it made,
// `window.__dv`, and the Compare sides' `window.__dvSide`).
//
// An event starts (page_server.NEW_REF_JS: a decode; PAIR_JS: a compare, `kind` "lesson:KEY" or "compare"):
// its handle(s) are drawn into its input args[at] (a compare's two: "A B") and read at once, and what it
// asks is started now (`dv_start`, with the event's inputs), before Gradio's event leaves the page, which
// costs Gradio's page a long task first. The event adopts that decode when it comes (one decode per event)
// and decides: an error is its to report, a decode it does not ask for is stopped. The server makes them in
// this page's session only.
//
// A slider's release starts its decode sooner still: Gradio makes the event 20-50 ms after the release,
// after a long task of its own. The page keeps the last decode event's inputs and the fields of them it can
// read itself (page_server.new_ref_js: sliders, textboxes, checkboxes); at the release of a slider whose
// release decodes, it starts the decode those inputs ask for with the values read now, and the event, when
// it comes with the very same inputs, takes that handle (else it starts its own as above). Any other input
// the visitor touched since makes the kept inputs stale: that release waits for its event, as before.

(() => {
const newHandle = () => {  // 128 random bits, URL-safe (traces.HANDLE)
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
};

// The event's inputs with the handles drawn in, and `asked`: the server's answer (null once started, else why
// not; "lost" when it never came). What it asks is asked for by the request that reads it (reads.js `dvStarting`:
// page.js `dvRead`, a compare's `readPair`), one request where two would each take the server's time beside the
// decode's first step; `dv_start` apart where the page reads it otherwise.
const started = (refs, args, at, shown, kind) => {
  const out = [...args], v = window.__dv;
  out[at] = refs.join(" ");
  const begin = [refs[0], out, shown, kind];
  performance.mark("dv-start");  // timed by bench/ui_bench.py
  const reading = kind !== "play" ? readPair(v, refs, begin)
    : v.lib && v.traces && !v.traces.has(refs[0]) ? v.lib.read(refs[0], begin).started : null;
  const asked = reading || (v.server && v.server.dv_start ? v.server.dv_start(...begin).catch(() => "lost")
    : Promise.resolve("not started"));
  return {out, asked};
};

// A decode: shown once its first step arrives (dv.pending), so a request that never runs never takes the canvas.
const play = (args, at) => {
  const ref = newHandle(), v = window.__dv, {out, asked} = started([ref], args, at, v.shownRef || null, "play");
  v.pending = ref;
  v.follow({ref, live: true, lang: v.lang}, true);
  heldUntil(ref);  // an event held for an older decode of the page's goes now: this one is asked
  return {ref, args: out, asked, t: performance.now()};
};

// The event of a decode the page started waits (Gradio awaits its js before it sends anything, and then makes
// its long task of status updates, and the server its own work on the event loop) until the page has drawn
// that decode's every view (page.js `tellDrawn`), or it ended without a trace, or a newer decode was asked,
// or HOLD_MS passed: while it decodes and draws, neither takes a core from it. A decode the server did not
// start (`asked` answered why not) is its event's to run: that event goes at once.
const HOLD_MS = 3000;
const holds = window.__dvHolds = window.__dvHolds || new Map();  // handle -> the release of its event
function heldUntil(newer) {
  for (const [ref, go] of holds) if (ref !== newer) go();
}
const hold = (early, out) => {
  const v = window.__dv;
  if (S.drawn === early.ref) return out;  // its release was held until the page drew it (below): nothing to wait for
  return early.asked.then((why) => (why !== null ? out : new Promise((done) => {
    const go = () => { if (holds.get(early.ref) === go) holds.delete(early.ref); clearTimeout(timer); done(out); };
    const timer = setTimeout(go, HOLD_MS);
    holds.set(early.ref, go);
    const entry = v.traces.get(early.ref);
    if (!entry) go();
    else entry.promise.then((state) => { if (state !== "done") go(); });
  })));
};

// Kept on the page, not in this script's scope: the script runs again when the canvas is made anew.
// last: the last decode event's inputs {args, at, fields, stale}; early: the decode a release started,
// until its event takes it {ref, args, t}; held: that release, kept from Gradio {ref, input, id (its slider's),
// timer}; drawn: the handle of the last decode drawn with its release held; count: how often one was started,
// taken by its event, missed.
const S = window.__dvEarly = window.__dvEarly || {last: null, early: null, held: null, drawn: null,
                                                  count: {started: 0, taken: 0, missed: 0}};
const EARLY_MS = 2000;  // a release whose event has not come by then (Gradio dropped it) leaves its start behind
const sameInputs = (a, b, at) => a.length === b.length &&
  a.every((x, i) => i === at || JSON.stringify(x) === JSON.stringify(b[i]));

window.__dvNewRef = (args, at, fields) => {
  const mine = S.early;
  S.early = null;
  unhold();  // another event asks for a decode while a release is held: it reads the slider as the release would
  S.last = {args: [...args], at, fields: fields || [], stale: false};
  if (mine && sameInputs(mine.args, args, at)) {  // its release started it: the event takes its handle
    S.count.taken += 1;
    const out = [...args];
    out[at] = mine.ref;
    return hold(mine, out);
  }
  if (mine) S.count.missed += 1;  // not what the event asks (nothing adopts it: the server stops it)
  const now = play(args, at);
  return hold(now, now.args);
};

// An input the page reads itself (`field`: [elem_id, kind]), as Gradio's event would send it; undefined
// where it is not on the page (the last event's value then stands).
function readField(field) {
  const host = field && document.getElementById(field[0]), kind = field && field[1];
  const input = host && host.querySelector(kind === "text" ? "textarea, input" : kind === "check"
    ? "input[type=checkbox]" : "input[type=range]");
  if (!input) return undefined;
  return kind === "text" ? input.value : kind === "check" ? input.checked : Number(input.value);
}

// The release of a slider of the decode's inputs: its decode started now, with the inputs its event will send.
// The release itself reaches Gradio (its slider, which makes the event) only once the page has drawn that
// decode (page.js `tellDrawn`), or it ended without a trace, or HOLD_MS passed, or the visitor presses a key
// or a pointer first: Gradio's page makes an event in a long task of its own (the inputs gathered, every
// loading status updated, a frame laid out and painted), which would take the page's and the decode's cores
// while the decode runs. The event then adopts the finished decode at once (`hold`).
function released(e) {
  const input = e.target, v = window.__dv, last = S.last;
  if (S.replaying) return;  // a held release, let go (letGo): Gradio's
  letGo();  // a release before the one held goes first
  if (S.early && performance.now() - S.early.t > EARLY_MS) S.early = null;
  if (!last || last.stale || S.early || !v || !v.server || !v.server.dv_start) return;
  if (!(input instanceof HTMLInputElement) || input.type !== "range" || input.disabled || e.button !== 0) return;
  const which = last.fields.findIndex((f) => f && f[1] === "release" &&
    document.getElementById(f[0])?.contains(input));
  const running = v.pending && v.traces.get(v.pending);
  if (which < 0 || (running && running.state === "live")) return;  // one decode of the page's at a time
  const args = last.args.map((x, i) => {
    const read = readField(last.fields[i]);
    return read === undefined ? x : read;
  });
  S.early = play(args, last.at);
  S.count.started += 1;
  e.stopPropagation();  // not on to Gradio's slider (nor to any listener below the document) for now
  const ref = S.early.ref, held = S.held = {ref, input, id: last.fields[which][0], timer: setTimeout(letGo, HOLD_MS)};
  holds.set(ref, () => { if (S.held === held) S.drawn = ref; letGo(); });  // page.js tellDrawn: drawn
  const entry = v.traces.get(ref);
  if (entry) entry.promise.then((state) => { if (state !== "done" && S.held === held) letGo(); });
}

// The release held, held no longer (its timer and its entry in `holds` gone); null where none is.
function unhold() {
  const held = S.held;
  if (held) {
    S.held = null;
    clearTimeout(held.timer);
    holds.delete(held.ref);
  }
  return held;
}

// The held release goes on to Gradio's slider: a pointerup as the visitor's, which this page's listeners let pass.
function letGo() {
  const held = unhold();
  if (!held) return;
  // the slider as it stands (Gradio may have made its input anew meanwhile)
  const input = held.input.isConnected ? held.input : document.querySelector(`#${held.id} input[type=range]`);
  if (!input) return;
  S.replaying = true;
  try {
    input.dispatchEvent(new PointerEvent("pointerup", {bubbles: true, cancelable: true, composed: true, button: 0,
                                                            pointerId: 1, pointerType: "mouse", isPrimary: true}));
  } finally {
    S.replaying = false;
  }
}

// Whether `e` changed an input the page does not read itself (the kept inputs are then stale); the views'
// own controls (the player, the walkthrough) are no inputs of the decode.
function touched(e) {
  const el = e.target, last = S.last;
  if (!last || !(el instanceof Element) || el.closest(".dv-canvas, .dv-pair, .dv-tour")) return;
  if (!last.fields.some((f) => f && document.getElementById(f[0])?.contains(el))) last.stale = true;
}

if (!window.__dvReleasing) {
  window.__dvReleasing = true;
  document.addEventListener("pointerup", released, true);  // before Gradio's own listener takes its long task
  // the visitor acts again: a release held goes first, so Gradio's events keep the order of the visitor's acts
  ["pointerdown", "keydown"].forEach((kind) => document.addEventListener(kind, () => letGo(), true));
  ["input", "change"].forEach((kind) => document.addEventListener(kind, touched, true));
}

// An uploaded trace file: read by the handle drawn here as soon as the server has parsed it, and shown then
// (as its event's answer would show it: the end, the first position selected), before Gradio's answer comes;
// that answer then leaves the cursor where the visitor has put it since (`early`: page.js showDone).
window.__dvNewUpload = (args, at) => {
  const v = window.__dv, out = [...args];
  if (!v || !v.follow || window.__dvUploadLate) return out;  // (__dvUploadLate: benches compare without it)
  out[at] = newHandle();
  v.follow({ref: out[at], lang: v.lang, live: false, frame: null, selected: 0, autoplay: false, early: true}, false);
  return out;
};

// A compare's sides, read together (`dv_stream_pair`, reads.js: one stream for both, an answer for both at a
// time, as their decode steps them in one batch; else `dv_read_pair`, a request an answer), each an entry of the
// page's `traces` as page.js's dvRead makes it (which then finds it). The stream starts the compare (`begin`, what
// `dv_start` is sent): returns the server's answer (reads.js `dvStarting`), or null where the sides are not read
// together (each is read alone: the caller starts it).
const sleep = (ms) => new Promise((done) => setTimeout(done, ms));
function readPair(v, refs, begin) {
  if (!v || !v.server || !v.traces || !v.server.dv_read_pair || refs.some((ref) => v.traces.has(ref))) return null;
  const starting = dvStarting(v.server, begin);
  const entries = refs.map(() => ({d: dvTraceNew(v.theme), state: "live", listeners: new Set()})), ends = [];
  entries.forEach((e) => { e.promise = new Promise((done) => ends.push(done)); });
  const end = (i) => { entries[i].listeners.clear(); ends[i](entries[i].state); };  // its views may come
  (async () => {
    const next = refs.map(() => 0);
    let open = [0, 1], fails = 0;  // the sides still live, in the order asked (the server keeps the same)
    const fits = (r) => Array.isArray(r) && r.length === open.length && r.every((x) => x && Array.isArray(x.chunks));
    const take = (r) => {  // an answer for the open sides
      open.forEach((i, k) => {
        for (const chunk of r[k].chunks) dvTraceAdd(entries[i].d, chunk);
        next[i] = r[k].next;
        entries[i].state = r[k].state;
      });
      open.forEach((i, k) => { if (r[k].chunks.length) entries[i].listeners.forEach((f) => f(entries[i])); });
      open.filter((i) => entries[i].state !== "live").forEach(end);
      open = open.filter((i) => entries[i].state === "live");
    };
    const asks = starting.data([open.map((i) => [refs[i], next[i]])]);
    for await (const r of dvStreamed(v.server, "dv_stream_pair", asks, starting.opened)) {
      if (!fits(r)) break;  // one request for the whole compare
      take(r);
      if (!open.length) break;
    }
    while (open.length) {  // no stream, or it broke: read on from its last answer
      let r = null;
      try { r = await v.server.dv_read_pair(open.map((i) => [refs[i], next[i]])); } catch (err) { r = null; }
      if (!fits(r)) {
        if (++fails > 8) { open.forEach((i) => { entries[i].state = "gone"; }); break; }  // a lost request: again
        await sleep(50 * fails);
        continue;
      }
      fails = 0;
      take(r);
    }
    entries.forEach((_, i) => end(i));
  })();
  refs.forEach((ref, i) => v.traces.set(ref, entries[i]));
  if (v.keepFew) v.keepFew(refs);
  return starting.started;
}

// A compare: both sides read and painted as their steps come. Its event waits in the page (Gradio awaits the
// promise this returns) until the pair's figures are drawn (page.js: `dv.pairDrawn`), so Gradio's own work for
// the event (a long task as it makes it, its updates of the page) never takes the page's time from the decode
// and its figures; the event then adopts the finished compare. It waits at most PAIR_HOLD_MS (a slow decode:
// the lesson's text comes meanwhile), and not at all once the start is refused or a side ends without a
// trace (the event then decodes, or reports, itself), nor once another compare is clicked.
const PAIR_HOLD_MS = 1500;
window.__dvNewPair = (args, at, kind) => {
  const refs = [newHandle(), newHandle()], v = window.__dv;
  let go = null;
  const held = new Promise((done) => { go = done; });
  if (v.pairHeld) v.pairHeld();  // an earlier click's event goes first: the events keep the clicks' order
  v.pairHeld = go;
  const {out, asked} = started(refs, args, at, null, kind);
  asked.then((why) => { if (why !== null) go(); });  // not started: the event decodes, or reports, itself
  ["a", "b"].forEach((side, i) => {
    const el = document.querySelector(`[data-dv-side="${side}"]`);
    const value = {ref: refs[i], side, lang: v.lang, live: true};
    if (el && window.__dvSide) window.__dvSide(el, {value}, side);
  });
  const entries = refs.map((ref) => v.traces && v.traces.get(ref));
  if (entries.some((e) => !e) || !v.server || !v.server.dv_start) return out;
  v.pairDrawn = (drawn) => { if (drawn.join(" ") === refs.join(" ")) go(); };
  Promise.all(entries.map((e) => e.promise)).then((states) => { if (states.some((s) => s !== "done")) go(); });
  setTimeout(go, PAIR_HOLD_MS);
  return held.then(() => out);
};
})();
