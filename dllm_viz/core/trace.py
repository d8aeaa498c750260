"""The record of one decode: a StepRecord per step, the result, and metrics; exact JSON round trip.

Floats are kept at 1e-6 resolution (`quantize`), so what is in memory is exactly what the JSON
says and `Trace.from_json(s).to_json() == s`. Missing values (NaN confidence at positions that were
already confirmed) are written as JSON `null`, which every JSON parser, a browser's included, reads.

Format versions: 1 (confirmed tokens are final), 2 (the revision rules: a step may also take tokens back
to [MASK] and rewrite visible ones; `StepRecord.OPTIONAL` fields, written only when a step has them)
and 3: optional per-step sections by kind (`StepRecord.SECTIONS`), each a JSON object under its kind's
name that a kind of step adds to its record and `trace_schema.SECTIONS` checks and replays: "indel"
(the step's insert and delete operations and the map from the last step's positions to this
one's, `core.indel_record`) and "renoise" (a renoising trace, `canvas="renoise"`, whose steps
hold this section instead of the masked fields, and whose canvases' boundaries are `canvases`;
`core.trace_renoise`). All are read; a trace is written in the lowest version that holds it (3
only when a step has a section). `order` keeps its meaning, the step at which the token at each
position was last decided (confirmed or rewritten; it moves with the token); `Trace.history` gives
every decision of the token at a position, followed through moves.
"""
from __future__ import annotations

import contextlib
import gc
import json
import math
from dataclasses import dataclass, field
from collections.abc import Callable, Collection, Iterator
from typing import Any

from dllm_viz.core import trace_renoise
from dllm_viz.core.cache_facts import cache_facts
from dllm_viz.core.config import DecodeConfig, short
from dllm_viz.core.lineage import ForkPoint, check_forks, held, most_steps
from dllm_viz.core.revision import max_steps
from dllm_viz.core.step_record import StepRecord, quantize  # noqa: F401 - both read from here too
from dllm_viz.core.trace_renoise import CanvasSpan
from dllm_viz.core.trace_schema import MAX_TRACE_BYTES, check_trace_dict, dataclass_fields
from dllm_viz.core.trace_schema_renoise import check_renoise_trace_dict
from dllm_viz.core.schedules import planned_steps

try:  # a C parser (the [app] extra pins it; Gradio parses with it too): a 3 MB trace in ~20 ms, where `json` takes ~60
    import orjson
except ImportError:  # a core install without it parses with the standard library
    orjson = None

FORMAT = "dllm-viz-trace"
VERSION = 3  # the newest written: a trace with a per-step section; see READS
PLAIN_VERSION = 2  # what a trace without one is written as (its readers need nothing newer)
READS = (1, 2, 3)  # versions this dllm-viz reads
# What only a canvas of that kind has (at the top of a trace, in a step): a trace of another kind refuses it.
CANVAS_TOP = {"masked": (), "renoise": ("canvas", "canvases", "finished_by")}
CANVAS_STEP = {"renoise": ("renoise",)}


def first_end_of_text(token_ids: list[int], end_ids: int | Collection[int] | None) -> int | None:
    """Position of the first end-of-text token in `token_ids`, or None (no such token, or no id).

    `end_ids` is one id or several (a checkpoint may end a turn with one token and pad with
    another: <|eot_id|> / <|endoftext|>, <|im_end|> / <|endoftext|>). The text stops there; what
    follows is end padding.
    """
    ends = {end_ids} if isinstance(end_ids, int) else set(end_ids or ())
    return next((i for i, token in enumerate(token_ids) if token in ends), None)


def ngram_stats(ids: list[int]) -> dict[str, float]:
    """distinct-1, distinct-2 and the share of 3-grams that repeat an earlier one."""

    def grams(n: int) -> list[tuple[int, ...]]:
        return [tuple(ids[i : i + n]) for i in range(len(ids) - n + 1)]

    out = {}
    for n in (1, 2):
        g = grams(n)
        out[f"distinct_{n}"] = round(len(set(g)) / len(g), 6) if g else 0.0
    g3 = grams(3)
    out["repeat_3"] = round(1 - len(set(g3)) / len(g3), 6) if g3 else 0.0
    return out


# The notebook widget lives above core (app/notebook.py): the package's entry (dllm_viz/__init__.py)
# registers `dllm_viz.show` here, so `Trace.show` reaches it without core importing the app.
_VIEWERS: list[Callable[..., Any]] = []


def register_viewer(viewer: Callable[..., Any]) -> None:
    """Make `viewer(trace, **options)` what `Trace.show` calls."""
    _VIEWERS.append(viewer)

@dataclass
class Trace:
    """Everything about one request's decode, enough to replay it without the model."""

    prompt_ids: list[int]
    token_ids: list[int]  # (gen_length,) generated ids
    order: list[int]  # (gen_length,) step at which each position was last decided (confirmed or rewritten)
    steps: list[StepRecord]
    config: DecodeConfig
    model: str = "model"
    wall_time: float = 0.0  # seconds from the request's first step to its last
    vocab: dict[int, str] = field(default_factory=dict)  # id -> token text for ids in this trace
    text: str | None = None  # generated text, when the model has a tokenizer
    prompt_text: str | None = None
    mask_token_id: int | None = None
    # Position of the first end-of-text token in token_ids: `text` stops there and the tail is end
    # padding. None when the generation holds none (then the key is left out of the JSON).
    text_end: int | None = None
    # Step at which the end-of-text early stop filled every remaining mask; None when it did not fire.
    early_stop_step: int | None = None
    # Where this trace branched off its parents (`core.fork`), in step order; () for a decode.
    forks: tuple[ForkPoint, ...] = ()
    # The kind of canvas (`core.rules.CANVASES`); a renoising trace's canvases (their boundaries in token_ids and
    # their steps: `core.trace_renoise`) and why its request ended ("end_of_text" | "max_new_tokens"). Written only
    # for a canvas that is not masked.
    canvas: str = "masked"
    canvases: list[CanvasSpan] | None = None
    finished_by: str | None = None

    @property
    def nfe(self) -> int:
        """Forward passes that computed this request, as the engine the config follows counts them: one per
        step (none where ReMDM reused the step before's p_x0, two where a verify pass of its own ran), and
        SGLang's closing forward after each block where its LowConfidence loop runs one."""
        return sum((1 if rec.forwards is None else rec.forwards) + (1 if rec.closing_forward else 0)
                   for rec in self.steps)

    @property
    def nfe_saved(self) -> int | None:
        """Forward passes the end-of-text early stop saved: planned steps minus steps taken.

        None when it did not fire, or when the step count depends on the model (threshold schedule).
        """
        if self.early_stop_step is None:
            return None
        planned = planned_steps(self.config)
        return None if planned is None else max(0, planned - self.nfe)

    @property
    def cache_facts(self) -> dict[str, float] | None:
        """What a cached decode's forwards did (`core.cache_facts`); None for an uncached decode."""
        return cache_facts(self)

    @property
    def metrics(self) -> dict[str, float]:
        if self.canvas == "renoise":
            return {**trace_renoise.metrics(self), **ngram_stats(self.token_ids[: self.text_end])}
        confirmed = [
            rec.raw[pos] for rec in self.steps for pos in rec.selected if not math.isnan(rec.raw[pos])
        ]
        revised = {}
        if self.config.revise != "none" or self.config.indel != "none":
            revised = {"remasked": sum(len(rec.remasked or ()) for rec in self.steps),
                       "edited": sum(len(rec.edited or ()) for rec in self.steps)}
        if self.moved:  # the insert/delete rule's operations that move positions
            kinds = [e[1] for rec in self.steps if rec.indel is not None for e in rec.indel["edits"]]
            revised.update(deleted=kinds.count("delete"), split=kinds.count("split"))
        logprobs = [lp for rec in self.steps for lp in rec.logprobs]
        gen = self.config.gen_length
        wall = self.wall_time
        return {
            "nfe": self.nfe,
            "steps": len(self.steps),
            "mean_confidence": round(sum(confirmed) / len(confirmed), 6) if confirmed else 0.0,
            "mean_logprob": round(sum(logprobs) / len(logprobs), 6) if logprobs else 0.0,
            "tokens_per_second": round(gen / wall, 3) if wall > 0 else 0.0,
            "tokens_per_step": round(gen / len(self.steps), 3) if self.steps else 0.0,
            **ngram_stats(self.token_ids[: self.text_end]),  # the text, not its end padding
            **({"nfe_saved": self.nfe_saved} if self.nfe_saved is not None else {}),
            **revised,
            **(self.cache_facts or {}),
        }

    def token_text(self, token_id: int) -> str:
        if token_id == self.mask_token_id:
            return "[MASK]"
        return self.vocab.get(token_id, f"<{token_id}>")

    @property
    def revised(self) -> bool:
        """Whether some step took a token back or rewrote one, or a fork point forced or took one back."""
        return any(rec.remasked or rec.edited for rec in self.steps) or any(f.changes_canvas for f in self.forks)

    def _forks_at(self, step: int) -> list[ForkPoint]:
        return [f for f in self.forks if f.step == step]

    @property
    def moved(self) -> bool:
        """Whether positions may move between steps (an insert/delete rule's steps have a source map)."""
        return any(rec.indel is not None for rec in self.steps)

    def canvas_at(self, step: int) -> list[int | None]:
        """Generated ids as they stood after `step` (None = still masked); step -1 is the start. A step's
        decisions apply at the positions that entered it, then its tokens move (`StepRecord.source`). A renoising
        trace's canvas after a step is read from its record (`trace_renoise.canvas_at`; None: a canvas not begun)."""
        if self.canvas == "renoise":
            sections = [rec.renoise for rec in self.steps]
            return trace_renoise.canvas_at(self.token_ids, self.canvases or [], sections, step)  # type: ignore[arg-type]
        if not self.revised and not self.moved:  # every confirmation final: the order says it all
            return [tok if o <= step else None for tok, o in zip(self.token_ids, self.order)]
        canvas: list[int | None] = [None] * len(self.token_ids)
        upto = max(0, min(step + 1, len(self.steps)))  # the records applied
        for rec in self.steps[:upto]:
            for fork in self._forks_at(rec.step):  # a fork's change comes before its step's record
                fork.apply(canvas)
            for pos, tok in zip(rec.selected, rec.tokens):
                canvas[pos] = tok
            for pos, tok in zip(rec.edited or (), rec.edited_to or ()):
                canvas[pos] = tok
            for pos in rec.remasked or ():
                canvas[pos] = None
            if rec.source is not None:  # then its tokens move
                canvas = [canvas[j] if j >= 0 else None for j in rec.source]
        for fork in self.forks:  # ... and is part of the canvas after the step before it
            if upto <= fork.step <= step + 1:
                fork.apply(canvas)
        return canvas

    @property
    def history(self) -> list[list[tuple[int, str, int | None]]]:
        """Every event of the token at each final position, in order: `(step, kind, token)` with kind
        "confirm", "edit" (token: the new id) or "remask" (token: None); a fork point's (`forks`) are "force"
        and "remask" at the step before it (-1 for a fork at the start). Where positions moved, the events
        follow the token (the ones of a position it held before, under another number)."""
        out: list[list[tuple[int, str, int | None]]] = [[] for _ in self.token_ids]
        for rec in [*self.steps, None]:
            for fork in self._forks_at(len(self.steps) if rec is None else rec.step):
                for pos in fork.remask:
                    out[pos].append((fork.step - 1, "remask", None))
                for pos, tok in fork.force:
                    out[pos].append((fork.step - 1, "force", tok))
            if rec is None:
                break
            for pos in rec.remasked or ():
                out[pos].append((rec.step, "remask", None))
            for pos, tok in zip(rec.edited or (), rec.edited_to or ()):
                out[pos].append((rec.step, "edit", tok))
            for pos, tok in zip(rec.selected, rec.tokens):
                out[pos].append((rec.step, "confirm", tok))
            if rec.source is not None:
                out = [out[j] if j >= 0 else [] for j in rec.source]
        return out

    @property
    def decisions(self) -> list[int]:
        """How many times each position was decided (confirmed or rewritten): 1 everywhere in a decode
        whose confirmations are final."""
        return [sum(kind != "remask" for _, kind, _ in events) for events in self.history]

    # ----- JSON -----------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": VERSION if any(getattr(rec, k) is not None for rec in self.steps for k in StepRecord.SECTIONS)
            else PLAIN_VERSION,
            "model": self.model,
            "config": self.config.to_dict(),
            "prompt_ids": self.prompt_ids,
            "prompt_text": self.prompt_text,
            "token_ids": self.token_ids,
            "text": self.text,
            # Written only when set, so traces without an end of text read as they always did.
            **{key: getattr(self, key) for key in ("text_end", "early_stop_step") if getattr(self, key) is not None},
            **({"forks": [f.to_dict() for f in self.forks]} if self.forks else {}),  # a fork's lineage only
            "order": self.order,
            "wall_time": self.wall_time,
            "mask_token_id": self.mask_token_id,
            "metrics": self.metrics,
            "vocab": {str(k): v for k, v in sorted(self.vocab.items())},
            "steps": [rec.to_dict() for rec in self.steps],
            **({"canvas": self.canvas, "canvases": [span.to_dict() for span in self.canvases or []],
                "finished_by": self.finished_by} if self.canvas != "masked" else {}),
        }

    def show(self, **options: Any) -> Any:
        """This trace in a notebook widget: `dllm_viz.show(self, **options)` (the [notebook] extra)."""
        if not _VIEWERS:
            raise RuntimeError("no trace viewer registered: import dllm_viz")
        return _VIEWERS[-1](self, **options)

    def to_json(self, indent: int | None = None) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, allow_nan=False, indent=indent)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Trace:
        """A trace from parsed JSON; the whole schema is checked first (see `trace_schema`)."""
        if not isinstance(d, dict) or d.get("format") != FORMAT:
            got = d.get("format") if isinstance(d, dict) else d
            raise ValueError(f"trace format={short(got)} is invalid: expected {FORMAT!r}")
        if d.get("version") not in READS or type(d.get("version")) is not int:
            raise ValueError(f"trace version={short(d.get('version'))}: this dllm-viz reads versions "
                             + ", ".join(map(str, READS)))
        if "config" not in d:
            raise ValueError("trace field 'config' is missing")
        try:
            config = DecodeConfig.from_dict(d["config"])
        except ValueError as err:
            raise ValueError(f"trace config: {err}") from None
        version = d["version"]
        canvas = d.get("canvas", "masked") if version >= 3 else "masked"
        if canvas not in CANVAS_TOP:
            raise ValueError(f"trace canvas={short(canvas)} is invalid: expected " + " | ".join(CANVAS_TOP))
        others = {f for kind, names in CANVAS_TOP.items() if kind != canvas for f in names}
        trace_fields = [f for f in dataclass_fields(cls) if f not in others]
        steps = d.get("steps")
        forks = check_forks(d["forks"], steps=len(steps) if isinstance(steps, list) else 0,
                            gen_length=config.gen_length, canvas=canvas) if "forks" in d else ()
        if canvas == "renoise":
            if config.canvas_length is None or config.max_denoising_steps is None:
                raise ValueError("trace config: a renoising trace records the canvas_length and max_denoising_steps "
                                 "it ran with (got None)")
            check_renoise_trace_dict(d, trace_fields=trace_fields, gen_length=config.gen_length,
                                     canvas_length=config.canvas_length,
                                     max_steps=most_steps(config.max_denoising_steps, forks),
                                     budget=held(config.max_denoising_steps, forks, "max_denoising_steps"))
        else:
            step_fields = tuple(f for f in dataclass_fields(StepRecord) if f not in CANVAS_STEP["renoise"])
            if version == 1:  # version 1 has none of the revision or cache fields
                step_fields = tuple(f for f in step_fields if f not in StepRecord.OPTIONAL)
            elif version == 2:  # version 2 has no per-step section
                step_fields = tuple(f for f in step_fields if f not in StepRecord.SECTIONS)
            bound = max_steps(config) + (forks[-1].step if forks else 0)  # a fork's own steps follow its parent's
            check_trace_dict(d, trace_fields=trace_fields, step_fields=step_fields, gen_length=config.gen_length,
                             num_blocks=config.num_blocks, max_steps=bound, revision=config.revise,
                             cached=config.cache != "none", forks=forks, indel=config.indel)
        try:
            return cls(
                prompt_ids=list(d["prompt_ids"]),
                token_ids=list(d["token_ids"]),
                order=list(d["order"]),
                steps=[StepRecord.from_dict(s) for s in d["steps"]],
                config=config,
                model=d["model"],
                wall_time=d["wall_time"],
                vocab={int(k): v for k, v in d["vocab"].items()},
                text=d["text"],
                prompt_text=d["prompt_text"],
                mask_token_id=d["mask_token_id"],
                text_end=d.get("text_end"),
                early_stop_step=d.get("early_stop_step"),
                forks=forks,
                canvas=canvas,
                canvases=[CanvasSpan.from_dict(c) for c in d["canvases"]] if canvas != "masked" else None,
                finished_by=d.get("finished_by"),
            )
        except (KeyError, TypeError) as err:
            raise ValueError(f"trace JSON is missing or has a malformed field: {err}") from err

    @classmethod
    def from_json(cls, s: str | bytes) -> Trace:
        """Parse and validate; ValueError (naming the field) for anything malformed or too big."""
        if not isinstance(s, (str, bytes, bytearray)):
            raise ValueError(f"trace JSON={short(s)} is invalid: expected text")
        if len(s) > MAX_TRACE_BYTES:  # characters or bytes: either way no real trace is this long
            raise ValueError(f"trace file has {len(s)} bytes: this viewer reads at most {MAX_TRACE_BYTES} "
                             "(a real decode writes far less; the file is not a trace it wrote, or was altered)")
        with collector_paused():
            try:
                data = _parse(s)
            except RecursionError:
                raise ValueError("trace JSON nests too deeply: a trace is at most four levels deep") from None
            except ValueError as err:  # JSONDecodeError, NaN/Infinity, an integer of thousands of digits
                raise ValueError(f"trace JSON does not parse: {short(str(err))}") from None
            return cls.from_dict(data)


def _parse(s: str | bytes) -> Any:
    """The JSON value of `s`: orjson's where it parses it, else the standard library's, which also says why a
    text does not parse (NaN and Infinity refused: orjson refuses them too, and the words are then the
    standard library's, with or without orjson). The two read every text either parses alike, but for an
    integer past 64 bits, which orjson reads as a float (the checks then refuse it where an integer belongs),
    and nesting 1,000-1,024 deep, which only orjson parses (no field of a trace nests more than four)."""
    if orjson is not None:
        try:
            return orjson.loads(s)
        except orjson.JSONDecodeError:
            pass
    return json.loads(s, parse_constant=_refuse_constant)


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off for the block, as it was after it. Parsing a trace makes
    hundreds of thousands of lists and numbers, none of them garbage yet, and each full collection
    the allocations trigger walks every object of the process: a 3 MB trace parsed in 40 ms with it
    off took 250-540 ms with it on, inside a served app. Nothing here makes a reference cycle. (The
    switch is the process's: a block in another thread that ends meanwhile turns it back on.)"""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


def _refuse_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number a trace holds (traces write missing values as null)")
