"""The notebook widget (dllm_viz/app/notebook.py, web/widget.js): `dllm_viz.show(trace)` and `Trace.show()`.

The browser test is a notebook-like page in Debian's chromium: two widgets' real state (what anywidget
would send the notebook), each loaded as anywidget loads an ES module (imported from a blob URL) and
rendered into its own output element with a stand-in for anywidget's model (get, set, on, off,
save_changes). Every request the page makes is refused: the widget must need none.
"""
from __future__ import annotations

import json
import sys

import pytest

import dllm_viz
from dllm_viz import DecodeConfig, decode
from dllm_viz.app import notebook
from dllm_viz.app.views import web, wire
from dllm_viz.core.trace import Trace
from tests.ui_model import make_text_model


@pytest.fixture(scope="module")
def traces() -> list[Trace]:
    model = make_text_model()
    return [decode(model, [prompt], DecodeConfig.preset("balanced", 24, seed=seed))[0]
            for prompt, seed in (("the cat ", 3), ("a dog ", 5))]


def test_show_and_trace_show_give_the_widget_of_the_trace(traces):
    trace = traces[0]
    for widget in (dllm_viz.show(trace), trace.show()):
        assert isinstance(widget, notebook.widget_class())
        assert json.loads(widget.chunks) == json.loads(wire.dumps(wire.chunks(trace)))
        assert (widget.frame, widget.selected, widget.lang) == (len(trace.steps), 0, "en")
        assert widget.options == {"strings": {"en": web.strings("en")}, "theme": web.theme()}
    opened = trace.show(lang="zh", frame=2, selected=5)
    assert (opened.frame, opened.selected, opened.options["strings"].keys()) == (2, 5, {"zh"})


def test_the_module_is_the_renderer_and_the_glue_and_plotly_comes_beside_it(traces):
    esm = notebook.esm()
    assert esm.startswith(web.RENDERER_JS) and esm.rstrip().endswith("export default {render};")
    assert esm.index("function dvView(") < esm.index("async function render(")
    assert len(esm) < 300_000  # anywidget gives the module's import two seconds: plotly.js is not in it
    assert dllm_viz.show(traces[0])._plotly == web.PLOTLY_JS.read_text(encoding="utf-8")


def test_css_is_the_renderers_classes_and_the_widgets_layout_only():
    css = notebook.css()
    for rule in (".dv-canvas {", ".dv-insp {", ".dv-overlay {", ".dv-controls {", ".dv-widget {"):
        assert rule in css
    selectors = [block.split("{", 1)[0] for block in notebook._top_level_rules(css)]
    ours = [s for s in selectors if not s.startswith("@")]  # the widget's own @media: checked by the browser
    assert len(ours) > 40 and all(s.lstrip().startswith(".dv-") and "#" not in s for s in ours), selectors
    assert ".gradio" not in css and ".dv-tour {" not in css


@pytest.mark.parametrize("options, name", [({"lang": "xx"}, "lang"), ({"frame": 99}, "frame"),
                                           ({"frame": -1}, "frame"), ({"selected": 24}, "selected"),
                                           ({"selected": -1}, "selected")])
def test_bad_options_are_named(traces, options, name):
    with pytest.raises(ValueError, match=name):
        dllm_viz.show(traces[0], **options)


def test_a_non_trace_is_refused():
    with pytest.raises(TypeError, match="dllm_viz.Trace"):
        dllm_viz.show({"steps": []})


def test_without_anywidget_show_names_the_extra(traces, monkeypatch):
    monkeypatch.setitem(sys.modules, "anywidget", None)  # `import anywidget` raises ImportError
    notebook.widget_class.cache_clear()
    try:
        with pytest.raises(ImportError, match=r"pip install dllm-viz\[notebook\]"):
            traces[0].show()
        assert notebook.state(traces[0])["frame"] == len(traces[0].steps)  # the rest needs no anywidget
    finally:
        notebook.widget_class.cache_clear()


def test_import_dllm_viz_needs_no_anywidget_nor_plotly():
    assert "dllm_viz.app.notebook" in sys.modules  # this file imported it; a fresh process must not
    import subprocess

    code = ("import sys; sys.modules['anywidget'] = sys.modules['plotly'] = None; import dllm_viz; "
            "print(sorted(m for m in ('anywidget', 'plotly', 'dllm_viz.app.notebook') if sys.modules.get(m)))\n"
            "try:\n    dllm_viz.show(None)\nexcept ImportError as err:\n    print(err)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.splitlines() == ["[]", "dllm_viz.show needs plotly (the [notebook] extra): "
                                             "pip install dllm-viz[notebook]"]


# ----- in a browser ---------------------------------------------------------------------------------
PAGE = """<!doctype html><html><body><h3>In [1]:</h3><div class="output" id="out-a"></div>
<h3>In [2]:</h3><div class="output" id="out-b"></div></body></html>"""
# anywidget's part: the module imported from a blob URL, its CSS in the page, render() with a model.
MOUNT = """async ([name, state]) => {
  const handlers = {}, saved = [];
  const model = {
    get: (k) => state[k],
    set: (k, v) => { state[k] = v; (handlers["change:" + k] || []).slice().forEach((f) => f()); },
    on: (e, f) => { (handlers[e] = handlers[e] || []).push(f); },
    off: (e, f) => { handlers[e] = (handlers[e] || []).filter((g) => g !== f); },
    save_changes: () => saved.push({frame: state.frame, selected: state.selected}),
  };
  const url = URL.createObjectURL(new Blob([state._esm], {type: "text/javascript"}));
  const mod = await import(url);
  if (!document.getElementById("css-" + state._anywidget_id)) {
    const style = document.createElement("style");
    style.id = "css-" + state._anywidget_id;
    style.textContent = state._css;
    document.head.appendChild(style);
  }
  (window.models = window.models || {})[name] = {model, saved, state};
  await mod.default.render({model, el: document.getElementById("out-" + name)});
}"""
FRAME = "(name) => Number(document.querySelector(`#out-${name} .dv-canvas`).dataset.frame)"
SAVED = "(name) => window.models[name].saved"
# Every widget's four figures drawn (by plotly or, the heatmaps, plot2d.js: each keeps its spec's data).
DRAWN_FIGURES = "[...document.querySelectorAll('.dv-fig-host .dv-fig')].filter((e) => e.data).length === 4"
INSPECTED = "(name) => Number(document.querySelector(`#out-${name} .dv-insp`).dataset.position)"


@pytest.fixture(scope="module")
def browser():
    from playwright import sync_api as playwright
    from tests.test_browser import ARGS, CHROMIUM

    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield browser
        browser.close()


def offline_page(browser):
    """The notebook-like page, empty, offline (every request refused), its errors and requests kept."""
    page = browser.new_page(viewport={"width": 1000, "height": 900})
    page.errors, page.requests = [], []
    page.on("pageerror", lambda err: page.errors.append(str(err)))
    page.on("request", lambda req: page.requests.append(req.url))
    page.route("**/*", lambda route: route.abort())  # offline: nothing may be fetched
    page.set_content(PAGE)
    return page


@pytest.fixture()
def chromium_page(browser):
    page = offline_page(browser)
    yield page
    page.close()


@pytest.fixture(scope="module")
def page(browser, traces):
    """Two widgets on the page: `a` at its last step, `b` at step 4."""
    page = offline_page(browser)
    for name, trace in zip("ab", traces):
        state = dllm_viz.show(trace, frame=None if name == "a" else 4).get_state()
        page.evaluate(MOUNT, [name, json.loads(json.dumps(state))])
    page.wait_for_function(DRAWN_FIGURES)
    yield page
    page.close()


def test_two_widgets_draw_their_own_traces_offline(page, traces):
    for name, trace, frame in (("a", traces[0], len(traces[0].steps)), ("b", traces[1], 4)):
        out = f"#out-{name}"
        assert page.evaluate(FRAME, name) == frame
        spans = page.locator(f"{out} .dv-text [data-pos]")
        assert spans.count() == len(trace.token_ids)
        assert page.locator(f"{out} .dv-w-heatmap .dv-fig canvas.dv-flat").count() == 1  # plot2d.js's
        assert page.locator(f"{out} .dv-w-order .dv-fig canvas.dv-flat").count() == 1
        assert page.evaluate(INSPECTED, name) == 0
        if name == "a":  # at the end every token shows its text: the trace's own
            assert "".join(spans.all_inner_texts()) == "".join(trace.token_text(i) for i in trace.token_ids)
    assert page.evaluate("typeof window.Plotly") == "undefined"  # plotly.js installed nothing on the page
    assert [u for u in page.requests if not u.startswith(("blob:", "data:", "about:"))] == []
    assert page.errors == []


def test_scrubbing_one_widget_leaves_the_other_where_it_was(page, traces):
    scrub = page.locator("#out-a .dv-scrub")
    scrub.evaluate("(el) => { el.value = '2'; el.dispatchEvent(new Event('input', {bubbles: true})); }")
    assert page.evaluate(FRAME, "a") == 2
    assert page.evaluate(SAVED, "a")[-1] == {"frame": 2, "selected": 0}  # the model follows the player
    assert page.evaluate(FRAME, "b") == 4 and page.evaluate(SAVED, "b") == []
    page.locator("#out-b .dv-next").click()
    assert (page.evaluate(FRAME, "a"), page.evaluate(FRAME, "b")) == (2, 5)
    # the model set from Python (a change event): that widget moves, the other does not
    page.evaluate("() => { window.models.a.model.set('frame', 1); window.models.a.model.set('selected', 3); }")
    assert (page.evaluate(FRAME, "a"), page.evaluate(FRAME, "b")) == (1, 5)
    assert page.evaluate(INSPECTED, "a") == 3 and page.evaluate(INSPECTED, "b") == 0
    assert page.errors == []


def test_hover_shows_the_inspector_of_the_token_under_the_pointer(page, traces):
    page.locator("#out-b .dv-text [data-pos='6']").hover()
    assert page.evaluate(INSPECTED, "b") == 6
    assert page.locator("#out-b .dv-insp h4").inner_text().startswith("Top candidates at position 6")
    assert page.evaluate(INSPECTED, "a") != 6  # the other widget's inspector stays on its selection
    page.mouse.move(5, 5)  # the pointer leaves: the selection's inspector is back
    assert page.evaluate(INSPECTED, "b") == page.evaluate("() => window.models.b.state.selected")
    page.locator("#out-b .dv-text [data-pos='7']").click()  # a click selects, and the model hears it
    assert page.evaluate("() => window.models.b.state.selected") == 7
    assert page.errors == []


def test_the_docs_example_runs():
    from pathlib import Path
    import re

    text = (Path(__file__).resolve().parents[1] / "docs" / "notebook.md").read_text(encoding="utf-8")
    [code] = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    scope: dict = {}
    exec(compile(code, "docs/notebook.md", "exec"), scope)
    widget, trace = scope["widget"], scope["trace"]
    assert isinstance(widget, notebook.widget_class()) and widget.frame == len(trace.steps) > 0


HEATMAP_AREA = """(name) => { const gd = document.querySelector(`#out-${name} .dv-w-heatmap .dv-fig`);
  const r = gd.getBoundingClientRect(), m = gd.__dvFig.layout.margin;
  return [r.left + m.l, r.top + m.t, r.width - m.l - m.r, gd.__dvFig.layout.height - m.t - m.b]; }"""


def test_a_click_on_a_heatmap_cell_selects_its_step_and_position_in_that_widget_only(page, traces):
    trace = traces[0]
    before_b = (page.evaluate(FRAME, "b"), page.evaluate(INSPECTED, "b"))
    page.locator("#out-a .dv-w-heatmap").scroll_into_view_if_needed()
    left, top, width, height = page.evaluate(HEATMAP_AREA, "a")
    step, pos = 3, 10  # the cell of step 3 (frame 3), position 10
    page.mouse.click(left + (pos + 0.5) * width / len(trace.token_ids), top + (step - 0.5) * height / len(trace.steps))
    assert (page.evaluate(FRAME, "a"), page.evaluate(INSPECTED, "a")) == (step, pos)
    assert page.evaluate("() => window.models.a.saved")[-1] == {"frame": step, "selected": pos}
    assert (page.evaluate(FRAME, "b"), page.evaluate(INSPECTED, "b")) == before_b
    assert page.errors == []


def _moved_and_renoising() -> list[Trace]:
    """An insert/delete decode and a renoising one (tests/test_moves_view.py's, test_renoise_view.py's)."""
    from tests.renoise_table import TableRenoiser
    from tests.sglang.indel_script import Events, ReplayedBlocks

    model = ReplayedBlocks(8, Events(word=0.1, delete=0.12, split=0.12, mask=0.06), seed=4)
    (moved,) = decode(model, [[1] * 8], DecodeConfig.preset("llada22_indel", 16, block_length=8), record_candidates=2)
    (renoised,) = decode(TableRenoiser(), [[3, 4, 5]], DecodeConfig(gen_length=18, seed=1, max_denoising_steps=6,
                                                                     entropy_bound=0.8, confidence_threshold=2.0))
    assert moved.moved and renoised.steps
    return [moved, renoised]


def test_a_moved_and_a_renoising_trace_play_in_widgets_frame_by_frame(chromium_page):
    page = chromium_page
    traces = _moved_and_renoising()
    for name, trace in zip("ab", traces):
        page.evaluate(MOUNT, [name, json.loads(json.dumps(dllm_viz.show(trace, frame=0).get_state()))])
    page.wait_for_function(DRAWN_FIGURES)
    for name, trace in zip("ab", traces):
        for frame in [*range(len(trace.steps) + 1), 0]:
            page.evaluate("([name, f]) => window.models[name].model.set('frame', f)", [name, frame])
            assert page.evaluate(FRAME, name) == frame
    assert page.evaluate(FRAME, "a") == page.evaluate(FRAME, "b") == 0
    assert page.errors == []
