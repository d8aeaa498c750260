"""views/verify.py: the run facts of a decode whose forwards are not its steps."""
from __future__ import annotations

import pytest

from dllm_viz import DecodeConfig, decode, load_model
from dllm_viz.app.views.verify import verify_facts


@pytest.fixture(scope="module")
def world():
    return load_model("world")


def test_the_run_facts_say_how_wino_verified_and_the_nfe_the_engine_counts(world):
    """WINO as shipped: every forward carried its shadow block; ours (`wino_canvases`): the canvases its verify
    computed, one per decided position of the block at each verifying step; ReMDM's sampler: its NFE beside
    the steps (the steps that reused p_x0 ran no forward)."""
    shadow, canvases, remdm = decode(world, ["Tom Lopez of"] * 3,
                                     [DecodeConfig.preset("wino", 24, threshold=0.9),
                                      DecodeConfig.preset("wino_canvases", 24, threshold=0.9),
                                      DecodeConfig.preset("remdm", 24, seed=1)])
    assert verify_facts(shadow) == [("f_verify_shadow", str(len(shadow.steps)))]
    facts = dict(verify_facts(canvases))
    assert int(facts["f_nfe"]) == canvases.nfe > len(canvases.steps) and int(facts["f_verify_canvases"]) > 0
    assert dict(verify_facts(remdm)).get("f_nfe") == str(remdm.nfe) and remdm.nfe < len(remdm.steps)
