"""policy.yaml export: DecodeConfig <-> Policy round trips, validation, seeds, the command line.

The SGLang side of the policy is tested against the real SGLang in tests/sglang/ (run by
tests/test_sglang_env.py); here only what needs no SGLang.
"""
from __future__ import annotations

import argparse
import shlex
import subprocess
import sys

import pytest

from dllm_viz import DecodeConfig, decode
from dllm_viz.core.schedules import planned_steps
from dllm_viz.serve import ALGORITHM_NAME, SGLANG_VERSION
from dllm_viz.cli import build_parser
from dllm_viz.serve.policy import Policy, block_seed, differences, launch_command, request_seed
from tests.sglang.scripted import CausalScript, ScriptedDenoiser

MULTI_BLOCK = [
    dict(schedule="topk_decay", top_k=6, decay=0.8, min_k=2, block_schedule="restart"),
    dict(schedule="fixed_steps", steps=9),
    dict(schedule="threshold", threshold=0.7, min_k=1, confidence="margin"),
    dict(schedule="adaptive", top_k=5, confidence="entropy", top_p=0.9, vocab_top_k=7),
]


@pytest.mark.parametrize("kw", MULTI_BLOCK)
def test_config_policy_yaml_config_round_trip(kw):
    config = DecodeConfig(gen_length=24, block_length=8, temperature=0.8, seed=5, **kw)
    policy = Policy.from_decode_config(config)
    again = Policy.from_yaml(policy.to_yaml(source="a test"))
    assert again == policy
    back = again.to_decode_config(num_blocks=config.num_blocks, seed=config.seed)
    for name in ("gen_length", "block_length", "schedule", "initial_k", "decay", "min_k", "threshold", "temperature",
                 "temperature_stages", "confidence", "top_p", "vocab_top_k", "seed"):
        assert getattr(back, name) == getattr(config, name), name
    assert planned_steps(back) == planned_steps(config)
    if config.schedule == "fixed_steps":
        assert back.total_steps == config.total_steps


def test_yaml_names_the_algorithm_and_the_pinned_sglang():
    text = Policy(block_size=32).to_yaml()
    assert f"--dllm-algorithm {ALGORITHM_NAME}" in text and f"SGLang {SGLANG_VERSION}" in text
    assert "block_size: 32" in text  # SGLang itself reads this key as its block size


@pytest.mark.parametrize(
    "changes, field",
    [
        (dict(confidence_from="tempered"), "confidence_from"),
        (dict(rng="shared"), "rng"),
        (dict(block_schedule="continue"), "block_schedule"),
    ],
)
def test_export_refuses_what_sglang_would_run_differently(changes, field):
    config = DecodeConfig(gen_length=16, block_length=8, top_k=4, **changes)
    with pytest.raises(ValueError, match=f"^{field}="):
        Policy.from_decode_config(config)


def test_a_single_block_topk_decay_exports_whatever_its_block_schedule():
    policy = Policy.from_decode_config(DecodeConfig(gen_length=16, top_k=4, block_schedule="continue"))
    assert policy.block_size == 16 and policy.top_k == 4


@pytest.mark.parametrize(
    "mapping, field",
    [
        ({"schedul": "topk_decay"}, "schedul"),
        ({"block_size": 0}, "block_size"),
        ({"block_size": 8, "steps_per_block": 9}, "steps_per_block"),
        ({"temperature": -1.0}, "temperature"),
        ({"decay": 0.0}, "decay"),
        ({"request_sampling": "sometimes"}, "request_sampling"),
        ({"policy_format": 99}, "policy_format"),
    ],
)
def test_bad_policy_values_raise_naming_the_key(mapping, field):
    with pytest.raises(ValueError, match=f"^{field}="):
        Policy.from_mapping(mapping)


def test_defaults_follow_the_block_size():
    p = Policy(block_size=32)
    assert (p.top_k, p.steps_per_block) == (8, 16)
    assert Policy(block_size=4).top_k == 1


def test_block_config_caps_fixed_steps_to_a_short_block():
    policy = Policy(block_size=8, schedule="fixed_steps", steps_per_block=4)
    assert planned_steps(policy.block_config(8)) == 4
    assert planned_steps(policy.block_config(3)) == 3  # the prompt's partial block: one per step
    with pytest.raises(ValueError, match="^masks=0"):
        policy.block_config(0)


@pytest.mark.parametrize("kw", MULTI_BLOCK)
def test_block_configs_decode_like_the_multi_block_config(kw):
    """Policy.block_config, block after block, is what to_decode_config(num_blocks) runs (argmax,
    block-causal model): the bridge the SGLang plugin relies on."""
    model = ScriptedDenoiser(CausalScript(seed=1))
    policy = Policy.from_decode_config(DecodeConfig(gen_length=24, block_length=8, temperature=0.0, **kw))
    prompt = [3, 1, 4, 1, 5, 9, 2, 6]
    (whole,) = decode(model, [prompt], policy.to_decode_config(num_blocks=3), record_candidates=0)
    committed, steps = list(prompt), []
    for _ in range(3):
        (part,) = decode(model, [committed], policy.block_config(8), record_candidates=0)
        steps += [(rec.selected, rec.tokens) for rec in part.steps]
        committed += part.token_ids
    assert committed[len(prompt):] == whole.token_ids
    assert steps == [([g % 8 for g in rec.selected], rec.tokens) for rec in whole.steps]


def test_seeds_are_stable_across_processes_and_distinct():
    code = "from dllm_viz.serve.policy import request_seed, block_seed; print(request_seed('req-1'), block_seed(7, 32))"
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={"PYTHONHASHSEED": "12345", "PATH": ""}).stdout  # another str-hash salt
    assert other == f"{request_seed('req-1')} {block_seed(7, 32)}\n"
    assert len({request_seed(r) for r in ("a", "b", "c")}) == 3
    assert len({block_seed(7, s) for s in (0, 32, 64)} | {block_seed(8, 0)}) == 4
    assert all(0 <= request_seed(r) < 2**63 for r in ("a", "", "longer request id"))


def test_differences_are_listed_only_where_they_apply():
    assert differences(DecodeConfig(gen_length=16, block_length=8, temperature=0.0, block_schedule="restart")) == []
    staged = DecodeConfig(gen_length=16, block_length=8, temperature_stages=(1.2, 1.0, 0.7), block_schedule="restart")
    notes = differences(staged)
    assert any("staged temperature" in n for n in notes) and any("random draws" in n for n in notes)
    assert not any("staged" in n for n in differences(DecodeConfig(gen_length=8, temperature_stages=(1.2, 1.0, 0.7))))


def test_a_cache_is_not_exported_and_the_notes_say_why():
    plain = DecodeConfig(gen_length=16, block_length=8, temperature=0.0, block_schedule="restart")
    for cache in ("prefix", "dual"):
        config = plain.replace(cache=cache, cache_drift=True)
        assert Policy.from_decode_config(config) == Policy.from_decode_config(plain)  # per block, as ever
        assert [n for n in differences(config) if n.startswith(f"cache={cache!r} is not exported")]
    assert not any(n.startswith("cache") for n in differences(plain))


def test_launch_command():
    argv = launch_command("/models/llada2", "policy.yaml")
    assert argv == ["python", "-m", "sglang.launch_server", "--model-path", "/models/llada2",
                    "--dllm-algorithm", ALGORITHM_NAME, "--dllm-algorithm-config", "policy.yaml"]
    assert launch_command("m", "p.yaml", launcher="serve", extra=["--trust-remote-code"])[:2] == ["sglang", "serve"]
    with pytest.raises(ValueError, match="^launcher="):
        launch_command("m", "p.yaml", launcher="vllm")


def _cli(argv: list[str]) -> argparse.Namespace:
    return build_parser().parse_args(argv)


def test_export_policy_cli_writes_yaml_and_prints_the_command(tmp_path, capsys):
    out = tmp_path / "policy.yaml"
    args = _cli(["export-policy", "--preset", "quality", "--gen-length", "64", "--block-length", "32",
                 "--block-schedule", "restart", "--temperature-stages", "1.2,1.0,0.7",
                 "--model-path", "/ckpt/LLaDA2.0-mini", "--output", str(out), "--trust-remote-code"])
    assert args.func(args) == 0
    printed = capsys.readouterr()
    argv = shlex.split(printed.out.strip())
    assert argv == launch_command("/ckpt/LLaDA2.0-mini", out, extra=["--trust-remote-code"])
    assert "staged temperature" in printed.err and "runs blocks of" not in printed.err
    policy = Policy.load(out)
    expected = DecodeConfig.preset("quality", 64, block_length=32, block_schedule="restart",
                                   temperature_stages=(1.2, 1.0, 0.7))
    assert policy == Policy.from_decode_config(expected)
    assert (policy.block_size, policy.top_k, policy.decay) == (32, 64 // 6, 0.95)


def test_export_policy_cli_from_a_trace(tmp_path, capsys):
    model = ScriptedDenoiser(CausalScript(seed=2))
    config = DecodeConfig(gen_length=16, block_length=8, top_k=3, block_schedule="restart", temperature=0.0)
    (trace,) = decode(model, [[1, 2, 3]], config)
    path = tmp_path / "trace.json"
    path.write_text(trace.to_json(), encoding="utf-8")
    args = _cli(["export-policy", "--trace", str(path), "--output", str(tmp_path / "p.yaml"), "--launcher", "serve"])
    assert args.func(args) == 0
    printed = capsys.readouterr()
    assert printed.out.startswith("sglang serve --model-path")
    assert "runs blocks of 8" in printed.err and "LLaDA2MoeModelLM 32" in printed.err
    assert Policy.load(tmp_path / "p.yaml") == Policy.from_decode_config(config)


def test_entry_point_refuses_a_missing_or_unsupported_sglang(monkeypatch):
    import dllm_viz.serve as integrations

    monkeypatch.setattr(integrations, "installed_sglang_version", lambda: "0.5.22")
    with pytest.raises(RuntimeError, match=f"supports sglang=={SGLANG_VERSION} only; found sglang==0.5.22"):
        integrations.register_sglang()
    monkeypatch.setattr(integrations, "installed_sglang_version", lambda: None)
    with pytest.raises(RuntimeError, match="SGLang is not installed"):
        integrations.register_sglang()


def test_early_stop_exports_with_the_end_of_text_ids(tmp_path, capsys):
    config = DecodeConfig(gen_length=16, block_length=8, top_k=2, block_schedule="restart", early_stop=True,
                          early_stop_threshold=0.8)
    with pytest.raises(ValueError, match=r"^end_of_text_ids=\[\] is invalid"):
        Policy.from_decode_config(config)  # the plugin sees ids only: it must be told which ones end a text
    policy = Policy.from_decode_config(config, end_of_text_ids=[7, 9])
    assert Policy.from_yaml(policy.to_yaml()) == policy
    assert (policy.early_stop, policy.early_stop_threshold, policy.end_of_text_ids) == (True, 0.8, (7, 9))
    assert policy.eos_token_id == 7  # the first one
    back = policy.to_decode_config(num_blocks=2)
    assert (back.early_stop, back.early_stop_threshold) == (True, 0.8)
    assert any(note.startswith("early stop") for note in differences(config))
    assert Policy().early_stop is False and Policy().end_of_text_ids == () and Policy().eos_token_id is None
    with pytest.raises(ValueError, match="^eos_token_id=-1"):
        Policy(eos_token_id=-1)
    with pytest.raises(ValueError, match="^end_of_text_ids=\\[7, -1\\] is invalid: expected a list of non-negative"):
        Policy(end_of_text_ids=[7, -1])
    with pytest.raises(ValueError, match="^eos_token_id=9 is invalid: expected None or the first of end_of_text_ids"):
        Policy(end_of_text_ids=[7, 9], eos_token_id=9)
    # A policy.yaml written before the list (one `eos_token_id`) still loads, as a list of one.
    old = {k: v for k, v in policy.to_mapping().items() if k != "end_of_text_ids"}
    assert Policy.from_mapping({**old, "eos_token_id": 7}).end_of_text_ids == (7,)
    assert policy.replace(eos_token_id=3).end_of_text_ids == (3,)
    out = tmp_path / "p.yaml"
    for flags, written in ((["--end-of-text-ids", "7,9"], "end_of_text_ids:\n- 7\n- 9\n"),
                           (["--eos-token-id", "7"], "end_of_text_ids:\n- 7\n")):
        args = _cli(["export-policy", "--gen-length", "16", "--block-length", "8", "--block-schedule", "restart",
                     "--early-stop", "true", *flags, "--output", str(out)])
        assert args.func(args) == 0
        assert written in out.read_text() and "note: early stop" in capsys.readouterr().err
