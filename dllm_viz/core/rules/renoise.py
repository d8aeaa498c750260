"""``renoise``: the renoising canvas of DiffusionGemma (docs/renoise.md): its knobs, its presets, where it comes from.

A renoising model never masks. A canvas of `canvas_length` tokens starts uniformly random; each step the
decoder reads it (with the previous step's logits as self-conditioning), the logits are divided by a
temperature falling linearly from `t_max` to `t_min`, a token is drawn at every position, the
lowest-entropy positions are accepted while ``sum(entropy) - max(entropy) <= entropy_bound`` and every
other position gets a fresh random token; the canvas ends when its argmax has been stable for
`stability_threshold` steps and the mean entropy is below `confidence_threshold`, or after
`max_denoising_steps`. Canvases follow one another, each read into the encoder's exact cache
(transformers 5.24, ``generation_diffusion_gemma.py``, ``DiffusionGemmaGenerationMixin.generate``; SGLang
0.5.23, ``python/sglang/srt/dllm/algorithm/gemma4_renoise.py``, ``Gemma4Renoise``). The loop is
`core.renoise_decoder`, its step's pure functions `core.renoise`; docs/renoise.md says how each part
follows its reference.

No knob chooses this canvas: the model does (`rules.canvas_of`, a `models.renoiser.Renoiser`), and
`decode` runs the renoising loop on it. The knobs below are `DecodeConfig` fields like any other (their
CLI flags, validation and page widgets derive from the specs); `gen_length` is the new tokens asked for
(`max_new_tokens`) and `seed` seeds the request's generator. A numeric knob left at None takes the
checkpoint's generation_config.json, else transformers' global defaults, as ``generate()`` resolves them;
the trace records the values that ran. On a masked model a renoise knob that is set is refused by name,
and on a renoise model every masked-only knob and rule (`rules.check_canvas`).

`acceptance_from` is the article's switch: transformers and SGLang rank acceptance by the entropy of the
*tempered* logits ("tempered", as shipped); "raw" ranks by the raw logits' entropy, the source article's
rule for masked models (temperature shapes only what is drawn).

Example (SGLang's defaults; the acceptance of four positions with entropies 0.05, 0.9, 0.02, 0.04 nats
under the bound 0.1: sorted, the sums before each are 0, 0.02, 0.06, 0.11, so three are accepted):

>>> from dllm_viz import DecodeConfig
>>> config = DecodeConfig.preset("gemma4_renoise", 256)
>>> config.entropy_bound, config.t_max, config.t_min, config.max_denoising_steps, config.acceptance_from
(0.1, 0.8, 0.4, 48, 'tempered')
>>> import torch
>>> from dllm_viz.core.renoise import entropy_bound_accept
>>> entropy_bound_accept(torch.tensor([[0.05, 0.9, 0.02, 0.04]]), torch.tensor([0.1], dtype=torch.float64)).tolist()
[[True, False, True, True]]
>>> DecodeConfig(entropy_bound=0.0)
Traceback (most recent call last):
...
ValueError: entropy_bound=0.0 is invalid: expected a finite number in (0.0, 3.40282e+38]
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dllm_viz.core.knobs import MAX_BUDGET, Knob
from dllm_viz.core.rules.base import Canvas, Citation, ShippedPreset

ACCEPTANCE_FROM = ("tempered", "raw")  # where the entropy that acceptance ranks by comes from
MAX_CANVAS = 2**16  # tokens per canvas (the released checkpoint's is 256)

TRANSFORMERS_FILE = "src/transformers/models/diffusion_gemma/generation_diffusion_gemma.py"
SGLANG_FILE = "python/sglang/srt/dllm/algorithm/gemma4_renoise.py"
# transformers' global defaults for unset generation parameters
# (`DiffusionGemmaGenerationConfig._get_default_generation_params`, 5.24); a checkpoint's
# generation_config.json overrides them (the adapter reads it, `models.diffusion_gemma`).
TRANSFORMERS_DEFAULTS: Mapping[str, Any] = {
    "max_new_tokens": 256, "max_denoising_steps": 48, "entropy_bound": 0.1, "t_min": 0.4, "t_max": 0.8,
    "stability_threshold": 1, "confidence_threshold": 0.005,
}
# SGLang's: `Gemma4Renoise.__init__` reads each from the server's algorithm config, with these defaults beside the
# reads (`max_denoising_steps`, `sampler_config.entropy_bound`, `temperature_schedule.t_min/t_max`,
# `stopping_config.confidence_threshold/stability_threshold`); the canvas is the checkpoint's.
SGLANG_DEFAULTS: Mapping[str, Any] = {
    "max_denoising_steps": 48, "entropy_bound": 0.1, "t_min": 0.4, "t_max": 0.8, "stability_threshold": 1,
    "confidence_threshold": 0.005,
}


def _at_least_t_min(value: float | None, config: Any) -> str | None:
    t_min = getattr(config, "t_min", None)
    if value is not None and t_min is not None and value < t_min:
        return f"a finite number >= t_min={t_min!r} and > 0 (the temperature falls from t_max to t_min)"
    return None


_FROM = "; None: the checkpoint's generation config, else transformers' default"
KNOBS: tuple[Knob, ...] = (
    Knob(name="entropy_bound", kind="float", default=None, optional=True, lo_open=True,
         slider=(0.01, 8.0, 0.01),
         help="renoise: accept the lowest-entropy positions while the sum of their entropies less the largest is "
              f"at most this (nats, > 0; larger accepts more per step){_FROM} (0.1)"),
    Knob(name="t_min", kind="float", default=None, optional=True, slider=(0.0, 2.0, 0.01),
         help=f"renoise: the temperature the linear schedule falls towards (>= 0){_FROM} (0.4)"),
    Knob(name="t_max", kind="float", default=None, optional=True, lo_open=True, relation=_at_least_t_min,
         slider=(0.01, 2.0, 0.01),
         help=f"renoise: the temperature at a canvas's first step (> 0, >= t_min; equal: a flat temperature)"
              f"{_FROM} (0.8)"),
    Knob(name="max_denoising_steps", kind="int", default=None, optional=True, lo=1, hi=MAX_BUDGET,
         slider=(1, 128, 1), help=f"renoise: steps per canvas at most (the stop rule may end it sooner){_FROM} (48)"),
    Knob(name="stability_threshold", kind="int", default=None, optional=True, lo=0, hi=MAX_BUDGET, slider=(0, 8, 1),
         help="renoise: the stop needs the argmax canvas equal to the last this many (0: always stable)"
              f"{_FROM} (1)"),
    Knob(name="confidence_threshold", kind="float", default=None, optional=True, slider=(0.0, 2.0, 0.001),
         help="renoise: ... and the mean entropy of the tempered logits below this (nats; 0: never confident, the "
              f"step budget ends every canvas){_FROM} (0.005)"),
    Knob(name="canvas_length", kind="int", default=None, optional=True, lo=1, hi=MAX_CANVAS, slider=(1, 512, 1),
         help="renoise: tokens per canvas; None: the checkpoint's config.canvas_length"),
    Knob(name="acceptance_from", kind="choice", default=None, optional=True, choices=ACCEPTANCE_FROM,
         help='renoise: the entropy acceptance ranks by: "tempered" (transformers, SGLang) or "raw" (the '
              "article's rule: temperature shapes only what is drawn); None: tempered, as shipped"),
)
NUMERIC = tuple(k.name for k in KNOBS if k.kind in ("int", "float") and k.name != "canvas_length")


def _as_transformers(gen_length: int) -> dict[str, Any]:
    # generate() with no arguments: every setting from the checkpoint's generation_config.json, else
    # transformers' global defaults (resolved against the model when the decode starts).
    return {name: None for name in (*NUMERIC, "canvas_length")} | {"acceptance_from": "tempered"}


def _as_sglang(gen_length: int) -> dict[str, Any]:
    # Gemma4Renoise with an empty algorithm config: its defaults, the checkpoint's canvas.
    return dict(SGLANG_DEFAULTS, canvas_length=None, acceptance_from="tempered")


RULE = Canvas(
    name="renoise", order=0, canvases=("renoise",), knobs=KNOBS, default_preset="diffusion_gemma",
    shown={**{k: v for k, v in TRANSFORMERS_DEFAULTS.items() if k != "max_new_tokens"},
           "canvas_length": 256},  # the released checkpoint's canvas
    summary="renoising canvas: uniform noise, entropy-bounded acceptance, the rest renoised each step",
    cite=Citation(repo="huggingface/transformers", file=TRANSFORMERS_FILE,
                  function="DiffusionGemmaGenerationMixin.generate", paper="arXiv 2505.24857 (the EB-sampler)"),
    presets={
        "diffusion_gemma": ShippedPreset(
            source=f"huggingface/transformers 5.24, {TRANSFORMERS_FILE}, DiffusionGemmaGenerationMixin.generate",
            note="the checkpoint's generation_config.json, else 48 steps, bound 0.1, t 0.8 -> 0.4, stability 1, "
                 "confidence 0.005; acceptance by the tempered entropy",
            fields=_as_transformers),
        "gemma4_renoise": ShippedPreset(
            source=f"sgl-project/sglang 0.5.23, {SGLANG_FILE}, Gemma4Renoise",
            note="48 steps, bound 0.1, t 0.8 -> 0.4, stability 1, confidence 0.005 (SGLang's defaults, not the "
                 "checkpoint's); acceptance by the tempered entropy",
            fields=_as_sglang),
    },
    served="the dllm-viz SGLang plugin steps masked blocks; SGLang runs DiffusionGemma with its own algorithm "
           "(--dllm-algorithm Gemma4Renoise, settings in --dllm-algorithm-config: max_denoising_steps, "
           "sampler_config.entropy_bound, temperature_schedule.t_min/t_max, stopping_config.*)",
)
