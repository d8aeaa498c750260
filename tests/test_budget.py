"""core/budget.py: a request's work is bounded against the model before anything is sized by it (issue 42)."""
from __future__ import annotations

import resource

import pytest

from dllm_viz import DecodeConfig, Engine, decode
from dllm_viz.core.budget import Budget, Work, bound_work
from dllm_viz.core.revision import max_steps
from dllm_viz.core.trace_schema import MAX_GEN_LENGTH
from tests.tiny import TinyDenoiser

# The attack of issue 42 item 2: 2 x 240 + 120 x 4096 steps of a 240-position canvas.
LOOP_ATTACK = dict(gen_length=240, block_length=2, revise="remdm", remask_sigma="loop", remask_loop_steps=4096,
                   remask_alpha_on=0.4)


def test_work_is_positions_times_the_most_steps():
    c = DecodeConfig(gen_length=64)
    assert bound_work(c, prompt_length=6, max_length=256) == Work(positions=70, steps=64)
    assert Work(70, 64).cells == 70 * 64
    attack = DecodeConfig(**LOOP_ATTACK)
    work = bound_work(attack, prompt_length=5, max_length=256)
    assert work.steps == max_steps(attack) == 2 * 240 + 120 * 4096 and work.cells == 245 * work.steps


def test_a_canvas_longer_than_the_model_is_refused_naming_its_context():
    c = DecodeConfig(gen_length=10**9, top_k=1)
    with pytest.raises(ValueError, match=r"prompt length \+ gen_length = 3 \+ 1000000000 .*max_length=256"):
        bound_work(c, prompt_length=3, max_length=256)
    with pytest.raises(ValueError, match=rf"gen_length=1000000000 is invalid: expected at most {MAX_GEN_LENGTH}"):
        bound_work(c)  # a model that states no context: the trace format's bound
    assert bound_work(DecodeConfig(gen_length=MAX_GEN_LENGTH)).positions == MAX_GEN_LENGTH
    # Checked before the prompt is tokenized (the API, Compare): no "0 +" standing for a prompt not counted yet.
    with pytest.raises(ValueError, match=r"^gen_length = 1000000000 is invalid: expected at most the model's "
                                         r"max_length=256, less the prompt tokens$"):
        Budget(max_length=256).check(c)
    with pytest.raises(ValueError, match=r"^prompt length \+ gen_length = 0 \+ 1000000000 "):
        Budget(max_length=256).check(c, 0)  # an empty prompt, counted


def test_a_server_bound_on_work_names_the_knobs_that_set_the_steps():
    budget = Budget(max_length=256, max_cells=2**20)
    with pytest.raises(ValueError, match=r"up to 492000 steps x 245 positions .*at most 1048576 per request.*"
                                         r"gen_length=240, block_length=2, remask_loop_steps=4096"):
        budget.check(DecodeConfig(**LOOP_ATTACK), prompt_length=5)
    fine = dict(LOOP_ATTACK, block_length=8, remask_loop_steps=64)  # the page's sliders at their ends
    assert budget.check(DecodeConfig(**fine), prompt_length=16).cells <= 2**20
    with pytest.raises(ValueError, match="max_cells=0 is invalid"):
        Budget(max_cells=0)


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def test_decode_and_the_engine_refuse_before_they_allocate():
    """A billion positions: refused in no time and no memory, by `decode` and `Engine.submit` alike
    (the peak resident memory of this process does not move)."""
    model = TinyDenoiser()
    model.max_length = 64
    c = DecodeConfig(gen_length=10**9, top_k=1)
    peak = rss_mb()
    with pytest.raises(ValueError, match="max_length=64"):
        decode(model, [[5, 6]], c)
    with Engine(model, max_batch=2) as engine:
        with pytest.raises(ValueError, match="max_length=64"):
            engine.submit([5, 6], c).result(timeout=60)
    attack = DecodeConfig(**{**LOOP_ATTACK, "gen_length": 60})
    with Engine(model, max_batch=2, budget=Budget(max_cells=2**16)) as engine:  # a server's bound on work
        with pytest.raises(ValueError, match=r"asks for up to 123000 steps x 62 positions"):
            engine.submit([5, 6], attack).result(timeout=60)
        assert len(engine.submit([5, 6], DecodeConfig(gen_length=8)).result(timeout=60).token_ids) == 8
    assert rss_mb() - peak < 50
    unbounded = TinyDenoiser()  # states no max_length: the trace format's bound holds
    with pytest.raises(ValueError, match=f"at most {MAX_GEN_LENGTH}"):
        decode(unbounded, [[5, 6]], c)


def test_every_schedule_and_rule_is_bounded_by_the_steps_it_may_take():
    """Whatever plug-in a config chooses (the EB-sampler included), its work is its canvas times
    `revision.max_steps`, and a server's bound refuses it naming the canvas knobs."""
    from dllm_viz.core import rules

    for name in rules.SCHEDULES:
        c = DecodeConfig.preset("balanced", 64, schedule=name)
        work = bound_work(c, prompt_length=4, max_length=256)
        assert work == Work(positions=68, steps=max_steps(c)) and work.steps >= 64, name
        with pytest.raises(ValueError, match=rf"{work.steps} steps x 68 positions .* \(gen_length=64\)"):
            bound_work(c, prompt_length=4, max_length=256, max_cells=work.cells - 1)


def test_the_insert_delete_rule_is_bounded_by_its_blocks_and_its_post_edit_budget():
    """An insert/delete rule (LLaDA 2.2's, `indel=`): each block's positions plus its post-edit budget
    and a clean-up; a refusal names the budget knob it shares with joint_threshold."""
    c = DecodeConfig.preset("llada22_indel", 64)
    work = bound_work(c, prompt_length=4, max_length=256)
    assert work.steps == max_steps(c) == 64 + 2 * (16 + 1) and work.positions == 68
    with pytest.raises(ValueError, match=r"\(gen_length=64, block_length=32, max_post_edit_steps=16\)$"):
        bound_work(c, prompt_length=4, max_cells=work.cells - 1)


def test_a_renoising_request_is_bounded_before_its_canvases_are_made():
    """A renoising model (`renoise_decode`): whole canvases of `canvas_length` up to `max_new_tokens`
    against the model's context, refused before any forward; its work is canvases x steps x L."""
    from dllm_viz.core.renoise import RenoiseSettings
    from dllm_viz.core.renoise_decoder import renoise_decode
    from tests.renoise_table import TableRenoiser

    s = RenoiseSettings(canvas_length=16, max_new_tokens=40, max_denoising_steps=48)
    assert bound_work(s, prompt_length=5, max_length=512) == Work(positions=5 + 48, steps=3 * 48, width=16)
    assert Work(53, 144, 16).cells == 144 * 16
    with pytest.raises(ValueError, match=r"144 steps x 16 positions = 2304 .*max_new_tokens=40, canvas_length=16, "
                                         r"max_denoising_steps=48"):
        Budget(max_cells=2000).check(s, 5)
    with pytest.raises(ValueError, match=r"canvas_length=None is invalid here"):
        bound_work(RenoiseSettings())  # the checkpoint's canvas must be resolved first
    model = TableRenoiser()
    model.max_length = 64
    peak = rss_mb()
    with pytest.raises(ValueError, match=r"prompt length \+ whole canvases = 2 \+ 1000000002 .*max_length=64 "
                                         r"\(max_new_tokens=1000000000, canvas_length=6"):
        renoise_decode(model, [[1, 2]], RenoiseSettings(max_new_tokens=10**9))  # whole canvases of 6
    unbounded = TableRenoiser()  # states no max_length: the trace format's bound holds
    with pytest.raises(ValueError, match=f"whole canvases=1000000002 is invalid: expected at most {MAX_GEN_LENGTH}"):
        renoise_decode(unbounded, [[1, 2]], RenoiseSettings(max_new_tokens=10**9))
    assert model.calls == [] and unbounded.calls == [] and rss_mb() - peak < 50
    assert len(renoise_decode(model, [[1, 2]], RenoiseSettings(max_new_tokens=12))[0].token_ids) == 12


def test_a_huge_renoise_canvas_or_step_count_is_refused_by_name_before_anything_is_allocated(monkeypatch):
    """The renoising path end to end (`renoise_decode`, `decode` through `RenoiseBatch`, `Engine.submit`): a
    canvas of 65,536 tokens (whose self-conditioning would be L x V floats a row) and 4,096 steps a canvas are
    refused by a ValueError naming the knob, before the encoder runs, a group exists or a slot is taken."""
    from dllm_viz.core import renoise_batch, renoise_decoder
    from dllm_viz.core.renoise import RenoiseSettings
    from dllm_viz.core.renoise_decoder import renoise_decode
    from tests.renoise_table import TableRenoiser

    made: list[int] = []
    real_group = renoise_decoder.RenoiseGroup

    def counted(*args, **kwargs):
        made.append(1)
        return real_group(*args, **kwargs)

    monkeypatch.setattr(renoise_decoder, "RenoiseGroup", counted)
    monkeypatch.setattr(renoise_batch, "RenoiseGroup", counted)
    model, unbounded = TableRenoiser(), TableRenoiser()
    model.max_length = 64
    huge = RenoiseSettings(canvas_length=2**16, max_new_tokens=2**16)
    peak = rss_mb()
    with pytest.raises(ValueError, match=r"whole canvases = 2 \+ 65536 = 65538 .*max_length=64 .*canvas_length=65536"):
        renoise_decode(model, [[1, 2]], huge)
    with pytest.raises(ValueError, match=rf"whole canvases=65536 is invalid: expected at most {MAX_GEN_LENGTH}.*"
                                         r"canvas_length=65536"):
        renoise_decode(unbounded, [[1, 2]], huge)
    with pytest.raises(ValueError, match=r"whole canvases = 2 \+ 65536 .*canvas_length=65536"):
        decode(model, [[1, 2], [1, 2]], [DecodeConfig(gen_length=6), DecodeConfig(gen_length=6, canvas_length=2**16)])
    steps = DecodeConfig(gen_length=12, max_denoising_steps=4096)  # two canvases of 6, 4,096 steps each
    with Engine(unbounded, max_batch=2, budget=Budget(max_cells=2**14)) as engine:
        with pytest.raises(ValueError, match=r"up to 8192 steps x 6 positions = 49152 .*at most 16384 per request.*"
                                             r"max_denoising_steps=4096"):
            engine.submit([1, 2], steps).result(timeout=60)
        with pytest.raises(ValueError, match=r"whole canvases=65536 .*canvas_length=65536"):
            engine.submit([1, 2], DecodeConfig(gen_length=6, canvas_length=2**16)).result(timeout=60)
        assert engine.stats()["active"] == 0 and engine.stats()["queued"] == 0
        assert made == [] and model.calls == [] and unbounded.calls == [] and rss_mb() - peak < 50
        fine = engine.submit([1, 2], DecodeConfig(gen_length=12, max_denoising_steps=8)).result(timeout=60)
    assert len(fine.token_ids) == 12 and made  # within the bounds it decodes, through the same path


def test_the_shipped_renoising_model_refuses_a_billion_tokens_through_load_model():
    """The real entry point: `load_model` on the shipped DiffusionGemma folder, then `renoise_decode`
    and `decode` (its renoising batch) asked for a billion positions."""
    from dllm_viz import assets, load_model
    from dllm_viz.core.renoise import RenoiseSettings
    from dllm_viz.core.renoise_decoder import renoise_decode

    model = load_model(assets.path("world-renoise"))
    peak = rss_mb()
    with pytest.raises(ValueError, match=rf"\+ 100000\d* .*max_length={model.max_length}"):
        renoise_decode(model, ["Tom Lopez"], RenoiseSettings(max_new_tokens=10**9))
    with pytest.raises(ValueError, match=rf"whole canvases = \d+ \+ 100000\d* .*max_length={model.max_length} "
                                         r"\(max_new_tokens=1000000000"):
        decode(model, ["Tom Lopez"], DecodeConfig(gen_length=10**9))
    assert rss_mb() - peak < 50


def test_a_fork_is_bounded_before_it_replays():
    """`core.fork`: the trace's canvas against the model's context, and what a switched knob asks of a
    server (`max_cells`, as app.serve's forker passes it), refused before the replay's batch exists."""
    from dllm_viz import fork
    from tests.ui_model import make_text_model

    model = make_text_model()
    trace = decode(model, ["the cat "], DecodeConfig.preset("balanced", 16, seed=1, block_length=2))[0]
    assert fork(model, trace, 3).token_ids == trace.token_ids  # within every bound: the trace itself
    loop = {"revise": "remdm", "remask_sigma": "loop", "remask_loop_steps": 4096}
    with pytest.raises(ValueError, match=r"asks for up to \d+ steps x 24 positions .*at most 10000 per request.*"
                                         r"remask_loop_steps=4096"):
        fork(model, trace, 3, knobs=loop, max_cells=10_000)
    small = make_text_model()
    small.max_length = 16  # a model whose context the trace's canvas (8 + 16) does not fit
    peak = rss_mb()
    with pytest.raises(ValueError, match=r"prompt length \+ gen_length = 8 \+ 16 = 24 .*max_length=16"):
        fork(small, trace, 3)
    assert rss_mb() - peak < 50
