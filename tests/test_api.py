"""The /generate endpoint through the real gradio_client, against a served playground."""
from __future__ import annotations

import json
import logging
import subprocess
import sys
import time
from pathlib import Path

import pytest
from gradio_client import Client

from dllm_viz import DecodeConfig, assets
from dllm_viz.core.trace import Trace
from tests.ui_model import launch_tiny_demo

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    demo, url = launch_tiny_demo(str(tmp_path_factory.mktemp("exports")))
    try:
        yield demo, url
    finally:
        demo.close()


@pytest.fixture(scope="module")
def client(served):
    client = Client(served[1], verbose=False)
    yield client
    client.close()  # its heartbeat thread would keep reconnecting to the closed server's port


def test_generate_returns_text_and_trace_json(client):
    text, trace_json = client.predict("the cat ", json.dumps({"gen_length": 16, "temperature": 0.5, "seed": 3}),
                                      api_name="/generate")
    trace = Trace.from_json(trace_json)
    assert text == trace.text and len(text) == 16
    assert trace.config == DecodeConfig.preset("balanced", 16, temperature=0.5, seed=3)
    assert trace.prompt_text == "the cat "


def test_same_request_same_result(client):
    args = ("abc ", json.dumps({"gen_length": 12, "seed": 11}))
    (text1, json1), (text2, json2) = (client.predict(*args, api_name="/generate") for _ in range(2))
    one, two = Trace.from_json(json1), Trace.from_json(json2)
    assert text1 == text2 and one.order == two.order and one.steps == two.steps  # wall time may differ


def test_invalid_settings_name_the_field_and_the_app_keeps_serving(client):
    with pytest.raises(Exception, match="temprature"):
        client.predict("x", json.dumps({"temprature": 1.0}), api_name="/generate")
    with pytest.raises(Exception, match="decay=1.5"):
        client.predict("x", json.dumps({"decay": 1.5}), api_name="/generate")
    with pytest.raises(Exception, match="config_json"):
        client.predict("x", "{oops", api_name="/generate")
    text, _ = client.predict("x", json.dumps({"gen_length": 8}), api_name="/generate")
    assert len(text) == 8


def test_a_user_error_is_one_log_line_not_a_traceback(client, capfd, caplog):
    capfd.readouterr()
    with caplog.at_level(logging.WARNING, logger="dllm_viz.app.handlers.errors"):
        with pytest.raises(Exception, match="decay=1.5"):
            client.predict("x", json.dumps({"decay": 1.5}), api_name="/generate")
    printed = capfd.readouterr()
    assert "Traceback" not in printed.out + printed.err
    lines = [r.getMessage() for r in caplog.records if r.name == "dllm_viz.app.handlers.errors"]
    assert len(lines) == 1 and "decay=1.5" in lines[0] and "\n" not in lines[0]


def test_only_generate_and_fork_are_public(client):
    assert list(client.view_api(print_info=False, return_format="dict")["named_endpoints"]) == ["/generate", "/fork"]


def test_fork_continues_a_trace_from_a_step(client):
    _, trace_json = client.predict("the cat ", json.dumps({"gen_length": 16, "seed": 5}), api_name="/generate")
    trace = Trace.from_json(trace_json)
    text, same_json, verdicts = client.predict(trace_json, json.dumps({"step": 4}), api_name="/fork")
    same = Trace.from_json(same_json)
    assert text == trace.text and same.steps == trace.steps and same.token_ids == trace.token_ids
    assert verdicts == "null"  # not the world model
    pos = next(p for p, tok in enumerate(trace.canvas_at(3)) if tok is None)
    _, forked_json, _ = client.predict(trace_json, json.dumps({"step": 4, "force": {str(pos): 5},
                                                                "knobs": {"temperature": 0}}), api_name="/fork")
    forked = Trace.from_json(forked_json)
    assert forked.token_ids[pos] == 5 and forked.steps[:4] == trace.steps[:4]
    assert forked.forks[-1].step == 4 and forked.config.temperature == 0


def test_fork_errors_name_what_is_wrong_and_the_app_keeps_serving(client):
    _, trace_json = client.predict("abc ", json.dumps({"gen_length": 8, "seed": 2}), api_name="/generate")
    with pytest.raises(Exception, match="step=99 is invalid"):
        client.predict(trace_json, json.dumps({"step": 99}), api_name="/fork")
    with pytest.raises(Exception, match="token id 4000"):
        client.predict(trace_json, json.dumps({"step": 1, "force": {"0": 4000}}), api_name="/fork")
    with pytest.raises(Exception, match="fork_json"):
        client.predict(trace_json, "{oops", api_name="/fork")
    with pytest.raises(Exception, match="does not parse"):
        client.predict("not a trace", json.dumps({"step": 1}), api_name="/fork")
    text, _, _ = client.predict(trace_json, json.dumps({"step": 1}), api_name="/fork")
    assert len(text) == 8


def test_app_model_comes_from_the_environment():
    from dllm_viz.app import serve as app

    assert app.model_from_env({}).name == "austen-mdlm"
    # A checkpoint directory: here the embedded model's own folder, which load_model reads by path.
    model = app.model_from_env({"DLLM_VIZ_MODEL": str(assets.path("embedded"))})
    assert model.name == "austen-mdlm" and model.tokenizer.encode("Emma") != []
    with pytest.raises(ValueError, match="does not exist"):
        app.model_from_env({"DLLM_VIZ_MODEL": str(ROOT / "no-such-checkpoint")})
    with pytest.raises(ValueError, match="chat=True"):
        app.model_from_env({"DLLM_VIZ_CHAT": "1"})


def test_app_py_serves_the_embedded_model(served_app):
    """The real entry point (the shared `python app.py` of tests/conftest.py): a decode, then a bad
    setting, which the caller sees by name and the server's output shows as one line, no traceback."""
    client = served_app.client()
    text, trace_json = client.predict("It is a truth", json.dumps({"gen_length": 32}), api_name="/generate")
    trace = Trace.from_json(trace_json)
    assert trace.text == text and trace.model == "austen-mdlm"
    with pytest.raises(Exception, match="decay=1.5"):
        client.predict("x", json.dumps({"gen_length": 8, "decay": 1.5}), api_name="/generate")
    assert client.predict("x", json.dumps({"gen_length": 8}), api_name="/generate")[0]  # still serving
    printed = served_app.printed()
    assert "Traceback" not in printed, printed[-3000:]
    lines = [line for line in printed.splitlines() if "decay=1.5" in line]
    assert len(lines) == 1 and "user error" in lines[0], printed[-3000:]


LEAVER = """
import json, sys, time
from gradio_client import Client
Client(sys.argv[1], verbose=False).submit("the cat ", sys.argv[2], api_name="/generate")
time.sleep(600)
"""


def test_a_client_that_leaves_cancels_its_decode(served):
    """Issue 42: an API client that leaves no longer keeps its decode running. /generate streams a
    heartbeat while it decodes; once the client's process is gone, Gradio closes the stream at the
    next one, and the decode stops at its next step (64 planned; held after step 2, then let through
    one step a second)."""
    demo, url = served
    steps = demo.decode_steps
    before = len(steps)
    demo.hold[0] = 2
    demo.gate.clear()
    config = json.dumps({"gen_length": 64, "schedule": "fixed_steps", "steps": 64, "seed": 5})
    leaver = subprocess.Popen([sys.executable, "-c", LEAVER, url, config])
    try:
        deadline = time.monotonic() + 120
        while len(steps) - before < 3 and time.monotonic() < deadline:
            time.sleep(0.05)  # polling for the decode to reach its held step
        assert len(steps) - before == 3
        time.sleep(3)  # heartbeats reach the client: its event stream is open (a client killed before it
        # opened one cannot be told from a slow one)
    finally:
        leaver.kill()
        leaver.wait()
    # One step a second (the gate opened for a moment), until a step no longer comes: the server found
    # the client gone (at a heartbeat, however loaded the machine) and the decode has ended.
    seen = len(steps)
    for _ in range(50):
        demo.gate.set()
        demo.gate.clear()
        time.sleep(1.0)
        if len(steps) == seen:
            break
        seen = len(steps)
    demo.hold[0] = None
    demo.gate.set()
    time.sleep(1.0)
    assert len(steps) - before < 50  # it ended, long before its 64 steps
    assert len(steps) == seen
