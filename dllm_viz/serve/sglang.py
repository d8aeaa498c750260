"""The dllm-viz policy as an SGLang dLLM algorithm: `--dllm-algorithm DllmVizPolicy`.

SGLang (the release pinned in `dllm_viz.serve.SGLANG_VERSION`) decodes block-causal
diffusion models one block at a time. Its `DllmAlgorithm` base class owns the loop: it runs a
forward over each request's current block and calls `step`, which must advance the block's
`input_ids` in place and report, per request, whether the block is finished. In the default
first-done-first-out mode each scheduler round is one forward and one step, and the state that
`init_step_state` made is carried between rounds on the request; in synchronous mode
(`--no-dllm-fdfo`) one call runs the whole block for the whole batch.

Each step is the playground's step (`dllm_viz.core.decoder.DecodeBatch.step`) restricted to one block,
built from the same pure functions so that the semantics cannot drift:
  (1) SGLang's forward gives the block's logits;
  (2) confidence from the RAW logits at masked positions (`scoring`), the mask token never a candidate;
  (3) the schedule picks positions (`schedules.quota` + `select_top`), k restarting in every block;
  (4) tokens are drawn only there (`sampling.draw`: temperature, vocab top-k, top-p, argmax at T=0)
      with uniforms from the request's own generator: every step draws `torch.rand(2, M)` (M the
      block's masks at its start): row 0 the inverse-CDF uniform of each position, row 1 the score
      of the `random` confidence, exactly as the playground draws for a one-block request;
  (5) commit in place; a block is reported done only at the step after its last confirmation,
      when a forward has seen the final tokens (SGLang keeps that forward's KV for the block).

The per-block parameters come from `Policy.block_config(masks)`: one DecodeConfig per block, so
quotas, staged temperatures and the defaults are the playground's own.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable

import torch
import torch.nn.functional as F

from dllm_viz.serve import ALGORITHM_NAME, check_sglang_version, installed_sglang_version

check_sglang_version(installed_sglang_version())  # before touching SGLang internals

from sglang.srt.dllm.algorithm import algo_name_to_cls  # noqa: E402
from sglang.srt.dllm.algorithm.base import DllmAlgorithm  # noqa: E402
from sglang.srt.sampling.sampling_params import TOP_K_ALL  # noqa: E402

from dllm_viz.core import sampling  # noqa: E402
from dllm_viz.core.config import MAX_SEED, DecodeConfig  # noqa: E402
from dllm_viz.core.decoder import unpack  # noqa: E402
from dllm_viz.serve.policy import Policy, block_seed, request_seed  # noqa: E402
from dllm_viz.core.schedules import SCHEDULE_IDS, QuotaInputs, next_k, quota, select_top, temperature_at  # noqa: E402
from dllm_viz.core.scoring import CONFIDENCE_IDS, Distribution, score  # noqa: E402

# Request features this algorithm would otherwise ignore silently: (what, is it in use?).
UNSUPPORTED_REQUEST_FEATURES: tuple[tuple[str, Callable[[Any], bool]], ...] = (
    ("min_p", lambda sp: (sp.min_p or 0.0) > 0),
    ("logit_bias", lambda sp: bool(sp.logit_bias)),
    ("frequency_penalty", lambda sp: (sp.frequency_penalty or 0.0) != 0),
    ("presence_penalty", lambda sp: (sp.presence_penalty or 0.0) != 0),
    ("repetition_penalty", lambda sp: (sp.repetition_penalty or 1.0) != 1),
    ("json_schema / regex / ebnf / structural_tag",
     lambda sp: any(getattr(sp, k, None) for k in ("json_schema", "regex", "ebnf", "structural_tag"))),
)


def request_policy(policy: Policy, *, temperature: float, top_p: float, top_k: int) -> Policy:
    """`policy` with one request's sampling parameters applied (as SGLang normalised them).

    SGLang turns temperature 0 into temperature 1 with top_k 1, and fills unset fields with
    neutral values (temperature 1, top_p 1, top_k TOP_K_ALL). Under `request_sampling="override"`
    a non-neutral value replaces the policy's: top_k 1 means argmax, another temperature replaces
    the policy's temperature (and its stages), top_k and top_p become the vocabulary filters.
    """
    if policy.request_sampling == "ignore":
        return policy
    changes: dict[str, Any] = {}
    if top_k == 1:
        changes.update(temperature=0.0, temperature_stages=None)
    elif temperature != 1.0:
        changes.update(temperature=temperature, temperature_stages=None)
    if 1 < top_k < TOP_K_ALL:
        changes["vocab_top_k"] = top_k
    if top_p < 1.0:
        changes["top_p"] = top_p
    return dataclasses.replace(policy, **changes) if changes else policy


@dataclass
class BlockState:
    """One request's state within its current block (carried between FDFO rounds by SGLang)."""

    config: DecodeConfig | None  # the block's DecodeConfig; None when the block starts with no mask
    generator: torch.Generator  # CPU generator seeded with block_seed(request seed, block start)
    masks: int  # M: masked positions at the block's start
    offset: int  # block position of the first generated slot (block_size - M; > 0 in a prompt's block)
    k: int  # topk_decay's current k
    block_step: int = 0  # steps taken in this block


class DllmVizPolicy(DllmAlgorithm):
    """The playground's decoding policy, read from `--dllm-algorithm-config policy.yaml`."""

    def __init__(self, config: Any) -> None:
        super().__init__(config)
        mapping = {"block_size": config.block_size, **(config.algorithm_config or {})}
        self.policy = Policy.from_mapping(mapping)
        if self.policy.block_size != self.block_size:
            raise ValueError(
                f"block_size={self.policy.block_size} in the policy is invalid: SGLang runs blocks of "
                f"{self.block_size}; they must agree"
            )

    @classmethod
    def validate_request(cls, req: Any) -> str | None:
        """Refuse, with a message, what this algorithm would ignore or cannot apply."""
        sp = req.sampling_params
        used = [name for name, in_use in UNSUPPORTED_REQUEST_FEATURES if in_use(sp)]
        if used:
            return f"{ALGORITHM_NAME} does not apply {', '.join(used)}; remove them from the request"
        try:
            request_policy(Policy(), temperature=sp.temperature, top_p=sp.top_p, top_k=sp.top_k)
        except ValueError as err:
            return f"{ALGORITHM_NAME}: {err}"
        return None

    # ----- state ----------------------------------------------------------------------------
    def _masked(self, forward_batch: Any) -> torch.Tensor:
        """Positions still to generate, `(B, L)`: mask ids that are not literal prompt tokens."""
        B, L = forward_batch.batch_size, self.block_size
        masked = forward_batch.input_ids.view(B, L) == self.mask_id
        prompt_mask = forward_batch.dllm_prompt_mask
        return masked & ~prompt_mask if prompt_mask is not None else masked

    def init_step_state(self, forward_batch: Any) -> list[BlockState]:
        B, L = forward_batch.batch_size, self.block_size
        if forward_batch.positions is None:
            raise RuntimeError(f"{ALGORITHM_NAME} needs forward_batch.positions to seed each block's generator")
        masks = self._masked(forward_batch).sum(-1).tolist()
        starts = forward_batch.positions.view(B, L)[:, 0].tolist()  # absolute position of each block
        policies, seeds = [self.policy] * B, [request_seed(rid) for rid in forward_batch.rids]
        info = forward_batch.sampling_info
        if info is not None:
            params = zip(info.temperatures.view(-1).tolist(), info.top_ps.view(-1).tolist(), info.top_ks.view(-1).tolist())
            policies = [request_policy(self.policy, temperature=t, top_p=p, top_k=int(k)) for t, p, k in params]
            if info.sampling_seed is not None:  # only with --enable-deterministic-inference
                seeds = [int(s) & MAX_SEED for s in info.sampling_seed.view(-1).tolist()]
        states = []
        for policy, seed, start, m in zip(policies, seeds, starts, masks):
            gen = torch.Generator(device="cpu").manual_seed(block_seed(seed, int(start)))
            config = policy.block_config(m) if m else None
            states.append(BlockState(config=config, generator=gen, masks=m, offset=L - m,
                                     k=config.initial_k if config else 0))
        return states

    # ----- the step -------------------------------------------------------------------------
    @torch.inference_mode()
    def step(self, forward_batch: Any, full_logits: torch.Tensor, states: list[BlockState]) -> list[bool]:
        B, L = forward_batch.batch_size, self.block_size
        ids = forward_batch.input_ids.view(B, L)  # (B, L), shares storage: written in place below
        masked_all = self._masked(forward_batch)  # (B, L)
        left_all = masked_all.sum(-1)  # (B,)
        # Done only when a forward has already seen the block's final tokens.
        done = (left_all == 0).tolist()
        active = [i for i, d in enumerate(done) if not d]
        if not active:
            return done
        dev = ids.device
        act = torch.tensor(active, device=dev)
        st = [states[i] for i in active]
        configs = [s.config for s in st]
        A = len(active)

        # (1) the block's logits, packed at the masked positions (row-major, as `unpack` expects).
        masked, left = masked_all[act], left_all[act]  # (A, L), (A,)
        rows = masked.nonzero(as_tuple=True)[0]  # (M,)
        gen_logits = full_logits.view(B, L, -1)[act][masked].float().unsqueeze(1)  # (M, 1, V)
        gen_logits[..., self.mask_id] = float("-inf")  # the mask token is never a candidate

        # Uniforms from each request's own generator, drawn on CPU so that every device and every
        # tensor-parallel rank sees the same stream; aligned to block positions (A, 2, L).
        noise = torch.stack([F.pad(torch.rand(2, s.masks, generator=s.generator), (s.offset, 0)) for s in st]).to(dev)
        noise_m = noise.permute(1, 0, 2)[:, masked]  # (2, M)

        long = lambda values: torch.tensor(values, dtype=torch.long, device=dev)  # noqa: E731
        left_host = left.tolist()
        temperature = torch.tensor(
            [temperature_at(c, s.block_step, 1 - n / s.masks) for c, s, n in zip(configs, st, left_host)],
            dtype=torch.float32, device=dev,
        )  # (A,)
        vocab_top_k = long([c.vocab_top_k or 0 for c in configs])
        top_p = torch.tensor([c.top_p if c.top_p is not None else 1.0 for c in configs], dtype=torch.float32, device=dev)

        # (2) confidence from the raw distribution.
        raw = Distribution(gen_logits, top=2)
        measure_id = long([CONFIDENCE_IDS[c.confidence] for c in configs])[rows]  # (M,)
        conf = unpack(score(raw, measure_id, noise_m[1].unsqueeze(1), {c.confidence for c in configs}), masked)

        # (3) the schedule picks positions of the block.
        threshold = torch.tensor([c.threshold for c in configs], dtype=torch.float32, device=dev)
        k = long([s.k for s in st])
        min_k = long([c.min_k for c in configs])
        q = QuotaInputs(
            k=k, top_k=long([c.initial_k for c in configs]), min_k=min_k, block_step=long([s.block_step for s in st]),
            block_size=long([s.masks for s in st]), steps_per_block=long([c.total_steps for c in configs]),
            eligible=left, above=(masked & (conf >= threshold.unsqueeze(-1))).sum(-1),
        )
        count = quota(q, long([SCHEDULE_IDS[c.schedule] for c in configs]), {c.schedule for c in configs})  # (A,)
        selected = select_top(conf, masked, count)  # (A, L)

        # (4) draw tokens only at the selected positions.
        h = selected[masked]  # (M,)
        tok, _ = sampling.draw(gen_logits[h, 0], noise_m[0][h], temperature=temperature[rows][h],
                               vocab_top_k=vocab_top_k[rows][h], top_p=top_p[rows][h])
        tokens = torch.full((A, L), -1, dtype=torch.long, device=dev).masked_scatter(selected, tok)

        # (5) commit in place (SGLang keeps the tensor's identity) and advance the schedule state.
        ids.index_copy_(0, act, torch.where(selected, tokens, ids[act]).to(ids.dtype))
        decay = torch.tensor([c.decay for c in configs], dtype=torch.float64, device=dev)
        for s, new_k in zip(st, next_k(k, decay, min_k).tolist()):
            s.k = new_k
            s.block_step += 1
        return done


def register() -> None:
    """Add DllmVizPolicy to SGLang's algorithm registry (what the entry point calls)."""
    algo_name_to_cls[ALGORITHM_NAME] = DllmVizPolicy
