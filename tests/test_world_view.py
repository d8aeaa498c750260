"""Checker marks and run facts for world traces (pure functions of a Trace, no model)."""
from __future__ import annotations

from dllm_viz import DecodeConfig, StepRecord, Trace
from dllm_viz.app.views import render, wire
from dllm_viz.app.views.world import facts_line, generated_marks, token_rules, verdict

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
    assert facts_line(tr) == "valid sentences: 0/1"


def test_at_an_early_step_only_the_confirmed_prefix_is_judged():
    tr = make_trace(BAD)
    ana = [tr.token_text(i) for i in tr.token_ids].index(" Ana")
    staged = Trace(**{**tr.__dict__, "order": list(range(len(tr.token_ids)))})  # one token per step
    assert not any(generated_marks(staged, step=ana - 1))  # "Ana" not confirmed yet: nothing wrong so far
    assert generated_marks(staged, step=ana)[ana]


def test_other_models_get_no_marks_and_no_fact():
    tr = make_trace(BAD, model="austen-mdlm")
    assert verdict(tr) is None and facts_line(tr) is None
    assert all(not m for m in generated_marks(tr))
    assert facts_line(None) is None


def test_canvas_facts_and_inspector_show_the_checker():
    tr = make_trace(BAD)
    ana = [tr.token_text(i) for i in tr.token_ids].index(" Ana")
    assert token_rules(tr)[ana] == "agreement" and sum(bool(r) for r in token_rules(tr)) == 1
    data = wire.done(tr)  # what the page marks and the inspector says
    assert data["bad"][ana] == "agreement" and sum(bool(b) for b in data["bad"]) == 1
    assert [rule for rule, _, _ in data["rules"][ana]] == ["agreement"] and data["rules"][0] == []
    assert data["rules"][ana][0][2] == "Ana"
    assert ("f_valid", "0/1") in render.run_facts(tr)
    assert "valid sentences" in render.facts_html(tr, "en")


def test_austen_traces_render_without_checker_marks():
    tr = make_trace(BAD, model="austen-mdlm")
    data = wire.done(tr)
    assert not any(data["bad"]) and not any(data["rules"]) and data["checked"] is False
    assert all(key != "f_valid" for key, _ in render.run_facts(tr))


def test_an_unfinished_sentence_is_counted_apart_and_the_underline_is_keyed():
    # Issue 29 item 6: "valid sentences 1/2" beside three sentences on show, the third unfinished.
    done = make_trace(GOOD)
    cut = make_trace(GOOD + " Tom Lopez of")
    assert ("f_unfinished", "1") in render.run_facts(cut) and "f_unfinished" not in dict(render.run_facts(done))
    assert dict(render.run_facts(cut))["f_valid"] == "1/1"
    # The canvas key explains the checker's solid underline (drawn by the page for a checked trace).
    assert wire.done(cut)["checked"] and not wire.done(make_trace(GOOD, model="austen-mdlm"))["checked"]
