"""core.indel_decode, core.indel_rows, core.indel_record: `decode()` runs an insert/delete rule (issue 37).

That the decode is SGLang's JointThresholdInDel step by step is tests/sglang/test_indel_decode.py's job. Here,
without SGLang: the trace's canvas is the decoder's at every step (`Trace.canvas_at` replays the moves), a row
gets the same trace alone and beside rows of other rules and settings, the trace round-trips and its schema
refuses altered sections, the bad settings are named errors, and the plain rules never write an edit token.
"""
from __future__ import annotations

import json
import pytest
from dllm_viz import DecodeConfig, decode, load_model
from dllm_viz.core.decoder import DecodeBatch, request_generator
from dllm_viz.core.revision import max_steps
from dllm_viz.core.trace import Trace
from tests.sglang.indel_script import MASK_ID, Events, ReplayedBlocks

L = 8
BUSY = Events(word=0.1, delete=0.12, split=0.12, mask=0.06)


def config(G: int = 2 * L, **knobs) -> DecodeConfig:
    return DecodeConfig.preset("llada22_indel", G, **{"block_length": L, **knobs})


@pytest.fixture(scope="module")
def world_indel():
    return load_model("world-indel")


def stepped(model, prompts, configs) -> tuple[list[Trace], list[list[list[int | None]]]]:
    """Decode step by step through `DecodeBatch`: the traces, and each row's canvas after each of its steps."""
    longest = max(len(p) + c.gen_length for p, c in zip(prompts, configs))
    batch = DecodeBatch(model, capacity=len(prompts), max_length=longest, record_candidates=2)
    for i, (p, c) in enumerate(zip(prompts, configs)):
        batch.add(i, p, c, request_generator(c))
    seen: list[list[list[int | None]]] = [[] for _ in prompts]
    while batch.active():
        for i in batch.step():
            P, G = len(prompts[i]), configs[i].gen_length
            seen[i].append([None if t == MASK_ID else t for t in batch.canvas[i, P:P + G].tolist()])
    return [batch.trace(i) for i in range(len(prompts))], seen


def test_canvas_at_is_the_decoder_s_canvas_after_every_step():
    model = ReplayedBlocks(L, BUSY, seed=1)
    configs = [config(), config(threshold=0.8, edit_threshold=0.3), config(max_post_edit_steps=0)]
    traces, seen = stepped(model, [[1] * L] * 3, configs)
    moved = 0
    for trace, canvases in zip(traces, seen):
        assert [trace.canvas_at(i) for i in range(len(trace.steps))] == canvases
        assert trace.canvas_at(-1) == [None] * trace.config.gen_length and MASK_ID not in trace.token_ids
        moved += sum(rec.source != list(range(2 * L)) for rec in trace.steps)
        assert len(trace.steps) <= max_steps(trace.config)
    assert moved > 5


def test_a_row_gets_the_same_trace_alone_and_beside_other_rules_and_settings(world_indel):
    prompts = ["Tom Lopez of", "Mia Berg of New York has", "Uma Noble of"]
    mixed = [config(48, block_length=None, temperature=0.7, seed=3), DecodeConfig.preset("llada21", 32, seed=1),
             config(32, block_length=16, seed=5), DecodeConfig.preset("quality", 24, seed=2)]
    ps = [prompts[i % 3] for i in range(len(mixed))]
    together = decode(world_indel, ps, mixed)
    for p, c, t in zip(ps, mixed, together):
        (alone,) = decode(world_indel, [p], c)
        assert alone.token_ids == t.token_ids and [r.to_dict() for r in alone.steps] == [r.to_dict() for r in t.steps]


def test_the_trace_round_trips_as_version_3_and_its_schema_refuses_altered_sections():
    (trace,) = decode(ReplayedBlocks(L, BUSY, seed=2), [[1] * L], config(), record_candidates=2)
    text = trace.to_json()
    data = json.loads(text)
    assert data["version"] == 3 and Trace.from_json(text).to_json() == text
    step = next(i for i, rec in enumerate(trace.steps) if any(e[1] in ("delete", "split") for e in rec.indel["edits"]))

    def refused(change, match):
        d = json.loads(text)
        change(d["steps"][step])
        with pytest.raises(ValueError, match=match):
            Trace.from_dict(d)

    refused(lambda s: s["indel"]["source"].__setitem__(0, s["indel"]["source"][1]), r"indel\.source")
    refused(lambda s: s["indel"]["source"].reverse(), r"trace steps\[\d+\]|token_ids|order")  # a later step disagrees
    refused(lambda s: s["indel"]["edits"][0].__setitem__(2, 99), r"indel\.edits\[0\]\[2\]")
    refused(lambda s: s["indel"].pop("source"), r"indel")
    refused(lambda s: s.pop("indel"), r"indel=None is invalid")
    old = json.loads(text)
    old["version"] = 2
    with pytest.raises(ValueError, match="indel"):
        Trace.from_dict(old)
    plain = decode(ReplayedBlocks(L, BUSY, seed=2), [[1] * L], DecodeConfig.preset("llada21", 2 * L))[0]
    assert json.loads(plain.to_json())["version"] == 2  # no section: written as before


def test_bad_settings_are_named_and_nothing_else_fails(world_indel):
    with pytest.raises(ValueError,
                       match=r"indel='joint_threshold_indel' is invalid for 'world-mdlm'.*cannot edit lengths"):
        decode(load_model("world"), ["Tom"], config(32))
    outside = ReplayedBlocks(L, BUSY, 0)
    outside.split_token_id = 999  # past its vocabulary of 32
    with pytest.raises(ValueError, match=r"split_token_id=999 is invalid: expected an int in the vocabulary"):
        decode(outside, [[1] * L], config())
    with pytest.raises(ValueError, match="max_post_edit_steps=-1 is invalid"):
        config(max_post_edit_steps=-1)
    with pytest.raises(ValueError, match=r"indel='joint_threshold_indel' is invalid .*schedule='topk_decay'"):
        DecodeConfig(gen_length=16, indel="joint_threshold_indel")
    # The others in a batch: the engine refuses the bad request alone (tests/test_engine.py's contract)
    from dllm_viz.serve.engine import Engine

    with Engine(load_model("world"), max_batch=4) as engine:
        good = engine.submit("Tom", DecodeConfig.preset("quality", 16))
        bad = engine.submit("Tom", config(32))
        with pytest.raises(ValueError, match="cannot edit lengths"):
            bad.result(timeout=60)
        assert len(good.result(timeout=60).token_ids) == 16


def test_the_plain_rules_never_write_an_edit_token(world_indel):
    configs = [DecodeConfig.preset(p, 32, seed=s) for p in ("quality", "creative", "llada21", "fast_dllm")
               for s in range(3)]
    for trace in decode(world_indel, ["Tom Lopez of"] * len(configs), configs, record_candidates=5):
        for rec in trace.steps:
            ids = set(rec.tokens) | set(rec.edited_to or ()) | set(rec.argmax) | {i for c in rec.candidates for i in c}
            assert not ids & {DELETE_ID_W, SPLIT_ID_W}, trace.config


DELETE_ID_W, SPLIT_ID_W = 713, 714  # world-indel's edit tokens (its config.json)


def test_a_fork_of_an_insert_delete_trace_replays_it_and_cannot_switch_the_rule():
    from dllm_viz import fork

    model = ReplayedBlocks(L, BUSY, seed=3)
    (trace,) = decode(model, [[1] * L], config(), record_candidates=2)
    again = fork(model, trace, len(trace.steps) // 2)  # nothing changed: the trace itself
    assert again.token_ids == trace.token_ids
    assert [r.to_dict() for r in again.steps] == [r.to_dict() for r in trace.steps]
    with pytest.raises(ValueError, match="knobs: indel='none' is invalid at a fork"):
        fork(model, trace, 2, knobs={"indel": "none"})
