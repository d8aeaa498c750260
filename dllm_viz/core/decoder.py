"""The one decoding loop: prompts encoded, each request given its own generator, and the batched step
(`core.batch.DecodeBatch`) run until every request is done; `Runner`, what the playground decodes with.

How one step reads (the article's steps (1)-(6)) and where its randomness comes from: `core.batch`.
"""
from __future__ import annotations

from typing import Any, Callable, Protocol, Sequence

import torch

from dllm_viz.core import rules
from dllm_viz.core.batch import DecodeBatch
from dllm_viz.core.budget import bound_work
from dllm_viz.core.config import MAX_COUNT, DecodeConfig, short
from dllm_viz.core.renoise_batch import decode_renoise
from dllm_viz.core.schedules import planned_steps
from dllm_viz.core.trace import StepRecord, Trace
from dllm_viz.models.base import Denoiser, check_denoiser, model_max_length, model_name

__all__ = ["DecodeBatch", "Runner", "decode", "encode_prompt", "request_generator"]  # DecodeBatch: core.batch


def encode_prompt(model: Any, prompt: Sequence[int] | str) -> list[int]:
    """Token ids of a prompt; strings need `model.tokenizer`.

    Every id must index the model's embedding: in [0, `model.vocab_size`) when the model says its
    size, else at most `MAX_COUNT` (an id past int64 cannot even become a tensor). A bad id raises
    `ValueError` naming it (clipped), never an `IndexError` or an overflow from inside the forward.
    """
    if isinstance(prompt, str):
        tok = getattr(model, "tokenizer", None)
        if tok is None:
            raise ValueError("prompts: got text, but the model has no tokenizer; pass token-id lists")
        prompt = tok.encode(prompt)
    ids = list(prompt)
    vocab = getattr(model, "vocab_size", None)
    known = isinstance(vocab, int) and not isinstance(vocab, bool) and vocab > 0
    end = vocab if known else MAX_COUNT + 1
    for i in ids:
        if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < end:
            where = "the model's vocabulary" if known else "a bound far above any vocabulary"
            raise ValueError(f"prompt_ids: {short(i)} is invalid: expected token ids in [0, {end}), {where}")
        if i == model.mask_token_id:
            raise ValueError(f"prompt_ids: contains the mask token id {i}; prompts must be fully known")
    return ids


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
        rules.check_canvas(c, rules.canvas_of(model), repr(model_name(model)))  # a masked-only rule, named
    if not prompts:
        return []
    if rules.canvas_of(model) == "renoise":  # its own loop (core.renoise_batch); the masked path below is untouched
        return decode_renoise(model, prompts, configs, on_step=on_step)
    check_denoiser(model)
    ids = [encode_prompt(model, p) for p in prompts]
    limit = model_max_length(model)
    longest = max(bound_work(c, prompt_length=len(p), max_length=limit).positions for p, c in zip(ids, configs))
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
    with torch.inference_mode():  # entered once: each step would enter it otherwise
        while batch.active():
            records = batch.step(shared, records=on_step is not None)  # none read: made at the end, all at once
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
