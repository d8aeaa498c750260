"""The one decoding loop: model, schedule, sampler and trace joined, batched over requests.

Each step reads like the article (sections 2.2, 7):
  (1) one forward pass over every unfinished request;
  (2) confidence from the RAW logits at masked positions (the mask token never a candidate);
  (3) the schedule picks positions in the current block by that confidence;
  (4) tokens are drawn only there, from softmax(logits / T) after the vocabulary filters;
  (5) commit; (6) record.

`DecodeBatch` holds fixed slot buffers (canvas, attention mask, schedule state) so that the same
step serves `decode` (all requests start together) and the continuous-batching engine (requests
join and leave between steps). Randomness: every step, each request draws ``torch.rand(2, G)`` from
its own generator (G = its gen_length): row 0 holds the inverse-CDF uniform of each position, row 1
the score of the ``random`` confidence. That fixed consumption makes a request's trace independent
of its neighbours, of the batch size and of which positions were chosen.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, Sequence

import torch
import torch.nn.functional as F

from dllm_viz.core import sampling
from dllm_viz.core.config import CONFIDENCE_FROM, SAMPLE_SCOPES, DecodeConfig
from dllm_viz.core.schedules import (
    SCHEDULE_IDS, QuotaInputs, block_of, next_k, planned_steps, quota, select_top, temperature_at,
)
from dllm_viz.core.scoring import CONFIDENCE_IDS, Distribution, score
from dllm_viz.core.trace import StepRecord, Trace, quantize
from dllm_viz.models.base import Denoiser, check_denoiser, model_device, model_max_length, model_name


FROM_IDS = {name: i for i, name in enumerate(CONFIDENCE_FROM)}
SCOPE_IDS = {name: i for i, name in enumerate(SAMPLE_SCOPES)}


def encode_prompt(model: Any, prompt: Sequence[int] | str) -> list[int]:
    """Token ids of a prompt; strings need `model.tokenizer`."""
    if isinstance(prompt, str):
        tok = getattr(model, "tokenizer", None)
        if tok is None:
            raise ValueError("prompts: got text, but the model has no tokenizer; pass token-id lists")
        prompt = tok.encode(prompt)
    ids = list(prompt)
    for i in ids:
        if isinstance(i, bool) or not isinstance(i, int) or i < 0:
            raise ValueError(f"prompt_ids: {i!r} is not a non-negative integer token id")
        if i == model.mask_token_id:
            raise ValueError(f"prompt_ids: contains the mask token id {i}; prompts must be fully known")
    return ids


@dataclass
class Slot:
    """Host-side bookkeeping of the request in one slot."""

    config: DecodeConfig
    prompt_ids: list[int]
    generator: torch.Generator
    prompt_text: str | None = None
    step: int = 0
    remaining: int = 0
    start: float = field(default_factory=time.perf_counter)
    records: list[StepRecord] = field(default_factory=list)

    @property
    def length(self) -> int:
        return len(self.prompt_ids) + self.config.gen_length

    @property
    def done(self) -> bool:
        return self.remaining == 0


class DecodeBatch:
    """Fixed-capacity slot buffers and the batched step over the occupied slots."""

    def __init__(
        self,
        model: Denoiser,
        *,
        capacity: int,
        max_length: int,
        record_candidates: int = 5,
        device: torch.device | str | None = None,
    ) -> None:
        if not isinstance(record_candidates, int) or record_candidates < 0:
            raise ValueError(f"record_candidates={record_candidates!r}: expected an integer >= 0")
        self.model = model
        self.mask_id = int(model.mask_token_id)
        self.device = torch.device(device) if device is not None else model_device(model)
        self.capacity, self.max_length = capacity, max_length
        self.record_candidates = record_candidates
        S, dev, long = capacity, self.device, torch.long
        # One scratch column past max_length receives writes for positions a row does not have.
        self.canvas = torch.zeros(S, max_length + 1, dtype=long, device=dev)  # (S, N+1)
        self.attention = torch.zeros(S, max_length, dtype=torch.bool, device=dev)  # (S, N)
        self.order = torch.full((S, max_length), -1, dtype=long, device=dev)  # (S, G) confirm step
        # Per-slot parameters and schedule state, (S,) each.
        z = lambda dtype=long: torch.zeros(S, dtype=dtype, device=dev)  # noqa: E731
        self.gen_start, self.gen_len = z(), z()
        self.schedule_id, self.measure_id, self.from_id, self.scope_id = z(), z(), z(), z()
        self.top_k, self.min_k, self.block_size, self.steps_per_block = z(), z(), z(), z()
        self.vocab_top_k, self.restart = z(), z(torch.bool)
        self.decay, self.threshold, self.top_p = z(torch.float64), z(torch.float32), z(torch.float32)
        self.k, self.block_step, self.block = z(), z(), z()
        self.slots: dict[int, Slot] = {}

    # ----- slots ----------------------------------------------------------------------------
    def add(self, index: int, prompt_ids: list[int], config: DecodeConfig, generator: torch.Generator,
            prompt_text: str | None = None) -> Slot:
        """Place a request in slot `index` (free), resetting that slot's buffers."""
        slot = Slot(config=config, prompt_ids=prompt_ids, generator=generator, prompt_text=prompt_text,
                    remaining=config.gen_length)
        if slot.length > self.max_length:
            raise ValueError(
                f"prompt length + gen_length = {slot.length} exceeds the model's max_length={self.max_length}"
            )
        P, G, c = len(prompt_ids), config.gen_length, config
        row = torch.full((self.max_length + 1,), self.mask_id, dtype=torch.long)
        row[:P] = torch.tensor(prompt_ids, dtype=torch.long)
        self.canvas[index] = row.to(self.device)
        self.attention[index] = torch.arange(self.max_length, device=self.device) < slot.length
        self.order[index] = -1
        values = {
            "gen_start": P, "gen_len": G, "schedule_id": SCHEDULE_IDS[c.schedule],
            "measure_id": CONFIDENCE_IDS[c.confidence], "from_id": FROM_IDS[c.confidence_from],
            "scope_id": SCOPE_IDS[c.sample_scope], "top_k": c.initial_k, "min_k": c.min_k,
            "block_size": max(1, c.block_size), "steps_per_block": max(1, c.total_steps // c.num_blocks),
            "vocab_top_k": c.vocab_top_k or 0, "restart": c.block_schedule == "restart", "decay": c.decay,
            "threshold": c.threshold, "top_p": c.top_p if c.top_p is not None else 1.0,
            "k": c.initial_k, "block_step": 0, "block": 0,
        }
        for name, value in values.items():
            getattr(self, name)[index] = value
        self.slots[index] = slot
        return slot

    def release(self, index: int) -> Slot:
        return self.slots.pop(index)

    def active(self) -> list[int]:
        return sorted(i for i, s in self.slots.items() if not s.done)

    # ----- the step -------------------------------------------------------------------------
    @torch.inference_mode()
    def step(self, shared: torch.Generator | None = None) -> dict[int, StepRecord]:
        """One denoising step for every unfinished slot; returns each slot's new record."""
        idx_list = self.active()
        if not idx_list:
            return {}
        slots = [self.slots[i] for i in idx_list]
        dev, A = self.device, len(idx_list)
        idx = torch.tensor(idx_list, device=dev)
        n = max(s.length for s in slots)
        G = max(s.config.gen_length for s in slots)
        configs = [s.config for s in slots]

        # (1) one forward pass for every unfinished request, right-padded to the longest.
        logits = self.model(self.canvas[idx, :n], self.attention[idx, :n])  # (A, n, V)
        g = torch.arange(G, device=dev)
        gen_start, gen_len = self.gen_start[idx], self.gen_len[idx]
        valid = g < gen_len.unsqueeze(-1)  # (A, G)
        pos = torch.where(valid, gen_start.unsqueeze(-1) + g, self.max_length)  # (A, G); scratch if invalid
        current = self.canvas[idx].gather(1, pos)  # (A, G)
        masked = (current == self.mask_id) & valid  # (A, G)
        # Only masked positions need a distribution: pack their logits, M rows in row-major order
        # (the order of `masked_scatter`), so vocabulary-wide work shrinks as the canvas fills.
        rows = masked.nonzero(as_tuple=True)[0]  # (M,) row of each packed position
        gen_logits = logits[rows, pos[masked]].float().unsqueeze(1)  # (M, 1, V)
        gen_logits[..., self.mask_id] = float("-inf")  # the mask token is never a candidate

        noise = self._noise(slots, G, shared)  # (A, 2, G)
        temperature = torch.tensor(
            [temperature_at(s.config, s.step, 1 - s.remaining / max(1, s.config.gen_length)) for s in slots],
            dtype=torch.float32, device=dev,
        )  # (A,)
        draw_params = dict(temperature=temperature[rows], vocab_top_k=self.vocab_top_k[idx][rows],
                           top_p=self.top_p[idx][rows])  # (M,) each
        noise_m = noise.permute(1, 0, 2)[:, masked]  # (2, M)

        # (2) confidence from the raw distribution.
        raw = Distribution(gen_logits, top=self.record_candidates)
        measure_id = self.measure_id[idx][rows]  # (M,)
        measures = {c.confidence for c in configs}
        raw_conf = unpack(score(raw, measure_id, noise_m[1].unsqueeze(1), measures), masked)  # (A, G)
        conf = raw_conf
        from_id, scope_id = self.from_id[idx], self.scope_id[idx]
        wrong_from = {c.confidence_from for c in configs} - {"raw"}

        # Global sampling (teaching switch): draw at every masked position before scheduling.
        drawn_all = prob_all = None
        if any(c.sample_scope == "all" for c in configs):
            where = masked & (scope_id == SCOPE_IDS["all"]).unsqueeze(-1)
            w = where[masked]  # (M,)
            tok, prob = sampling.draw(gen_logits[w, 0], noise_m[0][w], **{k: v[w] for k, v in draw_params.items()})
            drawn_all = torch.full((A, G), -1, dtype=torch.long, device=dev).masked_scatter(where, tok)
            prob_all = torch.zeros(A, G, device=dev).masked_scatter(where, prob)
        if "tempered" in wrong_from:  # polluted confidence: the same measure on softmax(logits / T)
            tempered = Distribution(gen_logits / temperature.clamp(min=1e-4)[rows].view(-1, 1, 1), top=2)
            polluted = unpack(score(tempered, measure_id, noise_m[1].unsqueeze(1), measures), masked)  # (A, G)
            conf = torch.where((from_id == FROM_IDS["tempered"]).unsqueeze(-1), polluted, conf)
        if "sampled" in wrong_from:  # the sampled token's own probability
            conf = torch.where((from_id == FROM_IDS["sampled"]).unsqueeze(-1), prob_all, conf)

        # (3) the schedule picks positions of the current block by that confidence.
        block_size = self.block_size[idx]
        blocks = block_of(g, block_size)  # (A, G)
        current_block = torch.where(masked, blocks, G).min(-1).values  # (A,)
        eligible = masked & (blocks == current_block.unsqueeze(-1))
        new_block = current_block != self.block[idx]
        block_step = torch.where(new_block, 0, self.block_step[idx])
        top_k = self.top_k[idx]
        k = torch.where(new_block & self.restart[idx], top_k, self.k[idx])
        threshold = self.threshold[idx].unsqueeze(-1)
        q = QuotaInputs(
            k=k, top_k=top_k, min_k=self.min_k[idx], block_step=block_step, block_size=block_size,
            steps_per_block=self.steps_per_block[idx], eligible=eligible.sum(-1),
            above=(eligible & (conf >= threshold)).sum(-1),
        )
        count = quota(q, self.schedule_id[idx], {c.schedule for c in configs})  # (A,)
        selected = select_top(conf, eligible, count)  # (A, G)

        # (4) draw tokens only at the selected positions (argmax when T == 0).
        tokens = torch.full((A, G), -1, dtype=torch.long, device=dev)
        here = selected & (scope_id == SCOPE_IDS["selected"]).unsqueeze(-1)
        if drawn_all is not None:
            tokens = torch.where(selected & ~here, drawn_all, tokens)
        h = here[masked]  # (M,)
        tok, _ = sampling.draw(gen_logits[h, 0], noise_m[0][h], **{k: v[h] for k, v in draw_params.items()})
        tokens = tokens.masked_scatter(here, tok)

        # (5) commit, and advance the schedule state.
        committed = torch.where(selected, tokens, current)
        self.canvas[idx] = self.canvas[idx].scatter(1, pos, committed)
        steps_now = torch.tensor([s.step for s in slots], device=dev)
        self.order[idx, :G] = torch.where(selected, steps_now.unsqueeze(-1), self.order[idx, :G])
        self.k[idx] = next_k(k, self.decay[idx], self.min_k[idx])
        self.block_step[idx] = block_step + 1
        self.block[idx] = current_block

        # (6) record, with one device-to-host transfer per tensor.
        logp = unpack(raw.logp.gather(-1, tokens[masked].clamp(min=0).view(-1, 1, 1)).squeeze(-1), masked)  # (A, G)
        top_p, top_i = raw.top  # (M, 1, N) each
        cand = (unpack(top_p, masked), unpack(top_i, masked)) if self.record_candidates else None  # (A, G, N)
        return self._record(slots, idx_list, masked, conf, raw_conf, unpack(raw.argmax, masked, -1), cand, selected,
                            tokens, logp, count, current_block, temperature, wrong_from)

    def _noise(self, slots: list[Slot], G: int, shared: torch.Generator | None) -> torch.Tensor:
        """`(A, 2, G)` uniforms: each slot draws `(2, its gen_length)` from its own generator."""
        rows = []
        for s in slots:
            gen = shared if (s.config.rng == "shared" and shared is not None) else s.generator
            u = torch.rand(2, s.config.gen_length, generator=gen)
            rows.append(F.pad(u, (0, G - s.config.gen_length)))
        return torch.stack(rows).to(self.device, non_blocking=True)

    def _record(self, slots, idx_list, masked, conf, raw_conf, argmax, cand, selected, tokens, logp, count,
                current_block, temperature, wrong_from) -> dict[int, StepRecord]:
        nan = float("nan")
        # Order each row's selected positions by confidence, most confident first.
        sel_order = torch.sort(conf.masked_fill(~selected, float("-inf")), dim=-1, descending=True,
                               stable=True).indices
        host = {
            "masked": masked, "conf": conf.masked_fill(~masked, nan), "argmax": argmax,
            "sel_order": sel_order, "tokens": tokens, "logp": logp, "count": count, "block": current_block,
            "remaining": (masked & ~selected).sum(-1), "temperature": temperature,
        }
        if wrong_from:
            host["raw_conf"] = raw_conf.masked_fill(~masked, nan)
        if self.record_candidates:
            top_p, top_i = cand
            host["cand_p"], host["cand_i"] = top_p[..., : self.record_candidates], top_i[..., : self.record_candidates]
        host = {k: v.cpu() for k, v in host.items()}
        out = {}
        for row, (index, s) in enumerate(zip(idx_list, slots)):
            G = s.config.gen_length
            n_sel = int(host["count"][row])
            sel = host["sel_order"][row, :n_sel].tolist()
            masked_row = host["masked"][row, :G].tolist()
            rec = StepRecord(
                step=s.step, block=int(host["block"][row]), k=n_sel,
                temperature=round(float(host["temperature"][row]), 6),
                confidence=quantize(host["conf"][row, :G].double().tolist()),
                argmax=host["argmax"][row, :G].tolist(),
                selected=sel, tokens=host["tokens"][row, sel].tolist(),
                logprobs=quantize(host["logp"][row, sel].double().tolist()),
            )
            if wrong_from and s.config.confidence_from != "raw":
                rec.raw_confidence = quantize(host["raw_conf"][row, :G].double().tolist())
            if self.record_candidates:
                ids, ps = host["cand_i"][row, :G].tolist(), host["cand_p"][row, :G].double().tolist()
                rec.candidates = [c if m else [] for c, m in zip(ids, masked_row)]
                rec.candidate_probs = [quantize(p) if m else [] for p, m in zip(ps, masked_row)]
            s.records.append(rec)
            s.step += 1
            s.remaining = int(host["remaining"][row])
            out[index] = rec
        return out

    # ----- results --------------------------------------------------------------------------
    def trace(self, index: int) -> Trace:
        """The finished trace of slot `index` (call before `release`)."""
        s = self.slots[index]
        P, G = len(s.prompt_ids), s.config.gen_length
        token_ids = self.canvas[index, P : P + G].tolist()
        order = self.order[index, :G].tolist()
        tok = getattr(self.model, "tokenizer", None)
        vocab, text = {}, None
        if tok is not None:
            seen = set(s.prompt_ids) | set(token_ids)
            for rec in s.records:
                seen.update(i for i in rec.argmax if i >= 0)
                for cands in rec.candidates or []:
                    seen.update(cands)
            vocab = {i: tok.decode([i]) for i in sorted(seen)}
            text = tok.decode(token_ids)
        return Trace(
            prompt_ids=s.prompt_ids, token_ids=token_ids, order=order, steps=s.records, config=s.config,
            model=model_name(self.model),
            wall_time=round(time.perf_counter() - s.start, 6), vocab=vocab, text=text,
            prompt_text=s.prompt_text, mask_token_id=self.mask_id,
        )


def unpack(packed: torch.Tensor, where: torch.Tensor, fill: float = 0) -> torch.Tensor:
    """Scatter `packed (M, 1, ...)` back to `(A, G, ...)` at the True entries of `where (A, G)`.

    Row-major, the order `where.nonzero()` packed them in; `fill` elsewhere.
    """
    A, G = where.shape
    tail = packed.shape[2:]
    out = torch.full((A, G, *tail), fill, dtype=packed.dtype, device=packed.device)
    return out.masked_scatter(where.view(A, G, *[1] * len(tail)).expand(A, G, *tail), packed)


def request_generator(config: DecodeConfig) -> torch.Generator:
    """The request's own generator, seeded from its config (never the global RNG).

    It lives on the CPU whatever the model's device: the uniforms of a step are a few kilobytes
    to copy, and a CPU stream makes a seed mean the same tokens on CPU and CUDA (given the same
    logits), and across tensor-parallel ranks in the SGLang plugin.
    """
    gen = torch.Generator()
    gen.manual_seed(config.seed)
    return gen


def decode(
    model: Denoiser,
    prompts: Sequence[Sequence[int] | str],
    config: DecodeConfig | Sequence[DecodeConfig],
    *,
    record_candidates: int = 5,
    progress: bool = False,
    on_step: Callable[[int, StepRecord], None] | None = None,
) -> list[Trace]:
    """Decode every prompt together; returns one Trace per prompt, in order.

    `config` is one DecodeConfig for all prompts or a list with one per prompt. Requests finish
    independently and leave the forward pass when their last mask is confirmed. `on_step(i, record)`
    is called for prompt i after each of its steps.
    """
    if isinstance(prompts, (str, bytes)) or not isinstance(prompts, Sequence):
        raise ValueError(f"prompts={prompts!r}: expected a list of prompts (token-id lists or strings)")
    configs = [config] * len(prompts) if isinstance(config, DecodeConfig) else list(config)
    if len(configs) != len(prompts):
        raise ValueError(f"config: got {len(configs)} configs for {len(prompts)} prompts; expected one or one each")
    for c in configs:
        if not isinstance(c, DecodeConfig):
            raise ValueError(f"config: {c!r} is not a DecodeConfig")
    if not prompts:
        return []
    check_denoiser(model)
    ids = [encode_prompt(model, p) for p in prompts]
    limit = model_max_length(model)
    longest = max(len(p) + c.gen_length for p, c in zip(ids, configs))
    if limit is not None and longest > limit:
        raise ValueError(f"prompt length + gen_length = {longest} exceeds the model's max_length={limit}")
    batch = DecodeBatch(model, capacity=len(ids), max_length=max(1, longest), record_candidates=record_candidates)
    shared = None
    for i, (p, c, raw_prompt) in enumerate(zip(ids, configs, prompts)):
        batch.add(i, p, c, request_generator(c), raw_prompt if isinstance(raw_prompt, str) else None)
        if c.rng == "shared" and shared is None:  # the "global seed" mistake: one stream for all
            shared = request_generator(c)
    bar = None
    if progress:
        from tqdm.auto import tqdm

        planned = [planned_steps(c) for c in configs]
        bar = tqdm(total=None if None in planned else max(planned), desc="decode", unit="step")
    while batch.active():
        records = batch.step(shared)
        if on_step is not None:
            for i, rec in records.items():
                on_step(i, rec)
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    return [batch.trace(i) for i in range(len(ids))]


class Runner(Protocol):
    """What the UI is given to decode with: plain `decode` on a model, or the shared engine.

    One trace per prompt, in order; `configs[i]` decodes `prompts[i]`; the requests of one call are
    decoded together (so a shared-RNG config shares its stream with its neighbours of that call).
    """

    def __call__(
        self,
        prompts: list[str],
        configs: list[DecodeConfig],
        *,
        on_step: Callable[[int, StepRecord], None] | None = None,
        record_candidates: int = 5,
    ) -> list[Trace]: ...
