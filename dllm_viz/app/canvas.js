// dllm-viz: the one renderer of a canvas (the first of the page's scripts; see layout_play.PAGE_JS).
//
// Every canvas on the page is drawn here from the data the server wrote into its `data-trace`
// attribute (render.canvas_data, render.player_data, live.Live.data): the Playground's player at
// any frame, a decode in progress, and the two Compare sides. The server writes no token markup,
// so what the page shows at a frame is a function of the data and the cursor alone.
//
// Frames: frame f (0 <= f <= n) is the canvas after f steps; records in the data are 0-based, so
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

// Draw the canvas `root` at frame `f` with position `sel` selected (-1: none). Returns the number
// of tokens confirmed at that frame's step (outlined).
function paintCanvas(root, d, f, sel) {
  const spans = dvSpans(root, d), live = !!d.live;
  const ghost = live ? d.ghost : (f < d.n && d.guess ? d.guess[f] : null);
  const ghostConf = live ? d.ghostConf : (f < d.n && d.gconf ? d.gconf[f] : null);
  const diff = new Set(d.diff || []);
  let fresh = 0;
  for (let p = 0; p < d.G; p++) {
    const span = spans[p], o = d.order[p];
    let cls, text, bg, title;
    if (o >= 0 && o < f) {
      const isNew = o === f - 1, bad = d.bad && d.bad[p];
      fresh += isNew;
      cls = "dv-tok" + (isNew ? " dv-new" : "") + (d.end >= 0 && p >= d.end ? " dv-pad" : "") + (bad ? " dv-bad" : "");
      text = d.pieces[d.tok[p]];
      bg = d.tint[p];
      title = dvFill(d.t.tip_confirmed, {p, s: o + 1, c: dvFmt3(d.conf[p]), q: dvFmt3(d.q[p])}) +
        (bad ? "\n✗ " + bad.split(", ").map((r) => d.t["rule_" + r] || r).join(", ") : "");
    } else {
      const g = ghost ? ghost[p] : -1;
      cls = "dv-mask";
      text = g >= 0 ? d.pieces[g] : "▢";
      bg = "";
      title = dvFill(d.t.tip_masked, {p, g: dvRepr(text), c: dvFmt3(ghostConf ? ghostConf[p] : null)});
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
  const news = spans.filter((_, p) => d.order[p] === f - 1);
  const want = news.length ? news : (spans[sel] ? [spans[sel]] : []);
  const b = box.getBoundingClientRect();
  const seen = (s) => { const r = s.getBoundingClientRect(); return r.top >= b.top && r.bottom <= b.bottom; };
  if (!want.length || want.some(seen)) return;
  box.scrollTop += want[0].getBoundingClientRect().top - b.top - b.height / 3;
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
