// dllm-viz: the figures of a trace as plotly.js specs, pure functions of its data (trace.js) and the
// page's language `t` (after trace.js and canvas.js; see views/web.py). views.js draws them: the heatmaps and the
// order map through plot2d.js, the others through plotly.
//
// Steps are shown 1-based (step 1 = the first forward pass); colours come from the theme (views/
// palette.py), so the canvas tints and the figures agree. Every figure states its axis ranges and
// its margins, and no axis grows a margin (automargin off): views.js maps a step or a position to
// pixels from these numbers alone to draw the shared cursor, and a click back to a cell. Text that
// came from a trace (token pieces) is clipped and escaped before plotly reads it as markup
// (`dvLabel`): a trace's vocabulary is whatever its author wrote.

const DV_LABEL_CHARS = 24;  // a token's text in a hover label, clipped: the figures repeat it in every cell
const DV_HISTORY_SHOWN = 8;  // decisions of one position listed in a hover label; the earlier ones counted
const DV_FONT = "Inter, ui-sans-serif, system-ui, -apple-system, Segoe UI, sans-serif";

// A token's text for a plotly label: clipped, escaped (plotly reads <b>, <a href> in labels), quoted.
function dvLabel(text) {
  const s = text.length <= DV_LABEL_CHARS ? text : text.slice(0, DV_LABEL_CHARS - 1) + "…";
  return dvEscape(s);
}
// A token's text inside an order-map cell: the piece clipped to 6 characters, then escaped (clipping the
// escaped text could cut an entity: "&lt;340&gt;" shown as "&lt;3…").
const dvCellText = (piece) => dvEscape(piece.length <= 6 ? piece : piece.slice(0, 5) + "…");
const dvQuoted = (d, i) => dvRepr(i === null || i < 0 ? "[MASK]" : dvLabel(d.pieces[i]));
// dvRepr(dvLabel(piece i)) made once per piece: a figure repeats a token's label in every cell it fills.
function dvQuotes(d) {
  const made = [];
  return (i) => made[i] ?? (made[i] = dvRepr(dvLabel(d.pieces[i])));
}

// Python's format(x, ".3g"): 3 significant digits, trailing zeros dropped, exponent below 1e-4.
function dvG3(x) {
  if (!Number.isFinite(x)) return String(x);
  if (x === 0) return "0";
  const e = Math.floor(Math.log10(Math.abs(Number(x.toPrecision(3)))));
  if (e < -4 || e >= 3) {
    const [m, p] = x.toExponential(2).split("e");
    return m.replace(/\.?0+$/, "") + "e" + (p[0] === "-" ? "-" : "+") + p.replace(/^[-+]/, "").padStart(2, "0");
  }
  return x.toFixed(Math.max(0, 2 - e)).replace(/(\.\d*?)0+$/, "$1").replace(/\.$/, "");
}

function dvAxis(title, extra) { return {title: {text: title}, ...extra}; }
function dvColorbar(title, extra) { return {title: {text: title, side: "right"}, thickness: 12, len: 0.9, ...extra}; }
const dvTitled = (t, title, side) => (side ? `${t[side]} · ${title}` : title).replace(/\n/g, "<br>");
const dvPlotlyScale = (scale) => scale.map(([x, c]) => [x, c]);
const dvScaled = (theme, c) => (Number.isNaN(c) ? null : Math.round(dvPosition(theme, c) * 1e4) / 1e4);

// A per-step figure's temperature axis, on the right over the top plot: from 0 to past the highest temperature,
// labelled every 0.5 (short labels, which a phone's narrow right margin holds beside the axis title).
function dvTemperatureAxis(title, temperatures) {
  return dvAxis(title, {overlaying: "y", side: "right", showgrid: false, range: [0, 1.15 * Math.max(...temperatures, 1.0)],
    tickmode: "linear", tick0: 0, dtick: 0.5});
}

function dvConfidenceAxis(theme) {
  return {tickvals: theme.ticks.map((c) => Math.round(dvPosition(theme, c) * 1e6) / 1e6), ticktext: theme.ticks.map(String)};
}

// A figure: our light theme, the title top left, no drag (a click selects a cell), stated margins. Its axes'
// labels are laid out as stated (level, drawn where they fall): plotly's defaults measure every label of every axis
// through a layout of the page each draw, to tilt labels that might touch and to hide those past the figure's edge.
function dvFigure(theme, data, title, height, layout) {
  const P = theme.palette, axis = {gridcolor: "#eef0f4", zerolinecolor: "#eef0f4", linecolor: "#d1d5db", ticks: "",
    automargin: false, tickangle: 0, ticklabeloverflow: "allow"};
  const base = {
    paper_bgcolor: P.card, plot_bgcolor: P.card, font: {family: DV_FONT, size: 12, color: P.text},
    hoverlabel: {font: {family: "ui-monospace, monospace"}}, colorway: [P.side_a, P.side_b, P.accent, P.k],
    title: {text: title, font: {size: 14}, x: 0.01, xanchor: "left"}, height, dragmode: false,
    margin: {l: 50, r: 20, t: 44, b: 44},
    legend: {orientation: "h", yanchor: "top", y: -0.28, xanchor: "left", x: 0},
  };
  const out = {...base, ...layout};
  for (const key of Object.keys(out)) {
    if (/^[xy]axis\d*$/.test(key)) out[key] = {...axis, ...out[key]};
  }
  if (!out.xaxis) out.xaxis = {...axis};
  if (!out.yaxis) out.yaxis = {...axis};
  return {data, layout: out};
}

// ----- revision marks (figures_revision.py) ---------------------------------------------------------
function dvScoreName(d, t) {
  const rule = (d.revise || "").replace(/_shipped$/, "");  // the original's own loop records the same score
  return ["remdm", "rcr", "wino"].includes(rule) ? t["rv_score_" + rule] : t.rv_score;
}

// One decision in words, e.g. "step 5: rewritten 'a' → 'b' (p 0.81, was 0.12)".
function dvEventLabel(d, t, e) {
  const step = `${t.axis_step} ${e[0] + 1}`;
  if (e[1] === "f") return `${step}: ${t.rv_forced} ${dvQuoted(d, e[2])}`;
  if (e[1] === "r") return `${step}: ${t.rv_remasked} ${dvQuoted(d, e[6])}` + (Number.isNaN(e[5]) ? "" : ` (${dvScoreName(d, t)} ${dvG3(e[5])})`);
  if (e[1] === "e") return `${step}: ${t.rv_edited} ${dvQuoted(d, e[6])} → ${dvQuoted(d, e[2])} (p ${dvG3(e[5])}, ${t.rv_was} ${dvG3(e[7])})`;
  return `${step}: ${t.rv_confirmed} ${dvQuoted(d, e[2])} (p ${dvG3(e[5])})`;
}

function dvHistoryLabel(d, t, events) {
  const shown = events.slice(-DV_HISTORY_SHOWN), lines = shown.map((e) => dvEventLabel(d, t, e));
  if (events.length > shown.length) lines.unshift(dvFill(t.rv_earlier, {n: events.length - shown.length}));
  return lines.join("<br>");
}

function dvHeatmapMarks(d, t, theme, where) {
  const marks = {r: {x: [], y: [], text: []}, e: {x: [], y: [], text: []}};
  // a moved trace: every token's list, those deleted or cut on the way included
  const lists = d.fev ? [...new Set([...d.fev.flat(), ...d.events])] : d.events;
  lists.forEach((evs, p) => evs.forEach((e) => {
    if (e[1] === "c" || e[1] === "f" || e[0] < 0) return;  // the marks of the rule's decisions (a fork's: its own)
    const m = marks[e[1]], at = d.fev ? d.fev[e[0]].indexOf(evs) : p;  // moved: where the token stood then
    m.x.push(at); m.y.push(e[0] + 1); m.text.push(dvEventLabel(d, t, e));
  }));
  const size = Math.max(5, Math.min(12, Math.floor(520 / Math.max(d.G, 1))));
  return [["r", "rv_remasked", "x-thin-open", "remask"], ["e", "rv_edited", "diamond-open", "edit"]]
    .filter(([k]) => marks[k].x.length)
    .map(([k, name, symbol, colour]) => ({type: "scatter", mode: "markers", x: marks[k].x, y: marks[k].y,
      customdata: marks[k].text, name: t[name], showlegend: false,
      marker: {symbol, size: size + 2, color: theme.palette[colour], line: {width: 2}},
      hovertemplate: where + "%{customdata}<extra></extra>"}));
}

// ----- the confidence heatmap ----------------------------------------------------------------------
// Step x position heatmap of the confidence the schedule ranked by; confirmed cells boxed (□); under a
// revision rule × where a token was taken back and ◇ where one was rewritten. `rows` (>= the steps)
// gives two Compare heatmaps one height and scale; `side` labels one.
function dvHeatmapFig(d, t, opts = {}) {
  if (d.rn) return dvRenoiseHeatFig(d, t, opts);  // a canvas never masked: figures_renoise.js
  const theme = d.theme, G = d.G, n = d.n, rows = Math.max(n, opts.rows || 0, 1), polluted = d.src !== "raw";
  const where = `${t.axis_step} %{y} · ${t.axis_position} %{x}<br>`, quoted = dvQuotes(d);
  const z = [], hover = [];
  for (let s = 0; s < n; s++) {
    const zr = new Array(G).fill(null), hr = new Array(G).fill(""), sc = d.scored[s];
    sc.pos.forEach((p, j) => {
      const c = sc.conf[j], a = sc.arg[j];
      zr[p] = dvScaled(theme, c);
      if (a >= 0 && !Number.isNaN(c)) {
        hr[p] = `${c.toFixed(3)} · argmax ${quoted(a)}` +
          (polluted ? ` (raw ${(sc.raw ? sc.raw[j] : c).toFixed(3)})` : "");
      }
    });
    z.push(zr); hover.push(hr);
  }
  const heat = {type: "heatmap", name: "confidence", z, x: [...Array(G).keys()], y: Array.from({length: n}, (_, i) => i + 1),
    customdata: hover, zmin: 0, zmax: 1, colorscale: dvPlotlyScale(theme.confidence), ...dvCells(G, rows),
    hoverongaps: false, colorbar: dvColorbar(t.axis_confidence, dvConfidenceAxis(theme)),
    hovertemplate: where + "%{customdata}<extra></extra>"};
  const xs = [], ys = [], labels = [];
  for (let s = 0; s < n; s++) {
    d.sel[s].forEach((p, j) => {
      xs.push(p); ys.push(s + 1);
      labels.push(`${quoted(d.tok0[s][j])} · raw p ${Math.exp(d.lp[s][j]).toFixed(3)}`);
    });
  }
  const boxes = {type: "scatter", mode: "markers", x: xs, y: ys, customdata: labels, name: t.confirmed_marker,
    showlegend: false, marker: {symbol: "square-open", size: Math.max(4, Math.min(12, Math.floor(520 / Math.max(G, 1)))),
      color: theme.palette.accent, line: {width: 2}},
    hovertemplate: where + t.confirmed_marker + " %{customdata}<extra></extra>"};
  let title = polluted ? dvFill(t.fig_heatmap_polluted, {src: d.src}) : t.fig_heatmap;
  let marks = [];
  if (d.revise !== "none" || d.fev) {  // a revision rule's decisions, or an insert/delete rule's (a moved trace)
    marks = dvHeatmapMarks(d, t, theme, where);
    title += " · " + t.rv_heatmap_key;
  }
  const data = [heat, boxes, ...marks], extra = {};
  const drift = dvDriftLayer(d, t, where);
  if (drift) {  // a cached decode with the drift diagnostic: a second view of the same cells
    data.push(drift);
    const kept = marks.map(() => true);
    const views = [["heat_confidence", [true, true, ...kept, false]], ["heat_drift", [false, true, ...kept, true]]];
    extra.updatemenus = [{type: "buttons", direction: "right", showactive: true, x: 1.0, xanchor: "right", y: 1.0,
      yanchor: "bottom", pad: {b: 4}, font: {size: 11},
      buttons: views.map(([key, shown]) => ({label: t[key], method: "restyle", args: [{visible: shown}]}))}];
  }
  return dvFigure(theme, data, dvTitled(t, title, opts.side), Math.max(256, Math.min(476, 106 + 16 * rows)), {
    margin: {l: 50, r: 108, t: 60, b: 44},  // t: a title of two lines; r: the colour bar with its title
    xaxis: dvAxis(t.axis_position, {range: [-0.5, G - 0.5], showgrid: false}),
    yaxis: dvAxis(t.axis_step, {range: [rows + 0.5, 0.5], dtick: Math.max(1, Math.floor(rows / 8))}), ...extra,
  });
}

// How a step x position heatmap draws its cells: a pixel's gap between them, or, past DV_DENSE cells a
// side (a cell of a few pixels, mostly gap), one image scaled up without smoothing: plotly draws a
// 240 x 240 grid in ~45 ms so, ~150 ms cell by cell with gaps.
const DV_DENSE = 128;
function dvCells(columns, rows) {
  return columns > DV_DENSE || rows > DV_DENSE ? {zsmooth: "fast"} : {xgap: 1, ygap: 1};
}

// The heatmap's drift view: at each cached step checked against the exact forward, |confidence -
// exact confidence| per cell; null when no step was checked.
function dvDriftLayer(d, t, where) {
  if (!d.scored.some((sc) => sc.xc && sc.xc.some((x) => !Number.isNaN(x)))) return null;
  const z = [], hover = [];
  let top = 0;
  for (const sc of d.scored) {
    const zr = new Array(d.G).fill(null), hr = new Array(d.G).fill("");
    sc.pos.forEach((p, j) => {
      const c = sc.conf[j], e = sc.xc ? sc.xc[j] : NaN;
      if (Number.isNaN(c) || Number.isNaN(e)) return;
      zr[p] = Math.round(Math.abs(c - e) * 1e4) / 1e4;
      top = Math.max(top, zr[p]);
      hr[p] = dvFill(t.tip_drift, {c: c.toFixed(3), e: e.toFixed(3)});
    });
    z.push(zr); hover.push(hr);
  }
  return {type: "heatmap", name: "drift", visible: false, z, customdata: hover, x: [...Array(d.G).keys()],
    y: Array.from({length: d.n}, (_, i) => i + 1), zmin: 0, zmax: Math.max(top, 1e-3),
    colorscale: dvPlotlyScale(d.theme.drift), ...dvCells(d.G, d.n), hoverongaps: false, colorbar: dvColorbar(t.axis_drift),
    hovertemplate: where + "%{customdata}<extra></extra>"};
}

// ----- the unmasking order ---------------------------------------------------------------------------
// The generated span in rows of `d.width`; each cell coloured by the step that last decided it and
// labelled with its token. Under a revision rule a cell decided n > 1 times says ×n, and its hover
// lists the position's history.
function dvOrderFig(d, t) {
  if (d.rn) return dvRenoiseOrderFig(d, t);
  const theme = d.theme, G = d.G, n = Math.max(1, d.n), w = d.width, rows = Math.max(1, Math.ceil(G / w));
  const z = Array.from({length: rows}, () => new Array(w).fill(null));
  const text = Array.from({length: rows}, () => new Array(w).fill(""));
  const hover = Array.from({length: rows}, () => new Array(w).fill(""));
  const revising = d.revise !== "none";
  for (let p = 0; p < G; p++) {
    const confirms = d.events[p].filter((e) => e[1] === "c" || e[1] === "f");
    if (!confirms.length || d.tok[p] < 0) continue;
    const r = Math.floor(p / w), c = p % w, tok = dvLabel(d.pieces[d.tok[p]]), conf = confirms[confirms.length - 1][4];
    z[r][c] = d.order[p] + 1;
    text[r][c] = dvCellText(d.pieces[d.tok[p]]);
    hover[r][c] = `${t.axis_position} ${p} · ${t.axis_step} ${d.order[p] + 1}<br>${dvRepr(tok)} · ${dvFmt3(conf)}`;
    if (revising) {
      const decided = d.events[p].filter((e) => e[1] !== "r").length;
      if (decided > 1) text[r][c] += `<br>×${decided}`;
      hover[r][c] = `${t.axis_position} ${p} · ${dvFill(t.rv_decided, {n: decided})}<br>` + dvHistoryLabel(d, t, d.events[p]);
    }
  }
  const heat = {type: "heatmap", z, text, customdata: hover, texttemplate: "%{text}", textfont: {size: 11},
    colorscale: dvPlotlyScale(theme.order), zmin: 1, zmax: n, xgap: 2, ygap: 2, hoverongaps: false,
    colorbar: dvColorbar(t.axis_step), hovertemplate: "%{customdata}<extra></extra>"};
  return dvFigure(theme, [heat], dvTitled(t, revising ? t.fig_order_revised : t.fig_order),
    Math.max(180, Math.min(420, revising ? 96 + 40 * rows : 80 + 34 * rows)), {
      margin: {l: 50, r: 88, t: revising ? 60 : 44, b: 44},  // t: the revised title's two lines
      xaxis: {showticklabels: false, showgrid: false, zeroline: false, range: [-0.5, w - 0.5]},
      yaxis: dvAxis(t.axis_position, {range: [rows - 0.5, -0.5], showgrid: false,
        tickvals: [...Array(rows).keys()], ticktext: [...Array(rows).keys()].map((r) => String(r * w))}),
    });
}

// ----- the per-step figure ----------------------------------------------------------------------------
// Top: positions confirmed (k, bars) and the temperature in force (line); under a revision rule also
// the tokens each step took back or rewrote. Bottom: each confirmed token's confidence as the schedule
// saw it (dots) and the raw probability of the token drawn (crosses), with the per-step mean, on the
// heatmap's logit scale (hover shows the real values).
const DV_STEPS_DOMAINS = {top: [0.56, 1.0], low: [0.0, 0.44]};
const DV_DENSE_STEPS = 96;  // steps past which the temperature line has no markers (plotly draws each on its own)

function dvStepsFig(d, t, opts = {}) {
  if (d.rn) return dvRenoiseStepsFig(d, t, opts);
  const theme = d.theme, P = theme.palette, step = t.axis_step, steps = d.k.map((_, s) => s + 1);
  const xs = [], conf = [], rawp = [], labels = [], means = [];
  for (let s = 0; s < d.n; s++) {
    const vals = [];
    d.sel[s].forEach((p, j) => {
      const c = d.gconf[s][p];
      xs.push(s + 1); conf.push(c); rawp.push(Math.exp(d.lp[s][j])); vals.push(c);
      labels.push(`${t.axis_position} ${p} · ${dvRepr(dvLabel(d.pieces[d.tok0[s][j]]))}`);
    });
    means.push(vals.length ? vals.reduce((a, x) => a + x, 0) / vals.length : null);
  }
  const confHover = labels.map((l, i) => `${l}<br>${t.schedule_conf} ${conf[i].toFixed(3)}`);
  const rawHover = labels.map((l, i) => `${l}<br>${t.raw_token_p} ${dvG3(rawp[i])}`);
  const meanHover = means.map((m) => (m === null ? "" : `${t.mean} ${m.toFixed(3)}`));
  const hover = "%{customdata}<extra></extra>";
  const data = [
    {type: "bar", x: steps, y: d.k, name: "k", xaxis: "x", yaxis: "y", marker: {color: P.k},
     hovertemplate: `${step} %{x} · k = %{y}<extra></extra>`},
    {type: "scatter", x: steps, y: d.T, xaxis: "x", yaxis: "y2", name: t.axis_temperature,
     mode: d.n > DV_DENSE_STEPS ? "lines" : "lines+markers",  // past DV_DENSE_STEPS a marker is wider than its step
     line: {color: P.temperature, width: 2, shape: "hv"}, hovertemplate: `${step} %{x} · T = %{y}<extra></extra>`},
    {type: "scatter", mode: "markers", x: xs, y: conf.map((c) => dvScaled(theme, c)), customdata: confHover,
     xaxis: "x2", yaxis: "y3", name: t.schedule_conf, hovertemplate: hover, marker: {color: P.raw, size: 7, opacity: 0.75}},
    {type: "scatter", mode: "markers", x: xs, y: rawp.map((c) => dvScaled(theme, c)), customdata: rawHover,
     xaxis: "x2", yaxis: "y3", name: t.raw_token_p, hovertemplate: hover,
     marker: {color: P.tempered, size: 6, symbol: "x", opacity: 0.9, line: {color: P.temperature, width: 1}}},
    {type: "scatter", mode: "lines", x: steps, y: means.map((m) => (m === null ? null : Math.round(dvPosition(theme, m) * 1e6) / 1e6)),
     xaxis: "x2", yaxis: "y3", name: t.mean, line: {color: P.accent, width: 2}, customdata: meanHover, hovertemplate: hover},
  ];
  if (d.revise !== "none") data.push(dvRevisionsSeries(d, t));
  const span = [0.5, Math.max(1, d.n) + 0.5];
  return dvFigure(theme, data, dvTitled(t, t.fig_steps, opts.side), 520, {
    ...dvSwitchMarks(d, t, "x2"),
    margin: {l: 56, r: 50, t: 44, b: 176},  // b: its legend's rows in a figure column (fit.js grows it for more)
    xaxis: {anchor: "y", matches: "x2", showticklabels: false, range: span},
    yaxis: dvAxis(t.axis_k, {domain: DV_STEPS_DOMAINS.top, rangemode: "tozero"}),
    yaxis2: dvTemperatureAxis(t.axis_temperature, d.T),
    xaxis2: dvAxis(step, {anchor: "y3", range: span}),
    yaxis3: dvAxis(t.axis_confidence, {domain: DV_STEPS_DOMAINS.low, range: [-0.03, 1.03], ...dvConfidenceAxis(theme)}),
    legend: {orientation: "h", yanchor: "top", y: -0.16, xanchor: "left", x: 0},
  });
}

// Where a fork switched knobs (d.switches): a dashed line before that step on the per-step figure's lower plot
// (`xref`), and above it a mark whose hover says what changed, in the page's words (render.fork_points_text's).
function dvSwitchMarks(d, t, xref) {
  const P = d.theme.palette, shapes = [], annotations = [];
  for (const sw of d.switches || []) {
    const x = sw.step + 0.5, what = sw.knobs.map(([k, now, was]) =>  // a trace file's words: text, never markup
      dvFill(t.fk_knob, {knob: dvEscape(k), new: dvEscape(now), old: dvEscape(was)}));
    shapes.push({type: "line", name: "fork", xref, yref: "paper", x0: x, x1: x, y0: 0, y1: 1,
                 line: {color: P.diverge, dash: "dash", width: 1.5}});
    annotations.push({xref, yref: "paper", x, y: 1, yanchor: "bottom", showarrow: false, text: t.fk_mark,
                      font: {size: 11, color: P.diverge}, hovertext: dvFill(t.fk_at, {s: sw.step, what: what.join(t.fk_sep)})});
  }
  return {shapes, annotations};
}

function dvRevisionsSeries(d, t) {
  const hover = d.k.map((_, s) => {
    let text = dvFill(t.rv_step, {r: d.rm[s].length / 3, e: d.ed[s].length / 5});
    if (d.fw[s] > 1) text += " · " + dvFill(t.rv_forwards, {n: d.fw[s]});
    else if (d.fw[s] === 0) text += " · " + t.rv_reused;  // ReMDM's step that reused the one before's p_x0
    return `${t.axis_step} ${s + 1} · ${text}`;
  });
  return {type: "scatter", mode: "lines+markers", x: d.k.map((_, s) => s + 1),
    y: d.k.map((_, s) => d.rm[s].length / 3 + d.ed[s].length / 5), xaxis: "x", yaxis: "y", customdata: hover,
    name: t.rv_per_step, line: {color: d.theme.palette.remask, width: 2, shape: "hvh"}, marker: {size: 5},
    hovertemplate: "%{customdata}<extra></extra>"};
}

// ----- Compare: where the two orders diverge ------------------------------------------------------------
// Each side's step per position; the positions decided at another step shaded (`cmp.order`), a line at
// the first step whose confirmed set differs (`cmp.first`): analysis.divergence, as the page finds it
// (pair.js's dvDivergence). A run of neighbouring positions is shaded by one rectangle (plotly draws each
// shape on its own).
function dvCompareFig(a, b, t, cmp) {
  const theme = a.theme, G = a.G;
  const where = `${t.axis_position} %{x} · ${t.axis_step} %{y} · %{customdata}`;
  const data = [["side_a", a, "circle"], ["side_b", b, "x"]].map(([side, d, symbol]) => ({
    type: "scatter", mode: "markers", x: [...Array(G).keys()], y: d.order.map((o) => o + 1), name: t[side],
    customdata: d.tok.map((i) => (i >= 0 ? dvLabel(d.pieces[i]) : "")),
    marker: {color: theme.palette[side], symbol, size: 8, opacity: 0.85},
    hovertemplate: where + "<extra>%{fullData.name}</extra>"}));
  const runs = [];
  for (const p of cmp.order || []) {
    const last = runs[runs.length - 1];
    if (last && last[1] === p - 1) last[1] = p; else runs.push([p, p]);
  }
  const shapes = runs.map(([p, q]) => ({type: "rect", xref: "x", yref: "paper", x0: p - 0.5, x1: q + 0.5,
    y0: 0, y1: 1, fillcolor: theme.palette.diverge, opacity: 0.10, line: {width: 0}, layer: "below"}));
  const annotations = [];
  if (cmp.first !== null && cmp.first !== undefined) {
    const y = cmp.first + 1;
    shapes.push({type: "line", xref: "paper", yref: "y", x0: 0, x1: 1, y0: y, y1: y,
      line: {color: theme.palette.diverge, dash: "dash", width: 1.5}});
    annotations.push({xref: "paper", yref: "y", x: 0, y, xanchor: "left", yanchor: "bottom", showarrow: false,
      text: `${t.axis_step} ${y}`, font: {color: theme.palette.diverge}});
  }
  // the steps reversed, padded as plotly's autorange would (a stated range: raster.js paints the markers)
  const ys = [a, b].flatMap((d) => d.order.map((o) => o + 1)), lo = Math.min(1, ...ys), hi = Math.max(1, ...ys);
  const pad = Math.max(0.5, 0.06 * (hi - lo));
  return dvFigure(theme, data, t.fig_compare, 320, {shapes, annotations, margin: {l: 50, r: 20, t: 44, b: 96},
    xaxis: dvAxis(t.axis_position, {range: [-0.5, G - 0.5]}), yaxis: dvAxis(t.axis_step, {range: [hi + pad, lo - pad]})});
}

// ----- a task prompt: right answers against tokens per forward ---------------------------------------
// The measured threshold curves of the trace's task family (`d.task`, views/task.py: the tasks model
// solid, the exact oracle dashed), with a marker where the trace's threshold puts each; beside them the
// threshold with each revision rule (the model's dotted, the oracle's a legend click away), the
// trace's own rule marked too. Without a task: a note.
function dvOnCurve(points, threshold) {  // views/task.on_curve
  const pts = [...points].sort((a, b) => a.value - b.value);
  if (threshold <= pts[0].value) return [pts[0].tpf, 100 * pts[0].rate];
  for (let i = 0; i + 1 < pts.length; i++) {
    const lo = pts[i], hi = pts[i + 1];
    if (threshold <= hi.value) {
      const w = (threshold - lo.value) / (hi.value - lo.value);
      return [lo.tpf + w * (hi.tpf - lo.tpf), 100 * (lo.rate + w * (hi.rate - lo.rate))];
    }
  }
  const last = pts[pts.length - 1];
  return [last.tpf, 100 * last.rate];
}

function dvTaskFig(d, t, theme) {
  const task = d && d.task;
  if (!task) {
    return dvFigure(theme, [], t.fig_task_curve, 260, {
      annotations: [{text: t.task_curve_none, showarrow: false, x: 0.5, y: 0.5, xref: "paper", yref: "paper"}],
      xaxis: {visible: false}, yaxis: {visible: false}});
  }
  const P = theme.palette, fam = task.curves, threshold = d.threshold, data = [];
  const curve = (pts, name, line, marked, extra = {}) => {
    pts = [...pts].sort((a, b) => a.tpf - b.tpf);
    data.push({type: "scatter", mode: "lines+markers", x: pts.map((p) => p.tpf), y: pts.map((p) => 100 * p.rate), name,
      line, customdata: pts.map((p) => p.value),
      hovertemplate: `${name} · ${t.threshold} %{customdata}: %{y:.0f}%<extra></extra>`,
      error_y: {type: "data", symmetric: false, thickness: 1, width: 3, array: pts.map((p) => 100 * (p.hi - p.rate)),
                arrayminus: pts.map((p) => 100 * (p.rate - p.lo))}, ...extra});
    if (marked) {
      const [x, y] = dvOnCurve(pts, threshold);
      data.push({type: "scatter", mode: "markers", x: [x], y: [y], showlegend: false,
        marker: {color: line.color, size: 14, symbol: "circle-open", line: {width: 3}},
        hovertemplate: `${t.threshold} ${threshold}: %{x:.2f}, %{y:.0f}%<extra></extra>`});
    }
  };
  curve(fam.model, t.task_model, {color: P.side_a, dash: "solid"}, true);
  curve(fam.oracle, t.task_oracle, {color: P.side_b, dash: "dash"}, true);
  const revision = fam.revision || {};
  ["threshold_rcr", "threshold_remdm", "threshold_wino"].forEach((knob, i) => {
    const colour = [P.edit, P.remask, P.accent][i], own = "threshold_" + d.revise === knob;
    for (const [decoder, dash, shown] of [["model", "dot", true], ["oracle", "dashdot", "legendonly"]]) {
      const pts = (revision[decoder] || {})[knob];
      if (!pts) continue;
      const name = t["task_" + decoder] + " + " + t["rv_rule_" + knob.slice("threshold_".length)];
      curve(pts, name, {color: colour, dash, width: 1.5}, own, {visible: own ? true : shown});
    }
  });
  // null: d3LLM's get_aup refused the curve (it ends more than 5 points below its start)
  const [m, o] = fam.aup.map((a) => (a === null ? t.aup_refused : a.toFixed(0)));
  const revised = Object.keys(revision).length > 0;
  // The AUPs on a line of their own, named (a phone's width cuts a one-line title)
  return dvFigure(theme, data, `${t.fig_task_curve} · ${task.family}<br>${dvFill(t.fig_task_aup, {m, o})}`,
    revised ? 380 : 340, {
    margin: {l: 56, r: 20, t: 64, b: revised ? 136 : 96},
    xaxis: dvAxis(t.axis_tpf, {rangemode: "tozero"}), yaxis: dvAxis(t.axis_right, {range: [-5, 105]})});
}
