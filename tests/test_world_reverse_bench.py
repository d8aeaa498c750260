"""bench/world_reverse.py: the diagnostic mask that shows a pronoun while its name is masked."""
from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

from world_reverse import PRONOUN_OFFSET, pronoun_visible  # noqa: E402

from dllm_viz import load_model  # noqa: E402
from dllm_viz.world import generate  # noqa: E402
from dllm_viz.world.language import FEMALE, MALE  # noqa: E402


def test_pronoun_visible_masks_names_and_shows_their_pronouns() -> None:
    tokenizer = load_model("world", device="cpu").tokenizer
    x = torch.tensor([tokenizer.encode("".join(s + "\n" for s in generate(4, seed)))[:80] for seed in range(3)])
    first = torch.zeros(tokenizer.vocab_size, dtype=torch.bool)
    first[[tokenizer.encode(n)[0] for n in FEMALE + MALE]] = True
    assert tokenizer.decode([int(x[0, PRONOUN_OFFSET])]).strip() in ("he", "she")  # the offset is the language's
    everything = torch.ones_like(x, dtype=torch.bool)
    shown = pronoun_visible(x, everything, first, 1.0, torch.Generator().manual_seed(0))
    starts = first[x[:, : x.shape[1] - PRONOUN_OFFSET]].nonzero()  # every name with its pronoun in the window
    assert len(starts) >= 6
    assert torch.equal((~shown).nonzero(), starts + torch.tensor([0, PRONOUN_OFFSET]))
    none = torch.zeros_like(everything)
    named = pronoun_visible(x, none, first, 1.0, torch.Generator().manual_seed(0))
    assert int(named.sum()) == 2 * len(starts)  # name and surname, nothing else
    assert torch.equal(pronoun_visible(x, none, first, 0.0, torch.Generator().manual_seed(0)), none)
