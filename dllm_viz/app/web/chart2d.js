// dllm-viz: a chart of bars, lines and markers on one or more plots drawn on a 2D canvas, without plotly (after
// plot2d.js, whose canvas, texts, ticks and hover label it shares; views.js's dvPlot draws a figure here where
// `dvChartFits` says it can).
//
// plotly draws the per-step figure (two plots, bars, a temperature line on a right axis, dots, a legend) in 21-24 ms
// on the 2-core machine the page is measured on, and Compare's order figure in about as much with its markers as an
// image (raster.js), in the task that shows a finished decode (docs/playground.md). Such a figure is drawn here
// instead, from the same spec (figures.js), laid out from what it states as plotly lays it out: its margins and the
// axes' domains (so views.js's overlay and a click's step are where they were), the axes' ranges (or plotly's
// automatic range where a bar's axis states none; a log axis in powers of ten), ticks and titles, a right axis over
// a plot (`overlaying`), the shapes (lines, shaded spans) and annotations (a fork's mark, whose hover says what
// changed) and the legend under the plots, whose key hides or shows its trace on a click, as plotly's does. Hovering
// shows the nearest point's label (its hovertemplate filled in), a bar's under the pointer, or an annotation's text.
// The element keeps `data` and `layout` and `__dvFlat` (where each text and legend key was drawn) as plot2d.js's does.

const DV_CHART_REACH = 20;  // px from a point within which hovering shows its label (plotly's hoverdistance)
const DV_CHART_ROW = 19;  // px a legend row (fit.js's dvLegendRows counts the rows, dvGrow the room they take)
const DV_CHART_KEY = 46;  // px of a legend entry before its name: its symbol and the gaps (fit.js's too)
const DV_CHART_SUPERSCRIPT = "\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079";  // 0-9 raised

// Whether `fig` is one this file draws: bars and scatter traces (lines, markers, both; lines straight or in steps)
// of one marker colour and size and raster.js's symbols (one, or one a point), on linear axes or log ones (a stated
// range); shapes that are lines or rectangles; no heatmaps (plot2d.js's), menus, images, error bars or number
// formats in a hover label.
function dvChartFits(fig) {
  const L = fig.layout;
  if (typeof window !== "undefined" && window.__dvFlatOff) return false;  // (benches compare plotly's drawing)
  if (L.updatemenus || (L.images && L.images.length) || !L.margin || !L.height || !fig.data.length) return false;
  const axes = Object.keys(L).filter((k) => /^[xy]axis\d*$/.test(k)).map((k) => L[k]);
  const log = (a) => a.type === "log" && Array.isArray(a.range);
  if (axes.some((a) => (a.type && a.type !== "linear" && !log(a)) || a.visible === false)) return false;
  if ((L.shapes || []).some((s) => s.type !== "line" && s.type !== "rect")) return false;
  return fig.data.every((tr) => {
    if (tr.error_y || tr.error_x || tr.fill || tr.text || !Array.isArray(tr.x) || !Array.isArray(tr.y)) return false;
    if (tr.hovertemplate && /%\{[^}]*:/.test(tr.hovertemplate)) return false;  // a number format: plotly's d3-format
    if (!L[dvChartAxisKey(tr.xaxis || "x")] && (tr.xaxis || "x") !== "x") return false;
    if (!L[dvChartAxisKey(tr.yaxis || "y")] && (tr.yaxis || "y") !== "y") return false;
    const m = tr.marker || {};
    if ((m.color !== undefined && typeof m.color !== "string") || Array.isArray(m.size)) return false;
    const symbols = Array.isArray(m.symbol) ? m.symbol : [m.symbol || "circle"];
    if (tr.type === "bar") return !tr.orientation || tr.orientation === "v";
    const line = tr.line || {};
    return tr.type === "scatter" && ["lines", "markers", "lines+markers"].includes(tr.mode || "lines+markers") &&
      [undefined, "linear", "hv", "hvh"].includes(line.shape) &&
      [undefined, "solid", "dot", "dash"].includes(line.dash) && symbols.every((s) => DV_RASTER_SYMBOLS.has(s));
  });
}

const dvChartAxisKey = (ref) => ref[0] + "axis" + ref.slice(1);  // "x2" -> "xaxis2"

// A line's dashes in css px as plotly draws them (its "dot" and "dash", by its width, at least 3), or none.
function dvChartDash(line, width) {
  const w = Math.max(width, 3);
  return line.dash === "dot" ? [w, w] : line.dash === "dash" ? [3 * w, 3 * w] : [];
}

// The legend entry (chart2d's, gd.__dvFlat.legend) at (x, y) css px of a drawn figure `f`, or undefined.
const dvChartKeyAt = (f, x, y) => (f.legend || []).find((k) => x >= k.left && x <= k.right && y >= k.top &&
                                                               y <= k.bottom);

// The axes of `fig` as drawn in `box` (the plots' area): {"x": {a, lo, hi, at(v) -> px, ticks}, "y2": ...}, each
// over its domain (an overlaying axis over the domain of the one it overlays), its range stated or plotly's automatic
// one over what is drawn on it (bars from zero). A log axis's range is in powers of ten, as plotly states it, and a
// value not above zero has no place on it (NaN).
function dvChartAxes(fig, box) {
  const L = fig.layout, out = {}, refs = new Set(["x", "y"]);
  fig.data.forEach((tr) => { refs.add(tr.xaxis || "x"); refs.add(tr.yaxis || "y"); });
  for (const ref of refs) {
    const a = L[dvChartAxisKey(ref)] || {}, over = a.overlaying ? L[dvChartAxisKey(a.overlaying)] || {} : a;
    const [d0, d1] = over.domain || a.domain || [0, 1], horizontal = ref[0] === "x";
    const lo = horizontal ? box.l + d0 * box.w : box.t + (1 - d1) * box.h;  // px at the domain's start
    const hi = horizontal ? box.l + d1 * box.w : box.t + (1 - d0) * box.h;
    const [r0, r1] = a.range || dvChartAutorange(fig, ref, a, hi - lo);
    const log = a.type === "log", u = (v) => (log ? (v > 0 ? Math.log10(v) : NaN) : v);
    const at = horizontal ? (v) => lo + (u(v) - r0) / (r1 - r0) * (hi - lo)
      : (v) => hi - (u(v) - r0) / (r1 - r0) * (hi - lo);
    const ticks = log ? dvChartLogTicks(r0, r1, a)
      : dvFlatTicks({...a, range: [r0, r1]}, hi - lo, horizontal ? 80 : 40);
    out[ref] = {a, ref, lo, hi, at, ticks};
  }
  return out;
}

// A log axis's ticks over log10 range r0..r1, [value, label]: every power of ten (1, 10, else 10 to its power with
// the exponent raised where `exponentformat` is "power", else 1e-3), and over less than two decades 2 and 5 of each
// too, labelled so (plotly's).
function dvChartLogTicks(r0, r1, a) {
  const lo = Math.min(r0, r1), hi = Math.max(r0, r1), out = [];
  const sup = (n) => String(n).replace(/-/g, "\u207b").replace(/\d/g, (c) => DV_CHART_SUPERSCRIPT[c]);
  const power = (k) => (k === 0 ? "1" : k === 1 ? "10" : a.exponentformat === "power" ? "10" + sup(k) : `1e${k}`);
  for (let k = Math.floor(lo); k <= Math.ceil(hi); k++) {
    for (const [m, label] of [[1, power(k)], ...(hi - lo < 2 ? [[2, "2"], [5, "5"]] : [])]) {
      const v = m * 10 ** k, e = Math.log10(v);
      if (e >= lo - 1e-9 && e <= hi + 1e-9) out.push([v, label]);
    }
  }
  return out;
}

// plotly's automatic range of axis `ref` (`a`, `length` px long): over the values of the traces on it, 5% beyond them
// at each end, or as far as the largest marker on it needs to be whole (from zero where a bar stands on it or
// `rangemode` says so, with nothing below it then).
function dvChartAutorange(fig, ref, a, length) {
  const on = fig.data.filter((tr) => (ref[0] === "x" ? tr.xaxis || "x" : tr.yaxis || "y") === ref);
  const vals = on.flatMap((tr) => (ref[0] === "x" ? tr.x : tr.y)).filter((v) => typeof v === "number" && isFinite(v));
  const zero = a.rangemode === "tozero" || on.some((tr) => tr.type === "bar" && ref[0] === "y");
  let lo = vals.length ? Math.min(...vals) : 0, hi = vals.length ? Math.max(...vals) : 1;
  if (zero) { lo = Math.min(0, lo); hi = Math.max(0, hi); }
  if (hi === lo) { lo -= 1; hi += 1; }
  const marked = on.filter((tr) => tr.type === "scatter" && (tr.mode || "lines+markers").includes("markers"));
  const px = Math.max(0, ...marked.map((tr) => ((tr.marker && tr.marker.size) ?? 6) / 2 + 1));
  const pad = Math.max(0.05, px / Math.max(1, length - 2 * px)) * (hi - lo);
  return [zero && lo === 0 ? 0 : lo - pad, zero && hi === 0 ? 0 : hi + pad];
}

// Draw `fig` (dvChartFits) into the figure element `gd`, `width` css px wide, and keep it there for hovering, a
// legend click (its trace hidden or shown, drawn again) and a change of width.
function dvChartPlot(gd, fig, width) {
  const drawn = dvFlatCanvas(gd, fig, width, dvChartPlot, dvChartHit);
  if (!drawn) return;
  const {g, scale, box, text} = drawn, L = fig.layout, axes = dvChartAxes(fig, box), flat = gd.__dvFlat;
  flat.axes = axes;
  flat.click = (x, y) => dvChartToggle(gd, x, y);
  flat.clicks = (x, y) => !!dvChartKeyAt(flat, x, y);
  const shown = fig.data.filter((tr) => tr.visible !== false && tr.visible !== "legendonly");
  const plotOf = (tr) => `${tr.xaxis || "x"} ${tr.yaxis || "y"}`;  // a plot: a pair of axes
  const plots = [...new Set(fig.data.map(plotOf))].map((key) => {
    const [x, y] = key.split(" ");
    return {X: axes[x], Y: axes[y], traces: shown.filter((tr) => plotOf(tr) === key)};
  });
  g.fillStyle = L.plot_bgcolor || "#fff";
  plots.forEach(({X, Y}) => g.fillRect(X.lo, Y.lo, X.hi - X.lo, Y.hi - Y.lo));
  plots.forEach(({X, Y}) => dvChartGrid(g, X, Y, scale));
  const where = dvChartWhere(box, axes);
  dvChartShapes(g, L.shapes, where, "below");
  for (const {X, Y, traces} of plots) {  // each plot's traces inside it: bars under lines, lines under markers
    g.save();
    g.beginPath();
    g.rect(X.lo, Y.lo, X.hi - X.lo, Y.hi - Y.lo);
    g.clip();
    traces.filter((tr) => tr.type === "bar").forEach((tr) => dvChartBars(g, tr, X, Y));
    traces.filter((tr) => tr.type === "scatter").forEach((tr) => dvChartTrace(g, tr, X, Y, scale));
    g.restore();
    g.setTransform(scale, 0, 0, scale, 0, 0);
  }
  dvChartShapes(g, L.shapes, where, "above");
  flat.notes = dvChartNotes(L.annotations, where, text);
  dvChartAxisTexts(L, box, axes, width, text);
  flat.legend = dvChartLegend(g, fig, box, width, text);
  dvFlatTitle(L, width, text);
}

// A shape's or an annotation's place in px: `x` on axis `ref` ("x2") or the plots' width ("paper"); `y` likewise.
function dvChartWhere(box, axes) {
  return {
    x: (ref, v) => (ref === "paper" ? box.l + v * box.w : (axes[ref] || axes.x).at(v)),
    y: (ref, v) => (ref === "paper" ? box.t + (1 - v) * box.h : (axes[ref] || axes.y).at(v)),
  };
}

// An axis's grid lines at its ticks across its plot (a line 1 css px wide, on a device pixel).
function dvChartGrid(g, X, Y, scale) {
  const on = (v) => Math.round(v * scale) / scale - 0.5;
  for (const [axis, across] of [[Y, X], [X, Y]]) {
    if (axis.a.showgrid === false) continue;
    g.fillStyle = axis.a.gridcolor || "#eee";
    axis.ticks.forEach(([v]) => (axis === Y ? g.fillRect(across.lo, on(axis.at(v)), across.hi - across.lo, 1)
      : g.fillRect(on(axis.at(v)), across.lo, 1, across.hi - across.lo)));
  }
}

// Half a bar's width in its axis's values: 0.8 of the narrowest step between the bars (plotly's bargap 0.2), halved.
function dvChartHalf(tr) {
  const xs = tr.x.filter((v) => typeof v === "number"), steps = xs.slice(1).map((v, i) => Math.abs(v - xs[i]))
    .filter((d) => d > 0);
  return 0.4 * (steps.length ? Math.min(...steps) : 1);
}

// Bars from zero to each value (dvChartHalf wide each side of it).
function dvChartBars(g, tr, X, Y) {
  const half = dvChartHalf(tr), m = tr.marker || {};
  g.fillStyle = m.color || "#636efa";
  g.globalAlpha = m.opacity ?? 1;
  tr.x.forEach((x, j) => {
    const y = tr.y[j];
    if (typeof x !== "number" || typeof y !== "number") return;
    const left = X.at(x - half), right = X.at(x + half), top = Y.at(Math.max(0, y)), bottom = Y.at(Math.min(0, y));
    g.fillRect(Math.min(left, right), Math.min(top, bottom), Math.abs(right - left), Math.abs(bottom - top));
  });
  g.globalAlpha = 1;
}

// A scatter trace: its line (straight, or in steps: "hv" across then up, "hvh" across half way; a null breaks it;
// dashed as plotly dashes it) and its markers (raster.js's painter), in the line's colour where it states none.
function dvChartTrace(g, tr, X, Y, scale) {
  const mode = tr.mode || "lines+markers", line = tr.line || {};
  if (mode.includes("lines")) {
    const w = line.width ?? 2;
    g.strokeStyle = line.color || "#636efa";
    g.lineWidth = w;
    g.lineJoin = "round";
    g.globalAlpha = tr.opacity ?? 1;
    g.setLineDash(dvChartDash(line, w));
    g.beginPath();
    let last = null;
    tr.x.forEach((x, j) => {
      const y = tr.y[j];
      const px = x === null || x === undefined ? NaN : X.at(x), py = y === null || y === undefined ? NaN : Y.at(y);
      if (!Number.isFinite(px) || !Number.isFinite(py)) { last = null; return; }  // a gap (plotly's connectgaps off)
      if (!last) g.moveTo(px, py);
      else if (line.shape === "hv") { g.lineTo(px, last[1]); g.lineTo(px, py); }
      else if (line.shape === "hvh") {
        const mid = (last[0] + px) / 2;
        g.lineTo(mid, last[1]); g.lineTo(mid, py); g.lineTo(px, py);
      }
      else g.lineTo(px, py);
      last = [px, py];
    });
    g.stroke();
    g.setLineDash([]);
    g.globalAlpha = 1;
  }
  if (mode.includes("markers")) {
    const m = tr.marker || {}, marker = {...m, color: m.color || line.color || "#636efa"};
    const symbols = Array.isArray(m.symbol) ? m.symbol : null, at = (x, y) => [X.at(x), Y.at(y)];
    const placed = (j) => Number.isFinite(X.at(tr.x[j])) && Number.isFinite(Y.at(tr.y[j]));
    for (const symbol of symbols ? new Set(symbols) : [m.symbol]) {  // one symbol a point: the points of each
      const mine = (j) => placed(j) && (!symbols || symbols[j] === symbol);
      dvRasterDraw(g, [{...tr, mode: "markers", marker: {...marker, symbol},
                        x: tr.x.map((x, j) => (mine(j) ? x : null)), y: tr.y}], at, scale);
    }
    g.setTransform(scale, 0, 0, scale, 0, 0);
  }
}

// The shapes of `layer` ("below" the traces, or above them: plotly's default): lines (dashed as a trace's) and
// rectangles (filled, at their opacity).
function dvChartShapes(g, shapes, where, layer) {
  for (const s of shapes || []) {
    if ((s.layer === "below") !== (layer === "below")) continue;
    const x0 = where.x(s.xref || "x", s.x0), x1 = where.x(s.xref || "x", s.x1);
    const y0 = where.y(s.yref || "y", s.y0), y1 = where.y(s.yref || "y", s.y1), line = s.line || {};
    g.globalAlpha = s.opacity ?? 1;
    if (s.type === "rect") {
      g.fillStyle = s.fillcolor || "rgba(0,0,0,0)";
      g.fillRect(Math.min(x0, x1), Math.min(y0, y1), Math.abs(x1 - x0), Math.abs(y1 - y0));
    }
    const w = line.width ?? 2;
    if (w > 0 && (s.type === "line" || line.color)) {
      g.strokeStyle = line.color || "#444";
      g.lineWidth = w;
      g.setLineDash(dvChartDash(line, w));
      g.beginPath();
      if (s.type === "line") { g.moveTo(x0, y0); g.lineTo(x1, y1); } else g.rect(x0, y0, x1 - x0, y1 - y0);
      g.stroke();
      g.setLineDash([]);
    }
    g.globalAlpha = 1;
  }
}

// The annotations' texts at their places (anchored as stated; plotly's "auto": centred), in their font; returns
// [{box, hovertext}] for hovering.
function dvChartNotes(annotations, where, text) {
  return (annotations || []).map((n) => {
    const font = n.font || {}, x = where.x(n.xref || "x", n.x), y = where.y(n.yref || "y", n.y);
    const align = n.xanchor === "left" || n.xanchor === "right" ? n.xanchor : "center";
    const base = n.yanchor === "bottom" ? "alphabetic" : n.yanchor === "top" ? "top" : "middle";
    const opts = {align, base, ...(font.size ? {size: font.size} : {}), ...(font.color ? {colour: font.color} : {})};
    const r = text(n.text || "", x, base === "alphabetic" ? y - 4 : y, opts);
    return {box: r, hovertext: n.hovertext};
  });
}

// The axes' tick labels and titles: an x axis's under its plot (the ticks' labels unless it hides them, its title
// under them), a y axis's left of the plots (its title turned, at the figure's left edge), or right of them where it
// is on the right side (its title turned the other way, at the right edge); the titles at 1.2 times the font.
function dvChartAxisTexts(L, box, axes, width, text) {
  const big = Math.round(((L.font && L.font.size) || 12) * 1.2), title = (a) => (a.title && a.title.text) || "";
  for (const axis of Object.values(axes)) {
    const a = axis.a;
    if (axis.ref[0] === "x") {
      const under = (axes[a.anchor || "y"] || axes.y).hi;
      if (a.showticklabels !== false) {
        axis.ticks.forEach(([v, label]) => text(label, axis.at(v), under + 4, {align: "center", base: "top"}));
      }
      if (title(a)) {
        text(title(a), (axis.lo + axis.hi) / 2, under + 47, {size: big, align: "center", base: "middle"});
      }
      continue;
    }
    const right = a.side === "right", edge = right ? box.l + box.w : box.l, mid = (axis.lo + axis.hi) / 2;
    if (a.showticklabels !== false) {
      axis.ticks.forEach(([v, label]) => text(label, right ? edge + 6 : edge - 6, axis.at(v),
                                              {align: right ? "left" : "right", base: "middle"}));
    }
    if (title(a)) {
      // turned anticlockwise on either side, as plotly turns them
      text(title(a), right ? width - 10 : 10, mid, {size: big, align: "center", base: "middle", turn: -1});
    }
  }
}

// The legend under the plots (plotly's horizontal legend at legend.x, legend.y of the plots' area, its top there):
// in one row when every entry fits, else in columns as wide as the widest entry (fit.js's dvLegendRows); each entry
// its trace's symbol (a bar's square, a line, a marker) and name, a hidden trace's faded. Returns the entries' boxes
// [{trace index, left, top, right, bottom}] for a click.
function dvChartLegend(g, fig, box, width, text) {
  const L = fig.layout, lg = L.legend || {}, entries = [];
  if (L.showlegend === false) return entries;
  fig.data.forEach((tr, i) => { if (tr.showlegend !== false && tr.name) entries.push([i, tr]); });
  if (!entries.length) return entries;
  const left = box.l + (lg.x ?? 0) * box.w, top = box.t + (1 - (lg.y ?? -0.16)) * box.h, room = width - left;
  const widths = entries.map(([, tr]) => DV_CHART_KEY + dvTextPx(String(tr.name), 12));
  const oneRow = widths.reduce((a, w) => a + w, 0) <= room, colW = Math.max(...widths);
  const perRow = oneRow ? entries.length : Math.max(1, Math.floor(room / colW));
  const out = [];
  let x = left;
  entries.forEach(([i, tr], k) => {
    const row = Math.floor(k / perRow), col = k % perRow;
    if (!oneRow) x = left + col * colW;
    else if (k === 0) x = left;
    const mid = top + 14 + row * DV_CHART_ROW, faded = tr.visible === "legendonly" || tr.visible === false;
    g.globalAlpha = faded ? 0.5 : 1;
    dvChartKey(g, tr, x, mid);
    g.globalAlpha = 1;
    text(String(tr.name), x + 40, mid, {align: "left", base: "middle", ...(faded ? {colour: "#9ca3af"} : {})});
    out.push({i, left: x, right: x + widths[k], top: mid - DV_CHART_ROW / 2, bottom: mid + DV_CHART_ROW / 2});
    if (oneRow) x += widths[k];
  });
  return out;
}

// A legend entry's symbol at (x, mid): a bar's square, a line 30 px long, a marker in the middle.
function dvChartKey(g, tr, x, mid) {
  const m = tr.marker || {}, line = tr.line || {}, mode = tr.mode || "lines+markers";
  if (tr.type === "bar") {
    g.fillStyle = m.color || "#636efa";
    g.fillRect(x + 14, mid - 6, 12, 12);
    return;
  }
  if (mode.includes("lines")) {
    const w = Math.min(line.width ?? 2, 5);
    g.strokeStyle = line.color || "#636efa";
    g.lineWidth = w;
    g.setLineDash(dvChartDash(line, w));
    g.beginPath();
    g.moveTo(x + 5, mid);
    g.lineTo(x + 35, mid);
    g.stroke();
    g.setLineDash([]);
  }
  if (mode.includes("markers")) {
    const alpha = g.globalAlpha, t = g.getTransform(), scale = t.a;
    const marker = {...m, color: m.color || line.color || "#636efa", size: Math.min(m.size ?? 6, 12),
                    symbol: Array.isArray(m.symbol) ? m.symbol[0] : m.symbol};  // a point's own: its first
    dvRasterDraw(g, [{x: [0], y: [0], mode: "markers", marker, opacity: alpha}], () => [x + 20, mid], scale);
    g.setTransform(t);
    g.globalAlpha = alpha;
  }
}

// A click at (x, y) css px on a legend entry: its trace hidden ("legendonly", its key left faded) or shown again, and
// the figure drawn again (plotly's legend click).
function dvChartToggle(gd, x, y) {
  const f = gd.__dvFlat, hit = f && dvChartKeyAt(f, x, y);
  if (!hit) return;
  const tr = f.fig.data[hit.i];
  tr.visible = tr.visible === "legendonly" ? true : "legendonly";
  dvChartPlot(gd, f.fig, f.width);
}

// The label at (x, y) css px of figure `gd`: an annotation's hover text over it; else the nearest point of a shown
// trace within DV_CHART_REACH px (plotly's "closest"), its trace's name after it where its template says so; else
// the bar under the pointer; null where none.
function dvChartHit(gd, x, y) {
  const f = gd.__dvFlat;
  if (!f || !f.axes) return null;
  for (const n of f.notes || []) {
    const b = n.box;
    if (n.hovertext && x >= b.left - 3 && x <= b.right + 3 && y >= b.top - 3 && y <= b.bottom + 3) {
      return {x: b.right, y: (b.top + b.bottom) / 2, text: n.hovertext};
    }
  }
  const shown = f.fig.data.filter((tr) => tr.visible !== false && tr.visible !== "legendonly" && tr.hovertemplate &&
                                          tr.hoverinfo !== "skip" && tr.hoverinfo !== "none");
  const label = (tr, j) => {
    const extra = /<extra>[^<]*%\{fullData\.name\}/.test(tr.hovertemplate) ? `<br>${tr.name}` : "";
    const point = {x: tr.x[j], y: tr.y[j], customdata: tr.customdata && tr.customdata[j]};
    return dvFlatLabel(tr.hovertemplate, point) + extra;
  };
  let best = null, dist = DV_CHART_REACH;
  for (const tr of shown.filter((t) => t.type === "scatter")) {
    const X = f.axes[tr.xaxis || "x"], Y = f.axes[tr.yaxis || "y"];
    tr.x.forEach((px, j) => {
      const py = tr.y[j];
      if (px === null || py === null || px === undefined || py === undefined) return;
      const d = Math.hypot(X.at(px) - x, Y.at(py) - y);  // (NaN off a log axis: never within reach)
      if (d <= dist) { dist = d; best = {x: X.at(px), y: Y.at(py), text: label(tr, j)}; }
    });
  }
  if (best) return best;
  for (const tr of shown.filter((t) => t.type === "bar")) {
    const X = f.axes[tr.xaxis || "x"], Y = f.axes[tr.yaxis || "y"], half = dvChartHalf(tr);
    for (let j = 0; j < tr.x.length; j++) {
      const a = X.at(tr.x[j] - half), b = X.at(tr.x[j] + half), top = Y.at(Math.max(0, tr.y[j])), bottom = Y.at(0);
      if (x >= Math.min(a, b) && x <= Math.max(a, b) && y >= Math.min(top, bottom) - 3 && y <= Math.max(top, bottom)) {
        return {x: (a + b) / 2, y: top, text: label(tr, j)};
      }
    }
  }
  return null;
}
