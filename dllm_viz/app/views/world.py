"""What the playground shows for a trace of the world model: checker marks per token and a run fact.

Pure functions of a `Trace` (no model calls). They apply only to traces of a model whose name is in
`CHECKED_MODELS`; for any other model they return no marks and no fact, so the Austen playground
is unchanged.
"""
from __future__ import annotations

from dllm_viz.core.trace import Trace
from dllm_viz.world import Verdict, Violation, check, token_violations

CHECKED_MODELS = ("world-mdlm",)  # models whose text the world checker can judge


def is_checked(trace: Trace | None) -> bool:
    return trace is not None and trace.model in CHECKED_MODELS


def verdict(trace: Trace, step: int | None = None) -> Verdict | None:
    """The checker's verdict on prompt + generation (at ``step``: only what was confirmed by then;
    masks end the text there). None for a model the checker does not know."""
    if not is_checked(trace):
        return None
    return check("".join(_pieces(trace, step)))


def _pieces(trace: Trace, step: int | None) -> list[str]:
    """Prompt pieces then generated pieces; a still-masked position and everything after it is cut."""
    pieces = [trace.token_text(i) for i in trace.prompt_ids]
    canvas = trace.token_ids if step is None else trace.canvas_at(step)
    for tok in canvas:
        if tok is None:
            break
        pieces.append(trace.token_text(tok))
    return pieces


def generated_marks(trace: Trace, step: int | None = None) -> list[list[Violation]]:
    """For each generated position (``gen_length``), the checker violations its token lies in.

    At ``step``, the text is read up to the first still-masked position; later positions get no
    marks (their sentence is not written yet). Empty lists everywhere for unchecked models.
    """
    marks: list[list[Violation]] = [[] for _ in trace.token_ids]
    v = verdict(trace, step)
    if v is None or not v.violations:
        return marks
    pieces = _pieces(trace, step)
    per_piece = token_violations(pieces, v)[len(trace.prompt_ids):]
    for pos, found in enumerate(per_piece):
        marks[pos] = found
    return marks


def facts_line(trace: Trace | None) -> str | None:
    """``"valid sentences: n/m"`` for a world trace (complete sentences of prompt + generation), else None."""
    if not is_checked(trace):
        return None
    v = verdict(trace)
    return f"valid sentences: {v.valid_sentences}/{v.sentences}"


def token_rules(trace: Trace) -> list[str]:
    """Per generated position, the names of the rules its token breaks in the final text ("" when none)."""
    return [", ".join(dict.fromkeys(v.rule for v in found)) for found in generated_marks(trace)]


def unfinished(trace: Trace | None) -> bool:
    """Whether a world trace's text ends in a sentence without its ".": the checker does not count
    it among the sentences (it may still mark words that cannot stand where they are)."""
    if not is_checked(trace):
        return False
    text = "".join(_pieces(trace, None))
    return bool(text[text.rfind(".") + 1:].strip())


def valid_fraction(trace: Trace | None) -> str | None:
    """``"n/m"``: valid complete sentences of a world trace; None for other models."""
    v = verdict(trace) if is_checked(trace) else None
    return None if v is None else f"{v.valid_sentences}/{v.sentences}"
