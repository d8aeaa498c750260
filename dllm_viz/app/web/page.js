// dllm-viz: the page's script (the last of its files, after canvas.js, inspector.js, views.js and
// tour.js; see layout_play.PAGE_JS). Gradio runs it as the canvas component's `js_on_load`, with
// `element` (the canvas component), `trigger` and `watch`.
//
// It keeps ONE step cursor and ONE selected position shared by every view (the canvas, the
// inspector, the heatmap, the unmasking-order map, the per-step plot) and replays the trace on
// show in the browser: play, pause, step, scrub, arrow keys, clicks on tokens and figure cells,
// hover. All of it is drawn from the data the server wrote into the canvas (render.player_data);
// nothing of it asks the server, so a slow, lost or aborted request can never leave a view behind.
// A decode in progress arrives as a live canvas (render.live_html), painted after each step.

const dv = window.__dv || (window.__dv = {frame: 0, pos: 0, hover: -1, playing: false, timer: null, speed: 1,
                                          data: null, root: null, down: null, autoplayed: false});
dv.element = element;
dv.lib = {paintCanvas, paintStatic, inspectAt, inspectorHtml, temperedShares, dvData, dvState, seek, select};  // tests, other scripts

// ----- the cursor and every view that follows it --------------------------------------------------
function render() {
  const d = dv.data, root = dv.root;
  if (!d || !root || !root.isConnected) return;
  paintCanvas(root, d, dv.frame, dv.pos);
  keepInView(root, d, dv.frame, dv.pos);
  const scrub = root.querySelector(".dv-scrub");
  if (scrub && Number(scrub.value) !== dv.frame) scrub.value = String(dv.frame);
  const play = root.querySelector(".dv-play");
  if (play) play.textContent = dv.playing ? d.t.pause : d.t.play;
  paintInspector(d, dv.pos, dv.frame);
  syncViews(true);
}

function stop() {
  if (dv.timer) clearInterval(dv.timer);
  dv.timer = null;
  dv.playing = false;
}

function play() {
  const d = dv.data;
  if (!d) return;
  stop();
  if (dv.frame >= d.n) dv.frame = 0;
  dv.playing = true;
  const ms = Math.max(20, Number(dv.root.dataset.frameMs || 450) / dv.speed);
  dv.timer = setInterval(() => {
    if (!dv.root || !dv.root.isConnected || dv.frame >= dv.data.n) { stop(); render(); return; }
    dv.frame += 1;
    if (dv.frame >= dv.data.n) stop();
    render();
  }, ms);
  render();
}

function seek(frame) {
  stop();
  dv.frame = Math.max(0, Math.min(dv.data.n, frame));
  render();
}

function select(frame, pos) {
  stop();
  if (frame !== null) dv.frame = Math.max(0, Math.min(dv.data.n, frame));
  if (pos !== null && pos >= 0 && pos < dv.data.G) dv.pos = pos;
  render();
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

// A slider's number box: its typed value clamped to the slider's range and rounded to its step (an
// empty or unreadable box goes back to the value it had), handed to Gradio as one input event.
function takeNumber(box) {
  const lo = Number(box.min), hi = Number(box.max), step = Number(box.step) || 0;
  let v = box.value.trim() === "" ? NaN : Number(box.value);
  if (!Number.isFinite(v)) v = Number(box.__dvOld);
  if (Number.isFinite(lo)) v = Math.max(lo, v);
  if (Number.isFinite(hi)) v = Math.min(hi, v);
  if (step > 0) {
    const digits = (String(box.step).split(".")[1] || "").length;
    v = Number(((Number.isFinite(lo) ? lo : 0) + Math.round((v - (Number.isFinite(lo) ? lo : 0)) / step) * step).toFixed(digits));
    if (Number.isFinite(hi) && v > hi) v -= step;
  }
  const text = String(v);
  if (box.value !== text) box.value = text;
  box.__dvTaking = true;
  box.dispatchEvent(new Event("input", {bubbles: true}));
  box.__dvTaking = false;
  return text;
}

// ----- links that reopen this view (links.py) ------------------------------------------------------
// A link holds what decides the trace on show (model, prompt, settings: its `link` data) and where
// the visitor is looking: the step, the selected position, the tab, the Compare lesson or configs.
if (dv.opening === undefined) dv.opening = new URLSearchParams(location.search).has("config");

function compareShown() {
  const tab = document.getElementById("dv-tab-compare-button");
  return !!tab && tab.getAttribute("aria-selected") === "true";
}

function linkUrl() {
  const d = dv.data, q = new URLSearchParams();
  if (!d || !d.link) return location.href;
  q.set("model", d.link.model);
  q.set("prompt", d.link.prompt);
  q.set("config", JSON.stringify(d.link.config));
  q.set("step", String(dv.frame));
  q.set("pos", String(dv.pos));
  if (compareShown()) {
    q.set("tab", "compare");
    if (dv.lesson) q.set("lesson", dv.lesson);
    else if (dv.compared) { q.set("a", dv.compared[0]); q.set("b", dv.compared[1]); }
  }
  return location.origin + location.pathname + "?" + q.toString();
}

function copyLink(button) {
  const url = linkUrl();
  dv.lastLink = url;
  history.replaceState(null, "", url);
  if (navigator.clipboard && window.isSecureContext) navigator.clipboard.writeText(url).catch(() => {});
  const done = button.parentElement && button.parentElement.querySelector(".dv-link-done");
  if (done) { done.hidden = false; setTimeout(() => { done.hidden = true; }, 2500); }
}

// The trace a link asked for has arrived: open its tab, and its lesson or its compare (one decode).
function openLinkedView() {
  const q = new URLSearchParams(location.search);
  dv.opening = false;
  if (q.get("tab") !== "compare") return;
  const tab = document.getElementById("dv-tab-compare-button");
  if (tab) tab.click();
  const id = q.get("lesson") ? "dv-lesson-" + q.get("lesson") : (q.get("a") || q.get("b")) ? "dv-compare-run" : null;
  if (id) pressWhenShown(id);
}

// Click the button `id` once it is on show: a tab's buttons appear after the tab is (up to 10 s).
function pressWhenShown(id, tries = 0) {
  const button = document.getElementById(id);
  if (button && button.offsetParent !== null) button.click();
  else if (tries < 200) setTimeout(() => pressWhenShown(id, tries + 1), 50);
}

// ----- a canvas arrives ---------------------------------------------------------------------------
function load() {
  const root = element.querySelector(".dv-canvas");
  const d = root && dvData(root);
  if (!d) return;
  if (d.live) {  // a decode in progress: its latest step, a progress bar and Stop
    stop();
    paintCanvas(root, d, d.n, -1);
    keepInView(root, d, d.n, -1);
    const button = root.querySelector(".dv-stop");
    if (button) button.onclick = () => { const b = document.getElementById("dv-stop"); if (b) b.click(); };
    return;
  }
  const wasPlaying = dv.playing;
  stop();
  dv.root = root;
  dv.data = d;
  // The task curves are a task prompt's: for any other trace their box stays out of the way.
  const taskBox = document.getElementById("dv-views-task");
  if (taskBox) taskBox.style.display = d.task ? "" : "none";
  // The same trace re-rendered (a language switch, a stopped decode): keep the cursor and playback.
  // A link's trace places its own, even when it is the trace on show.
  const linked = dv.opening && !root.dataset.autoplay.startsWith("1") && root.dataset.selected !== undefined;
  const sig = JSON.stringify([d.n, d.G, d.order, d.tok, d.link]);
  const same = sig === dv.sig && !linked;
  dv.sig = sig;
  if (!same) {
    dv.frame = Number(root.dataset.frame);
    // A position the server names (an example, a link) is selected; a new decode keeps the page's.
    const named = root.dataset.selected;
    dv.pos = Math.max(0, Math.min(d.G - 1, named === undefined ? dv.pos : Number(named)));
  }
  dv.hover = -1;
  const speed = root.querySelector(".dv-speed");
  speed.value = String(dv.speed);
  speed.onchange = () => { dv.speed = Number(speed.value); if (dv.playing) play(); };
  root.querySelector(".dv-play").onclick = () => { if (dv.playing) { stop(); render(); } else play(); };
  root.querySelector(".dv-first").onclick = () => seek(0);
  root.querySelector(".dv-prev").onclick = () => seek(dv.frame - 1);
  root.querySelector(".dv-next").onclick = () => seek(dv.frame + 1);
  root.querySelector(".dv-last").onclick = () => seek(dv.data.n);
  root.querySelector(".dv-scrub").oninput = (e) => seek(Number(e.target.value));
  const tourButton = root.querySelector(".dv-tour-start");
  if (tourButton) tourButton.onclick = () => tour(true);
  render();
  if (same && wasPlaying) play();
  if (linked) openLinkedView();
  if (root.dataset.autoplay === "1" && !dv.autoplayed && !dv.opening) {
    dv.autoplayed = true;
    play();
    tour(false);  // at once: the page is up and the example plays under it
  }
}

// ----- one draw per figure update -------------------------------------------------------------
// Gradio's gr.Plot remounts its plotly div on every new value (a {#key} block), and the outgoing
// div still draws the new figure before Svelte removes it: every update was drawn twice, ~40 ms
// each here. Plotly.react is deferred to a microtask, after Svelte's update has finished, and
// skipped for a div that has left the page by then. Plotly loads with the first gr.Plot, so the
// wrap waits for it; nothing else of Plotly is changed.
function oneDrawPerUpdate() {
  const P = window.Plotly;
  if (!P || typeof P.react !== "function") return false;
  if (P.__dvOneDraw) return true;
  const react = P.react;
  P.react = function (gd, ...args) {
    return Promise.resolve().then(() => {
      if (gd && gd.isConnected === false) { dv.skippedDraws = (dv.skippedDraws || 0) + 1; return gd; }
      dv.draws = (dv.draws || 0) + 1;
      return react.call(P, gd, ...args);
    });
  };
  P.__dvOneDraw = true;
  return true;
}

if (!window.__dvListening) {
  window.__dvListening = true;
  if (!oneDrawPerUpdate()) {
    const wait = setInterval(() => { if (oneDrawPerUpdate()) clearInterval(wait); }, 50);
  }
  document.addEventListener("click", (e) => {
    const tok = e.target.closest && e.target.closest("#dv-canvas .dv-text [data-pos]");
    if (tok && dv.data) select(null, Number(tok.dataset.pos));
    const chip = e.target.closest && e.target.closest(".dv-chip[data-prompt]");
    if (chip) runPrompt(chip.dataset.prompt);
    const linkButton = e.target.closest && e.target.closest("button.dv-link");
    if (linkButton) copyLink(linkButton);
    // A banner link "#dv-open-lesson-KEY": show the Compare tab, then run that lesson (one compare).
    const link = e.target.closest && e.target.closest('a[href^="#dv-open-lesson-"]');
    if (link) {
      e.preventDefault();
      const key = link.getAttribute("href").slice("#dv-open-lesson-".length);
      const tab = document.getElementById("dv-tab-compare-button");
      if (tab) tab.click();
      pressWhenShown("dv-lesson-" + key);
    }
  });
  // A lesson or Compare click: its two canvases dim (CSS, after 0.3 s) until the event ends; the
  // event's chained js calls __dvIdle, on success and on error alike.
  window.__dvIdle = () => document.querySelectorAll(".dv-busy").forEach((x) => x.classList.remove("dv-busy"));
  document.addEventListener("click", (e) => {
    const b = e.target.closest && e.target.closest(".dv-lesson-buttons button, button#dv-compare-run");
    if (!b) return;
    // What a link of the Compare tab names: the lesson clicked, or the configs run.
    dv.lesson = b.id.startsWith("dv-lesson-") ? b.id.slice("dv-lesson-".length) : null;
    dv.compared = dv.lesson ? null : ["dv-cmp-a", "dv-cmp-b"].map((id) => {
      const code = document.querySelector(`#${id} .cm-content`);
      return code ? code.innerText.trim() : "{}";
    });
    ["dv-cmp-canvas-a", "dv-cmp-canvas-b"].forEach((id) => {
      const box = document.getElementById(id);
      if (box) box.classList.add("dv-busy");
    });
  }, true);
  document.addEventListener("mouseover", (e) => {
    const tok = e.target.closest && e.target.closest("#dv-canvas .dv-text [data-pos]");
    const p = tok ? Number(tok.dataset.pos) : -1;
    if (p !== dv.hover) { dv.hover = p; syncViews(false); }
  });
  const onTour = (e) => !!(e.target.closest && e.target.closest(".dv-tour"));  // its clicks are its own
  document.addEventListener("mousedown", (e) => { dv.down = onTour(e) ? null : [e.clientX, e.clientY, Date.now()]; }, true);
  document.addEventListener("mouseup", (e) => {
    const down = dv.down;
    dv.down = null;
    if (onTour(e)) return;
    if (!down || Math.hypot(e.clientX - down[0], e.clientY - down[1]) > 5 || Date.now() - down[2] > 800) return;
    const hit = cellAt(e.clientX, e.clientY);
    if (hit) select(hit[0], hit[1]);
  }, true);
  // A number typed into a slider's box is taken once, on Enter or when the box loses focus: Gradio
  // would send every keystroke ("2", "24", "240") as a change, and a click into the box as a release.
  // The typed value is brought inside the slider's range and onto its step first.
  const knobBox = (el) => el instanceof HTMLInputElement && el.type === "number" && !!el.closest(".dv-knob");
  document.addEventListener("focus", (e) => { if (knobBox(e.target)) e.target.__dvOld = e.target.value; }, true);
  document.addEventListener("input", (e) => { if (knobBox(e.target) && !e.target.__dvTaking) e.stopPropagation(); }, true);
  document.addEventListener("pointerup", (e) => { if (knobBox(e.target)) e.stopPropagation(); }, true);
  document.addEventListener("blur", (e) => {
    const box = e.target;
    if (!knobBox(box)) return;
    const value = takeNumber(box);
    if (value === box.__dvOld) { e.stopPropagation(); return; }  // nothing typed: no release, no decode
    box.__dvOld = value;
  }, true);
  document.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && knobBox(e.target)) { e.target.blur(); return; }  // Gradio releases on blur
    if (!dv.data || !dv.root || !dv.root.isConnected || dv.root.offsetParent === null) return;
    const tag = (e.target.tagName || "").toLowerCase();
    if (["input", "textarea", "select"].includes(tag) || e.target.isContentEditable) return;
    if (e.key === "ArrowRight") { seek(dv.frame + 1); e.preventDefault(); }
    else if (e.key === "ArrowLeft") { seek(dv.frame - 1); e.preventDefault(); }
  });
  // The temperature slider moves: the inspector's tempered bars follow (page-side, exact shares).
  document.addEventListener("input", (e) => {
    if (e.target instanceof HTMLInputElement && e.target.closest("#dv-temperature")) paintInspector(dv.data, dv.pos, dv.frame);
  });
  window.addEventListener("resize", () => { syncViews(false); tourFollow(); });
  window.addEventListener("scroll", tourFollow, {passive: true});
  // Figures are redrawn by Gradio after every decode; redraw the overlays when the DOM settles.
  // Gradio's progress trackers (a ".wrap" in each block) tick while an event runs: not a redraw.
  // A new Compare canvas or an emptied inspector is drawn from the data on the page.
  const ours = (r) => r.target.closest && r.target.closest(".dv-overlay, .dv-canvas, .dv-insp-host, .progress-text");
  const tracker = (r) => r.target.classList && r.target.classList.contains("wrap") &&
    r.target.parentElement && r.target.parentElement.classList.contains("block");
  new MutationObserver((records) => {
    if (!records.some((r) => !ours(r) && !tracker(r))) return;
    tourFollow();  // a tab switched, a figure drawn: the ring follows (or closes off the Playground)
    paintStatic(document);
    const host = document.querySelector("#dv-inspector .dv-insp-host");
    if (host && !host.firstChild && dv.data) paintInspector(dv.data, dv.pos, dv.frame);
    syncViews(false);
  }).observe(document.body, {childList: true, subtree: true});
}

watch("value", load);
load();
