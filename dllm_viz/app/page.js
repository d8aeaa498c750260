// dllm-viz: the page's one script. Gradio runs it as the canvas component's `js_on_load`, with
// `element` (the canvas component), `trigger` (send an event to the server) and `watch`.
//
// It replays the stored trace in the browser (play, pause, step, speed, arrow keys: no server
// round trip per frame) and keeps ONE step cursor and ONE selected position shared by every view:
// the canvas, the confidence heatmap, the unmasking-order map and the per-step plot. Clicking a
// heatmap / order-map / per-step cell or a canvas token moves the cursor; hovering a token marks
// its column. Only a settled selection goes to the server, once, for the inspector's text.
// Everything it shows comes from data the server wrote into the canvas HTML (render.player_data)
// and from the figures' own axis ranges; the strings come in the page's language.

const dv = window.__dv || (window.__dv = {frame: 0, pos: 0, hover: -1, playing: false, timer: null, speed: 1,
                                          data: null, root: null, sent: "", down: null, autoplayed: false});
dv.element = element;
dv.trigger = trigger;

const fill = (tpl, v) => tpl.replace(/\{(\w+)\}/g, (m, k) => (k in v ? String(v[k]) : m));
const fmt3 = (x) => (x === null || x === undefined || Number.isNaN(x) ? "–" : Number(x).toFixed(3));
const pyrepr = (s) => (s.includes("'") && !s.includes('"') ? `"${s}"` : `'${s.replace(/'/g, "\\'")}'`);

// ----- the canvas at one frame ------------------------------------------------------------------
function renderCanvas() {
  const d = dv.data, root = dv.root, f = dv.frame;
  if (!d || !root || !root.isConnected) return;
  const ghost = f < d.n ? f : -1;
  let fresh = 0;
  root.querySelectorAll(".dv-text [data-pos]").forEach((span) => {
    const p = Number(span.dataset.pos), o = d.order[p];
    let cls, text, bg, title;
    if (o >= 0 && o < f) {
      const isNew = o === f - 1;
      fresh += isNew;
      cls = "dv-tok" + (isNew ? " dv-new" : "") + (d.end >= 0 && p >= d.end ? " dv-pad" : "") +
        (d.bad && d.bad[p] ? " dv-bad" : "");  // the world checker rejects the span this token is in
      text = d.pieces[d.tok[p]];
      bg = d.tint[p];
      title = fill(d.t.tip_confirmed, {p, s: o + 1, c: fmt3(d.conf[p]), q: fmt3(d.q[p])}) +
        (d.bad && d.bad[p] ? "\n✗ " + d.bad[p] : "");
    } else {
      const g = ghost >= 0 ? d.guess[ghost][p] : -1;
      cls = "dv-mask";
      text = g >= 0 ? d.pieces[g] : "▢";
      bg = "";
      title = fill(d.t.tip_masked, {p, g: pyrepr(text), c: fmt3(ghost >= 0 ? d.gconf[ghost][p] : null)});
    }
    if (p === dv.pos) cls += " dv-sel";
    if (span.className !== cls) span.className = cls;
    if (span.textContent !== text) span.textContent = text;
    span.style.background = bg;
    span.title = title;
  });
  let status = f === 0 ? d.t.start : fill(d.t.after_step, {s: f, k: d.k[f - 1], new: fresh});
  if (f === d.n && d.n > 0) status += " · " + d.t.finished;
  root.querySelector(".dv-status").textContent = fill(d.t.step_of, {f, n: d.n}) + " · " + status;
  const scrub = root.querySelector(".dv-scrub");
  if (scrub && Number(scrub.value) !== f) scrub.value = String(f);
  root.querySelector(".dv-play").textContent = dv.playing ? d.t.pause : d.t.play;
  root.dataset.frame = String(f);
  root.dataset.selected = String(dv.pos);
}

function render() {
  renderCanvas();
  syncViews(true);
}

// ----- playback ---------------------------------------------------------------------------------
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
    if (!dv.root || !dv.root.isConnected || dv.frame >= dv.data.n) { stop(); render(); notify(); return; }
    dv.frame += 1;
    if (dv.frame >= dv.data.n) { stop(); render(); notify(); return; }
    render();
  }, ms);
  render();
}

function seek(frame) {
  stop();
  dv.frame = Math.max(0, Math.min(dv.data.n, frame));
  render();
  notify();
}

function select(frame, pos) {
  stop();
  if (frame !== null) dv.frame = Math.max(0, Math.min(dv.data.n, frame));
  if (pos !== null && pos >= 0 && pos < dv.data.G) dv.pos = pos;
  render();
  notify();
}

// The inspector's text needs the server (it explains the schedule's reasoning); ask once per
// settled selection, never per played frame.
let notifyTimer = null;
function notify() {
  if (notifyTimer) clearTimeout(notifyTimer);
  notifyTimer = setTimeout(() => {
    if (dv.playing) return;
    const key = `${dv.frame}:${dv.pos}`;
    if (key === dv.sent) return;
    dv.sent = key;
    dv.trigger("select", {index: [dv.frame, dv.pos], value: dv.pos});
  }, 120);
}

// ----- linked views: overlays drawn over the Plotly figures ------------------------------------
// Each figure states its axis ranges (figures.py), so a data coordinate maps to pixels through
// the plot area's rectangle alone; nothing reaches into Plotly's internals.
function plotArea(gd, subplot) {
  const r = gd.querySelector(`.nsewdrag[data-subplot="${subplot}"]`);
  return r ? r.getBoundingClientRect() : null;
}

function overlay(gd) {
  const host = gd.parentElement;
  if (getComputedStyle(host).position === "static") host.style.position = "relative";
  let ol = host.querySelector(":scope > .dv-overlay");
  if (!ol) { ol = document.createElement("div"); ol.className = "dv-overlay"; host.appendChild(ol); }
  const h = host.getBoundingClientRect();
  ol.style.left = "0px"; ol.style.top = "0px"; ol.style.width = h.width + "px"; ol.style.height = h.height + "px";
  return [ol, h];
}

function box(cls, h, x0, y0, x1, y1) {
  return `<div class="${cls}" style="left:${(x0 - h.left).toFixed(1)}px;top:${(y0 - h.top).toFixed(1)}px;` +
         `width:${Math.max(1, x1 - x0).toFixed(1)}px;height:${Math.max(1, y1 - y0).toFixed(1)}px"></div>`;
}

function graph(id) {
  return document.querySelector(`#${id} .js-plotly-plot`);
}

function drawHeatmap(d) {
  const gd = graph("dv-heatmap"), a = gd && plotArea(gd, "xy");
  if (!a || !d.n || !d.G) return;
  const [ol, h] = overlay(gd), cw = a.width / d.G, rh = a.height / d.n, f = dv.frame;
  let html = "";
  if (f < d.n) html += box("dv-ol-future", h, a.left, a.top + f * rh, a.right, a.bottom);
  if (f >= 1) html += box("dv-ol-cursor", h, a.left, a.top + (f - 1) * rh, a.right, a.top + f * rh);
  html += box("dv-ol-cursor", h, a.left + dv.pos * cw, a.top, a.left + (dv.pos + 1) * cw, a.bottom);
  if (dv.hover >= 0) html += box("dv-ol-hover", h, a.left + dv.hover * cw, a.top, a.left + (dv.hover + 1) * cw, a.bottom);
  ol.innerHTML = html;
}

function drawOrder(d) {
  const gd = graph("dv-order"), a = gd && plotArea(gd, "xy");
  if (!a || !d.G) return;
  const w = d.width, rows = Math.ceil(d.G / w), cw = a.width / w, rh = a.height / rows;
  const [ol, h] = overlay(gd);
  const cell = (cls, p) => box(cls, h, a.left + (p % w) * cw, a.top + Math.floor(p / w) * rh,
                                a.left + (p % w + 1) * cw, a.top + (Math.floor(p / w) + 1) * rh);
  let html = "";
  for (let p = 0; p < d.G; p++) if (d.order[p] < 0 || d.order[p] >= dv.frame) html += cell("dv-ol-future", p);
  html += cell("dv-ol-cursor", dv.pos);
  if (dv.hover >= 0) html += cell("dv-ol-hover", dv.hover);
  ol.innerHTML = html;
}

function drawSteps(d) {
  const gd = graph("dv-steps"), top = gd && plotArea(gd, "xy"), low = gd && plotArea(gd, "x2y3");
  if (!top || !low || !d.n) return;
  const [ol, h] = overlay(gd), cw = low.width / d.n, f = dv.frame;
  let html = "";
  if (f < d.n) {
    html += box("dv-ol-future", h, low.left + f * cw, top.top, low.right, top.bottom);
    html += box("dv-ol-future", h, low.left + f * cw, low.top, low.right, low.bottom);
  }
  if (f >= 1) html += box("dv-ol-cursor", h, low.left + (f - 1) * cw, top.top, low.left + f * cw, low.bottom);
  ol.innerHTML = html;
}

let syncQueued = false;
function syncViews(now) {
  if (!now) {
    if (syncQueued) return;
    syncQueued = true;
    requestAnimationFrame(() => { syncQueued = false; syncViews(true); });
    return;
  }
  const d = dv.data;
  if (!d) return;
  drawHeatmap(d);
  drawOrder(d);
  drawSteps(d);
}

// A click (press and release in place) on a figure's plot area selects its cell.
function cellAt(x, y) {
  const d = dv.data;
  if (!d) return null;
  const inside = (a) => a && x >= a.left && x <= a.right && y >= a.top && y <= a.bottom;
  let gd = graph("dv-heatmap"), a = gd && plotArea(gd, "xy");
  if (inside(a) && d.n) {
    const pos = Math.floor((x - a.left) / a.width * d.G), step = Math.floor((y - a.top) / a.height * d.n) + 1;
    return [step, pos];
  }
  gd = graph("dv-order"); a = gd && plotArea(gd, "xy");
  if (inside(a)) {
    const rows = Math.ceil(d.G / d.width);
    const pos = Math.floor((y - a.top) / a.height * rows) * d.width + Math.floor((x - a.left) / a.width * d.width);
    return pos < d.G ? [d.order[pos] + 1, pos] : null;
  }
  gd = graph("dv-steps");
  for (const sub of ["xy", "x2y3"]) {
    a = gd && plotArea(gd, sub);
    if (inside(a) && d.n) return [Math.floor((x - a.left) / a.width * d.n) + 1, null];
  }
  return null;
}

// ----- inspector: re-tempered in the browser while the temperature slider moves ----------------
// The formula of core.analysis.tempered_from_top; its constants come from the inspector's HTML.
function retemper(T) {
  const insp = document.querySelector("#dv-inspector .dv-insp");
  if (!insp || !Number.isFinite(T) || T < 0) return;
  const rows = Array.from(insp.querySelectorAll(".dv-insp-row[data-raw]"));
  if (!rows.length) return;
  const scale = Number(insp.dataset.barScale), minBar = Number(insp.dataset.minBar), floor = Number(insp.dataset.pFloor);
  const ps = rows.map((r) => parseFloat(r.dataset.raw));
  let w;
  if (T === 0) w = ps.map((_, i) => (i === 0 ? 1 : 0));
  else {
    const l = ps.map((p) => Math.log(Math.max(p, floor)) / T), top = Math.max(...l);
    w = l.map((x) => Math.exp(x - top));
  }
  const z = w.reduce((s, x) => s + x, 0) || 1;
  rows.forEach((r, i) => {
    const share = w[i] / z;
    r.querySelector(".dv-insp-temp").style.width = Math.max(minBar, scale * share).toFixed(1) + "%";
    r.querySelector(".dv-insp-tlab").textContent = Math.round(100 * share) + "%";
  });
  const key = insp.querySelector(".dv-insp-tkey");
  if (key) key.textContent = key.dataset.template.replace("{t}", String(T));
}

// ----- the guided first minute -----------------------------------------------------------------
function tour(force) {
  const root = dv.root;
  if (!root || !root.dataset.tour) return;
  if (!force && localStorage.getItem("dv-tour") === "done") return;
  document.querySelectorAll(".dv-tour, .dv-tour-ring").forEach((el) => el.remove());
  const steps = JSON.parse(root.dataset.tour), ui = JSON.parse(root.dataset.tourUi);
  const card = document.createElement("div"), ring = document.createElement("div");
  card.className = "dv-tour"; card.setAttribute("role", "dialog");
  ring.className = "dv-tour-ring";
  document.body.append(ring, card);
  let i = 0;
  const close = () => { card.remove(); ring.remove(); localStorage.setItem("dv-tour", "done"); };
  const show = () => {
    const step = steps[i], target = document.querySelector(step.target);
    if (target) target.scrollIntoView({block: "center"});
    const r = target ? target.getBoundingClientRect() : {left: 20, top: 20, width: 0, height: 0, bottom: 20};
    Object.assign(ring.style, {left: r.left - 4 + "px", top: r.top - 4 + "px", width: r.width + 8 + "px", height: r.height + 8 + "px"});
    const last = i === steps.length - 1;
    card.innerHTML = `<div class="dv-tour-text"></div><div><button type="button" class="dv-tour-next">${last ? ui.tour_done : ui.tour_next}</button>` +
      (last ? "" : `<button type="button" class="dv-tour-skip">${ui.tour_skip}</button>`) +
      `<span style="float:right;opacity:.7">${i + 1} / ${steps.length}</span></div>`;
    card.querySelector(".dv-tour-text").textContent = step.text;
    const below = r.bottom + 12 + 160 < window.innerHeight;
    card.style.left = Math.max(8, Math.min(window.innerWidth - 350, r.left)) + "px";
    card.style.top = (below ? r.bottom + 12 : Math.max(8, r.top - 12 - card.offsetHeight)) + "px";
    card.querySelector(".dv-tour-next").onclick = () => { if (last) close(); else { i += 1; show(); } };
    const skip = card.querySelector(".dv-tour-skip");
    if (skip) skip.onclick = close;
  };
  show();
}

// ----- wiring -----------------------------------------------------------------------------------
function load() {
  const root = element.querySelector(".dv-player");
  if (!root) return;
  const wasPlaying = dv.playing;
  stop();
  dv.root = root;
  dv.data = JSON.parse(root.dataset.trace);
  // The same trace re-rendered (a language switch): keep the browser's cursor and playback.
  const sig = JSON.stringify([dv.data.n, dv.data.G, dv.data.order, dv.data.tok]);
  const same = sig === dv.sig;
  dv.sig = sig;
  if (!same) {
    dv.frame = Number(root.dataset.frame);
    dv.pos = Math.max(0, Math.min(dv.data.G - 1, Number(root.dataset.selected)));
  }
  dv.hover = -1;
  dv.sent = same ? "" : `${dv.frame}:${dv.pos}`;  // same trace: tell the server where the cursor really is
  const speed = root.querySelector(".dv-speed");
  speed.value = String(dv.speed);
  speed.onchange = () => { dv.speed = Number(speed.value); if (dv.playing) play(); };
  root.querySelector(".dv-play").onclick = () => { if (dv.playing) { stop(); render(); notify(); } else play(); };
  root.querySelector(".dv-first").onclick = () => seek(0);
  root.querySelector(".dv-prev").onclick = () => seek(dv.frame - 1);
  root.querySelector(".dv-next").onclick = () => seek(dv.frame + 1);
  root.querySelector(".dv-last").onclick = () => seek(dv.data.n);
  root.querySelector(".dv-scrub").oninput = (e) => seek(Number(e.target.value));
  const tourButton = root.querySelector(".dv-tour-start");
  if (tourButton) tourButton.onclick = () => tour(true);
  render();
  if (same && wasPlaying) play();
  else if (same) notify();
  if (root.dataset.autoplay === "1" && !dv.autoplayed) {
    dv.autoplayed = true;
    play();
    setTimeout(() => tour(false), 800);
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
    // A banner link "#dv-open-lesson-KEY": show the Compare tab, then run that lesson (one compare).
    const link = e.target.closest && e.target.closest('a[href^="#dv-open-lesson-"]');
    if (link) {
      e.preventDefault();
      const key = link.getAttribute("href").slice("#dv-open-lesson-".length);
      const tab = document.getElementById("dv-tab-compare-button");
      if (tab) tab.click();
      setTimeout(() => { const b = document.getElementById("dv-lesson-" + key); if (b) b.click(); }, 0);
    }
  });
  // A lesson or Compare click: its two canvases dim (CSS, after 0.3 s) until the event ends; the
  // event's chained js calls __dvIdle, on success and on error alike.
  window.__dvIdle = () => document.querySelectorAll(".dv-busy").forEach((x) => x.classList.remove("dv-busy"));
  document.addEventListener("click", (e) => {
    const b = e.target.closest && e.target.closest(".dv-lesson-buttons button, button#dv-compare-run");
    if (!b) return;
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
  document.addEventListener("mousedown", (e) => { dv.down = [e.clientX, e.clientY, Date.now()]; }, true);
  document.addEventListener("mouseup", (e) => {
    const down = dv.down;
    dv.down = null;
    if (!down || Math.hypot(e.clientX - down[0], e.clientY - down[1]) > 5 || Date.now() - down[2] > 800) return;
    const hit = cellAt(e.clientX, e.clientY);
    if (hit) select(hit[0], hit[1]);
  }, true);
  document.addEventListener("keydown", (e) => {
    // A number typed into a slider's box re-runs like a release: Gradio releases on blur.
    if (e.key === "Enter" && e.target instanceof HTMLInputElement && e.target.type === "number" &&
        e.target.closest(".dv-knob")) { e.target.blur(); return; }
    if (!dv.data || !dv.root || !dv.root.isConnected || dv.root.offsetParent === null) return;
    const tag = (e.target.tagName || "").toLowerCase();
    if (["input", "textarea", "select"].includes(tag) || e.target.isContentEditable) return;
    if (e.key === "ArrowRight") { seek(dv.frame + 1); e.preventDefault(); }
    else if (e.key === "ArrowLeft") { seek(dv.frame - 1); e.preventDefault(); }
  });
  document.addEventListener("input", (e) => {
    if (e.target instanceof HTMLInputElement && e.target.closest("#dv-temperature")) retemper(parseFloat(e.target.value));
  });
  window.addEventListener("resize", () => syncViews(false));
  // Figures are redrawn by Gradio after every decode; redraw the overlays when the DOM settles.
  // Gradio's progress trackers (a ".wrap" in each block) tick while an event runs: not a redraw.
  const ours = (r) => r.target.closest && r.target.closest(".dv-overlay, .dv-player, .progress-text");
  const tracker = (r) => r.target.classList && r.target.classList.contains("wrap") &&
    r.target.parentElement && r.target.parentElement.classList.contains("block");
  new MutationObserver((records) => {
    if (records.some((r) => !ours(r) && !tracker(r))) syncViews(false);
  }).observe(document.body, {childList: true, subtree: true});
}

watch("value", load);
load();
