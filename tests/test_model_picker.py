"""The model picker: each entry decodes with its own runner, fills its example prompt, and the page builds with it."""
from __future__ import annotations

import json

import pytest

from dllm_viz import DecodeConfig, decode
from dllm_viz.app import ui
from dllm_viz.app.views import wire
from dllm_viz.app.handlers.adapters import config_to_settings
from dllm_viz.app.handlers.compare import FIRST_LESSON, LESSONS
from dllm_viz.app.handlers.outputs import KEEP
from dllm_viz.app.handlers.playground import ModelChoice, Playground
from tests.ui_model import make_text_model


class Recorder:
    def __init__(self, model=None) -> None:
        self.model = make_text_model() if model is None else model
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
    assert picked.prompt == "ab " and 'data-prompt="cd "' in picked.model_prompts  # a button page.js runs
    with pytest.raises(ValueError, match="model_pick="):
        pg.pick_model(model_pick="nope")


def test_decode_and_compare_use_the_picked_runner(picker):
    pg, main, other = picker
    settings = config_to_settings(DecodeConfig.preset("balanced", 8))
    pg.play.decode(prompt="ab ", lang="en", model_pick="other", **settings)
    assert other.prompts == [["ab "]] and main.prompts == []
    pg.play.decode(prompt="hi ", lang="en", model_pick="main", **settings)
    assert main.prompts == [["hi "]]
    pg.compare.run(prompt="ab ", seed=1, gen_length=8, cmp_a="{}", cmp_b='{"temperature": 1.5}', neighbours=0,
               lang="en", model_pick="other")
    assert other.prompts[-1] == ["ab ", "ab "]
    with pytest.raises(ValueError, match="model_pick="):
        pg.play.decode(prompt="x", lang="en", model_pick="nope", **settings)


def test_lesson_on_the_world_entry_adds_its_correctness_table(picker):
    pg, _, _ = picker
    world = pg.compare.lesson("polluted", prompt="ab ", seed=0, gen_length=8, lang="en", model_pick="other").lesson_text
    main = pg.compare.lesson("polluted", prompt="hi ", seed=0, gen_length=8, lang="en", model_pick="main").lesson_text
    assert "valid runs" in world and "valid runs" not in main
    # Each names the model its numbers were measured on, and shows only that model's numbers
    # (issue 29 item 6: the world lesson showed the Austen model's prose and table above its own).
    assert "What we measured on `world-mdlm`" in world and "austen-mdlm" not in world and "steps instead" not in world
    assert "What we measured on `austen-mdlm`" in main and "world-mdlm" not in main
    zh = pg.compare.lesson("polluted", prompt="ab ", seed=0, gen_length=8, lang="zh", model_pick="other").lesson_text
    assert "正确的句子" in zh and "valid" not in zh and "Claim" not in zh
    assert pg.pick_model(model_pick="other", lang="en", lesson_key="polluted").lesson_text == world


def test_page_builds_with_a_picker(tmp_path):
    main, other = Recorder(), Recorder()
    ex = main(["hi "], [DecodeConfig.preset("balanced", 8, seed=1)])[0]
    models = {"main": ModelChoice(run=main, prompts=("hi ",), name="tiny"),
              "other": ModelChoice(run=other, prompts=("ab ",), name="world-mdlm")}
    demo = ui.build_demo(main, examples=[("ex", ex)], export_dir=tmp_path, models=models)
    dropdowns = [b for b in demo.blocks.values() if getattr(b, "elem_id", None) == "dv-model"]
    assert len(dropdowns) == 1 and dropdowns[0].visible


def test_the_shipped_tasks_entry_answers_at_the_tasks_length_with_its_grid_and_curve(tmp_path):
    """app/serve.py's picker lists the tasks model with one example prompt per family; a task prompt decodes
    exactly its answer's tokens whatever the gen length slider says, a Latin square is drawn as grids,
    and the curve view shows its family's measured curves with the threshold marker."""
    from dllm_viz.app import serve as app
    from dllm_viz.tasks.families import EXAMPLE_PROMPTS

    main = Recorder()
    choices = app.model_choices(main.model, main)
    assert choices["tasks-mdlm"].prompts == EXAMPLE_PROMPTS
    pg = Playground(main, export_dir=tmp_path, models=choices)
    assert pg.pick_model(model_pick="tasks-mdlm").prompt == EXAMPLE_PROMPTS[0]
    settings = config_to_settings(DecodeConfig.preset("balanced", 64, block_length=32))
    latin = EXAMPLE_PROMPTS[6]
    first = pg.play.decode(prompt=latin, lang="zh", model_pick="tasks-mdlm", **settings)
    trace = first.trace.trace
    assert trace.config.gen_length == 16 and trace.config.block_length is None
    done = wire.done(trace)  # the page draws the grid as two 4x4 grids, and the family's measured curves
    assert len(done["grid"]) == 16 and main.prompts == []
    curves = done["task"]["curves"]
    assert done["task"]["family"] == "latin" and curves["model"] and len(curves["revision"]["model"]) == 3


def test_the_page_opens_on_its_first_examples_model_and_an_example_picks_its_model(tmp_path):
    main, other = Recorder(), Recorder()
    ex_other = main(["ab "], [DecodeConfig.preset("balanced", 8, seed=1)])[0]
    ex_other.model = "world-mdlm"  # an example of the second entry, shown first
    ex_main = main(["hi "], [DecodeConfig.preset("balanced", 8, seed=1)])[0]
    ex_main.model = "tiny"
    models = {"main": ModelChoice(run=main, prompts=("hi ",), name="tiny"),
              "other": ModelChoice(run=other, prompts=("ab ", "cd "), name="world-mdlm")}
    demo = ui.build_demo(main, examples=[("w", ex_other), ("m", ex_main)], export_dir=tmp_path, models=models)
    page = demo.page
    assert page.model_pick.value == "other" and 'data-prompt="cd "' in page.model_prompts.value
    assert "world-mdlm" in page.lesson_text.value  # the Compare tab's first lesson, measured on that model
    loaded = Playground(main, export_dir=tmp_path, models=models, examples=[("m", ex_main)]).play.example(
        example="m", lang="en")
    assert loaded.model_pick == "main" and 'data-prompt="hi "' in loaded.model_prompts


def test_a_served_model_of_the_world_language_offers_the_world_prompts():
    """`python app.py --model world-renoise` (or world-indel): its entry's example prompts are the world
    language's, not the English ones offered to an unknown checkpoint."""
    from dllm_viz import load_model
    from dllm_viz.app import serve as app
    from dllm_viz.studies.world_score import WORLD_PROMPTS

    for name in ("world-renoise", "world-indel"):
        model = load_model(name)
        choices = app.model_choices(model, Recorder())
        assert choices[model.name].prompts == tuple(WORLD_PROMPTS) != app.CHECKPOINT_PROMPTS


def test_a_model_asked_for_opens_the_page_on_it_and_decodes_its_first_prompt_as_it_loads(tmp_path):
    """`python app.py --model world-renoise`: the page opened on the first example's model (world-mdlm). It opens on
    the model asked for, with its first prompt and no example of another model, and decodes that prompt as the page
    loads (a masked model's page plays its example then), and later pages play that trace without decoding it again;
    a link still wins, and without a model asked for the page opens on the first example's model as before."""
    from dllm_viz import load_model
    from dllm_viz.app.serve import limits_of
    from dllm_viz.studies.world_score import WORLD_PROMPTS

    renoiser, masked = load_model("world-renoise"), Recorder()
    asked = Recorder(renoiser)
    example = masked(["ab "], [DecodeConfig.preset("balanced", 8, seed=1)])[0]
    example.model = "world-mdlm"
    models = {"world-renoise": ModelChoice(run=asked, prompts=tuple(WORLD_PROMPTS), name=renoiser.name,
                                           **limits_of(renoiser)),
              "world-mdlm": ModelChoice(run=masked, prompts=("ab ", "cd "), name="world-mdlm")}
    pg = Playground(asked, examples=[("w", example)], export_dir=tmp_path, models=models, opens_on="world-renoise")
    assert pg.opening() == ("world-renoise", None)
    *live, opened = pg.open_page(query={}, lang="en")
    assert asked.prompts == [[WORLD_PROMPTS[0]]] and masked.prompts == [["ab "]]  # the example was made above
    trace = opened.trace.trace
    assert trace.model == renoiser.name and trace.canvas == "renoise" and trace.prompt_text == WORLD_PROMPTS[0]
    assert live[0].model_pick == "world-renoise" and live[0].prompt == WORLD_PROMPTS[0]
    assert opened.canvas["autoplay"] and opened.canvas["ref"] == opened.trace.handle  # it plays, as an example does
    # The next visitor's page plays the same trace, published, with no decode; a page in another language decodes
    # once for its banner's language.
    again, = pg.open_page(query={}, lang="en", session="s2")
    assert len(asked.prompts) == 1 and again.trace.trace is trace and again.trace.handle != opened.trace.handle
    assert pg.traces.entry("s2", again.trace.handle) is not None  # every session reads it
    assert (again.knobs, again.prompt, again.model_pick) == (live[0].knobs, live[0].prompt, live[0].model_pick)
    assert again.canvas["autoplay"] and again.canvas["ref"] == again.trace.handle and again.banner == opened.banner
    assert again.facts == opened.facts and (again.cmp_a, again.cmp_b) == (opened.cmp_a, opened.cmp_b) == \
        ("{}", '{"acceptance_from": "raw"}') and again.lesson_text == opened.lesson_text  # Compare's pair for it
    *_, in_zh = pg.open_page(query={}, lang="zh")
    assert len(asked.prompts) == 2 and in_zh.trace.trace.steps == trace.steps and in_zh.facts != opened.facts
    assert next(pg.open_page(query={}, lang="zh")).trace.trace is in_zh.trace.trace and len(asked.prompts) == 2
    with pytest.raises(ValueError, match=r"lang='xx' is invalid: expected one of en \| zh"):
        next(pg.open_page(query={}, lang="xx"))  # refused before a decode: nothing kept for it
    assert len(asked.prompts) == 2 and set(pg.opened) == {"en", "zh"}
    linked = list(pg.open_page(query={"model": "world-mdlm", "prompt": "cd ", "config": '{"gen_length": 8}'},
                               lang="en"))
    assert linked[-1].trace is not KEEP and masked.prompts[-1] == ["cd "] and len(asked.prompts) == 2
    # A link to a model of the other canvas fits Compare to it: a masked model's lesson pair and text, not the
    # renoising pair the page opened with (whose acceptance_from a masked model lacks); a link's own configs stay.
    lesson = LESSONS[FIRST_LESSON]
    assert (linked[-1].cmp_a, linked[-1].cmp_b) == (json.dumps(lesson.a), json.dumps(lesson.b))
    assert lesson.text("title", "en") in linked[-1].lesson_text and "world-mdlm" in linked[-1].lesson_text
    assert all(v.cmp_a is KEEP and v.lesson_text is KEEP for v in linked[:-1])  # the live views set no Compare
    own = list(pg.open_page(query={"model": "world-renoise", "prompt": "cd ", "config": '{"gen_length": 8}',
                                   "a": '{"seed": 3}'}, lang="zh"))[-1]
    assert (own.cmp_a, own.cmp_b) == ('{"seed": 3}', '{"acceptance_from": "raw"}')
    assert own.lesson_text == pg.compare.lesson_text(FIRST_LESSON, "zh", model_pick="world-renoise") != \
        linked[-1].lesson_text

    demo = ui.build_demo(asked, examples=[("w", example)], export_dir=tmp_path, models=models,
                         opens_on="world-renoise")
    page = demo.page
    assert page.model_pick.value == "world-renoise" and page.prompt.value == WORLD_PROMPTS[0]
    assert page.example.value is None and page.canvas_renoise.visible and not page.schedule_box.visible
    assert (page.cmp_a.value, page.cmp_b.value) == ("{}", '{"acceptance_from": "raw"}')  # Compare's pair for it
    plain = ui.build_demo(asked, examples=[("w", example)], export_dir=tmp_path, models=models).page
    assert plain.model_pick.value == "world-mdlm" and plain.example.value == "w" and plain.schedule_box.visible
    assert list(Playground(asked, examples=[("w", example)], export_dir=tmp_path, models=models).open_page(
        query={}, lang="en"))[0].trace is KEEP and len(asked.prompts) == 3  # the link to world-renoise: the third
    with pytest.raises(ValueError, match="opens_on="):
        Playground(asked, export_dir=tmp_path, models=models, opens_on="nope")
