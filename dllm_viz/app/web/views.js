// dllm-viz: the linked views. The Plotly figures (figures.py, drawn from the server's JSON) get
// overlays drawn here from the page's one cursor (window.__dv: frame, selected position, hovered
// position): the current step, the selected column, later steps faded. A click on a figure's
// cell moves the cursor (`cellAt`). Nothing here asks the server.

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
  for (let p = 0; p < d.G; p++) { const st = dvState(d, p, dv.frame); if (!st || st.taken) html += cell("dv-ol-future", p); }
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
  fitToCells();
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
    if (pos >= d.G) return null;  // to the step that last decided it (a revised trace: its last decision)
    return [d.ev && d.ev[pos].length ? d.ev[pos][d.ev[pos].length - 1][0] + 1 : d.order[pos] + 1, pos];
  }
  gd = graph("dv-steps");
  for (const sub of ["xy", "x2y3"]) {
    a = gd && plotArea(gd, sub);
    if (inside(a) && d.n) return [Math.floor((x - a.left) / a.width * d.n) + 1, null];
  }
  return null;
}


// ----- narrow figures (a phone) ---------------------------------------------------------------------
// figures.py sizes the heatmap's boxes and the order map's labels for a desktop column; in a narrow
// one they would spill over their cells. Each is shrunk to its cells once per drawn figure.
function fitToCells() {
  const P = window.Plotly;
  if (!P || typeof P.restyle !== "function") return;
  for (const id of ["dv-heatmap", "dv-cmp-heat-a", "dv-cmp-heat-b"]) {
    const gd = graph(id), a = gd && plotArea(gd, "xy");
    if (!a || !gd.data || !gd.data[1] || !gd.layout) continue;
    const span = (axis) => Math.abs(axis.range[1] - axis.range[0]) || 1;
    const cell = Math.min(a.width / span(gd.layout.xaxis), a.height / span(gd.layout.yaxis));
    const want = Math.max(2, Math.floor(cell * 0.9)), now = gd.data[1].marker && gd.data[1].marker.size;
    if (now > want && gd.__dvFit !== want) { gd.__dvFit = want; P.restyle(gd, {"marker.size": want}, [1]); }
  }
  const gd = graph("dv-order"), a = gd && plotArea(gd, "xy");
  if (!a || !gd.data || !gd.data[0] || !gd.data[0].text || !gd.layout) return;
  const columns = Math.abs(gd.layout.xaxis.range[1] - gd.layout.xaxis.range[0]) || 1;
  const chars = Math.max(1, Math.floor(a.width / columns / 7.5));  // ~7 px a character at the labels' 11 px
  if (gd.__dvChars === chars) return;
  gd.__dvChars = chars;
  const full = gd.__dvText || (gd.__dvText = gd.data[0].text.map((row) => row.slice()));
  const cut = (s) => (s.length <= chars ? s : s.slice(0, Math.max(1, chars - 1)) + "…");
  const long = full.some((row) => row.some((s) => s.length > chars));
  if (long || gd.__dvCut) {  // labels to cut, or cut ones to give back (the figure grew)
    gd.__dvCut = long;
    P.restyle(gd, {text: [long ? full.map((row) => row.map(cut)) : full]}, [0]);
  }
}
