"""The page in a real browser on the renoising world model (`load_model("world-renoise")`), beside a tiny masked
model in the picker: the renoise canvas's widgets show (the masked boxes do not), a renoise slider decodes and
draws the canvas and the renoise figures with no error; a bad pair of values is one named error and the session
goes on; picking the masked model brings its widgets back. Debian's chromium driven by Playwright, as
tests/test_browser.py (whose helpers this file uses).
"""
from __future__ import annotations

from pathlib import Path
from urllib.parse import urlparse

import pytest
from playwright import sync_api as playwright

from dllm_viz.app.strings import t
from tests.test_browser import ARGS, CANVAS_TEXT, CHROMIUM, OUTSIDE, TIMEOUT_MS, fork_by_switch, release

# A figure's title as drawn: plotly's title element, or the title's lines plot2d.js wrote (the heatmap)
TITLE = """(id) => { const e = document.querySelector(`#${id} .dv-fig`), f = e && e.__dvFlat;
  if (f) return f.texts.filter((x) => x.title).map((x) => x.text).join(' ') || null;
  const g = e && e.querySelector('.gtitle'); return g ? g.textContent : null; }"""
VISIBLE = "(id) => { const e = document.getElementById(id); return !!e && e.offsetParent !== null; }"
CANVAS = "() => { const e = document.querySelector('#dv-canvas .dv-text'); return e ? e.innerText : ''; }"
TOP = "(sel) => document.querySelector(sel).getBoundingClientRect().top + window.scrollY"
WIDTHS = "(ids) => ids.map((id) => document.getElementById(id).getBoundingClientRect().width)"
BOXES = """(id) => { const row = document.getElementById(id), r = row.getBoundingClientRect();
  return [[r.left, r.right], [...row.querySelectorAll('button')].map((b) => { const q = b.getBoundingClientRect();
    return [q.left, q.right]; })]; }"""


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    from dllm_viz import decode, load_model
    from dllm_viz.app.handlers.playground import ModelChoice
    from dllm_viz.app.serve import limits_of, make_forker, token_text
    from dllm_viz.app.ui import build_demo, launch_options
    from tests.ui_model import TINY_PROMPTS, free_port, make_text_model

    renoiser, tiny = load_model("world-renoise"), make_text_model()
    calls: list[int] = []

    def runner(model):
        def run(prompts, configs, *, on_step=None, record_candidates=5):
            calls.append(len(prompts))
            return decode(model, prompts, configs, on_step=on_step, record_candidates=record_candidates)
        return run

    run = runner(renoiser)
    models = {"world-renoise": ModelChoice(run=run, prompts=("Ana",), name=renoiser.name, fork=make_forker(renoiser),
                                           token_text=token_text(renoiser), **limits_of(renoiser)),
              "tiny-chars": ModelChoice(run=runner(tiny), prompts=TINY_PROMPTS, name=tiny.name,
                                        token_text=token_text(tiny), **limits_of(tiny))}
    demo = build_demo(run, model_name=renoiser.name, export_dir=str(tmp_path_factory.mktemp("exports")),
                      models=models, token_text=token_text(renoiser), default_prompt="Ana")
    port = free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True, **launch_options())
    demo.decode_calls = calls
    try:
        yield demo, f"http://127.0.0.1:{port}/"
    finally:
        demo.close()


@pytest.fixture()
def page(served):
    url = served[1]
    assert Path(CHROMIUM).exists(), "chromium is missing: bash scripts/test-deps.sh installs it (Debian package)"
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1440, "height": 900})
            page.errors, page.hosts = [], set()
            page.on("pageerror", lambda err: page.errors.append(str(err)))
            page.on("console", lambda msg: page.errors.append(msg.text) if msg.type == "error" else None)
            page.on("request", lambda req: page.hosts.add(urlparse(req.url).netloc))
            page.add_init_script("localStorage.setItem('dv-tour', 'done')")
            page.goto(url)
            page.wait_for_selector("#dv-knob-entropy-bound", state="visible", timeout=TIMEOUT_MS)
            yield page
            assert page.errors == []
            assert page.hosts <= {urlparse(url).netloc}, page.hosts
        finally:
            browser.close()


def decoded(page, before: str) -> None:
    """Waits until the canvas shows another text than `before` and the renoise figures are drawn."""
    page.wait_for_function(f"(old) => {{ const s = ({CANVAS})(); return !!s && s !== old; }}", arg=before,
                           timeout=TIMEOUT_MS)
    page.wait_for_function(f"() => ({TITLE})('dv-heatmap') && ({TITLE})('dv-steps')", timeout=TIMEOUT_MS)


def test_a_renoise_slider_decodes_and_draws_the_renoise_views(page, served, tmp_path):
    demo = served[0]
    # the renoise box and the canvas presets show; the masked canvas's knobs and boxes do not
    for shown in ("dv-canvas-box-renoise", "dv-knob-acceptance-from", "dv-presets-canvas", "dv-gen-length", "dv-seed",
                  "dv-subtitle-renoise"):
        assert page.evaluate(VISIBLE, shown), shown
    for hidden in ("dv-temperature", "dv-schedule", "dv-revise-box", "dv-presets-article", "dv-cache",
                   "dv-subtitle-masked"):
        assert not page.evaluate(VISIBLE, hidden), hidden
    # the header says what this model does: a canvas never masked, an entropy bound (not the masked loop's text)
    assert "DiffusionGemma" in page.locator("#dv-subtitle-renoise").inner_text()
    slider = "#dv-knob-entropy-bound input[type=range]"
    assert page.locator(slider).is_disabled()  # "auto": the checkpoint's bound
    calls, top = len(demo.decode_calls), page.evaluate(TOP, slider)
    # the badge names the opening settings (a preset, or custom) before any decode
    assert page.locator("#dv-preset-badge").inner_text().startswith("active")
    page.locator("#dv-knob-entropy-bound-auto input").click()  # auto off: the slider's value decodes
    decoded(page, "")
    page.wait_for_function(f"() => !document.querySelector('{slider}').disabled", timeout=TIMEOUT_MS)
    # the decode's badge ("custom settings") took the line the opening one held: nothing below it moved (a badge
    # that appeared only now moved the slider down a line under the pointer about to press it)
    assert page.evaluate(TOP, slider) == top
    text0 = page.evaluate(CANVAS_TEXT)
    release(page, "dv-knob-entropy-bound", 0.6)  # a bound of about 4.8 nats: many more accepted per step
    decoded(page, text0)
    page.wait_for_timeout(500)
    assert len(demo.decode_calls) == calls + 2  # one decode per event
    assert page.evaluate(TITLE, "dv-heatmap").startswith(t("rn_heat_title", "en").split("\n")[0])
    assert page.evaluate(TITLE, "dv-steps").startswith(t("rn_series_title", "en").split("\n")[0])
    assert page.evaluate(TITLE, "dv-order").startswith(t("rn_stability_title", "en").split("\n")[0])
    assert page.locator(".toast-body").count() == 0
    page.screenshot(path=str(tmp_path / "renoise.png"), full_page=True)
    # every figure holds its text: the per-step figure's nine legend entries among them (its column is narrow here)
    assert page.evaluate(OUTSIDE) == []
    # a knob's "auto" switch is as wide as its label: the slider beside it keeps the rest of the row for its label
    # (a half-width slider left a Chinese label one character wide)
    widths = page.evaluate(WIDTHS, ["dv-knob-entropy-bound", "dv-knob-entropy-bound-auto"])
    assert widths[0] > 2 * widths[1] > 0, widths


def test_a_renoising_trace_forks_from_the_inspectors_settings_row(page):
    """The inspector of a renoising trace (a model this server forks) offers its settings' row: the entropy bound
    switched at step 2 forks the trace on show (its link replays the switch), the banner names it."""
    page.locator("#dv-run").click()
    decoded(page, "")
    page.wait_for_function("() => window.__dv.data && !window.__dv.data.live", timeout=TIMEOUT_MS)
    fork_by_switch(page, "entropy_bound", "1.0", 1)


def test_the_walkthrough_speaks_of_the_renoising_canvas(page):
    """On a renoising trace the tour's steps are the renoise canvas's (views/web.py TOUR), none of a masked one's."""
    from dllm_viz.app.views.web import TOUR

    page.locator("#dv-run").click()
    decoded(page, "")
    page.locator("#dv-canvas .dv-tour-start").click()
    page.wait_for_selector(".dv-tour", timeout=TIMEOUT_MS)
    said = []
    while page.locator(".dv-tour").count():
        said.append(page.locator(".dv-tour-text").inner_text().strip())
        page.locator(".dv-tour-next").click()
    assert said == [t(key, "en") for _, key in TOUR["renoise"]]


def test_compare_on_a_renoising_model_runs_its_own_pair(page):
    """The Compare tab on the renoising model offers its pair (as shipped against the article's rule) and says why no
    lesson runs; a click decodes both sides and the summary speaks of accepted positions, not confirmed ones."""
    page.get_by_role("tab", name="Compare").click()
    page.wait_for_selector("#dv-cmp-a .cm-content", state="visible", timeout=TIMEOUT_MS)
    assert page.locator("#dv-cmp-a .cm-content").inner_text().strip() == "{}"
    assert "acceptance_from" in page.locator("#dv-cmp-b .cm-content").inner_text()
    assert "renoising model" in page.locator("#dv-lesson-text").inner_text()
    assert not page.evaluate(VISIBLE, "dv-lessons-box")  # the lessons (masked pairs) hide on this model
    page.locator("#dv-compare-run").click()
    page.wait_for_function("() => ['a', 'b'].every((s) => document.querySelector(`#dv-cmp-canvas-${s} .dv-text`))",
                           timeout=TIMEOUT_MS)
    summary = page.locator("#dv-cmp-summary")
    summary.filter(has_text="accepted").wait_for(timeout=TIMEOUT_MS)
    assert "confirmed" not in summary.inner_text()
    assert page.locator(".toast-body").count() == 0


def test_the_sweep_on_a_renoising_model_says_what_sweeps_it_instead_of_a_grid_it_cannot_run(page):
    """The Sweep's grid (temperature x top_k x decay) is the masked canvas's: on the renoising model its box hides
    and a note shows in its place, with the renoise study counted (its entropy bound, temperatures, stop)."""
    page.get_by_role("tab", name="Sweep").click()
    page.wait_for_function(VISIBLE, arg="dv-sweep-note-renoise", timeout=TIMEOUT_MS)
    assert not page.evaluate(VISIBLE, "dv-sweep-box")  # the grid, its Run button with it
    note = page.locator("#dv-sweep-note-renoise").inner_text()
    assert "renoise_lessons" in note and "DiffusionGemma" in note
    assert page.locator(".toast-body").count() == 0


def test_on_a_phone_both_canvas_presets_show_whole(served):
    """At 390 px the canvas presets' row wraps: its second button was cut at the screen's edge (the masked preset
    rows scroll sideways, each with many presets)."""
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 390, "height": 844})
            page.add_init_script("localStorage.setItem('dv-tour', 'done')")
            page.goto(served[1], wait_until="load")
            page.wait_for_selector("#dv-presets-canvas button", state="visible", timeout=TIMEOUT_MS)
            row, buttons = page.evaluate(BOXES, "dv-presets-canvas")
            assert len(buttons) == 2 and all(row[0] - 1 <= left and right <= min(row[1], 390) + 1
                                              for left, right in buttons), (row, buttons)
            assert page.evaluate("() => document.documentElement.scrollWidth") <= 390 + 1
            # a decode's figures hold their text at this width too (the per-step legend, one entry a row)
            page.locator("#dv-knob-entropy-bound-auto input").click()  # auto off: the slider's value decodes
            decoded(page, "")
            page.locator("#dv-steps").scroll_into_view_if_needed()
            assert page.evaluate(OUTSIDE) == []
        finally:
            browser.close()


def test_a_bad_pair_of_renoise_values_is_one_named_error_and_the_session_goes_on(page, served):
    """t_min at 1.5 with t_max "auto" (the checkpoint's 0.8): refused by name before any decode, one toast;
    t_min "auto" again decodes."""
    demo = served[0]
    calls = len(demo.decode_calls)
    page.locator("#dv-knob-t-min-auto input").click()  # t_min's slider, at the checkpoint's 0.4: decodes
    decoded(page, "")
    page.wait_for_timeout(500)
    assert len(demo.decode_calls) == calls + 1
    release(page, "dv-knob-t-min", 0.75)  # 1.5 on a 0 to 2 slider
    texts = page.locator("[data-testid=toast-text]")
    texts.first.wait_for(timeout=TIMEOUT_MS)
    page.wait_for_timeout(1500)
    assert "t_max=0.8 is invalid" in texts.first.inner_text() and page.locator(".toast-body").count() == 1
    assert len(demo.decode_calls) == calls + 1  # nothing decoded with it
    page.locator("[data-testid=toast-close]").first.click()
    page.locator("#dv-knob-t-min-auto input").click()  # the checkpoint's t_min again: one decode, no error
    for _ in range(TIMEOUT_MS // 250):
        if len(demo.decode_calls) == calls + 2:
            break
        page.wait_for_timeout(250)
    page.wait_for_timeout(1500)
    assert len(demo.decode_calls) == calls + 2 and page.locator(".toast-body").count() == 0
    page.errors[:] = [e for e in page.errors if "t_max" not in e]  # the error the test asked for


def test_picking_the_masked_model_brings_its_widgets_back(page):
    page.locator("#dv-model input").click()
    page.get_by_role("option", name="tiny-chars", exact=True).click()
    page.wait_for_function(VISIBLE, arg="dv-temperature", timeout=TIMEOUT_MS)
    assert page.evaluate(VISIBLE, "dv-schedule") and page.evaluate(VISIBLE, "dv-presets-article")
    page.wait_for_function(f"() => !({VISIBLE})('dv-canvas-box-renoise')", timeout=TIMEOUT_MS)
    assert not page.evaluate(VISIBLE, "dv-presets-canvas")
    assert page.evaluate(VISIBLE, "dv-subtitle-masked") and not page.evaluate(VISIBLE, "dv-subtitle-renoise")
    page.get_by_role("tab", name="Compare").click()  # the masked model's lessons are back
    page.wait_for_function(VISIBLE, arg="dv-lessons-box", timeout=TIMEOUT_MS)
    page.get_by_role("tab", name="Sweep").click()  # and the Sweep's grid, without the renoising model's note
    page.wait_for_function(VISIBLE, arg="dv-sweep-box", timeout=TIMEOUT_MS)
    assert not page.evaluate(VISIBLE, "dv-sweep-note-renoise")
    assert page.locator(".toast-body").count() == 0
