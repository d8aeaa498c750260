"""app/views/revision.py: the rows the page replays a revised trace from (issue 28)."""
from __future__ import annotations

import math

import pytest

from dllm_viz import DecodeConfig, decode, load_model
from dllm_viz.app.views.revision import canvas_events, threshold_reason
from dllm_viz.core.analysis import piece


@pytest.fixture(scope="module")
def world():
    return load_model("world")


def _index(pieces: dict[str, int]):
    return lambda text: pieces.setdefault(text, len(pieces))


@pytest.mark.parametrize("name, prompt", [("rcr", "Tom Lopez of"), ("remdm", "Tom Lopez of"), ("llada21", "")])
def test_replaying_the_rows_gives_the_traces_canvas_at_every_step(world, name, prompt):
    tr = decode(world, [prompt], DecodeConfig.preset(name, 32, seed=1))[0]
    pieces: dict[str, int] = {}
    data = canvas_events(tr, _index(pieces), "en")
    texts = list(pieces)
    assert data is not None and len(data["ev"]) == tr.config.gen_length
    for f in range(len(tr.steps) + 1):  # the state at frame f: the last row before record f
        shown = []
        for rows in data["ev"]:
            last = [r for r in rows if r[0] < f]
            shown.append(None if not last or last[-1][1] == "r" else texts[last[-1][2]])
        assert shown == [None if c is None else piece(tr, c) for c in tr.canvas_at(f - 1)], f
    kinds = {r[1] for rows in data["ev"] for r in rows}
    assert kinds == ({"c", "e"} if name == "llada21" else {"c", "r"})
    for rows in data["ev"]:
        held = False
        for _step, kind, tok, tint, _conf, _p, old, p_old, _why in rows:
            assert (old != -1) == held  # the token it replaced; -1 where it was a mask
            assert (tok == -1) == (kind == "r") == (tint == "") and (p_old is not None) == (kind == "e")
            held = kind != "r"
    assert data["rvScore"] == {"rcr": "decided with", "remdm": "σ", "llada21": "score"}[name]


def test_a_trace_whose_confirmations_are_final_gets_nothing(world):
    tr = decode(world, ["Tom Lopez of"], DecodeConfig.preset("balanced", 16, seed=1))[0]
    assert not tr.revised and canvas_events(tr, _index({}), "en") is None


def test_the_threshold_reason_follows_the_strict_comparison():
    plain = DecodeConfig(schedule="threshold", threshold=0.9)
    strict = plain.replace(threshold_strict=True)
    assert threshold_reason(plain, 0.9) == "above" and threshold_reason(strict, 0.9) == "floor"
    assert threshold_reason(strict, 0.91) == "above" and threshold_reason(plain, 0.5) == "floor"
    assert threshold_reason(plain, math.nan) == "" and threshold_reason(DecodeConfig(), 0.99) == ""


def test_a_fork_s_forced_and_taken_back_tokens_replay_as_the_trace_s_canvas(world):
    """A fork (issue 39) forces a token at the start and takes one back later: the page's rows replay
    `Trace.canvas_at` at every frame, the forced token as kind "f" from frame 0, and the page's views render."""
    from dllm_viz import fork
    from dllm_viz.app.views import figures, render

    tr = decode(world, ["Tom Lopez of"], DecodeConfig.preset("quality", 32, seed=3))[0]
    pos = next(p for p, tok in enumerate(tr.token_ids) if tok != 7)
    first = fork(world, tr, 0, force={pos: 7})
    vis = next(p for p, tok in enumerate(first.canvas_at(3)) if tok is not None and p != pos)
    out = fork(world, first, 4, remask=[vis])
    pieces: dict[str, int] = {}
    data = canvas_events(out, _index(pieces), "en")
    texts = list(pieces)
    for f in range(len(out.steps) + 1):
        shown = []
        for rows in data["ev"]:
            last = [r for r in rows if r[0] < f]
            shown.append(None if not last or last[-1][1] == "r" else texts[last[-1][2]])
        assert shown == [None if c is None else piece(out, c) for c in out.canvas_at(f - 1)], f
    assert data["ev"][pos][0][:3] == [-1, "f", texts.index(piece(out, 7))]
    assert [r[:2] for r in data["ev"][vis]][-2:] == [[3, "r"], [out.order[vis], "c"]]
    assert render.player_html(out, lang="zh") and figures.confidence_heatmap(out) and figures.order_map(out)
def test_the_run_facts_say_how_wino_verified_and_the_nfe_the_engine_counts(world):
    """WINO as shipped: every forward carried its shadow block; ours (`wino_canvases`): the canvases its verify
    computed, one per decided position of the block at each verifying step; ReMDM's sampler: its NFE beside
    the steps (the steps that reused p_x0 ran no forward)."""
    from dllm_viz.app.views.revision import verify_facts

    shadow, canvases, remdm = decode(world, ["Tom Lopez of"] * 3, [DecodeConfig.preset("wino", 24, threshold=0.9),
                                                                  DecodeConfig.preset("wino_canvases", 24, threshold=0.9),
                                                                  DecodeConfig.preset("remdm", 24, seed=1)])
    assert verify_facts(shadow) == [("f_verify_shadow", str(len(shadow.steps)))]
    facts = dict(verify_facts(canvases))
    assert int(facts["f_nfe"]) == canvases.nfe > len(canvases.steps) and int(facts["f_verify_canvases"]) > 0
    assert dict(verify_facts(remdm)).get("f_nfe") == str(remdm.nfe) and remdm.nfe < len(remdm.steps)
