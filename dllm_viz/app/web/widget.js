// dllm-viz: the notebook widget's glue (an anywidget ES module; see app/notebook.py, which writes the
// module: the renderer's files, then this one; plotly.js comes as the model's `_plotly`).
//
// A widget is one trace in one player: its canvas, inspector, heatmap and order map, drawn by the same
// renderer as the playground's page into elements made here, inside the widget's own `el`. Nothing is
// looked up by id and nothing is installed on the page, so several widgets in one notebook (or one
// widget shown twice) never share a cursor. The model (anywidget's, or any stand-in with get, set, on,
// off and save_changes) holds:
//   _plotly  plotly.js's text (the `plotly` package's plotly.min.js)
//   chunks   the trace as views/wire.py's chunks, as JSON text
//   options  {strings: {lang: table}, theme} (views/web.py's options, for the widget's language)
//   lang     that language
//   frame, selected   the cursor: the step on show and the selected position. The player writes them
//            back as it moves; set from Python, they move every view of this widget.

// plotly.js, made once per page from the text the model holds (`_plotly`), as a module of its own
// imported as anywidget imports ours, and shared by every widget on the page; the page's own
// `window.Plotly` (a notebook's plotly figures load theirs) is left as it was. Not in our module: anywidget
// gives a module's import two seconds, and plotly.js's 5 MB would take them on a slow machine.
const DV_PLOTLY_KEY = Symbol.for("dllm-viz plotly.js");
let Plotly = null;  // the renderer's (views.js reads it), set before the first render draws

function dvWidgetPlotly(text) {
  if (!globalThis[DV_PLOTLY_KEY]) {
    // plotly.js's loader sees a CommonJS `module` and fills it in; it sets window.Plotly as it starts
    const src = "const module = {exports: {}};\n" + text + "\nexport default module.exports;\n";
    const url = URL.createObjectURL(new Blob([src], {type: "text/javascript"}));
    const had = Object.getOwnPropertyDescriptor(window, "Plotly");
    globalThis[DV_PLOTLY_KEY] = import(url).then((made) => {
      if (had) Object.defineProperty(window, "Plotly", had); else delete window.Plotly;
      URL.revokeObjectURL(url);
      return made.default;
    });
  }
  return globalThis[DV_PLOTLY_KEY];
}

const DV_WIDGET_HTML = '<div class="dv-widget">' +
  '<div class="dv-w-canvas"><div class="dv-canvas dv-player"></div></div>' +
  '<div class="dv-w-inspector"><div class="dv-insp-host"></div></div>' +
  '<div class="dv-w-heatmap"><div class="dv-fig-host"></div></div>' +
  '<div class="dv-w-order"><div class="dv-fig-host"></div></div></div>';

// The inspector follows the pointer over the text (the token under it), and the selection when it leaves.
function dvWidgetHover(v, p) {
  const d = v.data;
  if (!d || d.live) return;
  paintInspector(v.hosts.inspector, d, p >= 0 ? p : v.pos, v.frame, d.temperature);
}

// The cursor written back to the model when the player moved it (not when the model moved the player).
// A model tells its listeners of each set at once: the first set must not move the player back.
function dvWidgetReport(model, v) {
  if (model.get("frame") === v.frame && model.get("selected") === v.pos) return;
  v.reporting = true;
  try {
    model.set("frame", v.frame);
    model.set("selected", v.pos);
  } finally {
    v.reporting = false;
  }
  model.save_changes();
}

// A click on a figure's cell selects that step and position (a short click: a drag zooms nothing here).
// The press is the widget's; the release is listened for on the document, once: plotly.js covers the
// page while a button is down, so the release lands outside the widget.
function dvWidgetClicks(root, v) {
  root.addEventListener("mousedown", (e) => {
    const x = e.clientX, y = e.clientY, t = Date.now();
    document.addEventListener("mouseup", (u) => {
      if (Math.hypot(u.clientX - x, u.clientY - y) > 5 || Date.now() - t > 800) return;
      const hit = dvCellAt(v, u.clientX, u.clientY);
      if (hit) v.select(hit[0], hit[1]);
    }, {capture: true, once: true});
  }, true);
}

async function render({model, el}) {
  Plotly = await dvWidgetPlotly(model.get("_plotly"));
  el.innerHTML = DV_WIDGET_HTML;
  const root = el.querySelector(".dv-widget"), q = (cls) => root.querySelector(`.${cls} > div`);
  const hosts = {canvas: q("dv-w-canvas"), inspector: q("dv-w-inspector"), heatmap: q("dv-w-heatmap"),
                 order: q("dv-w-order")};
  const opts = model.get("options"), lang = model.get("lang");
  const v = dvView(hosts, {strings: opts.strings, theme: opts.theme, lang,
                           onHover: dvWidgetHover, onRender: (view) => dvWidgetReport(model, view)});
  const d = dvTraceNew(opts.theme);
  JSON.parse(model.get("chunks")).forEach((c) => dvTraceAdd(d, c));
  dvShow(v, d, {frame: model.get("frame"), selected: model.get("selected")});
  root.dataset.steps = String(d.n);
  dvWidgetClicks(root, v);
  const follow = () => {
    const f = model.get("frame"), p = model.get("selected");
    if (!v.reporting && (f !== v.frame || p !== v.pos)) v.select(f, p);
  };
  model.on("change:frame", follow);
  model.on("change:selected", follow);
  let later = null, width = root.clientWidth;  // the notebook's column resized: the figures fit it anew
  const resized = new ResizeObserver(() => {
    if (root.clientWidth === width) return;
    width = root.clientWidth;
    clearTimeout(later);
    later = setTimeout(() => dvResize(v), 120);
  });
  resized.observe(root);
  return () => {
    dvStop(v);
    clearTimeout(later);
    resized.disconnect();
    model.off("change:frame", follow);
    model.off("change:selected", follow);
  };
}

export default {render};
