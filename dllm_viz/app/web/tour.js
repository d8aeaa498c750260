// dllm-viz: the guided first minute (the walkthrough), over the Playground tab.
//
// It starts when the Playground's first trace is on the page (or from the "tour" button), only
// while the Playground tab is shown, and closes when another tab is. Its ring and card follow
// their target as the page scrolls or resizes; a click on the card never reaches what lies under
// it (page.js's figure clicks skip `.dv-tour`).

function playgroundShown() {
  const root = window.__dv && window.__dv.root;
  return !!root && root.isConnected && root.offsetParent !== null;
}

function closeTour(done) {
  document.querySelectorAll(".dv-tour, .dv-tour-ring").forEach((el) => el.remove());
  if (window.__dv) window.__dv.tourPlace = window.__dv.tourRelabel = null;
  if (done) localStorage.setItem("dv-tour", "done");
}

function tour(force) {
  const dv = window.__dv;
  if (!dv || !dv.tourSteps || !playgroundShown()) return;
  if (!force && localStorage.getItem("dv-tour") === "done") return;
  closeTour(false);
  let steps = dv.tourSteps(), t = dv.t();
  const card = document.createElement("div"), ring = document.createElement("div");
  card.className = "dv-tour"; card.setAttribute("role", "dialog");
  ring.className = "dv-tour-ring";
  document.body.append(ring, card);
  let i = 0;
  const close = () => closeTour(true);
  // Ring and card over the step's target, where it is now (fixed elements: in viewport pixels).
  const place = () => {
    const target = document.querySelector(steps[i].target);
    const r = target ? target.getBoundingClientRect() : {left: 20, top: 20, width: 0, height: 0, bottom: 20};
    Object.assign(ring.style, {left: r.left - 4 + "px", top: r.top - 4 + "px", width: r.width + 8 + "px",
                               height: r.height + 8 + "px"});
    const below = r.bottom + 12 + card.offsetHeight < window.innerHeight;
    card.style.left = Math.max(8, Math.min(window.innerWidth - 350, r.left)) + "px";
    card.style.top = (below ? r.bottom + 12 : Math.max(8, r.top - 12 - card.offsetHeight)) + "px";
  };
  const show = () => {
    const step = steps[i], target = document.querySelector(step.target);
    if (target) {  // into view only when it is not: the page (its title) stays where the visitor left it
      const r = target.getBoundingClientRect();
      if (r.top < 0 || r.bottom > window.innerHeight) target.scrollIntoView({block: "nearest"});
    }
    const last = i === steps.length - 1;
    card.innerHTML = `<div class="dv-tour-text"></div><div><button type="button" class="dv-tour-next">${last ? t.tour_done : t.tour_next}</button>` +
      (last ? "" : `<button type="button" class="dv-tour-skip">${t.tour_skip}</button>`) +
      `<span style="float:right;opacity:.7">${i + 1} / ${steps.length}</span></div>`;
    card.querySelector(".dv-tour-text").textContent = step.text;
    place();
    card.querySelector(".dv-tour-next").onclick = () => { if (last) close(); else { i += 1; show(); } };
    const skip = card.querySelector(".dv-tour-skip");
    if (skip) skip.onclick = close;
  };
  dv.tourPlace = place;
  // The page's language switched while the card is open: the same step, in the new language (page.js `follow`).
  dv.tourRelabel = () => { steps = dv.tourSteps(); t = dv.t(); i = Math.min(i, steps.length - 1); show(); };
  show();
}

// Follow the page: scrolling and resizing move the target, another tab hides the Playground.
function tourFollow() {
  const dv = window.__dv;
  if (!dv || !dv.tourPlace) return;
  if (!playgroundShown()) closeTour(false);
  else dv.tourPlace();
}
