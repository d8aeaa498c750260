"""studies/renoise_lessons.py (issue 36, item 7): the study's code on a small renoiser (the counting, the cells,
the AUP, the tables), and the shipped measurement on the renoising world model read back whole."""
from __future__ import annotations

import pytest

from dllm_viz import decode
from dllm_viz.studies import renoise_lessons as R
from dllm_viz.studies.curves import aup
from tests.renoise_table import TableRenoiser

PROMPTS = [[1, 2], [3]]
SEEDS = range(3)


def even_first_token(trace) -> bool:
    """A stand-in checker for the table model (it writes no language): valid when the first token is even."""
    return trace.token_ids[0] % 2 == 0


@pytest.fixture(scope="module")
def measured():
    model, seen = TableRenoiser(), []
    model.generation_defaults = lambda: {"confidence_threshold": 5.0, "max_denoising_steps": 8}  # the stop can fire

    def run(prompts, configs, *, on_step=None, record_candidates=0):
        seen.append(configs)
        return decode(model, prompts, configs)

    data = R.measure_all(run, PROMPTS, SEEDS, valid=even_first_token, log=lambda _: None)
    return data, seen


def test_every_cell_is_decoded_once_in_one_batched_call_with_its_knobs(measured):
    data, seen = measured
    keys = R.cells()
    assert len(seen) == len(keys) == len(set(keys))
    assert len(keys) == len(R.SCHEDULES) * 2 + 2 * (len(R.BOUNDS) - 1) + (len(R.STABILITY) - 1)  # the shared ones once
    for configs, key in zip(seen, keys):
        assert len(configs) == len(PROMPTS) * len(SEEDS) and {c.seed for c in configs} == set(SEEDS)
        for c in configs:
            assert {k: getattr(c, k) for k, _ in key} == dict(key) and c.gen_length == R.GEN_LENGTH
            assert c.max_denoising_steps is None  # the rest is the checkpoint's (the diffusion_gemma preset)
    assert data["stability"][0]["nfe"] < data["stability"][2]["nfe"]  # the checkpoint's 8 steps, the stop firing


def test_the_parts_read_the_right_cells_and_the_aup_is_curves_aup(measured):
    data, _ = measured
    assert set(data["acceptance"]["shipped"]) == {"tempered", "raw"}
    assert [p["value"] for p in data["acceptance"]["flat"]] == list(R.FLAT)
    assert all({"tempered", "raw"} <= set(p) for p in data["acceptance"]["flat"])
    shipped = data["acceptance"]["shipped"]["tempered"]
    assert data["bound"]["tempered"]["points"][R.BOUNDS.index(0.1)] == {"value": 0.1, **shipped}
    assert data["stability"][1] == {"value": 1, **shipped}
    y_max = data["bound"]["y_max"]
    assert y_max == max(100 * p["valid_runs"]["rate"] for a in ("tempered", "raw") for p in data["bound"][a]["points"])
    for a in ("tempered", "raw"):
        points = data["bound"][a]["points"]
        assert [p["value"] for p in points] == list(R.BOUNDS)
        expected = aup([(p["tpf"], 100 * p["valid_runs"]["rate"]) for p in points], y_max) if y_max else 0.0
        assert data["bound"][a]["aup"] == pytest.approx(expected, abs=0.01)


def test_a_cell_counts_its_runs(measured):
    data, _ = measured
    for point in data["stability"]:
        r = point["valid_runs"]
        assert r["n"] == len(PROMPTS) * len(SEEDS) and 0 <= r["lo"] <= r["rate"] <= r["hi"] <= 1
        assert point["nfe"] >= 1 and point["tpf"] > 0
    assert "| 0.8 -> 0.4 (shipped) |" in R.table(data) and "| AUP |" in R.table(data)


def test_the_shipped_measurement_on_the_world_model_is_whole():
    data = R.load_renoise()
    assert data, "dllm_viz/assets/world-renoise/lessons.json: run python -m dllm_viz.studies.renoise_lessons"
    assert data["model"] == "world-renoise" and data["seeds"] == 16 and len(data["prompts"]) == 4
    for part in ("acceptance", "bound", "stability"):
        assert part in data
    rows = [data["acceptance"]["shipped"], *data["acceptance"]["flat"]]
    assert all(row[a]["valid_runs"]["n"] == 64 for row in rows for a in ("tempered", "raw"))
    assert R.table(data).count("\n") > 20


def test_the_compare_tab_shows_the_study_beside_the_tempered_confidence_lesson_in_both_languages():
    from dllm_viz.app.handlers.compare import CompareHandlers
    from dllm_viz.app.handlers.traces import TraceStore
    from dllm_viz.app.views.lessons import renoise_study_md
    from dllm_viz.studies.renoise_lessons import load_study_text

    text = load_study_text()
    for lang in ("en", "zh"):
        md = renoise_study_md(lang)
        assert md.startswith(f"### {text['title'][lang]}") and text["text"][lang] in md
        assert "| 0.3 | 97% [89, 99], 2.755 | 97% [89, 99], 1.935 |" in md  # the bound table, measured
    assert renoise_study_md("en", data={}) == ""
    handlers = CompareHandlers(lambda *a, **k: [], is_world=lambda pick: pick == "world", traces=TraceStore())
    # the article's question on a renoising decoder, where the page counts correctness (a world model picked)
    assert text["title"]["en"] in handlers.lesson_text("polluted", "en", model_pick="world")
    assert text["title"]["en"] not in handlers.lesson_text("polluted", "en", model_pick="austen")
    assert text["title"]["en"] not in handlers.lesson_text("rng", "en", model_pick="world")
