"""core/rules/: rules are plug-ins found by module, each declaring its knobs, reads, citation and example;
the knob table and everything derived from it (config fields, validation, CLI flags, policy keys, columns)."""
from __future__ import annotations

import dataclasses
import doctest
import pickle
import sys
import textwrap

import pytest

from dllm_viz import DecodeConfig, decode
from dllm_viz.cli import build_parser
from dllm_viz.core import knobs, revision, rules
from dllm_viz.core.rules.base import Revision, Schedule
from dllm_viz.core.step import StepParams
from dllm_viz.serve.policy import CONFIG_KEYS, POLICY_KEYS
from tests.tiny import TinyDenoiser

PLUGINS = [p for kind in rules.PLUGINS.values() for p in kind.values()]


@pytest.mark.parametrize("name", sorted(rules.MODULES))
def test_every_plugin_runs_its_own_example(name):
    result = doctest.testmod(rules.MODULES[name], optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 1 and result.failed == 0, result


@pytest.mark.parametrize("plugin", PLUGINS, ids=lambda p: p.name)
def test_every_plugin_says_what_it_is_where_it_comes_from_and_what_it_reads(plugin):
    assert plugin.summary and plugin.cite is not None
    assert all((plugin.cite.repo, plugin.cite.file, plugin.cite.function))
    assert set(plugin.canvases) <= set(rules.CANVASES)
    assert all(k in rules.KNOB for k in plugin.knob_names)
    if isinstance(plugin, Revision):
        assert plugin.reads in (None, "forward", "hidden")
        assert not plugin.edits or plugin.reads == "forward"  # a rewrite reads the step's logits there


def test_the_membership_sets_are_gone():
    for name in ("READS_FORWARD", "READS_HIDDEN", "EDITS", "HOLDS", "COUNTS"):
        assert not hasattr(revision, name)
    assert tuple(DecodeConfig.__dataclass_fields__["schedule"].metadata["knob"].choices) == tuple(rules.SCHEDULES)


def test_a_module_that_defines_rule_is_found_and_one_that_does_not_is_not(tmp_path, monkeypatch):
    (tmp_path / "every_mask.py").write_text(textwrap.dedent('''
        from dllm_viz.core.rules.base import Citation, Schedule
        RULE = Schedule(name="every_mask", order=99, quota=lambda q: q.eligible, summary="all at once",
                        cite=Citation(repo="a test", file="every_mask.py", function="RULE"))
    '''))
    (tmp_path / "helpers.py").write_text("X = 1\n")
    monkeypatch.setattr(rules, "__path__", [*rules.__path__, str(tmp_path)])
    try:
        found = rules._discover()
        assert "every_mask" in found["schedule"] and list(found["schedule"])[-1] == "every_mask"
        assert set(found["schedule"]) - {"every_mask"} == set(rules.SCHEDULES)
        (tmp_path / "helpers.py").write_text(
            "from dllm_viz.core.rules.base import Schedule\n"
            "RULE = Schedule(name='eb', order=1, quota=None, summary='')\n")
        sys.modules.pop("dllm_viz.core.rules.helpers", None)
        with pytest.raises(ImportError, match="two schedule plug-ins are named 'eb'"):
            rules._discover()
    finally:
        for name in ("every_mask", "helpers"):
            sys.modules.pop(f"dllm_viz.core.rules.{name}", None)
            rules.MODULES.pop(name, None)


def test_a_masked_only_rule_on_another_canvas_is_refused_by_name():
    model = TinyDenoiser()
    model.canvas_kind = "renoise"
    with pytest.raises(ValueError, match=r"schedule='eb' is invalid for 'tiny', whose canvas is 'renoise'.*masked"):
        decode(model, [[5, 6]], DecodeConfig(gen_length=4, schedule="eb"))
    rules.check_canvas(DecodeConfig(schedule="eb", revise="rcr"), "masked")  # where it applies: nothing said


def test_a_renoising_model_is_refused_the_masked_rules_by_name():
    """A model of the renoising protocol (models.renoiser: every position starts as noise) writes a
    "renoise" canvas; the masked decoder refuses it naming the rule, before looking for a mask token."""
    class Renoising:  # the protocol's four methods are all `is_renoiser` looks at
        name = "renoising"

        def encode(self, *a): ...
        def denoise(self, *a): ...
        def select(self, *a): ...
        def generation_defaults(self): ...

    assert rules.canvas_of(Renoising()) == "renoise" and rules.canvas_of(TinyDenoiser()) == "masked"
    with pytest.raises(ValueError, match=r"schedule='eb' is invalid for 'renoising', whose canvas is 'renoise'"):
        decode(Renoising(), [[5, 6]], DecodeConfig(gen_length=4, schedule="eb"))


# ----- the knob table and what derives from it ----------------------------------------------------
def test_the_config_is_a_real_frozen_dataclass_of_the_knob_table():
    fields = dataclasses.fields(DecodeConfig)
    assert [f.name for f in fields] == [k.name for k in rules.KNOBS]
    assert all(f.default == k.default and f.metadata["help"] == k.help for f, k in zip(fields, rules.KNOBS))
    config = DecodeConfig.preset("eb_sampler", 64, seed=3)
    assert pickle.loads(pickle.dumps(config)) == config and "gamma=0.15" in repr(config)
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.gamma = 1.0  # type: ignore[misc]
    described = DecodeConfig.describe()
    assert all(f"    {k.name} = " in described for k in rules.KNOBS) and "[read by eb]" in described
    assert "Fields (from the knob specs)" in (DecodeConfig.__doc__ or "")


@pytest.mark.parametrize("knob", rules.KNOBS, ids=lambda k: k.name)
def test_every_knob_reaches_the_validator_the_cli_and_the_policy(knob):
    assert knob.help and knob.kind in knobs.KINDS
    flags = build_parser().parse_args(["generate", "--prompt", "x"])
    assert knob.name == "gen_length" or hasattr(flags, knob.name)
    readers = rules.readers(knob.name)
    served = knob.policy is True and (not readers or any(p.served is True for p in readers))
    assert (knob.name in CONFIG_KEYS) == served
    assert knob.name in POLICY_KEYS or isinstance(knob.policy, str) or not served
    if knob.kind in ("int", "float"):  # a value below its range is refused, naming the knob
        with pytest.raises(ValueError, match=rf"^{knob.name}=-1\b.* is invalid"):
            DecodeConfig(**{knob.name: -1})


def test_the_step_has_a_column_of_every_plugin_knob_that_declares_one():
    configs = [DecodeConfig(gen_length=8), DecodeConfig(gen_length=8, schedule="eb", gamma=0.5, revise="remdm")]
    params = StepParams.from_configs(configs)
    for knob in rules.KNOBS:
        owner = rules.OWNER.get(knob.name)
        if owner is None or knob.column is None:
            continue
        holder = params.knobs if isinstance(owner, Schedule) else params.revision.knobs  # type: ignore[union-attr]
        assert getattr(holder, knob.name).shape == (2,)
    # a row whose schedule does not read it: the default
    assert params.knobs.gamma.tolist() == pytest.approx([0.15, 0.5])
    assert params.revision.knobs.distinct("remask_sigma") == {"cap"}  # type: ignore[union-attr]


def test_a_bad_knob_spec_is_refused():
    with pytest.raises(ValueError, match="kind='text' is invalid"):
        knobs.Knob(name="x", kind="text", default=None, help="")
    with pytest.raises(ValueError, match="a choice needs its choices"):
        knobs.Knob(name="x", kind="choice", default="a", help="")
    assert knobs.Knob(name="x", kind="float", default=0.5, help="", hi=1.0).parse("0.25") == 0.25


def test_the_guide_to_writing_a_rule_runs():
    """docs/rules.md: its python blocks run, its example gives what it says (excerpts are marked `text`)."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "rules.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```(python|pycon)\n(.*?)```", text, re.S)
    assert {kind for kind, _ in blocks} == {"python", "pycon"}
    for kind, block in blocks:
        code = textwrap.dedent(block)
        if kind == "python":
            exec(compile(code, "docs/rules.md", "exec"), {})
        else:
            test = doctest.DocTestParser().get_doctest(code, {}, "docs/rules.md", "docs/rules.md", 0)
            assert doctest.DocTestRunner().run(test).failed == 0
