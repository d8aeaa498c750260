"""Trace identity across refactors: decode a large grid and digest every trace, before and after.

A refactor of the step core (the knob specs, the rule plug-ins, the reference quirks moved beside
the step) must not change one token, one selection or one recorded float. This script decodes a
grid of configs on four models (the embedded Austen model, the world model, the tasks model, and
replayed logits in float32 and in bfloat16 with ties) and writes, per trace, a digest of everything
the trace records but the clock: tokens, order, selections, every step's floats at full precision
(the 6-decimal rounding of the record is switched off while the grid runs), revision fields, cache
fields. Beside the traces: the SGLang plugin's adapter on scripted logits, the validation messages
of bad configs, and the policy mapping of each config (where one exists).

    python scripts/trace_identity.py --save /tmp/identity-before.json   # on the untouched tree
    python scripts/trace_identity.py --check /tmp/identity-before.json  # after a change: all identical

The grid (`cases`): every schedule with every confidence measure at T = 0 and 1; every confidence
source; every revision rule and ReMDM sigma variant with every schedule, with and without blocks,
one rule per batch and mixed; every preset (the article's table, the shipped samplers, the revision
presets); blocks with k continued or restarted; the early stop; staged temperature, top-p, top-k,
the shared RNG, the strict threshold; the prefix and dual caches with refreshes and the drift
diagnostic; and mixed batches of all of them. A config a model refuses is recorded with its error.
Mappings (policies) are compared on the keys the saved file has: a key added later is reported,
not failed.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dllm_viz import DecodeConfig, decode, load_model  # noqa: E402
from dllm_viz.core import rules  # noqa: E402
from dllm_viz.core import trace as trace_module  # noqa: E402
from dllm_viz.core.config import (  # noqa: E402
    CONFIDENCE_FROM, CONFIDENCES, PRESETS, REVISION_PRESETS, SHIPPED_PRESETS,
)

# The grid's schedules and rules as the untouched tree had them (a plug-in added later gets its own groups,
# `later`, so that the saved keys keep meaning the same configs).
SCHEDULES = ("topk_decay", "fixed_steps", "threshold", "adaptive", "linear_time")
FIRST_PRESETS = ("quality", "balanced", "speed", "creative", "llada", "dream", "fast_dllm", "llada21",
                 "sglang_low_confidence", "wino", "remdm", "rcr")

DRAWN = ("sampled", "sampled_raw")
RULES = (("none", None), ("remdm", "cap"), ("remdm", "rescale"), ("remdm", "conf"), ("remdm", "loop"), ("rcr", None),
         ("wino", None), ("joint_threshold", None))
TIMING = ("wall_time", "forward_time", "tokens_per_second", "seconds_saved")


# ----- models ----------------------------------------------------------------------------------
class Replayed:
    """Replayed logits: a seeded position table plus a term of the whole (unpadded) canvas and one of
    the token at each position, so the order of confirmation matters and hiding a token changes its
    logits (WINO's verify pass). `ties`: logits on a grid of 0.25 in bfloat16 (exact ties everywhere).
    The mask token (id 0) is the argmax at some positions (the references' young rows draw it), and some
    positions are certain (p = 1.0 in float32, where a strict threshold of 1 differs from >=)."""

    can_edit = True

    def __init__(self, *, dtype: torch.dtype = torch.float32, ties: bool = False, vocab: int = 40, length: int = 80,
                 seed: int = 0) -> None:
        g = torch.Generator().manual_seed(seed)
        self.table = torch.randn(length, vocab, generator=g) * 2.5  # (N, V)
        self.table[::5, 0] += 6.0  # the mask token leads at every fifth position
        self.table[3::7, 3] += 40.0  # and a certain token at every seventh: p = 1 in float32 (the strict threshold)
        self.mix = torch.randn(vocab, vocab, generator=g) * 0.4  # (V, V)
        self.mask_token_id, self.eos_token_id = 0, 1
        self.dtype, self.ties = dtype, ties
        self.max_length, self.vocab_size = length, vocab
        self.name = f"replayed-{'bf16-ties' if ties else str(dtype).split('.')[-1]}"

    def __call__(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        B, N = input_ids.shape
        w = torch.ones(B, N) if attention_mask is None else attention_mask.float()  # (B, N)
        own = self.mix[input_ids]  # (B, N, V)
        ctx = (own * w.unsqueeze(-1)).sum(1, keepdim=True) / w.sum(1).clamp(min=1).view(B, 1, 1)  # (B, 1, V)
        logits = self.table[:N].unsqueeze(0) + ctx + 0.5 * own  # (B, N, V)
        if self.ties:
            logits = torch.round(logits * 4) / 4
        return logits.to(self.dtype)


def models() -> dict[str, tuple[Any, list[str | list[int]], int]]:
    """name -> (model, prompts, gen_length)."""
    return {
        "austen": (load_model(), ["It is a truth universally acknowledged, that", "Elizabeth"], 16),
        "world": (load_model("world"), ["Tom Lopez of", "Mia Berg of New York has 3 cats and"], 24),
        "tasks": (load_model("tasks"), ["copy : b e a d =", "sort : k d h a f ="], 16),
        "replay32": (Replayed(), [[5, 6, 7], [9, 3]], 24),
        "replay_bf16": (Replayed(dtype=torch.bfloat16, ties=True, seed=1), [[5, 6, 7], [9, 3]], 24),
    }


# ----- the grid --------------------------------------------------------------------------------
def schedule_fields(schedule: str, G: int, block: int | None = None) -> dict[str, Any]:
    """The schedule's own knobs; a step budget is a multiple of the number of blocks."""
    nb = G // block if block else 1
    per = max(1, G // nb)
    return {"topk_decay": dict(top_k=max(1, G // 4), decay=0.8), "fixed_steps": dict(steps=nb * max(1, per // 3)),
            "threshold": dict(threshold=0.6), "adaptive": dict(top_k=max(1, G // 3)),
            "linear_time": dict(steps=nb * max(1, per // 2)), "eb": dict(gamma=0.3)}[schedule]


def rule_fields(rule: str, sigma: str | None) -> dict[str, Any]:
    fields: dict[str, Any] = {"revise": rule}
    if sigma is not None:
        fields.update(remask_sigma=sigma, remask_eta=0.3 if sigma != "loop" else 0.2, remask_alpha_on=0.6,
                      remask_loop_steps=3)
    if rule == "wino":
        fields["verify_threshold"] = 0.7
    if rule == "joint_threshold":
        fields.update(edit_threshold=0.1, max_post_edit_steps=3)
    return fields


Group = tuple[str, list[dict[str, Any]]]  # a batch: its label and each row's config fields


def groups(G: int, *, can_edit: bool, caches: bool, eos: bool) -> Iterator[Group]:
    """The batches to decode on one model, each a list of DecodeConfig fields (one per row)."""
    quarter, half = max(1, G // 4), max(1, G // 2)
    rows = [dict(schedule=s, confidence=c, temperature=t, seed=i, **schedule_fields(s, G))
            for i, (s, c, t) in enumerate((s, c, t) for s in SCHEDULES for c in CONFIDENCES for t in (0.0, 1.0))]
    yield from _chunks("schedules", rows, 20)
    rows = []
    for src in CONFIDENCE_FROM:
        for s in SCHEDULES:
            for t in (0.0, 0.8):
                rows.append(dict(schedule=s, confidence_from=src, temperature=t, seed=len(rows),
                                 sample_scope="all" if src in DRAWN else "selected",
                                 top_p=0.9 if len(rows) % 3 == 0 else None,
                                 vocab_top_k=5 if len(rows) % 4 == 1 else None, **schedule_fields(s, G)))
    yield from _chunks("sources", rows, 20)
    for rule, sigma in RULES:
        if rule == "joint_threshold" and not can_edit:
            continue
        for block in (None, quarter):
            rows = [dict(schedule=s, temperature=t, block_length=block, seed=7 * i + (block or 0),
                         **schedule_fields(s, G, block), **rule_fields(rule, sigma))
                    for i, (s, t) in enumerate((s, t) for s in SCHEDULES for t in (0.0, 1.0))]
            yield f"rule-{rule}-{sigma}-{block}", rows  # one rule in every row
    jt = [dict(revise="joint_threshold", schedule="threshold", threshold=th, threshold_strict=strict,
               edit_threshold=e, max_post_edit_steps=m, penalty_lambda=p, temperature=0.0, block_length=b)
          for th, strict, e, m, p, b in ((0.5, True, 0.0, 16, 0.0, quarter), (0.7, False, 0.3, 2, 0.5, None),
                                         (0.3, True, 0.0, 0, 1.5, half), (0.9, True, 0.5, 5, 0.0, quarter))]
    if can_edit:
        yield "joint_threshold_knobs", jt
    for name in FIRST_PRESETS:
        yield f"preset-{name}", [dict(preset=name, seed=s) for s in (0, 1)]
        yield f"preset-{name}-t", [dict(preset=name, seed=3, temperature=0.7)]
    rows = [dict(schedule=s, block_length=b, block_schedule=bs, temperature=1.0, seed=i, **schedule_fields(s, G, b))
            for i, (s, b, bs) in enumerate((s, b, bs) for s in SCHEDULES for b in (quarter, half)
                                           for bs in ("continue", "restart"))]
    yield from _chunks("blocks", rows, 20)
    if eos:
        rows = [dict(schedule=s, early_stop=True, early_stop_threshold=th, block_length=b, temperature=0.0, seed=i,
                     **schedule_fields(s, G, b))
                for i, (s, th, b) in enumerate((s, th, b) for s in SCHEDULES for th in (0.2, 0.9)
                                               for b in (None, quarter))]
        yield from _chunks("early_stop", rows, 20)
    misc = [
        dict(temperature_stages=(1.3, 1.0, 0.5)), dict(temperature_stages=(0.0, 0.5, 1.0), schedule="fixed_steps"),
        dict(temperature_stages=(1.2, 0.8, 0.0), schedule="threshold", threshold=0.5),
        dict(top_p=0.5, temperature=1.2), dict(vocab_top_k=3, temperature=1.5), dict(vocab_top_k=1, top_p=0.2),
        dict(rng="shared", seed=4), dict(rng="shared", seed=5), dict(min_k=2, schedule="threshold", threshold=0.95),
        dict(min_k=3, schedule="adaptive", top_k=5), dict(top_k=1, decay=1.0), dict(decay=0.5, top_k=G),
        dict(schedule="threshold", threshold=0.5, threshold_strict=True),
        dict(schedule="threshold", threshold=0.25, threshold_strict=True, temperature=0.0),
        dict(schedule="threshold", threshold=1.0, threshold_strict=True, confidence_from="softmax"),
        dict(schedule="fixed_steps", steps=G), dict(schedule="linear_time", steps=1),
        dict(schedule="fixed_steps", steps=1),
        dict(confidence="random", temperature=0.0),
        dict(confidence="margin", confidence_from="tempered", temperature=2.0),
        dict(gen_length=0), dict(gen_length=1), dict(gen_length=3, schedule="linear_time", steps=3),
    ]
    yield "misc", [{"seed": i, **m} for i, m in enumerate(misc)]
    if caches:
        rows = []
        for cache in ("prefix", "dual"):
            for refresh in (None, 2):
                for drift in (False, True):
                    for s in SCHEDULES:
                        rows.append(dict(cache=cache, cache_refresh=refresh, cache_drift=drift, schedule=s,
                                         block_length=quarter, temperature=0.0 if drift else 1.0, seed=len(rows),
                                         **schedule_fields(s, G, quarter)))
        rows.append(dict(cache="prefix", block_length=None, schedule="threshold", threshold=0.7))
        yield from _chunks("cache", rows, 20)


def later(G: int, *, can_edit: bool) -> Iterator[Group]:
    """Groups of what was added after the first saved digests (new keys: reported, never compared)."""
    quarter = max(1, G // 4)
    rows = [dict(schedule="eb", gamma=g, temperature=t, confidence=c, block_length=b, seed=i)
            for i, (g, t, c, b) in enumerate((g, t, c, b) for g in (0.0, 0.15, 1.0) for t in (0.0, 1.0)
                                              for c in ("entropy", "max_prob") for b in (None, quarter))]
    yield from _chunks("eb", rows, 12)
    mixed_rows = [dict(schedule="eb", gamma=0.2, **rule_fields(rule, sigma), seed=i)
                  for i, (rule, sigma) in enumerate(RULES) if can_edit or rule != "joint_threshold"]
    yield "eb-rules", mixed_rows
    for name in (*PRESETS, *SHIPPED_PRESETS, *REVISION_PRESETS):
        if name not in FIRST_PRESETS:
            yield f"preset-{name}", [dict(preset=name, seed=s) for s in (0, 1)]
    yield "eb-sources", [dict(schedule="eb", confidence_from=src, sample_scope="all" if src in DRAWN else "selected",
                              temperature=0.7, seed=i) for i, src in enumerate(CONFIDENCE_FROM)]


def _chunks(label: str, rows: list[dict[str, Any]], size: int) -> Iterator[Group]:
    for i in range(0, len(rows), size):
        yield f"{label}-{i // size}", rows[i : i + size]


def mixed(all_groups: list[Group], *, can_edit: bool, every: int = 3, size: int = 9) -> Iterator[Group]:
    """Batches that mix rows of every kind above (rules, schedules, sources, caches, presets)."""
    rows = [r for _, g in all_groups for r in g if can_edit or r.get("preset") != "llada21"]
    picked = rows[::every]
    for i in range(0, len(picked), size):
        yield f"mixed-{i // size}", picked[i : i + size]


def config_of(fields: dict[str, Any], G: int) -> DecodeConfig:
    fields = dict(fields)
    name = fields.pop("preset", None)
    length = fields.pop("gen_length", G)
    if name is not None:
        return DecodeConfig.preset(name, length, **fields)
    return DecodeConfig.preset("balanced", length, **fields)


# ----- digests ----------------------------------------------------------------------------------
def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in TIMING}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    return value


def digest(value: Any) -> str:
    text = json.dumps(_strip(value), sort_keys=True, allow_nan=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def trace_digest(trace: Any) -> str:
    data = trace.to_dict()
    data.pop("config")  # the input (a field added later must not change the digest); the key names it
    return digest(data)


def full_precision() -> Callable[[], None]:
    """Record every float unrounded while the grid runs (the decoder's `quantize` at full precision)."""
    patched = []
    for name, module in list(sys.modules.items()):
        if name.startswith("dllm_viz") and getattr(module, "quantize", None) is trace_module.quantize:
            patched.append(module)
    original = trace_module.quantize
    exact = lambda values: values.tolist() if hasattr(values, "tolist") else [float(v) for v in values]  # noqa: E731
    for module in patched:
        module.quantize = exact

    def undo() -> None:
        for module in patched:
            module.quantize = original

    return undo


# ----- sections ---------------------------------------------------------------------------------
def traces(out: dict[str, Any], only: str | None) -> None:
    for name, (model, prompts, G) in models().items():
        if only and name != only:
            continue
        start = time.perf_counter()
        eos = getattr(model, "eos_token_id", None) is not None
        caches = bool(getattr(model, "cache_modes", ()))
        edits = getattr(model, "can_edit", False) is True
        gs = list(groups(G, can_edit=edits, caches=caches, eos=eos))
        gs += list(mixed(gs, can_edit=edits))
        if "eb" in rules.SCHEDULES:
            gs += list(later(G, can_edit=edits))
        n = 0
        for label, rows in gs:
            key = f"{name}/{label}"
            try:
                configs = [config_of(r, G) for r in rows]
                ps = [prompts[i % len(prompts)] for i in range(len(configs))]
                result = decode(model, ps, configs, record_candidates=3)
            except ValueError as err:
                out[key] = f"error: {err}"
                n += 1
                continue
            for i, (r, tr) in enumerate(zip(rows, result)):
                out[f"{key}/{i}"] = trace_digest(tr)
                n += 1
        print(f"{name}: {n} traces in {time.perf_counter() - start:.1f} s", file=sys.stderr)


def plugin(out: dict[str, Any]) -> None:
    """The SGLang plugin's adapter (`serve.blocks`) on scripted logits, as tests/test_serve_blocks drives it."""
    from dllm_viz.serve.policy import Policy
    from tests.sglang.scripted import CausalScript
    from tests.test_serve_blocks import L, POLICIES, _requests, serve

    policies = dict(POLICIES)
    for rule, sigma in RULES:
        if rule in ("none", "wino"):
            continue
        policies[f"rule-{rule}-{sigma}"] = Policy(block_size=L, schedule="threshold", threshold=0.5, temperature=0.7,
                                                  **rule_fields(rule, sigma))
    policies["llada21"] = Policy.from_decode_config(DecodeConfig.preset("llada21", L))
    policies["sglang_low_confidence"] = Policy.from_decode_config(DecodeConfig.preset("sglang_low_confidence", L))
    for name, policy in policies.items():
        for sampling in (False, True):
            reqs = _requests()
            serve(policy, CausalScript(seed=2), reqs, with_sampling_info=sampling)
            out[f"plugin/{name}/{sampling}"] = digest([[r.output, r.steps] for r in reqs])


BAD: list[dict[str, Any]] = [
    {"gen_length": -1}, {"gen_length": 1.5}, {"block_length": 0}, {"block_length": 5, "gen_length": 16},
    {"schedule": "nope"}, {"top_k": 0}, {"decay": 0.0}, {"decay": 1.5}, {"min_k": 0}, {"steps": 0},
    {"steps": 3, "gen_length": 16, "block_length": 4}, {"threshold": 0.0}, {"threshold": float("nan")},
    {"temperature": -1.0}, {"temperature": 1e-6}, {"temperature": float("inf")}, {"temperature_stages": (1.0, 2.0)},
    {"temperature_stages": (1.0, -1.0, 1.0)}, {"confidence": "x"}, {"top_p": 0.0}, {"top_p": 1.5}, {"vocab_top_k": 0},
    {"seed": -1}, {"seed": 2**63}, {"block_schedule": "x"}, {"confidence_from": "x"}, {"sample_scope": "x"},
    {"rng": "x"}, {"early_stop": 1}, {"early_stop_threshold": 0.0}, {"revise": "x"}, {"threshold_strict": "yes"},
    {"remask_sigma": "x"}, {"remask_eta": 0.0}, {"remask_alpha_on": 1.0}, {"remask_alpha_on": 0.0},
    {"remask_loop_steps": -1}, {"remask_loop_steps": 5000}, {"verify_threshold": 0.0}, {"edit_threshold": -0.1},
    {"edit_threshold": 1.1}, {"max_post_edit_steps": -1}, {"penalty_lambda": -1.0}, {"cache": "x"},
    {"cache_refresh": 0}, {"cache_drift": "no"}, {"cache": "dual"}, {"cache": "prefix", "revise": "rcr"},
    {"cache": "prefix", "early_stop": True}, {"confidence_from": "sampled"}, {"confidence_from": "sampled_raw"},
    {"top_k": True}, {"min_k": 2.0}, {"threshold": "0.5"}, {"nope": 1}, {"gen_length": 2**40},
]


def validation(out: dict[str, Any]) -> None:
    """The message of every bad config (the validator derived from specs must say the same)."""
    for i, fields in enumerate(BAD):
        try:
            DecodeConfig.from_dict(dict(fields))
            out[f"bad/{i}"] = "accepted"
        except ValueError as err:
            out[f"bad/{i}"] = str(err)
    for name in (*PRESETS, *SHIPPED_PRESETS, *REVISION_PRESETS):
        for G in (0, 8, 64, 96):
            try:
                out[f"preset-dict/{name}/{G}"] = {"mapping": DecodeConfig.preset(name, G).to_dict()}
            except ValueError as err:
                out[f"preset-dict/{name}/{G}"] = f"error: {err}"


def policies(out: dict[str, Any]) -> None:
    """`Policy.from_decode_config(...).to_mapping()` of each preset and rule config (or its refusal)."""
    from dllm_viz.serve.policy import Policy

    configs = {name: DecodeConfig.preset(name, 64) for name in (*PRESETS, *SHIPPED_PRESETS, *REVISION_PRESETS)}
    for rule, sigma in RULES:
        configs[f"rule-{rule}-{sigma}"] = DecodeConfig(gen_length=64, block_length=32, block_schedule="restart",
                                                       **rule_fields(rule, sigma))
    for name, config in configs.items():
        try:
            out[f"policy/{name}"] = {"mapping": Policy.from_decode_config(config).to_mapping()}
        except ValueError as err:
            out[f"policy/{name}"] = f"error: {err}"


# ----- compare ----------------------------------------------------------------------------------
def compare(before: dict[str, Any], after: dict[str, Any]) -> tuple[int, list[str], list[str]]:
    """(identical entries, differences, notes): mappings are compared on the saved keys only; entries the
    saved file lacks are noted."""
    same, diffs, notes = 0, [], []
    for key, old in before.items():
        new = after.get(key)
        if isinstance(old, dict) and isinstance(new, dict) and "mapping" in old:
            o, n = old["mapping"], new["mapping"]
            changed = [k for k in o if o[k] != n.get(k, object())]
            added = sorted(set(n) - set(o))
            if changed:
                diffs.append(f"{key}: {[(k, o[k], n.get(k)) for k in changed]}")
                continue
            if added:
                notes.append(f"{key}: keys added {added}")
        elif old != new:
            diffs.append(f"{key}: {old!r} != {new!r}")
            continue
        same += 1
    added = [key for key in after if key not in before]
    if added:
        notes.append(f"{len(added)} new entries (not compared), e.g. {added[:3]}")
    return same, diffs, notes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--save", type=Path, help="write the digests here")
    parser.add_argument("--check", type=Path, help="compare with the digests saved here")
    parser.add_argument("--only", help="one model of the grid (a quick look; --check then skips the others)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    out: dict[str, Any] = {}
    undo = full_precision()
    try:
        traces(out, args.only)
    finally:
        undo()
    if not args.only:
        plugin(out)
        validation(out)
        policies(out)
    n_traces = sum(1 for k, v in out.items() if not k.startswith(("plugin/", "bad/", "preset-dict/", "policy/"))
                   and not str(v).startswith("error"))
    print(f"{n_traces} traces, {len(out)} entries", file=sys.stderr)
    if args.save:
        args.save.write_text(json.dumps(out, indent=0, sort_keys=True, allow_nan=True))
    if args.check:
        before = json.loads(args.check.read_text())
        if args.only:
            before = {k: v for k, v in before.items() if k.startswith(f"{args.only}/")}
        same, diffs, notes = compare(before, out)
        for line in notes:
            print(f"note: {line}")
        for line in diffs[:50]:
            print(f"DIFFERS: {line}")
        print(f"{same} of {len(before)} entries identical; {len(diffs)} differ")
        return 1 if diffs else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
