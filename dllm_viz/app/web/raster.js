// dllm-viz: a figure's dense marker layers painted as one image (after figures.js; views.js's dvPlot calls
// dvRaster just before plotly draws).
//
// plotly draws an SVG element per marker point, which the page then styles and lays out one by one (a dot
// of the per-step figure: ~0.1 ms each, where plotly draws it: `window.__dvFlatOff`; the page's heatmaps and
// charts are plot2d.js's and chart2d.js's, their markers painted with `dvRasterDraw` below),
// and a browser without a GPU has no WebGL for scattergl. So a trace of markers alone with at least DV_RASTER_MIN points is
// painted, with the others of its axes, into one 2D canvas at the plot's own pixel size, shown as a layout
// image over those axes (`x domain` / `y domain`: it follows the plot area). The trace itself stays with
// its markers hidden (mode "none"): hovering a point still shows its label. One in the legend leaves its
// key there (a trace of one point off the axes); a legend click that hides the key hides the trace and
// paints the image again without it. The figure spec (figures.js) is unchanged: this is how it is drawn.

const DV_RASTER_MIN = 24;  // points of a trace below which plotly's own markers cost less than an image

// A symbol's outline as an SVG path at radius r (plotly's geometry: size = diameter), or null for a circle;
// the symbols painted are these (any other is left to plotly).
const DV_RASTER_SYMBOLS = new Set(["circle", "circle-open", "square", "square-open", "diamond", "diamond-open", "x",
  "x-open", "x-thin-open", "star", "star-open"]);
function dvSymbolPath(symbol, r) {
  const f = (x) => Math.round(x * 100) / 100;
  if (symbol.startsWith("star")) {  // five points at 1.4 r, point up, the inner corners at 0.382 of that
    return Array.from({length: 10}, (_, i) => {
      const R = (i % 2 ? 0.382 : 1) * 1.4 * r, a = Math.PI * (i / 5 - 0.5);
      return `${i ? "L" : "M"}${f(R * Math.cos(a))},${f(R * Math.sin(a))}`;
    }).join("") + "Z";
  }
  if (symbol.startsWith("square")) return `M${f(r)},${f(r)}H${f(-r)}V${f(-r)}H${f(r)}Z`;
  if (symbol.startsWith("diamond")) { const d = f(r * 1.3); return `M${d},0L0,${d}L${-d},0L0,${-d}Z`; }
  if (symbol.startsWith("x-thin")) { const x = f(r); return `M${x},${x}L${-x},${-x}M${x},${-x}L${-x},${x}`; }
  if (symbol.startsWith("x")) {  // a filled cross: four arms of width 0.8 r / sqrt(2) * 2
    const a = f(r * 0.8 / Math.SQRT2), arm = (dx, dy) => `l${dx * a},${dy * a}`;
    return `M0,${a}` + [[1, 1], [1, -1], [-1, -1], [1, -1], [-1, -1], [-1, 1], [-1, -1], [-1, 1], [1, 1], [-1, 1],
      [1, 1], [1, -1]].map(([dx, dy]) => arm(dx, dy)).join("") + "Z";
  }
  return null;
}

// The traces of `fig` to paint, by subplot: {"x2 y3": [trace, ...]}; none where an axis states no range.
// A plain line that plotly would draw over them (the per-step mean over its dots) is painted after them, so
// the image keeps plotly's order of traces.
function dvRasterPlan(fig) {
  const plan = {}, where = (tr) => `${tr.xaxis || "x"} ${tr.yaxis || "y"}`;
  const line = (tr) => tr.type === "scatter" && tr.mode === "lines" && !tr.fill && tr.x && tr.line && tr.line.color &&
    !tr.line.shape && !tr.line.dash;  // (colours stated: plotly's colorway picks them otherwise)
  fig.data.forEach((tr) => {
    const key = where(tr);
    if (plan[key] && line(tr)) { plan[key].push(tr); return; }
    if (tr.type !== "scatter" || tr.mode !== "markers" || !tr.x || tr.x.length < DV_RASTER_MIN) return;
    const m = tr.marker || {};
    if (typeof m.color !== "string" || Array.isArray(m.size) || !DV_RASTER_SYMBOLS.has(m.symbol || "circle")) return;
    const xa = fig.layout["xaxis" + (tr.xaxis || "x").slice(1)], ya = fig.layout["yaxis" + (tr.yaxis || "y").slice(1)];
    if (!xa || !ya || !xa.range || !ya.range) return;
    (plan[key] = plan[key] || []).push(tr);
  });
  return plan;
}

// One subplot's traces painted into a PNG data URL of w x h css pixels, over axes `xa`, `ya`.
function dvRasterPaint(traces, xa, ya, w, h) {
  const scale = Math.min(2, Math.max(1, (typeof window !== "undefined" && window.devicePixelRatio) || 1));
  const canvas = document.createElement("canvas");
  canvas.width = Math.round(w * scale); canvas.height = Math.round(h * scale);
  const [x0, x1] = xa.range, [y0, y1] = ya.range, sx = w / (x1 - x0), sy = h / (y1 - y0);
  dvRasterDraw(canvas.getContext("2d"), traces, (x, y) => [(x - x0) * sx, (y1 - y) * sy], scale);
  return canvas.toDataURL();
}

// Traces of markers (and plain lines) painted into `g` at `scale` device pixels a css pixel, each point placed at
// the css pixel `at(x, y)`: the painter of the images above, and of the figures plot2d.js draws without plotly.
function dvRasterDraw(g, traces, at, scale) {
  for (const tr of traces) {
    if (tr.mode === "lines") { dvRasterLine(g, tr, at, scale); continue; }
    const m = tr.marker || {}, r = (m.size ?? 6) / 2, symbol = String(m.symbol || "circle"), line = m.line || {};
    const open = symbol.endsWith("-open") || symbol.startsWith("x-thin"), d = dvSymbolPath(symbol, r);
    const shape = d === null ? new Path2D() : new Path2D(d);
    if (d === null) shape.arc(0, 0, r, 0, 2 * Math.PI);
    g.globalAlpha = (m.opacity ?? 1) * (tr.opacity ?? 1);
    g.fillStyle = m.color;
    g.strokeStyle = open ? m.color : line.color || m.color;
    const outline = line.width ?? (open ? 1 : 0);  // (a canvas keeps its last width where it is given 0)
    if (outline > 0) g.lineWidth = outline;
    for (let j = 0; j < tr.x.length; j++) {
      const x = tr.x[j], y = tr.y[j];
      if (x === null || y === null || x === undefined || y === undefined) continue;
      const [px, py] = at(x, y);
      g.setTransform(scale, 0, 0, scale, px * scale, py * scale);
      if (!open) g.fill(shape);
      if (outline > 0) g.stroke(shape);
    }
  }
  g.setTransform(1, 0, 0, 1, 0, 0);
  g.globalAlpha = 1;
}

// A plain line (a null breaks it) painted into `g`, points placed by `at`.
function dvRasterLine(g, tr, at, scale) {
  const line = tr.line || {};
  g.setTransform(scale, 0, 0, scale, 0, 0);
  g.globalAlpha = tr.opacity ?? 1;
  g.strokeStyle = line.color;
  g.lineWidth = line.width ?? 2;
  g.lineJoin = "round";
  g.beginPath();
  let open = false;
  for (let j = 0; j < tr.x.length; j++) {
    const x = tr.x[j], y = tr.y[j];
    if (x === null || y === null || x === undefined || y === undefined) { open = false; continue; }
    const [px, py] = at(x, y);
    if (open) g.lineTo(px, py); else g.moveTo(px, py);
    open = true;
  }
  g.stroke();
}

// The images of `fig`'s planned subplots for a plot `width` px wide, the traces in `hidden` (a legend click)
// left out.
function dvRasterImages(fig, plan, width, hidden) {
  const m = fig.layout.margin, W = width - m.l - m.r, H = fig.layout.height - m.t - m.b, images = [];
  for (const [key, traces] of Object.entries(plan)) {
    const [xr, yr] = key.split(" "), xa = fig.layout["xaxis" + xr.slice(1)], ya = fig.layout["yaxis" + yr.slice(1)];
    const span = (a) => (a.domain ? a.domain[1] - a.domain[0] : 1), w = W * span(xa), h = H * span(ya);
    const shown = traces.filter((tr) => !hidden.has(tr));
    if (w < 1 || h < 1 || !shown.length) continue;
    images.push({source: dvRasterPaint(shown, xa, ya, w, h), xref: xr + " domain", yref: yr + " domain",
      x: 0, y: 1, sizex: 1, sizey: 1, xanchor: "left", yanchor: "top", sizing: "stretch", layer: "above"});
  }
  return images;
}

// Before plotly draws `fig` into `gd` (`width` px wide): its dense marker traces painted as images, their
// markers hidden, their keys beside them in the legend. Returns whether it painted any.
function dvRaster(gd, fig, width) {
  const plan = dvRasterPlan(fig), painted = Object.values(plan).flat();
  gd.__dvRaster = null;
  if (!width || !painted.length) return false;
  const data = [], keys = [];  // keys: [key trace, its hover trace, the trace painted]
  for (const tr of fig.data) {
    if (!painted.includes(tr)) { data.push(tr); continue; }
    const keyed = tr.showlegend !== false, hover = {...tr, mode: "none", showlegend: false};
    data.push(hover);
    if (keyed) {  // its own legend entry, no group: a legend of groups is laid out otherwise
      const key = {type: "scatter", mode: tr.mode, x: [null], y: [null], xaxis: tr.xaxis, yaxis: tr.yaxis,
        name: tr.name, ...(tr.mode === "lines" ? {line: tr.line} : {marker: tr.marker}), hoverinfo: "skip"};
      data.push(key);
      keys.push([key, hover, tr]);
    }
  }
  const base = fig.layout.images || [];
  fig.layout.images = [...base, ...dvRasterImages(fig, plan, width, new Set())];
  fig.data = data;
  gd.__dvRaster = {fig, plan, width, base, keys, hidden: ""};
  return true;
}

// After a legend click (plotly_restyle) on a figure dvRaster drew: the traces whose key it hid hidden too,
// and its images painted again without them.
function dvRasterAgain(gd) {
  const r = gd.__dvRaster, P = typeof Plotly === "undefined" ? null : Plotly;
  if (!r || !P || !gd.data) return;
  const off = (tr) => tr.visible === false || tr.visible === "legendonly";
  const hidden = new Set(r.keys.filter(([key]) => off(key)).map(([, , tr]) => tr));
  const sig = r.keys.map(([key]) => (off(key) ? 0 : 1)).join("");
  if (sig === (r.hidden || r.keys.map(() => 1).join(""))) return;
  r.hidden = sig;
  const idx = r.keys.map(([, hover]) => gd.data.indexOf(hover)).filter((i) => i >= 0);
  const visible = r.keys.filter(([, hover]) => gd.data.includes(hover)).map(([key]) => (off(key) ? false : true));
  P.update(gd, {visible}, {images: [...r.base, ...dvRasterImages(r.fig, r.plan, r.width, hidden)]}, idx);
}
