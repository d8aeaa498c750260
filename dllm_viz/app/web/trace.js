// dllm-viz: the trace in the page (the first of the renderer's files; see views/web.py).
//
// A trace reaches the page as the chunks of views/wire.py, read once: `dvTraceNew()` makes an empty
// trace and `dvTraceAdd(d, chunk)` adds each chunk as it comes (a decode in progress, step by step;
// a stored trace, all at once). What the views draw is derived here, from the records alone, into
// one object `d` (the "trace data" every other file reads):
//   n (steps = frames), G, prompt, pieces (token texts), k[s], block[s], T[s], fw[s],
//   per step s: guess[s][p] (argmax piece, -1), gconf[s][p] (confidence, NaN), rank[s][p], scored[s]
//   (its positions, with conf/arg/raw/xc and candidates: `dvCands`), sel/tok/lp (confirmed),
//   rm/ed (taken back / rewritten: revision rules);
//   per position p its last decision: order[p] (step, -1), tok[p] (piece), tint[p], conf[p], q[p],
//   why[p]; ev[p] (every decision: a revised trace only), and from `done` (the finished trace): end,
//   bad[p], rules[p], grid, link, task; where positions moved (insert/delete), lin[f][p] (the token's
//   lineage at frame f), mvs[s] (step s's move) and fev[f][p] (dvMove), and moved (deleted, split).
// Frames: frame f (0 <= f <= n) is the canvas after f steps; records are 0-based (record s is "step
// s+1"). Pure data: no DOM here.

const DV_NAN = -2147483648;  // wire.NAN_CODE: a NaN among millionths

// ----- colours (views/palette.py, given once as `theme`) ---------------------------------------------
function dvRoundHalfEven(x) {  // Python's round(), so a tint is the server's to the last digit
  const r = Math.round(x);
  return Math.abs(x % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

function dvHex(rgb) {
  return "#" + rgb.map((c) => Math.max(0, Math.min(255, dvRoundHalfEven(c))).toString(16).padStart(2, "0")).join("");
}

function dvRgb(hex) {
  return [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));
}

function dvScaleColor(scale, x) {  // palette.scale_color
  x = Number.isNaN(x) ? 0 : Math.min(1, Math.max(0, x));
  for (let i = 0; i + 1 < scale.length; i++) {
    const [x0, c0] = scale[i], [x1, c1] = scale[i + 1];
    if (x <= x1) {
      const w = x1 > x0 ? (x - x0) / (x1 - x0) : 0, a = dvRgb(c0), b = dvRgb(c1);
      return dvHex(a.map((p, j) => p + w * (b[j] - p)));
    }
  }
  return scale[scale.length - 1][1];
}

function dvPosition(theme, c) {  // palette.confidence_position: the logit scale over theme.range
  if (c === null || c === undefined || Number.isNaN(c)) return NaN;
  const [lo, hi] = theme.range, logit = (p) => Math.log(p / (1 - p)), v = Math.min(hi, Math.max(lo, c));
  return (logit(v) - logit(lo)) / (logit(hi) - logit(lo));
}

function dvTint(theme, c) {  // palette.tint: the confidence colour mixed with white
  const rgb = dvRgb(dvScaleColor(theme.confidence, dvPosition(theme, c)));
  return dvHex(rgb.map((v) => theme.strength * v + (1 - theme.strength) * 255));
}

// ----- chunks in ---------------------------------------------------------------------------------
function dvColumn(col) {  // ["i2" | "i4", base64] -> a typed array (little-endian, as every browser)
  const bytes = Uint8Array.fromBase64 ? Uint8Array.fromBase64(col[1]) : dvBytes(atob(col[1]));  // (Chromium 140 on)
  return col[0] === "i2" ? new Int16Array(bytes.buffer) : new Int32Array(bytes.buffer);
}

function dvBytes(bin) {  // a binary string's bytes (where the browser decodes no base64 into bytes itself)
  const bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  return bytes;
}

const dvM6 = (v) => (v === DV_NAN ? NaN : v / 1e6);  // wire.millionths read back

function dvTraceNew(theme) {
  return {theme, n: 0, G: 0, pieces: [], k: [], block: [], T: [], fw: [], guess: [], gconf: [], rank: [], scored: [],
          sel: [], tok0: [], lp: [], rm: [], ed: [], revisedSteps: 0, done: null, end: -1, bad: [], rules: [],
          grid: null, link: null, task: null, diff: []};
}

// Add one chunk: its head, its new pieces, its steps, and `done` when the trace is finished.
function dvTraceAdd(d, chunk) {
  if (chunk.head) dvHead(d, chunk.head);
  for (const text of chunk.pieces || []) d.pieces.push(text);
  if (chunk.steps) dvSteps(d, chunk.steps);
  if (chunk.done) dvDone(d, chunk.done);
  if ("queue" in chunk) d.queue = chunk.queue;
  if (chunk.key) d.key = chunk.key;  // a decode in progress of this page's own: what its Stop sends  // before its first step: where the decode waits for a slot
  return d;
}

function dvHead(d, h) {
  d.forks = h.forks || [];
  d.switches = h.switches || [];  // a fork's knobs switched before record `step`: [name, new, old] (views/wire.py)
  Object.assign(d, {G: h.G, bs: h.bs, canvas: h.canvas || "masked", prompt: h.prompt, model: h.model,
    planned: h.planned, schedule: h.schedule,
    threshold: h.threshold, strict: h.strict, temperature: h.temperature, src: h.src, revise: h.revise,
    measure: h.confidence + (h.src === "raw" ? "" : ` (${h.src})`), width: h.G <= 96 ? 8 : 16});
  const G = h.G;
  d.order = new Array(G).fill(-1); d.tok = new Array(G).fill(-1); d.tint = new Array(G).fill("");
  d.conf = new Array(G).fill(null); d.q = new Array(G).fill(null); d.why = new Array(G).fill("");
  d.events = Array.from({length: G}, () => []);  // every decision per position (ev: a revised trace's)
  d.bad = new Array(G).fill("");
  d.rules = Array.from({length: G}, () => []);
}

function dvSteps(d, c) {
  const pos = dvColumn(c.pos), conf = dvColumn(c.conf), arg = dvColumn(c.arg), nc = dvColumn(c.nc);
  const cand = dvColumn(c.cand), cp = dvColumn(c.cp), raw = c.raw ? dvColumn(c.raw) : null;
  const xc = c.xc ? dvColumn(c.xc) : null;
  let at = 0, cat = 0;
  for (let i = 0; i < c.k.length; i++) {
    const s = d.n, m = c.ns[i], G = d.G;
    const guess = new Int32Array(G).fill(-1), gconf = new Float64Array(G).fill(NaN);
    // candidates stay in the chunk's columns: `off` says where each scored position's begin (dvCands)
    const sc = {pos: pos.subarray(at, at + m), conf: new Float64Array(m), arg: arg.subarray(at, at + m),
                raw: raw ? new Float64Array(m) : null, xc: xc ? new Float64Array(m) : null, cand, cp,
                off: new Int32Array(m + 1)};
    for (let j = 0; j < m; j++) {
      const p = pos[at + j];
      sc.conf[j] = dvM6(conf[at + j]);
      if (raw) sc.raw[j] = dvM6(raw[at + j]);
      if (xc) sc.xc[j] = dvM6(xc[at + j]);
      guess[p] = arg[at + j];
      gconf[p] = sc.conf[j];
      sc.off[j] = cat;
      cat += nc[at + j];
    }
    sc.off[m] = cat;
    at += m;
    d.k.push(c.k[i]); d.block.push(c.b[i]); d.T.push(c.T[i]); d.fw.push(c.fw[i]);
    d.guess.push(guess); d.gconf.push(gconf); d.scored.push(sc);
    d.rank.push(dvRanks(d, c.b[i], sc));
    d.sel.push(c.sel[i]); d.tok0.push(c.tok[i]); d.lp.push(c.lp[i].map(dvM6));
    d.rm.push(c.rm ? c.rm[i] : []); d.ed.push(c.ed ? c.ed[i] : []);
    d.n += 1;
    dvForks(d, s);
    dvDecide(d, s, gconf);
    if (c.rn) dvRenoiseStep(d, c.rn, i);
    if (c.mv && c.mv[i]) dvMove(d, s, c.mv[i]);
    if (d.fev) {  // a moved trace: this frame's lists, and its lineages (those of the frame before, if none moved)
      d.fev.push(d.events.slice());
      if (d.lin.length < d.n + 1) d.lin.push(d.lin[d.lin.length - 1]);
    }
  }
}

// Step s moved positions (an insert/delete rule, views/moves.py): mv = [map, deleted, cut, split], map[j] the
// position before of the token now at j (-1: a new mask). What each position holds moves with its token: its
// decisions (each token's own list, so the inspector follows the token), its last decision, its lineage. From
// the first move on, `fev[f]` keeps each frame's lists by position: frame f draws the positions of frame f.
function dvMove(d, s, mv) {
  const [map] = mv, G = d.G;
  if (!d.fev) {  // the frames before: no position had moved, so their lists are the ones held now
    d.fev = Array.from({length: s + 1}, () => d.events.slice());
    d.lin = [Array.from({length: G}, (_, p) => p)];
    d.born = 0;
    d.mvs = [];
  }
  while (d.lin.length <= s) d.lin.push(d.lin[d.lin.length - 1]);
  const pick = (arr, empty) => map.map((j) => (j >= 0 ? arr[j] : empty()));
  d.events = pick(d.events, () => []);
  for (const [key, empty] of [["order", -1], ["tok", -1], ["tint", ""], ["conf", null], ["q", null], ["why", ""]]) {
    d[key] = pick(d[key], () => empty);
  }
  const before = d.lin[s];
  d.lin.push(map.map((j) => (j >= 0 ? before[j] : G + d.born++)));
  d.mvs[s] = mv;
  d.ev = d.events;  // a moved trace replays from its decisions, frame by frame
}

// ----- a renoising trace (views/wire.py's "rn"; core/trace_renoise.py) ------------------------------------
// A renoising canvas is never masked: step s reads canvas block[s] (L positions from block[s] * L) as `read`,
// accepts some proposals by their entropy and renoises the rest; a canvas's last argmax is its output.
function dvRenoiseStep(d, rn, i) {
  if (!d.rn) d.rn = {L: d.bs, read: [], arg: [], ent: [], acc: [], me: [], st: [], out: {}, frames: [],
                     cols: null, colsOf: null};
  const r = d.rn, L = r.L;
  if (r.colsOf !== rn) {  // a new chunk: its columns, read once
    r.colsOf = rn;
    r.cols = {read: dvColumn(rn.read), arg: dvColumn(rn.arg), ent: dvColumn(rn.ent)};
    r.at = 0;
  }
  const at = r.at, cols = r.cols;
  r.read.push(cols.read.subarray(at, at + L)); r.arg.push(cols.arg.subarray(at, at + L));
  r.ent.push(Array.from(cols.ent.subarray(at, at + L), dvM6));
  r.acc.push(new Set(rn.acc[i])); r.me.push(dvM6(rn.me[i])); r.st.push(rn.st[i]);
  r.at = at + L;
  r.out[d.block[d.n - 1]] = r.arg[r.arg.length - 1];  // the canvas's latest argmax: its output once it ends
  r.frames.length = Math.min(r.frames.length, d.n - 1);  // the last frames change with this step
}

// Frame f of a renoising trace (views/renoise.py's frames): per position its state ("empty", "noise",
// "accepted", "final"), its piece (-1 where empty), `since` (accepted: the record that first accepted this
// token, in a run), `lost` (noise: the accepted piece the step before renoised, else -1) and `ent` (the entropy
// the step before ranked it by, on the canvas it accepted on; NaN elsewhere). Frames are made in order, once.
function dvRenoiseFrame(d, f) {
  const r = d.rn;
  for (let g = r.frames.length; g <= f; g++) r.frames.push(dvRenoiseNext(d, g, g > 0 ? r.frames[g - 1] : null));
  return r.frames[f];
}

function dvRenoiseNext(d, f, prev) {
  const r = d.rn, L = r.L, G = d.G, b = f < d.n ? d.block[f] : Infinity;
  const before = f > 0 && d.block[f - 1] === b ? f - 1 : -1;  // the step before, on the same canvas
  const out = {state: [], tok: new Int32Array(G).fill(-1), since: new Int32Array(G).fill(-1),
               lost: new Int32Array(G).fill(-1), ent: new Float64Array(G).fill(NaN)};
  for (let p = 0; p < G; p++) {
    const c = Math.floor(p / L), i = p - c * L;
    if (c < b || (b === Infinity && r.out[c])) {
      out.state.push(r.out[c] ? "final" : "empty");
      if (r.out[c]) out.tok[p] = r.out[c][i];
    } else if (c > b || b === Infinity) {
      out.state.push("empty");
    } else {
      out.tok[p] = r.read[f][i];
      const accepted = before >= 0 && r.acc[before].has(i);
      out.state.push(accepted ? "accepted" : "noise");
      if (before >= 0) out.ent[p] = r.ent[before][i];
      if (accepted) {
        const held = prev && prev.state[p] === "accepted" && prev.tok[p] === out.tok[p];
        out.since[p] = held ? prev.since[p] : f - 1;
      } else if (prev && prev.state[p] === "accepted") {
        out.lost[p] = prev.tok[p];
      }
    }
  }
  return out;
}

// The decision lists by position at frame f: a moved trace's frame (fev), else the trace's own.
function dvEv(d, p, f) {
  return d.fev ? d.fev[Math.max(0, Math.min(f, d.fev.length - 1))][p] : d.ev ? d.ev[p] : d.events[p];
}

// Rank (1 = first) by the confidence the schedule ranked by, among the masked positions of the
// step's block, ties to the lower position (schedules.choose); 0 for a position not in the running.
function dvRanks(d, block, sc) {
  const rank = new Int32Array(d.G), eligible = [];
  sc.pos.forEach((p, j) => { if (Math.floor(p / d.bs) === block && !Number.isNaN(sc.conf[j])) eligible.push([sc.conf[j], p]); });
  eligible.sort((a, b) => b[0] - a[0] || a[1] - b[1]).forEach(([, p], r) => { rank[p] = r + 1; });
  return rank;
}

// Why the threshold schedule confirmed a position with confidence c (revision.threshold_reason).
function dvWhy(d, c) {
  if (d.schedule !== "threshold" || Number.isNaN(c)) return "";
  return (d.strict ? c > d.threshold : c >= d.threshold) ? "above" : "floor";
}

// Step s's decisions, in the trace's order (core.analysis.events): taken back, rewritten, confirmed.
function dvDecide(d, s, gconf) {
  const rm = d.rm[s], ed = d.ed[s], held = (p) => { const e = d.events[p]; return e.length ? e[e.length - 1] : null; };
  const last = (p) => { const e = held(p); return e && e[1] !== "r" ? e[2] : -1; };
  for (let i = 0; i < rm.length; i += 3) {
    const p = rm[i];
    d.events[p].push([s, "r", -1, "", null, dvM6(rm[i + 2]), rm[i + 1], null, ""]);
    d.order[p] = -1; d.tok[p] = -1; d.tint[p] = ""; d.conf[p] = null; d.q[p] = null; d.why[p] = "";
  }
  for (let i = 0; i < ed.length; i += 5) {
    const p = ed[i], pNew = dvM6(ed[i + 3]);
    const e = [s, "e", ed[i + 2], Number.isNaN(pNew) ? "" : dvTint(d.theme, pNew), pNew, pNew, ed[i + 1], dvM6(ed[i + 4]), ""];
    d.events[p].push(e);
    d.order[p] = s; d.tok[p] = e[2]; d.tint[p] = e[3]; d.conf[p] = pNew; d.q[p] = pNew; d.why[p] = "";
  }
  if (rm.length || ed.length) d.revisedSteps += 1;
  d.sel[s].forEach((p, j) => {
    const c = gconf[p], q = Math.exp(d.lp[s][j]), why = dvWhy(d, c);
    const e = [s, "c", d.tok0[s][j], Number.isNaN(c) ? "" : dvTint(d.theme, c), Number.isNaN(c) ? null : c, q, last(p), null, why];
    d.events[p].push(e);
    d.order[p] = s; d.tok[p] = e[2]; d.tint[p] = e[3]; d.conf[p] = e[4]; d.q[p] = q; d.why[p] = why;
  });
  d.ev = d.revisedSteps ? d.events : null;  // canvas.js replays a revised trace from its decisions
}

// A forked trace's changes made before record s (core.lineage): as decisions at step s - 1 (-1: a fork
// at the start, on show from frame 0), a position taken back ("r", no score) or a token forced ("f").
function dvForks(d, s) {
  for (const f of d.forks || []) {
    if (f.step !== s) continue;
    const held = (p) => { const e = d.events[p]; return e.length && e[e.length - 1][1] !== "r" ? e[e.length - 1][2] : -1; };
    for (const p of f.remask) {
      d.events[p].push([s - 1, "r", -1, "", null, NaN, held(p), null, ""]);
      d.order[p] = -1; d.tok[p] = -1; d.tint[p] = ""; d.conf[p] = null; d.q[p] = null; d.why[p] = "";
    }
    for (const [p, tok] of f.force) {
      d.events[p].push([s - 1, "f", tok, "", null, NaN, held(p), null, ""]);
      d.order[p] = s - 1; d.tok[p] = tok; d.tint[p] = ""; d.conf[p] = null; d.q[p] = null; d.why[p] = "";
    }
    d.revisedSteps += 1;
    d.ev = d.events;
  }
}

function dvDone(d, done) {
  dvForks(d, d.n);  // a fork after the last record
  Object.assign(d, {done, end: done.end, grid: done.grid, link: done.link, task: done.task, checked: done.checked,
                    moved: done.moved || null});
  if (done.rn) Object.assign(d, {bound: done.rn.bound, ct: done.rn.ct, rnChanges: done.rn.changes});  // renoise figures
  d.bad = done.bad.length ? done.bad : d.bad;
  d.rules = done.rules.length ? done.rules : d.rules;
}

// The stored top candidates at step s, position p: [piece indices, raw probabilities] ([] when none).
function dvCands(d, s, p) {
  const sc = d.scored[s];
  if (!sc) return [[], []];
  const j = sc.pos.indexOf(p);
  if (j < 0) return [[], []];
  const a = sc.off[j], b = sc.off[j + 1];
  return [Array.from(sc.cand.subarray(a, b)), Array.from(sc.cp.subarray(a, b), dvM6)];
}

// A trace's canvas after record s as piece indices (null: masked): Trace.canvas_at, for tests and exports.
function dvCanvasAt(d, s) {
  if (d.rn) return Array.from(dvRenoiseFrame(d, s + 1).tok, (i) => (i >= 0 ? i : null));
  return Array.from({length: d.G}, (_, p) => {
    let e = null;
    for (const x of dvEv(d, p, s + 1)) { if (x[0] <= s) e = x; else break; }
    return e && e[1] !== "r" ? e[2] : null;
  });
}
