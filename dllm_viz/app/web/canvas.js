// dllm-viz: the one renderer of a canvas (the first of the page's scripts; see layout_play.PAGE_JS).
//
// Every canvas on the page is drawn here from the data the server wrote into its `data-trace`
// attribute (render.canvas_data, render.player_data, live.Live.data): the Playground's player at
// any frame, a decode in progress, and the two Compare sides. The server writes no token markup,
// so what the page shows at a frame is a function of the data and the cursor alone.
//
// Frames: frame f (0 <= f <= n) is the canvas after f steps (a revised trace's tokens may be taken
// back or rewritten on the way: `dvState`); records in the data are 0-based, so
// record s is "step s+1". A masked position at frame f < n shows record f's argmax (the guess of
// the next forward pass); a decode in progress shows its latest record's (`ghost`).

const dvFill = (tpl, v) => String(tpl).replace(/\{(\w+)\}/g, (m, k) => (k in v ? String(v[k]) : m));
const dvFmt3 = (x) => (x === null || x === undefined || Number.isNaN(x) ? "–" : Number(x).toFixed(3));
// Python's repr of a str, as the server would write it (the inspector quotes tokens this way).
const dvRepr = (s) => (s.includes("'") && !s.includes('"') ? `"${s}"` : `'${s.replace(/\\/g, "\\\\").replace(/'/g, "\\'")}'`);
const dvEscape = (s) => String(s).replace(/[&<>"']/g, (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c]));

// The data of a canvas element, parsed once per attribute value.
function dvData(root) {
  const raw = root.getAttribute("data-trace");
  if (root.__dvRaw !== raw) {
    root.__dvRaw = raw;
    root.__dvData = raw ? JSON.parse(raw) : null;
    root.__dvSpans = null;
  }
  return root.__dvData;
}

// One span per position, made once per data; later frames only change classes and text.
function dvSpans(root, d) {
  if (root.__dvSpans && root.__dvSpans.length === d.G && root.__dvSpans[0] && root.__dvSpans[0].isConnected) {
    return root.__dvSpans;
  }
  const text = root.querySelector(".dv-text"), frag = document.createDocumentFragment();
  const prompt = (content) => {
    const span = document.createElement("span");
    span.className = "dv-prompt";
    span.textContent = content;
    return span;
  };
  let into = frag;
  if (d.grid) {  // a Latin square or sudoku: the puzzle's 4x4 grid (· empty), "=", the answer's grid
    const given = document.createElement("div"), answer = document.createElement("div");
    given.className = answer.className = "dv-grid";
    given.append(...d.grid.map((c) => prompt(c === "_" ? "·" : c)));
    frag.append(prompt(d.prompt.split(/\s+/)[0] + " :"), given, prompt("="), answer);
    into = answer;
  } else if (d.prompt) {
    frag.append(prompt(d.prompt));
  }
  const spans = [];
  for (let p = 0; p < d.G; p++) {
    const span = document.createElement("span");
    span.dataset.pos = String(p);
    spans.push(span);
    into.append(span);
  }
  text.replaceChildren(frag);
  root.__dvSpans = spans;
  return spans;
}

// What position p holds at frame f: null while masked (never decided, or taken back: then `taken`
// says when and what), else {step, kind "c" confirmed / "e" rewritten, tok, tint, conf, q, old, qOld, why}.
// A trace without revisions replays from its order; a revised one (render: "ev", issue 28) from the
// position's last decision before record f (revision_view.canvas_events), so scrubbing either way
// across a take-back or a rewrite shows the canvas as it stood (Trace.canvas_at).
function dvState(d, p, f) {
  if (!d.ev) {
    const o = d.order[p];
    return o >= 0 && o < f ? {step: o, kind: "c", tok: d.tok[p], tint: d.tint[p], conf: d.conf[p], q: d.q[p],
      why: d.why ? d.why[p] : ""} : null;
  }
  let e = null;
  for (const x of d.ev[p]) { if (x[0] < f) e = x; else break; }
  if (!e) return null;
  if (e[1] === "r") return {taken: {step: e[0], old: e[6], score: e[5]}};
  return {step: e[0], kind: e[1], tok: e[2], tint: e[3], conf: e[4], q: e[5], old: e[6], qOld: e[7], why: e[8]};
}

// A position's decisions before frame f (a revised trace; [] otherwise): the inspector's history.
function dvEventsBefore(d, p, f) {
  return d.ev ? d.ev[p].filter((e) => e[0] < f) : [];
}

// Draw the canvas `root` at frame `f` with position `sel` selected (-1: none). Returns the number
// of tokens confirmed at that frame's step (outlined).
function paintCanvas(root, d, f, sel) {
  const spans = dvSpans(root, d), live = !!d.live;
  const ghost = live ? d.ghost : (f < d.n && d.guess ? d.guess[f] : null);
  const ghostConf = live ? d.ghostConf : (f < d.n && d.gconf ? d.gconf[f] : null);
  const diff = new Set(d.diff || []);
  let fresh = 0;
  for (let p = 0; p < d.G; p++) {
    const span = spans[p], st = dvState(d, p, f);
    let cls, text, bg, title;
    if (st && !st.taken) {
      const isNew = st.step === f - 1 && st.kind === "c", bad = d.bad && d.bad[p];
      fresh += isNew;
      cls = "dv-tok" + (isNew ? " dv-new" : "") + (st.kind === "e" ? " dv-edited" : "") +
        (d.end >= 0 && p >= d.end ? " dv-pad" : "") + (bad ? " dv-bad" : "");
      text = d.pieces[st.tok];
      bg = st.tint;
      title = (st.kind === "e"
        ? dvFill(d.t.rv_tip_edited, {pos: p, s: st.step + 1, old: dvRepr(d.pieces[st.old]), po: dvFmt3(st.qOld),
          tok: dvRepr(text), p: dvFmt3(st.q)})
        : dvFill(d.t.tip_confirmed, {p, s: st.step + 1, c: dvFmt3(st.conf), q: dvFmt3(st.q)})) +
        (bad ? "\n✗ " + bad.split(", ").map((r) => d.t["rule_" + r] || r).join(", ") : "");
    } else {
      // Taken back at this frame's step: the token taken back, struck through (the next frame shows
      // the mask with the model's new guess); else the guess, or an empty box.
      const g = ghost ? ghost[p] : -1, takenNow = !!st && st.taken.step === f - 1;
      cls = "dv-mask" + (takenNow ? " dv-remasked" : "");
      text = takenNow && st.taken.old >= 0 ? d.pieces[st.taken.old] : (g >= 0 ? d.pieces[g] : "▢");
      bg = "";
      title = dvFill(d.t.tip_masked, {p, g: dvRepr(text), c: dvFmt3(ghostConf ? ghostConf[p] : null)}) +
        (st ? "\n" + dvFill(d.t.rv_tip_remasked, {s: st.taken.step + 1, old: dvRepr(d.pieces[st.taken.old]),
          score: d.rvScore + " " + dvFmt3(st.taken.score)}) : "");
    }
    if (diff.has(p)) cls += " dv-diff";
    if (p === sel) cls += " dv-sel";
    if (span.className !== cls) span.className = cls;
    if (span.textContent !== text) span.textContent = text;
    if (span.__dvBg !== bg) { span.__dvBg = bg; span.style.background = bg; }
    if (span.title !== title) span.title = title;
  }
  const status = root.querySelector(".dv-status");
  if (status) status.textContent = live ? liveStatus(d) : frameStatus(d, f, fresh);
  if (live) {
    const bar = root.querySelector(".dv-progress i");
    if (bar) bar.style.width = (100 * liveShare(d)).toFixed(1) + "%";
  }
  root.dataset.frame = String(f);
  root.dataset.selected = String(sel);
  return fresh;
}

function frameStatus(d, f, fresh) {
  let status = f === 0 ? d.t.start : dvFill(d.t.after_step, {s: f, k: d.k[f - 1], new: fresh});
  if (f > 0 && d.ev) {  // a revised trace: what this step took back and rewrote, beside what it confirmed
    const at = d.ev.flat().filter((e) => e[0] === f - 1);
    const r = at.filter((e) => e[1] === "r").length, e = at.filter((x) => x[1] === "e").length;
    if (r || e) status += dvFill(d.t.rv_status, {r, e});
  }
  if (f === d.n && d.n > 0) status += " · " + d.t.finished;
  return dvFill(d.t.step_of, {f, n: d.n}) + " · " + status;
}

// A decode in progress: steps done against steps planned, or (a threshold schedule, whose step
// count the model decides) positions confirmed against the generation length.
function liveShare(d) {
  const done = d.order.filter((o) => o >= 0).length;
  return d.planned ? Math.min(1, d.n / d.planned) : (d.G ? done / d.G : 1);
}

function liveStatus(d) {
  const done = d.order.filter((o) => o >= 0).length;
  return d.planned ? dvFill(d.t.live_of, {s: d.n, n: d.planned, c: done, g: d.G})
    : dvFill(d.t.live_of_unknown, {s: d.n, c: done, g: d.G});
}

// Scroll the canvas's text box (never the page) so that the tokens confirmed at this frame's step
// can be seen (else the selected position): on a long generation they can sit below its fold.
function keepInView(root, d, f, sel) {
  const box = root.querySelector(".dv-text"), spans = root.__dvSpans;
  if (!box || !spans || box.scrollHeight <= box.clientHeight + 1) return;
  const news = spans.filter((_, p) => (d.ev ? d.ev[p].some((e) => e[0] === f - 1) : d.order[p] === f - 1));
  const want = news.length ? news : (spans[sel] ? [spans[sel]] : []);
  const b = box.getBoundingClientRect();
  const seen = (s) => { const r = s.getBoundingClientRect(); return r.top >= b.top && r.bottom <= b.bottom; };
  if (!want.length || want.some(seen)) return;
  // By whole lines (palette.LINE_PX): the box's first line is never cut at its top.
  const line = parseFloat(getComputedStyle(box).lineHeight) || 32;
  const goal = box.scrollTop + want[0].getBoundingClientRect().top - b.top - b.height / 3;
  box.scrollTop = Math.max(0, Math.round(goal / line) * line);
}

// Every finished canvas that no player owns (the Compare sides): drawn at its last frame.
function paintStatic(scope) {
  (scope || document).querySelectorAll(".dv-canvas.dv-static[data-trace]").forEach((root) => {
    const d = dvData(root);
    if (d && root.__dvPainted !== root.__dvRaw) {
      paintCanvas(root, d, d.n, -1);
      root.__dvPainted = root.__dvRaw;
    }
  });
}
