"""Run facts of a decode whose forwards are not its steps: how WINO verified, and the NFE.

A pure function of a trace (no model calls), read by `render.run_facts`.
"""
from __future__ import annotations

from dllm_viz.core.trace import Trace


def verify_facts(trace: Trace) -> list[tuple[str, str]]:
    """The NFE where it is not the steps (ReMDM's reused steps, a verify pass of its own, SGLang's
    closing forward); for WINO, how it verified: every forward carried WINO's shadow block
    (`f_verify_shadow`, their count), or its verify ran as one canvas per decided position (the
    canvases computed: ours, `verify_pass="canvases"`, or a model that takes no shadow block)."""
    out: list[tuple[str, str]] = []
    if trace.nfe != len(trace.steps):
        out.append(("f_nfe", str(trace.nfe)))
    if trace.config.revise != "wino":
        return out
    if not any(rec.forwards == 2 for rec in trace.steps):
        return out + [("f_verify_shadow", str(len(trace.steps)))]
    size, canvas, canvases = trace.config.block_size, [None] * len(trace.token_ids), 0
    for rec in trace.steps:  # the decided positions of the step's block, entering it: one canvas each
        if rec.forwards == 2:
            canvases += sum(tok is not None for tok in canvas[rec.block * size:(rec.block + 1) * size])
        for pos, tok in zip(rec.selected, rec.tokens):
            canvas[pos] = tok
        for pos in rec.remasked or ():
            canvas[pos] = None
    ours = trace.config.verify_pass == "canvases"
    return out + [("f_verify_canvases" if ours else "f_verify_canvases_fallback", str(canvases))]
