"""bench/compare_models.py (old vs new model, for the card) and bench/model_quality.py --rescore --json."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from compare_models import check_comparable, figure_table, sample_sections, word_error_table  # noqa: E402

PROMPTS = ["First prompt", "Second prompt"]


def _record(tag: str, seeds: int = 2, bpc: float = 1.5, dict_share: float = 90.0) -> dict:
    """A model_quality --json record whose sample texts name their preset, prompt, seed and model."""
    samples = {name: [f"{tag} {name} p{i} s{s}" for i in range(len(PROMPTS)) for s in range(seeds)]
               for name in ("quality", "balanced")}
    presets = {name: {"dict%": dict_share, "fluency": 1.25, "gain": -0.5, "greedy_loop_share": 0.375}
               for name in samples}
    return {"model": tag, "path": None, "gen_length": 64, "seeds": seeds, "prompts": list(PROMPTS),
            "presets": presets, "heldout_bits": {"bits_per_char": bpc}, "samples": samples}


def test_figure_table_shows_each_figure_old_to_new_and_the_bits():
    old, new = _record("old", bpc=1.448, dict_share=96.04), _record("new", bpc=1.4001, dict_share=97.5)
    del old["presets"]["balanced"]["gain"]  # an older record without the figure shows a dash
    table = figure_table(old, new)
    rows = {line.split(" | ")[0].strip("| "): line for line in table.splitlines() if line.startswith("| ")}
    assert set(rows) == {"preset", "quality", "balanced"}
    assert "96.0 -> 97.5" in rows["balanced"] and "- -> -0.50" in rows["balanced"]
    assert "0.38 -> 0.38" in rows["quality"] and "1.25 -> 1.25" in rows["quality"]
    assert table.rstrip().endswith("Held-out bits/char: 1.448 -> 1.400")


def test_word_error_table_in_points_of_all_words_only_when_both_records_have_them():
    old, new = _record("old"), _record("new")
    assert word_error_table(old, new) is None  # records from before --word-errors
    counts = {"words": 200, "not_in_dictionary": 8, "one_piece": 3, "one_piece_author": 2, "joined_in_one_step": 4,
              "joined_across_steps": 1}
    old["presets"]["balanced"]["word_errors"] = counts
    new["presets"]["balanced"]["word_errors"] = {**counts, "words": 100}
    table = word_error_table(old, new)
    rows = [line for line in table.splitlines() if line.startswith("| balanced")]
    assert rows == ["| balanced | 4.0 -> 8.0 | 1.5 -> 3.0 | 1.0 -> 2.0 | 2.0 -> 4.0 | 0.5 -> 1.0 |"]
    assert "| quality" not in table  # only presets both records broke down


def test_samples_pair_the_same_request_of_both_models():
    old, new = _record("old"), _record("new")
    text = sample_sections(old, new, ("phase 4", "next"), seed_index=1)
    for name in ("quality", "balanced"):
        for i, prompt in enumerate(PROMPTS):
            assert f"> **phase 4:** old {name} p{i} s1" in text
            assert f"> **next:** new {name} p{i} s1" in text
    assert "s0" not in text
    # old before new, under its prompt, within the preset's section
    block = text.split("#### balanced")[1]
    assert block.index("Second prompt") < block.index("old balanced p1 s1") < block.index("new balanced p1 s1")


@pytest.mark.parametrize("field, value", [("prompts", ["other"] * 2), ("gen_length", 32), ("seeds", 3)])
def test_records_of_different_requests_are_refused(field, value):
    old, new = _record("old"), _record("new")
    new[field] = value
    with pytest.raises(ValueError, match=field):
        check_comparable(old, new)
    with pytest.raises(ValueError, match=field):
        figure_table(old, new)


def test_seed_index_out_of_range_names_the_range():
    with pytest.raises(ValueError, match=r"seed_index must be in \[0, 1\]"):
        sample_sections(_record("old"), _record("new"), ("a", "b"), seed_index=2)


def test_rescore_json_adds_the_gain_figures(tmp_path):
    """--rescore --json writes the stored samples' judge figures (gain included) without decoding."""
    line = "the lady said that she was very happy to see him at the ball and all her sisters were there"
    judge = tmp_path / "judge.txt"
    judge.write_text("\n".join([line, "she was very happy", "the ball was there and all her sisters"] * 20))
    heldout = tmp_path / "heldout.txt"
    heldout.write_text(" ".join([line] * 40))
    record = _record("old")
    record["samples"] = {"quality": [line] * 4, "balanced": ["ball the her were all sisters lady there"] * 4}
    record["greedy_samples"] = {"quality": [line + " " + line], "balanced": ["happy"]}
    for fig in record["presets"].values():
        del fig["gain"]
    src, out = tmp_path / "old.json", tmp_path / "rescored.json"
    src.write_text(json.dumps(record))
    subprocess.run([sys.executable, str(ROOT / "bench" / "model_quality.py"), "--threads", "1", "--rescore", str(src),
                    "--judge", str(judge), "--heldout", str(heldout), "--json", str(out)],
                   check=True, capture_output=True, text=True, cwd=tmp_path)
    rescored = json.loads(out.read_text())
    presets = rescored["presets"]
    assert set(presets) == {"quality", "balanced"}
    assert all({"judge_ppl", "context_gain", "fluency", "gain"} <= set(fig) for fig in presets.values())
    # the judge's own word order beats a shuffle of the same words
    assert presets["quality"]["gain"] > presets["balanced"]["gain"]
    assert rescored["heldout"]["gain"] == 1.0 and rescored["samples"] == record["samples"]
