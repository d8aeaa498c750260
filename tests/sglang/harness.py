"""Drive SGLang's real `DllmAlgorithm.run` the way its scheduler does, with a scripted model.

What is SGLang's here: the algorithm base class and its FDFO / synchronous loops, `DllmConfig`,
`SamplingParams` (which normalises temperature 0 to top_k 1). What is simulated: the scheduler's
bookkeeping (`process_batch_result_dllm`: block placement, carried state, accepted blocks) and the
model runner (the scripted block-causal logits). Every forward is recorded per request, so the
tests see each step's confirmations as the difference between consecutive forwards.

The playground side of the comparison (`playground_steps`) decodes the same blocks with
`dllm_viz.decode` and `Policy.block_config`, one decode call per SGLang block.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace

import torch
from sglang.srt.dllm.config import DllmConfig
from sglang.srt.sampling.sampling_params import SamplingParams

from dllm_viz import decode
from dllm_viz.serve import ALGORITHM_NAME
from dllm_viz.serve.sglang import DllmVizPolicy
from dllm_viz.serve.policy import Policy, block_seed, request_seed
from tests.sglang.scripted import MASK_ID, CausalScript, ScriptedDenoiser

Step = list[tuple[int, int]]  # confirmed (block position, token), sorted by position


@dataclass
class Request:
    rid: str
    prompt: list[int]
    blocks: int  # SGLang blocks to decode (the first one is partial when len(prompt) % L != 0)
    temperature: float = 1.0  # the request's sampling parameters, as a client would send them
    top_p: float = 1.0
    top_k: int = -1
    seed: int | None = None
    arrival: int = 0  # scheduler round at which the request joins (FDFO)
    output: list[int] = field(default_factory=list)
    done_blocks: int = 0
    incomplete: list[int] | None = None
    state: object = None
    forwards: list[tuple[int, list[int]]] = field(default_factory=list)  # (block start, ids) of each forward

    @property
    def sampling(self) -> SamplingParams:
        return SamplingParams(temperature=self.temperature, top_p=self.top_p, top_k=self.top_k, sampling_seed=self.seed)

    @property
    def finished(self) -> bool:
        return self.done_blocks == self.blocks


def make_algorithm(policy: Policy, *, fdfo: bool, max_running: int = 4) -> DllmVizPolicy:
    config = DllmConfig(
        algorithm=ALGORITHM_NAME, algorithm_config=policy.to_mapping(), block_size=policy.block_size,
        mask_id=MASK_ID, max_running_requests=max_running, first_done_first_out_mode=fdfo,
    )
    return DllmVizPolicy(config)


class ScriptedRunner:
    """SGLang's `ModelRunner.forward` surface: logits of each request's current block."""

    def __init__(self, script: CausalScript, reqs: list[Request]) -> None:
        self.script = script
        self.reqs = reqs
        self.batches: list[tuple[object, set[int]]] = []  # each forward batch, its input_ids storages seen

    def forward(self, forward_batch, pp_proxy_tensors=None):
        B, L = forward_batch.batch_size, forward_batch.block_size
        if not self.batches or self.batches[-1][0] is not forward_batch:
            self.batches.append((forward_batch, set()))
        self.batches[-1][1].add(forward_batch.input_ids.data_ptr())
        blocks = forward_batch.input_ids.view(B, L)
        out = []
        for i, req in enumerate(forward_batch.reqs):
            start = forward_batch.block_starts[i]
            context = (req.prompt + req.output)[:start] + blocks[i].tolist()
            req.forwards.append((start, blocks[i].tolist()))
            out.append(self.script.logits(torch.tensor([context]))[0, start:])  # (L, V)
        full = torch.cat(out)  # (B * L, V)
        return SimpleNamespace(logits_output=SimpleNamespace(full_logits=full), can_run_graph=False)


def _block_of(req: Request, L: int) -> tuple[int, list[int], int]:
    """Where the request's next block starts, its ids, and how many of them are prompt/committed."""
    committed = req.prompt + req.output
    start = (len(committed) // L) * L
    tail = committed[start:]
    return start, tail + [MASK_ID] * (L - len(tail)), len(tail)


def forward_batch(reqs: list[Request], L: int, *, deterministic: bool) -> SimpleNamespace:
    """A simple stand-in for SGLang's ForwardBatch with the fields the algorithm reads."""
    ids, positions, starts = [], [], []
    for req in reqs:
        start, block, _ = _block_of(req, L)
        ids += req.incomplete if req.incomplete is not None else block
        positions += list(range(start, start + L))
        starts.append(start)
    params = [r.sampling for r in reqs]
    info = SimpleNamespace(
        temperatures=torch.tensor([p.temperature for p in params], dtype=torch.float).view(-1, 1),
        top_ps=torch.tensor([p.top_p for p in params], dtype=torch.float),
        top_ks=torch.tensor([p.top_k for p in params], dtype=torch.int32),
        # As SGLang: per-request seeds only with deterministic inference, 42 for requests without one.
        sampling_seed=torch.tensor([p.sampling_seed if p.sampling_seed is not None else 42 for p in params])
        if deterministic else None,
    )
    prompt_mask = None
    if any(MASK_ID in r.prompt + r.output for r in reqs):  # as SGLang: literal mask ids need the prompt mask
        committed = torch.tensor([len(r.prompt) + len(r.output) for r in reqs])
        prompt_mask = torch.tensor(positions).view(len(reqs), L) < committed.unsqueeze(-1)  # (B, L)
    return SimpleNamespace(
        batch_size=len(reqs), input_ids=torch.tensor(ids, dtype=torch.long), positions=torch.tensor(positions),
        dllm_prompt_mask=prompt_mask, rids=[r.rid for r in reqs], sampling_info=info,
        reqs=reqs, block_size=L, block_starts=starts,
    )


def serve(algorithm: DllmVizPolicy, script: CausalScript, reqs: list[Request], *, max_running: int = 4,
          deterministic: bool = False, max_rounds: int = 10_000) -> ScriptedRunner:
    """Run every request to completion; FDFO or synchronous as the algorithm was configured."""
    L = algorithm.block_size
    runner = ScriptedRunner(script, reqs)
    for r in range(max_rounds):
        running = [q for q in reqs if q.arrival <= r and not q.finished][:max_running]
        if not running and all(q.finished for q in reqs):
            return runner
        if not running:
            continue
        fb = forward_batch(running, L, deterministic=deterministic)
        if algorithm.fdfo:
            _, next_ids, accepted, states, _ = algorithm.run(runner, fb, [q.state for q in running])
            for i, q in enumerate(running):
                if accepted[i] == 0:
                    q.incomplete, q.state = next_ids[i], states[i]
                    continue
                _, _, kept = _block_of(q, L)
                q.output += next_ids[i][kept:]
                q.incomplete, q.state = None, None
                q.done_blocks += 1
        else:
            _, next_ids, _, _, _ = algorithm.run(runner, fb)
            for i, q in enumerate(running):
                q.output += next_ids[i].tolist()
                q.done_blocks += 1
    raise AssertionError("requests did not finish")


def block_forwards(req: Request) -> list[list[list[int]]]:
    """The block ids each forward saw, grouped by block (in order)."""
    groups: dict[int, list[list[int]]] = {}
    for start, ids in req.forwards:
        groups.setdefault(start, []).append(ids)
    return list(groups.values())


def sglang_steps(req: Request) -> list[list[Step]]:
    """Per block, the confirmations of each step: the difference between consecutive forwards.

    In synchronous mode a finished request rides along until the whole batch is done; those
    extra forwards change nothing and are dropped (a step with masks left always confirms one).
    """
    out = []
    for seen in block_forwards(req):
        diffs = [sorted((j, t) for j, (a, t) in enumerate(zip(prev, ids)) if a != t)
                 for prev, ids in zip(seen, seen[1:])]
        out.append([d for d in diffs if d])
    return out


def effective_seed(req: Request, *, deterministic: bool) -> int:
    if deterministic:
        return req.seed if req.seed is not None else 42
    return request_seed(req.rid)


def playground_steps(policy: Policy, script: CausalScript, req: Request, L: int, *,
                     deterministic: bool = False) -> tuple[list[list[Step]], list[int]]:
    """The same request decoded by `dllm_viz.decode`, one call per SGLang block.

    `policy` is the request's effective policy (the test states how request parameters apply).
    """
    model = ScriptedDenoiser(script)
    committed = list(req.prompt)
    seed = effective_seed(req, deterministic=deterministic)
    blocks, output = [], []
    for _ in range(req.blocks):
        start = (len(committed) // L) * L
        masks = L - (len(committed) - start)
        config = policy.block_config(masks, seed=block_seed(seed, start))
        (trace,) = decode(model, [committed], config, record_candidates=0)
        offset = L - masks
        blocks.append([sorted((g + offset, t) for g, t in zip(rec.selected, rec.tokens)) for rec in trace.steps])
        committed += trace.token_ids
        output += trace.token_ids
    return blocks, output
