// dllm-viz: the page's script (the last of its files; see views/web.py). Gradio runs it as the
// canvas component's `js_on_load`, with `element` (the canvas component), `props` (its value, and the
// renderer's options: `strings`, `theme`, `tour`), `server` (`dv_read`: a trace's chunks by handle; reads.js
// streams them) and `watch`.
//
// The page's events carry handles, never traces: the canvas's value names the trace on show
// ({ref, live, frame, selected, autoplay, lang}), the Compare sides' values theirs. The page reads each
// trace once, by its handle, from the server (`dvRead`: the chunks of views/wire.py; a decode in
// progress step by step, as they are computed, in one streamed request) and draws every view from it
// (views.js). The Playground's player is `window.__dv` (a `dvView`): ONE step cursor and ONE selected position
// shared by the canvas, the inspector, the heatmap, the unmasking-order map and the per-step plot;
// moving it asks the server nothing, so a slow, lost or aborted request never leaves a view behind.

(() => {
if (window.__dvAppUp) window.__dvAppUp();  // the app is up: Gradio's status trackers may time again (early.js)
const first = !window.__dv;
const byId = (id, inner) => { const e = document.getElementById(id); return e && (inner ? e.querySelector(inner) : e); };
const fig = (id) => byId(id, ".dv-fig-host");
const options = {strings: props.strings, theme: props.theme, lang: (props.value && props.value.lang) || "en",
  temperature: (d) => {  // the temperature slider's value: the inspector's tempered bars follow it while it moves
    const input = document.querySelector("#dv-temperature input[type=range]"), T = input ? parseFloat(input.value) : NaN;
    return Number.isFinite(T) && T >= 0 ? T : d.temperature;
  },
  onStop: () => press("dv-stop", window.__dv.stopKey), onDrawn: () => tellDrawn([window.__dv.shownRef]),
  onFork: (change) => press("dv-fork", JSON.stringify(change)),  // on a finished masked trace of a model that forks here
  switchable: props.switchable,  // the settings a fork may switch, {canvas: {name: default}}
  // a renoising trace forks by its settings alone (the inspector offers no candidate of it)
  canFork: (d) => !d.live && !!d.link && (props.forks || []).includes(d.link.model),
  onTour: () => tour(true)};
let root = element.querySelector(".dv-canvas");
if (!root) { root = document.createElement("div"); root.className = "dv-canvas dv-player"; element.replaceChildren(root); }
const hosts = {canvas: root,
  get inspector() { return byId("dv-inspector", ".dv-insp-host"); }, get heatmap() { return fig("dv-heatmap"); },
  get order() { return fig("dv-order"); }, get steps() { return fig("dv-steps"); }, get task() { return fig("dv-task-curve"); }};
const dv = first ? dvView(hosts, options) : window.__dv;
if (!first) { dv.hosts = hosts; dv.options = options; dv.drawn = {}; }
window.__dv = dv;
dv.root = root;
dv.server = server;
dvStreamWhere(server);  // asked now, so that the first decode's stream does not wait for it (reads.js)
dv.theme = options.theme;
dv.traces = dv.traces || new Map();  // handle -> {d, state, promise}: each trace read once
dv.lib = {paintCanvas, inspectAt, inspectorHtml, temperedShares, dvState, dvTraceNew, dvTraceAdd, dvCanvasAt,
          dvHeatmapFig, dvOrderFig, dvStepsFig, dvCompareFig, dvTaskFig, dvArea, dvFig, dvCellAt, read: dvRead,
          seek: (f) => dv.seek(f), select: (f, p) => dv.select(f, p)};
const TRACES_KEPT = 12;

// ----- traces, read once by handle --------------------------------------------------------------------
const sleep = (ms) => new Promise((done) => setTimeout(done, ms));

// `begin` (what `dv_start` is sent): the decode is asked for by the request that streams it, and `entry.started` is
// the server's answer (reads.js `dvStarting`; start.js `started`).
function dvRead(ref, begin = null) {
  const known = dv.traces.get(ref);
  if (known) { dv.traces.delete(ref); dv.traces.set(ref, known); return known; }
  const starting = begin ? dvStarting(dv.server, begin) : null;
  const entry = {d: dvTraceNew(dv.theme), state: "live", listeners: new Set(), started: starting && starting.started};
  entry.promise = (async () => {
    let next = 0, fails = 0, live = true;
    const take = (r) => {  // an answer: its chunks added, those who follow the trace told
      for (const chunk of r.chunks) dvTraceAdd(entry.d, chunk);
      performance.mark("dv-trace-added");
      next = r.next;
      entry.state = r.state;
      if (r.chunks.length) entry.listeners.forEach((f) => f(entry));
      live = r.state === "live";
    };
    const asks = starting ? starting.data([ref, next]) : [ref, next];
    for await (const r of dvStreamed(dv.server, "dv_stream", asks, starting && starting.opened)) {  // one request
      performance.mark("dv-read-done");  // timed by bench/ui_bench.py
      if (!r || !Array.isArray(r.chunks)) break;
      take(r);
      if (!live) break;
    }
    while (live) {  // no stream, or it broke: read on from its last answer
      let r = null;
      performance.mark("dv-read");
      try { r = await dv.server.dv_read(ref, next); } catch (err) { r = null; }
      performance.mark("dv-read-done");
      if (!r || !Array.isArray(r.chunks)) {  // a lost request: try again, a little later each time
        if (++fails > 8) { entry.state = "gone"; break; }
        await sleep(50 * fails);
        continue;
      }
      fails = 0;
      take(r);
    }
    entry.listeners.clear();
    return entry.state;
  })();
  dv.traces.set(ref, entry);
  keepFew([ref]);
  return entry;
}

// The oldest finished traces go past TRACES_KEPT (not `refs`, just read).
function keepFew(refs) {
  for (const [old, e] of dv.traces) {
    if (dv.traces.size <= TRACES_KEPT) break;
    if (e.state !== "live" && !refs.includes(old)) dv.traces.delete(old);
  }
}
dv.keepFew = keepFew;


// The traces `refs` are drawn, every view of them: once that is painted, the server is told (it sends what
// follows a decode, facts and banner, Gradio's update of the page, only then, so it never takes the page's time
// from drawing them) and the event held for such a decode (start.js) goes (its work in the page, and the
// request's, would otherwise run in this task, before the paint).
function tellDrawn(refs) {
  dvAfterPaint(() => {
    if (dv.server && dv.server.dv_shown && refs.every(Boolean)) dv.server.dv_shown(refs).catch(() => {});
    refs.map((ref) => window.__dvHolds && window.__dvHolds.get(ref)).filter(Boolean).forEach((go) => go());
  });
}

// ----- the Playground's canvas value -----------------------------------------------------------------
if (dv.opening === undefined) dv.opening = new URLSearchParams(location.search).has("config");

function load() {
  follow(props.value, false);
}

// Show the trace `value` names; a decode in progress as its steps come. `pending`: a decode the page
// has just asked for (its handle drawn by start.js: __dvNewRef), shown once its first step arrives, so a
// request that never runs (Gradio keeps only the last of several) never takes the canvas.
function follow(value, pending) {
  if (!value || !value.ref) return;
  const switched = dv.lang !== undefined && dv.lang !== (value.lang || "en");
  dv.lang = value.lang || "en";  // the page's language: the views are written in it
  document.documentElement.dataset.dvLang = dv.lang;  // and Gradio's error toasts headed in it (palette.toast_heading_css)
  if (switched && dv.tourRelabel) dv.tourRelabel();  // an open walkthrough speaks it too
  const entry = dvRead(value.ref);
  if (!pending) dv.asked = value.ref;
  if (entry.state === "done") { if (dv.asked === value.ref) showDone(value, entry); return; }
  if (value.live) {  // a decode in progress: each step painted as it comes (or where it waits), with a bar and Stop
    if (value.key) dv.stopKey = value.key;  // what its Stop sends: only this page received it
    const paint = () => {
      const shown = entry.d.n || entry.d.queue;
      if (pending && dv.pending === value.ref && dv.asked !== value.ref && shown) dv.asked = value.ref;
      // (the answer that ends it is drawn finished, at once: below)
      if (dv.asked === value.ref && shown && entry.state === "live") {
        if (entry.d.key) dv.stopKey = entry.d.key;  // the decode's own key (its chunks): what its Stop sends
        entry.d.live = true;
        dvShow(dv, entry.d);
      }
    };
    entry.listeners.add(paint);
    paint();
  }
  entry.promise.then((state) => {
    if (dv.asked !== value.ref) return;
    if (state === "done") showDone(value, entry);
    else if (dv.shownRef && dv.traces.has(dv.shownRef)) {  // stopped or failed: the trace on show before it
      dv.asked = dv.shownRef;
      dvShow(dv, dv.traces.get(dv.shownRef).d);
    }
  });
}

dv.follow = follow;

function showDone(value, entry) {
  const d = entry.d, same = dv.shownRef === value.ref, linked = dv.opening && value.frame !== null && value.frame !== undefined && !value.autoplay;
  d.live = false;
  const at = {};
  // The event's answer for a trace the page showed ahead of it (start.js: an upload), with the same cursor: the
  // visitor's clicks since stand.
  const ahead = same && dv.ahead === `${value.ref} ${value.selected}`;
  dv.ahead = value.early ? `${value.ref} ${value.selected}` : null;
  if (!same || linked) { at.frame = value.autoplay ? 0 : value.frame; at.selected = value.selected; }
  else if (value.selected !== null && value.selected !== undefined && !ahead) at.selected = value.selected;
  dv.shownRef = value.ref;
  // The task curves are a task prompt's: for any other trace their box stays out of the way.
  const taskBox = document.getElementById("dv-views-task");
  if (taskBox) taskBox.style.display = d.task ? "" : "none";
  dvShow(dv, d, at);
  if (linked) dvOpenLinkedView(dv);
  if (value.autoplay && !dv.autoplayed && !dv.opening) {
    dv.autoplayed = true;
    dv.play();
    tour(false);  // at once: the page is up and the example plays under it
  }
}

// ----- the Compare sides (their components call window.__dvSide with their value) ----------------------
// Each side's value names its trace ({ref, side, lang, live, diff, cmp}): a side still decoding is
// painted as its steps come; when both are done, their figures; with the pair's summary (its value
// then says where the tokens differ and where the orders part) the underlines.
window.__dvSide = (el, sideProps, side) => {
  el.dataset.dvSide = side;
  showSide(el, sideProps.value, side);
};

function showSide(el, value, side) {
  let box = el.querySelector(".dv-side-box");
  if (!box) { box = document.createElement("div"); box.className = "dv-side-box"; el.replaceChildren(box); }
  el.__dvValue = value;
  dvWatchHeight(box);
  if (!value || !value.ref) {
    dvHoldHeight(box, false);
    box.replaceChildren();
    el.__dvRef = null;
    clearCompareFigures(side);
    return;
  }
  const lang = value.lang || dv.lang, t = options.strings[lang], entry = dvRead(value.ref);
  if (el.__dvRef !== value.ref) {
    dvHoldHeight(box, !!el.__dvRef);  // a compare after another: as tall as that one ended until this one is
    el.__dvRef = value.ref;
    if (dv.pair) dvPairClear(dv.pair, true);  // a new compare: the player comes back once both sides are done
    box.innerHTML = `<span class="dv-side dv-side-${side}">${dvEscape(t["side_" + side])}</span><div class="dv-canvas dv-static"></div>`;
  }
  const paint = () => {
    // a step, or (still live) where it waits: a side that ended before its first step has nothing to show
    if (el.__dvRef !== value.ref || !(entry.d.n || (entry.d.queue && entry.state === "live"))) return;
    const d = entry.d, root = box.querySelector(".dv-canvas");
    d.live = entry.state === "live";
    d.diff = (el.__dvValue && el.__dvValue.diff) || [];
    if (!d.live) {
      root.__dvFor = null;  // finished: the markup anew, with the key to the checker's marks
      dvHoldHeight(box, false);  // and as tall as it is
    }
    const pair = dv.pair && dv.pair.data;
    if (pair && (pair.a === d || pair.b === d)) dv.pair.render();  // in step with the other side
    else dvShowStatic(root, d, t, dv.theme, side === "a", {onStop: () => press("dv-cmp-stop", d.key)});
    const busy = document.getElementById("dv-cmp-canvas-" + side);  // its steps show: no longer a busy look
    if (busy) busy.classList.remove("dv-busy");
  };
  if (entry.state === "live") entry.listeners.add(paint);
  entry.promise.then((state) => {
    if (el.__dvRef !== value.ref) return;
    if (state === "stopped") return showSide(el, null, side);  // Stop: an empty pair (CompareHandlers.stopped)
    if (state !== "done") {  // failed: as it stands, without the live bar and Stop; no pair's player to come
      if (dv.pair) dvHoldHeight(dv.pair.hosts.canvas, false);
      return paint();
    }
    performance.mark("dv-side-" + side);
    drawCompareFigures(lang);
    showPairSoon(lang);
  });
}

// showPair once, after the sides that end together have all said so (their promises' callbacks, one after the
// other): both sides' canvases are drawn once, not once per side; once what the compare ends on (each side's
// finished canvas, both heatmaps: drawCompareFigures) is painted, so that frame lays out and paints those alone.
function showPairSoon(lang) {
  const queued = dv.pairLang !== undefined && dv.pairLang !== null;
  dv.pairLang = lang;
  if (!queued) dvAfterPaint(() => { const at = dv.pairLang; dv.pairLang = null; showPair(at); });
}

// Both sides done: one player moves them in step (pair.js), at the step a link asked for (`cmp_step`) the
// first time, else where it was for the same pair, else at the end.
function showPair(lang) {
  const els = ["a", "b"].map((side) => document.querySelector(`[data-dv-side="${side}"]`));
  if (els.some((el) => !el || !el.__dvRef)) return;
  const entries = els.map((el) => dv.traces.get(el.__dvRef)), host = byId("dv-cmp-player", ".dv-pair");
  if (!host || entries.some((e) => !e || e.state !== "done")) return;
  if (!dv.pair || dv.pair.hosts.canvas !== host) dv.pair = dvPair(host, options);
  const roots = els.map((el) => el.querySelector(".dv-side-box .dv-canvas"));
  const at = dv.cmpStep === null || dv.cmpStep === undefined ? {} : {frame: dv.cmpStep};
  dv.cmpStep = null;
  dvPairShow(dv.pair, {a: entries[0].d, b: entries[1].d, roots}, at, lang);
}

function clearCompareFigures(side) {
  const ids = side === "a" ? ["dv-cmp-orders", "dv-cmp-heat-a", "dv-cmp-steps-a"] : ["dv-cmp-heat-b", "dv-cmp-steps-b"];
  ids.forEach((id) => { const h = fig(id); if (h) h.replaceChildren(); });
  dv.compared = dv.comparedAll = null;
  if (dv.pair) dvPairClear(dv.pair);
}

// The pair's figures once both sides are done: the heatmaps (in the task that finishes the sides' canvases),
// then, once those are painted, the rest, from where the two traces part as the page finds it (pair.js's
// dvDivergence: no wait for the server's summary); the pair's event (start.js) goes once that is painted too.
function drawCompareFigures(lang) {
  const [a, b] = ["a", "b"].map((side) => document.querySelector(`[data-dv-side="${side}"]`));
  const [ea, eb] = [a, b].map((el) => el && el.__dvRef && dv.traces.get(el.__dvRef));
  if (![ea, eb].every((e) => e && e.state === "done")) return;
  const t = options.strings[lang], rows = Math.max(ea.d.n, eb.d.n);  // both heatmaps on one height and scale
  const draw = (id, f, kind) => { f.__kind = kind; dvPlot(fig(id), f); };
  const pair = (ids, figs, kind) => dvPairFit(figs, ids.map(fig)).forEach((f, i) => draw(ids[i], f, kind));  // A, B level
  const key = `${a.__dvRef}|${b.__dvRef}|${lang}`;
  if (dv.compared !== key) {
    dv.compared = key;
    pair(["dv-cmp-heat-a", "dv-cmp-heat-b"], [dvHeatmapFig(ea.d, t, {rows, side: "side_a"}),
                                              dvHeatmapFig(eb.d, t, {rows, side: "side_b"})], "heatmap");
    tellDrawn([a.__dvRef, b.__dvRef]);
  }
  if (dv.comparedAll === key) return;
  dv.comparedAll = key;
  const refs = [a.__dvRef, b.__dvRef];
  dvAfterPaint(() => {
    if (dv.comparedAll !== key) return;
    draw("dv-cmp-orders", dvCompareFig(ea.d, eb.d, t, dvDivergence(ea.d, eb.d)), "compare");
    pair(["dv-cmp-steps-a", "dv-cmp-steps-b"], [dvStepsFig(ea.d, t, {side: "side_a"}),
                                                 dvStepsFig(eb.d, t, {side: "side_b"})], "steps");
    dvAfterPaint(() => { if (dv.pairDrawn) dv.pairDrawn(refs); });  // the pair's event may come now (start.js)
  });
}

// A slider's number box: its typed value clamped to the slider's range and rounded to its step (an
// empty or unreadable box goes back to the value it had), handed to Gradio as one input event.
function takeNumber(box) {
  const lo = Number(box.min), hi = Number(box.max), step = Number(box.step) || 0;
  let v = box.value.trim() === "" ? NaN : Number(box.value);
  if (!Number.isFinite(v)) v = Number(box.__dvOld);
  if (Number.isFinite(lo)) v = Math.max(lo, v);
  if (Number.isFinite(hi)) v = Math.min(hi, v);
  if (step > 0) {
    const digits = (String(box.step).split(".")[1] || "").length, base = Number.isFinite(lo) ? lo : 0;
    v = Number((base + Math.round((v - base) / step) * step).toFixed(digits));
    if (Number.isFinite(hi) && v > hi) v -= step;
  }
  const text = String(v);
  if (box.value !== text) box.value = text;
  box.__dvTaking = true;
  box.dispatchEvent(new Event("input", {bubbles: true}));
  box.__dvTaking = false;
  return text;
}

// Press the hidden button `id` with `value` in its hidden box "id-key": Stop with the key of the decode on show (only this
// page has it; "dv-stop", "dv-cmp-stop"), a fork with its change ("dv-fork": Playground.fork_here).
function press(id, value) {
  const box = document.querySelector(`#${id}-key textarea, #${id}-key input`);
  const b = document.getElementById(id);
  if (!box || !b) return;
  box.value = value || "";
  box.dispatchEvent(new Event("input", {bubbles: true}));
  requestAnimationFrame(() => b.click());
}

// An example prompt clicked: into the prompt box (as if typed), then Run (one decode).
function runPrompt(text) {
  const box = document.querySelector("#dv-prompt textarea, #dv-prompt input");
  const run = document.getElementById("dv-run");
  if (!box || !run) return;
  box.value = text;
  box.dispatchEvent(new Event("input", {bubbles: true}));
  requestAnimationFrame(() => run.click());
}

// The walkthrough's steps, in the page's language (tour.js), for the canvas of the trace on show (views/web.py TOUR).
dv.tourSteps = () => props.tour[(dv.data && dv.data.canvas) || "masked"].map(([target, key]) => ({target, text: dv.t()[key]}));

// ----- listeners, once per page ---------------------------------------------------------------------
if (!window.__dvListening) {
  window.__dvListening = true;
  document.addEventListener("click", (e) => {
    const chip = e.target.closest && e.target.closest(".dv-chip[data-prompt]");
    if (chip) runPrompt(chip.dataset.prompt);
    const linkButton = e.target.closest && e.target.closest("button.dv-link");
    if (linkButton) dvCopyLink(dv, linkButton);
    // A banner link "#dv-open-ID": show the Compare tab, then press its button "dv-ID" (a lesson's: one compare; a
    // fork's "fork-pair": the fork beside the trace it left, banners.FORK_PAIR_LINK).
    const link = e.target.closest && e.target.closest('a[href^="#dv-open-"]');
    if (link) {
      e.preventDefault();
      const tab = document.getElementById("dv-tab-compare-button");
      if (tab) tab.click();
      dvPressWhenShown("dv-" + link.getAttribute("href").slice("#dv-open-".length));
    }
  });
  // A lesson or Compare click: its two canvases dim (CSS, after 0.3 s) until the event ends; the
  // event's chained js calls __dvIdle, on success and on error alike.
  window.__dvIdle = () => document.querySelectorAll(".dv-busy").forEach((x) => x.classList.remove("dv-busy"));
  document.addEventListener("click", (e) => {
    const b = e.target.closest && e.target.closest(".dv-lesson-buttons button, #dv-compare-run, #dv-fork-pair");
    if (!b) return;
    dv.compareLink = dvComparedBy(dv, b);  // what a link of the Compare tab names
    if (b.id === "dv-fork-pair") return;  // no decode: nothing to dim
    ["dv-cmp-canvas-a", "dv-cmp-canvas-b"].forEach((id) => {
      const box = document.getElementById(id);
      if (box) box.classList.add("dv-busy");
    });
  }, true);
  const onTour = (e) => !!(e.target.closest && e.target.closest(".dv-tour"));  // its clicks are its own
  document.addEventListener("mousedown", (e) => { window.__dv.down = onTour(e) ? null : [e.clientX, e.clientY, Date.now()]; }, true);
  document.addEventListener("mouseup", (e) => {
    const v = window.__dv, down = v.down;
    v.down = null;
    if (onTour(e)) return;
    if (!down || Math.hypot(e.clientX - down[0], e.clientY - down[1]) > 5 || Date.now() - down[2] > 800) return;
    const hit = dvCellAt(v, e.clientX, e.clientY);
    if (hit) v.select(hit[0], hit[1]);
  }, true);
  // A number typed into a slider's box is taken once, on Enter or when the box loses focus: Gradio
  // would send every keystroke ("2", "24", "240") as a change, and a click into the box as a release.
  // The typed value is brought inside the slider's range and onto its step first.
  const knobBox = (el) => el instanceof HTMLInputElement && el.type === "number" && !!el.closest(".dv-knob");
  document.addEventListener("focus", (e) => { if (knobBox(e.target)) e.target.__dvOld = e.target.value; }, true);
  document.addEventListener("input", (e) => {
    if (knobBox(e.target) && !e.target.__dvTaking) e.stopPropagation();
  }, true);
  document.addEventListener("pointerup", (e) => { if (knobBox(e.target)) e.stopPropagation(); }, true);
  document.addEventListener("blur", (e) => {
    const box = e.target;
    if (!knobBox(box)) return;
    const value = takeNumber(box);
    if (value === box.__dvOld) { e.stopPropagation(); return; }  // nothing typed: no release, no decode
    box.__dvOld = value;
  }, true);
  document.addEventListener("keydown", (e) => {
    const v = window.__dv;
    if (e.key === "Enter" && knobBox(e.target)) { e.target.blur(); return; }  // Gradio releases on blur
    if (!v.data || v.data.live || !v.root.isConnected || v.root.offsetParent === null) return;
    const tag = (e.target.tagName || "").toLowerCase();
    if (["input", "textarea", "select"].includes(tag) || e.target.isContentEditable) return;
    if (e.key === "ArrowRight") { v.seek(v.frame + 1); e.preventDefault(); }
    else if (e.key === "ArrowLeft") { v.seek(v.frame - 1); e.preventDefault(); }
  });
  // The temperature slider moves: the inspector's tempered bars follow (page-side, exact shares).
  document.addEventListener("input", (e) => {
    if (e.target instanceof HTMLInputElement && e.target.closest("#dv-temperature")) window.__dv.inspect();
  });
  let resizing = null;
  window.addEventListener("resize", () => {
    tourFollow();
    clearTimeout(resizing);
    resizing = setTimeout(() => {
      dvResize(window.__dv);
      const a = document.querySelector('[data-dv-side="a"]');  // Compare's figures fit their columns anew
      if (a && a.__dvValue) { window.__dv.compared = window.__dv.comparedAll = null; drawCompareFigures(a.__dvValue.lang || "en"); }
    }, 120);
  });
  window.addEventListener("scroll", tourFollow, {passive: true});
  // A tab shown or the page laid out anew: the cursor's overlays follow their figures, the tour its target.
  new ResizeObserver(() => dvSync(window.__dv, false)).observe(document.body);
  new MutationObserver(() => tourFollow()).observe(document.body, {childList: true, subtree: true});
}

watch("value", load);
load();
})();
