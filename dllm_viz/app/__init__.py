"""The Gradio playground (floor 5), by job: `handlers/` (what each event does, no Gradio), `layout/` (the
page's components and one builder per tab), `views/` (a trace as the page reads it, the few bits of
HTML the server writes, the sweep's figures, pure functions of a trace or a measurement), `strings/`
(one module per language), `web/` (the page's renderer, which draws every view of a trace); `ui` composes
them, `wiring` turns handlers into events, `serve` and `main` serve it (`dllm-viz serve`).

Imports `models`, `core`, `world`, `tasks`, `studies` and `serve` (the shared engine, in `serve` only);
importing the package imports none of its modules and loads no model.
"""
