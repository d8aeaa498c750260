"""core.diff: where two traces of one prompt part, labelled, and every difference counted; its summary in each
language (app/views/diff.py) and the CLI's `diff`."""
from __future__ import annotations

import copy
import json

import pytest

from dllm_viz import DecodeConfig, Trace, assets, decode, diff
from dllm_viz.app.strings import LANGS, t
from dllm_viz.app.views.diff import summary
from dllm_viz.cli import main
from dllm_viz.core.diff import KINDS, SECTIONS, DifferentPrompts, TraceDiff, step_differences
from tests.ui_model import make_text_model

MODEL = make_text_model(cached=False)


def run(prompt: str = "the cat ", **fields) -> Trace:
    return decode(MODEL, [prompt], DecodeConfig.preset("balanced", 16, **{"seed": 3, **fields}))[0]


def edited(trace: Trace, step: int, **changes) -> Trace:
    """A deep copy of `trace` with record `step`'s fields replaced (a stand-in for another decoder's trace)."""
    out = copy.deepcopy(trace)
    for key, value in changes.items():
        setattr(out.steps[step], key, value)
    return out


def test_a_trace_against_itself_and_its_json_copy_is_the_same():
    a = run()
    d = diff(a, Trace.from_json(a.to_json()))
    assert d.same and d.first is None and d.differences == () and set(d.counts.values()) == {0}
    assert d.steps == (len(a.steps), len(a.steps)) and d.config == {}


def test_another_seed_parts_at_the_first_step_whose_decisions_differ():
    a, b = run(seed=3), run(seed=4)
    d = diff(a, b)
    first_step = next(i for i, (x, y) in enumerate(zip(a.steps, b.steps))
                      if dict(zip(x.selected, x.tokens)) != dict(zip(y.selected, y.tokens)))
    assert d.first.step == first_step
    assert d.config == {"seed": (3, 4)}
    # every difference is accounted for: at each step, the positions confirmed by one trace only or with another token
    for step in range(min(len(a.steps), len(b.steps))):
        ca = dict(zip(a.steps[step].selected, a.steps[step].tokens))
        cb = dict(zip(b.steps[step].selected, b.steps[step].tokens))
        found = {(x.position, x.kind) for x in d.at(step) if x.kind in ("another_selection", "another_token")}
        want = {(p, "another_selection") for p in ca.keys() ^ cb.keys()}
        want |= {(p, "another_token") for p in ca.keys() & cb.keys() if ca[p] != cb[p]}
        assert found == want, step
    assert sum(d.counts.values()) == len(d.differences)


def test_another_token_at_a_position_both_confirm():
    a = run()
    pos, tok = a.steps[2].selected[0], a.steps[2].tokens[0]
    b = edited(a, 2, tokens=[(tok + 1) % 40 or 1, *a.steps[2].tokens[1:]])
    d = diff(a, b)
    assert (d.first.step, d.first.position, d.first.kind) == (2, pos, "another_token")
    assert (d.first.a, d.first.b) == (tok, b.steps[2].tokens[0])
    assert d.counts["another_token"] == 1 and len(d.differences) == 1


def test_a_position_confirmed_a_step_early_is_another_selection_twice():
    a = run()
    late = a.steps[4]
    pos, tok = late.selected[-1], late.tokens[-1]
    b = copy.deepcopy(a)  # B confirms the position at step 3, one step before A
    b.steps[3].selected, b.steps[3].tokens = [*b.steps[3].selected, pos], [*b.steps[3].tokens, tok]
    b.steps[4].selected, b.steps[4].tokens = late.selected[:-1], late.tokens[:-1]
    d = diff(a, b)
    assert [(x.step, x.position, x.kind, x.a, x.b) for x in d.differences] == [
        (3, pos, "another_selection", None, tok), (4, pos, "another_selection", tok, None)]


def test_another_stop_when_one_trace_takes_more_steps():
    a = run()
    b = copy.deepcopy(a)
    b.steps = b.steps[:-1]
    d = diff(a, b)
    stop = [x for x in d.differences if x.kind == "another_stop"]
    assert [(x.step, x.a, x.b) for x in stop] == [(len(b.steps) - 1, None, "end")]
    assert d.steps == (len(a.steps), len(a.steps) - 1)


def test_taken_back_and_rewritten_tokens_are_their_own_kinds():
    a = decode(MODEL, ["the cat "], DecodeConfig.preset("remdm", 32, seed=2))[0]
    step = next(i for i, rec in enumerate(a.steps) if rec.remasked)
    b = edited(a, step, remasked=None, remasked_tokens=None, remask_probs=None)
    d = diff(a, b)
    assert d.first.kind == "taken_back" and d.first.step == step
    assert d.first.a == a.steps[step].remasked_tokens[0] and d.first.b is None
    c = edited(a, 1, edited=[0], edited_from=[1], edited_to=[5], edit_probs=[0.5], edit_from_probs=[0.1])
    rewrite = [x for x in diff(a, c).differences if x.kind == "another_rewrite"]
    assert [(x.step, x.position, x.a, x.b) for x in rewrite] == [(1, 0, None, 5)]


def test_traces_of_two_prompts_are_refused_by_name():
    with pytest.raises(DifferentPrompts, match="prompt_ids are invalid") as err:
        diff(run("the cat "), run("a dog "))
    assert isinstance(err.value, ValueError)
    with pytest.raises(DifferentPrompts, match="gen_length=12"):
        diff(run(), decode(MODEL, ["the cat "], DecodeConfig.preset("balanced", 12, seed=3))[0])
    with pytest.raises(ValueError, match="two Trace objects"):
        diff(run(), "not a trace")


def test_two_renoising_traces_part_where_their_acceptances_do():
    """A renoising canvas (docs/renoise.md): each step accepts some proposals and renoises the rest. Two runs part
    at the first step where a position is accepted in one only (the other renoised it) or with another proposal;
    the summary says so in each language. A masked trace against a renoising one is refused by name."""
    from dllm_viz.app.views import renoise as renoise_view
    from tests.renoise_table import TableRenoiser

    model = TableRenoiser()
    cfg = DecodeConfig(gen_length=12, seed=1, max_denoising_steps=6, entropy_bound=0.8, confidence_threshold=2.0)
    a, b = decode(model, [[3, 4, 5], [3, 4, 5]], [cfg, cfg.replace(entropy_bound=1.6)])
    assert diff(a, Trace.from_json(a.to_json())).same
    d = diff(a, b)
    frames = {id(a): renoise_view.frames(a), id(b): renoise_view.frames(b)}

    def seen(trace, f):  # what step f accepted, as the canvas view shows it: frame f + 1 holds it (same canvas)
        assert f + 1 < len(trace.steps) and trace.steps[f + 1].block == trace.steps[f].block
        after = frames[id(trace)][f + 1]
        held = zip(after["state"], after["token"])
        return {p: tok for p, (st, tok) in enumerate(held) if st == renoise_view.ACCEPTED}

    assert not d.same and d.first.kind in ("another_acceptance", "another_proposal")
    assert {x.kind for x in d.differences} <= {"another_acceptance", "another_proposal", "another_stop"}
    f, pos = d.first.step, d.first.position
    assert all(seen(a, s) == seen(b, s) for s in range(f))  # the same acceptances up to there
    assert (seen(a, f).get(pos), seen(b, f).get(pos)) == (d.first.a, d.first.b) and d.first.a != d.first.b
    assert d.config == {"entropy_bound": (0.8, 1.6)}
    for lang in LANGS:
        said = summary(d, a, b, lang)
        assert t(f"diff_kind_{d.first.kind}", lang) in said and f"{f + 1}" in said
    with pytest.raises(ValueError, match=r"^b\.canvas='renoise' is invalid: expected A's 'masked'"):
        diff(run(prompt="the cat "), a)


def test_a_version_1_example_reads_and_compares():
    text = (assets.path("examples") / "01-quality_preset.json").read_text(encoding="utf-8")
    assert json.loads(text)["version"] == 1
    a = Trace.from_json(text)
    assert diff(a, Trace.from_json(text)).same
    b = edited(a, 0, tokens=[(a.steps[0].tokens[0] + 1), *a.steps[0].tokens[1:]])
    assert diff(a, b).first.kind == "another_token"


def test_every_kind_has_a_section_and_a_label_in_every_language():
    assert len(SECTIONS) >= 5 and len(set(KINDS)) == len(KINDS)
    for lang in LANGS:
        assert all(t(f"diff_kind_{kind}", lang) for kind in KINDS)


def test_sections_report_nothing_past_both_ends():
    a = run()
    assert step_differences(a, a, len(a.steps) + 3) == []


def test_summary_names_the_first_difference_and_counts_in_each_language():
    a, b = run(seed=3), run(seed=4)
    d = diff(a, b)
    en, zh = summary(d, a, b, "en"), summary(d, a, b, "zh")
    f = d.first
    assert f"step {f.step + 1}" in en and t(f"diff_kind_{f.kind}", "en") in en
    assert "seed 3 → 4" in en and t(f"diff_kind_{f.kind}", "zh") in zh and "A：" in zh
    for kind, n in d.counts.items():
        if n:
            assert f"{t(f'diff_kind_{kind}', 'en')} ×{n}" in en
    assert summary(diff(a, a), a, a, "en") == t("diff_same", "en", n=len(a.steps))
    assert str(d).startswith(f"first difference: step {f.step}")


def test_to_dict_is_json_with_every_difference():
    a, b = run(seed=3), run(seed=5)
    d = diff(a, b)
    data = json.loads(json.dumps(d.to_dict()))
    assert data["same"] is False and data["first"] == d.first.to_dict()
    assert len(data["differences"]) == len(d.differences) and data["counts"] == d.counts
    assert isinstance(d, TraceDiff)


def test_cli_diff_prints_the_summary_and_exits_1_when_they_differ(tmp_path, capsys):
    a, b = run(seed=3), run(seed=4)
    pa, pb, pc = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "c.json"
    pa.write_text(a.to_json(), encoding="utf-8")
    pb.write_text(b.to_json(), encoding="utf-8")
    pc.write_text(run("a dog ").to_json(), encoding="utf-8")
    assert main(["diff", str(pa), str(pa)]) == 0
    assert capsys.readouterr().out.strip() == t("diff_same", "en", n=len(a.steps))
    assert main(["diff", str(pa), str(pb), "--lang", "zh"]) == 1
    assert capsys.readouterr().out.strip() == summary(diff(a, b), a, b, "zh")
    assert main(["diff", str(pa), str(pb), "--json"]) == 1
    assert json.loads(capsys.readouterr().out) == diff(a, b).to_dict()
    assert main(["diff", str(pa), str(pc)]) == 2
    assert "prompt_ids are invalid" in capsys.readouterr().err
    assert main(["diff", str(pa), str(tmp_path / "missing.json")]) == 2
    assert "B=" in capsys.readouterr().err
