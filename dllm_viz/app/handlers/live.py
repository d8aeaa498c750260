"""A decode in progress: its steps as they are computed, and the data the page paints them from.

`stream(run, prompts, configs)` runs one call of a `Runner` in a worker thread and yields the
`StepRecord`s of its first request as the steps happen (the runner's `on_step`), then the traces;
closing the iterator (the visitor pressed Stop, or left) stops the decode at its next step. `Live`
gathers the records of one request into what the canvas shows (`data`: the shape of
`render.canvas_data`, with the latest guesses and the steps planned), which `render.live_html`
writes and page.js paints (canvas.js). The finished trace then replaces it.
"""
from __future__ import annotations

import math
import queue
import threading
from concurrent.futures import CancelledError
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from dllm_viz.app.strings import t
from dllm_viz.app.views.palette import tint
from dllm_viz.app.views.render import CANVAS_STRINGS
from dllm_viz.app.handlers.asking import Ticket, Waiting, asking
from dllm_viz.core.config import DecodeConfig
from dllm_viz.core.decoder import Runner
from dllm_viz.core.schedules import planned_steps
from dllm_viz.core.trace import StepRecord, Trace


LIVE_STRINGS = (*CANVAS_STRINGS, "live_of", "live_of_unknown", "live_queued", "live_queued_eta")  # a live canvas's


class Stopped(Exception):
    """Raised inside the runner's `on_step` when the visitor stopped the decode: the runner ends the
    call with it (`decode` re-raises it; the engine fails the request with it), so no forward pass
    runs after the step in progress."""


def stream(run: Runner, prompts: Sequence[str], configs: Sequence[DecodeConfig], *,
           idle: float | None = None, stop: threading.Event | None = None,
           ticket: Ticket | None = None) -> Iterator[tuple[str, Any]]:
    """One call of `run`, as it happens: ("step", record) for each StepRecord of request 0, ("idle",
    None) whenever `idle` seconds pass without one, then ("done", the list of traces).

    The call runs in a worker thread, as `ticket`'s (`asking`); its error is raised here. Setting
    `stop` (the visitor's Stop) or closing the iterator early makes the next `on_step` raise
    `Stopped` and cancels the call's requests (`ticket.cancel`: those still waiting for a slot
    too); the iterator then ends without "done", once the worker has.
    """
    ticket = ticket or Ticket()
    items: queue.SimpleQueue[Any] = queue.SimpleQueue()
    stop = stop or threading.Event()
    closed = threading.Event()  # the iterator was left: nobody reads the steps any more
    done = object()

    def on_step(index: int, record: StepRecord) -> None:
        if stop.is_set() or closed.is_set():
            raise Stopped("the decode was stopped")
        if index == 0:
            items.put(record)

    def work() -> None:
        try:
            with asking(ticket):
                items.put((done, run(list(prompts), list(configs), on_step=on_step)))
        except BaseException as err:  # noqa: BLE001 - handed to the consumer, raised there
            items.put((done, err))

    worker = threading.Thread(target=work, name="dllm-viz-live", daemon=True)
    worker.start()
    finished = False
    try:
        while not stop.is_set():
            try:
                item = items.get(timeout=idle)
            except queue.Empty:
                yield "idle", None
                continue
            if isinstance(item, tuple) and item[0] is done:
                finished = True
                if isinstance(item[1], (Stopped, CancelledError)):
                    return
                if isinstance(item[1], BaseException):
                    raise item[1]
                yield "done", item[1]
                return
            yield "step", item
    finally:
        closed.set()
        if not finished:
            ticket.cancel()
        worker.join()


class _Vocab:
    """Token text for `analysis.piece`-style display while no Trace exists yet."""

    def __init__(self, token_text: Callable[[int], str]) -> None:
        self.token_text = token_text

    def piece(self, token_id: int) -> str:
        text = self.token_text(token_id)
        return "∅" if text == "" else text.replace("\n", "↵").replace("\t", "⇥")  # as core.analysis.piece


def _r3(x: float) -> float | None:
    return None if math.isnan(x) else round(x, 3)


class Live:
    """What the canvas shows of one request while it decodes: each position's confirmation so far
    and the latest forward pass's guesses at the positions still masked."""

    def __init__(self, config: DecodeConfig, *, prompt: str, token_text: Callable[[int], str], lang: str) -> None:
        G = config.gen_length
        self.G, self.prompt, self.lang = G, prompt, lang
        self.vocab = _Vocab(token_text)
        self.planned = planned_steps(config)  # None: the model decides (threshold)
        self.order, self.tok = [-1] * G, [-1] * G
        self.tint: list[str] = [""] * G
        self.conf: list[float | None] = [None] * G
        self.q: list[float | None] = [None] * G
        self.ghost, self.ghost_conf = [-1] * G, [None] * G
        self.k: list[int] = []
        self.pieces: dict[str, int] = {}
        self.waiting: Waiting | None = None  # before the first step: where the request waits for a slot
        self.key = ""  # what the page sends with Stop: only the page that started a decode can stop it

    def _ix(self, token_id: int) -> int:
        return self.pieces.setdefault(self.vocab.piece(token_id), len(self.pieces))

    def add(self, rec: StepRecord) -> None:
        """One more step of the request: what it confirmed, and what a revision rule took back to
        [MASK] or rewrote (issue 28; a step does one of these at most to a position)."""
        for pos in rec.remasked or ():
            self.order[pos], self.tok[pos], self.tint[pos], self.conf[pos], self.q[pos] = -1, -1, "", None, None
        for pos, new, p_new in zip(rec.edited or (), rec.edited_to or (), rec.edit_probs or ()):
            self.order[pos], self.tok[pos] = rec.step, self._ix(new)
            self.tint[pos], self.conf[pos], self.q[pos] = tint(p_new), _r3(p_new), round(p_new, 3)
        for pos, tok, lp in zip(rec.selected, rec.tokens, rec.logprobs):
            self.order[pos], self.tok[pos] = rec.step, self._ix(tok)
            self.tint[pos], self.conf[pos], self.q[pos] = tint(rec.confidence[pos]), _r3(rec.confidence[pos]), round(math.exp(lp), 3)
        self.k.append(rec.k)
        self.ghost = [self._ix(a) if a >= 0 else -1 for a in rec.argmax]
        self.ghost_conf = [_r3(c) for c in rec.confidence]

    def wait(self, waiting: Waiting | None) -> bool:
        """Where the request waits for a slot now (`asking.Ticket.waiting`; None: not waiting), the
        estimate in whole seconds; True when that changed what the canvas says."""
        shown = None if waiting is None else (waiting[0], None if waiting[1] is None else math.ceil(waiting[1]))
        changed, self.waiting = shown != self.waiting, shown
        return changed

    @property
    def steps(self) -> int:
        return len(self.k)

    def data(self) -> dict[str, Any]:
        """The data page.js paints the canvas from (render.canvas_data's shape, with `live`)."""
        return {
            "live": 1, "n": self.steps, "planned": self.planned, "G": self.G, "prompt": self.prompt, "end": -1,
            "order": self.order, "tok": self.tok, "tint": self.tint, "conf": self.conf, "q": self.q, "k": self.k,
            "bad": [""] * self.G, "diff": [], "ghost": self.ghost, "ghostConf": self.ghost_conf,
            "pieces": list(self.pieces), "t": {key: t(key, self.lang) for key in LIVE_STRINGS},
            "queue": None if self.waiting is None or self.steps else list(self.waiting), "key": self.key,
        }
