"""A tiny text model for the UI tests: the shared TinyDenoiser with a character tokenizer attached."""
from __future__ import annotations

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
    from dllm_viz.app.adapters import config_to_settings

    values = config_to_settings(DecodeConfig.preset("balanced", 24))
    values.update(changes)
    return values


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch_tiny_demo(tmp_dir: str):
    """Serve the playground around the tiny model in this process; returns (demo, url). Close with demo.close().

    `demo.decode_calls` lists the batch size of every call to the model, so a test can count decodes.
    """
    from dllm_viz import DecodeConfig, decode
    from dllm_viz.app.ui import build_demo, launch_options

    model = make_text_model()
    calls: list[int] = []

    def run(prompts, configs, *, on_step=None, record_candidates=5):
        calls.append(len(prompts))
        return decode(model, prompts, configs, on_step=on_step, record_candidates=record_candidates)

    example = run(["the cat "], [DecodeConfig.preset("balanced", 32, seed=1)])[0]
    calls.clear()
    demo = build_demo(run, examples=[("tiny", example)], model_name="tiny-chars", export_dir=tmp_dir)
    port = free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True, **launch_options())
    demo.decode_calls = calls
    return demo, f"http://127.0.0.1:{port}/"


def wait_for_client(proc, url: str, timeout: float = 240):
    """A gradio_client.Client for `url` once the server that `proc` is starting answers.

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
            return Client(url, verbose=False)
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)  # polling for the server to come up, not timing anything
