"""Text rendering of a Trace: the canvas at a step, the inspector, run facts, compare diff. Pure.

Everything here is a function of a `Trace` (and a few UI values such as the frame or the
temperature slider); nothing calls a model, so the playground can replay an uploaded trace.

Frames: frame f (0 <= f <= number of steps) is the canvas after f steps. Steps are shown 1-based
("after step 3" = three forward passes done); trace records are 0-based, so record s is "step s+1".

The palette lives here, in one place; figures.py imports it.
"""
from __future__ import annotations

import html
import math
from dataclasses import dataclass

from dllm_viz.app.i18n import t
from dllm_viz.core.trace import Trace

# ----- palette: the only place colours are defined ----------------------------------------------
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
PALETTE: dict[str, str] = {
    "accent": "#7c3aed",  # tokens confirmed at the shown step; selections in figures
    "text": "#1f2933",
    "muted": "#6b7280",  # prompt text, secondary labels
    "card": "#ffffff",
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


# ----- per-position facts ------------------------------------------------------------------------
@dataclass(frozen=True)
class Confirmation:
    """How one generated position was confirmed."""

    step: int  # 0-based record index
    token: int
    confidence: float  # what the schedule ranked by
    raw_confidence: float  # from the raw logits (same as `confidence` unless a teaching switch)
    logprob: float  # raw log-probability of `token`


def confirmations(trace: Trace) -> list[Confirmation | None]:
    """One entry per generated position (None if the trace never confirmed it)."""
    out: list[Confirmation | None] = [None] * trace.config.gen_length
    for rec in trace.steps:
        for pos, tok, lp in zip(rec.selected, rec.tokens, rec.logprobs):
            out[pos] = Confirmation(rec.step, tok, rec.confidence[pos], rec.raw[pos], lp)
    return out


def piece(trace: Trace, token_id: int) -> str:
    """Printable text of one token: whitespace made visible where it would vanish."""
    text = trace.token_text(token_id)
    if text == "":
        return "∅"
    return text.replace("\n", "↵").replace("\t", "⇥")


def _fmt(x: float, digits: int = 2) -> str:
    return "–" if x is None or math.isnan(x) else f"{x:.{digits}f}"


# ----- canvas ----------------------------------------------------------------------------------
CANVAS_CSS = f"""
.dv-canvas {{ background: {PALETTE['card']}; color: {PALETTE['text']}; border-radius: 10px;
  padding: 14px 16px; border: 1px solid #e5e7eb; font-size: 15px; }}
.dv-status {{ font-size: 13px; color: {PALETTE['muted']}; margin-bottom: 8px; }}
.dv-text {{ font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; line-height: 2.1;
  white-space: pre-wrap; word-break: break-word; }}
.dv-prompt {{ color: {PALETTE['muted']}; }}
.dv-tok {{ border-radius: 4px; padding: 2px 0; cursor: pointer; }}
.dv-new {{ outline: 2px solid {PALETTE['accent']}; outline-offset: 0; font-weight: 600; }}
.dv-mask {{ background: {PALETTE['mask_bg']}; border: 1px dashed {PALETTE['mask_border']};
  color: {PALETTE['ghost']}; opacity: 0.75; font-style: italic; border-radius: 4px; padding: 1px 0;
  cursor: pointer; }}
.dv-diff {{ text-decoration: underline wavy {PALETTE['diverge']}; }}
.dv-sel {{ box-shadow: 0 0 0 2px {PALETTE['text']}; }}
.dv-legend {{ display: flex; flex-wrap: wrap; gap: 14px; align-items: center; font-size: 12px;
  color: {PALETTE['muted']}; margin-top: 10px; }}
.dv-legend .dv-bar {{ display: inline-block; position: relative; width: 220px; height: 12px; border-radius: 3px;
  vertical-align: middle; margin: 0 6px 12px 6px; }}
.dv-legend .dv-bar i {{ position: absolute; top: 13px; transform: translateX(-50%); font-style: normal;
  font-size: 10px; color: {PALETTE['muted']}; }}
.dv-insp {{ background: {PALETTE['card']}; border: 1px solid #e5e7eb; border-radius: 10px; padding: 10px 14px; }}
.dv-insp h4 {{ margin: 0 0 8px 0; font-size: 14px; color: {PALETTE['text']}; }}
.dv-insp-row {{ display: grid; grid-template-columns: 90px 1fr; gap: 8px; align-items: center; margin: 4px 0; }}
.dv-insp-tok {{ font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 13px;
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
.dv-fact {{ background: {PALETTE['card']}; border: 1px solid #e5e7eb; border-radius: 8px; padding: 6px 10px; }}
.dv-fact b {{ display: block; font-size: 18px; color: {PALETTE['text']}; }}
.dv-fact span {{ font-size: 12px; color: {PALETTE['muted']}; }}
"""


def frame_count(trace: Trace) -> int:
    """Largest frame: the number of steps."""
    return len(trace.steps)


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
    done = confirmations(trace)
    ghost = trace.steps[f] if f < n else None
    parts = []
    prompt = trace.prompt_text if trace.prompt_text is not None else "".join(
        trace.token_text(i) for i in trace.prompt_ids
    )
    if prompt:
        parts.append(f'<span class="dv-prompt">{html.escape(prompt)}</span>')
    new = 0
    for pos, conf in enumerate(done):
        extra = (" dv-diff" if pos in diff else "") + (" dv-sel" if pos == selected else "")
        if conf is not None and conf.step < f:
            is_new = conf.step == f - 1
            new += is_new
            tip = t("tip_confirmed", lang, p=pos, s=conf.step + 1, c=_fmt(conf.confidence, 3),
                    q=_fmt(math.exp(conf.logprob), 3))
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
    if f == 0:
        status = t("start", lang)
    else:
        status = t("after_step", lang, s=f, k=trace.steps[f - 1].k, new=new)
    if f == n and n > 0:
        status += " · " + t("finished", lang)
    head = f'<div class="dv-status">{html.escape(t("step_of", lang, f=f, n=n))} · {html.escape(status)}</div>'
    body = f'<div class="dv-text">{"".join(parts)}</div>'
    return f'<div class="dv-canvas">{head}{body}{legend_html(lang) if legend else ""}</div>'


def legend_html(lang: str = "en") -> str:
    """The key to the canvas tints."""
    stops = ", ".join(f"{scale_tint(x)} {round(100 * x)}%" for x, _ in CONFIDENCE_SCALE)
    ticks = "".join(
        f'<i style="left:{100 * confidence_position(c):.1f}%">{c:g}</i>' for c in CONFIDENCE_TICKS
    )
    return (
        '<div class="dv-legend">'
        f'<span>{html.escape(t("legend_conf", lang))}: {html.escape(t("legend_low", lang))}'
        f'<span class="dv-bar" style="background: linear-gradient(90deg, {stops})">{ticks}</span>'
        f'{html.escape(t("legend_high", lang))}</span>'
        f'<span><span class="dv-tok dv-new" style="background:{tint(0.9)}">&nbsp;tok&nbsp;</span> '
        f'{html.escape(t("legend_new", lang))}</span>'
        f'<span><span class="dv-mask">&nbsp;guess&nbsp;</span> {html.escape(t("legend_mask", lang))}</span>'
        f'<span><span class="dv-prompt">Abc</span> {html.escape(t("legend_prompt", lang))}</span>'
        "</div>"
    )


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
    explanation: str  # markdown: whether and why it was confirmed

    @property
    def top_mass(self) -> float:
        """Raw probability held by the stored candidates together."""
        return sum(self.raw)

    @property
    def raw_share(self) -> list[float]:
        """Their shares among themselves at T = 1, comparable with `tempered`."""
        return tempered_from_top(self.raw, 1.0)


def tempered_from_top(probs: list[float], temperature: float) -> list[float]:
    """p_i^(1/T) renormalised over the given candidates; T = 0 puts all mass on the first."""
    if not probs:
        return []
    if temperature <= 0:
        return [1.0 if i == 0 else 0.0 for i in range(len(probs))]
    logs = [math.log(max(p, 1e-30)) / temperature for p in probs]
    top = max(logs)
    w = [math.exp(v - top) for v in logs]
    z = sum(w)
    return [v / z for v in w]


def inspect(trace: Trace, position: int, frame: int, temperature: float, *, lang: str = "en") -> Inspection:
    """Top candidates and the schedule's reasoning for `position` at the step taken from `frame`.

    The step shown is the one that runs on the canvas of `frame` (record `frame`, the last at the
    end); if the position was confirmed earlier, its confirmation step is shown instead.
    """
    G, n = trace.config.gen_length, frame_count(trace)
    if not 0 <= position < G:
        raise ValueError(f"position={position!r} is invalid: expected an integer in [0, {G - 1}]")
    if temperature < 0 or math.isnan(temperature):
        raise ValueError(f"temperature={temperature!r} is invalid: expected a number >= 0")
    if n == 0:
        return Inspection(position, 0, [], [], [], temperature, "")
    s = max(0, min(int(frame), n - 1))
    conf = confirmations(trace)[position]
    note = ""
    if conf is not None and conf.step < s:
        note = t("insp_before", lang, s=conf.step + 1) + "\n\n"
        s = conf.step
    rec = trace.steps[s]
    cands = (rec.candidates or [[]] * G)[position]
    probs = (rec.candidate_probs or [[]] * G)[position]
    texts = [piece(trace, i) for i in cands]
    tempered = tempered_from_top(probs, temperature)
    return Inspection(position, s, texts, probs, tempered, temperature, note + _explain(trace, position, s, lang))


def inspector_html(insp: Inspection, lang: str = "en") -> str:
    """The inspector's candidate bars: raw (cool) above tempered (warm) for each stored candidate.

    Both bars are shares among the stored candidates, which is exact for both (the ratios
    p_i^(1/T) / p_j^(1/T) need no other token); the raw bar is labelled with the raw probability too.
    """
    title = html.escape(t("insp_title", lang, p=insp.position, s=insp.step + 1))
    rows = []
    for text, raw, share, temp in zip(insp.candidates, insp.raw, insp.raw_share, insp.tempered):
        bars = (  # bar widths use 70% of the row, so the label always fits beside the bar
            f'<div class="dv-insp-line"><i class="dv-insp-raw" style="width:{max(0.5, 70 * share):.1f}%"></i>'
            f'<span>{share:.0%} · p = {raw:.3f}</span></div>'
            f'<div class="dv-insp-line"><i class="dv-insp-temp" style="width:{max(0.5, 70 * temp):.1f}%"></i>'
            f'<span class="dv-insp-tlab">{temp:.0%}</span></div>'
        )
        # data-raw lets INSPECTOR_JS re-temper the bars in the browser while the slider moves.
        rows.append(f'<div class="dv-insp-row" data-raw="{raw!r}"><span class="dv-insp-tok" '
                    f'title="{html.escape(repr(text))}">{html.escape(repr(text))}</span>'
                    f'<div class="dv-insp-bars">{bars}</div></div>')
    if not rows:
        rows.append(f"<p>{html.escape(t('insp_no_candidates', lang))}</p>")
    template = html.escape(t("tempered", lang, t="{t}"))
    key = (f'<div class="dv-insp-key"><i style="background:{PALETTE["raw"]}"></i>{html.escape(t("raw", lang))}'
           f'<i style="background:{PALETTE["tempered"]}"></i><span class="dv-insp-tkey" data-template="{template}">'
           f'{html.escape(t("tempered", lang, t=f"{insp.temperature:g}"))}</span></div>')
    return f'<div class="dv-insp"><h4>{title}</h4>{"".join(rows)}{key}</div>'


# Re-tempers the inspector in the browser as the temperature slider moves: the same formula as
# `tempered_from_top`, on the raw probabilities stored in each row's data-raw. No server round trip.
INSPECTOR_JS = """
const retemper = (T) => {
  const rows = Array.from(element.querySelectorAll('.dv-insp-row[data-raw]'));
  if (!rows.length || !Number.isFinite(T) || T < 0) return;
  const ps = rows.map((r) => parseFloat(r.dataset.raw));
  let w;
  if (T === 0) { w = ps.map((_, i) => (i === 0 ? 1 : 0)); }
  else {
    const l = ps.map((p) => Math.log(Math.max(p, 1e-30)) / T);
    const top = Math.max(...l);
    w = l.map((x) => Math.exp(x - top));
  }
  const z = w.reduce((a, b) => a + b, 0) || 1;
  rows.forEach((r, i) => {
    const share = w[i] / z;
    r.querySelector('.dv-insp-temp').style.width = Math.max(0.5, 70 * share).toFixed(1) + '%';
    r.querySelector('.dv-insp-tlab').textContent = Math.round(100 * share) + '%';
  });
  const key = element.querySelector('.dv-insp-tkey');
  if (key) key.textContent = key.dataset.template.replace('{t}', String(T));
};
document.addEventListener('input', (e) => {
  if (e.target instanceof HTMLInputElement && e.target.closest('#dv-temperature')) retemper(parseFloat(e.target.value));
});
"""


def _explain(trace: Trace, position: int, s: int, lang: str) -> str:
    cfg, rec = trace.config, trace.steps[s]
    c = rec.confidence[position]
    block_size = cfg.block_size or 1
    pos_block = position // block_size
    if pos_block != rec.block:
        return t("insp_other_block", lang, p=position, pb=pos_block, s=s + 1, b=rec.block)
    eligible = [p for p in range(cfg.gen_length) if p // block_size == rec.block and not math.isnan(rec.confidence[p])]
    ranked = sorted(eligible, key=lambda p: (-rec.confidence[p], p))
    rank = ranked.index(position) + 1 if position in ranked else len(ranked)
    why = ""
    if cfg.schedule == "threshold":
        above = sum(rec.confidence[p] >= cfg.threshold for p in eligible)
        if c >= cfg.threshold:
            why = t("insp_threshold_above", lang, t=cfg.threshold)
        elif rank <= rec.k and rec.k > above:
            why = t("insp_floor", lang)
        else:
            why = t("insp_threshold_below", lang, t=cfg.threshold)
    measure = f"{cfg.confidence}" + ("" if cfg.confidence_from == "raw" else f" ({cfg.confidence_from})")
    values = dict(s=s + 1, r=rank, m=len(eligible), b=rec.block, measure=measure, c=_fmt(c, 3), k=rec.k, why=why)
    if position in rec.selected:
        i = rec.selected.index(position)
        tok, lp = rec.tokens[i], rec.logprobs[i]
        guess = rec.argmax[position]
        return t("insp_confirmed", lang, tok=repr(piece(trace, tok)), q=_fmt(math.exp(lp), 3),
                 g=repr(piece(trace, guess)), **values)
    return t("insp_waiting", lang, **values)


# ----- run facts ---------------------------------------------------------------------------------
def run_facts(trace: Trace) -> list[tuple[str, str]]:
    """(i18n key, formatted value) pairs for the facts panel."""
    m = trace.metrics
    return [
        ("f_nfe", str(m["nfe"])),
        ("f_steps", str(m["steps"])),
        ("f_wall", f"{1000 * trace.wall_time:.0f} ms"),
        ("f_tps", f"{m['tokens_per_second']:.0f}"),
        ("f_tokens_per_step", f"{m['tokens_per_step']:.2f}"),
        ("f_conf", f"{m['mean_confidence']:.3f}"),
        ("f_logprob", f"{m['mean_logprob']:.2f}"),
        ("f_repeat", f"{m['repeat_3']:.1%}"),
        ("f_distinct1", f"{m['distinct_1']:.2f}"),
        ("f_distinct2", f"{m['distinct_2']:.2f}"),
    ]


def facts_html(trace: Trace, lang: str = "en") -> str:
    cells = "".join(
        f'<div class="dv-fact"><b>{html.escape(v)}</b><span>{html.escape(t(k, lang))}</span></div>'
        for k, v in run_facts(trace)
    )
    return f'<div class="dv-facts">{cells}</div>'


def config_summary(trace: Trace) -> str:
    """The non-default fields of the trace's config, one line (for captions)."""
    cfg = trace.config.to_dict()
    default = type(trace.config)().to_dict()
    changed = {k: v for k, v in cfg.items() if v != default.get(k)}
    return ", ".join(f"{k}={v}" for k, v in changed.items()) or "defaults"


# ----- compare ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Divergence:
    """Where two traces of the same prompt part ways."""

    first_step: int | None  # 0-based first step whose confirmed set differs; None = identical orders
    order_differs: list[int]  # positions confirmed at a different step
    token_differs: list[int]  # positions holding a different final token


def divergence(a: Trace, b: Trace) -> Divergence:
    if a.config.gen_length != b.config.gen_length:
        raise ValueError(
            f"gen_length={b.config.gen_length} of B is invalid: expected the same as A ({a.config.gen_length})"
        )
    first = None
    for s in range(max(len(a.steps), len(b.steps))):
        sa = set(a.steps[s].selected) if s < len(a.steps) else None
        sb = set(b.steps[s].selected) if s < len(b.steps) else None
        if sa != sb:
            first = s
            break
    order = [p for p, (x, y) in enumerate(zip(a.order, b.order)) if x != y]
    tokens = [p for p, (x, y) in enumerate(zip(a.token_ids, b.token_ids)) if x != y]
    return Divergence(first, order, tokens)


def divergence_text(a: Trace, b: Trace, lang: str = "en") -> str:
    d = divergence(a, b)
    if d.first_step is None:
        return t("diverge_none", lang)
    return t("diverge_at", lang, a=d.first_step, s=d.first_step + 1, n=len(d.order_differs),
             g=a.config.gen_length, t=len(d.token_differs))
