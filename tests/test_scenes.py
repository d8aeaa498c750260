"""app/handlers/scenes.py: each scene still shows its rule at work, and a click sets the whole page for it."""
from __future__ import annotations

import pytest

from dllm_viz import decode, load_model
from dllm_viz.app.handlers.adapters import config_to_settings, settings_to_config
from dllm_viz.app.handlers.playground import ModelChoice, Playground
from dllm_viz.app.handlers.scenes import SCENES
from dllm_viz.app.strings import t
from dllm_viz.core.config import REVISION_PRESETS


@pytest.fixture(scope="module")
def world():
    return load_model("world")


@pytest.mark.parametrize("key", list(SCENES))
def test_each_scene_takes_back_or_rewrites(world, key):
    scene = SCENES[key]
    assert scene.preset in REVISION_PRESETS and scene.model == world.name
    (trace,) = decode(world, [scene.prompt], [scene.config()], record_candidates=0)
    m = trace.metrics
    assert m["remasked"] + m["edited"] > 0, (key, m)  # what the button promises: something visibly revised


def test_a_scene_sets_its_model_prompt_and_whole_settings(world):
    run = lambda prompts, configs, **kw: decode(world, prompts, configs, **kw)  # noqa: E731
    models = {"Austen": ModelChoice(run=run, prompts=("The",), name="austen-mdlm"),
              "World": ModelChoice(run=run, prompts=("Ana",), name="world-mdlm")}
    pg = Playground(run, models=models)
    assert pg.scene_keys() == tuple(SCENES)
    shown = pg.scene("remdm", lang="zh")
    assert shown.model_pick == "World" and shown.prompt == SCENES["remdm"].prompt
    assert settings_to_config(**config_to_settings(SCENES["remdm"].config())) == settings_to_config(
        **vars(shown.knobs))
    with pytest.raises(ValueError, match="scene='nope' is invalid"):
        pg.scene("nope")
    only_austen = Playground(run, models={"Austen": models["Austen"]})
    assert only_austen.scene_keys() == ()  # no world model in the picker: no scene buttons
    # their box shows on a masked canvas where the page has scenes (a renoising one hides it: test_adapters_renoise)
    assert pg.canvas_shown(model_pick="Austen").scenes_box
    assert not only_austen.canvas_shown(model_pick="Austen").scenes_box
    assert all(t(f"scene_{key}", "zh") for key in SCENES)
