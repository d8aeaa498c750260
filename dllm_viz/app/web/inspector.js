// dllm-viz: the inspector, drawn in the page from the trace's data (trace.js) for the selected
// position at the shown frame and a temperature (the Playground's slider): no server round trip, so a
// lost request can never leave it behind the canvas.
//
// What it may say follows the frame: a position confirmed by then shows the step that confirmed
// it, its rank there and the token drawn; a position still masked shows the next forward pass's
// prediction (record `frame`) and only that it is confirmed later. A revised trace's position also
// lists its decisions up to the frame (taken back, rewritten), token by token.

// p_i^(1/T) renormalised over the stored candidates (core.analysis.tempered_from_top); T = 0 puts
// all the mass on the first. Exact for shares among the candidates: no other token is needed.
function temperedShares(ps, T, floor) {
  if (!ps.length) return [];
  if (!(T > 0)) return ps.map((_, i) => (i === 0 ? 1 : 0));
  const l = ps.map((p) => Math.log(Math.max(p, floor)) / T), top = Math.max(...l);
  const w = l.map((x) => Math.exp(x - top)), z = w.reduce((s, x) => s + x, 0);
  return w.map((x) => x / z);
}

// Our own strings carry **bold** and `code` (app/strings/): HTML for them, with the values filled in
// escaped, so a token's text is never read as markup.
function dvMarkup(template, values) {
  const esc = {};
  for (const k of Object.keys(values)) esc[k] = dvEscape(values[k]);
  return dvFill(dvEscape(template).replace(/\*\*(.+?)\*\*/g, "<b>$1</b>").replace(/`([^`]*)`/g, "<code>$1</code>"), esc);
}

const dvPct = (x) => Math.round(100 * x) + "%";

// Everything the inspector shows for `pos` at frame `frame` (clamped), as plain values.
function inspectAt(d, pos, frame, T) {
  const f = Math.max(0, Math.min(d.n, frame)), t = d.t;
  if (!d.n || pos < 0 || pos >= d.G) return null;
  if (d.canvas === "renoise") return inspectRenoise(d, pos, f, T);
  const st = dvState(d, pos, f), confirmed = !!st && !st.taken;
  const s = confirmed ? Math.max(0, st.step) : Math.min(f, d.n - 1);
  const rank = d.rank[s], m = Math.max(0, ...rank), b = d.block[s];
  const lines = [];
  if (confirmed && st.kind === "f") {  // forced by a fork (core.lineage)
    lines.push(dvMarkup(t.insp_forced, {next: st.step + 2, tok: dvRepr(d.pieces[st.tok])}));
  } else if (confirmed && st.kind === "e") {  // rewritten by the token-editing rule
    lines.push(dvMarkup(t.insp_edited, {s: s + 1, old: dvRepr(d.pieces[st.old]), tok: dvRepr(d.pieces[st.tok]),
      p: dvFmt3(st.q), po: dvFmt3(st.qOld)}));
  } else if (confirmed) {
    if (s < f - 1) lines.push(dvMarkup(t.insp_before, {s: s + 1}));
    const why = st.why === "above" ? dvFill(t.insp_threshold_above, {t: d.threshold})
      : st.why === "floor" ? t.insp_floor : "";
    const g = d.guess[s][pos];
    lines.push(dvMarkup(t.insp_confirmed, {s: s + 1, r: rank[pos], m, b, measure: d.measure, c: dvFmt3(d.gconf[s][pos]),
      k: d.k[s], why, tok: dvRepr(d.pieces[st.tok]), q: dvFmt3(st.q), g: g >= 0 ? dvRepr(d.pieces[g]) : "–"}));
  } else {
    const pb = Math.floor(pos / d.bs);
    lines.push(pb !== b ? dvMarkup(t.insp_other_block, {p: pos, pb, s: s + 1, b})
      : dvMarkup(t.insp_waiting, {f, s: s + 1, r: rank[pos], m, b, measure: d.measure, c: dvFmt3(d.gconf[s][pos])}));
  }
  const [cands, raw] = dvCands(d, s, pos), floor = d.theme.bars[2];
  return {
    position: pos, step: s, frame: f, confirmed, temperature: T, lines, history: historyLines(d, pos, f),
    candidates: cands.map((i) => d.pieces[i]), raw,
    rawShare: temperedShares(raw, 1, floor), tempered: temperedShares(raw, T, floor),
    rules: checkerLines(d, pos),
    note: raw.length ? dvFill(t.insp_tempered_note, {n: raw.length, m: dvPct(raw.reduce((a, x) => a + x, 0))}) + " " +
      (d.src === "raw" ? t.insp_note_raw : d.src === "sampled_raw" ? t.insp_note_sampled_raw
        : dvFill(t.insp_note_polluted, {src: d.src})) : t.insp_no_candidates,
  };
}

// The world checker's verdicts on the sentence of `pos`, as lines.
function checkerLines(d, pos) {
  return (d.rules[pos] || []).map(([rule, message, text]) =>
    dvMarkup(d.t.insp_checker, {rule: d.t["rule_" + rule] || rule, msg: message, text}));
}

// A renoising trace's position at frame f: never masked and without stored candidates, so its state there (noise,
// an accepted proposal since a step, final, not begun: trace.js `dvRenoiseFrame`), the accepted token renoising
// took from it and the entropy the step before ranked it by, as the canvas's tooltip says them.
function inspectRenoise(d, pos, f, T) {
  const t = d.t, fr = dvRenoiseFrame(d, f), state = fr.state[pos];
  const tok = fr.tok[pos] >= 0 ? d.pieces[fr.tok[pos]] : "▢";
  const lines = [dvMarkup(t["rn_tip_" + state], {pos, tok: dvRepr(tok), s: fr.since[pos] + 1, f: f + 1})];
  if (fr.lost[pos] >= 0) lines.push(dvMarkup(t.rn_tip_lost, {s: f, old: dvRepr(d.pieces[fr.lost[pos]])}));
  if (!Number.isNaN(fr.ent[pos])) lines.push(dvMarkup(t.rn_tip_entropy, {s: f, h: dvFmt3(fr.ent[pos])}));
  return {position: pos, step: Math.min(f, d.n - 1), frame: f, confirmed: state === "final", temperature: T, lines,
          history: [], candidates: [], raw: [], rawShare: [], tempered: [], rules: checkerLines(d, pos),
          note: t.rn_insp_note, renoise: true};
}

// A revised trace's position, decision by decision up to frame f (none later: the inspector never
// tells the future), each a line of HTML; [] for a trace whose confirmations are all final.
function historyLines(d, pos, f) {
  const t = d.t, tok = (i) => dvRepr(d.pieces[i]);
  return dvEventsBefore(d, pos, f).map(([step, kind, token, , , p, old, pOld]) =>
    kind === "f" ? dvMarkup(t.rv_hist_force, {s: step + 1, tok: tok(token)})
      : kind === "c" ? dvMarkup(t.rv_hist_confirm, {s: step + 1, tok: tok(token), p: dvFmt3(p)})
      : kind === "e" ? dvMarkup(t.rv_hist_edit, {s: step + 1, old: tok(old), tok: tok(token), p: dvFmt3(p), po: dvFmt3(pOld)})
        : dvMarkup(t.rv_hist_remask, {s: step + 1, old: tok(old), score: dvScoreText(d, t, p)}));
}

// The inspector's HTML: raw shares (cool) above tempered ones (warm) per stored candidate, then
// the schedule's reasoning, the checker's rules (world model) and the small print.
// `fork`: the page forks traces (a button per candidate places it at the position on the canvas on show, one takes a
// decided position back; `paintInspector` hands their change to the page). `knobs` ({name: default}, the settings a
// fork of this canvas may switch, views/web.py `options`): one more row forks from the canvas on show with one of them
// changed, the knob `chosen` picked (temperature; a renoising canvas's first), its value at that step filled in.
function inspectorHtml(d, insp, fork = false, knobs = null, chosen = "temperature") {
  if (!insp) return "";
  const t = d.t, [scale, minBar] = d.theme.bars, f = insp.frame, p = insp.position;
  const width = (share) => Math.max(minBar, scale * share).toFixed(1) + "%";
  const switching = fork && knobs;  // a renoising canvas forks by its settings alone: that row, no candidate's button
  fork = fork && !insp.renoise;
  const forkButton = (i) => !fork ? "" : `<button class="dv-insp-fork" data-step="${f}" data-pos="${p}" data-s="${insp.step}" data-rank="${i}" ` +
    `title="${dvEscape(dvFill(t.insp_fork_title, {tok: dvRepr(insp.candidates[i]), p, f}))}">${dvEscape(t.insp_fork)}</button>`;
  let rows = insp.candidates.map((text, i) =>
    `<div class="dv-insp-row${fork ? " dv-insp-forks" : ""}"><span class="dv-insp-tok" title="${dvEscape(dvRepr(text))}">${dvEscape(dvRepr(text))}</span>` +
    `<div class="dv-insp-bars"><div class="dv-insp-line"><i class="dv-insp-raw" style="width:${width(insp.rawShare[i])}"></i>` +
    `<span>${dvPct(insp.rawShare[i])} · p = ${insp.raw[i].toFixed(3)}</span></div>` +
    `<div class="dv-insp-line"><i class="dv-insp-temp" style="width:${width(insp.tempered[i])}"></i>` +
    `<span class="dv-insp-tlab">${dvPct(insp.tempered[i])}</span></div></div>${forkButton(i)}</div>`).join("");
  if (fork && insp.confirmed && f > 0) {  // a decided position on the canvas on show: take it back from there
    rows += `<div class="dv-insp-takeback"><button class="dv-insp-fork" data-step="${f}" data-pos="${p}" data-remask="1" ` +
      `title="${dvEscape(dvFill(t.insp_remask_title, {p, f}))}">${dvEscape(t.insp_remask)}</button></div>`;
  }
  if (!rows && !insp.renoise) rows = `<p>${dvEscape(t.insp_no_candidates)}</p>`;
  const key = insp.renoise ? "" : `<div class="dv-insp-key"><i class="dv-insp-raw"></i>${dvEscape(t.raw)}` +
    `<i class="dv-insp-temp"></i><span class="dv-insp-tkey">${dvEscape(dvFill(t.tempered, {t: insp.temperature}))}</span></div>`;
  const title = dvEscape(insp.renoise ? dvFill(t.rn_insp_title, {p: insp.position, s: insp.frame})
    : dvFill(t.insp_title, {p: insp.position, s: insp.step + 1}));
  const rules = insp.rules.length ? `<ul class="dv-insp-rules">${insp.rules.map((r) => `<li>${r}</li>`).join("")}</ul>` : "";
  const history = insp.history.length ? `<p><b>${dvEscape(dvFill(t.rv_history, {p: insp.position, s: insp.frame}))}</b></p>` +
    `<ol class="dv-insp-history">${insp.history.map((h) => `<li>${h}</li>`).join("")}</ol>` : "";
  const forkNote = fork ? `<p><small>${dvEscape(dvFill(t.insp_fork_note, {f}))}</small></p>` : "";
  if (switching) rows += dvSwitchHtml(d, t, f, knobs, chosen in knobs ? chosen : Object.keys(knobs)[0]);
  return `<div class="dv-insp" data-position="${insp.position}" data-step="${insp.step}"><h4>${title}</h4>${rows}${key}</div>` +
    `<div class="dv-insp-text">${insp.lines.map((l) => `<p>${l}</p>`).join("")}${history}${rules}` +
    `<p><small>${dvEscape(insp.note)}</small></p>${forkNote}</div>`;
}

// The row that forks from the canvas of frame `f` with one setting switched: the knob (named as its widget is, in the
// page's language, its config name the value and the tip), its value (as JSON, a bare word read as a string; empty:
// None), a fork button.
function dvSwitchHtml(d, t, f, knobs, chosen) {
  const options = Object.keys(knobs).map((k) => `<option value="${dvEscape(k)}" title="${dvEscape(k)}"` +
    `${k === chosen ? " selected" : ""}>${dvEscape(t[k] || k)}</option>`).join("");
  return `<div class="dv-insp-switch"><span>${dvEscape(t.insp_switch)}</span><select class="dv-insp-knob">${options}</select>` +
    `<input class="dv-insp-value" spellcheck="false" value="${dvEscape(dvKnobText(dvKnobAt(d, chosen, f, knobs)))}">` +
    `<button class="dv-insp-fork" data-step="${f}" data-switch="1" title="${dvEscape(dvFill(t.insp_switch_title, {f}))}">` +
    `${dvEscape(t.insp_fork)}</button></div>`;
}

// The value of setting `name` in force on the canvas of frame `f` of trace `d`: its decode's (the link's settings,
// which name those off their defaults), or a fork point's at or before f that switched it (core.fork's lineage).
function dvKnobAt(d, name, f, knobs) {
  const link = d.link || {};
  let value = link.config && name in link.config ? link.config[name] : knobs[name];
  for (const p of link.forks || []) if (p.step <= f && p.knobs && name in p.knobs) value = p.knobs[name];
  return value;
}

const dvKnobText = (v) => (v === null || v === undefined ? "" : typeof v === "string" ? v : JSON.stringify(v));
const dvKnobValue = (text) => {  // what the value box says, as the fork's knob value
  const s = text.trim();
  if (!s) return null;
  try { return JSON.parse(s); } catch (err) { return s; }
};

// Draw the inspector of `pos` at `frame` into `host` (re-written only when it changed). `fork` ({ask, knobs}), when
// given, is what its fork buttons ask from the canvas of `frame`: ask({step, candidate: [position, s, rank]}), a
// candidate the trace recorded at step s (Playground.fork_here reads its token id), ask({step, remask: [position]}),
// or, with `knobs` ({name: default}), ask({step, knobs: {name: value}}): the rest decoded with that setting.
function paintInspector(host, d, pos, frame, T, fork = null) {
  if (!host || !d || d.live || !d.n) return;
  const knobs = fork && fork.knobs && Object.keys(fork.knobs).length ? fork.knobs : null;
  const html = inspectorHtml(d, inspectAt(d, pos, frame, T), !!fork, knobs, host.__dvKnob);
  if (host.__dvHtml !== html) { host.__dvHtml = html; host.innerHTML = html; }
  const box = (cls) => host.querySelector(cls);
  host.onclick = !fork ? null : (e) => {
    const b = e.target.closest && e.target.closest("button.dv-insp-fork");
    if (!b) return;
    const step = Number(b.dataset.step), at = Number(b.dataset.pos);
    if (b.dataset.switch) fork.ask({step, knobs: {[box(".dv-insp-knob").value]: dvKnobValue(box(".dv-insp-value").value)}});
    else fork.ask(b.dataset.remask ? {step, remask: [at]} : {step, candidate: [at, Number(b.dataset.s), Number(b.dataset.rank)]});
  };
  host.onchange = !knobs ? null : (e) => {  // another knob picked: its value at this step in the box
    if (!e.target.classList.contains("dv-insp-knob")) return;
    host.__dvKnob = e.target.value;
    // the HTML this state draws (a repaint of the same cursor then keeps the box, and what is typed in it)
    host.__dvHtml = inspectorHtml(d, inspectAt(d, pos, frame, T), true, knobs, host.__dvKnob);
    box(".dv-insp-value").value = dvKnobText(dvKnobAt(d, e.target.value, frame, knobs));
  };
  host.onkeydown = !knobs ? null : (e) => {  // Enter in the value box forks, as its button does
    if (e.key === "Enter" && e.target.classList.contains("dv-insp-value")) box(".dv-insp-switch button").click();
  };
}
