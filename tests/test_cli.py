"""dllm_viz.cli: `python -m dllm_viz generate` on the embedded model, flags, and its error path."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from dllm_viz.cli import build_parser, config_from_args, main
from dllm_viz.core.config import DecodeConfig
from dllm_viz.core.trace import Trace


def test_generate_prints_the_text_and_writes_the_trace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "trace.json"
    argv = ["generate", "--prompt", "It is a truth", "--gen-length", "16", "--seed", "3", "--json", str(out), "--quiet"]
    assert main(argv) == 0
    trace = Trace.from_json(out.read_text(encoding="utf-8"))
    assert capsys.readouterr().out == trace.text + "\n"
    assert trace.model == "austen-mdlm" and len(trace.token_ids) == 16
    assert trace.config == DecodeConfig.preset("balanced", 16, seed=3)
    assert main(argv) == 0  # same flags, same seed: the same trace
    assert json.loads(out.read_text(encoding="utf-8"))["token_ids"] == trace.token_ids


def test_flags_override_the_preset() -> None:
    args = build_parser().parse_args(["generate", "--prompt", "x", "--preset", "quality", "--temperature", "0.3",
                                      "--gen-length", "32", "--top-p", "0.9"])
    assert config_from_args(args) == DecodeConfig.preset("quality", 32, temperature=0.3, top_p=0.9)
    on = build_parser().parse_args(["generate", "--prompt", "x", "--early-stop", "true",
                                    "--early-stop-threshold", "0.8"])
    assert config_from_args(on).early_stop is True and config_from_args(on).early_stop_threshold == 0.8
    off = build_parser().parse_args(["generate", "--prompt", "x", "--early-stop", "no"])
    assert config_from_args(off).early_stop is False
    with pytest.raises(SystemExit):
        build_parser().parse_args(["generate", "--prompt", "x", "--early-stop", "maybe"])


@pytest.mark.parametrize(
    ("extra", "match"),
    [
        (["--temperature", "-1"], "temperature=-1"),
        (["--gen-length", "1000"], "max_length=256"),
        (["--chat"], "chat=True"),
        (["--model", "no/such/checkpoint"], "does not exist"),
        (["--cache", "dual"], "cache='dual' needs block_length"),
        (["--cache", "kv"], "cache='kv' is invalid"),
        (["--cache", "prefix", "--cache-refresh", "0"], "cache_refresh=0"),
    ],
)
def test_errors_name_the_parameter(extra: list[str], match: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["generate", "--prompt", "It is", "--quiet", *extra]) == 2
    assert match in capsys.readouterr().err


def test_generate_with_a_cache_reports_what_it_computed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "trace.json"
    argv = ["generate", "--prompt", "It is a truth", "--gen-length", "32", "--block-length", "16", "--cache", "dual",
            "--cache-drift", "true", "--json", str(out)]
    assert main(argv) == 0
    trace = Trace.from_json(out.read_text(encoding="utf-8"))
    assert (trace.config.cache, trace.config.cache_drift) == ("dual", True)
    assert {rec.forward_kind for rec in trace.steps} == {"full", "dual"}
    err = capsys.readouterr().err
    assert f"positions_computed={trace.metrics['positions_computed']}" in err and "drift_max=" in err


def test_export_policy_with_a_cache_writes_the_policy_and_says_the_cache_stays_behind(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "policy.yaml"
    argv = ["export-policy", "--gen-length", "32", "--block-length", "16", "--block-schedule", "restart",
            "--cache", "dual", "--output", str(out)]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "note: cache='dual' is not exported" in err and "block-causal" in err
    assert "cache" not in out.read_text(encoding="utf-8").split("# Exported from")[1].split("\n", 1)[1]


def test_export_policy_with_insert_and_delete_needs_the_checkpoint_s_edit_tokens(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from dllm_viz.serve.policy import Policy

    out = tmp_path / "policy.yaml"
    argv = ["export-policy", "--preset", "llada22_indel", "--gen-length", "64", "--output", str(out)]
    assert main(argv) != 0 and "edit_token_ids=[] is invalid" in capsys.readouterr().err
    assert main([*argv, "--edit-token-ids", "713,714"]) == 0
    policy = Policy.load(out)
    assert (policy.indel, policy.edit_token_ids, policy.block_size) == ("joint_threshold_indel", (713, 714), 32)
    assert "note: insert/delete" in capsys.readouterr().err


def test_json_never_overwrites_a_file_that_is_not_a_trace_without_force(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 42: `--json` is an output path; named by mistake, it overwrote an input file."""
    source = tmp_path / "notes.py"
    source.write_text("print('mine')\n", encoding="utf-8")
    argv = ["generate", "--prompt", "It is", "--gen-length", "8", "--quiet", "--json", str(source)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "--json" in err and "not a dllm-viz trace" in err and "--force" in err
    assert source.read_text(encoding="utf-8") == "print('mine')\n"  # untouched
    assert main([*argv, "--force"]) == 0
    assert Trace.from_json(source.read_text(encoding="utf-8")).config.gen_length == 8
    assert main(argv) == 0  # now a trace: replaced without --force
    assert main(["generate", "--prompt", "It is", "--quiet", "--json", str(tmp_path)]) == 2  # a directory


@pytest.mark.parametrize("model, config, change", [
    ("", DecodeConfig.preset("balanced", 16, seed=3), ["--set", "temperature=0"]),
    ("world-renoise", DecodeConfig.preset("diffusion_gemma", 32, seed=1), ["--set", "entropy_bound=1.0"]),
])
def test_fork_continues_a_trace_file_with_a_switched_knob(model: str, config: DecodeConfig, change: list[str],
                                                          tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from dllm_viz import decode, load_model

    (trace,) = decode(load_model(model or None), ["It is a truth" if not model else "Ana"], config)
    parent, out = tmp_path / "parent.json", tmp_path / "fork.json"
    parent.write_text(trace.to_json(), encoding="utf-8")
    assert main(["fork", str(parent), "--step", "3", *change, "--json", str(out)]) == 0
    forked = Trace.from_json(out.read_text(encoding="utf-8"))
    knob, value = change[1].split("=")
    assert [json.dumps(r.to_dict()) for r in forked.steps[:3]] == [json.dumps(r.to_dict()) for r in trace.steps[:3]]
    assert forked.forks[0].step == 3
    assert dict(forked.forks[0].knobs) == {knob: float(value)} and getattr(forked.config, knob) == float(value)
    assert capsys.readouterr().out == forked.text + "\n"
