// dllm-viz: what the page starts itself as an event starts (after page.js: it uses the player it made,
// `window.__dv`, and the Compare sides' `window.__dvSide`).
//
// An event starts (page_server.NEW_REF_JS: a decode; PAIR_JS: a compare, `kind` "lesson:KEY" or "compare"):
// its handle(s) are drawn into its input args[at] (a compare's two: "A B") and read at once, and what it
// asks is started now (`dv_start`, with the event's inputs), before Gradio's event leaves the page, which
// costs Gradio's page a long task first. The event adopts that decode when it comes (one decode per event)
// and decides: an error is its to report, a decode it does not ask for is stopped. The server makes them in
// this page's session only.

(() => {
const newHandle = () => {  // 128 random bits, URL-safe (traces.HANDLE)
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
};

const started = (refs, args, at, shown, kind) => {
  const out = [...args], v = window.__dv;
  out[at] = refs.join(" ");
  performance.mark("dv-start");  // timed by bench/ui_bench.py
  if (v.server && v.server.dv_start) v.server.dv_start(refs[0], out, shown, kind).catch(() => {});
  return out;
};

// A decode: shown once its first step arrives (dv.pending), so a request that never runs never takes the canvas.
window.__dvNewRef = (args, at) => {
  const ref = newHandle(), v = window.__dv, out = started([ref], args, at, v.shownRef || null, "play");
  v.pending = ref;
  v.follow({ref, live: true, lang: v.lang}, true);
  return out;
};

// A compare: both sides read and painted as their steps come.
window.__dvNewPair = (args, at, kind) => {
  const refs = [newHandle(), newHandle()], out = started(refs, args, at, null, kind);
  ["a", "b"].forEach((side, i) => {
    const el = document.querySelector(`[data-dv-side="${side}"]`), value = {ref: refs[i], side, lang: window.__dv.lang, live: true};
    if (el && window.__dvSide) window.__dvSide(el, {value}, side);
  });
  return out;
};
})();
