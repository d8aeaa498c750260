"""The renoising decoder through the product (issue 36, item 8, and the bad-settings floor): `decode`, the
Engine's continuous batching, the CLI, links, the presets, the serving policy; every bad setting a ValueError
naming it, failing its own request only."""
from __future__ import annotations

import json
import threading

import pytest

from dllm_viz import DecodeConfig, Engine, decode, load_model
from dllm_viz.app.links import link_fields, parse_link
from dllm_viz.cli import main
from dllm_viz.core.renoise import RenoiseSettings
from dllm_viz.core.trace import Trace
from dllm_viz.serve.policy import Policy
from tests.renoise_table import TableRenoiser

GOOD = [
    ([3, 4, 5], DecodeConfig(gen_length=18, seed=1, max_denoising_steps=5, confidence_threshold=2.0)),
    ([7], DecodeConfig(gen_length=6, seed=2, max_denoising_steps=2, entropy_bound=3.0)),
    ([1, 2], DecodeConfig(gen_length=12, seed=3, stability_threshold=0, confidence_threshold=5.0,
                          acceptance_from="raw", max_denoising_steps=7)),
    ([9, 9, 9, 9], DecodeConfig(gen_length=30, seed=4, t_min=0.9, t_max=0.9, stability_threshold=2,
                                confidence_threshold=1.5)),
]


def alone(model, prompt, config) -> str:
    (trace,) = decode(model, [prompt], config)
    return _steps(trace)


def _steps(trace: Trace) -> str:
    """What a trace says of its decode, clock aside."""
    d = trace.to_dict()
    return json.dumps([d["token_ids"], d["steps"], d["canvases"], d["order"], d["config"]])


# ----- bad settings: named ValueErrors ------------------------------------------------------------
@pytest.mark.parametrize("fields, message", [
    ({"entropy_bound": 0.0}, r"^entropy_bound=0.0 is invalid: expected a finite number in \(0"),
    ({"entropy_bound": -1.0}, r"^entropy_bound=-1.0 is invalid"),
    ({"t_min": 0.8, "t_max": 0.4}, r"^t_max=0.4 is invalid: expected a finite number >= t_min=0.8"),
    ({"stability_threshold": -1}, r"^stability_threshold=-1 is invalid: expected an integer in \[0, "),
    ({"max_denoising_steps": 0}, r"^max_denoising_steps=0 is invalid"),
    ({"acceptance_from": "sampled"}, r"^acceptance_from='sampled' is invalid: expected one of tempered \| raw"),
])
def test_a_bad_renoise_setting_is_a_named_value_error(fields, message):
    with pytest.raises(ValueError, match=message):
        DecodeConfig(**fields)


def test_a_renoise_knob_on_a_masked_model_is_refused_by_name():
    with pytest.raises(ValueError, match=r"^entropy_bound=0.3 is invalid for '.*', whose canvas is 'masked': the knob "
                                         r"applies to renoise canvases only; expected its default None"):
        decode(load_model("tasks"), ["copy : a ="], DecodeConfig(gen_length=4, entropy_bound=0.3))
    with pytest.raises(ValueError, match=r"^acceptance_from='raw' is invalid for"):
        decode(load_model("tasks"), ["copy : a ="], DecodeConfig.preset("balanced", 4, acceptance_from="raw"))


@pytest.mark.parametrize("fields, message", [
    ({"schedule": "eb"}, r"^schedule='eb' is invalid for 'table', whose canvas is 'renoise': the rule applies to "
                         r"masked canvases only"),
    ({"revise": "remdm"}, r"^revise='remdm' is invalid for 'table', whose canvas is 'renoise'"),
    ({"temperature": 0.5}, r"^temperature=0.5 is invalid for 'table', whose canvas is 'renoise': the knob applies to "
                           r"masked canvases only; expected its default 1.0 \(a renoise canvas reads gen_length, seed, "
                           r"entropy_bound"),
    ({"top_p": 0.9}, r"^top_p=0.9 is invalid for 'table'"),
    ({"cache": "prefix"}, r"^cache='prefix' is invalid for 'table'"),
])
def test_a_masked_only_rule_or_knob_on_a_renoise_model_is_refused_by_name(fields, message):
    model = TableRenoiser()
    with pytest.raises(ValueError, match=message):
        decode(model, [[1, 2]], DecodeConfig(gen_length=6, **fields))
    assert model.calls == []  # before any forward


def test_a_value_valid_alone_but_not_with_the_checkpoints_is_named_when_the_decode_starts():
    model = TableRenoiser()
    model.generation_defaults = lambda: {"t_min": 0.6, "t_max": 1.0}
    with pytest.raises(ValueError, match=r"^t_max=0.5 is invalid: expected a finite number >= t_min=0.6"):
        decode(model, [[1, 2]], DecodeConfig(gen_length=6, t_max=0.5))
    with pytest.raises(ValueError, match=r"^gen_length=0 is invalid: expected an integer >= 1 on a renoise canvas"):
        decode(model, [[1, 2]], DecodeConfig(gen_length=0))
    assert model.calls == []


# ----- the engine -----------------------------------------------------------------------------------
def test_the_engine_batches_renoise_requests_continuously_each_as_decoded_alone():
    model = TableRenoiser()
    expected = [alone(model, p, c) for p, c in GOOD]
    with Engine(model, max_batch=3) as engine:
        first_step = threading.Event()
        futures = [engine.submit(GOOD[0][0], GOOD[0][1], on_step=lambda rec: first_step.set())]
        first_step.wait(10)  # the next requests join a running engine: a group of their own
        futures += [engine.submit(p, c) for p, c in GOOD[1:]]  # one more than free slots: it waits for one
        traces = [f.result(timeout=60) for f in futures]
        stats = engine.stats()
    assert [_steps(t) for t in traces] == expected
    assert stats["completed"] == 4 and stats["failed"] == 0


def test_a_bad_renoise_request_fails_alone_and_the_others_decode():
    model = TableRenoiser()
    model.generation_defaults = lambda: {"t_min": 0.2}
    bad = [
        ({"gen_length": 6, "entropy_bound": 0}, r"entropy_bound=0 is invalid"),
        ({"gen_length": 6, "stability_threshold": -1}, r"stability_threshold=-1 is invalid"),
        ({"gen_length": 6, "t_max": 0.1}, r"t_max=0.1 is invalid: expected a finite number >= t_min=0.2"),
        ({"gen_length": 6, "schedule": "eb"}, r"schedule='eb' is invalid for 'table'"),
        ({"gen_length": 6, "temperature": 0.7}, r"temperature=0.7 is invalid for 'table'"),
    ]
    expected = [alone(model, p, c) for p, c in GOOD[:2]]
    with Engine(model, max_batch=4, max_length=40) as engine:
        futures = [engine.submit(GOOD[0][0], GOOD[0][1])]
        futures += [engine.submit([1, 2], fields) for fields, _ in bad]
        futures += [engine.submit([1] * 30, DecodeConfig(gen_length=12))]  # 30 + 2 canvases of 6 > 40
        futures += [engine.submit(GOOD[1][0], GOOD[1][1])]
        for future, (_, message) in zip(futures[1:6], bad):
            with pytest.raises(ValueError, match=message):
                future.result(timeout=60)
        with pytest.raises(ValueError, match=r"prompt length \+ whole canvases = 30 \+ 12 = 42 is invalid: expected "
                                             r"at most the model's max_length=40"):
            futures[6].result(timeout=60)
        assert [_steps(futures[i].result(timeout=60)) for i in (0, 7)] == expected


class Poisoned(TableRenoiser):
    """Raises in the decoder at the second canvas of a group whose prompts are 2 tokens long (8 columns read)."""

    def denoise(self, canvas, context, self_conditioning):
        if context.length == 8:
            raise RuntimeError("poisoned forward")
        return super().denoise(canvas, context, self_conditioning)


def test_a_failing_group_fails_its_own_requests_only():
    model = Poisoned()
    good = GOOD[3]
    expected = alone(TableRenoiser(), *good)
    with Engine(model, max_batch=4) as engine:
        started = threading.Event()
        poisoned = engine.submit([20, 3], DecodeConfig(gen_length=12, seed=5, max_denoising_steps=3),
                                 on_step=lambda rec: started.set())
        started.wait(10)  # the good request joins later: a group of its own
        ok = engine.submit(*good)
        with pytest.raises(RuntimeError, match="poisoned forward"):
            poisoned.result(timeout=60)
        assert _steps(ok.result(timeout=60)) == expected


def test_a_cancelled_renoise_request_leaves_its_group_and_the_others_are_unchanged():
    model = TableRenoiser()
    expected = [alone(model, p, c) for p, c in GOOD[:2]]
    with Engine(model, max_batch=4) as engine:
        gate = threading.Event()
        stream = engine.stream([5, 6], DecodeConfig(gen_length=30, seed=8, confidence_threshold=0.0))
        futures = [engine.submit(p, c, on_step=lambda rec: gate.wait(5)) for p, c in GOOD[:2]]
        next(iter(stream))  # one step of the cancelled request, then it goes
        stream.cancel()
        gate.set()
        assert [_steps(f.result(timeout=60)) for f in futures] == expected


# ----- presets, links, the CLI, the policy -----------------------------------------------------------
def test_the_presets_are_the_shipped_defaults_and_a_link_carries_the_knobs():
    model = TableRenoiser()
    model.generation_defaults = lambda: {"max_denoising_steps": 3, "entropy_bound": 0.6}
    (as_transformers,) = decode(model, [[1, 2]], DecodeConfig.preset("diffusion_gemma", 6, seed=4))
    (as_sglang,) = decode(model, [[1, 2]], DecodeConfig.preset("gemma4_renoise", 6, seed=4))
    # checkpoint's
    assert (as_transformers.config.max_denoising_steps, as_transformers.config.entropy_bound) == (3, 0.6)
    assert (as_sglang.config.max_denoising_steps, as_sglang.config.entropy_bound) == (48, 0.1)  # SGLang's own
    assert as_transformers.config.t_max == 0.8 and as_transformers.config.acceptance_from == "tempered"
    fields = link_fields(as_sglang)
    assert fields["config"]["entropy_bound"] == 0.1 and fields["config"]["canvas_length"] == 6
    link = parse_link({"config": json.dumps(fields["config"]), "prompt": "x"})
    (again,) = decode(model, [[1, 2]], link.config)
    assert _steps(again) == _steps(as_sglang)


def test_the_serving_policy_names_the_renoise_canvas_and_refuses_it():
    with pytest.raises(ValueError, match=r"^entropy_bound=0.1 is invalid: expected its default: a renoise canvas has "
                                         r"no dllm-viz policy \(.*--dllm-algorithm Gemma4Renoise"):
        Policy.from_decode_config(DecodeConfig.preset("gemma4_renoise", 64))
    with pytest.raises(ValueError, match=r"entropy_bound=0.2 is invalid: expected no such policy key"):
        Policy(entropy_bound=0.2)


def test_the_cli_generates_with_a_renoise_checkpoint_and_its_flags(tmp_path, capsys):
    from tests.diffusion_gemma_tiny import save_tiny

    save_tiny(tmp_path / "tiny")
    out = tmp_path / "trace.json"
    code = main(["generate", "--model", str(tmp_path / "tiny"), "--device", "cpu", "--prompt", "the cat sat",
                 "--gen-length", "16", "--entropy-bound", "0.5", "--max-denoising-steps", "3",
                 "--acceptance-from", "raw", "--seed", "2", "--json", str(out)])
    assert code == 0
    trace = Trace.from_json(out.read_text(encoding="utf-8"))
    assert trace.canvas == "renoise" and trace.config.entropy_bound == 0.5 and trace.config.acceptance_from == "raw"
    # t_min: checkpoint's
    assert (trace.config.max_denoising_steps, trace.config.t_min, trace.config.seed) == (3, 0.3, 2)
    assert trace.text in capsys.readouterr().out
    code = main(["generate", "--model", str(tmp_path / "tiny"), "--device", "cpu", "--prompt", "the cat",
                 "--gen-length", "8", "--temperature", "0.5", "--quiet"])
    assert code == 2 and "temperature=0.5 is invalid for" in capsys.readouterr().err


def test_renoise_settings_and_decode_config_share_one_validation():
    for name in ("entropy_bound", "t_max", "max_denoising_steps", "stability_threshold", "confidence_threshold",
                 "canvas_length"):
        with pytest.raises(ValueError) as a:
            DecodeConfig(**{name: -1})
        with pytest.raises(ValueError) as b:
            RenoiseSettings(**{name: -1})
        assert str(a.value) == str(b.value)


def test_fork_diff_and_export_take_a_renoising_trace(tmp_path):
    import dllm_viz

    model = TableRenoiser()
    a, b = decode(model, [[1, 2], [1, 2]], [DecodeConfig(gen_length=6, seed=1), DecodeConfig(gen_length=6, seed=2)])
    assert not dllm_viz.diff(a, b).same  # where their acceptances part (tests/test_diff.py)
    forked = dllm_viz.fork(model, a, 1, knobs={"seed": 2})  # knobs only (tests/test_fork_renoise.py)
    assert forked.steps[:1] == a.steps[:1] and forked.forks[0].knobs == (("seed", 2),)
    with pytest.raises(ValueError, match=r"^force=\{0: 1\} is invalid on a renoising trace"):
        dllm_viz.fork(model, a, 1, force={0: 1})
    written = dllm_viz.export_animation(a, tmp_path / "a.svg")  # its frames: noise, acceptances (anim_renoise)
    assert f'dur="{(len(a.steps) + 1) * 450 + 2000}ms"' in written.read_text(encoding="utf-8")  # a frame a step
