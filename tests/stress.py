"""Random valid requests from concurrent clients, each result compared with the same request alone.

Shared by the pass/fail test (`test_adversarial`, a few dozen small requests) and the benchmark
(`bench/reliability_bench.py`, 200 requests through the engine and more through the HTTP server).
"""
from __future__ import annotations

import random
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dllm_viz import DecodeConfig, Engine, decode
from dllm_viz.core import rules
from dllm_viz.core.config import CONFIDENCES, SCHEDULES
from dllm_viz.core.knobs import Knob
from dllm_viz.core.trace import Trace
from dllm_viz.serve.fair import Fairness

WORDS = ("it is a truth universally acknowledged that single man in possession of good fortune must be "
         "want wife Emma Woodhouse handsome clever and rich with comfortable home happy disposition the "
         "family of Dashwood had long been settled in Sussex Elizabeth Darcy Bennet said she").split()


@dataclass(frozen=True)
class Request:
    prompt: str
    config: DecodeConfig


def random_config(rng: random.Random, gen_lengths: tuple[int, ...], *, rules: bool = False) -> DecodeConfig:
    """A valid DecodeConfig drawn over every schedule, measure, filter, block and teaching switch
    except `rng="shared"` (whose results depend on the neighbours by design); with `rules`, also the
    revision rules a model that cannot edit runs (remdm, rcr, wino) and the caches."""
    G = rng.choice(gen_lengths)
    schedule = rng.choice(SCHEDULES)
    f: dict[str, Any] = {"gen_length": G, "schedule": schedule, "seed": rng.randrange(10**6),
                         "confidence": rng.choice(CONFIDENCES)}
    if rng.random() < 0.3:
        f["block_length"] = rng.choice([d for d in (G // 4, G // 2) if d and G % d == 0] or [G])
    blocks = G // f.get("block_length", G)
    if rng.random() < 0.25:
        f["temperature_stages"] = tuple(rng.choice((0.0, 0.5, 0.7, 1.0, 1.2, 1.5)) for _ in range(3))
    else:
        f["temperature"] = rng.choice((0.0, 0.3, 0.7, 1.0, 1.3, 2.0))
    if rng.random() < 0.3:
        f["top_p"] = rng.choice((0.5, 0.8, 0.95))
    if rng.random() < 0.3:
        f["vocab_top_k"] = rng.choice((1, 5, 50))
    if schedule in ("topk_decay", "adaptive"):
        f["top_k"] = rng.randint(1, max(1, G // 2))
        f["decay"] = rng.choice((0.5, 0.85, 0.9, 1.0))
        f["block_schedule"] = rng.choice(("continue", "restart"))
    elif schedule == "fixed_steps":
        f["steps"] = blocks * rng.randint(1, max(1, G // blocks))
    elif schedule == "threshold":
        f["threshold"] = rng.choice((0.3, 0.6, 0.9))
    f["min_k"] = rng.choice((1, 1, 2))
    wrong = rng.random()
    if wrong < 0.1:
        f["confidence_from"] = "tempered"
    elif wrong < 0.2:
        f["confidence_from"], f["sample_scope"] = "sampled", "all"
    elif wrong < 0.25:
        f["sample_scope"] = "all"
    if rules:
        f |= _rule_or_cache(rng, f)
    return DecodeConfig.from_dict(f)


def _rule_or_cache(rng: random.Random, f: dict[str, Any]) -> dict[str, Any]:
    """A revision rule or a cache, for a fifth of the configs each (never both: DecodeConfig refuses it).
    The rules are the plug-ins a model that cannot edit runs (`core.rules`: remdm, rcr, wino, and any
    added later), each knob they own drawn from its spec (`_draw`)."""
    draw = rng.random()
    if draw < 0.2:
        rule = rng.choice([p for name, p in rules.REVISIONS.items() if name != "none" and not p.edits])
        for _ in range(8):  # a pair the rule refuses (a loop's alpha against the canvas): draw again
            extra = {"revise": rule.name, **{k.name: _draw(rng, k) for k in rule.owned if rng.random() < 0.7}}
            try:
                DecodeConfig.from_dict({**f, **extra})
                return extra
            except ValueError:
                pass
        return {"revise": rule.name}
    if draw < 0.4:
        cache = "dual" if "block_length" in f and rng.random() < 0.5 else "prefix"
        return {"cache": cache, **({"cache_refresh": rng.choice((2, 3))} if rng.random() < 0.3 else {})}
    return {}


def _draw(rng: random.Random, knob: Knob) -> Any:
    """A value of `knob` from its spec: a choice, a number on its page slider's range (a step budget at
    most 6, to keep the run short), or its default."""
    if knob.kind == "choice":
        return rng.choice(knob.choices)
    if knob.kind == "int":
        lo, hi = (knob.slider or (knob.lo, 6))[:2]
        return rng.randint(int(lo), min(int(hi), 6))
    if knob.kind == "float":
        if knob.slider is None and callable(knob.hi):
            return knob.default
        lo, hi = (knob.slider or (knob.lo, knob.hi or 1.0))[:2]
        value = round(rng.uniform(lo, hi), 2)
        return value if value > knob.lo or not knob.lo_open else knob.default
    return knob.default


def random_requests(n: int, *, seed: int = 0, gen_lengths: tuple[int, ...] = (8, 16, 24, 32, 48, 64),
                    rules: bool = False) -> list[Request]:
    rng = random.Random(seed)
    return [Request(" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 12))) + " ",
                    random_config(rng, gen_lengths, rules=rules)) for _ in range(n)]


TIMES = ("forward_time",)  # what a record times (a cached forward's wall time): never the same twice


def record(rec: Any) -> dict[str, Any]:
    """A step record's fields, its timings aside."""
    return {k: v for k, v in rec.to_dict().items() if k not in TIMES}


def same(a: Trace, b: Trace) -> bool:
    """Bit-identical results: ids, order and every record (wall times aside)."""
    return (a.prompt_ids == b.prompt_ids and a.token_ids == b.token_ids and a.order == b.order
            and len(a.steps) == len(b.steps) and all(record(x) == record(y) for x, y in zip(a.steps, b.steps)))


def first_difference(a: Trace, b: Trace) -> int | None:
    """First step whose record differs (None when none does)."""
    for i, (x, y) in enumerate(zip(a.steps, b.steps)):
        if record(x) != record(y):
            return i
    return None if len(a.steps) == len(b.steps) else min(len(a.steps), len(b.steps))


def from_clients(requests: list[Request], clients: int,
                 call: Callable[[Request], Trace]) -> list[Trace | BaseException]:
    """Send the requests from `clients` threads (client c sends every c-th); results in request order."""
    out: list[Trace | BaseException | None] = [None] * len(requests)

    def client(c: int) -> None:
        for i in range(c, len(requests), clients):
            try:
                out[i] = call(requests[i])
            except BaseException as err:  # noqa: BLE001 - reported per request
                out[i] = err

    threads = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out  # type: ignore[return-value]


def through_engine(model: Any, requests: list[Request], *, clients: int = 16, max_batch: int = 16,
                   fairness: Fairness | None = None) -> list[Trace | BaseException]:
    """Every request submitted to one shared Engine from `clients` threads, each waiting for its result;
    each thread is a client of its own (with `fairness`, the engine steps them in turns: `serve.fair`)."""
    with Engine(model, max_batch=max_batch, max_queue=len(requests) + clients, fairness=fairness) as engine:
        return from_clients(requests, clients, lambda r: engine.submit(
            r.prompt, r.config, client=threading.current_thread().name).result(600))


def alone(model: Any, requests: list[Request]) -> list[Trace]:
    return [decode(model, [r.prompt], r.config)[0] for r in requests]
