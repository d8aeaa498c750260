"""Colours and the page's CSS: the only place either is defined.

The canvas tints, the figures' colour scales and the page styles all read from here, so a colour
changes in one line. Confidence is coloured on a logit scale (see `confidence_position`).
"""
from __future__ import annotations

import json
import math

from dllm_viz.app.strings import LANGS, REFERENCE, t

# Confidence, low -> high: warm (unsure) to cool (sure); readable as a light tint behind dark text.
CONFIDENCE_SCALE: tuple[tuple[float, str], ...] = (
    (0.0, "#d53e4f"),
    (0.25, "#fc8d59"),
    (0.5, "#fee08b"),
    (0.75, "#99d594"),
    (1.0, "#3288bd"),
)
# Step at which a position was confirmed, early -> late (viridis stops).
ORDER_SCALE: tuple[tuple[float, str], ...] = (
    (0.0, "#440154"),
    (0.25, "#3b528b"),
    (0.5, "#21918c"),
    (0.75, "#5ec962"),
    (1.0, "#fde725"),
)
# A cached step's drift, |confidence - exact confidence|: none (white) to large (red).
DRIFT_SCALE: tuple[tuple[float, str], ...] = ((0.0, "#f8fafc"), (0.5, "#fca5a5"), (1.0, "#b91c1c"))
PALETTE: dict[str, str] = {
    "accent": "#7c3aed",  # tokens confirmed at the shown step; selections in figures
    "text": "#1f2933",
    "muted": "#6b7280",  # prompt text, secondary labels
    "card": "#ffffff",
    "border": "#e5e7eb",
    "mask_bg": "#eef0f4",
    "mask_border": "#b8bfcc",
    "ghost": "#8a93a6",
    "k": "#64748b",  # bars of k per step
    "temperature": "#e8590c",  # temperature line
    "raw": "#3288bd",  # raw probabilities (cool, like high confidence)
    "tempered": "#fc8d59",  # tempered probabilities
    "side_a": "#2563eb",  # compare: config A
    "side_b": "#ea580c",  # compare: config B
    "diverge": "#dc2626",  # compare: where the orders differ
    "cursor": "#111827",  # the shared step cursor and selected position in every view
    "hover": "#7c3aed",  # the column of the canvas token under the mouse
    "banner": "#fff7ed",  # teaching-switch banner background
    "remask": "#be123c",  # a decided token taken back to [MASK] (a revision rule: remasking, token editing)
    "edit": "#0f766e",  # a decided token rewritten to another (token editing)
}
TINT_STRENGTH = 0.6  # share of the scale colour in a token's background (the rest is white)
# Confidence is coloured on a logit scale clipped to [0.01, 0.99]: a small model's confidences
# (0.02-0.3) and a large one's (0.8-0.999) both spread over the colours, where a linear scale paints
# the first all one colour. The same mapping serves the canvas tints, the heatmaps and their keys.
CONFIDENCE_RANGE = (0.01, 0.99)
CONFIDENCE_TICKS = (0.01, 0.05, 0.2, 0.5, 0.8, 0.95, 0.99)


def _hex_to_rgb(value: str) -> tuple[int, int, int]:
    value = value.lstrip("#")
    return int(value[0:2], 16), int(value[2:4], 16), int(value[4:6], 16)


def _rgb_to_hex(rgb: tuple[float, float, float]) -> str:
    return "#" + "".join(f"{max(0, min(255, round(c))):02x}" for c in rgb)


def scale_color(scale: tuple[tuple[float, str], ...], x: float) -> str:
    """Colour of `x` in [0, 1] on a stop scale, linearly interpolated in RGB; NaN -> the low end."""
    x = 0.0 if math.isnan(x) else min(1.0, max(0.0, x))
    for (x0, c0), (x1, c1) in zip(scale, scale[1:]):
        if x <= x1:
            w = (x - x0) / (x1 - x0) if x1 > x0 else 0.0
            a, b = _hex_to_rgb(c0), _hex_to_rgb(c1)
            return _rgb_to_hex(tuple(p + w * (q - p) for p, q in zip(a, b)))
    return scale[-1][1]


def _logit(p: float) -> float:
    return math.log(p / (1 - p))


def confidence_position(confidence: float) -> float:
    """Where a confidence sits on the colour scale, in [0, 1] (logit scale over CONFIDENCE_RANGE); NaN stays NaN."""
    if math.isnan(confidence):
        return confidence
    lo, hi = CONFIDENCE_RANGE
    c = min(hi, max(lo, confidence))
    return (_logit(c) - _logit(lo)) / (_logit(hi) - _logit(lo))


def scale_tint(x: float) -> str:
    """The colour at position `x` of the confidence scale, mixed with white as behind a token."""
    rgb = _hex_to_rgb(scale_color(CONFIDENCE_SCALE, x))
    return _rgb_to_hex(tuple(TINT_STRENGTH * c + (1 - TINT_STRENGTH) * 255 for c in rgb))


def tint(confidence: float) -> str:
    """Background of a confirmed token: its confidence colour mixed with white."""
    return scale_tint(confidence_position(confidence))


def plotly_scale(scale: tuple[tuple[float, str], ...]) -> list[list[float | str]]:
    return [[x, c] for x, c in scale]


# The canvas text's lines are LINE_PX high and its box a whole number of them (7; 5 on a phone), and
# page.js scrolls it by whole lines: no line is ever cut at the box's top or bottom.
LINE_PX = 32
CANVAS_LINES, PHONE_LINES = 7, 5
CANVAS_HEIGHT_PX = CANVAS_LINES * LINE_PX  # fixed height of the canvas text: playing never moves what is below it
MONO = "ui-monospace, SFMono-Regular, Menlo, Consolas, monospace"

# The whole page's CSS (Gradio 6 takes it in `launch()`): the canvas, the player, the inspector,
# facts, the views' cursor overlays, the walkthrough, and the narrow-screen layout.
PAGE_CSS = f"""
.gradio-container {{ max-width: 1500px !important; }}
footer {{ display: none !important; }}  /* Gradio's own, in English: the page draws its own (#dv-footer) */
#dv-footer {{ font-size: 12px; color: {PALETTE['muted']}; text-align: center; }}
#dv-header h1 {{ margin-bottom: 0.2em; }}
#dv-header-text {{ gap: 0 !important; }}  /* the title and its subtitle read as one block, as one Markdown did */
#dv-presets button {{ min-width: 0; }}
/* A canvas knob's "auto" switch (layout/canvas.py) as wide as its label: Gradio's form grew it to half the row, and
   the slider's label beside its number box was left a column of one character in Chinese (which breaks anywhere). */
.dv-auto {{ flex: 0 0 auto !important; width: auto !important; min-width: 0 !important; }}
/* The lesson buttons on a grid of equal cells, as many to a row as fit (two on a phone): in one row, at 390 px
   twelve of them were squeezed into columns a few letters wide and their labels ran over each other. */
.dv-lesson-buttons {{ display: grid !important; grid-template-columns: repeat(auto-fill, minmax(150px, 1fr));
  gap: 8px; }}
.dv-lesson-buttons button {{ min-width: 0 !important; width: auto !important; align-self: stretch !important; }}
.dv-canvas {{ background: {PALETTE['card']}; color: {PALETTE['text']}; border-radius: 10px;
  padding: 12px 16px; border: 1px solid {PALETTE['border']}; font-size: 15px; }}
/* a Compare run in flight (page.js): dim once, after 0.3 s; no animation (it would cost the CPU the decode needs) */
.dv-busy .dv-canvas {{ opacity: 0.45; transition: opacity 0s linear 0.3s; }}
.dv-status {{ font-size: 13px; color: {PALETTE['muted']}; margin-bottom: 8px; min-height: 1.4em; }}
.dv-text {{ font-family: {MONO}; line-height: {LINE_PX}px; white-space: pre-wrap; word-break: break-word; }}
.dv-player .dv-text {{ height: {CANVAS_HEIGHT_PX}px; overflow-y: auto; }}
.dv-prompt {{ color: {PALETTE['muted']}; }}
.dv-tok {{ border-radius: 4px; padding: 2px 0; cursor: pointer; }}
.dv-new {{ outline: 2px solid {PALETTE['accent']}; outline-offset: 0; font-weight: 600; }}
.dv-pad {{ opacity: 0.35; font-style: italic; }}
.dv-mask {{ background: {PALETTE['mask_bg']}; border: 1px dashed {PALETTE['mask_border']};
  color: {PALETTE['ghost']}; opacity: 0.75; font-style: italic; border-radius: 4px; padding: 1px 0;
  cursor: pointer; }}
/* Compare: a token that differs from the other side's at the end (dv-diff), at the step on show (dv-diff-step) */
.dv-diff, .dv-diff-step {{ text-decoration: underline wavy {PALETTE['diverge']}; }}
.dv-pair {{ margin: 4px 0 2px; }}
/* the animation's file box shows once there is a file to save (an empty File is a tall drop area) */
#dv-anim-file:not(:has(a)) {{ display: none; }}
.dv-bad {{ box-shadow: inset 0 -3px 0 {PALETTE['diverge']}; }}
/* a revised trace (confirmations taken back or rewritten): a rewritten token, a token taken back at the shown step
   (the heatmap's marks) */
.dv-edited {{ text-decoration: underline double {PALETTE['edit']}; }}
.dv-edited::before {{ content: "◇"; color: {PALETTE['edit']}; font-size: 0.7em; font-style: normal; }}
.dv-remasked {{ border-color: {PALETTE['remask']}; border-style: solid; opacity: 1; color: {PALETTE['text']};
  text-decoration: line-through 2px {PALETTE['remask']}; }}  /* the token taken back, struck through */
.dv-remasked::before {{ content: "×"; color: {PALETTE['remask']}; font-style: normal; }}
/* positions that move (insert/delete): a mask a step opened, a token it moved */
.dv-opened {{ border-color: {PALETTE['edit']}; border-style: dashed; }}
.dv-moved::before {{ content: "↔"; color: {PALETTE['edit']}; font-size: 0.7em; font-style: normal; }}
/* a renoising canvas (never masked): noise, an accepted proposal, a renoised position that lost its token */
.dv-rn-noise {{ font-style: italic; }}
.dv-rn-accepted {{ background: {PALETTE['mask_bg']}; border: 1px solid {PALETTE['accent']}; border-radius: 4px; }}
.dv-rn-lost {{ border-color: {PALETTE['remask']}; border-style: solid; }}
.dv-insp-history {{ margin: 4px 0 0 1.2em; padding: 0; font-size: 13px; }}
/* a 4x4 task grid (Latin square, sudoku): the puzzle's cells, then the answer's; a gap between 2x2 boxes */
.dv-grid {{ display: inline-grid; grid-template-columns: repeat(4, 2.2em); gap: 3px; margin: 0 10px;
  vertical-align: middle; white-space: normal; text-align: center; line-height: 1.9; }}
.dv-grid > span {{ border: 1px solid {PALETTE['border']}; border-radius: 4px; }}
.dv-grid > span:nth-child(4n+2) {{ margin-right: 5px; }}
.dv-grid > span:nth-child(n+5):nth-child(-n+8) {{ margin-bottom: 5px; }}
.dv-grid > span.dv-bad {{ box-shadow: inset 0 0 0 2px {PALETTE['diverge']}; }}
.dv-sel {{ box-shadow: 0 0 0 2px {PALETTE['cursor']}; }}
.dv-controls {{ display: flex; flex-wrap: wrap; gap: 6px; align-items: center; margin-bottom: 8px; }}
.dv-controls button {{ border: 1px solid {PALETTE['border']}; background: {PALETTE['mask_bg']}; border-radius: 6px;
  padding: 2px 10px; font-size: 14px; min-width: 34px; cursor: pointer; color: {PALETTE['text']}; }}
.dv-controls button.dv-play {{ background: {PALETTE['accent']}; color: white; min-width: 86px; }}
.dv-controls input[type=range] {{ flex: 1 1 160px; min-width: 120px; accent-color: {PALETTE['accent']}; }}
.dv-controls select {{ font-size: 13px; border-radius: 6px; height: 30px; padding: 2px 24px 2px 8px !important;
  width: auto; }}
.dv-legend {{ display: flex; flex-wrap: wrap; gap: 14px; align-items: center; font-size: 12px;
  color: {PALETTE['muted']}; margin-top: 10px; }}
.dv-legend .dv-bar {{ display: inline-block; position: relative; width: 220px; height: 12px; border-radius: 3px;
  vertical-align: middle; margin: 0 6px 12px 6px; }}
.dv-legend .dv-bar i {{ position: absolute; top: 13px; transform: translateX(-50%); font-style: normal;
  font-size: 10px; color: {PALETTE['muted']}; }}
.dv-insp {{ background: {PALETTE['card']}; border: 1px solid {PALETTE['border']}; border-radius: 10px;
  padding: 10px 14px; }}
.dv-insp h4 {{ margin: 0 0 8px 0; font-size: 14px; color: {PALETTE['text']}; }}
.dv-insp-row {{ display: grid; grid-template-columns: 90px 1fr; gap: 8px; align-items: center; margin: 4px 0; }}
.dv-insp-row.dv-insp-forks {{ grid-template-columns: 90px 1fr auto; }}
.dv-insp-fork {{ font-size: 11px; line-height: 14px; padding: 1px 6px; border-radius: 6px; cursor: pointer;
  border: 1px solid {PALETTE['border']}; background: {PALETTE['card']}; color: {PALETTE['text']}; }}
.dv-insp-fork:hover {{ border-color: {PALETTE['tempered']}; }}
.dv-insp-takeback {{ margin: 6px 0 2px 0; }}
/* a fork with one setting switched from the canvas on show: the knob, its value, the button (inspector.js) */
.dv-insp-switch {{ display: flex; flex-wrap: wrap; align-items: center; gap: 6px; margin: 8px 0 2px 0;
  font-size: 12px; }}
.dv-insp-switch select, .dv-insp-switch input {{ font-size: 12px; padding: 1px 4px; border-radius: 6px; min-width: 0;
  border: 1px solid {PALETTE['border']}; background: {PALETTE['card']}; color: {PALETTE['text']}; }}
.dv-insp-switch select {{ width: auto; max-width: 13em; }}
.dv-insp-switch input {{ width: 7em; font-family: {MONO}; }}
.dv-insp-tok {{ font-family: {MONO}; font-size: 13px;
  overflow: hidden; text-overflow: ellipsis; white-space: pre; color: {PALETTE['text']}; }}
.dv-insp-line {{ display: flex; align-items: center; gap: 6px; margin: 2px 0; font-size: 11px; line-height: 12px;
  color: {PALETTE['muted']}; white-space: nowrap; }}
.dv-insp-line i {{ display: block; height: 11px; border-radius: 3px; }}
.dv-insp-raw {{ background: {PALETTE['raw']}; }}
.dv-insp-temp {{ background: {PALETTE['tempered']}; }}
.dv-insp-key {{ font-size: 12px; color: {PALETTE['muted']}; margin-top: 6px; }}
.dv-insp-key i {{ display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin: 0 4px 0 10px;
  vertical-align: middle; }}
.dv-facts {{ display: grid; grid-template-columns: repeat(auto-fill, minmax(118px, 1fr)); gap: 8px; }}
.dv-fact {{ background: {PALETTE['card']}; border: 1px solid {PALETTE['border']}; border-radius: 8px;
  padding: 6px 10px; }}
.dv-fact b {{ display: block; font-size: 18px; color: {PALETTE['text']}; }}
.dv-fact span {{ font-size: 12px; color: {PALETTE['muted']}; }}
.dv-fact-wide {{ grid-column: 1 / -1; }}
.dv-fact-wide b {{ font-size: 14px; }}
.dv-side {{ display: inline-block; font-weight: 700; color: white; border-radius: 4px; padding: 0 6px;
  margin-right: 6px; }}
.dv-side-a {{ background: {PALETTE['side_a']}; }}
.dv-side-b {{ background: {PALETTE['side_b']}; }}
.dv-banner {{ background: {PALETTE['banner']}; border-left: 4px solid {PALETTE['temperature']}; padding: 6px 10px;
  border-radius: 6px; font-size: 14px; }}
/* a source, in the line */
#dv-banner code {{ display: inline; white-space: normal; padding: 0 3px; font-size: 12px; }}
.dv-badge {{ display: inline-block; border-radius: 10px; padding: 1px 10px; font-size: 13px;
  background: {PALETTE['mask_bg']}; color: {PALETTE['text']}; }}
.dv-help summary {{ cursor: pointer; display: inline-block; width: 22px; height: 22px; border-radius: 11px;
  text-align: center; line-height: 22px; font-weight: 700; background: {PALETTE['mask_bg']}; color: {PALETTE['accent']};
  list-style: none; }}
.dv-help summary::-webkit-details-marker {{ display: none; }}
.dv-help[open] {{ background: {PALETTE['card']}; border: 1px solid {PALETTE['border']}; border-radius: 8px;
  padding: 6px 10px; font-size: 13px; }}
#dv-prompt-row {{ align-items: flex-end; }}
#dv-prompt-row #dv-run {{ margin-bottom: 10px; }}
.dv-link {{ border: 1px solid {PALETTE['border']}; background: {PALETTE['card']}; color: {PALETTE['accent']};
  border-radius: 6px; padding: 2px 10px; font-size: 13px; cursor: pointer; white-space: nowrap; }}
.dv-link-done {{ font-size: 11px; color: {PALETTE['muted']}; }}
.dv-chips {{ display: flex; flex-wrap: wrap; gap: 6px; align-items: center; font-size: 13px;
  color: {PALETTE['muted']}; }}
.dv-chip {{ border: 1px solid {PALETTE['border']}; background: {PALETTE['mask_bg']}; color: {PALETTE['text']};
  border-radius: 12px; padding: 1px 10px; font-family: {MONO}; font-size: 12px; cursor: pointer; }}
.dv-chip:hover {{ border-color: {PALETTE['accent']}; color: {PALETTE['accent']}; }}
.dv-progress {{ flex: 1 1 160px; height: 8px; border-radius: 4px; background: {PALETTE['mask_bg']}; overflow: hidden; }}
.dv-progress i {{ display: block; height: 100%; width: 0; background: {PALETTE['accent']}; }}
.dv-controls button.dv-stop {{ background: {PALETTE['diverge']}; color: white; }}
/* page.js fills the key and clicks the button: Stop for the canvas's (the Playground's, a Compare side's), the
   inspector's fork, a fork's banner link */
#dv-stop, #dv-stop-key, #dv-cmp-stop, #dv-cmp-stop-key, #dv-fork, #dv-fork-key,
#dv-fork-pair {{ display: none !important; }}
.dv-insp-text {{ font-size: 14px; }}
.dv-insp-text p {{ margin: 6px 0; }}
.dv-insp-rules {{ margin: 4px 0; padding-left: 18px; }}
.dv-ksteps {{ font-family: {MONO}; font-size: 12px; color: {PALETTE['muted']}; }}
.dv-overlay {{ position: absolute; pointer-events: none; z-index: 5; }}
.dv-overlay .dv-ol-cursor {{ position: absolute; border: 2px solid {PALETTE['cursor']}; box-sizing: border-box; }}
.dv-overlay .dv-ol-hover {{ position: absolute; background: {PALETTE['hover']}; opacity: 0.18; }}
.dv-overlay .dv-ol-future {{ position: absolute; background: white; opacity: 0.62; }}
.dv-tour {{ position: fixed; z-index: 1000; max-width: 340px; background: {PALETTE['text']}; color: white;
  border-radius: 10px; padding: 12px 14px; font-size: 14px; box-shadow: 0 8px 30px rgba(0,0,0,0.3); }}
.dv-tour button {{ margin: 8px 6px 0 0; border-radius: 6px; padding: 2px 10px; border: 0; cursor: pointer; }}
.dv-tour-ring {{ position: fixed; z-index: 999; border: 3px solid {PALETTE['accent']}; border-radius: 10px;
  pointer-events: none; box-shadow: 0 0 0 4000px rgba(17,24,39,0.25); }}
@media (max-width: 640px) {{
  #dv-header {{ flex-direction: column !important; }}
  /* One column, interleaved: the prompt, the canvas, the first knobs, the figures, then the rest. */
  #dv-main {{ flex-direction: column !important; }}
  #dv-knobs, #dv-views {{ display: contents !important; }}
  #dv-knobs-top {{ order: 1; }} #dv-views-canvas {{ order: 2; }} #dv-knobs-main {{ order: 3; }}
  #dv-views-figs {{ order: 4; }} #dv-views-task {{ order: 5; }} #dv-views-facts {{ order: 6; }}
  #dv-knobs-more {{ order: 7; }}
  #dv-main > * {{ min-width: 0 !important; width: 100% !important; }}
  /* Compare's two heatmaps and two per-step figures one above the other: side by side, their margins
     (colour bar, axis titles) left them no plot area at 390 px */
  .dv-cmp-figs {{ flex-direction: column !important; }}
  .dv-cmp-figs > * {{ min-width: 0 !important; width: 100% !important; }}
  #dv-header h1 {{ font-size: 1.45em; }}
  .dv-chips > * {{ max-width: 100%; overflow-wrap: anywhere; }}  /* they wrap: none is cut at the edge */
  /* the four tabs side by side, none in Gradio's "..." menu */
  #dv-root-tabs [role=tab] {{ padding: 4px 5px !important; font-size: 12px !important; min-width: 0 !important; }}
  /* the scenes after the first knobs to try (gen length, temperature) */
  #dv-scenes-label, #dv-scenes {{ order: 2; }}
  /* A preset group is one row that scrolls sideways, however many presets the rule plug-ins bring. */
  .dv-presets {{ flex-wrap: nowrap !important; overflow-x: auto; }}
  .dv-presets > * {{ flex: 0 0 auto !important; }}
  /* but the canvas presets (two, with long names) wrap: sideways, the second was cut at the edge */
  #dv-presets-canvas {{ flex-wrap: wrap !important; overflow-x: visible; }}
  #dv-presets-canvas > * {{ max-width: 100%; white-space: normal; }}
  .dv-auto {{ flex-basis: 100% !important; }}  /* a canvas knob's "auto" switch under its slider: the slider whole */
  #dv-header-side {{ flex-direction: row !important; flex-wrap: wrap; align-items: center; gap: 6px; }}
  #dv-header-side > * {{ flex: 1 1 auto; min-width: 0 !important; }}
  .dv-legend .dv-bar i {{ display: none; }}  /* the ticks overlap at this width; low / high remain */
  /* the buttons on one row, the scrubber, the speed and the tour below */
  .dv-controls .dv-scrub, .dv-controls .dv-speed, .dv-controls .dv-tour-start {{ order: 2; }}
  .dv-controls input[type=range] {{ flex: 1 1 90px; min-width: 80px; }}
  .dv-legend .dv-bar {{ margin-bottom: 0; }}
  .dv-help-box {{ margin: -6px 0 !important; }}
  #dv-header p {{ font-size: 13px; line-height: 1.45; }}
  .dv-player .dv-text {{ height: {PHONE_LINES * LINE_PX}px; }}
  .dv-legend {{ gap: 8px; font-size: 11px; }}
  .modebar-container {{ display: none !important; }}
  .dv-legend .dv-bar {{ width: 140px; }}
  .dv-tour {{ left: 8px !important; right: 8px; max-width: none; }}
}}
"""


def toast_heading_css() -> str:
    """CSS heading the page's error toasts in the page's language. Gradio's toast heads every message
    with its type, "Error", in English (a gr.Error's `title` reaches its modal, not its toast); in another
    language (page.js marks it on the root element: `data-dv-lang`) that word gives way to the language's own."""
    rules = []
    for lang in LANGS:
        if lang != REFERENCE:
            shown = f'html[data-dv-lang="{lang}"] .toast-title.error'
            heading = json.dumps(t("err_title", lang), ensure_ascii=False)  # a CSS string: UTF-8, quotes escaped
            rules.append(f"{shown} {{ font-size: 0; }}\n"
                         f"{shown}::before {{ content: {heading}; font-size: var(--text-lg); }}")
    return "\n".join(rules)
