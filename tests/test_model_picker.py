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


def test_the_shipped_tasks_entry_answers_at_the_tasks_length_with_its_grid_and_curve(tmp_path):
    """app.py's picker lists the tasks model with one example prompt per family; a task prompt decodes
    exactly its answer's tokens whatever the gen length slider says, a Latin square is drawn as grids,
    and the curve view shows its family's measured curves with the threshold marker."""
    import importlib.util
    from pathlib import Path

    from dllm_viz.tasks.families import EXAMPLE_PROMPTS

    spec = importlib.util.spec_from_file_location("app_picker_under_test", Path(__file__).resolve().parents[1] / "app.py")
    app = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(app)
    main = Recorder()
    choices = app.model_choices(main.model, main)
    assert choices["tasks-mdlm"].prompts == EXAMPLE_PROMPTS
    pg = Playground(main, export_dir=tmp_path, models=choices)
    assert pg.pick_model(model_pick="tasks-mdlm").prompt == EXAMPLE_PROMPTS[0]
    settings = config_to_settings(DecodeConfig.preset("balanced", 64, block_length=32))
    latin = EXAMPLE_PROMPTS[6]
    first = pg.play.decode(prompt=latin, lang="zh", cursor=None, model_pick="tasks-mdlm", **settings)
    assert first.trace.config.gen_length == 16 and first.trace.config.block_length is None
    assert first.canvas.count('class="dv-grid"') == 2 and main.prompts == []
    rest = pg.play.rest(trace=first.trace, lang="zh", cursor=None, temperature=1.0)
    assert len(rest.task_curve.data) == 4 and "latin" in rest.task_curve.layout.title.text
