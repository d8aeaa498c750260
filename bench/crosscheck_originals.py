"""The tests' re-implementations of unlicensed originals against the originals themselves (issue 40).

MDPO's RCR, WINO's `decoding_wino` and d3LLM's `get_aup` come without a licence, so dllm-viz's tests
carry clean re-implementations of them (tests/mdpo/, tests/wino/, tests/d3llm/), not their code.
This script, given checkouts of the three repositories (never copied into dllm-viz), imports the
original functions from them and runs both sides on the same inputs: scripted models of several
seeds, sharpness and shapes for the decoders (step by step: every forward's inputs and the ids
after), random and stored curves for the AUP. It prints, per original, the cases compared and the
cases identical; any difference is printed and makes the exit status 1.

    python bench/crosscheck_originals.py --mdpo ~/src/mdpo --wino ~/src/WINO-DLLM --d3llm ~/src/d3LLM

A checkout not given is skipped (and said so). The originals need torch and numpy; MDPO's
`src/llada/generate.py` also imports transformers.
"""
from __future__ import annotations

import argparse
import importlib.util
import io
import json
import math
import random
import sys
from contextlib import redirect_stdout
from pathlib import Path
from types import SimpleNamespace

import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.as_shipped import AttentionTiny, NoMaskTiny  # noqa: E402
from tests.d3llm.aup import Refused, get_aup  # noqa: E402
from tests.mdpo.rcr import rcr_generate  # noqa: E402
from tests.wino.wino import wino_generate  # noqa: E402


def load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Recorder:
    """A model with the originals' calling convention (`model(x, **kw).logits`) that records its inputs."""

    def __init__(self, model) -> None:
        self.model, self.inputs = model, []
        self.device = torch.device("cpu")

    def __call__(self, x, attention_mask=None, position_ids=None):
        if position_ids is not None:  # WINO: LLaDA's 4-D boolean mask and position ids
            self.inputs.append((x.clone(), attention_mask.clone(), position_ids.clone()))
            return SimpleNamespace(logits=self.model(x, attention_mask, position_ids))
        self.inputs.append((x.clone(), None, None))  # MDPO: its all-ones (1, N) mask changes nothing
        return SimpleNamespace(logits=self.model(x))

    def logits(self, x):
        """The re-implementation's convention for MDPO: ids -> logits."""
        return self(x).logits


def same_inputs(a: Recorder, b: Recorder) -> bool:
    def eq(u, v):
        return (u is None and v is None) or (u is not None and v is not None and torch.equal(u, v))
    return len(a.inputs) == len(b.inputs) and all(all(eq(u, v) for u, v in zip(p, q))
                                                  for p, q in zip(a.inputs, b.inputs))


def mdpo_cases():
    prompts = [[5, 6, 7], [1, 2, 3, 4, 5, 6], [9]]
    grids = [(64, 24, 64), (64, 32, 64), (64, 24, 32), (64, 32, 32), (48, 12, 16), (32, 32, 32), (32, 5, 32)]
    for seed, scale in ((0, 3.0), (1, 4.0), (2, 30.0), (3, 60.0)):
        for prompt in prompts:
            for gen, steps, block in grids:
                for top_p in (None, 0.95):
                    yield dict(seed=seed, scale=scale, prompt=prompt, gen=gen, steps=steps, block=block, top_p=top_p)


def crosscheck_mdpo(root: Path) -> tuple[int, int]:
    sys.path.insert(0, str(root))
    original = load(root / "src" / "mdlm_generation_utils.py", "mdpo_original").diffusion_generate
    total = same = 0
    for case in mdpo_cases():
        model = NoMaskTiny(seed=case["seed"], scale=case["scale"])
        theirs, ours = Recorder(model), Recorder(model)
        prompt = torch.tensor([case["prompt"]])
        x, _, _, _ = original(theirs, prompt, mask_id=0, steps=case["steps"], gen_length=case["gen"],
                              block_length=case["block"], temperature=0.0, conf_alg="llada", rcr=True,
                              top_p=case["top_p"])
        tokens, _ = rcr_generate(ours.logits, case["prompt"], mask_id=0, steps=case["steps"], gen_length=case["gen"],
                                 block_length=case["block"], top_p=case["top_p"])
        total += 1
        ok = x[0].tolist() == tokens and same_inputs(theirs, ours)
        same += ok
        if not ok:
            print("  mdpo differs:", case)
    return total, same


def crosscheck_wino(root: Path) -> tuple[int, int]:
    original = load(root / "LLaDA" / "decoding.py", "wino_original").decoding_wino
    total = same = 0
    for seed, scale in ((0, 3.0), (1, 5.0), (2, 8.0), (3, 2.0)):
        for prompt in ([5, 6, 7], [1, 2, 3, 4, 5, 6], [9]):
            for gen, block in ((32, 32), (64, 32), (48, 16), (64, 64)):
                for threshold, back in ((0.6, 0.9), (0.5, 0.8), (0.3, 0.95), (0.9, 0.5)):
                    model = AttentionTiny(seed=seed, scale=scale)
                    theirs, ours = Recorder(model), Recorder(model)
                    x, steps = original(theirs, torch.tensor([prompt]), gen_length=gen, block_length=block,
                                        temperature=0.0, mask_id=0, threshold=threshold, threshold_back=back)
                    tokens, run = wino_generate(ours, prompt, gen_length=gen, block_length=block, mask_id=0,
                                                threshold=threshold, threshold_back=back)
                    total += 1
                    ok = x[0, len(prompt):].tolist() == tokens and int(steps) == run.steps and same_inputs(theirs, ours)
                    same += ok
                    if not ok:
                        print("  wino differs:", seed, scale, prompt, gen, block, threshold, back)
    return total, same


def crosscheck_d3llm(root: Path) -> tuple[int, int]:
    original = load(root / "AUP_leaderboard" / "aup_utils.py", "d3llm_original").get_aup
    rng = random.Random(0)
    curves = []
    for _ in range(2000):
        n = rng.randint(1, 7)
        rho = [round(rng.uniform(0.5, 8), rng.choice([1, 4])) for _ in range(n)]
        y = [round(rng.uniform(0, 100), rng.choice([0, 2])) for _ in range(n)]
        curves.append((rho, y, max(y + [1.0]) + rng.choice([0, 5])))
    stored = json.loads((REPO / "dllm_viz" / "assets" / "tasks" / "curves.json").read_text())
    for family in stored["families"].values():
        for part in ("model", "oracle"):
            for group in (family[part], family["revision"][part]):
                for pts in group.values():
                    pts = [p for p in pts if p["forwards"]]
                    curves.append(([p["tpf"] for p in pts], [100 * p["rate"] for p in pts], 100.0))
    total = same = 0
    for rho, y, y_max in curves:
        def outcome(fn, refusal):
            try:
                with redirect_stdout(io.StringIO()):
                    return ("score", fn(rho, y, y_max))
            except refusal:
                return ("refused", None)
        a, b = outcome(original, AssertionError), outcome(get_aup, Refused)
        total += 1
        ok = a[0] == b[0] and (a[1] is None or math.isclose(a[1], b[1], rel_tol=0, abs_tol=1e-9))
        same += ok
        if not ok:
            print("  d3llm differs:", rho, y, y_max, a, b)
    return total, same


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mdpo", type=Path, help="a checkout of autonomousvision/mdpo")
    parser.add_argument("--wino", type=Path, help="a checkout of Feng-Hong/WINO-DLLM")
    parser.add_argument("--d3llm", type=Path, help="a checkout of hao-ai-lab/d3LLM")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    failed = False
    for name, root, check in (("mdpo RCR", args.mdpo, crosscheck_mdpo), ("WINO", args.wino, crosscheck_wino),
                              ("d3LLM get_aup", args.d3llm, crosscheck_d3llm)):
        if root is None:
            print(f"{name}: no checkout given, skipped")
            continue
        total, same = check(root.expanduser())
        print(f"{name}: {same}/{total} cases identical")
        failed |= same != total
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
