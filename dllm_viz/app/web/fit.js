// dllm-viz: a figure fitted to the width it is drawn at (after figures.js and plot2d.js; views.js's dvPlot calls
// `dvFit` before drawing). Plotly neither wraps a title nor grows a figure for a legend that wraps, and its heatmap boxes and
// cell labels keep their stated sizes: in a narrow figure (a phone) the title and legend would lie past its edges
// and the boxes over each other. The figure grows by the rows it adds, its plots keeping their size.

// A narrow figure (a phone): the heatmap's boxes and the order map's labels shrunk to their cells, the title's lines
// and the per-step figure's legend wrapped, the figure grown by the rows they add (`dvGrow`). Returns the figure's
// width (0: not laid out). A figure of ours is drawn at the width its ResizeObserver last saw (plot2d.js: read where
// the page is laid out anyway, and drawn again when it changes), so that a figure drawn in the task that changes
// the page does not lay it out first; one not seen yet, or plotly's, at the width the page has now.
function dvFit(gd, fig) {
  const width = gd.__dvWidth || gd.clientWidth || (gd.parentElement && gd.parentElement.clientWidth) || 0;
  if (!width) return 0;
  const base = fig.__dvBase || (fig.__dvBase = {height: fig.layout.height, t: fig.layout.margin.t,
    b: fig.layout.margin.b, title: fig.layout.title && fig.layout.title.text});
  const m = fig.layout.margin, w = width - m.l - m.r, h = base.height - base.t - base.b;
  const span = (axis) => Math.abs(axis.range[1] - axis.range[0]) || 1;
  if (fig.__kind === "heatmap") {
    const cell = Math.min(w / span(fig.layout.xaxis), h / span(fig.layout.yaxis)), want = Math.max(2, Math.floor(cell * 0.9));
    fig.data.forEach((tr) => { if (tr.type === "scatter" && tr.marker && tr.marker.size > want) tr.marker.size = want; });
  } else if (fig.__kind === "order") {
    const chars = Math.max(1, Math.floor(w / span(fig.layout.xaxis) / 7.5));  // ~7 px a character at 11 px
    const tr = fig.data[0], full = tr.__full || (tr.__full = tr.text.map((row) => row.slice()));
    const cut = (s) => {  // the token's text clipped, then escaped again (clipping escaped text could cut "&quot;")
      const [first, rest] = s.split("<br>"), [text] = dvFlatLines(first);
      const c = dvEscape(text.length <= chars ? text : text.slice(0, Math.max(1, chars - 1)) + "…");
      return rest === undefined ? c : c + "<br>" + rest;
    };
    tr.text = full.map((row) => row.map(cut));
  }
  let top = 0;
  if (base.title) {
    const lines = base.title.split("<br>"), rows = dvTitleRows(base.title, width);
    const added = Math.max(rows.length, fig.__dvTitleRows || 0) - lines.length;  // (a pair's: as many as the other's)
    fig.layout.title = {...fig.layout.title, text: rows.join("<br>")};
    if (added > 0) {  // its first line where it stood (plotly's "auto" puts that baseline mid-margin), the rest below
      fig.layout.title = {...fig.layout.title, yref: "container", y: 1, yanchor: "top", pad: {t: base.t / 2}};
      top = 18 * added;  // (a top-anchored title's pad places its first baseline)
    }
  }
  dvGrow(fig, base, top, fig.__kind === "steps" ? dvLegendRows(fig, width - m.l) : 0);
  return width;
}

// A figure's title (plotly's text, lines split at <br>) in rows that fit a figure `width` px wide, at 14 px.
function dvTitleRows(title, width) {
  return title.split("<br>").flatMap((line) => dvWrapped(line, width - 16, 14));
}

// Two figures drawn side by side (Compare's A and B, into `hosts`) with their plots at one height: each title given
// the room of the one that wraps into more rows at its host's width (the width its figure was last seen at, as
// dvFit draws it: a compare's end draws its heatmaps in the task that changed the page, not laying it out first).
// Returns `figs`.
function dvPairFit(figs, hosts) {
  const seen = (host) => {
    const gd = host.querySelector(":scope > .dv-fig");
    return (gd && gd.__dvWidth) || host.clientWidth;
  };
  const rows = figs.map((f, i) => {
    const title = f.layout.title && f.layout.title.text, width = hosts[i] ? seen(hosts[i]) : 0;
    return title && width ? dvTitleRows(title, width).length : 0;
  });
  figs.forEach((f) => { f.__dvTitleRows = Math.max(...rows); });
  return figs;
}

// Text's width in px at `size` px in the figures' font, measured on a canvas (no layout of the page); where there is
// none, estimated (a CJK character as wide as the size, a Latin one about half of it).
function dvTextPx(text, size) {
  const ctx = dvTextPx.ctx === undefined ? (dvTextPx.ctx = document.createElement("canvas").getContext("2d")) : dvTextPx.ctx;
  if (!ctx) return [...text].reduce((a, c) => a + (c.charCodeAt(0) > 0x2e7f ? size : 0.56 * size), 0);
  ctx.font = `${size}px ${DV_FONT}`;
  return ctx.measureText(text).width;
}

// `line` (plotly's text: no <br>) in rows no wider than `room` px at `size` px: broken after a space, or between
// CJK characters; a word wider than the room keeps a row of its own.
function dvWrapped(line, room, size) {
  const rows = [];
  let row = "";
  for (const piece of line.match(/[\u2e80-\uffff]|[^\s\u2e80-\uffff]+\s*|\s+/g) || [line]) {
    if (row && dvTextPx((row + piece).trimEnd(), size) > room) { rows.push(row.trimEnd()); row = piece.trimStart(); }
    else row += piece;
  }
  return [...rows, row.trimEnd()].filter((r, i, all) => r || all.length === 1);
}

// A per-step figure's legend rows under its plots in `w` px (from the plots' left edge to the figure's right): in
// one row when every entry fits, else in columns as wide as the widest entry, as plotly lays it out (an entry: its
// symbol and gaps, 46 px, and its name at 12 px).
function dvLegendRows(fig, w) {
  const widths = fig.data.filter((tr) => tr.showlegend !== false && tr.name).map((tr) => 46 + dvTextPx(String(tr.name), 12));
  if (widths.reduce((a, x) => a + x, 0) <= w) return Math.min(1, widths.length);
  return Math.ceil(widths.length / Math.max(1, Math.floor(w / Math.max(...widths))));
}

// The figure `fig` as laid out at first (`base`: its height and margins), grown by `top` px over its plots (a title's
// added rows) and by what `legendRows` under them need past its stated bottom margin (19 px a row, below 64 px of the
// x axis's labels and title): its plots keep their size, so the overlay's geometry is still the layout's.
function dvGrow(fig, base, top, legendRows) {
  const bottom = legendRows ? Math.max(0, 64 + 19 * legendRows - base.b) : 0;
  fig.layout.height = base.height + top + bottom;
  fig.layout.margin = {...fig.layout.margin, t: base.t + top, b: base.b + bottom};
}
