"""The served playground: load the model once, build the demo around one shared engine, launch it.

`dllm-viz serve` and the root `app.py` (Hugging Face Spaces) run `serve` through `app.main`, which
reads the flags first. Serves on 127.0.0.1:7860 unless GRADIO_SERVER_NAME / GRADIO_SERVER_PORT say
otherwise, the embedded model unless DLLM_VIZ_MODEL names a checkpoint (a local directory or a Hub
id, see `model_from_env`). Every decode of every user goes through one shared continuous-batching
`Engine`. On a ZeroGPU Space (where the `spaces` package is present) the decode entry is wrapped in
`spaces.GPU` and each call decodes its own batch, since the GPU exists only inside those calls;
elsewhere the wrapper is a no-op.
"""
from __future__ import annotations

import dataclasses
import gc
import os
from collections.abc import Callable, Mapping, MutableMapping
from pathlib import Path
from typing import Any


def _offline_environment(environ: MutableMapping[str, str] = os.environ) -> None:
    """Nothing phones home. Set before gradio and huggingface_hub are imported (they read these then).

    Gradio's analytics (a version check against its API and usage reports that made huggingface_hub
    fetch a registry: one request to Gradio and three to the Hub at every start) are off whatever the
    environment says, and so is the Hub's telemetry. The Hub itself is offline unless DLLM_VIZ_MODEL
    names a Hub id, the one thing a user may ask this app to fetch: not a local directory, nor a shipped model's
    name ("world-renoise": a Hub id is "org/name", `models.hub.is_repo_id`).
    """
    environ["GRADIO_ANALYTICS_ENABLED"] = "False"
    environ["HF_HUB_DISABLE_TELEMETRY"] = "1"
    named = environ.get("DLLM_VIZ_MODEL")
    if not named or "/" not in named or Path(named).expanduser().exists():
        environ.setdefault("HF_HUB_OFFLINE", "1")


_offline_environment()

from dllm_viz import assets  # noqa: E402 - after the environment above
from dllm_viz.core import rules  # noqa: E402
from dllm_viz.core.batch import check_config  # noqa: E402
from dllm_viz.core.budget import Budget  # noqa: E402
from dllm_viz.core.config import DecodeConfig  # noqa: E402
from dllm_viz.core.decoder import decode  # noqa: E402
from dllm_viz.core.fork import fork  # noqa: E402
from dllm_viz.core.indel_rows import declared_edit_ids  # noqa: E402
from dllm_viz.core.renoise_batch import renoise_settings  # noqa: E402
from dllm_viz.serve.engine import Engine, Fairness, QueueFull  # noqa: E402
from dllm_viz.models import load_model  # noqa: E402
from dllm_viz.models.base import model_device  # noqa: E402
from dllm_viz.core.decoder import Runner  # noqa: E402
from dllm_viz.core.trace import StepRecord, Trace  # noqa: E402
from dllm_viz.core.trace_schema import MAX_TRACE_BYTES  # noqa: E402
from dllm_viz.app import guards  # noqa: E402
from dllm_viz.app.guards import ServerLimits  # noqa: E402
from dllm_viz.app.ui import build_demo, launch_options  # noqa: E402
from dllm_viz.studies.lessons import DEFAULT_PROMPTS  # noqa: E402
from dllm_viz.app.handlers.fork import Forker  # noqa: E402
from dllm_viz.app.handlers import asking  # noqa: E402
from dllm_viz.app.handlers.playground import ModelChoice  # noqa: E402
from dllm_viz.models import SHIPPED  # noqa: E402
from dllm_viz.studies.world_score import WORLD_PROMPTS  # noqa: E402
from dllm_viz.app.views import task as task_view  # noqa: E402
from dllm_viz.tasks.families import EXAMPLE_PROMPTS as TASK_PROMPTS  # noqa: E402

EXAMPLES_DIR = assets.path("examples")
MAX_BATCH = 64  # requests the shared engine decodes at once (its slots); which of them share a forward: FAIRNESS
MAX_QUEUE = 512  # requests waiting for a slot: a sweep submits SWEEP_CHUNK (128) at a time, so four sweeps
# and everyone's interactive requests fit; beyond it a request gets "server busy" (QueueFull), not a wait
# The most work one request may ask for (steps x positions, `core.budget`): 2^20 covers every config the
# page's widgets make (the revision box's budgets at their ends: 2,430 steps of a 256-position canvas,
# 0.6 x 2^20) and refuses what only the API could ask (492,000 steps of a 245-position canvas).
REQUEST_CELLS = 2**20
# Who shares the engine how (`serve.fair`). Per client (a page's session, an API caller's address): at most
# two sweep chunks of requests, 8 requests' worth of work and a quarter of the slots at once. On a CPU a
# forward costs about its width, so forwards stay within 4x their narrowest row (a page decode beside
# sixteen maximal API requests steps at a few times its speed alone); a GPU's forward costs little more for
# more rows, so there every running request steps every time.
FAIRNESS = Fairness(client_requests=256, client_cells=8 * REQUEST_CELLS, client_slots=MAX_BATCH // 4, stretch=4.0)
# torch intra-op threads for the decodes (DLLM_VIZ_THREADS). The embedded model's matrices are
# small, and one thread leaves a core for the web server: on the 2-core build machine, with one
# core busy elsewhere, a gen_length-64 decode took 1.1 s with two threads and 0.12 s with one.
THREADS = int(os.environ.get("DLLM_VIZ_THREADS", "1"))
# How often Gradio's queue looks for an event while it has none (its own default: every 1 ms, 0.05 s on Windows;
# `quiet_queue`).
QUEUE_POLL_SECONDS = 0.01

try:  # ZeroGPU: functions that need the GPU are wrapped; elsewhere the wrapper does nothing.
    import spaces

    gpu: Callable[[Callable[..., Any]], Callable[..., Any]] = spaces.GPU
    ZERO_GPU = True
except ImportError:
    ZERO_GPU = False

    def gpu(fn: Callable[..., Any]) -> Callable[..., Any]:
        return fn


def model_from_env(environ: Mapping[str, str] = os.environ) -> Any:
    """The model to serve: ``DLLM_VIZ_MODEL`` (a local checkpoint directory or a Hub id) or the embedded model.

    ``DLLM_VIZ_TRUST_REMOTE_CODE=1`` allows the modeling code that LLaDA and Dream checkpoints ship;
    ``DLLM_VIZ_CHAT=1`` wraps each prompt in the checkpoint's chat template (instruction-tuned models);
    ``DLLM_VIZ_REVISION`` pins a Hub id's branch, tag or commit. Only a Hub id named here is fetched,
    into the Hugging Face cache (HF_HUB_OFFLINE=1: the cache only); the embedded model never is.
    """
    def flag(name: str) -> bool:
        return environ.get(name, "").strip().lower() in ("1", "true", "yes")

    return load_model(environ.get("DLLM_VIZ_MODEL") or None, trust_remote_code=flag("DLLM_VIZ_TRUST_REMOTE_CODE"),
                      chat=flag("DLLM_VIZ_CHAT"), revision=environ.get("DLLM_VIZ_REVISION") or None)


def load_examples(directory: Path = EXAMPLES_DIR) -> list[tuple[str, Trace]]:
    """The example traces shipped in dllm_viz/assets/examples, named after their files, in file-name order."""
    return [(p.stem.split("-", 1)[-1].replace("_", " "), Trace.from_json(p.read_text(encoding="utf-8")))
            for p in sorted(directory.glob("*.json"))]


def make_runner(model: Any, engine: Engine | None) -> Runner:
    """The UI's `run`: requests go to the shared engine, which batches them with everyone else's.

    Calls with the `rng="shared"` teaching switch decode as a batch of their own instead: a stream
    shared with whatever strangers happen to run in the engine would make the lesson unrepeatable.
    """

    @gpu
    def run(prompts: list[str], configs: list[DecodeConfig], *,
            on_step: Callable[[int, StepRecord], None] | None = None, record_candidates: int = 5) -> list[Trace]:
        if engine is None or any(c.rng == "shared" for c in configs):
            return decode(model, prompts, configs, on_step=on_step, record_candidates=record_candidates)
        ticket = asking.current() or asking.Ticket()  # who asks (the engine serves clients in turn)
        futures: list[Any] = []
        ticket.waiting = lambda: engine.waiting(futures[0]) if futures else None
        ticket.cancel = lambda: [f.cancel() for f in list(futures)]
        try:
            for i, (p, c) in enumerate(zip(prompts, configs)):
                hook = None if on_step is None else (lambda rec, i=i: on_step(i, rec))
                futures.append(engine.submit(p, c, on_step=hook, client=ticket.client))
            return [f.result() for f in futures]
        except QueueFull as err:
            raise ValueError(f"server busy: {err}") from err
        finally:
            for f in futures:  # after an error, the rest of the call stops costing forward passes
                f.cancel()

    return run


def make_forker(model: Any) -> Forker:
    """How a trace of `model` forks (`/fork`): `core.fork.fork` on the model itself, outside the engine (a fork
    replays one request from its start; it runs beside the engine's batch), within REQUEST_CELLS as a decode."""

    @gpu
    def run_fork(trace: Trace, step: int, **change: Any) -> Trace:
        return fork(model, trace, step, max_cells=REQUEST_CELLS, **change)  # within the work one request may ask

    return run_fork


def create_demo(model: Any = None, *, use_engine: bool = not ZERO_GPU, limits: ServerLimits | None = None,
                asked: bool | None = None):
    """Build the playground around `model` (default: `model_from_env()`, the embedded model).

    `asked`: whether the model was asked for (default: DLLM_VIZ_MODEL names one, `--model`); the page then opens on
    it (its first example, else its first prompt decoded as the page loads), else on the first example (the world
    model's).

    On ZeroGPU the GPU exists only inside `spaces.GPU` calls, so the engine's long-lived worker
    thread cannot use it there; each call then decodes its own batch with `decode`. `limits`: the
    server's bounds (a session's state expires after `session_idle` seconds).
    """
    asked = bool(os.environ.get("DLLM_VIZ_MODEL")) if asked is None else asked
    model = model_from_env() if model is None else model
    engine = make_engine(model) if use_engine else None
    run = make_runner(model, engine)
    demo = build_demo(
        run, examples=load_examples(), model_name=getattr(model, "name", "model"),
        max_length=getattr(model, "max_length", None), token_text=token_text(model),
        models=model_choices(model, run, engines=use_engine),
        # The page's decode events beyond the engine's slots reach its queue, which shows each visitor where
        # they stand; API calls run in a group of their own, at most half the slots at once, so the page's
        # visitors always have the other half and API calls never hold the page's workers.
        concurrency_limit=2 * MAX_BATCH if engine else 1, api_concurrency_limit=MAX_BATCH // 2 if engine else 1,
        max_cells=REQUEST_CELLS,
        session_ttl=(limits or ServerLimits()).session_idle,
        opens_on=getattr(model, "name", "model") if asked else None,  # its entry in the picker: `model_choices`
    )
    demo.engine = engine  # kept alive with the demo; closed with the process
    demo.analytics_enabled = False  # no launch report either, even when this module was imported late
    return demo


def make_engine(model: Any) -> Engine:
    """A served model's shared engine: every decode of every visitor goes through it, within
    REQUEST_CELLS per request, clients served in turns (FAIRNESS; on a GPU without the stretch)."""
    fairness = FAIRNESS if model_device(model).type == "cpu" else dataclasses.replace(FAIRNESS, stretch=None)
    return Engine(model, max_batch=MAX_BATCH, max_queue=MAX_QUEUE, budget=Budget(max_cells=REQUEST_CELLS),
                  fairness=fairness)


CHECKPOINT_PROMPTS = ("The capital of France is", "Once upon a time")


def fit_to_tasks(run: Runner) -> Runner:
    """The tasks model's runner: a prompt that states a task decodes exactly its answer's tokens
    (`task_view.fit_config`), whatever the gen length slider says."""

    def fitted(prompts, configs, **kwargs):
        return run(prompts, [task_view.fit_config(p, c) for p, c in zip(prompts, configs)], **kwargs)

    return fitted


def token_text(model: Any) -> Callable[[int], str] | None:
    """A token's text, as a trace of `model` records it (`tokenizer.decode([id])`): the page shows
    a decode's tokens step by step before its trace exists. None without a tokenizer."""
    tok = getattr(model, "tokenizer", None)
    return None if tok is None else (lambda token_id: tok.decode([token_id]))


def limits_of(model: Any) -> dict[str, Any]:
    """What the page's controls may offer for `model`: its context (`max_length`), its caches, whether
    it edits lengths (its DELETE and SPLIT tokens), how it reads a config (`resolve`) and its canvas (which knobs)."""
    return {"max_length": getattr(model, "max_length", None), "cache_modes": tuple(getattr(model, "cache_modes", ())),
            "edits_lengths": bool(declared_edit_ids(model)), "resolve": resolver(model),
            "canvas": rules.canvas_of(model)}


def resolver(model: Any) -> Callable[[DecodeConfig], Any]:
    """A config as `model` reads it, checked as its decode checks it before anything starts (`Budget.resolve`):
    a renoising model's settings (its checkpoint's defaults beneath the config's; its work is whole canvases of
    `max_denoising_steps` steps), a masked model's config (an editing or insert/delete rule it cannot run, a cache
    it has not, refused by name)."""
    if rules.canvas_of(model) == "renoise":
        defaults = model.generation_defaults()  # read once
        return lambda config: renoise_settings(model, config, defaults)

    def masked(config: DecodeConfig) -> DecodeConfig:
        check_config(model, config)
        return config

    return masked


def model_choices(model: Any, run: Runner, *, engines: bool = False) -> dict[str, ModelChoice]:
    """The model picker: the served model first, then the shipped ones it is not (Austen, world, tasks).

    With `engines`, each shipped model gets an engine of its own (`make_engine`: its visitors are
    served in turns too), else its calls decode directly; a missing asset folder just leaves its
    entry out. Nothing here touches the network.
    """
    name = getattr(model, "name", "model")
    # The shipped models' own prompts: the world language's for every model that writes it (served by name).
    prompts = {"austen-mdlm": DEFAULT_PROMPTS, "world-mdlm": WORLD_PROMPTS, "tasks-mdlm": TASK_PROMPTS,
               "world-indel": WORLD_PROMPTS, "world-renoise": WORLD_PROMPTS}
    fit = lambda n, r: fit_to_tasks(r) if n in task_view.MODEL_NAMES else r  # noqa: E731
    # The page checks a request against the picked model's context before it decodes; the tasks model's
    # runner sets gen_length itself (`fit_to_tasks`), so there the slider's length is not what runs (its
    # own decode checks the fitted canvas).
    context = lambda n, m: None if n in task_view.MODEL_NAMES else getattr(m, "max_length", None)  # noqa: E731
    choices = {name: ModelChoice(run=fit(name, run), prompts=tuple(prompts.get(name, CHECKPOINT_PROMPTS)), name=name,
                                 token_text=token_text(model), fork=make_forker(model),
                                 **(limits_of(model) | {"max_length": context(name, model)}))}
    for shipped, path in (("austen-mdlm", None), ("world-mdlm", SHIPPED["world"]), ("tasks-mdlm", SHIPPED["tasks"])):
        if shipped in choices or (path is not None and not path.is_dir()):
            continue
        other = load_model(path, device="cpu")
        served = make_runner(other, make_engine(other) if engines else None)
        choices[other.name] = ModelChoice(run=fit(other.name, served), prompts=tuple(prompts[shipped]),
                                          name=other.name, token_text=token_text(other), fork=make_forker(other),
                                          **(limits_of(other) | {"max_length": context(other.name, other)}))
    return choices


def serve() -> None:
    """Serve until interrupted, within the bounds of `ServerLimits` (DLLM_VIZ_MAX_CONNECTIONS, ...).

    Run it through `app.main` (`dllm-viz serve`, `python app.py`), which first restarts the process
    under the system allocator."""
    import logging

    import torch

    # One line per event on stderr: a user's bad setting (dllm_viz.app.handlers.errors), a failed request
    # (dllm_viz.serve.engine), a model's fallback (dllm_viz.models.hf).
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    torch.set_num_threads(THREADS)
    limits = ServerLimits.from_env(os.environ)
    demo = create_demo(limits=limits)
    demo.queue(default_concurrency_limit=MAX_BATCH).launch(
        server_name=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"),
        server_port=int(os.environ.get("GRADIO_SERVER_PORT", "7860")),
        max_file_size=MAX_TRACE_BYTES,  # uploads are traces; a bigger file is refused before it is read
        state_session_capacity=limits.max_sessions,  # Gradio's own bound on sessions (least recently used go)
        max_threads=4 * MAX_BATCH,  # each decode event's stream takes a worker thread between its views
        prevent_thread_lock=True, **launch_options(),
    )
    guards.install(demo, limits)  # connections, memory, the log: installed on the running server
    quiet_queue(demo)
    freeze_heap()
    demo.block_thread()


def quiet_queue(demo: Any) -> bool:
    """Gradio's queue looks for a new event every QUEUE_POLL_SECONDS while it has none, not every 1 ms: each look
    wakes the server's event loop, which then takes Python's lock from a decode in progress (a thousand times a
    second, 25-30 ms of CPU a second on an idle server), on the cores the decode needs. An event that reaches an
    empty queue starts up to that much later; the page's own decodes start outside the queue (`page_server`
    `dv_start`). Returns whether the queue took it (False: a Gradio without that setting, left as it is)."""
    queue = getattr(demo, "_queue", None)
    if not isinstance(getattr(queue, "sleep_when_free", None), float):
        return False
    queue.sleep_when_free = max(queue.sleep_when_free, QUEUE_POLL_SECONDS)
    return True


def freeze_heap() -> None:
    """Collect once, then leave what the server holds now (the model, Gradio, the page: a few hundred
    thousand objects that live as long as it) out of every later full collection of Python's cyclic
    collector: after a large trace was loaded, each such collection walked them all again (hundreds of
    ms inside a visitor's event)."""
    gc.collect()
    gc.freeze()
