"""Text that came from outside (a trace's vocabulary, a prompt, a model's pieces) made literal for the page.

A trace file is shared data: its vocabulary pieces, prompt text and model name are whatever its
author wrote. Wherever such a string reaches markup it must read as the characters it holds, never
as markup, or a shared trace becomes a tracking pixel (an `img` tag pointing at another host is kept
by Gradio's sanitizer and fetched by every viewer's browser) or a link in disguise.

- HTML (`gr.HTML`, attributes): `html_literal`; element content read as text elsewhere too (Gradio's
  error toasts render their message as HTML, API clients read it as text): `html_text`.
- Markdown (`gr.Markdown`): `md_literal` backslash-escapes every ASCII punctuation character
  (CommonMark allows that for each of them), so no tag, image, link, autolink (`http\\://`,
  `www\\.`), emphasis or heading can form, and folds line breaks into spaces so no new block
  (a heading, a list, a code block) starts inside it.
- Plotly labels (hover text, cell text): `html_literal` too; plotly.js splits its pseudo-HTML tags
  (`b`, `a href`, ...) first and decodes entities only inside text, so an escaped tag shows as text.
"""
from __future__ import annotations

import html
import re

_MD_PUNCTUATION = re.compile(r"""([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~])""")


def html_literal(text: object) -> str:
    """`text` as HTML that shows exactly its characters (quotes escaped too: safe in attributes)."""
    return html.escape(str(text), quote=True)


def html_text(text: object) -> str:
    """`text` as HTML element content that shows exactly its characters: only `&`, `<`, `>` escaped,
    so a message read as plain text elsewhere (an API client's error) keeps its quotes."""
    return html.escape(str(text), quote=False)


def md_literal(text: object) -> str:
    """`text` as Markdown that shows exactly its characters, on one line."""
    one_line = str(text).replace("\r\n", " ").replace("\r", " ").replace("\n", " ")
    return _MD_PUNCTUATION.sub(r"\\\1", one_line)
