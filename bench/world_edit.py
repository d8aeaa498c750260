"""Can the world model edit? Replace k visible tokens of held-out text by random ones and read its argmax.

Token-to-token edits (LLaDA 2.1's JointThreshold; issue 28) rewrite a visible token wherever the
model's argmax there differs from it. That needs a model whose prediction at a visible position
means something: restore a wrong token, keep a right one. This measures both, for each model given:

- canvases: ``--canvases`` runs of 4 consecutive held-out sentences (generator seed 12, the seed of
  ``scripts/make_world_data.py``'s held-out split; 26.7% of those sentences also occur in training),
  92 tokens each, every word one token;
- in each, k word positions (never a newline) are replaced by another ordinary token drawn uniformly
  (``dllm_viz.train.objectives.editing.random_other_tokens``, seeded per canvas), and for the mid-decode rows
  half of the other positions are masked as well;
- ``restored``: share of replaced positions whose argmax is the original token;
- ``wrongly changed``: share of the visible tokens left alone whose argmax differs from them (an
  edit rule with ``edit_threshold`` 0, SGLang's default, would rewrite each of them);
- ``oracle, told where`` (``WorldOracle``, the language's exact marginals, with the replaced positions
  masked): what a perfect model of the language restores when told which tokens are wrong (a wrong
  city word can leave several cities possible, so it is below 100%). A trained model can beat it on
  the sentences it saw in training, where it may remember the city.
Counts come with 95% Wilson intervals. Deterministic (fixed seeds); one thread.

Then the edit rule itself: the ``llada21`` preset (SGLang's JointThreshold with its defaults, T = 0)
over the 4 world prompts x 8 seeds, 48 tokens: valid runs, tokens rewritten, forwards. A model that
does not declare ``can_edit`` is refused that preset; here it is declared for the measurement, to
show what the declaration guards against.

    python bench/world_edit.py                                      # the shipped dllm_viz/assets/world
    python bench/world_edit.py --model OLD_EXPORT --model dllm_viz/assets/world
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from dllm_viz import DecodeConfig, assets, decode  # noqa: E402
from dllm_viz.models.embedded import load_embedded  # noqa: E402
from dllm_viz.train.objectives.editing import ordinary_ids, random_other_tokens  # noqa: E402
from dllm_viz.world import WorldOracle, generate  # noqa: E402
from dllm_viz.studies.world_score import WORLD_PROMPTS, correctness, format_rate, rate  # noqa: E402

WORLD_DIR = assets.path("world")
HELDOUT_SEED = 12  # scripts/make_world_data.py --seed 11: the held-out split is drawn with seed + 1
LINES = 4  # sentences per canvas: 4 x 23 = 92 tokens, inside the model's 96
CONDITIONS = (("finished, k=1", 1, 0.0), ("finished, k=4", 4, 0.0), ("finished, k=8", 8, 0.0),
              ("half masked, k=4", 4, 0.5))


def canvases(n: int) -> list[str]:
    sentences = generate(n * LINES, HELDOUT_SEED)
    return ["".join(s + "\n" for s in sentences[i * LINES:(i + 1) * LINES]) for i in range(n)]


def corrupt(newline: torch.Tensor, k: int, masked_share: float, generator: torch.Generator
            ) -> tuple[torch.Tensor, torch.Tensor]:
    """``(replaced (N,), masked (N,))`` bool for a canvas whose newlines are ``newline (N,)``: k of its word
    positions to replace, and a share of the others to mask. (The replacement tokens themselves are
    ``random_other_tokens``' at ``replaced``.)"""
    words = (~newline).nonzero().squeeze(1)  # (W,)
    replaced = torch.zeros_like(newline)
    replaced[words[torch.randperm(len(words), generator=generator)[:k]]] = True
    masked = (torch.rand(newline.shape, generator=generator) < masked_share) & ~replaced
    return replaced, masked


@torch.no_grad()
def measure(model, texts: list[str], oracle: WorldOracle) -> dict[str, dict]:
    tok = model.tokenizer
    ordinary = ordinary_ids(model.vocab_size, model.special_ids.tolist())  # (K,)
    newline_id = tok.encode("\n")
    assert len(newline_id) == 1, newline_id
    out = {}
    for c, (name, k, share) in enumerate(CONDITIONS):
        counts = {"replaced": 0, "restored": 0, "kept": 0, "changed": 0, "oracle": 0}
        for i, text in enumerate(texts):
            ids = torch.tensor(tok.encode(text))  # (N,)
            words = torch.tensor(oracle.tokenizer.encode(text))  # (N,): the same words, the oracle's ids
            assert ids.shape == words.shape, (text, len(ids), len(words))
            gen = torch.Generator().manual_seed(1000 * c + i)
            replaced, masked = corrupt(ids == newline_id[0], k, share, gen)
            shown = torch.where(replaced, random_other_tokens(ids[None], ordinary, gen)[0], ids)
            shown = torch.where(masked, model.mask_token_id, shown)
            pred = model(shown[None])[0].argmax(-1)  # (N,)
            kept = ~replaced & ~masked
            truth = torch.where(replaced | masked, oracle.mask_token_id, words)
            best = oracle(truth[None])[0].argmax(-1)  # (N,): exact marginals, the replaced positions masked
            counts["replaced"] += int(replaced.sum())
            counts["restored"] += int((pred[replaced] == ids[replaced]).sum())
            counts["kept"] += int(kept.sum())
            counts["changed"] += int((pred[kept] != ids[kept]).sum())
            counts["oracle"] += int((best[replaced] == words[replaced]).sum())
        out[name] = {"restored": rate(counts["restored"], counts["replaced"]),
                     "wrongly_changed": rate(counts["changed"], counts["kept"]),
                     "oracle": rate(counts["oracle"], counts["replaced"])}
    return out


def llada21(model) -> dict:
    """The ``llada21`` preset on the 4 world prompts x 8 seeds: valid runs, tokens rewritten, mean NFE."""
    declared = model.can_edit
    model.can_edit = True  # a masked-only model is refused the preset; declared here to measure it anyway
    try:
        prompts = [p for p in WORLD_PROMPTS for _ in range(8)]
        configs = [DecodeConfig.preset("llada21", 48, seed=s) for _ in WORLD_PROMPTS for s in range(8)]
        traces = decode(model, prompts, configs, record_candidates=0)
    finally:
        model.can_edit = declared
    return {"valid_runs": correctness(traces)["valid_runs"], "rewritten": sum(t.metrics["edited"] for t in traces),
            "nfe": statistics.mean(t.nfe for t in traces)}


def fine_rate(r: dict) -> str:
    """``"13 of 22000, 0.06% [0.03, 0.10]"``: a small rate with its count and 95% Wilson interval."""
    return f"{r['k']} of {r['n']}, {r['k'] / max(1, r['n']):.2%} [{r['lo'] * 100:.2f}, {r['hi'] * 100:.2f}]"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", type=Path, action="append", help="exported model folder (repeatable)")
    parser.add_argument("--canvases", type=int, default=250, help="canvases of 4 held-out sentences")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    texts, oracle = canvases(args.canvases), WorldOracle()
    report = {}
    print(f"{args.canvases} canvases of {LINES} held-out sentences (seed {HELDOUT_SEED}); 95% Wilson intervals\n")
    print("| model | can_edit | canvas | restored | wrongly changed | oracle, told where |\n|---|---|---|---|---|---|")
    for folder in args.model or [WORLD_DIR]:
        model = load_embedded(device="cpu", path=folder)
        rows = report[str(folder)] = measure(model, texts, oracle)
        for name, r in rows.items():
            print(f"| {folder} | {model.can_edit} | {name} | {format_rate(r['restored'])} "
                  f"| {fine_rate(r['wrongly_changed'])} | {format_rate(r['oracle'])} |")
    print("\n| model | can_edit | llada21: valid runs | tokens rewritten | mean NFE |\n|---|---|---|---:|---:|")
    for folder in args.model or [WORLD_DIR]:
        model = load_embedded(device="cpu", path=folder)
        r = report[f"{folder} llada21"] = llada21(model)
        print(f"| {folder} | {model.can_edit} | {format_rate(r['valid_runs'])} | {r['rewritten']} | {r['nfe']:.2f} |")
    if args.json:
        args.json.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
