"""The presets: the article's tuning table, and reference implementations' own rules "as shipped".

`DecodeConfig.preset(name, gen_length)` reads these: `PRESETS` (the article's section 4.2, each a
topk_decay setting), `SHIPPED_PRESETS` (the samplers LLaDA, Dream and Fast-dLLM ship) and
`REVISION_PRESETS` (the shipped rules that need a revision rule or a strict threshold, and every
preset a schedule or revision plug-in brings: `core.rules.PRESETS`) and `CANVAS_PRESETS` (those a canvas
plug-in brings, for its models only: DiffusionGemma's transformers and SGLang defaults). docs/shipped_samplers.md says
where each shipped one sits in the article's list of mistakes and what is not reproduced.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dllm_viz.core import rules
from dllm_viz.core.rules.base import ShippedPreset

__all__ = ["CANVAS_PRESETS", "PRESETS", "Preset", "REVISION_PRESETS", "SHIPPED_PRESETS", "ShippedPreset"]


@dataclass(frozen=True, kw_only=True)
class Preset:
    """One row of the article's tuning table (section 4.2); values are the middle of each range."""

    temperature: float  # sampling temperature at the confirmed positions
    top_k_divisor: int  # initial top_k = gen_length // top_k_divisor
    decay: float  # k <- floor(k * decay) after each step
    note: str  # the article's one-line advice


PRESETS: dict[str, Preset] = {
    "quality": Preset(temperature=0.7, top_k_divisor=6, decay=0.95, note="slow but steady"),
    "balanced": Preset(temperature=1.0, top_k_divisor=4, decay=0.9, note="recommended default"),
    "speed": Preset(temperature=1.35, top_k_divisor=3, decay=0.85, note="fast, may repeat"),
    "creative": Preset(temperature=1.45, top_k_divisor=5, decay=0.92, note="diversity first"),
}



def _llada(gen_length: int) -> dict[str, Any]:
    # generate(steps=128, gen_length=128, block_length=128, temperature=0., remasking="low_confidence"):
    # one block, one confirmation per step, rank by the raw probability of the Gumbel-max draw.
    return dict(schedule="fixed_steps", steps=max(1, gen_length), temperature=0.0, confidence="max_prob",
                confidence_from="sampled_raw", sample_scope="all")


def _dream(gen_length: int) -> dict[str, Any]:
    # diffusion_generate(steps=max_new_tokens, temperature=0.2, top_p=0.95) as the model card's example,
    # alg="maskgit_plus": rank by the tempered, top-p-filtered probability of the drawn token; the
    # number unmasked per step follows linspace(1, eps, steps + 1) (schedule "linear_time").
    return dict(schedule="linear_time", steps=max(1, gen_length), temperature=0.2, top_p=0.95,
                confidence="max_prob", confidence_from="sampled", sample_scope="all")


def _fast_dllm(gen_length: int) -> dict[str, Any]:
    # generate(..., threshold=0.9) with block_length=32 (v1/llada/eval_*.sh), temperature 0: LLaDA's
    # draw and raw probability, then every position of the block at >= 0.9, at least one per step.
    block = 32 if gen_length > 32 and gen_length % 32 == 0 else None  # one block when 32 does not divide
    return dict(schedule="threshold", threshold=0.9, min_k=1, block_length=block, temperature=0.0,
                confidence="max_prob", confidence_from="sampled_raw", sample_scope="all")


SHIPPED_PRESETS: dict[str, ShippedPreset] = {
    "llada": ShippedPreset(
        source="ML-GSAI/LLaDA, generate.py, generate() with remasking='low_confidence'",
        note="draw everywhere (Gumbel-max on logits / T), rank by the RAW probability of the drawn token",
        fields=_llada,
    ),
    "dream": ShippedPreset(
        source="Dream-org/Dream-v0-Instruct-7B, generation_utils.py, DreamGenerationMixin._sample and "
               "sample_tokens with alg='maskgit_plus'",
        note="temperature and top-p first, rank by the TEMPERED, filtered probability of the drawn token",
        fields=_dream,
    ),
    "fast_dllm": ShippedPreset(
        source="NVlabs/Fast-dLLM, llada/generate.py, get_transfer_index() with threshold=0.9",
        note="LLaDA's draw, then every position whose raw probability of the draw >= 0.9, at least one",
        fields=_fast_dllm,
    ),
}


def _blocks_of(gen_length: int, size: int) -> int | None:
    """`size` when it splits gen_length into several blocks, else None (one block)."""
    return size if gen_length > size and gen_length % size == 0 else None


def _sglang_low_confidence(gen_length: int) -> dict[str, Any]:
    # LowConfidence(threshold=0.95) on LLaDA2's 32-position blocks: argmax; every mask of the block whose
    # softmax probability > 0.95, else the most probable one.
    return dict(schedule="threshold", threshold=0.95, threshold_strict=True, min_k=1,
                block_length=_blocks_of(gen_length, 32), temperature=0.0, confidence="max_prob",
                confidence_from="softmax")


def _llada21(gen_length: int) -> dict[str, Any]:
    # JointThreshold's defaults (threshold 0.5, edit_threshold 0, max_post_edit_steps 16, penalty_lambda 0)
    # on LLaDA2's 32-position blocks: masks above 0.5 (at least one), plus every visible token whose argmax
    # differs, until a step changes nothing or 16 edit-only steps are spent.
    return dict(_sglang_low_confidence(gen_length), threshold=0.5, revise="joint_threshold", edit_threshold=0.0,
                max_post_edit_steps=16, penalty_lambda=0.0)


def _wino(gen_length: int) -> dict[str, Any]:
    # decoding_wino(threshold=0.6, threshold_back=0.9, temperature=0., block_length=128): LLaDA's draw and raw
    # probability, every mask above 0.6 (at least one, at most WINO's cap), drafts below 0.9 taken back; the
    # verify read from WINO's shadow block in the step's one forward, in float64, with WINO's ties.
    return dict(schedule="threshold", threshold=0.6, threshold_strict=True, min_k=1,
                block_length=_blocks_of(gen_length, 128), temperature=0.0, confidence="max_prob",
                confidence_from="sampled_raw", sample_scope="all", revise="wino", verify_threshold=0.9,
                verify_pass="shadow")


def _wino_canvases(gen_length: int) -> dict[str, Any]:
    # Ours: WINO's draft and take-back with a verify pass of its own, one canvas per decided position.
    return dict(_wino(gen_length), verify_pass="canvases")


def _remdm(gen_length: int) -> dict[str, Any]:
    # scripts/remdm-loop.sh: sampling.steps = the length, nucleus 0.9, eta 0.02, t_on 0.55, t_off 0.05, alpha_on
    # 0.9; the rule runs ReMDM's own loop by time, a coin per position (the schedule's `steps` is its budget).
    return dict(schedule="fixed_steps", steps=max(1, gen_length), temperature=1.0, top_p=0.9, revise="remdm_shipped",
                remask_sigma="loop", remask_eta=0.02, remask_alpha_on=0.9, remask_t_on=0.55, remask_t_off=0.05)


def _remdm_counted(gen_length: int) -> dict[str, Any]:
    # Ours, in counts: eta 0.02, alpha_on 0.9, nucleus 0.9 at T = 1, half the steps in the loop (t_on 0.55,
    # t_off 0.05); MDLM's random unmasking (confidence "random") on its log-linear schedule, whose expected
    # counts are linear_time's.
    steps = max(1, gen_length // 2)
    return dict(schedule="linear_time", steps=steps, temperature=1.0, top_p=0.9, confidence="random",
                revise="remdm", remask_sigma="loop", remask_eta=0.02, remask_alpha_on=0.9,
                remask_loop_steps=max(0, gen_length - steps))


def _rcr(gen_length: int) -> dict[str, Any]:
    # test_llada.py --rcr: diffusion_generate(steps, block_length=gen_length, temperature=0, top_p=0.95) with
    # the maximum probability (conf_alg "origin") and MaskGIT's linear split (mode "linear"), half as many
    # steps as positions; the rule runs MDPO's own loop (the step budget is the schedule's `steps`).
    return dict(schedule="fixed_steps", steps=max(1, gen_length // 2), temperature=0.0, confidence="max_prob",
                top_p=0.95, revise="rcr_shipped")


def _rcr_counted(gen_length: int) -> dict[str, Any]:
    # dllm-viz's own RCR in counts: the decided tokens of the current block compete with its masks, LLaDA's
    # even split of the steps, two positions per step.
    return dict(schedule="fixed_steps", steps=max(1, gen_length // 2), temperature=0.0, confidence="max_prob",
                revise="rcr")


# Shipped rules that need a strict threshold or a revision rule, then those the rule plug-ins bring
# (`core.rules.PRESETS`, in plug-in order). The page shows them after SHIPPED_PRESETS in its "as shipped" row.
REVISION_PRESETS: dict[str, ShippedPreset] = {
    "llada21": ShippedPreset(
        source="sgl-project/sglang 0.5.23, python/sglang/srt/dllm/algorithm/joint_threshold.py, "
               "JointThreshold.step (LLaDA 2.1's decoding)",
        note="masks whose probability > 0.5 (at least one) and every visible token whose argmax differs, "
             "up to 16 edit-only steps per block; needs a model that can edit",
        fields=_llada21,
    ),
    "sglang_low_confidence": ShippedPreset(
        source="sgl-project/sglang 0.5.23, python/sglang/srt/dllm/algorithm/low_confidence.py, LowConfidence.step",
        note="argmax; every mask of the block whose probability > 0.95, else the most probable one",
        fields=_sglang_low_confidence,
    ),
    "wino": ShippedPreset(
        source="Feng-Hong/WINO-DLLM, LLaDA/decoding.py, decoding_wino()",
        note="draft every mask above 0.6 (capped), take back drafts whose verify probability < 0.9, read from "
             "the shadow block in the step's one forward",
        fields=_wino,
    ),
    "wino_canvases": ShippedPreset(
        source="dllm-viz's own verify pass (ours): dllm_viz/models/base.py logits_hidden, around "
               "Feng-Hong/WINO-DLLM's decoding_wino()",
        note="ours: WINO's draft and take-back, verified by a pass of its own, one canvas per decided position "
             "(two forwards a step)",
        fields=_wino_canvases,
    ),
    "remdm": ShippedPreset(
        source="kuleshov-group/remdm, diffusion.py, Diffusion._ddpm_caching_update with sampler='remdm-loop' "
               "(scripts/remdm-loop.sh)",
        note="a coin per position by time: MDLM until t = 0.55, a loop that re-masks each token with probability "
             "0.02 until 0.05, MDLM to the end, then noise removal; the coins from the request's own generator",
        fields=_remdm,
    ),
    "remdm_counted": ShippedPreset(
        source="dllm-viz's own rule (ours): dllm_viz/core/rules/remdm.py, after kuleshov-group/remdm's "
               "diffusion.py (remdm-loop)",
        note="ours, in counts: MDLM's random unmasking; at 90% visible, a loop that re-masks each token with "
             "probability 0.02 and confirms as many",
        fields=_remdm_counted,
    ),
    "rcr": ShippedPreset(
        source="autonomousvision/mdpo, src/mdlm_generation_utils.py, diffusion_generate(rcr=True) "
               "(test_llada.py --rcr: top_p 0.95)",
        note="MaskGIT's split; one running confidence over the whole sequence: each step fills the most "
             "confident masks and re-masks the lowest; the prompt stays as given (MDPO may re-mask it at ties)",
        fields=_rcr,
    ),
    "rcr_counted": ShippedPreset(
        source="dllm-viz's own rule (ours): dllm_viz/core/rules/rcr.py, after autonomousvision/mdpo's "
               "diffusion_generate(rcr=True)",
        note="ours, in counts: the current block's decided tokens compete with its masks by the confidence "
             "they were decided with; the weakest are re-masked; LLaDA's split",
        fields=_rcr_counted,
    ),
    **{name: p for name, p in rules.PRESETS.items() if name not in rules.CANVAS_PRESETS},
}
# The presets of the canvases that are not masked (a renoising model's), by canvas plug-in: "as shipped" too, on
# their own models only (`rules.check_canvas` refuses them elsewhere).
CANVAS_PRESETS: dict[str, ShippedPreset] = dict(rules.CANVAS_PRESETS)
