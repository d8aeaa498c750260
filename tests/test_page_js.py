"""The page's renderer (app/web/, views/web.py) drawing a trace's canvas and inspector, in Debian's chromium.

The page draws every view from the chunks the server sends (`views.wire`, one renderer); these tests
hand a blank page those chunks (tests/renderer.py), put the trace in a player as page.js does, and
read what it drew, frame by frame, against the trace. No server, no Gradio: seconds, not minutes. The
figures: tests/test_figures_js.py; the page in the real app: tests/test_browser.py.
"""
from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import pytest
from playwright import sync_api as playwright

from dllm_viz import DecodeConfig, decode
from dllm_viz.app.strings import t
from dllm_viz.app.views import task as task_view, web
from dllm_viz.app.views.palette import tint
from dllm_viz.core.analysis import piece, tempered_from_top
from dllm_viz.core.trace import Trace
from tests import renderer
from tests.test_browser import ARGS, CHROMIUM
from tests.test_world_view import BAD, make_trace
from tests.ui_model import make_text_model

PROMPT = "the cat "
SPANS = """(cls) => [...document.querySelectorAll('#dv-canvas .dv-text [data-pos]')]
  .filter((s) => s.classList.contains(cls)).map((s) => Number(s.dataset.pos))"""


@pytest.fixture(scope="module")
def model():
    return make_text_model()


@pytest.fixture(scope="module")
def trace(model) -> Trace:
    return decode(model, [PROMPT], DecodeConfig.preset("balanced", 24, seed=3))[0]


@pytest.fixture(scope="module")
def chromium():
    assert Path(CHROMIUM).exists() or shutil.which("chromium"), "chromium is missing: bash scripts/test-deps.sh"
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield browser
        browser.close()


@pytest.fixture()
def show(chromium):
    """show(trace, frame=..., selected=..., lang=..., temperature=...) -> a page with `trace` in a player."""
    pages = []

    def open_(trace: Trace, *, frame: int | None = None, selected: int | None = None, lang: str = "en",
              temperature: float = 1.0):
        page = renderer.open_page(chromium, temperature=temperature)
        renderer.show(page, trace, lang=lang, frame=frame, selected=selected)
        pages.append(page)
        return page

    yield open_
    for page in pages:
        assert page.errors == []
        page.close()


def at(page, frame: int, pos: int | None = None) -> None:
    page.evaluate("([f, p]) => window.__dv.select(f, p)", [frame, pos])


def inspector(page) -> str:
    return page.inner_text("#dv-inspector")


def test_the_canvas_follows_the_trace_at_every_frame(show, trace):
    page = show(trace, frame=0, selected=0)
    G = trace.config.gen_length
    for f in range(len(trace.steps) + 1):
        at(page, f)
        confirmed = sorted(p for p in range(G) if trace.order[p] < f)
        assert page.evaluate(SPANS, "dv-tok") == confirmed
        assert page.evaluate(SPANS, "dv-mask") == sorted(set(range(G)) - set(confirmed))
        assert page.evaluate(SPANS, "dv-new") == (sorted(trace.steps[f - 1].selected) if f else [])
        texts = page.evaluate("() => [...document.querySelectorAll('#dv-canvas .dv-text [data-pos]')]"
                              ".map((s) => s.textContent)")
        for p in range(G):
            if p in confirmed:
                assert texts[p] == piece(trace, trace.token_ids[p])
            elif f < len(trace.steps):  # a masked position shows the next forward pass's argmax
                guess = trace.steps[f].argmax[p]
                assert texts[p] == (piece(trace, guess) if guess >= 0 else "▢")
    assert page.inner_text("#dv-canvas .dv-prompt") in (PROMPT.strip(), PROMPT)
    # Tints are the confidence each token was confirmed with (palette.tint), as the key says.
    bgs = page.evaluate("() => [...document.querySelectorAll('#dv-canvas .dv-text [data-pos]')].map((s) => s.__dvBg)")
    assert bgs == [tint(trace.steps[trace.order[p]].confidence[p]) for p in range(G)]


NODES = """() => [...document.querySelectorAll('#dv-canvas .dv-text [data-pos]')]"""


def test_a_frame_changes_each_positions_text_in_place(show, trace):
    """From frame to frame each position's text changes in place (canvas.js `dvSetText`: the data of its one text
    node, no node made or dropped), so the browser lays the text out again without rebuilding that part of its
    layout tree; a decode's every step changes the guess at every masked position."""
    page = show(trace, frame=0, selected=0)
    page.evaluate(f"() => {{ window.__was = ({NODES})().map((s) => [s.firstChild, s.textContent]); }}")
    at(page, len(trace.steps))
    same, changed = page.evaluate(f"""() => {{ const spans = ({NODES})();
      return [spans.every((s, p) => s.childNodes.length === 1 && s.firstChild === window.__was[p][0]),
              spans.filter((s, p) => s.textContent !== window.__was[p][1]).length]; }}""")
    assert same and changed >= len(trace.steps), changed  # the same nodes, their texts changed
    at(page, 0)
    assert page.evaluate(f"() => ({NODES})().every((s, p) => s.textContent === window.__was[p][1])")


def test_the_frame_is_clamped_and_the_status_counts_real_steps(show, trace):
    page = show(trace, frame=0)
    n = len(trace.steps)
    at(page, n + 5)
    assert page.evaluate("() => window.__dv.frame") == n
    status = page.inner_text("#dv-canvas .dv-status")
    assert status.startswith(f"step {n} of {n}") and "finished" in status
    at(page, -3)
    assert page.evaluate("() => window.__dv.frame") == 0


def test_token_text_is_shown_as_text_never_as_markup(show, trace):
    evil = Trace.from_json(trace.to_json())
    evil.vocab[evil.token_ids[0]] = "<img src=x onerror=window.__pwned=1>"
    page = show(evil, selected=0)
    assert page.evaluate("() => document.querySelector('#dv-canvas .dv-text img, #dv-inspector img')") is None
    assert page.inner_text('#dv-canvas [data-pos="0"]') == "<img src=x onerror=window.__pwned=1>"
    assert "<img src=x" in inspector(page) and page.evaluate("() => window.__pwned") is None


def test_the_inspector_uses_the_stored_candidates_of_the_confirming_step(show, trace):
    pos = trace.steps[1].selected[0]
    page = show(trace, frame=2, selected=pos, temperature=0.5)
    insp = page.evaluate("([p, f, T]) => DV.inspectAt(window.__dv.data, p, f, T)", [pos, 2, 0.5])
    rec = trace.steps[1]
    assert insp["step"] == 1 and insp["candidates"] == [piece(trace, i) for i in rec.candidates[pos]]
    assert insp["raw"] == pytest.approx(rec.candidate_probs[pos], abs=5.01e-6)  # the data holds 5 decimals
    assert insp["tempered"] == pytest.approx(tempered_from_top(rec.candidate_probs[pos], 0.5), abs=1e-4)
    text = inspector(page)
    assert f"Top candidates at position {pos}, step 2" in text and "Confirmed at step 2" in text
    assert page.locator("#dv-inspector .dv-insp-row").count() == len(rec.candidates[pos])
    rank = sorted(rec.selected, key=lambda p: (-rec.confidence[p], p)).index(pos) + 1
    assert f"rank {rank} of " in text and f"Drew {piece(trace, trace.token_ids[pos])!r}" in text


def test_the_inspector_never_tells_the_future(show, trace):
    # A position still masked at frame f shows the next forward pass's prediction and says it is
    # confirmed later, but not at which step nor which token.
    page = show(trace, frame=0, selected=0)
    for f in range(len(trace.steps)):
        for pos in range(trace.config.gen_length):
            if trace.order[pos] < f:
                continue
            at(page, f, pos)
            text = inspector(page)
            assert "Confirmed at" not in text and "Drew" not in text
            assert f"Still masked after step {f}" in text and "confirmed at a later step" in text


def test_an_earlier_confirmation_says_so_and_padding_is_inspected(show, trace):
    ended = copy.deepcopy(trace)
    ended.text_end = 10
    page = show(ended, selected=trace.steps[0].selected[0])
    assert inspector(page).startswith(f"Top candidates at position {trace.steps[0].selected[0]}, step 1")
    assert "Confirmed earlier, at step 1" in inspector(page)
    at(page, len(trace.steps), 11)  # end padding: dimmed on the canvas, and still inspected
    assert "dv-pad" in page.get_attribute('#dv-canvas [data-pos="11"]', "class")
    assert "position 11" in inspector(page)


def test_the_threshold_reason_and_the_confidence_source_note(show, model):
    tr = decode(model, [PROMPT], DecodeConfig(gen_length=16, schedule="threshold", threshold=0.5, seed=1))[0]
    rec = tr.steps[0]
    page = show(tr, frame=1, selected=rec.selected[0])
    expected = "confidence ≥ threshold 0.5" if rec.confidence[rec.selected[0]] >= 0.5 else "min_k floor"
    assert expected in inspector(page)
    assert "never sees the tempered numbers" in inspector(page)
    polluted = decode(model, [PROMPT], DecodeConfig(gen_length=8, temperature=1.5, confidence_from="tempered"))[0]
    page = show(polluted, selected=0)
    assert "never sees" not in inspector(page) and "tempered confidence" in inspector(page)


def test_the_inspector_re_tempers_with_the_slider_and_speaks_chinese(show, trace):
    page = show(trace, lang="zh", selected=0, temperature=1.0)
    assert "加温后，T=1" in inspector(page) and "位置 0" in inspector(page)
    page.evaluate("""() => { const s = document.querySelector('#dv-temperature input');
        s.value = '0.3'; s.dispatchEvent(new Event('input', {bubbles: true})); }""")
    assert "加温后，T=0.3" in inspector(page)
    rec = trace.steps[trace.order[0]]
    shares = [round(100 * x) for x in tempered_from_top(rec.candidate_probs[0], 0.3)]
    labels = page.evaluate("() => [...document.querySelectorAll('#dv-inspector .dv-insp-tlab')]"
                           ".map((e) => e.textContent)")
    assert labels == [f"{x}%" for x in shares]


def test_a_compare_side_waiting_in_the_queue_says_where_with_its_stop_then_shows_its_steps(chromium, trace):
    """A compare side before its first step (no head yet: a canvas of unknown kind) shows where it waits and Stop;
    its first step makes the canvas anew."""
    page = renderer.open_page(chromium)
    renderer.load(page, trace, "a")
    page.evaluate("""() => { const box = document.createElement('div'); box.id = 'dv-cmp-canvas-a';
        box.innerHTML = '<div class="dv-canvas"></div>'; document.body.append(box);
        const d = DV.dvTraceNew(window.OPTIONS.theme); d.live = true; d.queue = [3, 5]; window.q = d;
        DV.dvShowStatic(box.firstChild, d, window.OPTIONS.strings.en, window.OPTIONS.theme, true,
                        {onStop: () => { window.stopped = true; }}); }""")
    status = page.inner_text("#dv-cmp-canvas-a .dv-status")
    assert status == t("live_queued_eta", "en", a=3, s=5) and page.locator("#dv-cmp-canvas-a .dv-tok").count() == 0
    page.locator("#dv-cmp-canvas-a .dv-stop").click()
    assert page.evaluate("() => window.stopped === true")
    page.evaluate("""() => { window.a.live = true;
        const root = document.querySelector('#dv-cmp-canvas-a .dv-canvas');
        const o = window.OPTIONS; DV.dvShowStatic(root, window.a, o.strings.en, o.theme, true, {onStop: () => {}});
        }""")
    assert page.locator("#dv-cmp-canvas-a .dv-tok").count() > 0
    assert page.locator("#dv-cmp-canvas-a .dv-stop").count() == 1
    assert t("live_queued_eta", "en").split("{")[0] not in page.inner_text("#dv-cmp-canvas-a") and page.errors == []
    page.close()


def test_a_compare_side_underlines_its_differences_at_its_end(chromium, trace, model):
    other = decode(model, [PROMPT], trace.config.replace(seed=4, temperature=2.0))[0]
    diff = sorted(p for p in range(24) if trace.token_ids[p] != other.token_ids[p])
    page = renderer.open_page(chromium)
    renderer.load(page, trace, "a")
    page.evaluate("""(diff) => { const box = document.createElement('div'); box.id = 'dv-cmp-canvas-a';
        box.innerHTML = '<div class="dv-canvas"></div>'; document.body.append(box); window.a.diff = diff;
        DV.dvShowStatic(box.firstChild, window.a, window.OPTIONS.strings.en, window.OPTIONS.theme, true); }""", diff)
    marked = page.evaluate("""() => [...document.querySelectorAll('#dv-cmp-canvas-a [data-pos]')]
        .filter((s) => s.classList.contains('dv-diff')).map((s) => Number(s.dataset.pos))""")
    assert marked == diff and page.locator("#dv-cmp-canvas-a .dv-mask").count() == 0
    assert "differs from the other side" in page.inner_text("#dv-cmp-canvas-a .dv-legend") and page.errors == []
    page.close()


def test_the_world_checker_marks_and_names_the_broken_rule(show):
    tr = make_trace(BAD)
    ana = [tr.token_text(i) for i in tr.token_ids].index(" Ana")
    page = show(tr, selected=ana)
    assert page.evaluate(SPANS, "dv-bad") == [ana]
    assert "agreement" in inspector(page) and "Ana" in inspector(page)
    page = show(tr, lang="zh", selected=ana)
    assert "一致" in inspector(page) and "agreement" not in inspector(page)
    at(page, 1, 0)
    assert "检查器" not in inspector(page)


def test_at_temperature_zero_the_first_candidate_takes_every_share(show, trace):
    # T = 0 is argmax: the first candidate's tempered bar is full (web.BAR_SCALE percent), the
    # others keep a visible sliver (web.MIN_BAR percent), never a 0-width bar.
    page = show(trace, selected=0, temperature=0.0)
    widths = page.evaluate("() => [...document.querySelectorAll('#dv-inspector .dv-insp-line .dv-insp-temp')]"
                           ".map((e) => e.style.width)")
    assert [float(w.rstrip("%")) for w in widths] == [web.BAR_SCALE] + [web.MIN_BAR] * (len(widths) - 1)


def test_a_hostile_vocabulary_is_text_in_the_canvas_and_the_inspector(show):
    # Issue 33 item 3, drawn by the page: every hostile piece shows as its characters; no tag, image,
    # link, emphasis or code forms from it (the inspector's own <b> and <code> come from our strings).
    from tests.test_markup import EVIL

    trace = decode(make_text_model(), ["the cat "], DecodeConfig.preset("balanced", 16, seed=3))[0]
    d = json.loads(trace.to_json())
    d["vocab"] = {k: EVIL[i % len(EVIL)] for i, k in enumerate(d["vocab"])}
    evil = Trace.from_json(json.dumps(d))
    page = show(evil, selected=0)
    count = "(sel) => document.querySelectorAll(sel).length"
    seen = set()
    for pos in range(evil.config.gen_length):
        at(page, len(evil.steps), pos)
        assert page.evaluate(count, "#dv-canvas img, #dv-canvas a, #dv-canvas em, #dv-canvas h1, #dv-canvas code") == 0
        assert page.evaluate(count, "#dv-inspector img, #dv-inspector a, #dv-inspector em, #dv-inspector h1, "
                                    "#dv-inspector strong, #dv-inspector script") == 0
        piece_text = page.inner_text(f'#dv-canvas [data-pos="{pos}"]')
        seen.add(piece_text)
    assert seen & {" ".join(e.splitlines()) for e in EVIL} or seen & set(EVIL)


def test_world_checker_lines_quote_the_traces_words_as_text(show):
    """A trace that calls itself world-mdlm is checked; each checker line quotes its word as text in
    a code element of our own, whatever characters the word holds."""
    from dllm_viz import StepRecord
    from dllm_viz.app.views.world import generated_marks

    pieces = ["Tom", " has", " 3", " [x](http://h/)", " *a*", " `b`", " cats", "."]
    vocab = {i + 10: p for i, p in enumerate(pieces)}
    ids, G = list(vocab), len(pieces) - 2
    rec = StepRecord(step=0, block=0, k=G, temperature=1.0, confidence=[0.5] * G, argmax=[-1] * G,
                     selected=list(range(G)), tokens=ids[2:], logprobs=[-0.5] * G)
    tr = Trace(prompt_ids=ids[:2], token_ids=ids[2:], order=[0] * G, steps=[rec], config=DecodeConfig(gen_length=G),
               model="world-mdlm", vocab=vocab, text="".join(pieces[2:]), prompt_text="".join(pieces[:2]))
    page = show(tr, selected=0)
    quoted = set()
    for pos, found in enumerate(generated_marks(tr)):
        if not found:
            continue
        at(page, 1, pos)
        lines = page.evaluate("""() => [...document.querySelectorAll('#dv-inspector .dv-insp-rules li')].map((li) =>
            [li.querySelector('b').textContent, li.querySelector('code').textContent,
             li.querySelectorAll('a, em, img').length])""")
        assert [(rule, text, tags) for rule, text, tags in lines] == [(v.rule, v.text, 0) for v in found]
        quoted |= {v.text for v in found}
    assert quoted & {"[", "*", "`", "(", "[x](http://h/)", "*a*", "`b`"}  # markup characters were among them


def test_a_grid_task_is_drawn_as_two_grids_with_its_wrong_cells_marked(show):
    from dllm_viz.tasks import parse
    from dllm_viz.tasks.oracle import TaskOracle
    from tests.test_task_view import LATIN, _trace

    wrong = _trace(TaskOracle(), LATIN, schedule="topk_decay", top_k=16, decay=1.0, seed=3)
    verdict = task_view.verdict(wrong)
    page = show(wrong, selected=verdict.cells[0])
    assert page.locator("#dv-canvas .dv-grid").count() == 2
    given = page.evaluate("() => [...document.querySelectorAll('#dv-canvas .dv-grid')[0].children]"
                          ".map((s) => s.textContent)")
    assert given == ["·" if c == "_" else c for c in parse(LATIN).cells]
    assert page.evaluate(SPANS, "dv-bad") == sorted(verdict.cells)  # the answer's grid: one span per position
    assert verdict.rule in inspector(page)


# ----- a revised trace: tokens taken back and rewritten (issue 28) ----------------------------------
WORLD_PROMPT = "Tom Lopez of"
TEXTS = "() => [...document.querySelectorAll('#dv-canvas .dv-text [data-pos]')].map((s) => s.textContent)"


@pytest.fixture(scope="module")
def revised():
    """Seeded world-model decodes that take tokens back (RCR, ReMDM) and rewrite them (LLaDA 2.1's editing)."""
    from dllm_viz import load_model

    world = load_model("world")
    prompts = {"rcr": WORLD_PROMPT, "remdm": WORLD_PROMPT, "llada21": ""}  # the seeds' prompts that revise
    out = {name: decode(world, [prompt], DecodeConfig.preset(name, 32, seed=1))[0] for name, prompt in prompts.items()}
    assert all(tr.revised for tr in out.values())
    assert out["rcr"].metrics["remasked"] > 0 and out["remdm"].metrics["remasked"] > 0
    assert out["llada21"].metrics["edited"] > 0
    return out


def _taken_back(tr: Trace) -> list[tuple[int, int]]:
    """(position, frame) pairs where a token shown at frame f - 1 is a mask again at frame f."""
    return [(p, f) for f in range(1, len(tr.steps) + 1)
            for p, (a, b) in enumerate(zip(tr.canvas_at(f - 2), tr.canvas_at(f - 1))) if a is not None and b is None]


@pytest.mark.parametrize("rule", ["rcr", "remdm", "llada21"])
def test_a_revised_canvas_is_the_traces_canvas_at_every_frame_scrubbed_both_ways(show, revised, rule):
    tr = revised[rule]
    n, G = len(tr.steps), tr.config.gen_length
    page = show(tr, frame=0, selected=0)
    frames = [*range(n + 1), *range(n, -1, -1), *range(0, n + 1, 3)]  # forwards, backwards, and in jumps
    for f in frames:
        at(page, f)
        canvas = tr.canvas_at(f - 1)  # frame f = after record f - 1
        held = [p for p in range(G) if canvas[p] is not None]
        assert page.evaluate(SPANS, "dv-tok") == held, f
        assert page.evaluate(SPANS, "dv-mask") == [p for p in range(G) if canvas[p] is None], f
        texts = page.evaluate(TEXTS)
        assert [texts[p] for p in held] == [piece(tr, canvas[p]) for p in held], f
        # Marks: a token held by a rewrite, a mask taken back at this frame's step.
        edited = [p for p in held if any(k == "edit" and s < f for s, k, _ in tr.history[p])
                  and [k for s, k, _ in tr.history[p] if s < f][-1] == "edit"]
        assert page.evaluate(SPANS, "dv-edited") == edited, f
        assert page.evaluate(SPANS, "dv-remasked") == sorted(p for p, g in _taken_back(tr) if g == f), f
    if rule != "llada21":
        assert _taken_back(tr), "the seed must take a token back for this test to mean something"


@pytest.mark.parametrize("rule", ["rcr", "remdm"])
def test_a_token_taken_back_shows_struck_through_at_its_step(show, revised, rule):
    """At the step that takes a token back its position shows that token struck through (not the model's
    next guess), and the status line counts what the step took back and rewrote; the frame after, a mask
    with the model's guess. (tests/test_browser_newcomer.py: the same on the served page.)"""
    from dllm_viz.app.strings import t

    tr = revised[rule]
    page = show(tr, frame=0, selected=0)
    for f in sorted({g for _, g in _taken_back(tr)}):
        at(page, f)
        taken = [p for p, g in _taken_back(tr) if g == f]
        texts = page.evaluate(TEXTS)
        assert [texts[p] for p in taken] == [piece(tr, tr.canvas_at(f - 2)[p]) for p in taken], f
        struck = page.evaluate("""(ps) => ps.map((p) => getComputedStyle(
            document.querySelector(`#dv-canvas [data-pos="${p}"]`)).textDecorationLine)""", taken)
        assert all("line-through" in s for s in struck), (f, struck)
        rec = tr.steps[f - 1]
        counts = t("rv_status", "en", r=len(rec.remasked or ()), e=len(rec.edited or ()))
        assert counts in page.inner_text("#dv-canvas .dv-status"), f
    untouched = next(f for f in range(1, len(tr.steps) + 1) if not tr.steps[f - 1].revisions)
    at(page, untouched)
    assert "taken back" not in page.inner_text("#dv-canvas .dv-status")
    assert "struck through" in page.inner_text("#dv-canvas .dv-legend")


def test_a_rewritten_token_names_its_old_token_on_hover_and_in_the_inspector(show, revised):
    tr = revised["llada21"]
    step, pos = next((rec.step, p) for rec in tr.steps for p in (rec.edited or ()))
    rec = tr.steps[step]
    i = rec.edited.index(pos)
    old, new = piece(tr, rec.edited_from[i]), piece(tr, rec.edited_to[i])
    page = show(tr, frame=step + 1, selected=pos)
    title = page.get_attribute(f'#dv-canvas [data-pos="{pos}"]', "title")
    assert f"rewritten at step {step + 1}" in title and f"was {old!r}" in title and f"now {new!r}" in title
    text = inspector(page)
    assert f"Rewritten at step {step + 1}: {old!r} → {new!r}" in text
    assert f"History of position {pos}, up to step {step + 1}" in text
    assert f"step {step + 1}: rewritten {old!r} → {new!r}" in text
    at(page, step, pos)  # one step before: the old token, no rewrite known yet
    assert page.inner_text(f'#dv-canvas [data-pos="{pos}"]') == old and "rewritten" not in inspector(page)
    zh = show(tr, lang="zh", frame=step + 1, selected=pos)
    assert f"第 {step + 1} 步改写" in inspector(zh)
    assert "改写" in zh.get_attribute(f'#dv-canvas [data-pos="{pos}"]', "title")


@pytest.mark.parametrize("rule", ["rcr", "remdm"])
def test_the_inspector_lists_a_positions_history_up_to_the_step_on_show(show, revised, rule):
    tr = revised[rule]
    pos, f = _taken_back(tr)[0]
    page = show(tr, frame=f, selected=pos)
    history = [e for e in tr.history[pos]]
    for frame in range(len(tr.steps) + 1):
        at(page, frame, pos)
        items = page.evaluate("() => [...document.querySelectorAll('#dv-inspector .dv-insp-history li')]"
                              ".map((e) => e.textContent)")
        known = [(s, k, tok) for s, k, tok in history if s < frame]
        assert len(items) == len(known), frame  # what was decided by then, nothing later
        for item, (s, k, tok) in zip(items, known):
            assert item.startswith(f"step {s + 1}: "), (frame, item)
            if k == "remask":
                assert "taken back to [MASK]" in item and {"rcr": "(decided with ", "remdm": "(σ "}[rule] in item
            else:
                assert f"confirmed {piece(tr, tok)!r}" in item
    at(page, f, pos)
    title = page.get_attribute(f'#dv-canvas [data-pos="{pos}"]', "title")
    assert f"taken back at step {f}" in title and "Still masked" in inspector(page)


def test_a_decode_in_progress_is_painted_step_by_step_as_its_chunks_come(show, chromium, revised):
    """A live decode's chunks (one per step, `wire.Encoder` as the server sends them) painted as they
    come: the canvas after each step is the trace's canvas then, take-backs included; the last chunk
    makes it the finished trace, the same data as the stored trace read at once."""
    from dllm_viz.app.views import wire

    tr = revised["remdm"]
    encoder = wire.encoder_for(tr)
    page = renderer.open_page(chromium)
    renderer.load(page, tr, "d", chunks=[encoder.chunk(tr.steps[:1])])
    page.evaluate(renderer.VIEW, ["en"])
    G = tr.config.gen_length
    for rec in tr.steps:
        if rec.step:
            page.evaluate("(c) => DV.dvTraceAdd(window.d, c)", encoder.chunk([rec]))
        page.evaluate("() => { window.d.live = true; DV.dvShow(window.__dv, window.d); }")
        canvas = tr.canvas_at(rec.step)
        assert page.evaluate(SPANS, "dv-mask") == [p for p in range(G) if canvas[p] is None], rec.step
        texts = page.evaluate(TEXTS)
        assert [texts[p] for p in range(G) if canvas[p] is not None] == [piece(tr, c) for c in canvas if c is not None]
        assert page.evaluate("() => document.querySelector('#dv-canvas .dv-live').dataset.steps") == str(rec.step + 1)
    page.evaluate("(c) => DV.dvTraceAdd(window.d, c)", encoder.chunk([], done=wire.done(tr)))
    renderer.load(page, tr, "whole")
    same = page.evaluate("""() => ['order', 'tok', 'tint', 'conf', 'q', 'k', 'bad', 'pieces', 'end']
        .filter((key) => JSON.stringify(window.d[key]) !== JSON.stringify(window.whole[key]))""")
    assert same == [] and page.errors == []
    page.close()


def test_a_decode_ends_on_its_canvas_and_heatmap_first_and_the_rest_once_they_are_painted(chromium, trace):
    """The task that finishes a live decode draws the finished canvas and the heatmap and nothing else; the
    inspector, the unmasking-order map and the per-step figure come once those are painted, so that first frame lays
    out and paints the two views a decode ends on (views.js `drawNow`)."""
    from dllm_viz.app.views import wire

    encoder = wire.encoder_for(trace)
    page = renderer.open_page(chromium)
    renderer.load(page, trace, "d", chunks=[encoder.chunk(trace.steps[:2])])
    page.evaluate(renderer.VIEW, ["en"])
    page.evaluate("() => { window.d.live = true; DV.dvShow(window.__dv, window.d); }")
    shown = """() => { const fig = (id) => { const e = document.querySelector(`#${id} .dv-fig`);
        return !!(e && e.data && e.data.length); };
      return [!!document.querySelector('#dv-canvas .dv-player:not(.dv-live) .dv-scrub'), fig('dv-heatmap'),
              fig('dv-order'), fig('dv-steps'), document.querySelector('#dv-inspector').innerText.trim() !== ''];
    }"""
    assert page.evaluate(shown) == [False, False, False, False, False]  # live: the canvas alone
    page.evaluate("(c) => DV.dvTraceAdd(window.d, c)", encoder.chunk(trace.steps[2:], done=wire.done(trace)))
    in_task = page.evaluate(f"() => {{ window.d.live = false; DV.dvShow(window.__dv, window.d); return ({shown})(); }}")
    assert in_task == [True, True, False, False, False]
    page.wait_for_function(f"() => ({shown})().every(Boolean)", timeout=10_000)
    assert page.errors == []
    page.close()


@pytest.mark.parametrize("hidden", [False, True])
def test_work_after_paint_waits_for_a_late_frame_on_a_shown_page_and_not_on_a_hidden_one(chromium, hidden):
    """views.js `dvAfterPaint`: on a shown page the work waits for the frame however late it comes (a busy machine's
    frame can be later than 100 ms: the work done before it would be painted with the views it should follow); a
    hidden page paints nothing, and its work runs once the page is seen hidden (within ~100 ms). The page's frames are
    held back here by taking `requestAnimationFrame` away, and released by hand."""
    page = renderer.open_page(chromium)
    ran = page.evaluate("""async (hidden) => {
      const frames = [], real = window.requestAnimationFrame, t0 = performance.now();
      window.requestAnimationFrame = (f) => frames.push(f);
      Object.defineProperty(document, 'hidden', {configurable: true, get: () => hidden});
      let ran = null;
      DV.dvAfterPaint(() => { ran = performance.now() - t0; });
      await new Promise((ok) => setTimeout(ok, 400));
      const before = ran;
      window.requestAnimationFrame = real;
      frames.forEach((f) => f(performance.now()));
      await new Promise((ok) => setTimeout(ok, 50));
      return [before, ran, frames.length];
    }""", hidden)
    before, after, frames = ran
    assert frames == 1 and page.errors == []
    page.close()
    if hidden:
        assert before is not None and 90 <= before < 400 and after == before  # once, without a frame
    else:
        assert before is None and after is not None and after >= 400  # with the frame, however late


def test_the_players_speed_is_one_select_from_trace_to_trace(chromium, trace):
    """The speed's <select> is made once per player and put back in each new markup: a decode that ends (its
    player made anew from the live canvas) finds the same element, at the speed chosen before, in the language on
    show (a <select> parsed anew costs Chrome's autofill a read of every form control of the page)."""
    from dllm_viz.app.views import wire

    encoder = wire.encoder_for(trace)
    page = renderer.open_page(chromium)
    renderer.load(page, trace, "whole")
    page.evaluate(renderer.VIEW, ["en"])
    page.evaluate("() => DV.dvShow(window.__dv, window.whole)")
    page.select_option("#dv-canvas .dv-speed", "4")
    page.evaluate("() => { document.querySelector('#dv-canvas .dv-speed').__mark = 1; }")
    renderer.load(page, trace, "d", chunks=[encoder.chunk(trace.steps[:2])])
    page.evaluate("() => { window.d.live = true; DV.dvShow(window.__dv, window.d); }")
    assert page.evaluate("() => document.querySelectorAll('#dv-canvas select').length") == 0  # live: no player
    page.evaluate("(c) => DV.dvTraceAdd(window.d, c)", encoder.chunk(trace.steps[2:], done=wire.done(trace)))
    page.evaluate("() => { window.d.live = false; DV.dvShow(window.__dv, window.d); }")
    speed = """() => { const s = [...document.querySelectorAll('#dv-canvas select')];
      return [s.length, s[0].__mark, s[0].value, window.__dv.speed, s[0].title,
              s[0].closest('.dv-controls') !== null]; }"""
    assert page.evaluate(speed) == [1, 1, "4", 4, t("ctl_speed", "en"), True]
    page.evaluate("() => { window.__dv.lang = 'zh'; window.__dv.data = null; DV.dvShow(window.__dv, window.d); }")
    assert page.evaluate(speed) == [1, 1, "4", 4, t("ctl_speed", "zh"), True]
    assert page.errors == []
    page.close()


def test_a_forks_forced_and_taken_back_tokens_replay_as_the_traces_canvas(show):
    """A fork (core.lineage) forces a token at the start and takes one back later: the page's canvas is
    `Trace.canvas_at` at every frame, the forced token on show from frame 0; the inspector and the
    history say what the fork did."""
    from dllm_viz import fork, load_model

    world = load_model("world")
    tr = decode(world, ["Tom Lopez of"], DecodeConfig.preset("quality", 32, seed=3))[0]
    pos = next(p for p, tok in enumerate(tr.token_ids) if tok != 7)
    first = fork(world, tr, 0, force={pos: 7})
    vis = next(p for p, tok in enumerate(first.canvas_at(3)) if tok is not None and p != pos)
    out = fork(world, first, 4, remask=[vis])
    G = out.config.gen_length
    page = show(out, frame=0, selected=pos)
    for f in range(len(out.steps) + 1):
        at(page, f)
        canvas = out.canvas_at(f - 1)
        assert page.evaluate(SPANS, "dv-mask") == [p for p in range(G) if canvas[p] is None], f
        texts = page.evaluate(TEXTS)
        assert [texts[p] for p in range(G) if canvas[p] is not None] == [piece(out, c) for c in canvas if c is not None]
    at(page, 0, pos)
    assert "Forced by a fork" in inspector(page) and piece(out, 7) in inspector(page)
    at(page, len(out.steps), vis)
    assert "taken back to [MASK]" in inspector(page)
    figs = page.evaluate("() => ['heatmap', 'order', 'steps'].map((k) => JSON.stringify("
                         "DV['dv' + k[0].toUpperCase() + k.slice(1) + 'Fig']"
                         "(window.d, window.OPTIONS.strings.zh)).length)")
    assert all(n > 100 for n in figs)


def test_the_inspectors_fork_buttons_ask_for_the_candidate_on_show_and_the_server_reads_its_token(show, trace):
    """With the page's `onFork` (the server forks this trace: `canFork`), each candidate of the position on show has a
    fork button asking for it on the canvas of the frame on show, and a decided position a take-back button; the
    server reads the candidate's token id from the trace's own record (`page_fork_json`). No `onFork`: no button."""
    from dllm_viz.app.fork_request import page_fork_json, parse_fork_json

    page = show(trace, frame=0, selected=0)
    f = 2
    pos = next(p for p in range(trace.config.gen_length) if trace.order[p] >= f)  # masked on the canvas of frame f
    at(page, f, pos)
    assert page.locator("#dv-inspector button.dv-insp-fork").count() == 0  # the renderer alone forks nothing
    page.evaluate("() => { window.__asked = []; window.__dv.options.onFork = (c) => window.__asked.push(c);"
                  " window.__dv.options.canFork = (d) => d === window.__dv.data; }")
    at(page, f, pos)
    buttons = page.locator("#dv-inspector .dv-insp-row button.dv-insp-fork")
    cands = trace.steps[f].candidates[pos]
    assert buttons.count() == len(cands) and page.locator("#dv-inspector .dv-insp-takeback button").count() == 0
    assert piece(trace, cands[1]) in buttons.nth(1).get_attribute("title") and f"after step {f}" in \
        buttons.nth(1).get_attribute("title")
    buttons.nth(1).click()
    asked = page.evaluate("() => window.__asked")
    assert asked == [{"step": f, "candidate": [pos, f, 1]}]
    request = parse_fork_json(page_fork_json(json.dumps(asked[0]), trace))
    assert request.step == f and request.force == {pos: cands[1]} and request.remask == ()
    decided = next(p for p in range(trace.config.gen_length) if trace.order[p] < f)
    at(page, f, decided)
    page.locator("#dv-inspector .dv-insp-takeback button").click()
    assert page.evaluate("() => window.__asked")[1] == {"step": f, "remask": [decided]}
    page.evaluate("() => { window.__dv.options.canFork = () => false; }")  # a trace the server cannot fork
    at(page, f, pos)
    assert page.locator("#dv-inspector button.dv-insp-fork").count() == 0


def test_the_inspectors_switch_row_forks_with_a_setting_changed_at_the_step_on_show(show, trace):
    """With the page's `onFork` and the settings a fork may switch (`options.switchable`), the inspector has one more
    row: a knob (temperature first), its value in force at the frame on show (the decode's, or a fork point's at or
    before it), and a fork button asking for the rest with that value. Another knob picked: its own value in the box;
    a word is sent as text, an empty box as None. Without `switchable`: no row."""
    page = show(trace, frame=0, selected=0)
    f = 2
    page.evaluate("(s) => { window.__asked = []; window.__dv.options.onFork = (c) => window.__asked.push(c);"
                  " window.__dv.options.canFork = (d) => d === window.__dv.data;"
                  " window.__dv.options.switchable = {masked: s}; }", web.switchable())
    at(page, f, 0)
    row = page.locator("#dv-inspector .dv-insp-switch")
    assert row.count() == 1 and row.locator("select").input_value() == "temperature"
    assert float(row.locator("input").input_value()) == trace.config.temperature
    assert list(web.switchable())[:2] == ["schedule", "top_k"] and "gen_length" not in web.switchable()
    row.locator("input").fill("0.25")
    row.locator("button").click()
    row.locator("select").select_option("schedule")
    assert row.locator("input").input_value() == trace.config.schedule  # the picked knob's own value, as text
    row.locator("input").fill("margin")
    row.locator("input").press("Enter")  # Enter forks as the button does
    row.locator("select").select_option("top_k")
    row.locator("input").fill("")
    row.locator("button").click()
    assert page.evaluate("() => window.__asked") == [{"step": f, "knobs": {"temperature": 0.25}},
                                                     {"step": f, "knobs": {"schedule": "margin"}},
                                                     {"step": f, "knobs": {"top_k": None}}]
    page.evaluate("() => { window.__dv.options.switchable = null; }")
    at(page, f + 1, 0)
    assert page.locator("#dv-inspector .dv-insp-switch").count() == 0


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_switch_row_names_each_knob_as_its_widget_does(show, trace, lang):
    """The settings row's knobs read as the page's widgets are labelled, in the page's language (the config name is
    each option's value, which the fork sends, and its tip); a knob with no widget of its own keeps its name."""
    page = show(trace, frame=0, selected=0, lang=lang)
    page.evaluate("(s) => { window.__dv.options.onFork = () => {}; window.__dv.options.canFork = () => true;"
                  " window.__dv.options.switchable = {masked: s}; }", web.switchable())
    at(page, 2, 0)
    options = page.locator("#dv-inspector .dv-insp-switch select option")
    shown = {options.nth(i).get_attribute("value"): (options.nth(i).inner_text(), options.nth(i).get_attribute("title"))
             for i in range(options.count())}
    assert list(shown) == list(web.switchable())
    assert shown["remask_eta"] == (t("remask_eta", lang), "remask_eta") and shown["top_k"][0] == t("top_k", lang)
    assert shown["vocab_top_k"] == ("vocab_top_k", "vocab_top_k")  # no widget label: its name
    if lang == "zh":
        assert shown["temperature"][0] == "温度"


def test_the_switch_rows_value_is_the_one_in_force_at_the_step_on_show(show):
    """After a fork point that switched the temperature at step s, the row shows the decode's temperature before s and
    the switched one from s on (core.fork's lineage: a fork point at or before the step)."""
    from dllm_viz import fork, load_model

    world = load_model("world")
    tr = decode(world, ["Tom Lopez of"], DecodeConfig.preset("quality", 32, seed=3))[0]
    out = fork(world, tr, 3, knobs={"temperature": 0.0})
    page = show(out, frame=0, selected=0)
    page.evaluate("(s) => { window.__dv.options.onFork = () => {}; window.__dv.options.canFork = () => true;"
                  " window.__dv.options.switchable = {masked: s}; }", web.switchable())
    values = []
    for f in (2, 3, 5):
        at(page, f, 0)
        values.append(float(page.locator("#dv-inspector .dv-insp-switch input").input_value()))
    assert values == [tr.config.temperature, 0.0, 0.0] and tr.config.temperature != 0.0


# Each span the box shows whole, its box's scrollTop, the line height, the page's own scroll.
IN_BOX = """(ps) => { const box = document.querySelector('#dv-canvas .dv-text'), b = box.getBoundingClientRect();
  const whole = (p) => { const r = box.querySelector(`[data-pos="${p}"]`).getBoundingClientRect();
    return r.top >= b.top && r.bottom <= b.bottom; };
  return [ps.map(whole), box.scrollTop, parseFloat(getComputedStyle(box).lineHeight), window.scrollY,
          box.scrollHeight > box.clientHeight]; }"""


def test_the_canvas_scrolls_its_own_box_to_what_the_frame_confirms(show, model):
    """On a long generation in a narrow canvas, the tokens a frame confirms are scrolled into the text box (by whole
    lines, the page itself never scrolled) by the next frame, both ways along the trace."""
    config = DecodeConfig.preset("balanced", 240, seed=3).replace(block_length=24, steps=40)  # block by block
    trace = decode(model, [PROMPT], config)[0]
    page = show(trace, frame=0)
    page.add_style_tag(content="#dv-canvas { width: 160px; }")
    confirmed = [[p for p, s in enumerate(trace.order) if s == step] for step in range(len(trace.steps))]
    late = next(s for s in range(len(confirmed)) if confirmed[s] and min(confirmed[s]) > 100)  # below the fold
    early = next(s for s in range(len(confirmed)) if confirmed[s] and max(confirmed[s]) < 30)
    for step in (late, early):
        at(page, step + 1)
        page.evaluate("() => new Promise((done) => requestAnimationFrame(() => done(true)))")  # after the page's own
        whole, top, line, page_y, overflows = page.evaluate(IN_BOX, confirmed[step])
        assert overflows and any(whole), (step, whole, top)
        assert top % line == 0 and page_y == 0
        assert (top > 0) == (step == late), top
