"""HTML of a Trace's run facts, the help notes, and the page's few other bits of markup (badges,
small notes, the Compare summary). Pure; the only module of the playground that writes HTML.

Everything here is a function of a `Trace` (and a few UI values); nothing calls a model, so the
playground can replay an uploaded trace. The canvas, the inspector and the figures are not written
here: the page draws them from the trace itself (`views.wire`, `app/web/`). Reading the trace lives
in `core.analysis`; colours and CSS in `palette`.
"""
from __future__ import annotations

import html
from collections.abc import Sequence

from dllm_viz.app.views import cache as cache_view, task as task_view, world as world_view
from dllm_viz.app.views.verify import verify_facts
from dllm_viz.app.strings import t
from dllm_viz.core.analysis import divergence
from dllm_viz.core.trace import Trace


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
    """Where the page draws the inspector of the selected position at the shown step."""
    return '<div class="dv-insp-host"></div>'


def figure_host_html() -> str:
    """Where the page draws a figure of the trace on show (web/views.js)."""
    return '<div class="dv-fig-host"></div>'


def canvas_template() -> str:
    """The Playground canvas's markup before its script fills it (the player: web/canvas.js)."""
    return '<div class="dv-canvas dv-player"></div>'


def side_template() -> str:
    """A Compare side's markup before the page's script fills it."""
    return '<div class="dv-side-box"></div>'


def pair_template() -> str:
    """Where the page draws the player that moves both Compare sides in step (web/pair.js)."""
    return '<div class="dv-pair"></div>'


def script_html(src: str) -> str:
    """A script the page loads from the app itself (plotly.js: `web.plotly_head`)."""
    return f'<script src="{html.escape(src)}"></script>'


def inline_script_html(code: str) -> str:
    """A script written into the page itself (app/early.py: the first of its head). `code` is the app's own; a
    closing script tag in it would end the element early, so none may be there."""
    if "</script" in code.lower():
        raise ValueError("code: an inline script may not hold '</script'")
    return f"<script>{code}</script>"


# ----- run facts ---------------------------------------------------------------------------------
def run_facts(trace: Trace, lang: str = "en") -> list[tuple[str, str]]:
    """(i18n key, formatted value) pairs for the facts panel; a forked trace's fork points in `lang`."""
    m = trace.metrics
    forked = [("f_forked", fork_points_text(trace, lang))] if trace.forks else []
    if trace.canvas == "renoise":  # never masked: no confirmations, so no confidence or log-prob of them
        return [("f_steps", str(m["steps"])), ("f_wall", f"{1000 * trace.wall_time:.0f} ms"),
                ("f_tps", f"{m['tokens_per_second']:.0f}"), ("f_tokens_per_step", f"{m['tokens_per_forward']:.2f}"),
                ("f_repeat", f"{m['repeat_3']:.1%}"), ("f_distinct1", f"{m['distinct_1']:.2f}"),
                ("f_distinct2", f"{m['distinct_2']:.2f}"), *forked]
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
        *verify_facts(trace),  # NFE beside the steps; WINO: the shadow block or canvases
        # World model only: complete sentences the checker accepts, of all complete sentences.
        *([("f_valid", world_view.valid_fraction(trace))] if world_view.is_checked(trace) else []),
        *([("f_unfinished", "1")] if world_view.unfinished(trace) else []),
        # A task prompt: the task checker's verdict on the answer (✓, or ✗ and the first rule broken).
        *([("f_answer", task_view.answer_fact(trace))] if task_view.task_of(trace) else []),
        *forked,  # where it left its parent, and what changed there (`Trace.forks`)
    ]


def fork_points_text(trace: Trace, lang: str = "en") -> str:
    """A forked trace's fork points in words, in order: `after 4 steps: temperature 0.0 (was 1.0)` (`ForkPoint`)."""
    out = []
    for point in trace.forks:
        parts = [t("fk_force", lang, pos=", ".join(f"{p}={tok}" for p, tok in point.force))] if point.force else []
        parts += [t("fk_remask", lang, pos=", ".join(map(str, point.remask)))] if point.remask else []
        parts += [t("fk_knob", lang, knob=k, new=new, old=old) for k, new, old in point.switches]
        out.append(t("fk_at", lang, s=point.step, what=t("fk_sep", lang).join(parts) or t("fk_same", lang)))
    return " · ".join(out)


WIDE_FACTS = ("f_forked",)  # a sentence, not a number: a row of its own


def facts_html(trace: Trace, lang: str = "en", *, side: str | None = None) -> str:
    cells = "".join(
        f'<div class="dv-fact{" dv-fact-wide" if k in WIDE_FACTS else ""}"><b>{html.escape(v)}</b>'
        f'<span>{html.escape(t(k, lang))}</span></div>'
        for k, v in run_facts(trace, lang)
    )
    head = side_label(side, lang) if side else ""
    return f'{head}<div class="dv-facts">{cells}</div>'


# ----- compare ---------------------------------------------------------------------------------
def divergence_text(a: Trace, b: Trace, lang: str = "en") -> str:
    """One paragraph: real step counts of A and B, and where their orders part (two renoising traces: where the
    positions they accepted part, and how many positions their outputs differ at)."""
    steps = t("cmp_steps", lang, a=len(a.steps), b=len(b.steps))
    if a.canvas == "renoise" and b.canvas == "renoise":  # nothing is confirmed: what each step accepted
        def accepted(trace: Trace, s: int) -> list[int] | None:
            return trace.steps[s].renoise.accepted if s < len(trace.steps) else None

        first = next((s for s in range(max(len(a.steps), len(b.steps))) if accepted(a, s) != accepted(b, s)), None)
        differ = sum(x != y for x, y in zip(a.token_ids, b.token_ids)) + abs(len(a.token_ids) - len(b.token_ids))
        if first is None:
            return f"{steps} {t('rn_diverge_none', lang, t=differ, g=a.config.gen_length)}"
        return f"{steps} {t('rn_diverge_at', lang, a=first, s=first + 1, t=differ, g=a.config.gen_length)}"
    d = divergence(a, b)
    if d.first_step is None:
        return f"{steps} {t('diverge_none', lang)}"
    return f"{steps} " + t("diverge_at", lang, a=d.first_step, s=d.first_step + 1, n=len(d.order_differs),
                           g=a.config.gen_length, t=len(d.token_differs))
