// dllm-viz: a figure of heatmap cells and marker points drawn on one 2D canvas, without plotly (after raster.js,
// whose marker painter it shares; views.js's dvPlot draws a figure here where `dvFlatFits` says it can, and with
// plotly otherwise).
//
// plotly draws a figure whole on every update (its axes, its colour bar, an image of its cells, one of its
// markers): 15-20 ms a heatmap on the 2-core machine the page is measured on, in the task that shows a finished
// decode, twice for a compare (docs/playground.md). A figure of heatmaps and markers only, on one pair of axes (a
// decode's heatmap and order map, a compare's two heatmaps), is drawn here instead, from the same spec
// (figures.js), laid out from what it states as plotly lays it out: its margins (so views.js's overlay and a
// click's cell are where they were), its axes' ranges and ticks, its title (fit.js's rows) and its colour bar.
// Hovering a cell or a point shows the trace's label (its hovertemplate filled in). The figure's element keeps
// `data` and `layout` (the spec drawn), as plotly's does, and `__dvFlat`, where each text was drawn (tests read it
// as they read plotly's text elements). `window.__dvFlatOff` hands every figure to plotly (bench/ui_bench.py --plotly).

const DV_FLAT_HEX = /^#[0-9a-f]{6}$/i;
const DV_FLAT_LUT = 256;  // colours of a colour scale, made once a scale (dvFlatLut): a cell takes the nearest
const DV_FLAT_LUTS = new Map();  // a colour scale's JSON -> its colours: the page's few scales, each made once
const DV_FLAT_LUTS_KEPT = 16;
const DV_FLAT_ENTITIES = {lt: "<", gt: ">", amp: "&", quot: '"', "#x27": "'", "#39": "'"};  // those figures.js writes

// Whether `fig` is one this file draws: heatmaps (their cells' texts, if any, as they stand) and markers of no
// legend, on the axes x and y with their ranges stated; no menus, annotations, shapes or images.
function dvFlatFits(fig) {
  const L = fig.layout;
  if (typeof window !== "undefined" && window.__dvFlatOff) return false;  // (benches compare plotly's drawing)
  if (L.updatemenus || L.annotations || L.shapes || (L.images && L.images.length) || L.showlegend) return false;
  if (Object.keys(L).some((k) => /^[xy]axis\d+$/.test(k)) || !L.xaxis || !L.yaxis) return false;
  if (!L.xaxis.range || !L.yaxis.range || !L.margin || !L.height) return false;
  return fig.data.length > 0 && fig.data.every((tr) => {
    if ((tr.xaxis && tr.xaxis !== "x") || (tr.yaxis && tr.yaxis !== "y")) return false;
    if (tr.type === "heatmap") {  // cell texts: each its text as it stands (the order map's tokens)
      const texts = !tr.texttemplate || (tr.texttemplate === "%{text}" && Array.isArray(tr.text));
      return texts && Array.isArray(tr.z) && Array.isArray(tr.colorscale) &&
        tr.colorscale.every((stop) => DV_FLAT_HEX.test(stop[1]));
    }
    const m = tr.marker || {};
    return tr.type === "scatter" && tr.mode === "markers" && tr.showlegend === false && Array.isArray(tr.x) &&
      typeof m.color === "string" && !Array.isArray(m.size) && DV_RASTER_SYMBOLS.has(m.symbol || "circle");
  });
}

// plotly's text markup as plain text: lines at <br>, other tags dropped, the entities figures.js writes decoded.
const dvFlatLines = (s) => String(s ?? "").split(/<br\s*\/?>/i).map((line) => line.replace(/<[^>]*>/g, "")
  .replace(/&(lt|gt|amp|quot|#x27|#39);/g, (m, k) => DV_FLAT_ENTITIES[k]));

// An axis's ticks, [value, label] inside its range: those it states (tickvals), else from tick0 every dtick, else
// plotly's automatic choice (about one a `px` pixels of its `length`, at 1, 2 or 5 times a power of ten).
function dvFlatTicks(axis, length, px) {
  const [a, b] = axis.range, lo = Math.min(a, b), hi = Math.max(a, b);
  if (axis.tickvals) {
    return axis.tickvals.map((v, i) => [v, String(axis.ticktext ? axis.ticktext[i] : v)])
      .filter(([v]) => v >= lo && v <= hi);
  }
  let dtick = axis.dtick;
  if (!dtick) {
    const rough = (hi - lo) / (Math.max(4, Math.min(9, length / px)) + 1), base = 10 ** Math.floor(Math.log10(rough));
    dtick = base * ([1, 2, 5].find((k) => k * base >= rough) || 10);
  }
  const tick0 = axis.tick0 || 0, digits = Math.max(0, -Math.floor(Math.log10(dtick) + 1e-9)), out = [];
  for (let k = Math.ceil((lo - tick0) / dtick - 1e-9); tick0 + k * dtick <= hi + 1e-9; k++) {
    const v = tick0 + k * dtick;
    out.push([v, String(Number((Math.abs(v) < dtick / 1e6 ? 0 : v).toFixed(digits)))]);  // 1, not 1.0: plotly's
  }
  return out;
}

// Heatmap `tr` as drawn: its cells `z`, their x and y values (plotly's defaults: 0, 1, ... where it states none), its
// colour range lo..hi (zmin and zmax, else its values'), its colours `lut` and a value's index in it, `colour(v)`
// (`colours` false: no lut, as hovering and the colour bar need none).
function dvFlatHeat(tr, colours = true) {
  const z = tr.z, cols = Math.max(0, ...z.map((row) => (row ? row.length : 0)));
  let lo = tr.zmin, hi = tr.zmax;
  if (lo === undefined || hi === undefined) {
    const all = z.flat().filter((v) => v !== null && v !== undefined && !Number.isNaN(v));
    lo = lo ?? (all.length ? Math.min(...all) : 0); hi = hi ?? (all.length ? Math.max(...all) : 1);
  }
  const span = hi > lo ? hi - lo : 1, lut = colours ? dvFlatLut(tr.colorscale) : null;
  return {z, xs: tr.x || [...Array(cols).keys()], ys: tr.y || [...z.keys()], lo, hi, lut,
          colour: (v) => Math.round(Math.min(1, Math.max(0, (v - lo) / span)) * (DV_FLAT_LUT - 1))};
}

// A colour scale's colours at DV_FLAT_LUT even steps from 0 to 1 (the same array for the same scale: not to be
// changed), made once a scale, not once a draw (256 colours, about 1 ms, for each heatmap a decode's end draws).
function dvFlatLut(scale) {
  const key = JSON.stringify(scale), known = DV_FLAT_LUTS.get(key);
  if (known) return known;
  const lut = Array.from({length: DV_FLAT_LUT}, (_, i) => dvScaleColor(scale, i / (DV_FLAT_LUT - 1)));
  if (DV_FLAT_LUTS.size >= DV_FLAT_LUTS_KEPT) DV_FLAT_LUTS.delete(DV_FLAT_LUTS.keys().next().value);
  DV_FLAT_LUTS.set(key, lut);
  return lut;
}

// Draw `fig` (dvFlatFits) into the figure element `gd`, `width` css px wide (0: not laid out; it is drawn once it
// is), and keep it there for hovering and for a change of width.
function dvFlatPlot(gd, fig, width) {
  const drawn = dvFlatCanvas(gd, fig, width, dvFlatPlot, dvFlatHit);
  if (!drawn) return;
  const {g, scale, box, text, family} = drawn, L = fig.layout, [x0, x1] = L.xaxis.range, [y0, y1] = L.yaxis.range;
  const at = gd.__dvFlat.at = {X: (x) => box.l + (x - x0) / (x1 - x0) * box.w,
                               Y: (y) => box.t + (y1 - y) / (y1 - y0) * box.h};
  const shown = fig.data.filter((tr) => tr.visible !== false && tr.visible !== "legendonly");
  g.fillStyle = L.plot_bgcolor || "#fff";
  g.fillRect(box.l, box.t, box.w, box.h);
  const ticks = {x: dvFlatTicks(L.xaxis, box.w, 80), y: dvFlatTicks(L.yaxis, box.h, 40)};
  dvFlatGrid(g, L, box, at, ticks, scale);
  g.save();  // the cells and the markers inside the plots
  g.beginPath();
  g.rect(box.l, box.t, box.w, box.h);
  g.clip();
  shown.filter((tr) => tr.type === "heatmap").forEach((tr) => dvFlatCells(g, tr, at.X, at.Y, scale));
  g.setTransform(1, 0, 0, 1, 0, 0);
  dvRasterDraw(g, shown.filter((tr) => tr.type === "scatter"), (x, y) => [at.X(x), at.Y(y)], scale);
  g.restore();
  g.setTransform(scale, 0, 0, scale, 0, 0);
  shown.filter((tr) => tr.type === "heatmap" && tr.texttemplate)
    .forEach((tr) => dvFlatCellTexts(gd, g, tr, at.X, at.Y, family));
  dvFlatAxes(L, box, at, ticks, text);
  shown.filter((tr) => tr.type === "heatmap" && tr.showscale !== false).slice(0, 1)
    .forEach((tr) => dvFlatColorbar(g, tr, box, text));
  dvFlatTitle(L, width, text);
}

// The canvas of figure element `gd` for `fig` at `width` css px (made once, with its listeners: hovering through
// `hit(gd, x, y)`, a click through gd.__dvFlat.click (and a pointer where gd.__dvFlat.clicks(x, y) says a click
// does something), a new width drawing it again through `draw`), sized and filled with the paper's colour;
// gd.__dvFlat made anew ({width, box: the plots' area, texts, fig, draw, hit}) and `gd.data`, `gd.layout` set to
// the spec, as plotly's element has them. Returns {g (scaled to css px), scale, box, text(s, x, y,
// opts): dvFlatText in the figure's font, family}, or null where there is nothing to draw yet (no width).
function dvFlatCanvas(gd, fig, width, draw, hit) {
  gd.data = fig.data;
  gd.layout = fig.layout;
  let canvas = gd.querySelector(":scope > canvas.dv-flat");
  if (!canvas) {
    canvas = document.createElement("canvas");
    canvas.className = "dv-flat";
    canvas.style.display = "block";
    gd.replaceChildren(canvas);
    gd.style.position = "relative";
    gd.addEventListener("mousemove", (e) => dvFlatHover(gd, e));
    gd.addEventListener("mouseleave", () => dvFlatTip(gd, null));
    gd.addEventListener("click", (e) => {
      const f = gd.__dvFlat, r = gd.getBoundingClientRect();
      if (f && f.click) f.click(e.clientX - r.left, e.clientY - r.top);
    });
    if (typeof ResizeObserver !== "undefined") {  // plotly's `responsive`: drawn again at a new width
      new ResizeObserver(() => {
        const f = gd.__dvFig, w = gd.__dvWidth = gd.clientWidth, flat = gd.__dvFlat;  // (laid out here: no cost)
        if (f && flat && w && w !== flat.width) flat.draw(gd, f, dvFit(gd, f));
      }).observe(gd);
    }
  }
  const L = fig.layout, m = L.margin, H = L.height;
  canvas.setAttribute("role", "img");  // what a screen reader says of it: the figure's title
  canvas.setAttribute("aria-label", dvFlatLines(L.title && L.title.text).join(" "));
  canvas.style.width = width ? width + "px" : "100%";
  canvas.style.height = H + "px";
  const box = {l: m.l, t: m.t, w: width - m.l - m.r, h: H - m.t - m.b};
  gd.__dvFlat = {width, box, texts: [], fig, draw, hit};
  if (!width || box.w <= 0 || box.h <= 0) return null;
  const scale = Math.min(2, Math.max(1, window.devicePixelRatio || 1));
  canvas.width = Math.round(width * scale);
  canvas.height = Math.round(H * scale);
  const g = canvas.getContext("2d"), font = L.font || {}, family = font.family || "sans-serif";
  const base = {size: font.size || 12, family, colour: font.color || "#000"};
  g.fillStyle = L.paper_bgcolor || "#fff";
  g.fillRect(0, 0, canvas.width, canvas.height);
  g.setTransform(scale, 0, 0, scale, 0, 0);
  return {g, scale, box, family, text: (s, x, y, opts = {}) => dvFlatText(gd, g, s, x, y, {...base, ...opts})};
}

// The grid lines at the axes' ticks, under the cells (a line 1 css px wide, on a device pixel).
function dvFlatGrid(g, L, box, at, ticks, scale) {
  const on = (v) => Math.round(v * scale) / scale - 0.5;
  g.fillStyle = L.yaxis.gridcolor || "#eee";
  if (L.yaxis.showgrid !== false) ticks.y.forEach(([v]) => g.fillRect(box.l, on(at.Y(v)), box.w, 1));
  g.fillStyle = L.xaxis.gridcolor || "#eee";
  if (L.xaxis.showgrid !== false) ticks.x.forEach(([v]) => g.fillRect(on(at.X(v)), box.t, 1, box.h));
}

// The axes' tick labels (under the plots, left of them) and titles (under the tick labels; turned, at the left edge),
// the titles at 1.2 times the figure's font, as plotly sizes them.
function dvFlatAxes(L, box, at, ticks, text) {
  const xa = L.xaxis, ya = L.yaxis, title = (a) => (a.title && a.title.text) || "";
  const big = Math.round(((L.font && L.font.size) || 12) * 1.2), bottom = box.t + box.h;
  if (xa.showticklabels !== false) {
    ticks.x.forEach(([v, label]) => text(label, at.X(v), bottom + 4, {align: "center", base: "top"}));
  }
  if (ya.showticklabels !== false) {
    ticks.y.forEach(([v, label]) => text(label, box.l - 6, at.Y(v), {align: "right", base: "middle"}));
  }
  if (title(xa)) {
    text(title(xa), box.l + box.w / 2, bottom + L.margin.b - 8, {size: big, align: "center", base: "alphabetic"});
  }
  if (title(ya)) text(title(ya), 10, box.t + box.h / 2, {size: big, align: "center", base: "middle", turn: -1});
}

// The cells of heatmap `tr`, each over its x and y value (an even grid: a cell spans a step of each), in its colour
// scale from zmin to zmax; a null cell is left empty; xgap and ygap pixels between cells, or, where zsmooth (a dense
// grid, figures.js's dvCells), no gap: one image of a pixel a cell.
function dvFlatCells(g, tr, X, Y, scale) {
  const {z, xs, ys, lut, colour} = dvFlatHeat(tr);
  const step = (vs, at) => Math.abs(vs.length > 1 ? at(vs[1]) - at(vs[0]) : at(vs[0] + 0.5) - at(vs[0] - 0.5));
  const cw = step(xs, X), ch = step(ys, Y), gx = tr.xgap || 0, gy = tr.ygap || 0;
  if (tr.zsmooth) return dvFlatImage(g, z, xs, ys, X, Y, cw, ch, lut, colour);
  g.setTransform(1, 0, 0, 1, 0, 0);  // cells snapped to device pixels: no seam between cells without a gap
  const edge = (c, half, gap) => [Math.round((c - half + gap / 2) * scale), Math.round((c + half - gap / 2) * scale)];
  for (let j = 0; j < z.length && j < ys.length; j++) {
    const row = z[j];
    if (!row) continue;
    const [top, bottom] = edge(Y(ys[j]), ch / 2, gy);
    for (let i = 0; i < row.length && i < xs.length; i++) {
      const v = row[i];
      if (v === null || v === undefined || Number.isNaN(v)) continue;
      const [left, right] = edge(X(xs[i]), cw / 2, gx);
      g.fillStyle = lut[colour(v)];
      g.fillRect(left, top, Math.max(1, right - left), Math.max(1, bottom - top));
    }
  }
  g.setTransform(scale, 0, 0, scale, 0, 0);
}

// A dense heatmap's cells (dvFlatCells) as one image of a pixel a cell, scaled up over the cells without smoothing:
// a 240 x 240 grid is 57,600 rectangles drawn one by one.
function dvFlatImage(g, z, xs, ys, X, Y, cw, ch, lut, colour) {
  const W = xs.length, H = ys.length, img = new ImageData(W, H), px = img.data, rgb = lut.map(dvRgb);
  const flipX = X(xs[W - 1]) < X(xs[0]), flipY = Y(ys[H - 1]) < Y(ys[0]);  // the image's first column and row
  for (let j = 0; j < H; j++) {
    const row = z[j] || [], r = flipY ? H - 1 - j : j;
    for (let i = 0; i < W; i++) {
      const v = row[i];
      if (v === null || v === undefined || Number.isNaN(v)) continue;
      const c = rgb[colour(v)], k = 4 * (r * W + (flipX ? W - 1 - i : i));
      px[k] = c[0]; px[k + 1] = c[1]; px[k + 2] = c[2]; px[k + 3] = 255;
    }
  }
  const cells = document.createElement("canvas");
  cells.width = W; cells.height = H;
  cells.getContext("2d").putImageData(img, 0, 0);
  const left = Math.min(X(xs[0]), X(xs[W - 1])) - cw / 2, top = Math.min(Y(ys[0]), Y(ys[H - 1])) - ch / 2;
  g.imageSmoothingEnabled = false;
  g.drawImage(cells, left, top, W * cw, H * ch);
  g.imageSmoothingEnabled = true;
}

// A heatmap's cell texts, each line centred in its cell (lines 1.2 times the size apart), dark on a light cell and
// white on a dark one (plotly's "auto" colour); an empty cell's none. Where each line lies is kept (`cell`).
function dvFlatCellTexts(gd, g, tr, X, Y, family) {
  const {z, xs, ys, lut, colour} = dvFlatHeat(tr), size = (tr.textfont && tr.textfont.size) || 12;
  g.font = `${size}px ${family}`;
  g.textAlign = "center";
  g.textBaseline = "middle";
  z.forEach((row, j) => (row || []).forEach((v, i) => {
    const lines = tr.text[j] && tr.text[j][i] ? dvFlatLines(tr.text[j][i]) : [];
    if (v === null || v === undefined || Number.isNaN(v) || !lines.length || i >= xs.length || j >= ys.length) return;
    const [r, gg, b] = dvRgb(lut[colour(v)]);
    g.fillStyle = 0.299 * r + 0.587 * gg + 0.114 * b > 128 ? "#444" : "#fff";
    const x = X(xs[i]), y = Y(ys[j]) - (lines.length - 1) * size * 0.6;
    lines.forEach((line, k) => {
      g.fillText(line, x, y + k * size * 1.2);
      const w = g.measureText(line).width, top = y + k * size * 1.2 - size * 0.6;
      gd.__dvFlat.texts.push({text: line, cell: true, left: x - w / 2, right: x + w / 2, top,
                              bottom: top + size * 1.2});
    });
  }));
}

// A heatmap's colour bar right of the plots (plotly's place: 1.02 of the plots' width, `len` of their height less
// 10 px at each end, centred), its ticks' labels beside it and its title turned beside them.
function dvFlatColorbar(g, tr, box, text) {
  const cb = tr.colorbar || {}, thick = cb.thickness || 30, len = Math.max(10, (cb.len ?? 1) * box.h - 20);
  const left = box.l + 1.02 * box.w + 10, top = box.t + (box.h - len) / 2, {lo, hi} = dvFlatHeat(tr, false);
  const grad = g.createLinearGradient(0, top + len, 0, top);
  tr.colorscale.forEach(([x, c]) => grad.addColorStop(x, c));
  g.fillStyle = grad;
  g.fillRect(left, top, thick, len);
  const ticks = dvFlatTicks({range: [lo, hi], tickvals: cb.tickvals, ticktext: cb.ticktext}, len, 40);
  let widest = 0;
  ticks.forEach(([v, label]) => {
    const y = top + len - (v - lo) / ((hi - lo) || 1) * len;
    const r = text(label, left + thick + 4, y, {align: "left", base: "middle"});
    widest = Math.max(widest, r.right - r.left);
  });
  const title = cb.title && cb.title.text;
  if (title) text(title, left + thick + 4 + widest + 12, top + len / 2, {align: "center", base: "middle", turn: 1});
}

// The figure's title, top left (plotly's: x of the figure's width, its lines 18 px apart, the first one's baseline
// mid-margin, or at pad.t where fit.js placed it from the top).
function dvFlatTitle(L, width, text) {
  const T = L.title || {}, lines = dvFlatLines(T.text || "").filter((s, i, all) => s || all.length === 1);
  if (!T.text) return;
  const size = (T.font && T.font.size) || 14, x = (T.x ?? 0.5) * width;
  const first = T.yref === "container" && T.yanchor === "top" ? (T.pad && T.pad.t) || 0 : L.margin.t / 2;
  lines.forEach((line, i) => text(line, x, first + 18 * i, {size, align: T.xanchor === "left" ? "left" : "center",
                                                            base: "alphabetic", title: true}));
}

// One text drawn at (x, y) (`align` left, center, right; `base` top, middle, alphabetic; `turn` 1 or -1: a quarter
// turn, clockwise or not, about that point); where it lies is kept in gd.__dvFlat.texts. Returns that box.
function dvFlatText(gd, g, s, x, y, o) {
  const str = dvFlatLines(s).join(" ");
  g.font = `${o.size}px ${o.family}`;
  g.fillStyle = o.colour;
  g.textAlign = o.align;
  g.textBaseline = o.base;
  const w = g.measureText(str).width, h = o.size * 1.2, sx = o.align === "left" ? 0 : o.align === "right" ? -w : -w / 2;
  const sy = o.base === "top" ? 0 : o.base === "middle" ? -h / 2 : -o.size * 0.9;
  let r;
  if (o.turn) {
    g.save();
    g.translate(x, y);
    g.rotate(o.turn * Math.PI / 2);
    g.fillText(str, 0, 0);
    g.restore();
    r = {left: x - h / 2, right: x + h / 2, top: y + sx, bottom: y + sx + w};
  } else {
    g.fillText(str, x, y);
    r = {left: x + sx, right: x + sx + w, top: y + sy, bottom: y + sy + h};
  }
  gd.__dvFlat.texts.push({text: str, title: !!o.title, ...r});
  return r;
}

// ----- hovering -------------------------------------------------------------------------------------------
// plotly's hovertemplate filled in for one point: %{x}, %{y}, %{z}, %{text}, %{customdata}; its <extra> dropped.
function dvFlatLabel(template, point) {
  return String(template).replace(/<extra>[\s\S]*?<\/extra>/g, "")
    .replace(/%\{(\w+)\}/g, (m, k) => (point[k] === undefined || point[k] === null ? "" : String(point[k])));
}

// The label at (x, y) css px of figure `gd`: the nearest marker point within its size (the last trace first), else
// the heatmap cell there (not an empty one); null where none.
function dvFlatHit(gd, x, y) {
  const flat = gd.__dvFlat, b = flat && flat.box;
  if (!b || !flat.at || x < b.l || x > b.l + b.w || y < b.t || y > b.t + b.h) return null;
  const {X, Y} = flat.at, shown = flat.fig.data.filter((tr) => tr.visible !== false && tr.visible !== "legendonly");
  const hovers = (tr) => tr.hovertemplate && tr.hoverinfo !== "skip" && tr.hoverinfo !== "none";
  for (const tr of shown.filter((t) => t.type === "scatter" && hovers(t)).reverse()) {
    const reach = Math.max(5, ((tr.marker && tr.marker.size) || 6) / 2 + 2);
    let best = -1, dist = reach;
    tr.x.forEach((px, j) => {
      if (px === null || tr.y[j] === null) return;
      const d = Math.hypot(X(px) - x, Y(tr.y[j]) - y);
      if (d <= dist) { dist = d; best = j; }
    });
    if (best >= 0) {
      return {x: X(tr.x[best]), y: Y(tr.y[best]), text: dvFlatLabel(tr.hovertemplate, {x: tr.x[best], y: tr.y[best],
        customdata: tr.customdata && tr.customdata[best], text: tr.text && tr.text[best]})};
    }
  }
  for (const tr of shown.filter((t) => t.type === "heatmap" && hovers(t)).reverse()) {
    const {xs, ys} = dvFlatHeat(tr, false);
    const off = (at, v, c) => Math.abs(at(v) - c);
    const nearest = (vs, at, c) => vs.reduce((best, v, i) => (off(at, v, c) < off(at, vs[best], c) ? i : best), 0);
    const i = nearest(xs, X, x), j = nearest(ys, Y, y), v = tr.z[j] ? tr.z[j][i] : null;
    if (v === null || v === undefined || Number.isNaN(v)) continue;
    const row = (a) => (a && a[j] ? a[j][i] : undefined);
    return {x: X(xs[i]), y: Y(ys[j]), text: dvFlatLabel(tr.hovertemplate, {x: xs[i], y: ys[j], z: v,
      customdata: row(tr.customdata), text: row(tr.text)})};
  }
  return null;
}

function dvFlatHover(gd, e) {
  const r = gd.getBoundingClientRect(), f = gd.__dvFlat, x = e.clientX - r.left, y = e.clientY - r.top;
  dvFlatTip(gd, f && f.hit ? f.hit(gd, x, y) : null);
  gd.style.cursor = f && f.clicks && f.clicks(x, y) ? "pointer" : "";  // something a click does there (chart2d.js)
}

// The hover label `hit` ({x, y, text}: css px in the figure, the label in plotly's markup) beside its point, or none.
function dvFlatTip(gd, hit) {
  let tip = gd.querySelector(":scope > .dv-flat-tip");
  if (!hit || !hit.text) { if (tip) tip.style.display = "none"; return; }
  if (!tip) {
    tip = document.createElement("div");
    tip.className = "dv-flat-tip";
    const L = gd.layout || {}, font = (L.hoverlabel && L.hoverlabel.font && L.hoverlabel.font.family) || "monospace";
    Object.assign(tip.style, {position: "absolute", pointerEvents: "none", zIndex: 6, background: "#fff",
      border: "1px solid #9ca3af", borderRadius: "3px", padding: "3px 6px", font: `12px ${font}`,
      color: (L.font && L.font.color) || "#111", whiteSpace: "nowrap", boxShadow: "0 1px 3px rgba(0,0,0,.15)"});
    gd.appendChild(tip);
  }
  // as text, line by line (a trace's token text is escaped in the label, dvLabel; nothing in it is markup here)
  const lines = dvFlatLines(hit.text);
  tip.replaceChildren(...lines.flatMap((line, i) => (i ? [document.createElement("br"), line] : [line])));
  tip.style.display = "block";
  const w = tip.offsetWidth, h = tip.offsetHeight, W = gd.clientWidth;
  tip.style.left = Math.max(0, hit.x + 12 + w > W ? hit.x - 12 - w : hit.x + 12) + "px";
  tip.style.top = Math.max(0, hit.y - h / 2) + "px";
}
