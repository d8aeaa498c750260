"""HTML of a Trace: the canvas (with its in-browser player), the inspector, run facts, help notes,
and the page's few other bits of markup (badges, small notes). Pure; the only module of the
playground that writes HTML.

Everything here is a function of a `Trace` (and a few UI values such as the frame or the
temperature slider); nothing calls a model, so the playground can replay an uploaded trace.
Reading the trace (who was confirmed when, divergence, tempered shares) lives in
`core.analysis`; colours and CSS in `palette`; the page's one script in `page.js`.

Frames: frame f (0 <= f <= number of steps) is the canvas after f steps. Steps are shown 1-based
("after step 3" = three forward passes done); trace records are 0-based, so record s is "step s+1".
"""
from __future__ import annotations

import functools
import html
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from dllm_viz.app.views import cache as cache_view, moves as moves_view, revision as revision_view, task as task_view
from dllm_viz.app.views import world as world_view
from dllm_viz.app.strings import t
from dllm_viz.app.links import link_fields
from dllm_viz.app.views.palette import CONFIDENCE_SCALE, CONFIDENCE_TICKS, confidence_position, scale_tint, tint
from dllm_viz.core.analysis import P_FLOOR, confirmations, divergence, frame_count, piece, prompt_text
from dllm_viz.core.trace import Trace
from dllm_viz.world.language import RULES

# Inspector bars: a share s is drawn BAR_SCALE * s percent wide (the label fits beside it), never
# narrower than MIN_BAR percent. page.js reads both from the player's data ("bars").
BAR_SCALE = 70.0
MIN_BAR = 0.5
SPEEDS = (0.5, 1.0, 2.0, 4.0)  # playback speed choices; 1x = FRAME_MS per frame
FRAME_MS = 450
# Strings page.js shows: i18n keys shipped with each canvas so the page speaks the page's language.
CANVAS_STRINGS = ("step_of", "start", "after_step", "finished", "tip_confirmed", "tip_masked",
                  *(f"rule_{rule}" for rule in RULES))
PLAYER_STRINGS = (*CANVAS_STRINGS, "play", "pause", "insp_title", "insp_confirmed", "insp_waiting", "insp_other_block",
                  "insp_before", "insp_threshold_above", "insp_floor", "insp_tempered_note", "insp_note_raw",
                  "insp_note_sampled_raw", "insp_note_polluted", "insp_no_candidates", "raw", "tempered", "insp_checker")
TOUR_STEPS = ("tour_canvas", "tour_player", "tour_heatmap", "tour_order", "tour_knobs", "tour_inspector")
TOUR_TARGETS = ("#dv-canvas .dv-text", "#dv-canvas .dv-controls", "#dv-heatmap", "#dv-order", "#dv-knobs-main",
                "#dv-inspector")


def _fmt(x: float | None, digits: int = 2) -> str:
    return "–" if x is None or math.isnan(x) else f"{x:.{digits}f}"


def _r3(x: float) -> float | None:
    return None if math.isnan(x) else round(x, 3)


# ----- canvas ----------------------------------------------------------------------------------
# The canvas is drawn in the page (page.js `paintCanvas`), from the data written here: one renderer
# for every canvas (the player, a live decode, the Compare sides), and the cursor, scrubbing, hover
# and the inspector need no server round trip.
def _strings(keys: Sequence[str], lang: str) -> dict[str, str]:
    return {key: t(key, lang) for key in keys}


def _index(pieces: dict[str, int], text: str) -> int:
    """The index of a token piece in the data's `pieces` list (added at the end when new)."""
    return pieces.setdefault(text, len(pieces))


def _rules(trace: Trace) -> list[str]:
    """Per position, the checker rule its token breaks: the task checker's for a task prompt, else the world's."""
    return task_view.token_rules(trace) if task_view.task_of(trace) else world_view.token_rules(trace)


def _checker_lines(trace: Trace) -> list[list[list[str]]]:
    """Per position, what the inspector says the checker found there: [rule, message, text] each
    (the world model's violations, or a task prompt's broken rule at its cells)."""
    verdict = task_view.verdict(trace) if task_view.task_of(trace) else None
    if verdict is not None:
        cells = set(verdict.cells)
        return [[[verdict.rule, verdict.message, ""]] if pos in cells else [] for pos in range(len(trace.token_ids))]
    return [[[v.rule, v.message, v.text] for v in found] for found in world_view.generated_marks(trace)]


def _canvas(trace: Trace, lang: str, diff: Sequence[int], pieces: dict[str, int]) -> dict[str, Any]:
    done = confirmations(trace)
    # A revised trace (issue 28): each position's decisions ("ev"), which the page replays instead of the order.
    revised = revision_view.canvas_events(trace, functools.partial(_index, pieces), lang) or {}
    cells = task_view.grid_cells(trace)  # a Latin square or sudoku: drawn as two 4x4 grids
    return {
        "n": frame_count(trace), "G": trace.config.gen_length, "prompt": prompt_text(trace),
        "end": trace.text_end if trace.text_end is not None else -1,  # first end padding position; -1: none
        "order": [c.step if c else -1 for c in done],
        "tok": [_index(pieces, piece(trace, c.token)) if c else -1 for c in done],
        "tint": [tint(c.confidence) if c else "" for c in done],
        "conf": [_r3(c.confidence) if c else None for c in done],
        "q": [round(math.exp(c.logprob), 3) if c else None for c in done],
        "k": [rec.k for rec in trace.steps],
        "bad": _rules(trace),  # checker rules broken per position ("" = none; world model, task prompts)
        # A grid task: the puzzle's 16 cells ("_" empty), shown beside the answer's grid; else null.
        "grid": list(cells) if cells is not None else None,
        "diff": sorted(diff),
        "t": _strings((*CANVAS_STRINGS, *(revision_view.STRINGS if revised else ())), lang),
    } | revised


def canvas_data(trace: Trace, *, lang: str, diff: Sequence[int] = ()) -> dict[str, Any]:
    """What page.js needs to draw the finished canvas: per position its confirmation (step, token
    piece, tint, confidence, raw p of the token), the world checker's rules it breaks, the positions
    to underline (`diff`), and the strings.

    Steps in the data are 0-based records; the page shows them 1-based. Token pieces are listed
    once (`pieces`) and referred to by index.
    """
    pieces: dict[str, int] = {}
    data = _canvas(trace, lang, diff, pieces)
    return data | {"pieces": list(pieces)}


def _ranks(trace: Trace) -> list[list[int]]:
    """Per step and position: the rank (1 = first) by the confidence the schedule ranked by, among
    the masked positions of the step's block, ties to the lower position (as `schedules.choose`);
    0 for a position not in the running."""
    cfg, out = trace.config, []
    for rec in trace.steps:
        eligible = [p for p in range(cfg.gen_length)
                    if p // cfg.block_size == rec.block and not math.isnan(rec.confidence[p])]
        row = [0] * cfg.gen_length
        for r, p in enumerate(sorted(eligible, key=lambda p: (-rec.confidence[p], p))):
            row[p] = r + 1
        out.append(row)
    return out


def _why(trace: Trace) -> list[str]:
    """Per position, why the threshold schedule confirmed it: "above" (confidence >= threshold) or
    "floor" (the min_k floor filled the step); "" for other schedules and unconfirmed positions."""
    cfg = trace.config
    if cfg.schedule != "threshold":
        return [""] * cfg.gen_length
    return ["" if c is None else revision_view.threshold_reason(cfg, c.confidence) for c in confirmations(trace)]


def player_data(trace: Trace, *, lang: str, order_width: int) -> dict[str, Any]:
    """`canvas_data` and what page.js needs to replay every frame and inspect any position at any
    frame in the browser: per step k, block, the masked positions' argmax guesses, confidences and
    ranks, and their stored top candidates; the schedule's facts; the link that reopens this trace."""
    pieces: dict[str, int] = {}
    data = _canvas(trace, lang, (), pieces)
    ix = functools.partial(_index, pieces)
    cfg, G = trace.config, trace.config.gen_length
    empty: list[list[Any]] = [[] for _ in range(G)]
    data |= {
        "width": order_width, "bs": cfg.block_size, "block": [rec.block for rec in trace.steps],
        "guess": [[ix(piece(trace, a)) if a >= 0 else -1 for a in rec.argmax] for rec in trace.steps],
        "gconf": [[_r3(c) for c in rec.confidence] for rec in trace.steps],
        "rank": _ranks(trace), "why": _why(trace),
        "cand": [[[ix(piece(trace, i)) for i in row] for row in (rec.candidates or empty)] for rec in trace.steps],
        "cprob": [[[round(p, 5) for p in row] for row in (rec.candidate_probs or empty)] for rec in trace.steps],
        "measure": cfg.confidence + ("" if cfg.confidence_from == "raw" else f" ({cfg.confidence_from})"),
        "src": cfg.confidence_from, "threshold": cfg.threshold, "temperature": cfg.temperature,
        "rules": _checker_lines(trace),
        "task": task_view.task_of(trace) is not None,  # a task prompt: page.js shows its family's curves
        "link": link_fields(trace),  # what page.js writes into a link that reopens this view
        "bars": [BAR_SCALE, MIN_BAR, P_FLOOR],
        "t": _strings((*PLAYER_STRINGS, *(revision_view.STRINGS if "ev" in data else ())), lang),
    }
    if trace.moved:  # positions move (an insert/delete rule): each frame's lineages, for a renderer that follows them
        data["moves"] = moves_view.player_moves(trace, lang)
    return data | {"pieces": list(pieces)}


def _finish(data: dict[str, Any]) -> str:
    """The data as the value of an HTML attribute."""
    return html.escape(json.dumps(data, ensure_ascii=False, separators=(",", ":")))


def _controls(n: int, f: int, lang: str) -> str:
    speeds = "".join(f'<option value="{s:g}"{" selected" if s == 1.0 else ""}>{s:g}×</option>' for s in SPEEDS)
    b = lambda cls, label, key: (f'<button type="button" class="{cls}" title="{html.escape(t(key, lang))}" '  # noqa: E731
                                 f'aria-label="{html.escape(t(key, lang))}">{label}</button>')
    return (
        '<div class="dv-controls">'
        + b("dv-first", "«", "ctl_first") + b("dv-prev", "◀", "ctl_prev")
        + f'<button type="button" class="dv-play">{html.escape(t("play", lang))}</button>'
        + b("dv-next", "▶", "ctl_next") + b("dv-last", "»", "ctl_last")
        + f'<input type="range" class="dv-scrub" min="0" max="{n}" step="1" value="{f}" '
          f'aria-label="{html.escape(t("frame", lang))}">'
        + f'<select class="dv-speed" title="{html.escape(t("ctl_speed", lang))}">{speeds}</select>'
        + b("dv-tour-start", html.escape(t("tour_button", lang)), "tour_start")  # the page's one "?" is help
        + "</div>"
    )


def player_html(trace: Trace, *, lang: str = "en", frame: int | None = None, selected: int | None = None,
                order_width: int = 8, autoplay: bool = False) -> str:
    """The playground's canvas: playback controls, the canvas at `frame` (None = the end), the key,
    and the data page.js draws every frame from (no server round trip per frame).

    `selected`: the position to select; None keeps the page's selection (clamped to this trace).
    """
    n = frame_count(trace)
    f = n if frame is None else max(0, min(int(frame), n))
    data = _finish(player_data(trace, lang=lang, order_width=order_width))
    tour = json.dumps([{"target": sel, "text": t(key, lang)} for sel, key in zip(TOUR_TARGETS, TOUR_STEPS)],
                      ensure_ascii=False)
    tour_ui = json.dumps({k: t(k, lang) for k in ("tour_next", "tour_skip", "tour_done")}, ensure_ascii=False)
    sel = f' data-selected="{int(selected)}"' if selected is not None else ""
    key = legend_html(lang, end_padding=trace.text_end is not None, checker=world_view.is_checked(trace),
                      revised=trace.revised)
    return (
        f'<div class="dv-canvas dv-player" data-frame="{f}"{sel} data-frame-ms="{FRAME_MS}" '
        f'data-autoplay="{int(autoplay)}" data-trace="{data}" '
        f'data-tour="{html.escape(tour)}" data-tour-ui="{html.escape(tour_ui)}">'
        f'{_controls(n, f, lang)}<div class="dv-status"></div><div class="dv-text"></div>'
        f"{key}</div>"
    )


def _sample(cls: str, key: str, lang: str) -> str:
    """A key entry: a sample word drawn as the canvas draws `cls`, then what it means (i18n `key`)."""
    return (f'<span><span class="{cls}" style="background:{tint(0.9)}">&nbsp;{html.escape(t("legend_tok", lang))}'
            f'&nbsp;</span> {html.escape(t(key, lang))}</span>')


def legend_html(lang: str = "en", *, end_padding: bool = False, checker: bool = False, revised: bool = False) -> str:
    """The key to the canvas tints; `end_padding` adds the entry for the dimmed tail after end-of-text,
    `checker` the world checker's underline, `revised` the marks of a token rewritten or taken back."""
    pad = _sample("dv-tok dv-pad", "legend_pad", lang) if end_padding else ""
    pad += _sample("dv-tok dv-bad", "legend_bad", lang) if checker else ""
    if revised:
        pad += _sample("dv-tok dv-edited", "legend_edited", lang)
        pad += _sample("dv-mask dv-remasked", "legend_remasked", lang)
    stops = ", ".join(f"{scale_tint(x)} {round(100 * x)}%" for x, _ in CONFIDENCE_SCALE)
    ticks = "".join(
        f'<i style="left:{100 * confidence_position(c):.1f}%">{c:g}</i>' for c in CONFIDENCE_TICKS
    )
    return (
        '<div class="dv-legend">'
        f'<span>{html.escape(t("legend_conf", lang))}: {html.escape(t("legend_low", lang))}'
        f'<span class="dv-bar" style="background: linear-gradient(90deg, {stops})">{ticks}</span>'
        f'{html.escape(t("legend_high", lang))}</span>'
        f'<span><span class="dv-tok dv-new" style="background:{tint(0.9)}">&nbsp;{html.escape(t("legend_tok", lang))}&nbsp;</span> '
        f'{html.escape(t("legend_new", lang))}</span>'
        f'<span><span class="dv-mask">&nbsp;{html.escape(t("legend_guess", lang))}&nbsp;</span> {html.escape(t("legend_mask", lang))}</span>'
        f'<span><span class="dv-prompt">{html.escape(t("legend_prompt_sample", lang))}</span> {html.escape(t("legend_prompt", lang))}</span>'
        f"{pad}</div>"
    )


def help_html(key: str, lang: str = "en") -> str:
    """A "?" that opens how to read the view next to it."""
    return f'<details class="dv-help"><summary title="?">?</summary>{html.escape(t(key, lang))}</details>'


def side_label(side: str, lang: str = "en") -> str:
    """The A / B badge of the Compare tab."""
    return f'<span class="dv-side dv-side-{side[-1]}">{html.escape(t(side, lang))}</span>'


def badge_html(text: str) -> str:
    """The active preset's badge under the preset buttons."""
    return f'<span class="dv-badge">{html.escape(text)}</span>'


def k_steps_html(text: str) -> str:
    """The line under the schedule sliders that lists the k of each step."""
    return f'<span class="dv-ksteps">{text}</span>'


def small_md(text: str) -> str:
    """A note in small print, inside a Markdown component."""
    return f"<small>{text}</small>"


def model_prompts_html(prompts: Sequence[str], lang: str = "en") -> str:
    """The picked model's example prompts as buttons: a click puts one in the prompt box and runs it
    (page.js)."""
    if not prompts:
        return ""
    chips = "".join(f'<button type="button" class="dv-chip" data-prompt="{html.escape(p)}">{html.escape(p)}</button>'
                    for p in prompts)
    return f'<div class="dv-chips"><span>{html.escape(t("try_prompt", lang))}</span>{chips}</div>'


def side_canvas_html(trace: Trace, side: str, *, lang: str, diff: set[int] | frozenset[int]) -> str:
    """One side of the Compare tab: its A / B badge over its finished canvas (drawn by page.js),
    `diff` positions underlined."""
    data = _finish(canvas_data(trace, lang=lang, diff=sorted(diff)))
    key = ""
    if side == "side_a":  # the key to the underlines, once for both sides
        key = (f'<div class="dv-legend">{_sample("dv-tok dv-diff", "legend_diff", lang)}'
               f'{_sample("dv-tok dv-bad", "legend_bad", lang) if world_view.is_checked(trace) else ""}</div>')
    return (side_label(side, lang) + f'<div class="dv-canvas dv-static" data-trace="{data}">'
            f'<div class="dv-status"></div><div class="dv-text"></div>{key}</div>')


def live_html(data: dict[str, Any], *, lang: str) -> str:
    """A decode in progress (`live.Live.data`): page.js paints its canvas after each step, with a
    bar of steps done against steps planned and a Stop button."""
    stop = html.escape(t("stop", lang))
    return (f'<div class="dv-canvas dv-player dv-live" data-trace="{_finish(data)}">'
            f'<div class="dv-controls"><div class="dv-progress"><i></i></div>'
            f'<button type="button" class="dv-stop" title="{stop}">■ {stop}</button></div>'
            f'<div class="dv-status"></div><div class="dv-text"></div>{legend_html(lang)}</div>')


def link_button_html(lang: str = "en") -> str:
    """The header's "copy link" button: page.js writes the view on show into the URL and copies it."""
    return (f'<button type="button" class="dv-link" title="{html.escape(t("copy_link", lang))}">'
            f'↗ {html.escape(t("link", lang))}</button><span class="dv-link-done" hidden>'
            f'{html.escape(t("link_copied", lang))}</span>')


def footer_html(lang: str = "en") -> str:
    """The page's footer: the API, and its page (Gradio's `?view=api`)."""
    link = f'<a href="?view=api">{html.escape(t("footer_api", lang))}</a>'
    return f'<div class="dv-footer-text">{html.escape(t("footer", lang, api=chr(0))).replace(chr(0), link)}</div>'


def inspector_host_html() -> str:
    """Where page.js draws the inspector of the selected position at the shown step."""
    return '<div class="dv-insp-host"></div>'


# ----- run facts ---------------------------------------------------------------------------------
def run_facts(trace: Trace) -> list[tuple[str, str]]:
    """(i18n key, formatted value) pairs for the facts panel."""
    m = trace.metrics
    return [
        ("f_steps", str(m["steps"])),
        ("f_wall", f"{1000 * trace.wall_time:.0f} ms"),
        ("f_tps", f"{m['tokens_per_second']:.0f}"),
        ("f_tokens_per_step", f"{m['tokens_per_step']:.2f}"),
        ("f_conf", f"{m['mean_confidence']:.3f}"),
        ("f_logprob", f"{m['mean_logprob']:.2f}"),
        ("f_repeat", f"{m['repeat_3']:.1%}"),
        ("f_distinct1", f"{m['distinct_1']:.2f}"),
        ("f_distinct2", f"{m['distinct_2']:.2f}"),
        # Only when the end-of-text early stop fired; "–" when the plan depends on the model (threshold).
        *([("f_nfe_saved", str(trace.nfe_saved) if trace.nfe_saved is not None else "–")]
          if trace.early_stop_step is not None else []),
        *cache_view.facts(trace),  # a cached decode: what its forwards computed and saved
        # World model only: complete sentences the checker accepts, of all complete sentences.
        *([("f_valid", world_view.valid_fraction(trace))] if world_view.is_checked(trace) else []),
        *([("f_unfinished", "1")] if world_view.unfinished(trace) else []),
        # A task prompt: the task checker's verdict on the answer (✓, or ✗ and the first rule broken).
        *([("f_answer", task_view.answer_fact(trace))] if task_view.task_of(trace) else []),
    ]


def facts_html(trace: Trace, lang: str = "en", *, side: str | None = None) -> str:
    cells = "".join(
        f'<div class="dv-fact"><b>{html.escape(v)}</b><span>{html.escape(t(k, lang))}</span></div>'
        for k, v in run_facts(trace)
    )
    head = side_label(side, lang) if side else ""
    return f'{head}<div class="dv-facts">{cells}</div>'


# ----- compare ---------------------------------------------------------------------------------
def divergence_text(a: Trace, b: Trace, lang: str = "en") -> str:
    """One paragraph: real step counts of A and B, and where their orders part."""
    d = divergence(a, b)
    steps = t("cmp_steps", lang, a=len(a.steps), b=len(b.steps))
    if d.first_step is None:
        return f"{steps} {t('diverge_none', lang)}"
    return f"{steps} " + t("diverge_at", lang, a=d.first_step, s=d.first_step + 1, n=len(d.order_differs),
                           g=a.config.gen_length, t=len(d.token_differs))
