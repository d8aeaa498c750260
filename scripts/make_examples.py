"""Regenerate the example traces the playground shows before any click (dllm_viz/assets/examples/*.json).

    python scripts/make_examples.py            # writes dllm_viz/assets/examples/
    python scripts/make_examples.py --out /tmp/examples
    python scripts/make_examples.py --only 00-world_quality_preset

Each example names the model that decodes it: the world model (`load_model("world")`) for the one
the page opens on, the embedded Austen model for the others.

Every example is seeded, so a rerun reproduces the same tokens and order (only the recorded wall
time changes). File names sort in display order; the part after "NN-" is the name shown in the UI.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from dllm_viz import DecodeConfig, assets, decode  # noqa: E402
from dllm_viz.studies.lessons import DEFAULT_PROMPTS  # noqa: E402
from dllm_viz.studies.world_score import WORLD_PROMPTS  # noqa: E402

OUT = assets.path("examples")
L = 64
# (file name, prompt, config[, model]): the model is load_model's path, None = the embedded model.
EXAMPLES: list[tuple[str, str, DecodeConfig] | tuple[str, str, DecodeConfig, str]] = [
    # The page opens on this one (the first file): readable sentences whose hard words (names, the
    # sum) are the unsure ones, and the world checker's verdict on them (issue 29).
    ("00-world_quality_preset", WORLD_PROMPTS[0], DecodeConfig.preset("quality", L, seed=2), "world"),
    ("01-quality_preset", DEFAULT_PROMPTS[1], DecodeConfig.preset("quality", L, seed=2)),
    ("02-balanced_preset", DEFAULT_PROMPTS[0], DecodeConfig.preset("balanced", L, seed=1)),
    ("03-polluted_confidence_at_T1.5", DEFAULT_PROMPTS[0],
     DecodeConfig.preset("balanced", L, seed=1, temperature=1.5, confidence_from="tempered")),
    ("04-staged_temperature", DEFAULT_PROMPTS[3],
     DecodeConfig.preset("balanced", L, seed=4, temperature_stages=(1.2, 1.0, 0.7))),
    ("05-semi_autoregressive_blocks", DEFAULT_PROMPTS[2],
     DecodeConfig(gen_length=L, block_length=16, schedule="threshold", threshold=0.8, seed=5)),
]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--only", action="append", help="regenerate only this example (repeatable)")
    args = parser.parse_args(argv)
    import torch

    from dllm_viz.models import load_model

    torch.set_num_threads(1)  # as app.py serves them; the recorded wall times match what the page shows
    models: dict[str | None, object] = {}

    def model_for(path: str | None) -> object:
        if path not in models:
            models[path] = load_model(path, device="cpu")
            decode(models[path], ["a"], DecodeConfig(gen_length=8))  # warm-up: keep first-call costs out of wall times
        return models[path]

    args.out.mkdir(parents=True, exist_ok=True)
    if not args.only:
        for old in args.out.glob("*.json"):  # names may change between versions of this list
            old.unlink()
    for name, prompt, cfg, *path in EXAMPLES:
        if args.only and name not in args.only:
            continue
        trace = decode(model_for(path[0] if path else None), [prompt], cfg)[0]
        path = args.out / f"{name}.json"
        path.write_text(trace.to_json() + "\n", encoding="utf-8")
        print(f"{path.name}: {len(trace.steps)} steps, {path.stat().st_size / 1024:.0f} KiB, {trace.text!r}")


if __name__ == "__main__":
    main()
