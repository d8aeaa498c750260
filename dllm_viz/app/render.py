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

import html
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from dllm_viz.app import cache_view, task_view, world_view
from dllm_viz.app.i18n import t
from dllm_viz.app.markup import md_literal
from dllm_viz.app.palette import CONFIDENCE_SCALE, CONFIDENCE_TICKS, PALETTE, confidence_position, scale_tint, tint
from dllm_viz.core.analysis import P_FLOOR, confirmations, divergence, frame_count, piece, prompt_text, tempered_from_top
from dllm_viz.core.trace import Trace

# Inspector bars: a share s is drawn BAR_SCALE * s percent wide (the label fits beside it), never
# narrower than MIN_BAR percent. page.js reads both from the inspector's data attributes.
BAR_SCALE = 70.0
MIN_BAR = 0.5
SPEEDS = (0.5, 1.0, 2.0, 4.0)  # playback speed choices; 1x = FRAME_MS per frame
FRAME_MS = 450
# Strings page.js shows: i18n keys shipped with each canvas so the player speaks the page's language.
PLAYER_STRINGS = ("step_of", "start", "after_step", "finished", "tip_confirmed", "tip_masked", "play", "pause")
TOUR_STEPS = ("tour_canvas", "tour_player", "tour_heatmap", "tour_order", "tour_knobs", "tour_inspector")
TOUR_TARGETS = ("#dv-canvas .dv-text", "#dv-canvas .dv-controls", "#dv-heatmap", "#dv-order", "#dv-knobs",
                "#dv-inspector")


def _fmt(x: float | None, digits: int = 2) -> str:
    return "–" if x is None or math.isnan(x) else f"{x:.{digits}f}"


def _r3(x: float) -> float | None:
    return None if math.isnan(x) else round(x, 3)


# ----- canvas ----------------------------------------------------------------------------------
def _spans(trace: Trace, f: int, lang: str, diff: set[int] | frozenset[int], selected: int | None) -> tuple[str, int]:
    n = frame_count(trace)
    done = confirmations(trace)
    ghost = trace.steps[f] if f < n else None
    parts, new = [], 0
    end = trace.text_end if trace.text_end is not None else len(done)  # from here on: end padding
    bad = _rules(trace)  # rules the final text breaks at each position (world model, task prompts)
    for pos, conf in enumerate(done):
        extra = (" dv-diff" if pos in diff else "") + (" dv-sel" if pos == selected else "")
        if conf is not None and conf.step < f:
            is_new = conf.step == f - 1
            new += is_new
            extra += (" dv-pad" if pos >= end else "") + (" dv-bad" if bad[pos] else "")
            tip = t("tip_confirmed", lang, p=pos, s=conf.step + 1, c=_fmt(conf.confidence, 3),
                    q=_fmt(math.exp(conf.logprob), 3)) + (f"\n✗ {bad[pos]}" if bad[pos] else "")
            parts.append(
                f'<span class="dv-tok{" dv-new" if is_new else ""}{extra}" data-pos="{pos}" '
                f'style="background:{tint(conf.confidence)}" title="{html.escape(tip)}">'
                f"{html.escape(piece(trace, conf.token))}</span>"
            )
        else:
            guess = ghost.argmax[pos] if ghost is not None and ghost.argmax[pos] >= 0 else None
            text = piece(trace, guess) if guess is not None else "▢"
            c = ghost.confidence[pos] if ghost is not None else math.nan
            tip = t("tip_masked", lang, p=pos, g=repr(text), c=_fmt(c, 3))
            parts.append(
                f'<span class="dv-mask{extra}" data-pos="{pos}" title="{html.escape(tip)}">'
                f"{html.escape(text)}</span>"
            )
    return "".join(parts), new


def _rules(trace: Trace) -> list[str]:
    """Per position, the checker rule its token breaks: the task checker's for a task prompt, else the world's."""
    return task_view.token_rules(trace) if task_view.task_of(trace) else world_view.token_rules(trace)


def _text(trace: Trace, spans: str) -> str:
    """The canvas text: the prompt then the tokens; a Latin square or sudoku as two 4x4 grids, the
    puzzle's (empty cells ·) and the answer's, whose cells page.js fills frame by frame."""
    prompt, cells = prompt_text(trace), task_view.grid_cells(trace)
    if cells is None:
        head = f'<span class="dv-prompt">{html.escape(prompt)}</span>' if prompt else ""
        return f'<div class="dv-text">{head}{spans}</div>'
    given = "".join(f'<span class="dv-prompt">{"·" if c == "_" else html.escape(c)}</span>' for c in cells)
    return (f'<div class="dv-text"><span class="dv-prompt">{html.escape(prompt.split()[0])} :</span>'
            f'<div class="dv-grid">{given}</div><span class="dv-prompt">=</span><div class="dv-grid">{spans}</div></div>')


def _status(trace: Trace, f: int, new: int, lang: str) -> str:
    n = frame_count(trace)
    status = t("start", lang) if f == 0 else t("after_step", lang, s=f, k=trace.steps[f - 1].k, new=new)
    if f == n and n > 0:
        status += " · " + t("finished", lang)
    return f"{t('step_of', lang, f=f, n=n)} · {status}"


def canvas_html(
    trace: Trace,
    frame: int | None = None,
    *,
    lang: str = "en",
    diff: set[int] | frozenset[int] = frozenset(),
    selected: int | None = None,
    legend: bool = True,
) -> str:
    """HTML of the canvas after `frame` steps (None = the end).

    Confirmed tokens are tinted by the confidence they were confirmed with; tokens confirmed at
    this frame's step are outlined; masked positions show the current argmax guess faintly (the
    prediction of the next forward pass, recorded in the next step). `diff` positions get a wavy
    underline (compare view); `selected` is the inspected position. Every token carries
    `data-pos`, so a click can select it.
    """
    n = frame_count(trace)
    f = n if frame is None else max(0, min(int(frame), n))
    spans, new = _spans(trace, f, lang, diff, selected)
    return (f'<div class="dv-canvas"><div class="dv-status">{html.escape(_status(trace, f, new, lang))}</div>'
            f'{_text(trace, spans)}'
            f'{legend_html(lang, end_padding=trace.text_end is not None) if legend else ""}</div>')


def player_data(trace: Trace, *, lang: str, order_width: int) -> dict[str, Any]:
    """What page.js needs to replay every frame in the browser: per position its confirmation,
    per step k and the masked positions' argmax guesses, the token pieces, and the strings."""
    done = confirmations(trace)
    pieces: dict[str, int] = {}

    def ix(text: str) -> int:
        return pieces.setdefault(text, len(pieces))

    return {
        "n": frame_count(trace), "G": trace.config.gen_length, "width": order_width,
        "end": trace.text_end if trace.text_end is not None else -1,  # first end padding position; -1: none
        "order": [c.step if c else -1 for c in done],
        "tok": [ix(piece(trace, c.token)) if c else -1 for c in done],
        "tint": [tint(c.confidence) if c else "" for c in done],
        "conf": [_r3(c.confidence) if c else None for c in done],
        "q": [round(math.exp(c.logprob), 3) if c else None for c in done],
        "k": [rec.k for rec in trace.steps],
        "guess": [[ix(piece(trace, a)) if a >= 0 else -1 for a in rec.argmax] for rec in trace.steps],
        "gconf": [[_r3(c) for c in rec.confidence] for rec in trace.steps],
        "pieces": list(pieces),
        "bad": _rules(trace),  # checker rules broken per position ("" = none; world model, task prompts)
        "t": {key: t(key, lang) for key in PLAYER_STRINGS},
    }


def player_html(trace: Trace, *, lang: str = "en", frame: int | None = None, selected: int | None = 0,
                order_width: int = 8, autoplay: bool = False) -> str:
    """The playground's canvas: playback controls, the canvas at `frame`, the key, and the data
    for page.js to replay every frame in the browser (no server round trip per frame)."""
    n = frame_count(trace)
    f = n if frame is None else max(0, min(int(frame), n))
    data = json.dumps(player_data(trace, lang=lang, order_width=order_width), ensure_ascii=False,
                      separators=(",", ":"))
    speeds = "".join(f'<option value="{s:g}"{" selected" if s == 1.0 else ""}>{s:g}×</option>' for s in SPEEDS)
    b = lambda cls, label, key: (f'<button type="button" class="{cls}" title="{html.escape(t(key, lang))}" '  # noqa: E731
                                 f'aria-label="{html.escape(t(key, lang))}">{label}</button>')
    controls = (
        '<div class="dv-controls">'
        + b("dv-first", "«", "ctl_first") + b("dv-prev", "◀", "ctl_prev")
        + f'<button type="button" class="dv-play">{html.escape(t("play", lang))}</button>'
        + b("dv-next", "▶", "ctl_next") + b("dv-last", "»", "ctl_last")
        + f'<input type="range" class="dv-scrub" min="0" max="{n}" step="1" value="{f}" '
          f'aria-label="{html.escape(t("frame", lang))}">'
        + f'<select class="dv-speed" title="{html.escape(t("ctl_speed", lang))}">{speeds}</select>'
        + b("dv-tour-start", "?", "tour_start")
        + "</div>"
    )
    spans, new = _spans(trace, f, lang, frozenset(), selected)
    tour = json.dumps([{"target": sel, "text": t(key, lang)} for sel, key in zip(TOUR_TARGETS, TOUR_STEPS)],
                      ensure_ascii=False)
    tour_ui = json.dumps({k: t(k, lang) for k in ("tour_next", "tour_skip", "tour_done")}, ensure_ascii=False)
    return (
        f'<div class="dv-canvas dv-player" data-frame="{f}" data-selected="{selected if selected is not None else -1}" '
        f'data-frame-ms="{FRAME_MS}" data-autoplay="{int(autoplay)}" data-trace="{html.escape(data)}" '
        f'data-tour="{html.escape(tour)}" data-tour-ui="{html.escape(tour_ui)}">'
        f"{controls}"
        f'<div class="dv-status">{html.escape(_status(trace, f, new, lang))}</div>'
        f'{_text(trace, spans)}{legend_html(lang, end_padding=trace.text_end is not None)}</div>'
    )


def legend_html(lang: str = "en", *, end_padding: bool = False) -> str:
    """The key to the canvas tints; `end_padding` adds the entry for the dimmed tail after end-of-text."""
    pad = (f'<span><span class="dv-tok dv-pad" style="background:{tint(0.9)}">&nbsp;{html.escape(t("legend_tok", lang))}'
           f'&nbsp;</span> {html.escape(t("legend_pad", lang))}</span>') if end_padding else ""
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


def model_prompts_md(prompts: Sequence[str]) -> str:
    """The picked model's example prompts, one line."""
    return small_md(" · ".join(f"`{html.escape(p)}`" for p in prompts)) if prompts else ""


def side_canvas_html(trace: Trace, side: str, *, lang: str, diff: set[int] | frozenset[int]) -> str:
    """One side of the Compare tab: its A / B badge over its canvas, `diff` positions underlined."""
    return side_label(side, lang) + canvas_html(trace, lang=lang, diff=diff, legend=False)


# ----- inspector -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Inspection:
    """What the inspector shows for one position at one frame."""

    position: int
    step: int  # 0-based record whose candidates are shown
    candidates: list[str]  # token texts, most likely first
    raw: list[float]  # their raw probabilities
    tempered: list[float]  # their shares among themselves at `temperature`: p^(1/T) renormalised
    temperature: float
    explanation: str  # markdown: whether and why it was confirmed (only what the frame already knows)

    @property
    def top_mass(self) -> float:
        """Raw probability held by the stored candidates together."""
        return sum(self.raw)

    @property
    def raw_share(self) -> list[float]:
        """Their shares among themselves at T = 1, comparable with `tempered`."""
        return tempered_from_top(self.raw, 1.0)


def inspect(trace: Trace, position: int, frame: int, temperature: float, *, lang: str = "en") -> Inspection:
    """Top candidates and the schedule's reasoning for `position` as known on the canvas of `frame`.

    A position confirmed by then shows the step that confirmed it and the token drawn. A position
    still masked shows the prediction of the next forward pass (record `frame`) and says only that
    it is confirmed later: the frame does not know which token will be drawn.
    """
    G, n = trace.config.gen_length, frame_count(trace)
    if not 0 <= position < G:
        raise ValueError(f"position={position!r} is invalid: expected an integer in [0, {G - 1}]")
    if temperature < 0 or math.isnan(temperature):
        raise ValueError(f"temperature={temperature!r} is invalid: expected a number >= 0")
    if n == 0:
        return Inspection(position, 0, [], [], [], temperature, "")
    f = max(0, min(int(frame), n))
    conf = confirmations(trace)[position]
    if conf is not None and conf.step < f:
        s = conf.step
        note = t("insp_before", lang, s=s + 1) + "\n\n" if s < f - 1 else ""
        explanation = note + _explain_confirmed(trace, position, s, lang)
    else:
        s = min(f, n - 1)
        explanation = _explain_waiting(trace, position, s, f, lang)
    rec = trace.steps[s]
    cands = (rec.candidates or [[]] * G)[position]
    probs = (rec.candidate_probs or [[]] * G)[position]
    texts = [piece(trace, i) for i in cands]
    return Inspection(position, s, texts, probs, tempered_from_top(probs, temperature), temperature, explanation)


def inspector_html(insp: Inspection, lang: str = "en") -> str:
    """The inspector's candidate bars: raw (cool) above tempered (warm) for each stored candidate.

    Both bars are shares among the stored candidates, which is exact for both (the ratios
    p_i^(1/T) / p_j^(1/T) need no other token); the raw bar is labelled with the raw probability too.
    The constants of the tempering and of the bar widths ride along as data attributes, so the
    page re-tempers the bars while the slider moves with the same formula (page.js `retemper`).
    """
    title = html.escape(t("insp_title", lang, p=insp.position, s=insp.step + 1))
    width = lambda share: f"{max(MIN_BAR, BAR_SCALE * share):.1f}%"  # noqa: E731
    rows = []
    for text, raw, share, temp in zip(insp.candidates, insp.raw, insp.raw_share, insp.tempered):
        bars = (
            f'<div class="dv-insp-line"><i class="dv-insp-raw" style="width:{width(share)}"></i>'
            f'<span>{share:.0%} · p = {raw:.3f}</span></div>'
            f'<div class="dv-insp-line"><i class="dv-insp-temp" style="width:{width(temp)}"></i>'
            f'<span class="dv-insp-tlab">{temp:.0%}</span></div>'
        )
        rows.append(f'<div class="dv-insp-row" data-raw="{raw!r}"><span class="dv-insp-tok" '
                    f'title="{html.escape(repr(text))}">{html.escape(repr(text))}</span>'
                    f'<div class="dv-insp-bars">{bars}</div></div>')
    if not rows:
        rows.append(f"<p>{html.escape(t('insp_no_candidates', lang))}</p>")
    template = html.escape(t("tempered", lang, t="{t}"))
    key = (f'<div class="dv-insp-key"><i style="background:{PALETTE["raw"]}"></i>{html.escape(t("raw", lang))}'
           f'<i style="background:{PALETTE["tempered"]}"></i><span class="dv-insp-tkey" data-template="{template}">'
           f'{html.escape(t("tempered", lang, t=f"{insp.temperature:g}"))}</span></div>')
    return (f'<div class="dv-insp" data-bar-scale="{BAR_SCALE:g}" data-min-bar="{MIN_BAR:g}" data-p-floor="{P_FLOOR:g}">'
            f'<h4>{title}</h4>{"".join(rows)}{key}</div>')


def inspector_note(trace: Trace, insp: Inspection, lang: str = "en") -> str:
    """The small print under the bars; it never contradicts the run's confidence source."""
    if not insp.candidates:
        return t("insp_no_candidates", lang)
    note = t("insp_tempered_note", lang, n=len(insp.candidates), m=insp.top_mass)
    src = trace.config.confidence_from
    return note + " " + (t("insp_note_raw", lang) if src == "raw" else t("insp_note_polluted", lang, src=src))


def _rank(trace: Trace, position: int, s: int) -> tuple[int, int]:
    cfg, rec = trace.config, trace.steps[s]
    block_size = cfg.block_size or 1
    eligible = [p for p in range(cfg.gen_length) if p // block_size == rec.block and not math.isnan(rec.confidence[p])]
    ranked = sorted(eligible, key=lambda p: (-rec.confidence[p], p))
    return (ranked.index(position) + 1 if position in ranked else len(ranked)), len(eligible)


def _measure(trace: Trace) -> str:
    cfg = trace.config
    return f"{cfg.confidence}" + ("" if cfg.confidence_from == "raw" else f" ({cfg.confidence_from})")


def _explain_confirmed(trace: Trace, position: int, s: int, lang: str) -> str:
    cfg, rec = trace.config, trace.steps[s]
    c = rec.confidence[position]
    rank, m = _rank(trace, position, s)
    why = ""
    if cfg.schedule == "threshold":
        if c >= cfg.threshold:
            why = t("insp_threshold_above", lang, t=cfg.threshold)
        else:
            why = t("insp_floor", lang)
    i = rec.selected.index(position)
    tok, lp = rec.tokens[i], rec.logprobs[i]
    # The explanation is Markdown: a piece from the trace's vocabulary is shown literally, never as markup.
    return t("insp_confirmed", lang, s=s + 1, r=rank, m=m, b=rec.block, measure=_measure(trace), c=_fmt(c, 3),
             k=rec.k, why=why, tok=md_literal(repr(piece(trace, tok))), q=_fmt(math.exp(lp), 3),
             g=md_literal(repr(piece(trace, rec.argmax[position]))))


def _explain_waiting(trace: Trace, position: int, s: int, f: int, lang: str) -> str:
    cfg, rec = trace.config, trace.steps[s]
    block_size = cfg.block_size or 1
    pos_block = position // block_size
    if pos_block != rec.block:
        return t("insp_other_block", lang, p=position, pb=pos_block, s=s + 1, b=rec.block)
    rank, m = _rank(trace, position, s)
    return t("insp_waiting", lang, f=f, s=s + 1, r=rank, m=m, b=rec.block, measure=_measure(trace),
             c=_fmt(rec.confidence[position], 3))


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
