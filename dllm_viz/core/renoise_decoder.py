"""The renoising decode: canvases one after another, batched over requests (docs/renoise.md).

The loop follows `DiffusionGemmaGenerationMixin.generate` (transformers 5.24,
`generation_diffusion_gemma.py`) step by step; the numbers are generate()'s own comments:
  1.a  encode the prompt, then each finished canvas, into the exact cache (`Renoiser.encode`);
  1.b  a uniformly random canvas (`EntropyBoundSampler.initialize_canvas`), no self-conditioning,
       the stop rule's history reset (`_prepare_denoiser_inputs`);
  1.c  up to N steps (`_denoising_step`, the pure functions of `core.renoise`):
       i.   the decoder on the canvas and the previous step's tempered logits;
       ii.  temperature, softmax, one proposal per position, the argmax canvas;
       iii. entropy-bound acceptance, renoise;
       iv.  the stop rule; a stopped row is frozen until every row has stopped;
       v.   the tempered logits become the next step's self-conditioning;
  1.d  append the last argmax canvas;
  1.e  end-of-text and length stops, padding after the first end-of-text (`_finalize_canvas`);
  1.f  next canvas.
Differences, by design: randomness comes from one generator per request (seeded with
`RenoiseSettings.seed`, on the model's device), so at batch 1 every draw is the one `generate()` makes
after `torch.manual_seed(seed)`, and at any batch a request's draws do not depend on its neighbours
(a frozen row draws nothing); a request that has finished leaves the batch before the next canvas
(generate() keeps it and pads); each request may carry its own settings (only the canvas length is
shared by a batch: requests are grouped by it).
"""
from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import torch

from dllm_viz.core.budget import bound_work
from dllm_viz.core.renoise import (
    RenoiseSettings, draw_proposal, empty_history, entropy_bound_accept, linear_temperature, renoise,
    stable_and_confident, temper, token_entropy, uniform_canvas,
)
from dllm_viz.core.renoise_record import RenoiseCanvas, RenoiseResult, RenoiseStep
from dllm_viz.models.base import model_max_length
from dllm_viz.models.renoiser import RenoiseContext, Renoiser, is_renoiser


def generator_for(settings: RenoiseSettings, device: torch.device | str) -> torch.Generator:
    """A request's own generator on the model's device, seeded with its seed (at batch 1, every draw is the one
    `generate()` makes from the global generator after `torch.manual_seed(seed)` on that device)."""
    return torch.Generator(device=device).manual_seed(settings.seed)


@dataclass(frozen=True)
class Rows:
    """Per-row settings as tensors `(B,)`, and the rows' own generators."""

    requests: list[int]  # request index of each batch row
    generators: list[torch.Generator]
    bound: torch.Tensor  # float64
    t_min: torch.Tensor  # float64
    t_max: torch.Tensor  # float64
    steps: torch.Tensor  # long: max_denoising_steps
    stability: torch.Tensor  # long
    confidence: torch.Tensor  # float64
    raw: torch.Tensor  # bool: acceptance ranks by the raw logits' entropy

    @classmethod
    def build(cls, requests: list[int], settings: Sequence[RenoiseSettings], device: torch.device,
              generators: Sequence[torch.Generator] | None = None) -> Rows:
        """The rows of `requests`, each with its own generator: `generators[i]` for request i when given, else
        a new one on `device` seeded with the request's seed (what `torch.manual_seed(seed)` seeds there)."""
        def col(name: str, dtype: torch.dtype) -> torch.Tensor:
            return torch.tensor([getattr(settings[r], name) for r in requests], dtype=dtype, device=device)

        if generators is None:
            generators = [generator_for(settings[r], device) for r in range(len(settings))]
        generators = [generators[r] for r in requests]
        return cls(requests=list(requests), generators=generators, bound=col("entropy_bound", torch.float64),
                   t_min=col("t_min", torch.float64), t_max=col("t_max", torch.float64),
                   steps=col("max_denoising_steps", torch.long), stability=col("stability_threshold", torch.long),
                   confidence=col("confidence_threshold", torch.float64),
                   raw=torch.tensor([settings[r].acceptance_from == "raw" for r in requests], device=device))

    def take(self, keep: torch.Tensor) -> Rows:
        """The rows at indices `keep (k,)`."""
        idx = keep.tolist()
        return Rows(requests=[self.requests[i] for i in idx], generators=[self.generators[i] for i in idx],
                    **{name: getattr(self, name)[keep] for name in
                       ("bound", "t_min", "t_max", "steps", "stability", "confidence", "raw")})


@dataclass(frozen=True)
class BatchStep:
    """One step of the whole batch, before it is split per request (`RenoiseStep` gives the fields)."""

    active: torch.Tensor  # (B,) bool: rows that stepped (not yet stopped, steps left)
    steps_left: torch.Tensor  # (B,) long
    temperature: torch.Tensor  # (B,) float32
    read: torch.Tensor  # (B, L) long
    proposal: torch.Tensor  # (B, L) long
    accepted: torch.Tensor  # (B, L) bool
    written: torch.Tensor  # (B, L) long
    argmax: torch.Tensor  # (B, L) long
    entropy: torch.Tensor  # (B, L) float32
    mean_entropy: torch.Tensor  # (B,) float32
    stable: torch.Tensor  # (B,) bool
    confident: torch.Tensor  # (B,) bool
    stopped: torch.Tensor  # (B,) bool


def _draw_rows(active: torch.Tensor, rows: Rows, draw) -> torch.Tensor:
    """`draw(index, generators)` for the active rows only: a frozen row's generator is not touched."""
    if bool(active.all()):
        return draw(None, rows.generators)
    index = active.nonzero().squeeze(1)
    return draw(index, [rows.generators[i] for i in index.tolist()])


@dataclass
class CanvasState:
    """The state of one canvas of a group between two steps (1.b-1.c): what the next step reads."""

    canvas: torch.Tensor  # (B, L) long: the canvas the next step reads
    argmax: torch.Tensor  # (B, L) long: the last argmax canvas (the output when the canvas ends)
    self_conditioning: torch.Tensor | None  # (B, L, V) the last tempered logits; None before the first step
    history: torch.Tensor  # (S, B, L) the stop rule's last argmax canvases
    stopped: torch.Tensor  # (B,) bool
    k: int = 0  # steps taken on this canvas

    @classmethod
    def start(cls, model: Renoiser, rows: Rows, length: int, depth: int = 0) -> CanvasState:
        """1.b: a uniform canvas from each row's generator, no self-conditioning, the history reset (at least
        `depth` argmax canvases deep: `RenoiseGroup`'s)."""
        B, device = len(rows.requests), model.device
        canvas = uniform_canvas(rows.generators, model.vocab_size, length, device)  # (B, L)
        return cls(canvas=canvas, argmax=canvas, self_conditioning=None,
                   history=empty_history(rows.stability, B, length, device, depth),
                   stopped=torch.zeros(B, dtype=torch.bool, device=device))

    def active(self, rows: Rows, k: int | None = None) -> torch.Tensor:
        """(B,) bool: the rows that step at step `k` (default: the next): not stopped, steps left."""
        return ~self.stopped & (rows.steps > (self.k if k is None else k))


def denoise_step(model: Renoiser, context: RenoiseContext, rows: Rows, state: CanvasState
                 ) -> tuple[CanvasState, BatchStep]:
    """Step 1.c once for every active row of a canvas: the state after it and what it did."""
    L, V, device, k = context.canvas_length, model.vocab_size, model.device, state.k
    canvas, active = state.canvas, state.active(rows)  # (B, L), (B,)
    steps_left = (rows.steps - k).clamp(min=1)  # (B,) transformers' cur_step, N..1
    logits = model.denoise(canvas, context, state.self_conditioning)  # (B, L, V) 1.c.i
    temperature = linear_temperature(steps_left, rows.steps, rows.t_min, rows.t_max)  # (B,) 1.c.ii
    tempered = temper(logits, temperature)
    probs = torch.softmax(tempered, dim=-1, dtype=torch.float32)
    proposal = _draw_rows(active, rows, lambda i, g: draw_proposal(probs if i is None else probs[i], g))
    new_argmax = tempered.argmax(dim=-1)  # (B, L)
    tempered_entropy = token_entropy(tempered)  # (B, L)
    entropy = tempered_entropy
    if bool(rows.raw.any()):
        entropy = torch.where(rows.raw[:, None], token_entropy(logits), tempered_entropy)
    accepted = entropy_bound_accept(entropy, rows.bound)  # (B, L) 1.c.iii
    noise = _draw_rows(active, rows, lambda i, g: uniform_canvas(g, V, L, device))
    if not bool(active.all()):
        index = active.nonzero().squeeze(1)
        proposal = canvas.index_put((index,), proposal)
        noise = canvas.index_put((index,), noise)
    written = renoise(proposal, noise, accepted)
    stop = stable_and_confident(new_argmax, tempered_entropy, state.history, rows.stability, rows.confidence)  # 1.c.iv
    now = active & stop.stable & stop.confident
    record = BatchStep(active=active, steps_left=steps_left, temperature=temperature, read=canvas, proposal=proposal,
                       accepted=accepted, written=written, argmax=new_argmax, entropy=entropy,
                       mean_entropy=stop.mean_entropy, stable=stop.stable, confident=stop.confident, stopped=now)
    frozen = ~active[:, None]
    after = CanvasState(canvas=torch.where(frozen, canvas, written),
                        argmax=torch.where(frozen, state.argmax, new_argmax),
                        self_conditioning=tempered,  # 1.c.v (a frozen row's is never read again)
                        history=stop.history, stopped=state.stopped | now, k=k + 1)
    return after, record


def denoise_canvas(model: Renoiser, context: RenoiseContext, rows: Rows) -> tuple[torch.Tensor, list[BatchStep]]:
    """Steps 1.b-1.c for one canvas of every row: its final argmax canvas `(B, L)` and the steps."""
    state = CanvasState.start(model, rows, context.canvas_length)
    steps: list[BatchStep] = []
    while bool(state.active(rows).any()):
        state, step = denoise_step(model, context, rows, state)
        steps.append(step)
    return state.argmax, steps


def finalize_canvas(ids: torch.Tensor, settings: Sequence[RenoiseSettings], requests: list[int]
                    ) -> tuple[torch.Tensor, torch.Tensor]:
    """Step 1.e (`_finalize_canvas`): `ids (B, L)` with every token after a row's first end-of-text
    replaced by its pad id (when it has one), and whether each row met end-of-text `(B,)`."""
    out = ids.clone()
    ended = torch.zeros(ids.shape[0], dtype=torch.bool, device=ids.device)
    for b, r in enumerate(requests):  # the end-of-text sets differ per request; B is small
        eos = settings[r].eos_token_ids
        if not eos:
            continue
        is_eos = torch.isin(ids[b], torch.tensor(eos, device=ids.device))  # (L,)
        ended[b] = is_eos.any()
        if settings[r].pad_token_id is not None and bool(ended[b]):
            seen = is_eos.cumsum(-1)
            out[b][(seen > 0) & ~((seen == 1) & is_eos)] = settings[r].pad_token_id
    return out, ended


def _split(step: BatchStep, k: int, rows: Rows) -> list[tuple[int, RenoiseStep]]:
    """The batch step as one record per active row, with the request it belongs to."""
    cpu = {name: getattr(step, name).cpu() for name in (
        "active", "steps_left", "temperature", "read", "proposal", "accepted", "written", "argmax", "entropy",
        "mean_entropy", "stable", "confident", "stopped")}
    scalars = {name: cpu[name].tolist() for name in ("steps_left", "temperature", "mean_entropy", "stable",
                                                     "confident", "stopped", "active")}
    out = []
    for b in range(len(rows.requests)):
        if not scalars["active"][b]:
            continue
        out.append((rows.requests[b], RenoiseStep(
            step=k, steps_left=scalars["steps_left"][b], temperature=scalars["temperature"][b], read=cpu["read"][b],
            proposal=cpu["proposal"][b], accepted=cpu["accepted"][b], written=cpu["written"][b],
            argmax=cpu["argmax"][b], entropy=cpu["entropy"][b], mean_entropy=scalars["mean_entropy"][b],
            stable=scalars["stable"][b], confident=scalars["confident"][b], stopped=scalars["stopped"][b])))
    return out


def _left_padded(prompts: list[list[int]], device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """Prompts `(B, n)` left-padded with id 0, and the mask `(B, n)` True on real tokens."""
    width = max(len(p) for p in prompts)
    ids = torch.zeros(len(prompts), width, dtype=torch.long)
    mask = torch.zeros(len(prompts), width, dtype=torch.bool)
    for b, p in enumerate(prompts):
        if p:
            ids[b, width - len(p):] = torch.tensor(p)
            mask[b, width - len(p):] = True
    return ids.to(device), mask.to(device)


@dataclass
class Progress:
    """One request of a group: what it has appended so far."""

    canvases: list[RenoiseCanvas] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    steps: list[RenoiseStep] = field(default_factory=list)  # the current canvas's
    forwards: int = 0
    finished_by: str = ""  # one of FINISH_REASONS once the request is done


class RenoiseGroup:
    """Requests decoded together: one exact cache and one decoder forward per step for all of them (one
    canvas length). `step()` takes step 1.c of the current canvas for every row still in it; the step
    that ends a canvas also finishes it (1.d-1.f): requests that are done leave the group, the others'
    next canvas is encoded and started. A step that raises in the decoder changes nothing. `depth`: the stop
    rule's history keeps at least that many argmax canvases (a fork that raises a row's stability threshold
    half-way through a canvas reads the ones before the switch, `core.fork_renoise`)."""

    def __init__(self, model: Renoiser, prompts: Sequence[list[int]], settings: Sequence[RenoiseSettings],
                 requests: list[int], length: int, generators: Sequence[torch.Generator] | None = None,
                 depth: int = 0) -> None:
        self.model, self.settings, self.length, self.depth = model, list(settings), length, depth
        self.rows = Rows.build(requests, settings, model.device, generators)
        self.leaving: set[int] = set()  # requests dropped (cancelled): frozen, gone at the canvas's end
        ids, mask = _left_padded([prompts[r] for r in requests], model.device)
        self.context = model.encode(ids, mask, None, canvas_length=length)  # 1.a
        self.progress = {r: Progress() for r in requests}
        self.index = 0  # the current canvas
        self.state = CanvasState.start(model, self.rows, length, depth)  # 1.b
        self.start = time.perf_counter()

    @property
    def done(self) -> bool:
        return not self.rows.requests

    def drop(self, request: int) -> None:
        """Stop decoding `request` (its caller left): its row is frozen, draws nothing, and leaves the group when
        the canvas ends (a row cannot leave a canvas half-way: the others' cache and masks hold it)."""
        if request in self.rows.requests and request not in self.leaving:
            self.leaving.add(request)
            b = self.rows.requests.index(request)
            self.state.stopped = self.state.stopped.clone()
            self.state.stopped[b] = True

    def reconfigure(self, request: int, settings: RenoiseSettings) -> None:
        """Decode `request` under `settings` (its canvas length the group's) from its next step on: a fork's
        switch of knobs (`core.fork_renoise`). Its canvas, self-conditioning, history and generator stay; a
        history shallower than the new stability threshold is deepened with entries no argmax equals (the
        canvases before it began are not known: `depth` avoids that)."""
        self.settings[request] = settings
        own = dict(zip(self.rows.requests, self.rows.generators))
        self.rows = Rows.build(self.rows.requests, self.settings, self.model.device,
                               [own.get(r) for r in range(len(self.settings))])  # type: ignore[misc]
        history = self.state.history  # (S, B, L)
        missing = int(settings.stability_threshold) - history.shape[0]
        if missing > 0:
            older = history.new_full((missing, *history.shape[1:]), -1)
            self.state = replace(self.state, history=torch.cat([older, history]))

    def step(self) -> list[tuple[int, RenoiseStep]]:
        """One step of the current canvas (1.c); the records of the rows that stepped, by request. (When every
        row left is frozen, because the one still stepping was dropped, it only finishes the canvas.)"""
        if not bool(self.state.active(self.rows).any()):
            self._finish_canvas()
            return []
        state, batch = denoise_step(self.model, self.context, self.rows, self.state)
        records = _split(batch, self.state.k, self.rows)
        self.state = state
        for r, record in records:
            self.progress[r].steps.append(record)
        if not bool(state.active(self.rows).any()):
            self._finish_canvas()
        return records

    def _finish_canvas(self) -> None:
        """1.d-1.f: append each row's last argmax canvas, padded after end-of-text; drop the finished
        requests; encode the appended canvases and start the next one."""
        rows, settings = self.rows, self.settings
        appended, ended = finalize_canvas(self.state.argmax, settings, rows.requests)  # 1.d, 1.e
        appended_cpu, ended_list = appended.cpu(), ended.tolist()
        keep = []
        for b, r in enumerate(rows.requests):
            p = self.progress[r]
            p.canvases.append(RenoiseCanvas(index=self.index, start=len(p.tokens), steps=tuple(p.steps),
                                            ids=appended_cpu[b], stop_fired=bool(p.steps and p.steps[-1].stopped)))
            p.tokens.extend(appended_cpu[b].tolist())
            p.forwards, p.steps = p.forwards + len(p.steps), []
            if ended_list[b] or len(p.tokens) >= settings[r].max_new_tokens:
                p.finished_by = "end_of_text" if ended_list[b] else "max_new_tokens"
            elif r not in self.leaving:
                keep.append(b)
        self.index += 1
        if not keep:
            self.rows = rows.take(torch.zeros(0, dtype=torch.long, device=self.model.device))
            return
        context = self.context
        if len(keep) < len(rows.requests):  # finished requests leave the batch
            kept = torch.tensor(keep, device=self.model.device)
            context, rows, appended = self.model.select(context, kept), rows.take(kept), appended[kept]
        self.context = self.model.encode(appended, torch.ones_like(appended, dtype=torch.bool), context,
                                         canvas_length=self.length)  # 1.f, then 1.a of the next canvas
        self.rows = rows
        self.state = CanvasState.start(self.model, rows, self.length, self.depth)  # 1.b of the next canvas


def resolve(model: Renoiser, settings: RenoiseSettings | Sequence[RenoiseSettings], count: int
            ) -> list[RenoiseSettings]:
    """One settings object per prompt, the canvas length resolved against the model."""
    items = [settings] * count if isinstance(settings, RenoiseSettings) else list(settings)
    if len(items) != count or not all(isinstance(s, RenoiseSettings) for s in items):
        raise ValueError(f"settings is invalid: expected one RenoiseSettings or {count} of them (one per prompt)")
    return [s if s.canvas_length is not None else replace(s, canvas_length=model.canvas_length) for s in items]


def prompt_ids(model: Renoiser, prompt: Sequence[int] | str) -> list[int]:
    """Token ids of a prompt (text needs `model.tokenizer`); every id in [0, vocab_size)."""
    if isinstance(prompt, str):
        if getattr(model, "tokenizer", None) is None:
            raise ValueError("prompts: got text, but the model has no tokenizer; pass token-id lists")
        prompt = model.tokenizer.encode(prompt)
    ids = list(prompt)
    for i in ids:
        if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < model.vocab_size:
            raise ValueError(f"prompt token {i!r} is invalid: expected an integer id in [0, {model.vocab_size})")
    if not ids:
        raise ValueError("prompt=[] is invalid: expected at least one token (the encoder needs a context)")
    return ids


@torch.inference_mode()
def renoise_decode(model: Renoiser, prompts: Sequence[Sequence[int] | str],
                   settings: RenoiseSettings | Sequence[RenoiseSettings], *,
                   on_step: Callable[[int, RenoiseStep], None] | None = None) -> list[RenoiseResult]:
    """Decode every prompt with the renoising loop; one `RenoiseResult` per prompt, in order.

    Bad input (a prompt id out of range, settings of the wrong count, a model that is not a
    `Renoiser`, canvases past the model's context: `core.budget`) raises ValueError before any
    forward or buffer, so nothing in the batch runs half-way. `on_step(i, record)` is called for
    prompt i after each of its steps.
    """
    if not is_renoiser(model):
        raise ValueError(f"model={type(model).__name__} is invalid: expected a Renoiser (encode, denoise, select, "
                         "generation_defaults), e.g. a DiffusionGemma checkpoint from load_model")
    if isinstance(prompts, str) or not prompts:
        raise ValueError("prompts is invalid: expected a non-empty list of prompts (text or token-id lists)")
    ids = [prompt_ids(model, p) for p in prompts]
    items = resolve(model, settings, len(ids))
    limit = model_max_length(model)
    for p, s in zip(ids, items):  # the canvases against the model's context, before any is allocated
        bound_work(s, prompt_length=len(p), max_length=limit)
    start = time.perf_counter()
    by_length: dict[int, list[int]] = {}
    for r, s in enumerate(items):
        by_length.setdefault(s.canvas_length, []).append(r)  # type: ignore[arg-type]
    progress: dict[int, Progress] = {}
    for length, requests in by_length.items():
        group = RenoiseGroup(model, ids, items, requests, length)
        while not group.done:
            for r, record in group.step():
                if on_step is not None:
                    on_step(r, record)
        progress.update(group.progress)
    wall = round(time.perf_counter() - start, 6)
    return [result_of(model, ids[r], items[r], progress[r], wall) for r in range(len(ids))]


def result_of(model: Renoiser, prompt: list[int], settings: RenoiseSettings, p: Progress, wall: float) -> RenoiseResult:
    """A finished request's `RenoiseResult` (its text cut at the first end-of-text, when the model has a tokenizer)."""
    tokens = p.tokens
    text = None
    if getattr(model, "tokenizer", None) is not None:
        eos = set(settings.eos_token_ids)
        cut = next((i for i, t in enumerate(tokens) if t in eos), len(tokens))
        text = model.tokenizer.decode(tokens[:cut])
    return RenoiseResult(prompt_ids=tuple(prompt), token_ids=tuple(tokens), canvases=tuple(p.canvases),
                         settings=settings, model=getattr(model, "name", type(model).__name__),
                         finished_by=p.finished_by, forwards=p.forwards, wall_time=wall, text=text)
