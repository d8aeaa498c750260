"""The Gradio playground (floor 4): layout, handlers, rendering, figures, lessons, i18n, page.js.

Imports `models`, `core` and `world`, never `serve` (docs/architecture.md); importing the package
imports none of its modules and loads no model.
"""
