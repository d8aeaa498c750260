// dllm-viz: Compare in step (after views.js): ONE cursor over the two sides of a compare.
//
// `dvPair(host, options)` makes a player whose controls (canvas.js's, without the walkthrough's button) are
// drawn into `host`; `dvPairShow(v, {a, b, roots}, at)` puts two finished traces in it, drawn into the side
// canvases `roots` ([A's, B's]). Both sides move to the same frame f, each clamped to its own steps, and at f
// the positions whose token differs between A and B (a mask against a token counts) are marked on both
// (`dv-diff-step`, the two tokens on hover). At the last frame the marks are the positions whose final token
// differs: the server's underlines (`diff`). Nothing here asks a server or knows Gradio (page.js does).

// Each side's canvas at frame f (clamped to its steps), as token texts (null: masked): Trace.canvas_at(f - 1).
// Tokens are compared by their text: the pieces of two traces are indexed each in its own order.
function dvPairCanvases(da, db, f) {
  const at = (d) => dvCanvasAt(d, Math.max(0, Math.min(f, d.n)) - 1).map((i) => (i === null ? null : d.pieces[i]));
  return [at(da), at(db)];
}

// The positions where two canvases (dvPairCanvases) differ.
const dvDiffer = (a, b) => a.map((_, p) => p).filter((p) => p < b.length && a[p] !== b[p]);

// The positions whose token differs between A and B at frame f.
function dvPairDiff(da, db, f) {
  return dvDiffer(...dvPairCanvases(da, db, f));
}

// The marks at frame f: position -> its hover text (both sides' tokens there), in language `t`.
function dvPairMarks(da, db, f, t) {
  const [a, b] = dvPairCanvases(da, db, f), shown = (x) => (x === null ? t.side_masked : dvRepr(x));
  return new Map(dvDiffer(a, b).map((p) => [p, dvFill(t.side_tip_step, {f, a: shown(a[p]), b: shown(b[p])})]));
}

// The height an element last stood at (`__dvPx`, as the page last laid it out), kept by one ResizeObserver
// (`dvWatchHeight`), so a view made anew can stand as tall meanwhile (`dvHoldHeight`) with no layout forced to
// read it: a new compare's sides and its player hold the height the last compare ended at until they are drawn,
// so the page below them does not jump up at the click and down again at the first step.
const dvSized = typeof ResizeObserver === "undefined" ? null
  : new ResizeObserver((seen) => seen.forEach((e) => { e.target.__dvPx = e.contentRect.height; }));
function dvWatchHeight(el) {
  if (dvSized && !el.__dvWatched) { el.__dvWatched = true; dvSized.observe(el); }
}
// `el` held at least as tall as it last stood (`hold`), or let go (min-height "": the height of what it shows).
function dvHoldHeight(el, hold) {
  const px = hold && el.__dvPx ? `${el.__dvPx}px` : "";
  if (el.style.minHeight !== px) el.style.minHeight = px;
}

function dvPair(host, options) {
  const v = {hosts: {canvas: host}, options, data: null, frame: 0, playing: false, timer: null, speed: 1,
             theme: options.theme, lang: options.lang || "en"};
  v.t = () => options.strings[v.lang];
  v.render = () => dvPairRender(v);
  v.seek = (f) => { dvStop(v); v.frame = Math.max(0, Math.min(v.data.n, f)); v.render(); };
  v.stop = () => { dvStop(v); v.render(); };
  return v;
}

// Show the pair {a, b, roots} in player `v` at `at.frame` (null or undefined: where it was for the same pair,
// else the end), its controls in language `lang`.
function dvPairShow(v, pair, at = {}, lang = v.lang) {
  const host = v.hosts.canvas, n = Math.max(pair.a.n, pair.b.n);
  const same = v.data && v.data.a === pair.a && v.data.b === pair.b;
  dvStop(v);
  v.lang = lang;
  v.data = {a: pair.a, b: pair.b, roots: pair.roots, n, live: false};
  if (at.frame !== null && at.frame !== undefined) v.frame = Math.max(0, Math.min(n, at.frame));
  else if (!same) v.frame = n;
  dvWatchHeight(host);
  dvHoldHeight(host, false);
  if (!same || host.__dvLang !== lang || !host.querySelector(".dv-controls")) {
    host.className = "dv-pair";
    host.innerHTML = dvControlsHtml(v.t(), n, v.frame, {tour: false}) + '<div class="dv-status"></div>';
    host.__dvLang = lang;
    dvWireControls(v);
  }
  v.render();
}

// The pair's player emptied: a side was cleared, or a new compare is on its way (`hold`: its host keeps the
// height it stood at until the new pair is shown, so the page below does not move meanwhile).
function dvPairClear(v, hold = false) {
  dvStop(v);
  v.data = null;
  dvHoldHeight(v.hosts.canvas, hold);
  v.hosts.canvas.replaceChildren();
}

// Both sides at the cursor, their differences there marked; the scrubber, the play button and the status.
function dvPairRender(v) {
  const p = v.data, host = v.hosts.canvas;
  if (!p || !host.isConnected) return;
  const t = v.t(), f = v.frame, marks = dvPairMarks(p.a, p.b, f, t);
  [p.a, p.b].forEach((d, i) => {
    if (p.roots[i] && p.roots[i].isConnected) dvShowStatic(p.roots[i], d, t, v.theme, i === 0, {frame: f, marks});
  });
  const scrub = host.querySelector(".dv-scrub");
  if (scrub && Number(scrub.value) !== f) scrub.value = String(f);
  const play = host.querySelector(".dv-play");
  if (play) play.textContent = v.playing ? t.pause : t.play;
  const status = host.querySelector(".dv-status");
  if (status) status.textContent = dvFill(t.side_step_of, {f, n: p.n, k: marks.size});
  host.dataset.frame = String(f);
  host.dataset.marked = JSON.stringify([...marks.keys()]);
}

// Where two finished traces part (core.analysis.divergence, which the server sends with the pair for its API):
// `first`, the first step whose confirmed positions differ (null: none), `order`, the positions last decided at
// another step, and `tokens`, those whose final token differs (by text, as the marks are). The page draws the
// pair's figures from this, so they need not wait for the server's summary.
function dvDivergence(da, db) {
  let first = null;
  for (let s = 0; s < Math.max(da.n, db.n) && first === null; s++) {
    const a = s < da.n ? da.sel[s] : null, b = s < db.n ? db.sel[s] : null;
    if (!a || !b || a.length !== b.length || !a.every((p) => b.includes(p))) first = s;
  }
  const orderOf = (d) => (d.rn ? dvRenoiseStability(d).settled : d.order), oa = orderOf(da), ob = orderOf(db);
  const order = [];
  for (let p = 0; p < Math.min(oa.length, ob.length); p++) if (oa[p] !== ob[p]) order.push(p);
  return {first, order, tokens: dvPairDiff(da, db, Math.max(da.n, db.n))};
}
