// dllm-viz: the figures of a renoising trace (trace.canvas "renoise"; after figures.js, whose helpers these
// use). A renoising canvas is never masked, so the masked figures' confidence, unmasking order and k mean
// nothing for it: dvHeatmapFig, dvOrderFig and dvStepsFig hand such a trace to the three below. Each keeps
// its masked twin's geometry (axis ranges, margins, the per-step figure's two domains), so views.js draws
// the one cursor and maps a click the same way over both kinds. The numbers are views/renoise.py's
// (`stability`, `series`), derived here from the chunks (trace.js's `d.rn`); the tests hold them equal.
//   heatmap  step x position: each cell of the canvas a step read, accepted or renoised (renoising threw
//            an accepted token away: its own colour), a dot where the position's token changed, a box at
//            its last change (from there on it held its final token)
//   order    the stability map: the final text in rows, coloured by the step each position settled at,
//            with how often it changed
//   steps    accepted per step and the temperature; the accepted entropies (less the largest: what the
//            bound admitted; and whole) against the bound, the mean entropy against the stop's threshold
//            (filled: below it), the steps whose argmax was stable and where the stop fired

const dvRound6 = (x) => Math.round(x * 1e6) / 1e6;  // core.trace.quantize: a recorded float's 6 decimals

// Per position (views/renoise.py's `stability`): `steps` (the records that changed its token: the finished
// trace's `rnChanges`, by token id; before it, where the piece shown changed), `last_changed` (its canvas's
// first step if none did), `changes` and `settled` (Trace.order: the same step, from which it held its final
// token), with the frames. Made once per trace length.
function dvRenoiseStability(d) {
  const r = d.rn;
  if (r.stab && r.stab.n === d.n && r.stab.exact === Boolean(d.rnChanges)) return r.stab;
  const G = d.G, L = r.L, frames = Array.from({length: d.n + 1}, (_, f) => dvRenoiseFrame(d, f));
  const steps = Array.from({length: G}, (_, p) => (d.rnChanges && d.rnChanges[p] ? d.rnChanges[p].slice() : []));
  const first = new Array(G).fill(-1);
  for (let s = 0; s < d.n; s++) {  // record s turns frame s (what it read) into frame s + 1
    for (let p = d.block[s] * L; p < Math.min(G, (d.block[s] + 1) * L); p++) {
      if (first[p] < 0) first[p] = s;
      if (!d.rnChanges && frames[s + 1].tok[p] !== frames[s].tok[p]) steps[p].push(s);
    }
  }
  const last = steps.map((c, p) => (c.length ? c[c.length - 1] : first[p]));
  r.stab = {n: d.n, exact: Boolean(d.rnChanges), frames, steps, last_changed: last, changes: steps.map((c) => c.length),
            settled: last.slice()};
  return r.stab;
}

// A knob's value at step s: one value, or one per step where a fork switched it (views/wire.py's `renoise_done`).
function dvInForce(v, s) {
  return Array.isArray(v) ? v[s] ?? null : v ?? null;
}

// Per step (views/renoise.py's `series`): canvas, accepted, bound, sum_less_max, sum, temperature, mean_entropy,
// confidence, stable, confident, stopped.
function dvRenoiseSeries(d) {
  const r = d.rn, out = {};
  const keys = ["canvas", "accepted", "bound", "sum_less_max", "sum", "temperature", "mean_entropy", "confidence",
                "stable", "confident", "stopped"];
  keys.forEach((k) => { out[k] = []; });
  for (let s = 0; s < d.n; s++) {
    const ent = [...r.acc[s]].sort((a, b) => a - b).map((i) => r.ent[s][i]), total = ent.reduce((a, x) => a + x, 0);
    const top = ent.length ? Math.max(...ent) : 0, st = r.st[s];
    const row = {canvas: d.block[s], accepted: ent.length, bound: dvInForce(d.bound, s),
                 sum_less_max: dvRound6(total - top), sum: dvRound6(total), temperature: d.T[s], mean_entropy: r.me[s],
                 confidence: dvInForce(d.ct, s),
                 stable: (st & 1) > 0, confident: (st & 2) > 0, stopped: (st & 4) > 0};
    keys.forEach((k) => out[k].push(row[k]));
  }
  return out;
}

// ----- the heatmap's place: accepted or renoised, per step and position -----------------------------
const DV_RN_CELL = {renoised: 0, lost: 1, accepted: 2};  // z of a cell; colours in dvRenoiseHeatFig

function dvRenoiseHeatFig(d, t, opts = {}) {
  const theme = d.theme, P = theme.palette, G = d.G, n = d.n, L = d.rn.L, rows = Math.max(n, opts.rows || 0, 1);
  const stab = dvRenoiseStability(d), fr = stab.frames, r = d.rn;
  const where = `${t.axis_step} %{y} · ${t.axis_position} %{x}<br>`, hover = "%{customdata}<extra></extra>";
  const z = [], text = [];
  for (let s = 0; s < n; s++) {
    const zr = new Array(G).fill(null), hr = new Array(G).fill(""), c = d.block[s];
    for (let i = 0; i < L && c * L + i < G; i++) {
      const p = c * L + i, lost = fr[s + 1].lost[p], kept = r.acc[s].has(i);
      zr[p] = kept ? DV_RN_CELL.accepted : lost >= 0 ? DV_RN_CELL.lost : DV_RN_CELL.renoised;
      hr[p] = (kept ? t.rn_state_accepted : lost >= 0 ? dvFill(t.rn_tip_lost, {s: s + 1, old: dvQuoted(d, lost)})
        : t.rn_renoised) + " · " + dvFill(t.rn_tip_entropy, {s: s + 1, h: dvFmt3(r.ent[s][i])});
    }
    z.push(zr); text.push(hr);
  }
  const scale = [[0, P.mask_border], [1 / 3, P.mask_border], [1 / 3, P.remask], [2 / 3, P.remask], [2 / 3, P.accent],
                 [1, P.accent]];  // DV_RN_CELL's three values, each its own colour
  const heat = {type: "heatmap", z, x: [...Array(G).keys()], y: Array.from({length: n}, (_, i) => i + 1),
    customdata: text, zmin: 0, zmax: 2, colorscale: scale, showscale: false, xgap: 1, ygap: 1, hoverongaps: false,
    hovertemplate: where + hover};
  const size = Math.max(4, Math.min(12, Math.floor(520 / Math.max(G, 1))));
  const changed = {x: [], y: [], text: []}, last = {x: [], y: [], text: []};
  const piece = (f, p) => dvQuoted(d, fr[f].tok[p]);
  stab.steps.forEach((steps, p) => steps.forEach((s) => {
    changed.x.push(p); changed.y.push(s + 1);
    changed.text.push(`${t.rn_changed}: ${piece(s, p)} → ${piece(s + 1, p)}`);
  }));
  stab.last_changed.forEach((s, p) => {
    if (s < 0) return;
    last.x.push(p); last.y.push(s + 1);
    last.text.push(`${t.rn_last_changed} ${s + 1} · ${t.rn_changes} ${stab.changes[p]} · ${piece(n, p)}`);
  });
  const marks = (m, name, marker) => ({type: "scatter", mode: "markers", x: m.x, y: m.y, customdata: m.text, name,
    showlegend: false, marker, hovertemplate: where + hover});
  const data = [heat,
    marks(changed, t.rn_changed, {symbol: "circle", size: Math.max(3, Math.floor(size / 2)), color: P.text}),
    marks(last, t.rn_last_changed, {symbol: "square-open", size: size + 2, color: P.edit, line: {width: 2}})];
  return dvFigure(theme, data, dvTitled(t, t.rn_heat_title, opts.side), Math.max(256, Math.min(476, 106 + 16 * rows)), {
    margin: {l: 50, r: 20, t: 60, b: 44},  // no colour bar: the title names the three colours
    xaxis: dvAxis(t.axis_position, {range: [-0.5, G - 0.5], showgrid: false}),
    yaxis: dvAxis(t.axis_step, {range: [rows + 0.5, 0.5], dtick: Math.max(1, Math.floor(rows / 8))}),
  });
}

// ----- the order map's place: the stability map ------------------------------------------------------
function dvRenoiseOrderFig(d, t) {
  const theme = d.theme, G = d.G, w = d.width, rows = Math.max(1, Math.ceil(G / w));
  const stab = dvRenoiseStability(d), out = stab.frames[d.n];
  const grid = (fill) => Array.from({length: rows}, () => new Array(w).fill(fill));
  const z = grid(null), text = grid(""), hover = grid("");
  for (let p = 0; p < G; p++) {
    if (stab.settled[p] < 0 || out.tok[p] < 0) continue;
    const r = Math.floor(p / w), c = p % w, tok = dvLabel(d.pieces[out.tok[p]]);
    z[r][c] = stab.settled[p] + 1;
    text[r][c] = dvCellText(d.pieces[out.tok[p]]) + "<br>" + stab.changes[p];
    hover[r][c] = `${t.axis_position} ${p} · ${dvRepr(tok)}<br>${t.rn_last_changed} ${stab.last_changed[p] + 1} · ` +
      `${t.rn_changes} ${stab.changes[p]}`;
  }
  const heat = {type: "heatmap", z, text, customdata: hover, texttemplate: "%{text}", textfont: {size: 11},
    colorscale: dvPlotlyScale(theme.order), zmin: 1, zmax: Math.max(1, d.n), xgap: 2, ygap: 2, hoverongaps: false,
    colorbar: dvColorbar(t.axis_step), hovertemplate: "%{customdata}<extra></extra>"};
  return dvFigure(theme, [heat], dvTitled(t, t.rn_stability_title), Math.max(180, Math.min(420, 96 + 40 * rows)), {
    margin: {l: 50, r: 88, t: 60, b: 44},  // t: the title's two lines
    xaxis: {showticklabels: false, showgrid: false, zeroline: false, range: [-0.5, w - 0.5]},
    yaxis: dvAxis(t.axis_position, {range: [rows - 0.5, -0.5], showgrid: false,
      tickvals: [...Array(rows).keys()], ticktext: [...Array(rows).keys()].map((r) => String(r * w))}),
  });
}

// ----- the per-step figure ---------------------------------------------------------------------------
// Top (DV_STEPS_DOMAINS, as the masked one's): positions accepted (bars) with the stable steps (○) and the
// stop (★) on them, the temperature (line, right axis). Bottom, in nats on a log axis: the accepted entropies
// less the largest against the bound (dashed), their whole sum, the mean entropy against the stop's threshold.
// A dotted line where a canvas begins (the temperature starts over).
function dvRenoiseStepsFig(d, t, opts = {}) {
  const P = d.theme.palette, step = t.axis_step, se = dvRenoiseSeries(d), xs = se.accepted.map((_, s) => s + 1);
  const at = (s) => `${step} ${s + 1} · ${t.rn_canvas} ${se.canvas[s] + 1}`, hover = "%{customdata}<extra></extra>";
  const low = (y, name, line, extra = {}) => ({type: "scatter", mode: "lines", x: xs, y, name, xaxis: "x2", yaxis: "y3",
    line, customdata: y.map((v, s) => `${at(s)}<br>${name} ${v === null ? "–" : dvG3(v)}`), hovertemplate: hover,
    ...extra});
  const flagged = (key, name, marker) => {
    const on = xs.filter((_, s) => se[key][s]);
    return {type: "scatter", mode: "markers", x: on, y: on.map((x) => se.accepted[x - 1]), name, xaxis: "x", yaxis: "y",
      marker, customdata: on.map((x) => `${at(x - 1)} · ${name}`), hovertemplate: hover};
  };
  const data = [
    {type: "bar", x: xs, y: se.accepted, name: t.rn_accepted, xaxis: "x", yaxis: "y", marker: {color: P.accent},
     customdata: xs.map((_, s) => `${at(s)}<br>${t.rn_accepted} ${se.accepted[s]}`), hovertemplate: hover},
    {type: "scatter", x: xs, y: se.temperature, xaxis: "x", yaxis: "y2", name: t.rn_temperature, mode: "lines+markers",
     line: {color: P.temperature, width: 2, shape: "hv"}, hovertemplate: `${step} %{x} · T = %{y}<extra></extra>`},
    flagged("stable", t.rn_stable, {symbol: "circle-open", size: 11, color: P.cursor, line: {width: 2}}),
    flagged("stopped", t.rn_stopped, {symbol: "star", size: 14, color: P.diverge}),
    low(se.sum, t.rn_sum, {color: P.k, dash: "dot", width: 1.5}, {mode: "lines+markers", marker: {size: 4}}),
    low(se.sum_less_max, t.rn_sum_less_max, {color: P.accent, width: 2}, {mode: "lines+markers", marker: {size: 5}}),
    low(se.bound, t.rn_bound, {color: P.accent, dash: "dash", width: 1.5}),
    low(se.mean_entropy, t.rn_mean_entropy, {color: P.raw, width: 2}, {mode: "lines+markers",
      marker: {size: 7, symbol: se.confident.map((c) => (c ? "circle" : "circle-open"))}}),
    low(se.confidence, t.rn_confidence, {color: P.raw, dash: "dash", width: 1.5}),
  ];
  const span = [0.5, Math.max(1, d.n) + 0.5];
  const marks = dvSwitchMarks(d, t, "x2");  // a fork's switch of the bound, the temperatures, ... (figures.js)
  const shapes = xs.slice(1).filter((x) => se.canvas[x - 1] !== se.canvas[x - 2]).map((x) => ({type: "line",
    xref: "x2", yref: "paper", x0: x - 0.5, x1: x - 0.5, y0: 0, y1: 1, line: {color: P.muted, dash: "dot", width: 1}}));
  return dvFigure(d.theme, data, dvTitled(t, t.rn_series_title, opts.side), 520, {
    margin: {l: 56, r: 50, t: 60, b: 176}, shapes: [...shapes, ...marks.shapes], annotations: marks.annotations,
    // t: the title's two lines; b: the legend's
    xaxis: {anchor: "y", matches: "x2", showticklabels: false, range: span},
    yaxis: dvAxis(t.rn_accepted, {domain: DV_STEPS_DOMAINS.top, rangemode: "tozero"}),
    yaxis2: dvTemperatureAxis(t.rn_temperature, se.temperature),
    xaxis2: dvAxis(step, {anchor: "y3", range: span}),
    yaxis3: dvAxis(t.rn_nats, {domain: DV_STEPS_DOMAINS.low, type: "log", range: dvLogRange(se),
      exponentformat: "power"}),
    legend: {orientation: "h", yanchor: "top", y: -0.16, xanchor: "left", x: 0},
  });
}

// The log axis's range (powers of ten) over every positive entropy and threshold drawn, a little beyond.
function dvLogRange(se) {
  const vals = [se.sum, se.sum_less_max, se.bound, se.mean_entropy, se.confidence].flat().filter((v) => v > 0);
  if (!vals.length) return [-3, 1];
  return [Math.log10(Math.min(...vals)) - 0.15, Math.log10(Math.max(...vals)) + 0.15];
}
