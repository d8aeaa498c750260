"""What the Playground's banner says of a decode: the teaching switches it had on (against the correct
config's run, decoded in the same batch), a preset "as shipped", the revision rule's counts, and a
change of settings that gave the trace on show again. Pure: traces in, text out (`strings`)."""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from dllm_viz.app.handlers.adapters import active_preset
from dllm_viz.app.strings import t
from dllm_viz.app.views.markup import md_literal
from dllm_viz.core.analysis import divergence
from dllm_viz.core.config import REVISION_PRESETS, SHIPPED_PRESETS, DecodeConfig
from dllm_viz.core.trace import Trace
from dllm_viz.studies.lessons import LESSONS

# Teaching switches: config field -> its correct value.
SWITCHES = {"confidence_from": "raw", "sample_scope": "selected", "rng": "per_request"}
# Values that are no teaching switch: raw's measure computed with SGLang's float ops (its LowConfidence
# and JointThreshold presets ship it), so no "correct" twin is decoded beside them.
NOT_SWITCHES = {("confidence_from", "softmax")}
# The Compare lesson that shows a switch's wrong value against the correct one.
SWITCH_LESSONS = {("confidence_from", "tempered"): "polluted", ("confidence_from", "filtered"): "polluted",
                  ("confidence_from", "sampled"): "lock_in", ("confidence_from", "sampled_raw"): "shipped_llada",
                  ("sample_scope", "all"): "global", ("rng", "shared"): "rng"}
LESSON_LINK = "dv-open-lesson-"  # href prefix of a banner link that opens a Compare lesson (page.js)


def switch_lesson(cfg: DecodeConfig, on: list[str]) -> str:
    """The Compare lesson that shows what the switches `on` do: an as-shipped rule's own lesson when
    `cfg` is that preset (LLaDA's, Fast-dLLM's), else the lesson of the first switch on."""
    preset = active_preset(cfg)
    if preset is not None and f"shipped_{preset}" in LESSONS:
        return f"shipped_{preset}"
    return SWITCH_LESSONS[(on[0], getattr(cfg, on[0]))]


def unchanged_note(shown: Trace, trace: Trace, lang: str) -> str:
    """A hint when new settings gave the run on show again, step for step ("" otherwise): a
    threshold moved where no confidence lay between its old and new value changes nothing."""
    old, new = shown.config, trace.config
    changed = [name for name in old.field_names() if getattr(old, name) != getattr(new, name)]
    same = shown.token_ids == trace.token_ids and shown.order == trace.order and shown.prompt_ids == trace.prompt_ids
    if not changed or not same or shown.model != trace.model:
        return ""
    if changed == ["threshold"] and new.schedule == "threshold":
        lo, hi = sorted((old.threshold, new.threshold))
        if not any(lo <= c < hi for rec in trace.steps for c in rec.confidence if not math.isnan(c)):
            return t("banner_unchanged_threshold", lang, a=old.threshold, b=new.threshold)
    return t("banner_unchanged", lang, what=", ".join(f"{name} = {getattr(new, name)}" for name in changed))


def shipped_banner(trace: Trace, correct: Trace | None, on: list[str], lang: str) -> str:
    """What the banner says of a preset "as shipped" (`trace` decoded with it): what the shipped rule
    does and the code it follows, then, when its ranking is not the article's (`on`: the switches it
    sets), how the article's rule decoded the same request (`correct`, in the same batch); "" for any
    other config. A preset is no teaching switch the visitor turned on, so the banner never says so."""
    preset = active_preset(trace.config)
    shipped = {**SHIPPED_PRESETS, **REVISION_PRESETS}.get(preset or "")
    if shipped is None:
        return ""
    text = t("shipped_head", lang, p=t(f"preset_{preset}", lang), what=t(f"sb_{preset}", lang), src=shipped.source)
    if not on or correct is None:
        return text
    d = divergence(trace, correct)
    if d.first_step is None and trace.token_ids == correct.token_ids:
        key = switch_lesson(trace.config, on)
        lesson = LESSONS[key].text("title", lang)
        return text + " " + t("shipped_same", lang, lesson=lesson, href=f"#{LESSON_LINK}{key}")
    return text + " " + t("shipped_diff", lang, n=len(d.order_differs), g=trace.config.gen_length,
                          t=len(d.token_differs))


def revision_banner(trace: Trace, lang: str) -> list[str]:
    """What the banner says of a revision rule: what it took back and rewrote in this decode (nothing
    for a decode without one)."""
    notes = []
    if trace.config.revise != "none":
        m = trace.metrics
        notes.append(t("rv_banner_counts", lang, rule=trace.config.revise, r=m["remasked"], e=m["edited"],
                       s=m["steps"], n=m["nfe"]))
    return notes


def switch_banner(trace: Trace, correct: Trace, on: list[str], lang: str) -> str:
    """What the banner says of the teaching switches `on`: how the correct config's run (`correct`, in the
    same batch) differs, or that alone they change nothing here, with the Compare lesson that shows them."""
    switches = ", ".join(f"{name} = {getattr(trace.config, name)}" for name in on)
    d = divergence(trace, correct)
    if d.first_step is None and trace.token_ids == correct.token_ids:
        key = switch_lesson(trace.config, on)
        # page.js turns a click on this link into: the Compare tab, then that lesson's button.
        return t("banner_same", lang, sw=switches, lesson=LESSONS[key].text("title", lang),
                 href=f"#{LESSON_LINK}{key}")
    return t("banner_diff", lang, sw=switches, n=len(d.order_differs), g=trace.config.gen_length,
             t=len(d.token_differs))


def decode_banner(trace: Trace, correct: Trace | None, fixes: Sequence[Any], on: Sequence[str], before: Trace | None,
                  lang: str) -> str:
    """What the Playground's banner says of a finished decode, in `lang`: what fitting the widgets changed (`fixes`,
    `fit.Note`s), a preset as shipped or the teaching switches `on` against the correct config's run (`correct`,
    same batch), the revision rule's counts, and whether new settings gave the trace on show before it (`before`)
    again."""
    notes = [t(note.key, lang, **note.values) for note in fixes]
    shipped = shipped_banner(trace, correct, list(on), lang)
    if shipped:
        notes.append(shipped)
    elif on:
        notes.append(switch_banner(trace, correct, list(on), lang))
    notes += revision_banner(trace, lang)
    if before is not None:
        notes.append(unchanged_note(before, trace, lang))
    return "\n\n".join(n for n in notes if n)


FORK_PAIR_LINK = "#dv-open-fork-pair"  # a banner link that shows a fork beside the trace it left (page.js)


def fork_change(fork: Trace, lang: str) -> str:
    """A fork's last change in words, in `lang`, tokens by their text (Markdown): `' Los' placed at position 3`."""
    point = fork.forks[-1]
    parts = [t("banner_fork_force", lang, tok=md_literal(repr(fork.vocab.get(tok, f"<{tok}>"))), pos=pos)
             for pos, tok in point.force]
    parts += [t("banner_fork_remask", lang, pos=pos) for pos in point.remask]
    parts += [t("fk_knob", lang, knob=k, new=md_literal(new), old=md_literal(old)) for k, new, old in point.switches]
    return t("fk_sep", lang).join(parts) or t("fk_same", lang)


def fork_banner(parent: Trace, fork: Trace, lang: str) -> str:
    """What the Playground's banner says of a fork made on the page (`Playground.fork_here`, a fork's link), in `lang`:
    its change (the last fork point), how many positions end with another token than its parent's, and a link that
    shows the two side by side (`Playground.fork_pair`)."""
    a, b = parent.token_ids, fork.token_ids  # (an insert/delete rule's canvases may end at other lengths)
    differ = sum(x != y for x, y in zip(a, b)) + abs(len(a) - len(b))
    return t("banner_forked", lang, s=fork.forks[-1].step, what=fork_change(fork, lang), n=differ,
             g=max(len(a), len(b)), href=FORK_PAIR_LINK)
