"""A tiny text model for the UI tests: the shared TinyDenoiser with a character tokenizer attached."""
from __future__ import annotations

import threading

import torch

from tests.tiny import CharTokenizer, TinyDenoiser


class ExactlyCachedTiny(TinyDenoiser):
    """`TinyDenoiser` with the cache interface of `models.base.Denoiser` whose "cache" is exact: it
    keeps the row's ids and recomputes the whole row, so the UI's cached paths (the cache lesson, the
    cache control) run on the tests' tiny model. The real cached forward is tested in
    tests/test_kv_cache.py and tests/test_cache.py."""

    cache_modes = ("prefix", "dual")

    def logits_cached(self, input_ids, cache, *, start, cols):
        ids = input_ids if cache is None else torch.cat(
            [cache[:, :start], input_ids, cache[:, start + input_ids.shape[1]:]], dim=1)
        return self(ids)[0, cols], ids


def make_text_model(seed: int = 0, *, cached: bool = True) -> TinyDenoiser:
    """A deterministic denoiser with `.tokenizer`, `.name` and `.max_length`, like the embedded model
    (and, unless `cached` is False, an exact stand-in for its cache interface)."""
    model = (ExactlyCachedTiny if cached else TinyDenoiser)(vocab=40, seed=seed)
    model.tokenizer = CharTokenizer()
    model.name = "tiny-chars"
    model.max_length = 256
    return model


class CountingRunner:
    """`run` for the UI that records each call (prompts, configs)."""

    def __init__(self) -> None:
        self.model = make_text_model()
        self.calls: list[tuple[list[str], list]] = []

    def __call__(self, prompts, configs, *, on_step=None, record_candidates=5):
        from dllm_viz import decode

        self.calls.append((list(prompts), list(configs)))
        return decode(self.model, prompts, configs, on_step=on_step, record_candidates=record_candidates)


def widgets(**changes) -> dict:
    """The playground's widget values for the balanced preset at gen_length 24, with `changes`."""
    from dllm_viz import DecodeConfig
    from dllm_viz.app.handlers.adapters import config_to_settings

    values = config_to_settings(DecodeConfig.preset("balanced", 24))
    values.update(changes)
    return values


TINY_PROMPTS = ("the cat ", "a dog ", "big ")  # the tiny model's example prompts in the header


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch_tiny_demo(tmp_dir: str, *, session_ttl: float | None = None, capacity: int = 10000):
    """Serve the playground around the tiny model in this process; returns (demo, url). Close with demo.close().

    `session_ttl`, `capacity`: Gradio's bounds on sessions (`build_demo(session_ttl=...)`, `launch`'s
    `state_session_capacity`), as app.py sets them.
    The picker also holds a second tiny model and the shipped world model (the scenes, the ranges
    and the Sweep of a checkable model are the world model's).

    `demo.decode_calls` lists the batch size of every call to the model, so a test can count decodes;
    `demo.decode_steps` the step of every record the decodes made (a stopped decode makes fewer);
    `demo.hold[0] = s` with `demo.gate` cleared makes each decode wait after its step s until the gate
    is set (a test stops a decode at a known step).
    """
    from dllm_viz import DecodeConfig, decode
    from dllm_viz.app.handlers.playground import ModelChoice
    from dllm_viz.app.serve import make_forker
    from dllm_viz.app.ui import build_demo, launch_options

    calls: list[int] = []
    steps: list[int] = []
    gate, hold = threading.Event(), [None]  # hold[0] = a step: each decode waits there until `gate` is set
    gate.set()

    def runner(model):
        def run(prompts, configs, *, on_step=None, record_candidates=5):
            calls.append(len(prompts))

            def hook(i, rec):
                steps.append(rec.step)
                if on_step is not None:
                    on_step(i, rec)
                if hold[0] is not None and rec.step >= hold[0]:
                    gate.wait(timeout=120)  # a test holds the decode here (then Stop, then let go)
            return decode(model, prompts, configs, on_step=hook, record_candidates=record_candidates)
        return run

    from dllm_viz import load_model
    from dllm_viz.app.serve import limits_of
    from dllm_viz.studies.world_score import WORLD_PROMPTS

    main, other = make_text_model(), make_text_model(seed=1)
    other.name = "tiny-other"
    run = runner(main)
    text = main.tokenizer.decode  # both tiny models read characters the same way
    world = load_model("world")  # the shipped world model (0.95M parameters): its context holds 96 tokens
    # The tiny models run any cache (no limits of their own but one: they write no DELETE or SPLIT).
    models = {"tiny-chars": ModelChoice(run=run, prompts=TINY_PROMPTS, name="tiny-chars",
                                        token_text=lambda i: text([i]), max_length=main.max_length,
                                        fork=make_forker(main), edits_lengths=limits_of(main)["edits_lengths"]),
              "tiny-other": ModelChoice(run=runner(other), prompts=("a dog ", "the cat "), name="tiny-other",
                                        token_text=lambda i: text([i]), max_length=other.max_length,
                                        edits_lengths=limits_of(other)["edits_lengths"]),
              "world-mdlm": ModelChoice(run=runner(world), prompts=WORLD_PROMPTS, name="world-mdlm",
                                        token_text=lambda i: world.tokenizer.decode([i]), **limits_of(world))}
    example = run(["the cat "], [DecodeConfig.preset("balanced", 32, seed=1)])[0]
    calls.clear()
    demo = build_demo(run, examples=[("tiny", example)], model_name="tiny-chars", export_dir=tmp_dir, models=models,
                      token_text=lambda i: text([i]), max_length=main.max_length, session_ttl=session_ttl)
    port = free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True,
                state_session_capacity=capacity, **launch_options())
    demo.decode_calls = calls
    demo.decode_steps = steps
    demo.hold, demo.gate = hold, gate
    return demo, f"http://127.0.0.1:{port}/"


def wait_for_client(proc, url: str, timeout: float = 240) -> None:
    """Returns once a gradio_client.Client connects to `url`, the server that `proc` is starting.

    Fails the test with the process's output if it exits first; raises after `timeout` seconds.
    """
    import time

    import pytest
    from gradio_client import Client

    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            pytest.fail(f"the server exited: {proc.stdout.read()[-4000:] if proc.stdout else ''}")
        try:
            Client(url, verbose=False).close()  # (its heartbeat thread would outlive the server)
            return
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)  # polling for the server to come up, not timing anything


def held_after_first_step(runner, gate):
    """`runner`, its decodes held after their first step until `gate` (a threading.Event) is set."""
    def held(prompts, configs, *, on_step=None, record_candidates=5):
        def hook(i, rec):
            if rec.step >= 1:
                gate.wait(timeout=60)
            on_step(i, rec)
        return runner(prompts, configs, on_step=hook, record_candidates=record_candidates)

    return held
