"""What the page draws for a renoising trace (docs/renoise.md, "Views"): pure functions of a `Trace`, plain data.

A renoising canvas is never masked: at frame f (what step f reads, `Trace.canvas_at(f - 1)`; the last
frame is the output) every position of the canvas being denoised holds a token, either **noise** (the
uniform start, or fresh noise after the step before renoised it) or **accepted** (the proposal the step
before accepted). Canvases already finished hold their **final** tokens; later ones are **empty**.
A position renoised after holding an accepted token **lost** that token: the view says which.

`frames` gives every frame's states (the canvas view; scrubbing either way reads one frame, no replay),
`stability` the stability map that takes the order map's place (when each position last changed, how
often it changed), `series` the per-step plot (tokens accepted, the entropy bound against the sums that
acceptance compared with it, the temperature, the stop rule's state), and `tooltip` / `legend` their
words in the page's language (`app/strings`).
"""
from __future__ import annotations

from typing import Any

from dllm_viz.app.strings import t
from dllm_viz.core.lineage import held
from dllm_viz.core.trace import Trace
from dllm_viz.core.trace_renoise import changes

STATES = ("empty", "noise", "accepted", "final")  # a position's state in a frame (the page's colour classes)
EMPTY, NOISE, ACCEPTED, FINAL = range(4)


def _check(trace: Trace) -> None:
    if trace.canvas != "renoise":
        raise ValueError(f"trace canvas={trace.canvas!r} is invalid here: expected a renoising trace")


def frames(trace: Trace) -> list[dict[str, Any]]:
    """Every frame f = 0..n (n steps; frame f shows what step f reads, frame n the output): per position its
    `state` (index into STATES), its `token` (None where empty), `since` (accepted: the first step of its run
    of acceptances holding this token; else None) and `lost` ({position: token} of the positions whose accepted
    token the step before renoised: what each one lost)."""
    _check(trace)
    spans, n, G = trace.canvases or [], len(trace.steps), len(trace.token_ids)
    out, since = [], [None] * G  # since: the step each position's current accepted token was first accepted at
    for f in range(n + 1):
        tokens = trace.canvas_at(f - 1)
        state = [EMPTY if tok is None else FINAL for tok in tokens]
        lost: dict[int, int] = {}
        if f < n:
            span = spans[trace.steps[f].block]
            prev = trace.steps[f - 1] if f > 0 and trace.steps[f - 1].block == span.index else None
            kept = set(prev.renoise.accepted) if prev is not None else set()  # type: ignore[union-attr]
            for i in range(span.end - span.start):
                p = span.start + i
                if i in kept:
                    state[p] = ACCEPTED
                    held = out[-1]["state"][p] == ACCEPTED and out[-1]["token"][p] == tokens[p]
                    since[p] = since[p] if held else f - 1
                else:
                    state[p] = NOISE
                    if out and out[-1]["state"][p] == ACCEPTED:
                        lost[p] = out[-1]["token"][p]
                    since[p] = None
        out.append({"state": state, "token": tokens, "since": [s if st == ACCEPTED else None for s, st in
                                                               zip(since, state)], "lost": lost})
    return out


def stability(trace: Trace) -> dict[str, list[int]]:
    """The stability map: per position, `last_changed` (the step it last changed at; its canvas's first step
    if it never did), `changes` (how many steps changed it) and `settled` (`Trace.order`: from which step it
    held its final token)."""
    _check(trace)
    steps = changes(trace.token_ids, trace.canvases or [], [rec.renoise for rec in trace.steps])  # type: ignore[misc]
    first = {p: s.first_step for s in trace.canvases or [] for p in range(s.start, s.end)}
    return {"last_changed": [c[-1] if c else first[p] for p, c in enumerate(steps)],
            "changes": [len(c) for c in steps], "settled": list(trace.order)}


def series(trace: Trace) -> dict[str, list]:
    """Per step: `canvas`, `accepted` (count), `bound` (the entropy bound), `sum_less_max` (the accepted
    positions' entropies summed less the largest: what the bound admitted, <= bound) and `sum` (all of them:
    above the bound whenever a position was renoised), `temperature`, `mean_entropy` against `confidence` (the
    stop's threshold), `stable`, `confident`, `stopped`. The bound and the threshold are those in force at the step
    (a fork may switch them, `Trace.forks`)."""
    _check(trace)
    c = trace.config
    bound, threshold = (held(getattr(c, knob), trace.forks, knob) for knob in ("entropy_bound", "confidence_threshold"))
    out: dict[str, list] = {k: [] for k in ("canvas", "accepted", "bound", "sum_less_max", "sum", "temperature",
                                            "mean_entropy", "confidence", "stable", "confident", "stopped")}
    for i, rec in enumerate(trace.steps):
        s = rec.renoise
        assert s is not None
        entropies = [s.entropy[i] for i in s.accepted]
        total = sum(entropies)
        for key, value in (("canvas", rec.block), ("accepted", len(s.accepted)), ("bound", bound(i)),
                           ("sum_less_max", round(total - max(entropies), 6)), ("sum", round(total, 6)),
                           ("temperature", rec.temperature), ("mean_entropy", s.mean_entropy),
                           ("confidence", threshold(i)), ("stable", s.stable),
                           ("confident", s.confident), ("stopped", s.stopped)):
            out[key].append(value)
    return out


def tooltip(trace: Trace, frame: dict[str, Any], position: int, step: int, lang: str = "en") -> str:
    """The words of one position at one frame (the canvas's hover), in `lang`."""
    piece = trace.token_text
    state, tok = STATES[frame["state"][position]], frame["token"][position]
    if state == "empty":
        return t("rn_tip_empty", lang, pos=position)
    text = t(f"rn_tip_{state}", lang, pos=position, tok=piece(tok), s=frame["since"][position], f=step)
    if position in frame["lost"]:
        text += "\n" + t("rn_tip_lost", lang, old=piece(frame["lost"][position]), s=step - 1)
    return text


def legend(lang: str = "en") -> dict[str, str]:
    """The canvas's key: a label per state, and the mark of a position that lost its token."""
    return {**{state: t(f"rn_state_{state}", lang) for state in STATES}, "lost": t("rn_lost", lang)}


def labels(lang: str = "en") -> dict[str, str]:
    """The titles of the stability map and the per-step plot, in `lang`."""
    keys = ("rn_stability_title", "rn_last_changed", "rn_changes", "rn_series_title", "rn_accepted", "rn_bound",
            "rn_sum_less_max", "rn_sum", "rn_temperature", "rn_mean_entropy", "rn_confidence", "rn_stopped", "rn_step")
    return {key[3:]: t(key, lang) for key in keys}
