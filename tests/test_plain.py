"""The plain step (`core.plain`): the same traces as the general step, bit for bit, where it runs; the general
step wherever a row is not plain, or not where its plan says."""
from __future__ import annotations

import pytest
import torch

from dllm_viz import DecodeConfig, decode, fork, load_model
from dllm_viz.core import batch as batch_module
from dllm_viz.core.plain import is_plain
from dllm_viz.core.schedules import planned_quotas, planned_states


class Ties:
    """Replayed logits on a grid of 0.5 in bfloat16 (exact ties between candidates everywhere), a term of the
    canvas so the order of confirmation matters, and the mask token (id 0) leading at some positions."""

    def __init__(self, vocab: int = 24, length: int = 64) -> None:
        g = torch.Generator().manual_seed(5)
        self.table = torch.randn(length, vocab, generator=g) * 2  # (N, V)
        self.table[::4, 0] += 5.0
        self.mix = torch.randn(vocab, vocab, generator=g) * 0.3  # (V, V)
        self.mask_token_id, self.vocab_size, self.max_length, self.name = 0, vocab, length, "ties"

    def __call__(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        N = input_ids.shape[1]
        logits = self.table[:N].unsqueeze(0) + self.mix[input_ids].mean(1, keepdim=True)  # (B, N, V)
        return (torch.round(logits * 2) / 2).to(torch.bfloat16)


@pytest.fixture(scope="module")
def models():
    return {"world": load_model("world"), "austen": load_model(), "ties": Ties()}


PROMPTS = {"world": ["Tom Lopez of", "Mia Berg of New York has 3 cats and", "Val"],
           "austen": ["It is a truth universally acknowledged, that", "Elizabeth", "Mr"],
           "ties": [[5, 6, 7], [9, 3], [4]]}
PLAIN = [
    dict(schedule="fixed_steps", steps=8),
    dict(schedule="fixed_steps", steps=6, block_length=8),
    dict(schedule="topk_decay", top_k=5, decay=0.8),
    dict(schedule="topk_decay", top_k=6, decay=0.7, min_k=2, block_length=8, block_schedule="restart"),
    dict(schedule="topk_decay", top_k=4, decay=0.9, block_length=8),  # k carried on into the next block
    dict(schedule="adaptive", top_k=5),
    dict(schedule="linear_time", steps=8),
]


def general(monkeypatch) -> None:
    """Every row steps the general way from now on."""
    monkeypatch.setattr(batch_module, "plain_rows", lambda *a, **k: None)


def same(a, b) -> None:
    """Two lists of traces alike in everything but the clock (the wall time, and the tokens per second of it)."""
    def timeless(t):
        d = t.to_dict()
        return d | {"wall_time": 0, "metrics": d["metrics"] | {"tokens_per_second": 0}}

    assert [timeless(t) for t in a] == [timeless(t) for t in b]


@pytest.fixture
def counted(monkeypatch):
    """How many steps of plain rows (`_Rows.plain`) the plain step took and how many it handed back."""
    seen = {"plain": 0, "back": 0}
    inner = batch_module.plain_step

    def step(batch, rows, *args, **kwargs):
        out = inner(batch, rows, *args, **kwargs)
        if rows.plain is not None:  # (rows not the buffers' first are no plain rows)
            seen["plain" if out is not None else "back"] += 1
        return out

    monkeypatch.setattr(batch_module, "plain_step", step)
    return seen


@pytest.mark.parametrize("name", ["world", "austen", "ties"])
@pytest.mark.parametrize("fields", PLAIN, ids=lambda f: "-".join(f"{k}={v}" for k, v in f.items()))
def test_the_plain_step_gives_the_general_steps_traces(models, name, fields, counted, monkeypatch):
    """Each plain config, alone and three prompts together (one batch), with 5, 2 and no candidates recorded: the
    same traces, bit for bit, as the general step gives, every step of them taken by the plain step."""
    model, G = models[name], 16
    config = DecodeConfig(gen_length=G, temperature=0.0, **fields)
    assert is_plain(config)
    runs = [(PROMPTS[name][:1], 5), (PROMPTS[name], 2), (PROMPTS[name][1:], 0)]
    fast = [decode(model, prompts, config, record_candidates=n) for prompts, n in runs]
    assert counted["plain"] == sum(len(out[0].steps) for out in fast) and counted["back"] == 0
    general(monkeypatch)
    for out, (prompts, n) in zip(fast, runs):
        same(out, decode(model, prompts, config, record_candidates=n))


def test_rows_of_several_plans_step_together_and_each_record_as_it_comes(models, counted, monkeypatch):
    """Rows of different plain configs (counts, blocks, lengths) in one batch, and records read step by step
    (`on_step`): the general step's traces and records."""
    model = models["world"]
    configs = [DecodeConfig(gen_length=16, temperature=0.0, **f) for f in PLAIN[:3]]
    prompts = PROMPTS["world"]
    records: list = []
    fast = decode(model, prompts, configs, on_step=lambda i, rec: records.append((i, rec.to_dict())))
    assert counted["plain"] > 0 and counted["back"] == 0
    general(monkeypatch)
    again: list = []
    same(fast, decode(model, prompts, configs, on_step=lambda i, rec: again.append((i, rec.to_dict()))))
    assert records == again


def test_a_row_that_is_not_plain_steps_the_general_way(models, counted, monkeypatch):
    """Beside a row that samples, revises, stops early, ranks another way, reads the model for its count or follows
    a reference's code, a plain row steps the general way; alone again once that row is done, the plain way. The
    traces are the general step's."""
    model = models["world"]
    base = DecodeConfig(gen_length=16, temperature=0.0, schedule="fixed_steps", steps=8)
    others = [base.replace(temperature=0.7), base.replace(revise="rcr"), base.replace(schedule="threshold"),
              base.replace(confidence="margin"), base.replace(confidence_from="tempered"),
              base.replace(early_stop=True), base.replace(sample_scope="all"), DecodeConfig.preset("llada", 16)]
    outs = []
    for other in others:
        assert not is_plain(other)
        before = counted["plain"]
        outs.append(decode(model, PROMPTS["world"][:2], [base, other]))
        alone = max(0, len(outs[-1][0].steps) - len(outs[-1][1].steps))  # steps of the plain row after the other's
        assert counted["plain"] - before == alone, other
    general(monkeypatch)
    for out, other in zip(outs, others):
        same(out, decode(model, PROMPTS["world"][:2], [base, other]))


def test_a_fork_continues_the_general_way(models, counted, monkeypatch):
    """A fork's continuation (a knob switched, a token forced) left its plan: past its fork point every step is the
    general step's (the plain step hands them back), and the forks are those the general step alone gives. The
    plan's counts are those the schedule's quota gives (`planned_states` beside `planned_quotas`)."""
    model = models["world"]
    config = DecodeConfig(gen_length=16, temperature=0.0, schedule="fixed_steps", steps=8)
    trace = decode(model, PROMPTS["world"][:1], config)[0]
    assert counted["plain"] == len(trace.steps) and counted["back"] == 0
    changes = [dict(knobs={"steps": 4}), dict(force={trace.steps[3].selected[0]: trace.token_ids[0]})]
    forks = [fork(model, trace, 3, **change) for change in changes]
    assert counted["back"] == sum(len(f.steps) - 3 for f in forks)  # the replays' 3 steps each were plain
    general(monkeypatch)
    same(forks, [fork(model, trace, 3, **change) for change in changes])
    assert [n for n, *_ in planned_states(config)] == list(planned_quotas(config)) == [s.k for s in trace.steps]


def _staggered(model, configs, prompts):
    """Rows joined at different steps, as an engine's: row 0 first, row 1 after two steps, row 2 after three more;
    each slot's trace when it is done."""
    from dllm_viz.core.batch import DecodeBatch
    from dllm_viz.core.decoder import encode_prompt, request_generator

    ids = [encode_prompt(model, p) for p in prompts]
    batch = DecodeBatch(model, capacity=3, max_length=max(len(i) for i in ids) + max(c.gen_length for c in configs))
    joins, out, step = {0: 0, 2: 1, 5: 2}, {}, 0
    with torch.inference_mode():
        while len(out) < len(configs):
            if step in joins:
                a = joins[step]
                batch.add(a, ids[a], configs[a], request_generator(configs[a]), prompts[a])
            batch.step(records=False)
            for a in [a for a in batch.slots if batch.slots[a].done and a not in out]:
                out[a] = batch.trace(a)
            step += 1
    return [out[a] for a in range(len(configs))]


def test_rows_at_different_steps_step_plainly_too(models, counted, monkeypatch):
    """Rows that joined at different steps (an engine's) and run different plans step the plain way together (while
    they are the buffers' first rows), and give the general step's traces, which are each row's trace alone."""
    model = models["world"]
    configs = [DecodeConfig(gen_length=16, temperature=0.0, **f) for f in (PLAIN[0], PLAIN[3], PLAIN[6])]
    fast = _staggered(model, configs, PROMPTS["world"])
    assert counted["plain"] > 0 and counted["back"] == 0
    general(monkeypatch)
    same(fast, _staggered(model, configs, PROMPTS["world"]))
    same(fast, [decode(model, [p], c)[0] for p, c in zip(PROMPTS["world"], configs)])
