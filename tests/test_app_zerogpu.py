"""app/serve.py's ZeroGPU guard, with a stand-in `spaces` module injected into sys.modules.

On a ZeroGPU Space the `spaces` package exists and the GPU exists only inside functions wrapped in
`spaces.GPU`; the app must then wrap its decode entry and decode each call's batch itself instead of
running the long-lived engine thread. Elsewhere `import spaces` fails and the wrapper is a no-op.
"""
from __future__ import annotations

import importlib
import sys
import types

import pytest

import dllm_viz.app
from dllm_viz import DecodeConfig, decode
from tests.ui_model import make_text_model

SERVE = "dllm_viz.app.serve"


def fake_spaces() -> types.ModuleType:
    """A stand-in for the `spaces` package: `GPU` wraps a function and counts the calls through it."""
    module = types.ModuleType("spaces")
    module.wrapped, module.calls = [], []

    def GPU(fn=None, **options):  # used as @spaces.GPU and as @spaces.GPU(duration=...)
        if fn is None:
            return lambda f: GPU(f, **options)

        def inside_gpu(*args, **kwargs):
            module.calls.append(fn.__name__)
            return fn(*args, **kwargs)

        module.wrapped.append(fn.__name__)
        return inside_gpu

    module.GPU = GPU
    return module


def load_app(monkeypatch: pytest.MonkeyPatch, spaces: types.ModuleType | None):
    """Import `dllm_viz.app.serve` afresh, with `spaces` present (a module) or absent (None); the module
    imported before comes back when the test ends."""
    monkeypatch.setitem(sys.modules, "spaces", spaces)  # None makes `import spaces` raise ImportError
    monkeypatch.delitem(sys.modules, SERVE, raising=False)
    monkeypatch.delattr(dllm_viz.app, "serve", raising=False)  # `from dllm_viz.app import serve` reads it
    return importlib.import_module(SERVE)


def test_zero_gpu_wraps_the_decode_entry_and_runs_without_the_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    spaces = fake_spaces()
    app = load_app(monkeypatch, spaces)
    assert app.ZERO_GPU is True and app.gpu is spaces.GPU
    model = make_text_model()
    demo = app.create_demo(model)
    # No engine thread: the GPU is not there outside spaces.GPU calls.
    assert demo.engine is None
    run = app.make_runner(model, None)
    assert spaces.wrapped[-1] == "run"
    config = DecodeConfig(gen_length=8, schedule="fixed_steps", steps=4, seed=3)
    before = len(spaces.calls)
    traces = run(["ab", "cd"], [config, config])
    assert spaces.calls[before:] == ["run"]  # the whole batch decoded inside one GPU call
    expected = decode(model, ["ab", "cd"], config)
    assert [t.token_ids for t in traces] == [t.token_ids for t in expected]


def test_without_spaces_the_wrapper_is_a_no_op_and_the_engine_serves(monkeypatch: pytest.MonkeyPatch) -> None:
    app = load_app(monkeypatch, None)
    assert app.ZERO_GPU is False

    def probe() -> str:
        return "ran"

    assert app.gpu(probe) is probe
    demo = app.create_demo(make_text_model())
    try:
        assert demo.engine is not None and demo.engine.max_batch == app.MAX_BATCH
    finally:
        demo.engine.close()
