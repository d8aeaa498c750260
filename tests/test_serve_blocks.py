"""The SGLang plugin's adapter against `decode`, on CPU, without SGLang.

`dllm_viz.serve.blocks` is what `DllmVizPolicy.init_step_state` and `.step` forward to. Here a
small scheduler drives it with stand-ins shaped like SGLang's ForwardBatch (flat `input_ids`
edited in place, absolute `positions`, `rids`, `sampling_info`), several requests per forward at
different block offsets, and a block-causal scripted model. Every block must confirm the same
positions with the same tokens, step by step, as `decode` running `Policy.block_config` for that
block with the block's seed (the playground's own step), and at temperature 0 the whole output is
the multi-block `Policy.to_decode_config` trace. tests/sglang/ runs the real SGLang loop.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace

import pytest
import torch

from dllm_viz import DecodeConfig, decode
from dllm_viz.core.canvas import PerRows
from dllm_viz.core.end_of_text import end_of_text_ids
from dllm_viz.serve.blocks import TOP_K_ALL, advance_blocks, init_block_states, request_policy
from dllm_viz.serve.policy import Policy, block_seed, request_seed
from tests.sglang.scripted import MASK_ID, CausalScript, ScriptedDenoiser

L = 8
Step = list[tuple[int, int]]  # (block position, token) confirmed in one step, sorted


@dataclass
class Request:
    rid: str
    prompt: list[int]
    blocks: int
    temperature: float = 1.0  # as SGLang normalised the request (temperature 0 arrives as top_k 1)
    top_p: float = 1.0
    top_k: int = TOP_K_ALL
    output: list[int] = field(default_factory=list)
    steps: list[list[Step]] = field(default_factory=list)  # per block, each step's confirmations
    state: object = None

    @property
    def finished(self) -> bool:
        return len(self.steps) == self.blocks and self.state is None


def _block(req: Request) -> tuple[int, list[int]]:
    committed = req.prompt + req.output
    start = (len(committed) // L) * L
    tail = committed[start:]
    return start, tail + [MASK_ID] * (L - len(tail))


def serve(policy: Policy, script: CausalScript, reqs: list[Request], *, with_sampling_info: bool) -> int:
    """Synchronous rounds: one forward over every unfinished request's current block per round, the
    step's parameters kept between rounds as `DllmVizPolicy` keeps them. Returns how often they were built."""
    rows: dict[str, list[int]] = {}
    row_sets = PerRows()
    for _ in range(1000):
        running = [r for r in reqs if not r.finished]
        if not running:
            return row_sets.builds
        for r in running:
            if r.state is None:
                rows[r.rid] = _block(r)[1]
        starts = [_block(r)[0] for r in running]
        ids = torch.tensor([i for r in running for i in rows[r.rid]])  # (B * L,)
        info = SimpleNamespace(
            temperatures=torch.tensor([[r.temperature] for r in running]),
            top_ps=torch.tensor([r.top_p for r in running]),
            top_ks=torch.tensor([r.top_k for r in running], dtype=torch.int32), sampling_seed=None,
        ) if with_sampling_info else None
        fb = SimpleNamespace(
            batch_size=len(running), input_ids=ids, dllm_prompt_mask=None, rids=[r.rid for r in running],
            positions=torch.tensor([s + j for s in starts for j in range(L)]), sampling_info=info,
        )
        fresh = init_block_states(fb, policy, block_size=L, mask_id=MASK_ID)
        states = [r.state if r.state is not None else s for r, s in zip(running, fresh)]
        for r, s in zip(running, states):
            if r.state is None:
                r.state = s
                r.steps.append([])
        logits = torch.cat([
            script.logits(torch.tensor([(r.prompt + r.output)[:s] + rows[r.rid]]))[0, s:]
            for r, s in zip(running, starts)
        ])  # (B * L, V)
        before = ids.view(len(running), L).clone()
        done = advance_blocks(fb, logits, states, block_size=L, mask_id=MASK_ID,
                              end_of_text_ids=end_of_text_ids(policy), row_sets=row_sets)
        after = fb.input_ids.view(len(running), L)
        for i, r in enumerate(running):
            if done[i]:
                kept = len(r.prompt + r.output) - starts[i]
                r.output += after[i, kept:].tolist()
                r.state = None
                continue
            r.steps[-1].append(sorted((j, t) for j, (a, t) in enumerate(zip(before[i].tolist(), after[i].tolist()))
                                      if a != t))
            rows[r.rid] = after[i].tolist()
    raise AssertionError("requests did not finish")


def playground(policy: Policy, script: CausalScript, req: Request,
               model: ScriptedDenoiser | None = None) -> tuple[list[list[Step]], list[int]]:
    """The same request through `decode`: one call per block, the block's own seed."""
    model, committed, blocks = model or ScriptedDenoiser(script), list(req.prompt), []
    for _ in range(req.blocks):
        start = (len(committed) // L) * L
        masks = L - (len(committed) - start)
        config = policy.block_config(masks, seed=block_seed(request_seed(req.rid), start))
        (trace,) = decode(model, [committed], config, record_candidates=0)
        blocks.append([sorted((g + L - masks, t) for g, t in zip(rec.selected, rec.tokens)) for rec in trace.steps])
        committed += trace.token_ids
    return blocks, committed[len(req.prompt):]


POLICIES = {
    "topk_decay": Policy(block_size=L, schedule="topk_decay", top_k=3, decay=0.7, temperature=0.0),
    "topk_decay_sampled": Policy(block_size=L, top_k=3, decay=0.9, temperature=1.1, top_p=0.9, vocab_top_k=9),
    "fixed_steps_staged": Policy(block_size=L, schedule="fixed_steps", steps_per_block=3,
                                 temperature_stages=(1.3, 1.0, 0.6)),
    "threshold_entropy": Policy(block_size=L, schedule="threshold", threshold=0.6, temperature=0.8,
                                confidence="entropy"),
    "adaptive_random": Policy(block_size=L, schedule="adaptive", top_k=4, temperature=0.9, confidence="random"),
    # The shipped samplers' rules (issue 16), at a temperature that makes their sources differ.
    "llada": Policy.from_decode_config(DecodeConfig.preset("llada", L, temperature=0.9)),
    "dream": Policy.from_decode_config(DecodeConfig.preset("dream", L, temperature=0.8)),
    "fast_dllm": Policy.from_decode_config(DecodeConfig.preset("fast_dllm", L, temperature=0.7, threshold=0.5)),
    "dream_entropy": Policy.from_decode_config(
        DecodeConfig.preset("dream", L, confidence="entropy", confidence_from="filtered", sample_scope="selected")),
}


def _requests() -> list[Request]:
    # Prompts of different lengths: first blocks start at offsets 0, 3 and 5 in the same forward.
    return [Request("a", [3, 1, 4, 1, 5, 9, 2, 6], 2), Request("b", [2, 7, 1], 3), Request("c", [1, 6, 1, 8, 0], 2)]


@pytest.mark.parametrize("name", POLICIES)
def test_adapter_confirms_what_decode_confirms_step_by_step(name):
    policy, script = POLICIES[name], CausalScript(seed=2)
    reqs = _requests()
    serve(policy, script, reqs, with_sampling_info=False)
    for req in reqs:
        steps, output = playground(policy, script, req)
        assert req.steps == steps, req.rid
        assert req.output == output, req.rid
        assert MASK_ID not in req.output


def test_argmax_output_is_the_multi_block_decode():
    policy, script = POLICIES["topk_decay"], CausalScript(seed=3)
    req = Request("x", [5, 5, 5, 5, 5, 5, 5, 5], 3)
    serve(policy, script, [req], with_sampling_info=False)
    (trace,) = decode(ScriptedDenoiser(script), [req.prompt], policy.to_decode_config(num_blocks=3),
                      record_candidates=0)
    assert req.output == trace.token_ids
    assert [s for block in req.steps for s in block] == [
        sorted((g % L, t) for g, t in zip(rec.selected, rec.tokens)) for rec in trace.steps
    ]


def test_request_sampling_parameters_reach_the_step():
    """A request's own temperature / top-k (as SGLang sends them) decode as the overridden policy."""
    policy, script = POLICIES["topk_decay_sampled"], CausalScript(seed=4)
    reqs = [Request("greedy", [1, 2, 3], 2, top_k=1), Request("hot", [4, 5], 2, temperature=1.7, top_k=5)]
    serve(policy, script, reqs, with_sampling_info=True)
    for req in reqs:
        effective = request_policy(policy, temperature=req.temperature, top_p=req.top_p, top_k=req.top_k)
        assert effective != policy
        steps, output = playground(effective, script, req)
        assert (req.steps, req.output) == (steps, output), req.rid


def test_the_early_stop_fills_a_block_that_predicts_end_of_text():
    eos = 5
    policy = Policy(block_size=L, schedule="fixed_steps", steps_per_block=L, temperature=0.0, early_stop=True,
                    end_of_text_ids=[eos])
    prompt = [1, 2]  # the block holds the prompt's 2 tokens, then 6 masks
    logits = torch.zeros(L, MASK_ID + 1)
    logits[:, eos] = 10.0  # every position predicts end-of-text with probability ~0.99

    def one_step(pol: Policy, ends: tuple[int, ...]) -> list[int]:
        fb = SimpleNamespace(batch_size=1, input_ids=torch.tensor(prompt + [MASK_ID] * (L - 2)), dllm_prompt_mask=None,
                             rids=["r"], positions=torch.arange(L), sampling_info=None)
        states = init_block_states(fb, pol, block_size=L, mask_id=MASK_ID)
        advance_blocks(fb, logits, states, block_size=L, mask_id=MASK_ID, end_of_text_ids=ends)
        return fb.input_ids.tolist()

    assert one_step(policy, (eos,)) == prompt + [eos] * (L - 2)  # the whole block in one step
    # Without it (or without the id), fixed_steps confirms one position per step.
    assert one_step(policy.replace(early_stop=False), (eos,)).count(eos) == 1
    assert one_step(policy, ()).count(eos) == 1


class TailScript(CausalScript):
    """`CausalScript` whose positions from `tail` on predict token `end` with probability ~0.99."""

    def __init__(self, seed: int, *, tail: int, end: int) -> None:
        super().__init__(seed=seed)
        self.position[tail:, end] += 40.0


class TwoEnds(ScriptedDenoiser):
    """A model with two end-of-text ids, as LLaDA's adapter has (EOS, then end of turn / padding)."""

    eos_token_id = 5
    end_of_text_ids = (5, 6)


def test_the_plugin_ends_a_text_on_the_same_ids_as_the_decoder():
    # The tail predicts the SECOND end-of-text id. The decoder reads both off the model; the policy
    # exported for that model carries both, and the plugin reads them off it by the same rule.
    model = TwoEnds(TailScript(seed=5, tail=13, end=6))
    assert end_of_text_ids(model) == (5, 6)
    config = DecodeConfig(gen_length=L, schedule="fixed_steps", steps=L, temperature=0.0, early_stop=True)
    policy = Policy.from_decode_config(config, end_of_text_ids=end_of_text_ids(model))
    assert end_of_text_ids(policy) == end_of_text_ids(model) == (5, 6)
    assert Policy.from_yaml(policy.to_yaml()) == policy
    reqs = [Request("a", [3, 1, 4, 1, 5, 9, 2, 6], 2), Request("b", [2, 7, 1], 2)]
    serve(policy, model.script, reqs, with_sampling_info=False)
    for req in reqs:
        steps, output = playground(policy, model.script, req, model)
        assert (req.steps, req.output) == (steps, output), req.rid
    # The early stop fired on the second id: a step filled the rest of a block with 6.
    stops = [step for r in reqs for block in r.steps for step in block if len(step) > 1]
    assert stops and all({t for _, t in step} == {6} for step in stops)
    # On the EOS alone (the plugin's one id before) the block would not stop there.
    alone = [Request("a", [3, 1, 4, 1, 5, 9, 2, 6], 2)]
    serve(policy.replace(end_of_text_ids=[5]), model.script, alone, with_sampling_info=False)
    assert all(len(step) == 1 for block in alone[0].steps for step in block)


def test_step_parameters_are_built_once_per_set_of_blocks():
    """A block's StepParams are kept while the same blocks step together, not rebuilt every step."""
    policy = POLICIES["fixed_steps_staged"]  # 3 steps per whole block
    alone = [Request("a", [3, 1, 4, 1, 5, 9, 2, 6], 2)]  # two whole blocks, one after the other
    assert serve(policy, CausalScript(seed=2), alone, with_sampling_info=False) == 2  # once per block, not per step
    assert sum(len(block) for block in alone[0].steps) == 6
    # Three requests whose blocks start and finish at different rounds: one build per new set.
    reqs = _requests()
    builds = serve(policy, CausalScript(seed=2), reqs, with_sampling_info=False)
    steps = sum(len(block) for r in reqs for block in r.steps)
    assert builds < steps / 2


# ----- revision rules carried into SGLang's loop (issue 28) -----------------------------------------
class EditingScript(ScriptedDenoiser):
    """The scripted model as a model that can edit: its logits at visible positions are its predictions."""

    can_edit = True


REVISING = {
    "llada21": Policy.from_decode_config(DecodeConfig.preset("llada21", L)),
    "llada21_edits": Policy.from_decode_config(DecodeConfig.preset("llada21", L, threshold=0.2, edit_threshold=0.3,
                                                                   max_post_edit_steps=3)),
    "rcr": Policy.from_decode_config(DecodeConfig.preset("rcr_counted", L, temperature=0.8)),
    "remdm": Policy.from_decode_config(DecodeConfig(gen_length=L, schedule="fixed_steps", steps=4, revise="remdm",
                                                    remask_sigma="rescale", remask_eta=0.9, temperature=0.9)),
    "remdm_loop": Policy.from_decode_config(DecodeConfig(gen_length=L, schedule="fixed_steps", steps=4, revise="remdm",
                                                         remask_sigma="loop", remask_eta=0.5, remask_alpha_on=0.5,
                                                         remask_loop_steps=3)),
}


def playground_changes(policy: Policy, script: CausalScript, req: Request) -> tuple[list[list[Step]], list[int]]:
    """`decode`'s per-step changes of each block (confirmations, rewrites, re-masks as the mask id), as the
    adapter's rounds see them; a held block's closing step (it changes nothing) is the adapter's done report."""
    model, committed, blocks = EditingScript(script), list(req.prompt), []
    for _ in range(req.blocks):
        start = (len(committed) // L) * L
        masks = L - (len(committed) - start)
        offset = L - masks
        config = policy.block_config(masks, seed=block_seed(request_seed(req.rid), start))
        (trace,) = decode(model, [committed], config, record_candidates=0)
        canvases = [[MASK_ID] * masks] + [[MASK_ID if t is None else t for t in trace.canvas_at(rec.step)]
                                          for rec in trace.steps]
        steps = [sorted((j + offset, t) for j, (a, t) in enumerate(zip(before, after)) if a != t)
                 for before, after in zip(canvases, canvases[1:])]
        if config.revise == "joint_threshold":
            assert steps[-1] == [] and not trace.steps[-1].selected  # the closing step
            steps = steps[:-1]
        blocks.append(steps)
        committed += trace.token_ids
    return blocks, committed[len(req.prompt):]


@pytest.mark.parametrize("name", REVISING)
def test_a_revision_rule_in_the_adapter_does_what_decode_does_step_by_step(name):
    policy, script = REVISING[name], CausalScript(seed=5)
    reqs = _requests()
    serve(policy, script, reqs, with_sampling_info=False)
    revised = 0
    for req in reqs:
        steps, output = playground_changes(policy, script, req)
        assert req.steps == steps, req.rid
        assert req.output == output, req.rid
        assert MASK_ID not in req.output
        revised += sum(t == MASK_ID for block in req.steps for step in block for _, t in step)  # taken back
    if name in ("rcr", "remdm", "remdm_loop"):
        assert revised > 0, "no token was taken back: the test would not see a wrong re-mask"


def test_joint_threshold_in_the_adapter_rewrites_tokens():
    policy, script = REVISING["llada21_edits"], CausalScript(seed=5)
    reqs = _requests()
    serve(policy, script, reqs, with_sampling_info=False)
    rewrites = 0
    for req in reqs:
        for block in req.steps:
            seen: set[int] = set()
            for step in block:
                rewrites += sum(j in seen for j, _ in step)  # a position changed a second time: a rewrite
                seen |= {j for j, _ in step}
    assert rewrites > 0


def test_wino_is_not_a_policy():
    with pytest.raises(ValueError, match=r"revise='wino' is invalid.*second forward"):
        Policy.from_decode_config(DecodeConfig.preset("wino", L))
    with pytest.raises(ValueError, match=r"revise='wino'"):
        Policy(block_size=L, revise="wino")
    with pytest.raises(ValueError, match=r"revise='rcr_shipped' is invalid.*earlier blocks"):  # MDPO's whole-row loop
        Policy.from_decode_config(DecodeConfig.preset("rcr", L))
