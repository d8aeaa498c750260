"""A renoising decode as a trace (format version 3, issue 36): `decode` on a renoiser gives the loop's steps
exactly, the JSON round trip is exact, `canvas_at` is exact at every frame in both directions, the schema
bounds every new field and replays the steps, and versions 1 and 2 still load."""
from __future__ import annotations

import copy
import json

import pytest
import torch

from dllm_viz import DecodeConfig, assets, decode
from dllm_viz.core.renoise import RenoiseSettings
from dllm_viz.core.renoise_decoder import renoise_decode
from dllm_viz.core.trace import Trace
from tests.renoise_table import TableRenoiser

PROMPTS = [[3, 4, 5], [7], [1, 2]]
CONFIGS = [
    DecodeConfig(gen_length=18, seed=1, max_denoising_steps=5, confidence_threshold=2.0),
    DecodeConfig(gen_length=6, seed=2, max_denoising_steps=2, entropy_bound=3.0),
    DecodeConfig(gen_length=12, seed=3, stability_threshold=0, confidence_threshold=5.0, acceptance_from="raw",
                 max_denoising_steps=7, t_min=0.3, t_max=1.4),
]


def settings(config: DecodeConfig) -> RenoiseSettings:
    """What `decode` should resolve `config` to on the table model (no generation config: transformers')."""
    knobs = {k: getattr(config, k) for k in ("entropy_bound", "t_min", "t_max", "max_denoising_steps",
                                             "stability_threshold", "confidence_threshold", "acceptance_from")
             if getattr(config, k) is not None}
    return RenoiseSettings(**knobs, max_new_tokens=config.gen_length, seed=config.seed, canvas_length=6)


@pytest.fixture(scope="module")
def traces() -> list[Trace]:
    return decode(TableRenoiser(), PROMPTS, CONFIGS)


@pytest.fixture(scope="module")
def results():
    return renoise_decode(TableRenoiser(), PROMPTS, [settings(c) for c in CONFIGS])


def test_decode_on_a_renoiser_records_the_loops_steps_exactly(traces, results):
    for trace, result in zip(traces, results, strict=True):
        assert trace.canvas == "renoise" and trace.finished_by == result.finished_by
        assert trace.token_ids == list(result.token_ids) and trace.prompt_ids == list(result.prompt_ids)
        steps = [(c.index, s) for c in result.canvases for s in c.steps]
        assert len(trace.steps) == len(steps) == trace.nfe == result.forwards
        for i, (rec, (canvas, step)) in enumerate(zip(trace.steps, steps)):
            section = rec.renoise
            assert (rec.step, rec.block, rec.k) == (i, canvas, int(step.accepted.sum()))
            assert rec.temperature == round(step.temperature, 6)
            assert section.read == step.read.tolist() and section.proposal == step.proposal.tolist()
            assert section.argmax == step.argmax.tolist()
            assert section.accepted == step.accepted.nonzero().squeeze(1).tolist()
            assert section.renoised == (~step.accepted).nonzero().squeeze(1).tolist()
            assert section.lost == {p: int(step.read[p]) for p in section.renoised}
            assert section.entropy == pytest.approx(step.entropy.tolist(), abs=1e-6)
            assert (section.stable, section.confident, section.stopped, section.steps_left) == (
                step.stable, step.confident, step.stopped, step.steps_left)
        spans = trace.canvases
        assert [(s.index, s.start, s.end, s.steps, s.stop_fired) for s in spans] == [
            (c.index, c.start, c.end, len(c.steps), c.stop_fired) for c in result.canvases]
    # the config that ran: every renoise knob resolved (transformers' defaults where the config left None)
    assert traces[0].config.entropy_bound == 0.1 and traces[0].config.canvas_length == 6
    assert traces[2].config.acceptance_from == "raw" and traces[0].config.acceptance_from == "tempered"
    assert decode(TableRenoiser(), [PROMPTS[0]], traces[0].config)[0].to_dict()["steps"] == traces[0].to_dict()["steps"]


def test_the_json_round_trip_is_exact_and_version_3(traces):
    for trace in traces:
        text = trace.to_json()
        data = json.loads(text)
        assert data["version"] == 3 and data["canvas"] == "renoise" and data["mask_token_id"] is None
        assert set(data["steps"][0]) == {"step", "block", "k", "temperature", "renoise"}  # no masked field
        again = Trace.from_json(text)
        assert again.to_json() == text and again.metrics == trace.metrics
        assert again.steps[0].renoise == trace.steps[0].renoise


def test_canvas_at_is_exact_at_every_frame_in_both_directions(traces, results):
    for trace, result in zip(traces, results):
        L, expected, first = 6, {}, 0
        for c in result.canvases:  # independently, from the loop's tensors: what each step read, then the ids
            for k, step in enumerate(c.steps):
                frame: list = list(result.token_ids[: c.start]) + step.read.tolist()
                expected[first + k - 1] = frame + [None] * (len(result.token_ids) - len(frame))
            first += len(c.steps)
        expected[first - 1] = list(result.token_ids)
        assert sorted(expected) == list(range(-1, len(trace.steps)))
        forward = [trace.canvas_at(s) for s in range(-1, len(trace.steps))]
        backward = [trace.canvas_at(s) for s in reversed(range(-1, len(trace.steps)))][::-1]
        assert forward == backward == [expected[s] for s in range(-1, len(trace.steps))]
        # the order map's meaning: from `order[p]` on, position p holds its final token
        for p, settled in enumerate(trace.order):
            assert all(trace.canvas_at(s)[p] == trace.token_ids[p] for s in range(settled, len(trace.steps)))
            changed = settled > trace.canvases[p // L].first_step
            assert not changed or trace.canvas_at(settled - 1)[p] != trace.token_ids[p]


def _tampered(trace: Trace, change) -> dict:
    d = copy.deepcopy(trace.to_dict())
    change(d)
    return d


def _first_step_with_accepted_and_next(d: dict) -> int:
    """A step that is not its canvas's last (the next step reads what it accepted)."""
    lasts = {c["first_step"] + c["steps"] - 1 for c in d["canvases"]}
    return next(i for i in range(len(d["steps"])) if i not in lasts)


TAMPER = {
    "accepted not ascending": (lambda d: d["steps"][0]["renoise"]["accepted"].reverse()
                               if len(d["steps"][0]["renoise"]["accepted"]) > 1 else
                               d["steps"][0]["renoise"]["accepted"].append(0), r"steps\[0\]\.renoise\.accepted"),
    "k not the accepted count": (lambda d: d["steps"][1].update(k=d["steps"][1]["k"] + 1), r"steps\[1\]\.k"),
    "the next read lost an accepted token": (
        lambda d: (lambda i: d["steps"][i + 1]["renoise"]["read"].__setitem__(
            d["steps"][i]["renoise"]["accepted"][0], (d["steps"][i]["renoise"]["proposal"][
                d["steps"][i]["renoise"]["accepted"][0]] + 1) % 24))(_first_step_with_accepted_and_next(d)),
        r"steps\[\d+\]\.renoise\.read\[\d+\]=.* the proposal step"),
    "steps_left off": (lambda d: d["steps"][1]["renoise"].update(steps_left=99), r"steps\[1\]\.renoise\.steps_left"),
    "entropy negative": (lambda d: d["steps"][0]["renoise"]["entropy"].__setitem__(2, -0.5),
                         r"steps\[0\]\.renoise\.entropy\[2\]"),
    "entropy missing": (lambda d: d["steps"][0]["renoise"]["entropy"].pop(), r"steps\[0\]\.renoise\.entropy"),
    "a read id out of range": (lambda d: d["steps"][0]["renoise"]["read"].__setitem__(0, -3),
                               r"steps\[0\]\.renoise\.read\[0\]"),
    "an unknown section key": (lambda d: d["steps"][0]["renoise"].update(extra=1), r"steps\[0\]\.renoise="),
    "a masked field in a renoise step": (lambda d: d["steps"][0].update(selected=[]), r"steps\[0\]="),
    "stop flag not stable and confident": (lambda d: d["steps"][0]["renoise"].update(stopped=True, stable=False),
                                           r"steps\[0\]\.renoise\.stopped"),
    "token not the last argmax": (lambda d: d["token_ids"].__setitem__(0, (d["token_ids"][0] + 1) % 24),
                                  r"token_ids\[0\]"),
    "canvas overlaps": (lambda d: d["canvases"][1].update(start=0) if len(d["canvases"]) > 1 else
                        d["canvases"][0].update(start=3), r"canvases\[\d\]\.start"),
    "canvas steps do not add up": (lambda d: d["canvases"][0].update(steps=d["canvases"][0]["steps"] - 1),
                                   r"canvases\[0\]\.steps=\d+ is invalid: expected its step budget"),
    "more steps than the budget": (lambda d: d["canvases"][-1].update(steps=d["canvases"][-1]["steps"] + 1),
                                   r"canvases\[\d\]\.steps=\d+ is invalid: expected at most max_denoising_steps"),
    "stop_fired not its last step's": (lambda d: d["canvases"][0].update(stop_fired=not d["canvases"][0]["stop_fired"]),
                                       r"canvases\[0\]\.stop_fired"),
    "order not the last change": (lambda d: d["order"].__setitem__(0, (d["order"][0] + 1) % len(d["steps"])),
                                  r"order\[0\]"),
    "a mask token id": (lambda d: d.update(mask_token_id=5), r"mask_token_id=5"),
    "finished_by unknown": (lambda d: d.update(finished_by="tired"), r"finished_by='tired'"),
    "canvases missing": (lambda d: d.pop("canvases"), r"'canvases' is missing"),
    "an unknown canvas": (lambda d: d.update(canvas="spiral"), r"canvas='spiral' is invalid"),
    "a version-2 trace with a canvas": (lambda d: d.update(version=2), r"key='canvas' is invalid"),
}


@pytest.mark.parametrize("name", list(TAMPER))
def test_the_schema_refuses_a_tampered_renoising_trace_naming_the_field(traces, name):
    change, pattern = TAMPER[name]
    d = _tampered(traces[0], change)
    with pytest.raises(ValueError, match=pattern):
        Trace.from_dict(d)
    Trace.from_dict(traces[0].to_dict())  # the untouched trace loads


def test_the_schema_bounds_the_steps_and_canvases_by_the_config(traces):
    d = copy.deepcopy(traces[0].to_dict())
    d["config"]["max_denoising_steps"] = 2  # fewer than some canvas took
    with pytest.raises(ValueError, match=r"trace steps has 15 items: this viewer reads at most 6"):
        Trace.from_dict(d)
    d = copy.deepcopy(traces[0].to_dict())
    d["config"]["gen_length"] = 6  # one canvas asked for, three recorded
    with pytest.raises(ValueError, match=r"canvases.* at most 1"):
        Trace.from_dict(d)
    d = copy.deepcopy(traces[0].to_dict())
    d["config"]["canvas_length"] = None
    with pytest.raises(ValueError, match=r"records the canvas_length"):
        Trace.from_dict(d)


def test_versions_1_and_2_still_load_and_a_masked_trace_is_written_as_2():
    files = sorted(assets.path("examples").glob("*.json"))
    versions = set()
    for path in files:
        data = json.loads(path.read_text(encoding="utf-8"))
        versions.add(data["version"])
        trace = Trace.from_dict(data)
        assert trace.canvas == "masked" and trace.to_dict()["version"] == 2
    assert versions == {1, 2}


def test_metrics_of_a_renoising_trace(traces):
    m = traces[2].metrics
    assert m["nfe"] == m["steps"] == len(traces[2].steps) and m["canvases"] == len(traces[2].canvases)
    assert m["accepted_per_step"] == pytest.approx(sum(r.k for r in traces[2].steps) / len(traces[2].steps))
    assert m["tokens_per_forward"] == pytest.approx(len(traces[2].token_ids) / len(traces[2].steps))
    assert "distinct_2" in m and m["stops_fired"] == sum(c.stop_fired for c in traces[2].canvases)


def test_end_of_text_sets_text_end_and_the_padding_is_checked():
    model = TableRenoiser()
    model.generation_defaults = lambda: {"eos_token_id": list(range(1, 24)), "pad_token_id": 0}
    (trace,) = decode(model, [[3]], DecodeConfig(gen_length=12, seed=9, max_denoising_steps=2))
    assert trace.finished_by == "end_of_text" and trace.text_end is not None
    assert all(t == 0 for t in trace.token_ids[trace.text_end + 1:])
    again = Trace.from_json(trace.to_json())
    assert again.text_end == trace.text_end
    d = trace.to_dict()
    if trace.text_end + 1 < len(d["token_ids"]):
        d["token_ids"][trace.text_end + 1] = 5
        d["token_ids"][-1] = 6
        with pytest.raises(ValueError, match=r"token_ids|one padding id"):
            Trace.from_dict(d)
    assert torch.tensor(trace.token_ids).numel() == len(trace.canvases) * 6
