// dllm-viz: a player and its linked views (after trace.js, canvas.js, inspector.js and figures.js; see
// views/web.py). `dvView(hosts, options)` draws one trace into the elements it is given:
//   hosts: {canvas, inspector, heatmap, order, steps, task} (any may be missing)
//   options: {strings: {lang: table}, theme, lang, temperature: () => T, onDrawn: (v) => {} once a trace's
//             figures are all drawn, onFork: (change) => {} what the inspector's fork buttons ask of a trace d
//             where canFork(d) (none: no button), onRender: (v) => {} after each
//             render, onHover: (v, p) => {} as the pointer enters a token (-1: leaves the text)}
// and keeps ONE step cursor and ONE selected position shared by them: play, pause, step, scrub,
// clicks on tokens and figure cells, hover. Several views on one page never share anything. Nothing
// here asks a server; nothing here knows Gradio (page.js does).
//
// The figures are drawn on canvases of ours (plot2d.js, chart2d.js) or, the others, by plotly.js (`Plotly`,
// loaded before these files run). The cursor is drawn over them in an overlay of our own, placed from each
// figure's own layout (its margins, height and axis ranges: figures.js states them all and lets no margin grow),
// so nothing reaches into either's elements; a click is mapped back to a cell the same way.

const DV_PLOT_CONFIG = {responsive: true, displaylogo: false, modeBarButtonsToRemove: ["select2d", "lasso2d"]};

// Whether `fig` is drawn on a canvas of ours (plot2d.js, chart2d.js), not by plotly.
const dvOurs = (fig) => dvFlatFits(fig) || dvChartFits(fig);

// Draw `fig` into `host` (a figure div of ours inside it), at most once per new figure: a figure of heatmaps and
// markers on a canvas of ours (plot2d.js), one of bars, lines and markers (the per-step figure, Compare's order
// figure) likewise (chart2d.js), any other with plotly.
function dvPlot(host, fig) {
  // plotly.js: the page's (a global), or the one a module of ours holds in scope (the notebook widget's)
  const P = typeof Plotly === "undefined" ? null : Plotly;
  const draw = dvFlatFits(fig) ? dvFlatPlot : dvChartFits(fig) ? dvChartPlot : null, flat = !!draw;
  if (!host || (!P && !flat)) return null;
  let gd = host.querySelector(":scope > .dv-fig");
  if (gd && !!gd.__dvFlat !== flat) {  // drawn the other way before: a figure element anew
    if (P && !gd.__dvFlat) P.purge(gd);
    gd.remove();
    gd = null;
  }
  if (!gd) {
    gd = document.createElement("div");
    gd.className = "dv-fig";
    host.replaceChildren(gd);
  }
  fig.layout.margin = {...fig.layout.margin, autoexpand: false};  // the margins stated are the margins drawn
  gd.__dvFig = fig;
  const width = dvFit(gd, fig);
  if (flat) {
    draw(gd, fig, width);
  } else {
    dvRaster(gd, fig, width);  // dense marker layers as one image each (raster.js)
    P.react(gd, fig.data, fig.layout, DV_PLOT_CONFIG);
    if (gd.__dvRaster && !gd.__dvRasterWired) {
      gd.__dvRasterWired = true;
      gd.on("plotly_restyle", () => dvRasterAgain(gd));
    }
  }
  performance.mark("dv-drawn-" + (fig.__kind || "figure"));  // timed by bench/ui_bench.py
  gd.__dvDraws = (gd.__dvDraws || 0) + 1;  // how often this figure was drawn (tests count: once per trace)
  return gd;
}

// The plot area of a figure drawn by dvPlot, in viewport pixels, for the y domain `dom` of its height.
function dvArea(gd, dom) {
  const fig = gd && gd.__dvFig;
  if (!fig || !gd.isConnected) return null;
  const r = gd.getBoundingClientRect(), m = fig.layout.margin, w = r.width - m.l - m.r, h = fig.layout.height - m.t - m.b;
  if (w <= 0 || h <= 0) return null;
  const [lo, hi] = dom || [0, 1];
  const top = r.top + m.t + (1 - hi) * h, bottom = r.top + m.t + (1 - lo) * h;
  return {left: r.left + m.l, right: r.left + m.l + w, top, bottom, width: w, height: bottom - top};
}

function dvOverlay(gd) {
  const host = gd.parentElement;
  if (getComputedStyle(host).position === "static") host.style.position = "relative";
  let ol = host.querySelector(":scope > .dv-overlay");
  if (!ol) { ol = document.createElement("div"); ol.className = "dv-overlay"; host.appendChild(ol); }
  const h = host.getBoundingClientRect();
  ol.style.left = "0px"; ol.style.top = "0px"; ol.style.width = h.width + "px"; ol.style.height = h.height + "px";
  return [ol, h];
}

function dvBox(cls, h, x0, y0, x1, y1) {
  return `<div class="${cls}" style="left:${(x0 - h.left).toFixed(1)}px;top:${(y0 - h.top).toFixed(1)}px;` +
         `width:${Math.max(1, x1 - x0).toFixed(1)}px;height:${Math.max(1, y1 - y0).toFixed(1)}px"></div>`;
}

const dvFig = (host) => host && host.querySelector(":scope > .dv-fig");
// What the inspector's fork buttons call for trace `d`, or null: none (`options.onFork`, where `options.canFork(d)`),
// with the settings a fork of a trace of its canvas may switch (`options.switchable`: {canvas: {name: default}}).
const dvForker = (v, d) => (v.options.onFork && v.options.canFork && v.options.canFork(d)
  ? {ask: v.options.onFork, knobs: (v.options.switchable || {})[d.canvas || "masked"] || null} : null);

// ----- one player -----------------------------------------------------------------------------------
function dvView(hosts, options) {
  const v = {hosts, options, data: null, frame: 0, pos: 0, hover: -1, playing: false, timer: null, speed: 1,
             lang: options.lang || "en", drawn: {}};
  v.t = () => options.strings[v.lang];
  v.theme = options.theme;
  v.render = () => dvRender(v);
  v.seek = (f) => { dvStop(v); v.frame = Math.max(0, Math.min(v.data.n, f)); dvRender(v); };
  v.select = (f, p) => {
    dvStop(v);
    if (f !== null && f !== undefined) v.frame = Math.max(0, Math.min(v.data.n, f));
    if (p !== null && p !== undefined && p >= 0 && p < v.data.G) v.pos = p;
    dvRender(v);
  };
  v.play = () => dvPlay(v);
  v.inspect = () => {  // the inspector alone (the temperature slider moves: its tempered bars follow)
    const d = v.data;
    if (d && !d.live) paintInspector(v.hosts.inspector, d, v.pos, v.frame, v.options.temperature ? v.options.temperature(d) : d.temperature, dvForker(v, d));
  };
  v.stop = () => { dvStop(v); dvRender(v); };
  return v;
}

// Show trace `d` (finished, or `live`: a decode in progress) in view `v`; `at` places the cursor:
// {frame (null: the end), selected (null: keep the view's)}. The same trace shown again keeps it.
function dvShow(v, d, at = {}) {
  const root = v.hosts.canvas, t = v.t();
  d.t = t;
  if (d.live) {
    dvStop(v);
    const kind = d.n ? "live" : "queued";  // queued: no step yet, so no head (a canvas of unknown kind)
    if (root.__dvKind !== kind || v.data !== d) {
      root.className = "dv-canvas dv-player dv-live";
      root.innerHTML = d.n ? dvCanvasHtml("live", d, t, v.theme)
        : `${dvLiveControlsHtml(t)}<div class="dv-status"></div>`;
      root.__dvKind = kind;
      const stop = root.querySelector(".dv-stop"), controls = root.querySelector(".dv-controls");
      if (stop) stop.onclick = () => v.options.onStop && v.options.onStop();
      if (controls && root.__dvControlsPx) controls.style.minHeight = `${root.__dvControlsPx}px`;  // (inViewSoon)
    }
    v.data = d;
    if (!d.n) { root.querySelector(".dv-status").textContent = liveStatus(d); return; }
    paintCanvas(root, d, d.n, -1);
    inViewSoon(v);
    return;
  }
  const same = v.data === d && root.__dvKind === "player" && root.__dvLang === v.lang;
  // A decode that has just finished keeps its text (a span per position, painted step by step): only the
  // controls and the key around it are made anew, and the last paint changes only what the end changes.
  const finished = v.data === d && (root.__dvKind === "live" || root.__dvKind === "queued");
  const kept = finished && root.__dvKind === "live" && !d.grid ? root.querySelector(".dv-text") : null;
  // a trace playing goes on playing where it is when it is shown again as it was (the same cursor), in another
  // language too (its markup made anew: the page's language switched while it played)
  const goOn = v.playing && v.data === d && !finished && at.frame === undefined;
  dvStop(v);
  if (v.data !== d || finished || at.frame !== undefined) v.frame = at.frame === null || at.frame === undefined ? d.n : Math.max(0, Math.min(d.n, at.frame));
  if (at.selected !== null && at.selected !== undefined) v.pos = at.selected;
  v.pos = Math.max(0, Math.min(d.G - 1, v.pos));
  v.data = d;
  if (!same) {
    d.frame0 = v.frame;
    root.className = "dv-canvas dv-player";
    root.innerHTML = dvCanvasHtml("player", d, t, v.theme);
    if (kept) root.querySelector(".dv-text").replaceWith(kept);
    root.__dvKind = "player";
    root.__dvLang = v.lang;
    dvWire(v);
    v.drawn = {};
  }
  v.drawNow = finished;  // a decode just ended: its heatmap in this task (its text stood painted step by step)
  dvRender(v);
  v.drawNow = false;
  if (goOn) dvPlay(v);
}

// The player's controls (made anew with the canvas's markup).
function dvWire(v) {
  const root = v.hosts.canvas, q = (sel) => root.querySelector(sel);
  dvWireControls(v);
  q(".dv-text").onclick = (e) => { const tok = e.target.closest("[data-pos]"); if (tok) v.select(null, Number(tok.dataset.pos)); };
  q(".dv-text").onmouseover = (e) => {
    const tok = e.target.closest("[data-pos]"), p = tok ? Number(tok.dataset.pos) : -1;
    if (p !== v.hover) { v.hover = p; dvSync(v, false); if (v.options.onHover) v.options.onHover(v, p); }
  };
  q(".dv-text").onmouseleave = () => {
    if (v.hover !== -1) { v.hover = -1; dvSync(v, false); if (v.options.onHover) v.options.onHover(v, -1); }
  };
  const tour = q(".dv-tour-start");
  if (tour) tour.onclick = () => v.options.onTour && v.options.onTour();
}

// The buttons, scrubber and speed of dvControlsHtml in `v.hosts.canvas`, driving any player `v` (one with
// frame, speed, playing, data.n, seek, stop, render: a dvView, or Compare's pair: pair.js).
function dvWireControls(v) {
  const q = (sel) => v.hosts.canvas.querySelector(sel);
  const slot = q(".dv-speed"), speed = dvSpeedSelect(v.hosts.canvas, v.t(), v.theme);
  if (slot !== speed) slot.replaceWith(speed);
  if (speed.value !== String(v.speed)) speed.value = String(v.speed);
  speed.onchange = () => { v.speed = Number(speed.value); if (v.playing) dvPlay(v); };
  q(".dv-play").onclick = () => { if (v.playing) v.stop(); else dvPlay(v); };
  q(".dv-first").onclick = () => v.seek(0);
  q(".dv-prev").onclick = () => v.seek(v.frame - 1);
  q(".dv-next").onclick = () => v.seek(v.frame + 1);
  q(".dv-last").onclick = () => v.seek(v.data.n);
  q(".dv-scrub").oninput = (e) => v.seek(Number(e.target.value));
}

function dvStop(v) {
  if (v.timer) clearInterval(v.timer);
  v.timer = null;
  v.playing = false;
}

function dvPlay(v) {
  const d = v.data;
  if (!d || d.live) return;
  dvStop(v);
  if (v.frame >= d.n) v.frame = 0;
  v.playing = true;
  const ms = Math.max(20, v.theme.frameMs / v.speed);
  v.timer = setInterval(() => {
    if (!v.hosts.canvas.isConnected || v.frame >= v.data.n) { dvStop(v); v.render(); return; }
    v.frame += 1;
    if (v.frame >= v.data.n) dvStop(v);
    v.render();
  }, ms);
  v.render();
}

// The canvas's text scrolled to what its frame confirms (canvas.js keepInView), at the next frame: its layout is
// read where the frame lays out anyway, once after every change a task makes (the inspector's, the figures'), not
// forced in the middle of them; once per frame however many chunks or frames came. A player's controls' height is
// kept there too (`__dvControlsPx`): a decode's live controls stand as tall (dvShow), so the page below the canvas
// does not move when a decode starts, nor when it ends.
function inViewSoon(v) {
  if (v.inViewQueued) return;
  v.inViewQueued = true;
  requestAnimationFrame(() => {
    v.inViewQueued = false;
    const root = v.hosts.canvas, d = v.data;
    if (!d || !root || !root.isConnected) return;
    if (d.live) keepInView(root, d, d.n, -1);
    else keepInView(root, d, v.frame, v.pos);
    const controls = d.live ? null : root.querySelector(".dv-controls");
    if (controls) root.__dvControlsPx = controls.getBoundingClientRect().height;
  });
}

// Everything that follows the cursor: the canvas, the scrubber, the inspector, the figures' overlays.
function dvRender(v) {
  const d = v.data, root = v.hosts.canvas;
  if (!d || !root || !root.isConnected || d.live) return;
  d.t = v.t();
  paintCanvas(root, d, v.frame, v.pos);
  inViewSoon(v);
  performance.mark("dv-canvas");
  const scrub = root.querySelector(".dv-scrub");
  if (scrub && Number(scrub.value) !== v.frame) scrub.value = String(v.frame);
  const play = root.querySelector(".dv-play");
  if (play) play.textContent = v.playing ? d.t.pause : d.t.play;
  // The inspector at the cursor; in the task that finishes a decode (`v.drawNow`), once the canvas and heatmap it
  // ends on are painted: that frame lays out and paints those two alone (dvDrawFigures draws the rest then too).
  const inspect = () => {
    if (v.data !== d) return;
    const T = v.options.temperature ? v.options.temperature(d) : d.temperature;
    paintInspector(v.hosts.inspector, d, v.pos, v.frame, T, dvForker(v, d));
  };
  if (v.drawNow) dvAfterPaint(inspect);
  else inspect();
  if (!dvDrawFigures(v)) dvSync(v, true);  // (figures drawn in this task bring their cursors themselves)
  if (v.options.onRender) v.options.onRender(v);
}

// `fn` in a task after the browser has painted what the page holds now, so a view drawn before it shows before the
// work `fn` does. A hidden page paints nothing: then once the page is seen hidden, checked every 100 ms (a shown page
// whose frame is late, on a busy machine, still waits for it).
function dvAfterPaint(fn) {
  let done = false;
  const run = () => { if (!done) { done = true; fn(); } };
  const hidden = () => { if (!done) { if (document.hidden) run(); else setTimeout(hidden, 100); } };
  requestAnimationFrame(() => setTimeout(run, 0));
  setTimeout(hidden, 100);
}

// The figures of the trace on show, drawn once per trace and language, in tasks of their own after the
// canvas is painted: the heatmap first, with every other figure drawn on a canvas of ours (a few ms each), then,
// once that is painted, plotly's in one task (the page is laid out and painted once for them, not once each);
// `options.onDrawn(v)` once the trace's figures are all drawn. `v.later` is set while some are to come (the call
// that set it is the one that draws them). `v.drawNow` (a decode that has just ended, its text painted as it
// came): the heatmap alone without waiting for a frame, in the task that finishes the canvas, its cursor at that
// frame (read where the page is laid out anyway, not laid out in that task); the other figures once the canvas and
// heatmap are painted (the first frame lays out and paints what a decode ends on, not every view). Returns whether
// figures were drawn now (their cursors then follow).
function dvDrawFigures(v) {
  const d = v.data, t = v.t(), key = v.lang, names = ["heatmap", "order", "steps", "task"];
  const todo = () => names.filter((name) => v.hosts[name] && v.drawn[name] !== key);
  const specs = {};  // name -> its figure, made once
  const make = {heatmap: () => dvHeatmapFig(d, t), order: () => dvOrderFig(d, t), steps: () => dvStepsFig(d, t),
                task: () => dvTaskFig(d, t, v.theme)};
  const spec = (name) => specs[name] || (specs[name] = make[name]());
  const draw = (name) => {
    const host = v.hosts[name];
    if (!host || v.drawn[name] === key || v.data !== d) return;
    v.drawn[name] = key;
    if (name === "task") {  // the same curves (or none) as the trace before: nothing to draw again
      const sig = JSON.stringify([key, d.task, d.task && d.threshold, d.task && d.revise]);
      if (host.__dvTaskSig === sig) return;
      host.__dvTaskSig = sig;
    }
    const fig = spec(name);
    fig.__kind = name;
    dvPlot(host, fig);
  };
  if (!todo().length) return false;
  const mine = v.later = {};
  let atOnce = v.drawNow;
  const next = () => {
    if (v.later !== mine) return;  // a later call draws them
    v.later = null;
    if (v.data !== d || v.lang !== key) return;  // another trace or language: its own call draws it
    const left = todo(), now = left[0] !== "heatmap" ? left : atOnce ? ["heatmap"]
      : left.filter((name) => name === "heatmap" || dvOurs(spec(name)));
    now.forEach(draw);
    dvSync(v, !atOnce);  // their cursors: drawn with them, or (in the task that finishes a decode) at its frame
    if (left.length > now.length) { v.later = mine; dvAfterPaint(next); }
    else if (v.options.onDrawn) v.options.onDrawn(v);
  };
  if (!atOnce) {
    dvAfterPaint(next);
    return false;
  }
  next();
  atOnce = false;
  return true;
}

// Redraw the figures that depend on the host's width (a phone turned, a tab shown).
function dvResize(v) {
  if (!v.data || v.data.live) return;
  v.drawn = {};
  dvDrawFigures(v);
  dvSync(v, false);
}

// ----- the cursor over the figures -------------------------------------------------------------------
function dvSync(v, now) {
  if (!now) {
    if (v.syncQueued) return;
    v.syncQueued = true;
    requestAnimationFrame(() => { v.syncQueued = false; dvSync(v, true); });
    return;
  }
  const d = v.data;
  if (!d || d.live) return;
  dvDrawHeatmapCursor(v, d);
  dvDrawOrderCursor(v, d);
  dvDrawStepsCursor(v, d);
}

function dvDrawHeatmapCursor(v, d) {
  const gd = dvFig(v.hosts.heatmap), a = dvArea(gd);
  if (!a || !d.n || !d.G) return;
  const [ol, h] = dvOverlay(gd), cw = a.width / d.G, rh = a.height / d.n, f = v.frame;
  let html = "";
  if (f < d.n) html += dvBox("dv-ol-future", h, a.left, a.top + f * rh, a.right, a.bottom);
  if (f >= 1) html += dvBox("dv-ol-cursor", h, a.left, a.top + (f - 1) * rh, a.right, a.top + f * rh);
  html += dvBox("dv-ol-cursor", h, a.left + v.pos * cw, a.top, a.left + (v.pos + 1) * cw, a.bottom);
  if (v.hover >= 0) html += dvBox("dv-ol-hover", h, a.left + v.hover * cw, a.top, a.left + (v.hover + 1) * cw, a.bottom);
  ol.innerHTML = html;
}

function dvDrawOrderCursor(v, d) {
  const gd = dvFig(v.hosts.order), a = dvArea(gd);
  if (!a || !d.G) return;
  const w = d.width, rows = Math.ceil(d.G / w), cw = a.width / w, rh = a.height / rows;
  const [ol, h] = dvOverlay(gd);
  const cell = (cls, p) => dvBox(cls, h, a.left + (p % w) * cw, a.top + Math.floor(p / w) * rh,
                                 a.left + (p % w + 1) * cw, a.top + (Math.floor(p / w) + 1) * rh);
  // not decided yet at this frame (a renoising trace: not yet holding its final token)
  const open = d.rn ? (p) => dvRenoiseStability(d).settled[p] >= v.frame
    : (p) => { const st = dvState(d, p, v.frame); return !st || st.taken; };
  let html = "";
  for (let p = 0; p < d.G; p++) { if (open(p)) html += cell("dv-ol-future", p); }
  html += cell("dv-ol-cursor", v.pos);
  if (v.hover >= 0) html += cell("dv-ol-hover", v.hover);
  ol.innerHTML = html;
}

function dvDrawStepsCursor(v, d) {
  const gd = dvFig(v.hosts.steps), top = dvArea(gd, DV_STEPS_DOMAINS.top), low = dvArea(gd, DV_STEPS_DOMAINS.low);
  if (!top || !low || !d.n) return;
  const [ol, h] = dvOverlay(gd), cw = low.width / d.n, f = v.frame;
  let html = "";
  if (f < d.n) {
    html += dvBox("dv-ol-future", h, low.left + f * cw, top.top, low.right, top.bottom);
    html += dvBox("dv-ol-future", h, low.left + f * cw, low.top, low.right, low.bottom);
  }
  if (f >= 1) html += dvBox("dv-ol-cursor", h, low.left + (f - 1) * cw, top.top, low.left + f * cw, low.bottom);
  ol.innerHTML = html;
}

// A click at (x, y) on a figure's plot area: [frame, position] of the cell there (position null: a
// step only), or null.
function dvCellAt(v, x, y) {
  const d = v.data;
  if (!d || d.live) return null;
  const inside = (a) => a && x >= a.left && x <= a.right && y >= a.top && y <= a.bottom;
  let a = dvArea(dvFig(v.hosts.heatmap));
  if (inside(a) && d.n) {
    return [Math.floor((y - a.top) / a.height * d.n) + 1, Math.min(d.G - 1, Math.floor((x - a.left) / a.width * d.G))];
  }
  a = dvArea(dvFig(v.hosts.order));
  if (inside(a)) {
    const rows = Math.ceil(d.G / d.width);
    const pos = Math.floor((y - a.top) / a.height * rows) * d.width + Math.floor((x - a.left) / a.width * d.width);
    if (pos >= d.G) return null;  // to the step that last decided it (a revised trace: its last decision)
    if (d.rn) return [dvRenoiseStability(d).settled[pos] + 1, pos];  // a renoising trace: the step it settled at
    const evs = d.events[pos];
    return [evs.length ? evs[evs.length - 1][0] + 1 : d.order[pos] + 1, pos];
  }
  const gd = dvFig(v.hosts.steps);
  for (const dom of [DV_STEPS_DOMAINS.top, DV_STEPS_DOMAINS.low]) {
    a = dvArea(gd, dom);
    if (inside(a) && d.n) return [Math.min(d.n, Math.floor((x - a.left) / a.width * d.n) + 1), null];
  }
  return null;
}

// A Compare side: its canvas at frame `at.frame` (null: the end), with the positions that differ from the
// other side there marked (`at.marks`: pair.js), else its differences at the end underlined (`diff`). A side
// still decoding (`d.live`) with `at.onStop` has the live canvas's bar and Stop above it, which calls that.
function dvShowStatic(root, d, t, theme, key, at = {}) {
  d.t = t;
  const stop = !!(d.live && at.onStop);
  if (d.live && !d.n) {  // queued: no step yet (no head: a canvas of unknown kind), where it waits, and its Stop
    if (root.__dvKind !== "queued") {
      root.className = "dv-canvas dv-static dv-live";
      root.innerHTML = (stop ? dvLiveControlsHtml(t) : "") + `<div class="dv-status"></div>`;
      root.__dvKind = "queued";
      root.__dvFor = root.__dvStop = null;  // its first step makes the canvas anew
    }
    const button = root.querySelector(".dv-stop");
    if (button) button.onclick = () => at.onStop && at.onStop();
    root.querySelector(".dv-status").textContent = liveStatus(d);
    return;
  }
  root.__dvKind = "static";
  if (root.__dvFor !== d || root.__dvLang !== t || !!root.__dvStop !== stop) {
    root.className = "dv-canvas dv-static" + (stop ? " dv-live" : "");
    root.innerHTML = (stop ? dvLiveControlsHtml(t) : "") + dvCanvasHtml("static", d, t, theme, key);
    root.__dvLang = t;
    root.__dvStop = stop;
  }
  const button = root.querySelector(".dv-stop");
  if (button) button.onclick = () => at.onStop && at.onStop();
  const f = at.frame === null || at.frame === undefined ? d.n : Math.max(0, Math.min(d.n, at.frame));
  paintCanvas(root, d, f, -1, at.marks);
}
