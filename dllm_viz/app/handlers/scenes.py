"""Ready-made scenes: each revision rule as shipped, on a prompt and seed where it visibly takes back or rewrites.

On the page's own prompt two of the rules do nothing to see (WINO's verify keeps every draft,
the edit-trained world model has nothing to rewrite at argmax), so a scene names the model, the
prompt, the gen length and the seed where the rule acts, found by decoding the world model's
prompts over seeds (`tests/test_scenes.py` checks that each still does). A scene button sets all of
it, then decodes once; the banner counts what was taken back. `SCENES` is the table; nothing else
in the page names a scene.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dllm_viz.core.config import DecodeConfig


@dataclass(frozen=True)
class Scene:
    """One rule at work: the preset as shipped (`DecodeConfig.preset`), with `overrides`, on `model`."""

    preset: str
    model: str  # the model's name, as traces record it
    prompt: str
    gen_length: int
    seed: int
    overrides: dict[str, Any] = field(default_factory=dict)  # beyond the preset (a scene that needs a draw)

    def config(self) -> DecodeConfig:
        return DecodeConfig.preset(self.preset, self.gen_length, seed=self.seed, **self.overrides)


# key -> scene; the page's button label is the i18n string `scene_<key>`.
# Found over the world prompts (and a few more) x seeds 0-7 x gen lengths 48 and 64; what each took back
# or rewrote there is in the comment (tests/test_scenes.py holds each to at least one).
SCENES: dict[str, Scene] = {
    # WINO as shipped reads its verify from the shadow block in the step's one forward: on these prompts it keeps
    # every draft at its verify threshold of 0.9; at 0.99 it takes back 5 (T = 0: any seed).
    "wino": Scene("wino", "world-mdlm", "Ana", 48, 0, {"verify_threshold": 0.99}),
    "remdm": Scene("remdm", "world-mdlm", "Tom Lopez of", 64, 7),  # 38 taken back by its loop
    "rcr": Scene("rcr", "world-mdlm", "Tom Lopez of", 64, 0),  # 16 taken back
    # As shipped (argmax) the edit-trained model rewrites at most one token on these prompts; drawing at
    # T = 1 gives it wrong tokens to rewrite (9 here).
    "llada21": Scene("llada21", "world-mdlm", "Dan", 48, 5, {"temperature": 1.0}),
}
