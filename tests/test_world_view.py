"""Checker marks and run facts for world traces (pure functions of a Trace, no model)."""
from __future__ import annotations

from dllm_viz import DecodeConfig, StepRecord, Trace
from dllm_viz.app import render
from dllm_viz.app.playground import Playground
from dllm_viz.app.world_view import facts_line, generated_marks, inspector_lines, token_rules, verdict

GOOD = "Tom Lopez of San Diego has 3 cats and 1 dog at home, so Tom has 4 pets in all."
BAD = "Tom Lopez of San Diego has 3 cats and 1 dog at home, so Ana has 4 pets in all."


def _pieces(text: str) -> list[str]:
    words = text.replace(",", " ,").replace(".", " .").split(" ")
    return [words[0]] + [w if w in ",." else " " + w for w in words[1:]]


def make_trace(text: str, *, prompt_words: int = 3, model: str = "world-mdlm") -> Trace:
    pieces = _pieces(text)
    vocab = {i + 10: p for i, p in enumerate(pieces)}
    ids = list(vocab)
    gen = ids[prompt_words:]
    G = len(gen)
    one_step = StepRecord(step=0, block=0, k=G, temperature=1.0, confidence=[0.5] * G, argmax=[-1] * G,
                          selected=list(range(G)), tokens=gen, logprobs=[-0.5] * G)
    return Trace(prompt_ids=ids[:prompt_words], token_ids=gen, order=[0] * G, steps=[one_step],
                 config=DecodeConfig(gen_length=len(gen)), model=model, vocab=vocab,
                 text="".join(pieces[prompt_words:]), prompt_text="".join(pieces[:prompt_words]))


def test_valid_trace_has_no_marks_and_a_full_count():
    tr = make_trace(GOOD)
    assert verdict(tr).ok
    assert all(not m for m in generated_marks(tr))
    assert facts_line(tr) == "valid sentences: 1/1"


def test_wrong_recall_is_marked_on_its_token_with_the_rule_named():
    tr = make_trace(BAD)
    marks = generated_marks(tr)
    flagged = [i for i, m in enumerate(marks) if m]
    assert [tr.token_text(tr.token_ids[i]) for i in flagged] == [" Ana"]
    assert marks[flagged[0]][0].rule == "agreement"
    assert "agreement" in inspector_lines(tr, flagged[0])
    assert inspector_lines(tr, 0) == ""
    assert facts_line(tr) == "valid sentences: 0/1"


def test_at_an_early_step_only_the_confirmed_prefix_is_judged():
    tr = make_trace(BAD)
    ana = [tr.token_text(i) for i in tr.token_ids].index(" Ana")
    staged = Trace(**{**tr.__dict__, "order": list(range(len(tr.token_ids)))})  # one token per step
    assert not any(generated_marks(staged, step=ana - 1))  # "Ana" not confirmed yet: nothing wrong so far
    assert generated_marks(staged, step=ana)[ana]


def test_other_models_get_no_marks_and_no_fact():
    tr = make_trace(BAD, model="austen-mdlm")
    assert verdict(tr) is None and facts_line(tr) is None and inspector_lines(tr, 0) == ""
    assert all(not m for m in generated_marks(tr))
    assert facts_line(None) is None


def test_canvas_facts_and_inspector_show_the_checker():
    tr = make_trace(BAD)
    ana = [tr.token_text(i) for i in tr.token_ids].index(" Ana")
    assert token_rules(tr)[ana] == "agreement" and sum(bool(r) for r in token_rules(tr)) == 1
    html = render.canvas_html(tr)
    assert html.count("dv-bad") == 1 and "✗ agreement" in html
    assert render.player_data(tr, lang="en", order_width=8)["bad"][ana] == "agreement"
    assert ("f_valid", "0/1") in render.run_facts(tr)
    assert "valid sentences" in render.facts_html(tr, "en")
    text = Playground(lambda *a, **k: []).play.rest(trace=tr, lang="en", cursor=(1, ana), temperature=1.0).insp_text
    assert "agreement" in text
    text = Playground(lambda *a, **k: []).play.rest(trace=tr, lang="en", cursor=(1, 0), temperature=1.0).insp_text
    assert "checker" not in text


def test_austen_traces_render_without_checker_marks():
    tr = make_trace(BAD, model="austen-mdlm")
    assert "dv-bad" not in render.canvas_html(tr)
    assert all(key != "f_valid" for key, _ in render.run_facts(tr))
