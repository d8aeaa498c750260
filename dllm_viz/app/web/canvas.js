// dllm-viz: the one renderer of a canvas (after trace.js; see views/web.py).
//
// Every canvas on the page is drawn here from a trace's data (trace.js): the Playground's player at
// any frame, a decode in progress (painted after each step it sends), and the two Compare sides. The
// server writes no token markup, so what the page shows at a frame is a function of the data and the
// cursor alone. The player's controls and its key are written here too, in the page's language.
//
// Frames: frame f (0 <= f <= n) is the canvas after f steps (a revised trace's tokens may be taken
// back or rewritten on the way: `dvState`); records in the data are 0-based, so record s is "step
// s+1". A masked position at frame f < n shows record f's argmax (the guess of the next forward
// pass); a decode in progress shows its latest record's.

const dvFill = (tpl, v) => String(tpl).replace(/\{(\w+)\}/g, (m, k) => (k in v ? String(v[k]) : m));
const dvFmt3 = (x) => (x === null || x === undefined || Number.isNaN(x) ? "–" : Number(x).toFixed(3));
// Python's repr of a str, as the server would write it (the inspector quotes tokens this way).
const dvRepr = (s) => (s.includes("'") && !s.includes('"') ? `"${s}"` : `'${s.replace(/\\/g, "\\\\").replace(/'/g, "\\'")}'`);
const dvEscape = (s) => String(s).replace(/[&<>"']/g, (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#x27;"}[c]));

// `el`'s text set to `text` in place where it holds one text node (its data changed: no node made or dropped,
// so the browser lays the text out again without rebuilding that part of its layout tree, and records no
// childList mutation), else its children replaced by the text. A decode's step changes the text of every
// masked position (the model's new guesses), on each side of a compare.
function dvSetText(el, text) {
  const node = el.firstChild;
  if (node && node.nodeType === 3 && !node.nextSibling) {
    if (node.data !== text) node.data = text;
  } else if (el.textContent !== text) {
    el.textContent = text;
  }
}

// One span per position, made once per data; later frames only change classes and text.
function dvSpans(root, d) {
  if (root.__dvSpans && root.__dvFor === d && root.__dvSpans.length === d.G && root.__dvSpans[0] &&
      root.__dvSpans[0].isConnected) {
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
  root.__dvFor = d;
  return spans;
}

// What position p holds at frame f: null while masked (never decided, or taken back: then `taken`
// says when and what), else {step, kind "c" confirmed / "e" rewritten, tok, tint, conf, q, old, qOld, why}.
// A trace without revisions replays from its order; a revised one (`ev`, trace.js) from the
// position's last decision before record f, so scrubbing either way across a take-back or a rewrite
// shows the canvas as it stood (Trace.canvas_at).
function dvState(d, p, f) {
  if (!d.ev) {
    const o = d.order[p];
    return o >= 0 && o < f ? {step: o, kind: "c", tok: d.tok[p], tint: d.tint[p], conf: d.conf[p], q: d.q[p],
      why: d.why ? d.why[p] : ""} : null;
  }
  let e = null;
  for (const x of dvEv(d, p, f)) { if (x[0] < f) e = x; else break; }
  if (!e) return null;
  if (e[1] === "r") return {taken: {step: e[0], old: e[6], score: e[5]}};
  return {step: e[0], kind: e[1], tok: e[2], tint: e[3], conf: e[4], q: e[5], old: e[6], qOld: e[7], why: e[8]};
}

// What decided a take-back: the rule's score by its name (ReMDM's sigma, ...), or that a fork did it.
function dvScoreText(d, t, score) {
  return Number.isNaN(score) ? t.rv_forced : dvScoreName(d, t) + " " + dvFmt3(score);
}

// A position's decisions before frame f (a revised trace; [] otherwise): the inspector's history.
function dvEventsBefore(d, p, f) {
  return d.ev ? dvEv(d, p, f).filter((e) => e[0] < f) : [];
}

// Draw the canvas `root` at frame `f` with position `sel` selected (-1: none). Returns the number
// of tokens confirmed at that frame's step (outlined). `marks` (a Compare side in step, pair.js): a Map of
// the positions that differ from the other side at this frame to their hover text; without it, the
// positions of `d.diff` (those that differ at the end) are underlined.
function paintCanvas(root, d, f, sel, marks) {
  if (d.rn) return paintRenoise(root, d, f, sel, marks);
  const spans = dvSpans(root, d), live = !!d.live;
  const g = live ? d.n - 1 : f;  // the guesses shown at masked positions: the next forward pass's
  const ghost = g >= 0 && g < d.n ? d.guess[g] : null, ghostConf = g >= 0 && g < d.n ? d.gconf[g] : null;
  const diff = new Set(marks ? [] : d.diff || []);
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
          score: dvScoreText(d, d.t, st.taken.score)}) : "");
    }
    const mv = dvMoveAt(d, p, f);
    if (mv) { cls += mv.cls; title += "\n" + mv.title; }
    if (diff.has(p)) cls += " dv-diff";
    if (marks && marks.has(p)) { cls += " dv-diff-step"; title += "\n" + marks.get(p); }
    if (p === sel) cls += " dv-sel";
    if (span.className !== cls) span.className = cls;
    dvSetText(span, text);
    if (span.__dvBg !== bg) { span.__dvBg = bg; span.style.background = bg; }
    if (span.title !== title) span.title = title;
  }
  const status = root.querySelector(".dv-status");
  if (status) dvSetText(status, live ? liveStatus(d) : frameStatus(d, f, fresh));
  if (live) {
    const bar = root.querySelector(".dv-progress i");
    if (bar) bar.style.width = (100 * liveShare(d)).toFixed(1) + "%";
  }
  root.dataset.frame = String(f);
  root.dataset.selected = String(sel);
  if (live) root.dataset.steps = String(d.n);
  return fresh;
}

// What frame f's step did to position p where positions move: a new mask it opened (a split's gap, the pad
// after a delete) or a token it moved; null where it kept the position (or no position ever moved).
function dvMoveAt(d, p, f) {
  const mv = d.mvs && f > 0 ? d.mvs[f - 1] : null;
  if (!mv) return null;
  const [map, , , split] = mv, from = map[p];
  if (from < 0) {
    const gap = p + 1 < map.length && split.includes(map[p + 1]);  // views/moves.py: the mask before a split token
    return {cls: " dv-opened", title: dvFill(d.t[gap ? "mv_born_split" : "mv_born_pad"], {s: f, p})};
  }
  return from !== p ? {cls: " dv-moved", title: dvFill(d.t.mv_moved, {s: f, a: from, b: p})} : null;
}

// A renoising trace's canvas at frame f (what step f + 1 reads; the last frame is the output): each position
// noise, an accepted proposal, final or not begun (trace.js `dvRenoiseFrame`), a renoised position marked with
// the accepted token it lost, the entropy the step before ranked it by on hover. Steps are 1-based here.
function paintRenoise(root, d, f, sel, marks) {
  const spans = dvSpans(root, d), fr = dvRenoiseFrame(d, f), t = d.t;
  let fresh = 0;
  for (let p = 0; p < d.G; p++) {
    const span = spans[p], state = fr.state[p], tok = fr.tok[p] >= 0 ? d.pieces[fr.tok[p]] : "▢";
    const isNew = state === "accepted" && fr.since[p] === f - 1;
    fresh += isNew;
    let cls = (state === "noise" || state === "empty" ? "dv-mask" : "dv-tok") + " dv-rn-" + state +
      (isNew ? " dv-new" : "") + (fr.lost[p] >= 0 ? " dv-rn-lost" : "") + (p === sel ? " dv-sel" : "");
    let title = dvFill(t["rn_tip_" + state], {pos: p, tok: dvRepr(tok), s: fr.since[p] + 1, f: f + 1});
    if (fr.lost[p] >= 0) title += "\n" + dvFill(t.rn_tip_lost, {s: f, old: dvRepr(d.pieces[fr.lost[p]])});
    if (!Number.isNaN(fr.ent[p])) title += "\n" + dvFill(t.rn_tip_entropy, {s: f, h: dvFmt3(fr.ent[p])});
    if (d.end >= 0 && p >= d.end && state === "final") cls += " dv-pad";
    if (marks && marks.has(p)) { cls += " dv-diff-step"; title += "\n" + marks.get(p); }
    if (span.className !== cls) span.className = cls;
    dvSetText(span, tok);
    if (span.title !== title) span.title = title;
  }
  const status = root.querySelector(".dv-status");
  if (status) dvSetText(status, frameStatus(d, f, fresh));
  root.dataset.frame = String(f);
  root.dataset.selected = String(sel);
  return fresh;
}

function frameStatus(d, f, fresh) {  // a renoising canvas is never masked: its steps accept (k: positions accepted)
  const rn = d.canvas === "renoise";
  let status = f === 0 ? (rn ? d.t.rn_start : d.t.start)
    : dvFill(rn ? d.t.rn_after_step : d.t.after_step, {s: f, k: d.k[f - 1], new: fresh});
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
  if (d.queue && !d.n) {  // still waiting for a slot of the shared engine: where, and about how long
    const [ahead, eta] = d.queue;
    return eta === null ? dvFill(d.t.live_queued, {a: ahead}) : dvFill(d.t.live_queued_eta, {a: ahead, s: eta});
  }
  const done = d.order.filter((o) => o >= 0).length;
  return d.planned ? dvFill(d.t.live_of, {s: d.n, n: d.planned, c: done, g: d.G})
    : dvFill(d.t.live_of_unknown, {s: d.n, c: done, g: d.G});
}

// Scroll the canvas's text box (never the page) so that the tokens confirmed at this frame's step
// can be seen (else the selected position): on a long generation they can sit below its fold.
function keepInView(root, d, f, sel) {
  const box = root.querySelector(".dv-text"), spans = root.__dvSpans;
  if (!box || !spans || box.scrollHeight <= box.clientHeight + 1) return;
  const news = spans.filter((_, p) => (d.ev ? dvEv(d, p, f).some((e) => e[0] === f - 1) : d.order[p] === f - 1));
  const want = news.length ? news : (spans[sel] ? [spans[sel]] : []);
  const b = box.getBoundingClientRect();
  const seen = (s) => { const r = s.getBoundingClientRect(); return r.top >= b.top && r.bottom <= b.bottom; };
  if (!want.length || want.some(seen)) return;
  // By whole lines (palette.LINE_PX): the box's first line is never cut at its top.
  const line = parseFloat(getComputedStyle(box).lineHeight) || 32;
  const goal = box.scrollTop + want[0].getBoundingClientRect().top - b.top - b.height / 3;
  box.scrollTop = Math.max(0, Math.round(goal / line) * line);
}

// ----- the player's own markup ----------------------------------------------------------------------
// Buttons, scrubber and speed (a player), or the progress bar and Stop (a decode in progress), then the
// status line, the text and the key, written in the page's language `t` (app/strings/).
function dvControlsHtml(t, n, f, opts = {tour: true}) {
  const b = (cls, label, key) => `<button type="button" class="${cls}" title="${dvEscape(t[key])}" aria-label="${dvEscape(t[key])}">${label}</button>`;
  return '<div class="dv-controls">' + b("dv-first", "«", "ctl_first") + b("dv-prev", "◀", "ctl_prev") +
    `<button type="button" class="dv-play">${dvEscape(t.play)}</button>` + b("dv-next", "▶", "ctl_next") +
    b("dv-last", "»", "ctl_last") +
    `<input type="range" class="dv-scrub" min="0" max="${n}" step="1" value="${f}" aria-label="${dvEscape(t.frame)}">` +
    '<span class="dv-speed"></span>' +  // where the player's own <select> goes (dvSpeedSelect)
    (opts.tour ? b("dv-tour-start", dvEscape(t.tour_button), "tour_start") : "") + "</div>";
}

// The speed's <select> of the player in `host`, made once and put back in each new markup (dvWireControls): a
// <select> parsed anew has Chrome's autofill read every form control of the page (Gradio's knobs: 0.4-5.5 ms a
// finished decode, on the main thread as the canvas ends; a range or a button costs it nothing).
function dvSpeedSelect(host, t, theme) {
  if (!host.__dvSpeed) {
    const s = host.__dvSpeed = document.createElement("select");
    s.className = "dv-speed";
    s.innerHTML = theme.speeds.map((x) => `<option value="${x}"${x === 1 ? " selected" : ""}>${x}×</option>`).join("");
  }
  host.__dvSpeed.title = t.ctl_speed;
  return host.__dvSpeed;
}

function dvLiveControlsHtml(t) {
  return `<div class="dv-controls"><div class="dv-progress"><i></i></div><button type="button" class="dv-stop" ` +
    `title="${dvEscape(t.stop)}">■ ${dvEscape(t.stop)}</button></div>`;
}

// The key to the canvas: the confidence scale, a confirmed and a masked sample, the prompt; and what
// this trace needs besides (end padding, the checker's underline, the marks of a revision rule).
function dvLegendHtml(t, theme, opts) {
  const sample = (cls, key) => `<span><span class="${cls}" style="background:${dvTint(theme, 0.9)}">&nbsp;` +
    `${dvEscape(t.legend_tok)}&nbsp;</span> ${dvEscape(t[key])}</span>`;
  const stops = theme.confidence.map(([x]) => `${dvScaleTint(theme, x)} ${Math.round(100 * x)}%`).join(", ");
  const ticks = theme.ticks.map((c) => `<i style="left:${(100 * dvPosition(theme, c)).toFixed(1)}%">${c}</i>`).join("");
  let extra = opts.endPadding ? sample("dv-tok dv-pad", "legend_pad") : "";
  extra += opts.checker ? sample("dv-tok dv-bad", "legend_bad") : "";
  if (opts.revised) extra += sample("dv-tok dv-edited", "legend_edited") + sample("dv-mask dv-remasked", "legend_remasked");
  if (opts.diff) return `<div class="dv-legend">${sample("dv-tok dv-diff", "legend_diff")}${extra}</div>`;
  return '<div class="dv-legend">' +
    `<span>${dvEscape(t.legend_conf)}: ${dvEscape(t.legend_low)}<span class="dv-bar" style="background: linear-gradient(90deg, ${stops})">${ticks}</span>${dvEscape(t.legend_high)}</span>` +
    `<span><span class="dv-tok dv-new" style="background:${dvTint(theme, 0.9)}">&nbsp;${dvEscape(t.legend_tok)}&nbsp;</span> ${dvEscape(t.legend_new)}</span>` +
    `<span><span class="dv-mask">&nbsp;${dvEscape(t.legend_guess)}&nbsp;</span> ${dvEscape(t.legend_mask)}</span>` +
    `<span><span class="dv-prompt">${dvEscape(t.legend_prompt_sample)}</span> ${dvEscape(t.legend_prompt)}</span>${extra}</div>`;
}

function dvRenoiseLegendHtml(t) {  // views/renoise.py's legend: each state, and the mark of a lost token
  const item = (cls, key) =>
    `<span><span class="${cls}">&nbsp;${dvEscape(t.legend_tok)}&nbsp;</span> ${dvEscape(t[key])}</span>`;
  return '<div class="dv-legend">' + item("dv-mask dv-rn-noise", "rn_state_noise") +
    item("dv-tok dv-rn-accepted", "rn_state_accepted") + item("dv-tok dv-rn-final", "rn_state_final") +
    item("dv-mask dv-rn-empty", "rn_state_empty") + item("dv-mask dv-rn-noise dv-rn-lost", "rn_lost") + "</div>";
}

function dvScaleTint(theme, x) {  // palette.scale_tint: a position of the scale, mixed with white
  return dvHex(dvRgb(dvScaleColor(theme.confidence, x)).map((v) => theme.strength * v + (1 - theme.strength) * 255));
}

// The markup of a canvas for trace `d` in language `t`: "player" (controls), "live" (a decode in
// progress) or "static" (a Compare side, its key to the underlines when `key`).
function dvCanvasHtml(kind, d, t, theme, key) {
  const f = Math.min(d.n, Math.max(0, d.frame0 === undefined ? d.n : d.frame0));
  const controls = kind === "player" ? dvControlsHtml(t, d.n, f) : kind === "live" ? dvLiveControlsHtml(t) : "";
  const revised = d.revisedSteps > 0;
  if (d.canvas === "renoise" && kind !== "static") {
    return `${controls}<div class="dv-status"></div><div class="dv-text"></div>${dvRenoiseLegendHtml(t)}`;
  }
  const legend = kind === "static" ? (key ? dvLegendHtml(t, theme, {diff: true, checker: !!d.checked}) : "")
    : dvLegendHtml(t, theme, {endPadding: d.end >= 0, checker: !!d.checked, revised});
  return `${controls}<div class="dv-status"></div><div class="dv-text"></div>${legend}`;
}
