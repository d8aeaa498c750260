"""markup.py: strings from a trace reach the page as the characters they hold, never as markup.

A shared trace file's vocabulary is whatever its author wrote (issue 33, item 3): each view that
shows a piece (the inspector's Markdown, the checker lines, the figures' labels, the canvas HTML)
is checked with a hostile vocabulary, the Markdown through a CommonMark renderer with raw HTML on
(what a permissive page would do), so a tag, an image, a link or an autolink cannot form.
"""
from __future__ import annotations

import html
import json

import pytest
from markdown_it import MarkdownIt

from dllm_viz import DecodeConfig, StepRecord, Trace, decode
from dllm_viz.app import figures, render
from dllm_viz.app.markup import html_literal, html_text, md_literal
from dllm_viz.app.world_view import generated_marks, inspector_lines
from tests.ui_model import make_text_model

HOST = "198.51.100.7"  # TEST-NET-2: never a real host
EVIL = [
    f'<img src="http://{HOST}/pixel.png">',
    f"![x](http://{HOST}/p.png)",
    f"[click](http://{HOST}/) and <http://{HOST}/auto> and www.{HOST}.example",
    "**bold** _it_ `code` \\*",
    "line one\n# heading\n    code block\n- item",
    "&lt;img src=x&gt; &amp; &#60;b&#62;",
    "'quotes\" | table | ~~strike~~ $$x$$",
]
MARKDOWN = MarkdownIt("commonmark", {"html": True})  # raw HTML passes through: the strictest reading


def rendered(md: str) -> str:
    return MARKDOWN.render(md)


def assert_no_markup(out_html: str, *, own: tuple[str, ...] = ()) -> None:
    """No tag in `out_html` but the `own` ones its template writes itself."""
    for tag in {"<img", "<a ", "<h1", "<ul", "<pre", "<code", "<strong", "<em", "<script"} - set(own):
        assert tag not in out_html, (tag, out_html)


@pytest.mark.parametrize("text", EVIL)
def test_md_literal_renders_as_exactly_its_characters_on_one_line(text):
    out = rendered(md_literal(text))
    assert_no_markup(out)
    # GitHub-flavoured renderers (Gradio's marked) also link bare URLs and www.: none is left to find.
    assert "http://" not in md_literal(text) and "www." not in md_literal(text)
    one_line = " ".join(text.splitlines())
    assert out.startswith("<p>") and html.unescape(out.removeprefix("<p>").removesuffix("</p>\n")) == one_line


@pytest.mark.parametrize("text", EVIL)
def test_html_literal_is_text_in_content_and_attributes(text):
    assert "<" not in html_literal(text) and '"' not in html_literal(text) and html.unescape(html_literal(text)) == text
    assert "<" not in html_text(text) and ">" not in html_text(text) and html.unescape(html_text(text)) == text


@pytest.fixture(scope="module")
def evil_trace() -> Trace:
    """A real decode whose vocabulary was then rewritten by a hostile author, loaded as an upload is."""
    model = make_text_model()
    trace = decode(model, ["the cat "], DecodeConfig.preset("balanced", 16, seed=3))[0]
    d = json.loads(trace.to_json())
    d["vocab"] = {k: EVIL[i % len(EVIL)] for i, k in enumerate(d["vocab"])}
    return Trace.from_json(json.dumps(d))


def test_the_inspector_explanation_shows_pieces_literally(evil_trace):
    benign = Trace.from_json(evil_trace.to_json())
    benign.vocab = {k: f"w{k}" for k in benign.vocab}
    seen = 0
    for pos in range(evil_trace.config.gen_length):
        insp = render.inspect(evil_trace, pos, len(evil_trace.steps), 1.0)
        plain = render.inspect(benign, pos, len(benign.steps), 1.0)
        assert_no_markup(rendered(insp.explanation), own=("<strong",))
        assert rendered(insp.explanation).count("<strong>") == rendered(plain.explanation).count("<strong>")
        seen += any(html.escape(" ".join(e.splitlines()), quote=False) in rendered(insp.explanation) for e in EVIL)
        assert_no_markup(render.inspector_html(insp))
    assert seen  # the hostile pieces are shown, as text


def test_the_canvas_and_player_show_pieces_as_text(evil_trace):
    for out in (render.canvas_html(evil_trace), render.canvas_html(evil_trace, 1),
                render.player_html(evil_trace, frame=1)):
        assert "<img" not in out and "<a " not in out and "&lt;img" in out


def test_figure_labels_escape_plotly_markup(evil_trace):
    figs = [figures.confidence_heatmap(evil_trace), figures.order_map(evil_trace), figures.steps_plot(evil_trace),
            figures.compare_orders(evil_trace, evil_trace)]
    labels = [str(x) for f in figs for trace in f.to_dict()["data"]
              for key in ("customdata", "text") for x in _flat(trace.get(key))]
    assert labels and not any("<" in x or ">" in x for x in (x.replace("<br>", "") for x in labels))
    assert any("&lt;img" in x for x in labels)


def _flat(value) -> list:
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return [y for x in value for y in _flat(x)]
    return [value]


def test_world_checker_lines_quote_the_traces_words_literally():
    """A trace that calls itself world-mdlm is checked, and each checker line quotes a word of it in
    Markdown: rendered, the line reads exactly as the checker wrote it (no code span, link or emphasis)."""
    pieces = ["Tom", " has", " 3", " [x](http://h/)", " *a*", " `b`", " cats", "."]
    vocab = {i + 10: p for i, p in enumerate(pieces)}
    ids, G = list(vocab), len(pieces) - 2
    rec = StepRecord(step=0, block=0, k=G, temperature=1.0, confidence=[0.5] * G, argmax=[-1] * G,
                     selected=list(range(G)), tokens=ids[2:], logprobs=[-0.5] * G)
    tr = Trace(prompt_ids=ids[:2], token_ids=ids[2:], order=[0] * G, steps=[rec], config=DecodeConfig(gen_length=G),
               model="world-mdlm", vocab=vocab, text="".join(pieces[2:]), prompt_text="".join(pieces[:2]))
    marks = generated_marks(tr)
    quoted = set()
    for pos, found in enumerate(marks):
        if not found:
            continue
        out = rendered(inspector_lines(tr, pos))
        items = out.removeprefix("<ul>\n").removesuffix("</ul>\n").splitlines()
        assert len(items) == len(found)
        for item, v in zip(items, found):
            text = item.removeprefix("<li>").removesuffix("</li>").replace(f"<strong>{v.rule}</strong>", v.rule, 1)
            assert "<" not in text and html.unescape(text) == f"checker: {v.rule}: {v.message} ({v.text!r})"
            quoted.add(v.text)
    assert quoted & {"[", "*", "`", "("}  # markup characters were among the quoted words
