"""markup.py: strings from a trace reach the page as the characters they hold, never as markup.

A shared trace file's vocabulary is whatever its author wrote (issue 33, item 3): each view that
shows a piece is checked with a hostile vocabulary: here the markup helpers; the canvas, the
inspector, the checker lines and the figures' labels, which the page draws from the trace's chunks,
in tests/test_page_js.py and tests/test_figures_js.py (`EVIL` there too), the Markdown through a
CommonMark renderer with raw HTML on (what a permissive page would do), so a tag, an image, a link or
an autolink cannot form.
"""
from __future__ import annotations

import html
import json

import pytest
from markdown_it import MarkdownIt

from dllm_viz import DecodeConfig, Trace, decode
from dllm_viz.app.views.markup import html_literal, html_text, md_literal
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


