"""views/wire.py: a trace as the chunks the page reads, read back here in Python and compared with the trace.

Exact: every recorded float travels as its millionths, every token as its piece (each sent once);
a decode in progress (one chunk per step) sends the same as its stored trace (one chunk); the last
chunk says what only the finished trace knows. The renderer's reading: tests/test_figures_js.py.
"""
from __future__ import annotations

import copy
import json
import math

import pytest

from dllm_viz import DecodeConfig, decode, load_model
from dllm_viz.app.views import wire
from dllm_viz.core.analysis import piece
from dllm_viz.core.trace import Trace
from tests.ui_model import make_text_model


@pytest.fixture(scope="module")
def model():
    return make_text_model()


@pytest.fixture(scope="module")
def trace(model) -> Trace:
    return decode(model, ["the cat "], DecodeConfig.preset("balanced", 24, seed=3))[0]


def m6(v: int) -> float:
    return math.nan if v == wire.NAN_CODE else v / 1e6


def read(chunks: list[dict]) -> dict:
    """The chunks back as per-step records (what web/trace.js makes of them), in Python."""
    out = {"head": None, "pieces": [], "steps": [], "done": None}
    for chunk in json.loads(wire.dumps(chunks)):
        assert chunk["v"] == wire.VERSION
        out["head"] = chunk.get("head", out["head"])
        out["pieces"] += chunk["pieces"]
        if "steps" in chunk:
            c = chunk["steps"]
            assert c["from"] == len(out["steps"])
            cols = {k: wire.read_column(c[k])
                    for k in ("pos", "conf", "arg", "nc", "cand", "cp", "raw", "xc") if k in c}
            at = cat = 0
            for i, n in enumerate(c["ns"]):
                pos = cols["pos"][at:at + n]
                cands, probs = [], []
                for j in range(at, at + n):
                    k = cols["nc"][j]
                    cands.append(cols["cand"][cat:cat + k])
                    probs.append([m6(v) for v in cols["cp"][cat:cat + k]])
                    cat += k
                out["steps"].append({
                    "b": c["b"][i], "k": c["k"][i], "T": c["T"][i], "pos": pos,
                    "conf": [m6(v) for v in cols["conf"][at:at + n]], "arg": cols["arg"][at:at + n],
                    "cands": cands, "probs": probs, "sel": c["sel"][i], "tok": c["tok"][i],
                    "lp": [m6(v) for v in c["lp"][i]], "rm": c.get("rm", [[]] * len(c["k"]))[i],
                    "ed": c.get("ed", [[]] * len(c["k"]))[i],
                    "raw": [m6(v) for v in cols["raw"][at:at + n]] if "raw" in cols else None})
                at += n
        out["done"] = chunk.get("done", out["done"])
    return out


def same_float(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


def check(trace: Trace, got: dict) -> None:
    """Every step of `trace` is in `got`, exactly: confidences, guesses, candidates, draws, revisions."""
    pieces = got["pieces"]
    text = lambda i: None if i < 0 else pieces[i]  # noqa: E731
    assert len(pieces) == len(set(pieces))  # each piece sent once
    assert len(got["steps"]) == len(trace.steps)
    for rec, s in zip(trace.steps, got["steps"]):
        scored = [p for p in range(len(rec.confidence)) if rec.argmax[p] >= 0 or not math.isnan(rec.confidence[p])]
        assert s["pos"] == scored and (s["b"], s["k"], s["T"]) == (rec.block, rec.k, rec.temperature)
        assert all(same_float(c, rec.confidence[p]) for c, p in zip(s["conf"], scored))
        assert [text(a) for a in s["arg"]] == [piece(trace, rec.argmax[p]) if rec.argmax[p] >= 0 else None
                                               for p in scored]
        assert [[text(i) for i in row] for row in s["cands"]] == [[piece(trace, i) for i in rec.candidates[p]]
                                                                 for p in scored]
        assert s["probs"] == [rec.candidate_probs[p] for p in scored]  # exact, not rounded further
        assert s["sel"] == rec.selected and [text(i) for i in s["tok"]] == [piece(trace, i) for i in rec.tokens]
        assert s["lp"] == rec.logprobs
        assert s["rm"] == [x for p, i, sc in zip(rec.remasked or (), rec.remasked_tokens or (), rec.remask_probs or ())
                           for x in (p, pieces.index(piece(trace, i)), round(sc * 1e6))]
        assert len(s["ed"]) == 5 * len(rec.edited or ())
        if rec.raw_confidence is not None:
            assert all(same_float(r, rec.raw_confidence[p]) for r, p in zip(s["raw"], scored))


def test_a_stored_trace_is_one_chunk_with_every_step_exactly(trace):
    chunks = wire.chunks(trace)
    assert len(chunks) == 1
    got = read(chunks)
    head = got["head"]
    assert (head["G"], head["bs"], head["prompt"]) == (24, trace.config.block_size, "the cat ")
    assert head["planned"] == len(trace.steps)  # the balanced schedule's plan, known in advance
    check(trace, got)
    assert got["done"]["n"] == len(trace.steps) and got["done"]["end"] == -1


def test_a_decode_in_progress_sends_each_step_once_and_the_same_as_its_stored_trace(trace):
    encoder = wire.encoder_for(trace)
    live = [encoder.chunk([rec]) for rec in trace.steps] + [encoder.chunk([], done=wire.done(trace))]
    assert "head" in live[0] and not any("head" in c for c in live[1:]) and "steps" not in live[-1]
    seen = set()
    for c in live:  # only what is new: no piece twice
        assert not seen & set(c["pieces"])
        seen |= set(c["pieces"])
    assert read(live) == read(wire.chunks(trace))


@pytest.mark.parametrize("name, prompt", [("rcr", "Tom Lopez of"), ("llada21", "")])
def test_revisions_travel_with_their_step(name, prompt):
    world = load_model("world")
    tr = decode(world, [prompt], DecodeConfig.preset(name, 32, seed=1))[0]
    assert tr.revised
    got = read(wire.chunks(tr))
    check(tr, got)
    assert any(s["rm" if name == "rcr" else "ed"] for s in got["steps"])


def test_polluted_confidence_sends_the_raw_one_too(model):
    tr = decode(model, ["a "], DecodeConfig(gen_length=8, temperature=2.0, confidence_from="tempered"))[0]
    check(tr, read(wire.chunks(tr)))
    assert "raw" not in wire.chunks(decode(model, ["a "], DecodeConfig(gen_length=8))[0])[0]["steps"]


def test_what_only_the_finished_trace_says(trace):
    from dllm_viz.app.links import link_fields
    from tests.test_world_view import BAD, make_trace

    ended = copy.deepcopy(trace)
    ended.text_end = 10
    done = wire.done(ended)
    assert done["end"] == 10 and done["link"] == link_fields(ended) and done["grid"] is None and done["task"] is None
    assert done["bad"] == [""] * 24 and done["checked"] is False
    world = make_trace(BAD)
    done = wire.done(world)
    assert done["checked"] is True and any(done["bad"]) and any(done["rules"])


def test_a_canvas_a_runner_fitted_to_the_prompt_is_the_one_the_head_describes(model):
    # The tasks model decodes exactly a task's answer whatever the gen length slider said
    # (views/task.fit_config): a decode in progress is described by its records.
    tr = decode(model, ["the "], DecodeConfig(gen_length=8, schedule="fixed_steps", steps=8))[0]
    encoder = wire.Encoder(DecodeConfig(gen_length=64), prompt="the ", token_text=tr.token_text)
    head = encoder.chunk(tr.steps[:1])["head"]
    assert (head["G"], head["bs"], head["planned"]) == (8, 8, None)


def test_the_chunks_are_smaller_than_the_trace_and_plain_json(model):
    tr = decode(model, ["the cat "], DecodeConfig(gen_length=96, schedule="fixed_steps", steps=48, seed=1))[0]
    text = wire.dumps(wire.chunks(tr))
    assert len(text) < len(tr.to_json()) * 0.6
    json.loads(text)  # allow_nan=False: no NaN reaches the page


def test_typed_columns_pick_their_width_and_read_back():
    assert wire.column([1, -1, 32767])[0] == "i2" and wire.column([1, -1, 32768])[0] == "i4"
    for values in ([], [0], [-(2**31), 2**31 - 1, 5]):
        assert wire.read_column(wire.column(values)) == values
    assert wire.millionths(0.123456) == 123456 and wire.millionths(math.nan) == wire.NAN_CODE


def test_a_forked_traces_head_lists_its_fork_points():
    from dllm_viz import fork

    world = load_model("world")
    tr = decode(world, ["Tom Lopez of"], DecodeConfig.preset("quality", 32, seed=3))[0]
    out = fork(world, fork(world, tr, 0, force={1: 7}), 4, remask=[2])
    got = read(wire.chunks(out))
    pieces = got["pieces"]
    assert [(f["step"], f["remask"], [[p, pieces[i]] for p, i in f["force"]]) for f in got["head"]["forks"]] == [
        (f.step, list(f.remask), [[p, piece(out, t)] for p, t in f.force]) for f in out.forks]
    check(out, got)
