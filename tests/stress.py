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
from dllm_viz.core.config import CONFIDENCES, SCHEDULES
from dllm_viz.core.trace import Trace

WORDS = ("it is a truth universally acknowledged that single man in possession of good fortune must be "
         "want wife Emma Woodhouse handsome clever and rich with comfortable home happy disposition the "
         "family of Dashwood had long been settled in Sussex Elizabeth Darcy Bennet said she").split()


@dataclass(frozen=True)
class Request:
    prompt: str
    config: DecodeConfig


def random_config(rng: random.Random, gen_lengths: tuple[int, ...]) -> DecodeConfig:
    """A valid DecodeConfig drawn over every schedule, measure, filter, block and teaching switch
    except `rng="shared"` (whose results depend on the neighbours by design)."""
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
    return DecodeConfig.from_dict(f)


def random_requests(n: int, *, seed: int = 0, gen_lengths: tuple[int, ...] = (8, 16, 24, 32, 48, 64)) -> list[Request]:
    rng = random.Random(seed)
    return [Request(" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 12))) + " ",
                    random_config(rng, gen_lengths)) for _ in range(n)]


def same(a: Trace, b: Trace) -> bool:
    """Bit-identical results: ids, order and every record (wall time aside)."""
    return (a.prompt_ids == b.prompt_ids and a.token_ids == b.token_ids and a.order == b.order
            and len(a.steps) == len(b.steps) and all(x.to_dict() == y.to_dict() for x, y in zip(a.steps, b.steps)))


def first_difference(a: Trace, b: Trace) -> int | None:
    """First step whose record differs (None when none does)."""
    for i, (x, y) in enumerate(zip(a.steps, b.steps)):
        if x.to_dict() != y.to_dict():
            return i
    return None if len(a.steps) == len(b.steps) else min(len(a.steps), len(b.steps))


def from_clients(requests: list[Request], clients: int, call: Callable[[Request], Trace]) -> list[Trace | BaseException]:
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


def through_engine(model: Any, requests: list[Request], *, clients: int = 16,
                   max_batch: int = 16) -> list[Trace | BaseException]:
    """Every request submitted to one shared Engine from `clients` threads, each waiting for its result."""
    with Engine(model, max_batch=max_batch, max_queue=len(requests) + clients) as engine:
        return from_clients(requests, clients, lambda r: engine.submit(r.prompt, r.config).result(600))


def alone(model: Any, requests: list[Request]) -> list[Trace]:
    return [decode(model, [r.prompt], r.config)[0] for r in requests]
