"""Where the confidence a schedule ranks by comes from (`DecodeConfig.confidence_from`, step (2)).

The article's rule is ``raw``: the measure on softmax(logits). The others are the teaching switches
and the shipped samplers' own sources (`core.knobs.CONFIDENCE_FROM` says what each is). Each source
is `(raw_conf (A, G), x: Packed, params: StepParams, drawn: Drawn | None) -> (A, G)`; the two that
follow a reference's own float ops live beside that reference (`core.references`).
"""
from __future__ import annotations

from typing import Any, Callable

import torch

from dllm_viz.core import sampling
from dllm_viz.core.knobs import CONFIDENCE_FROM
from dllm_viz.core.packed import Drawn, Packed
from dllm_viz.core.references.llada import sampled_raw
from dllm_viz.core.references.sglang import softmax_confidence
from dllm_viz.core.scoring import Distribution, score

SOURCE_IDS = {name: i for i, name in enumerate(CONFIDENCE_FROM)}


def raw(raw_conf: torch.Tensor, x: Packed, params: Any, drawn: Drawn | None) -> torch.Tensor:
    """The measure on the raw distribution: the article's rule."""
    return raw_conf


def tempered(raw_conf: torch.Tensor, x: Packed, params: Any, drawn: Drawn | None) -> torch.Tensor:
    """The same measure on softmax(logits / T): the article's "polluted confidence" (2.2, 5.1)."""
    dist = Distribution(x.logits / x.temperature.clamp(min=1e-4).view(-1, 1, 1), top=2)
    return x.unpack(score(dist, x.measure_id, x.noise[1].unsqueeze(1), set(params.measures)))


def sampled(raw_conf: torch.Tensor, x: Packed, params: Any, drawn: Drawn | None) -> torch.Tensor:
    """The probability of the drawn token under the tempered, filtered sampling distribution
    (Dream's ``maskgit_plus``); at T = 0 the filtered, untempered one, whose argmax was drawn."""
    assert drawn is not None  # the config validator ties this source to sample_scope="all"
    return drawn.prob


def filtered(raw_conf: torch.Tensor, x: Packed, params: Any, drawn: Drawn | None) -> torch.Tensor:
    """The measure on the tempered, top-k/top-p-filtered distribution (Dream's ``topk_margin``,
    ``entropy``; with max_prob, Dream's ``maskgit_plus`` at T = 0)."""
    processed = sampling.process(x.logits[:, 0], x.temperature, x.vocab_top_k, x.top_p)  # (M, V)
    dist = Distribution(processed.unsqueeze(1), top=2)
    return x.unpack(score(dist, x.measure_id, x.noise[1].unsqueeze(1), set(params.measures)))


Source = Callable[[torch.Tensor, Packed, Any, "Drawn | None"], torch.Tensor]
SOURCES: dict[str, Source] = {"raw": raw, "tempered": tempered, "sampled": sampled, "sampled_raw": sampled_raw,
                              "filtered": filtered, "softmax": softmax_confidence}
if tuple(SOURCES) != CONFIDENCE_FROM:
    raise ImportError(f"confidence source registry {tuple(SOURCES)} != knobs.CONFIDENCE_FROM {CONFIDENCE_FROM}")


def confidence_for(raw_conf: torch.Tensor, x: Packed, params: Any, drawn: Drawn | None) -> torch.Tensor:
    """The confidence each row's schedule ranks by, `(A, G)`: `raw_conf` unless its source says otherwise."""
    conf = raw_conf
    for name in params.sources - {"raw"}:
        rows = (params.source_id == SOURCE_IDS[name]).unsqueeze(-1)  # (A, 1)
        conf = torch.where(rows, SOURCES[name](raw_conf, x, params, drawn), conf)
    return conf
