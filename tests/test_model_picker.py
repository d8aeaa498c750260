"""The model picker: each entry decodes with its own runner, fills its example prompt, and the page builds with it."""
from __future__ import annotations

import pytest

from dllm_viz import DecodeConfig, decode
from dllm_viz.app import ui
from dllm_viz.app.adapters import config_to_settings
from dllm_viz.app.playground import ModelChoice, Playground
from tests.ui_model import make_text_model


class Recorder:
    def __init__(self) -> None:
        self.model = make_text_model()
        self.prompts: list[list[str]] = []

    def __call__(self, prompts, configs, *, on_step=None, record_candidates=5):
        self.prompts.append(list(prompts))
        return decode(self.model, prompts, configs, on_step=on_step, record_candidates=record_candidates)


@pytest.fixture()
def picker(tmp_path):
    main, other = Recorder(), Recorder()
    models = {"main": ModelChoice(run=main, prompts=("hi ",), name="tiny"),
              "other": ModelChoice(run=other, prompts=("ab ", "cd "), name="world-mdlm")}
    return Playground(main, export_dir=tmp_path, models=models), main, other


def test_pick_fills_the_example_prompt_and_lists_the_others(picker):
    pg, _, _ = picker
    picked = pg.pick_model(model_pick="other")
    assert picked.prompt == "ab " and "`cd `" in picked.model_prompts
    with pytest.raises(ValueError, match="model_pick="):
        pg.pick_model(model_pick="nope")


def test_decode_and_compare_use_the_picked_runner(picker):
    pg, main, other = picker
    settings = config_to_settings(DecodeConfig.preset("balanced", 8))
    pg.play.decode(prompt="ab ", lang="en", cursor=None, model_pick="other", **settings)
    assert other.prompts == [["ab "]] and main.prompts == []
    pg.play.decode(prompt="hi ", lang="en", cursor=None, model_pick="main", **settings)
    assert main.prompts == [["hi "]]
    pg.compare.run(prompt="ab ", seed=1, gen_length=8, cmp_a="{}", cmp_b='{"temperature": 1.5}', neighbours=0,
               lang="en", model_pick="other")
    assert other.prompts[-1] == ["ab ", "ab "]
    with pytest.raises(ValueError, match="model_pick="):
        pg.play.decode(prompt="x", lang="en", cursor=None, model_pick="nope", **settings)


def test_lesson_on_the_world_entry_adds_its_correctness_table(picker):
    pg, _, _ = picker
    world = pg.compare.lesson("polluted", prompt="ab ", seed=0, gen_length=8, lang="en", model_pick="other").lesson_text
    main = pg.compare.lesson("polluted", prompt="hi ", seed=0, gen_length=8, lang="en", model_pick="main").lesson_text
    assert world.startswith(main)
    assert "valid runs" in world and "valid runs" not in main


def test_page_builds_with_a_picker(tmp_path):
    main, other = Recorder(), Recorder()
    ex = main(["hi "], [DecodeConfig.preset("balanced", 8, seed=1)])[0]
    models = {"main": ModelChoice(run=main, prompts=("hi ",), name="tiny"),
              "other": ModelChoice(run=other, prompts=("ab ",), name="world-mdlm")}
    demo = ui.build_demo(main, examples=[("ex", ex)], export_dir=tmp_path, models=models)
    dropdowns = [b for b in demo.blocks.values() if getattr(b, "elem_id", None) == "dv-model"]
    assert len(dropdowns) == 1 and dropdowns[0].visible
