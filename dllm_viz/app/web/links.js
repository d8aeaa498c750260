// dllm-viz: links that reopen a view (app/links.py), and the page's own links into its tabs (after tour.js, before
// page.js; see views/web.py). A link holds what decides the trace on show (model, prompt, settings, fork points:
// its `link` data) and where the visitor is looking: the step, the selected position, the tab, and what the Compare
// tab shows, `dv.compareLink`:
//   {lesson: key}          a lesson clicked (one compare of its configs)
//   {configs: [a, b]}      Compare run on the configs in its two boxes
//   {pair: ref}            the fork `ref` beside the trace it left (its banner's link: no decode)
// with the step both Compare sides are on. Nothing here knows Gradio beyond the ids of its tabs and buttons.

function dvCompareShown() {
  const tab = document.getElementById("dv-tab-compare-button");
  return !!tab && tab.getAttribute("aria-selected") === "true";
}

// The link of what page `dv` shows (its location itself when the trace on show names no decode).
function dvLinkUrl(dv) {
  const d = dv.data, q = new URLSearchParams(), c = dv.compareLink;
  if (!d || !d.link) return location.href;
  q.set("model", d.link.model);
  q.set("prompt", d.link.prompt);
  q.set("config", JSON.stringify(d.link.config));
  if (d.link.forks) q.set("forks", JSON.stringify(d.link.forks));  // a fork's: made again after the decode
  q.set("step", String(dv.frame)); q.set("pos", String(dv.pos));
  if (dvCompareShown()) {
    q.set("tab", "compare");
    if (c && c.lesson) q.set("lesson", c.lesson);
    else if (c && c.configs) { q.set("a", c.configs[0]); q.set("b", c.configs[1]); }
    // the pair of the fork on show (another trace shown since: the pair is not the link's to make again)
    else if (c && c.pair && c.pair === dv.shownRef && d.link.forks) q.set("pair", "fork");
    if (dv.pair && dv.pair.data) q.set("cmp_step", String(dv.pair.frame));  // the step both sides are on
  }
  return location.origin + location.pathname + "?" + q.toString();
}

function dvCopyLink(dv, button) {
  const url = dvLinkUrl(dv);
  dv.lastLink = url;
  history.replaceState(null, "", url);
  if (navigator.clipboard && window.isSecureContext) navigator.clipboard.writeText(url).catch(() => {});
  const done = button.parentElement && button.parentElement.querySelector(".dv-link-done");
  if (done) { done.hidden = false; setTimeout(() => { done.hidden = true; }, 2500); }
}

// What a Compare button or a banner link `button` makes the Compare tab show (dv.compareLink), read as it is clicked:
// a lesson's button, Compare's run (the configs in its boxes), the fork pair's (the fork on show).
function dvComparedBy(dv, button) {
  if (button.id.startsWith("dv-lesson-")) return {lesson: button.id.slice("dv-lesson-".length)};
  if (button.id === "dv-fork-pair") return {pair: dv.shownRef};
  return {configs: ["dv-cmp-a", "dv-cmp-b"].map((id) => {
    const code = document.querySelector(`#${id} .cm-content`);
    return code ? code.innerText.trim() : "{}";
  })};
}

// The trace a link asked for has arrived (a fork's: its fork points made again): open its tab, and there its lesson,
// its compare (one decode) or its fork pair, at the link's step (links.py checked the query).
function dvOpenLinkedView(dv) {
  const q = new URLSearchParams(location.search);
  dv.opening = false;
  if (q.get("tab") !== "compare") return;
  const tab = document.getElementById("dv-tab-compare-button");
  if (tab) tab.click();
  const id = q.get("lesson") ? "dv-lesson-" + q.get("lesson") : (q.get("a") || q.get("b")) ? "dv-compare-run"
    : q.get("pair") === "fork" ? "dv-fork-pair" : null;
  if (id && q.get("cmp_step")) dv.cmpStep = Number(q.get("cmp_step"));  // showPair's first frame
  if (id) dvPressWhenShown(id);
}

// Click the button `id` once it is on show (a hidden one: once its box is): a tab's buttons appear after the tab is.
function dvPressWhenShown(id, tries = 0) {
  const button = document.getElementById(id);
  if (button && (button.offsetParent || button.parentElement.offsetParent) !== null) button.click();
  else if (tries < 200) setTimeout(() => dvPressWhenShown(id, tries + 1), 50);
}
