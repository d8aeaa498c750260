"""The Compare tab's handlers: a lesson click, a compare of two configs, and their figures.

A lesson (`lessons.LESSONS`) is a pair of configs that differ in one rule; a click fills them in
and decodes them once, on the same prompt and seed, in one batch. The event answers at once with
both sides' handles (`traces`): the page reads each side's steps as they are computed and draws their
canvases and the pair's figures; the summary and the facts follow when the pair is done. The page
starts the compare itself as the click's event starts (`start`, under the two handles it drew), and the
event adopts it (`starts`: one decode per event). A compare in progress is one of its session's decodes for
Stop (`stops`: the Playground's, shared): its live canvases carry the key, and Stop ends it at its next step
(`stopped`).
"""
from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Callable, Iterator
from typing import Any

from dllm_viz.app.views import render, wire
from dllm_viz.app.handlers.adapters import integral, parse_config_json
from dllm_viz.app.strings import t
from dllm_viz.app.views.lessons import indel_study_md, measured_table, renoise_study_md, study_md, world_table
from dllm_viz.studies.lessons import LESSONS, NEIGHBOURS, load_measured, measured_model
from dllm_viz.app.handlers.live import Started, stream
from dllm_viz.app.handlers.outputs import KEEP, CompareCleared, CompareShown, LessonShown, keep
from dllm_viz.app.handlers.play import LIVE_SECONDS, STOP_WAIT_SECONDS
from dllm_viz.app.handlers.seats import Seat, Seats
from dllm_viz.app.handlers.starts import Starts
from dllm_viz.app.handlers.stops import Signal, Stops
from dllm_viz.app.handlers.entry import settle
from dllm_viz.app.handlers.traces import HANDLE, Shown, TraceStore
from dllm_viz.studies.world_lessons import load_world_measured_model, load_world_pairs
from dllm_viz.app.handlers.asking import Ticket
from dllm_viz.core.analysis import divergence
from dllm_viz.core import rules
from dllm_viz.core.budget import Budget
from dllm_viz.core.config import DecodeConfig
from dllm_viz.core.decoder import Runner
from dllm_viz.core.trace import Trace


def world_lesson_table(key: str, lang: str = "en", *, title: str | None = None) -> str:
    """Correctness of a Compare-tab pair on the world model (dllm_viz/assets/world/lessons.json) in `lang`, or "";
    headed by `title` (default: the lesson's)."""
    measured = load_world_pairs().get(key)
    if not measured:
        return ""
    return world_table(measured, lang, title=title or LESSONS[key].text("title", lang), claim=t("wt_pair_claim", lang))


FIRST_LESSON = "polluted"  # the lesson whose text and configs the tab opens with, on a masked model
# Configs A and B on a model of a canvas plug-in (the lessons compare masked decodes): as shipped against the article's
# rule, the switch the plug-in adds for it (`acceptance_from`).
CANVAS_PAIRS: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {"renoise": ({}, {"acceptance_from": "raw"})}
CANVAS_STUDIES: dict[str, Callable[[str], str]] = {"renoise": renoise_study_md}  # that question, counted


def side_config(side: str, text: str, *, gen_length: int, seed: int, canvas: str = "masked") -> DecodeConfig:
    """Config A or B of the Compare tab, for a model whose canvas is `canvas`; its error says which side is wrong
    ("config B: ...")."""
    try:
        return parse_config_json(text, gen_length=gen_length, seed=seed, canvas=canvas)
    except ValueError as err:
        raise ValueError(f"config {side}: {err}") from err


def page_refs(text: Any) -> tuple[str | None, str | None]:
    """The two sides' handles the page drew for a compare ("A B"; each `traces.HANDLE`), or (None, None)."""
    parts = text.split() if isinstance(text, str) else []
    if len(parts) == 2 and parts[0] != parts[1] and all(HANDLE.fullmatch(p) for p in parts):
        return parts[0], parts[1]
    return None, None


@dataclasses.dataclass(frozen=True)
class PairAsked:
    """A compare as asked, checked: the prompt, the model, both sides' configs, the neighbours batched beside."""

    prompt: str
    model_pick: str | None
    a: DecodeConfig
    b: DecodeConfig
    k: int  # neighbour prompts in the batch

    @property
    def group(self) -> list[str]:
        return [self.prompt, *NEIGHBOURS[:self.k]]

    @property
    def decodes(self) -> tuple[Any, ...]:
        """What is decoded: a started compare is adopted by an event that asks for the same."""
        return self.prompt, self.model_pick, self.a, self.b, self.k


class PairDecoding(Started):
    """A compare in progress: each side's (handle, entry) by its request's index, the call's steps, its Stop
    signal (`stops.Signal`) and key; `close` (once) ends the entries ("stopped" or "failed") unless the
    compare finished, and stops it (or drops it from the queue)."""

    def __init__(self, asked: Any, sides: dict[int, tuple[str, Any]], steps: Any, signal: Signal, key: str,
                 on_close: Callable[[], None]) -> None:
        super().__init__(asked, steps, on_close)
        self.sides, self.signal, self.stop, self.key = sides, signal, signal.stop, key

    def _end(self, state: str | None) -> None:
        for _, entry in self.sides.values():
            entry.end(state or ("stopped" if self.stop.is_set() else "failed"))

    def queue(self, waiting: Callable[[], Any]) -> None:
        """Before either side's first step, where the pair waits for a slot of the shared engine (`waiting()`:
        `asking.Ticket.waiting`), on both sides (`entry.Entry.queue`); nothing once a step is out."""
        entries = [entry for _, entry in self.sides.values()]
        if all(entry.encoder is not None and not entry.encoder.sent for entry in entries):
            where = waiting()
            for entry in entries:
                entry.queue(where)


def _same(x: Trace, y: Trace, lang: str) -> str:
    """"yes" when two runs drew the same tokens, in `lang`."""
    return t("yes" if x.token_ids == y.token_ids else "no", lang)


class CompareHandlers:
    """The Compare tab's events. `runner_for(model_pick)` is the runner of the picked model;
    `is_world(model_pick)` says whether the world checker can judge its text; `budget_for(model_pick)`
    bounds its requests."""

    def __init__(self, runner_for: Callable[[str | None], Runner], *, is_world: Callable[[str | None], bool],
                 traces: TraceStore, token_text_for: Callable[[str | None], Callable[[int], str]] = lambda pick: str,
                 budget_for: Callable[[str | None], Budget] = lambda pick: Budget(),
                 canvas_for: Callable[[str | None], str] = lambda pick: "masked",
                 seats: Seats | None = None, stops: Stops | None = None) -> None:
        self.runner_for = runner_for
        self.canvas_for = canvas_for  # the canvas the picked model writes: what a config's missing keys take
        self.traces = traces
        self.token_text_for = token_text_for  # the picked model's token text (the sides' steps, before their traces)
        self.is_world = is_world
        self.budget_for = budget_for
        self.measured = load_measured()
        self.measured_model = measured_model()  # the models the lessons' numbers were measured on
        self.world_model = str(load_world_measured_model() or "world-mdlm")
        self.seats = seats if seats is not None else Seats()  # the page's decodes at once, events' and starts'
        self.starts = Starts(self.seats)  # compares the pages started before their events came
        self.stops = stops if stops is not None else Stops()  # every session's decodes in progress, for Stop

    def lesson(self, key: str, **kw: Any) -> LessonShown:
        """`lesson_stream` run to its end: the finished view (for callers that want no stream)."""
        *_, last = self.lesson_stream(key, **kw)
        return last

    def lesson_stream(self, key: str, *, prompt: str, seed: int, gen_length: int, lang: str,
                      model_pick: str | None = None, session: str | None = None,
                      cmp_ref: str | None = None) -> Iterator[LessonShown]:
        """One lesson click: fill its configs and text, and decode its compare once (`run_stream`). A lesson compares
        two masked decodes: on a model of another canvas it is a ValueError before anything is shown."""
        lesson = LESSONS[key]
        canvas = self.canvas_for(model_pick)
        if canvas != "masked":
            raise ValueError(f"lesson={key!r} is invalid for {model_pick!r}, whose canvas is {canvas!r}: the lessons "
                             "compare masked decodes; expected a masked model (or configs A and B of its own knobs)")
        a, b = json.dumps(lesson.a), json.dumps(lesson.b)
        text = self.lesson_text(key, lang, model_pick=model_pick)
        for shown in self.run_stream(prompt=prompt, seed=seed, gen_length=gen_length, cmp_a=a, cmp_b=b,
                                     neighbours=lesson.neighbours, lang=lang, model_pick=model_pick, session=session,
                                     cmp_ref=cmp_ref):
            yield LessonShown(compare=shown, cmp_a=a, cmp_b=b, neighbours=lesson.neighbours, lesson_key=key,
                              lesson_text=text)

    def pair_for(self, model_pick: str | None) -> tuple[str, str]:
        """Configs A and B (JSON) the tab offers on the picked model: the first lesson's on a masked canvas, else its
        canvas's pair (`CANVAS_PAIRS`)."""
        pair = CANVAS_PAIRS.get(self.canvas_for(model_pick)) or (LESSONS[FIRST_LESSON].a, LESSONS[FIRST_LESSON].b)
        return json.dumps(pair[0]), json.dumps(pair[1])

    def pair_fits(self, model_pick: str | None, cmp_a: Any, cmp_b: Any) -> bool:
        """Whether configs A and B set only knobs of the picked model's canvas (else a model of another canvas was
        picked: the page then offers `pair_for` instead). A config that is no config at all (a JSON typo, a value
        out of range) fits: it is the visitor's to mend, and the next Compare names its error."""
        canvas = self.canvas_for(model_pick)
        for text in (cmp_a, cmp_b):
            try:
                config = parse_config_json(text if isinstance(text, str) else None, canvas=canvas)
            except ValueError:
                continue
            try:
                rules.check_canvas(config, canvas)
            except ValueError:
                return False
        return True

    def lesson_text(self, key: str | None, lang: str, *, model_pick: str | None = None) -> str:
        """A lesson's title, what to look for, and what was measured, naming the model measured on:
        on the world model its correctness table (the numbers of that model), else the prose and
        table measured on the Austen model (`assets/lessons.json`), named as such; a revision lesson
        adds the revision study, counted on the world model and its editing oracle, under either. On a model of a
        canvas plug-in no lesson runs: what its configs A and B compare (`CANVAS_PAIRS`), and its study, counted."""
        canvas = self.canvas_for(model_pick)
        if canvas != "masked":
            return f"{t(f'canvas_cmp_{canvas}', lang)}\n\n{CANVAS_STUDIES[canvas](lang)}"
        if not key:
            return ""
        lesson = LESSONS[key]
        parts = [f"### {lesson.text('title', lang)}", f"**{t('look_for', lang)}.** {lesson.text('look_for', lang)}"]
        if self.is_world(model_pick):  # the same pair measured as correctness on the world model
            # Headed by what was measured where (the lesson's title is the text's own heading, once).
            table = world_lesson_table(key, lang, title=t("measured", lang, model=self.world_model))
            if table:
                parts.append(table)
        elif numbers := self.measured.get(key):
            parts.append(f"**{t('measured', lang, model=self.measured_model)}.** {lesson.text('measured', lang)}")
            parts.append(measured_table(numbers, lang))
        if lesson.b.get("revise", "none") != "none":  # a revision lesson: the rules counted on the world model,
            parts += [study_md(lang), indel_study_md(lang)]  # and insert/delete counted on world-indel
        if self.is_world(model_pick) and lesson.b.get("confidence_from") == "tempered":  # the same question on
            parts.append(renoise_study_md(lang))  # a renoising decoder, counted on the world language too
        return "\n\n".join(p for p in parts if p)

    def run(self, **kw: Any) -> CompareShown:
        """`run_stream` run to its end: the finished view."""
        *_, last = self.run_stream(**kw)
        return last

    def run_stream(self, *, prompt: str, seed: int, gen_length: int, cmp_a: str, cmp_b: str, neighbours: int,
                   lang: str, model_pick: str | None = None, session: str | None = None,
                   cmp_ref: str | None = None) -> Iterator[CompareShown]:
        """Decode A and B on the same prompt and seed (in one batch) and show where they diverge: at once
        both sides' handles (the page reads their steps as they come), then the summary and facts.
        `cmp_ref`: the two handles the page drew for the sides ("A B"); its decode, when the page started
        it already (`start`) and it is this one, is adopted (one decode per event). Stop (`stopped`, same
        `session`) or closing the stream stops the compare at its next step (or drops it from the queue),
        and nothing more is shown of it."""
        asked = self.ask(prompt=prompt, seed=seed, gen_length=gen_length, cmp_a=cmp_a, cmp_b=cmp_b,
                         neighbours=neighbours, model_pick=model_pick)
        refs = page_refs(cmp_ref)
        decoding, free = self.starts.adopt(session, refs[0], asked.decodes) if refs[0] else (None, True)
        if decoding is None:
            decoding = self.launch(asked, session=session, refs=refs if free else (None, None))
        try:
            if self.stops.follow(decoding.signal):  # else stopped before this event came
                live = [wire.side_value(handle, side, lang=lang, live=True, key=decoding.key)
                        for side, (handle, _) in zip("ab", decoding.sides.values())]
                yield CompareShown(cmp_summary=KEEP, cmp_canvas_a=live[0], cmp_canvas_b=live[1], cmp_facts_a=KEEP,
                                   cmp_facts_b=KEEP, cmp_traces=KEEP)
                for kind, item in decoding.steps:
                    if decoding.stop.is_set():  # Stop: nothing of this compare may follow its view
                        break
                    if kind == "done":
                        decoding.traces = item
                        break
                    if kind == "idle":  # no step yet: where the pair waits, for the page (each side says it)
                        decoding.queue(decoding.steps.ticket.waiting)
        finally:
            decoding.close()
        if decoding.stop.is_set():  # Stop's own view, once more: an event that ends answering nothing would
            yield self._stopped_view(lang)  # have Gradio empty its outputs (the configs, the lesson's text)
            return
        traces = decoding.traces
        if traces is None:
            return
        # a page reads them: its views first, then the summary and facts
        settle([entry for _, entry in decoding.sides.values()])
        k, n = asked.k, len(asked.group)
        ta, tb = traces[0], traces[n]
        summary = render.divergence_text(ta, tb, lang)
        if k:
            summary += "\n\n" + t("batch_note", lang, n=k, a=_same(ta, traces[-2], lang), b=_same(tb, traces[-1], lang))
        (ha, _), (hb, _) = decoding.sides.values()
        yield self.view((Shown(ha, ta), Shown(hb, tb)), summary=summary, lang=lang)

    def ask(self, *, prompt: str, seed: int, gen_length: int, cmp_a: str, cmp_b: str, neighbours: int,
            model_pick: str | None = None) -> PairAsked:
        """The compare the widgets ask for, checked (an error names config A or B). Raises ValueError."""
        seed, gen_length, canvas = integral(seed), integral(gen_length), self.canvas_for(model_pick)
        a, b = (side_config(side, text, gen_length=gen_length, seed=seed, canvas=canvas)
                for side, text in (("A", cmp_a), ("B", cmp_b)))
        if a.gen_length != b.gen_length:
            raise ValueError(f"config B: gen_length={b.gen_length} is invalid: expected A's gen_length={a.gen_length}")
        budget = self.budget_for(model_pick)
        for side, config in (("A", a), ("B", b)):
            try:
                budget.check(config)
            except ValueError as err:
                raise ValueError(f"config {side}: {err}") from err
        k = max(0, min(int(neighbours or 0), len(NEIGHBOURS)))
        return PairAsked(prompt or "", model_pick, a, b, k)

    def launch(self, asked: PairAsked, *, session: str | None, refs: tuple[str | None, str | None] = (None, None),
               followed: bool = True, seat: Seat | None = None) -> PairDecoding:
        """Start the compare `asked` (one call to `run`, as the session's) under the sides' handles `refs`
        (the page's, when it drew them), in `seat` (a start's; else an event's, `seats`) until it closes; the
        caller (or whoever adopts it) closes it. It is one of the session's decodes for Stop (`stops`;
        `followed`: an event streams it from the start), its key the first chunk of both sides."""
        group, k = asked.group, asked.k
        # With neighbours, each side also decodes alone in the same call, to show whether batching changed it.
        solo = [asked.prompt] * 2 if k else []
        run, text = self.runner_for(asked.model_pick), self.token_text_for(asked.model_pick)
        sides = {0: self.traces.live(session, wire.Encoder(asked.a, prompt=asked.prompt, token_text=text), refs[0]),
                 len(group): self.traces.live(session, wire.Encoder(asked.b, prompt=asked.prompt, token_text=text),
                                              refs[1])}
        signal, key = self.stops.add(session, followed=followed)
        for _, entry in sides.values():
            entry.stop_key(key)  # first of its chunks: the page may read it before its event answers
        held = seat if seat is not None else self.seats.take(session, signal.stop)

        def closed() -> None:
            held.release()
            self.stops.done(session, signal)

        try:
            steps = stream(run, group * 2 + solo, [asked.a] * len(group) + [asked.b] * len(group)
                           + ([asked.a, asked.b] if k else []), idle=LIVE_SECONDS, stop=signal.stop,
                           ticket=Ticket(client=("page", session)),
                           on_record=lambda i, rec: sides[i][1].add(rec) if i in sides else None,
                           on_done=lambda done: [entry.finish(done[i]) for i, (_, entry) in sides.items()])
        except BaseException:
            for _, entry in sides.values():
                entry.end("failed")
            closed()
            raise
        return PairDecoding(asked.decodes, sides, steps, signal, key, on_close=closed)

    def start(self, *, session: str | None, cmp_ref: Any, lesson: str | None = None, lang: str = "en",
              **widgets: Any) -> str | None:
        """The page asks for the compare its event (a lesson's click: `lesson`, or Compare's run) will ask
        for, before the event comes: started at once under the page's handles `cmp_ref`, for the event to
        adopt (`starts`). Returns None once started, else why not (the event decodes, or reports, itself)."""
        refs = page_refs(cmp_ref)
        if refs[0] is None:
            return "no handles"
        if lesson is not None:
            if lesson not in LESSONS:
                return "no such lesson"
            found = LESSONS[lesson]
            widgets |= {"cmp_a": json.dumps(found.a), "cmp_b": json.dumps(found.b), "neighbours": found.neighbours}
        try:
            asked = self.ask(**widgets)
        except (ValueError, TypeError) as err:
            return str(err)
        return self.starts.start(session, refs[0], lambda seat: self.launch(asked, session=session, refs=refs,
                                                                             followed=False, seat=seat))

    def view(self, pair: tuple[Shown, Shown] | None, *, summary: str, lang: str) -> CompareShown:
        """A stored pair on show: the summary, each side's handle (with the positions whose tokens
        differ and where the orders part) and facts; KEEP everywhere without one."""
        if pair is None:
            return keep(CompareShown)
        (a, ta), (b, tb) = ((s.handle, s.trace) for s in pair)
        d = divergence(ta, tb)
        value = functools.partial(wire.side_value, lang=lang, diff=d.token_differs, first=d.first_step,
                                  order=d.order_differs)
        return CompareShown(
            cmp_summary=summary, cmp_canvas_a=value(a, "a"), cmp_canvas_b=value(b, "b"),
            cmp_facts_a=render.facts_html(ta, lang, side="side_a"),
            cmp_facts_b=render.facts_html(tb, lang, side="side_b"),
            cmp_traces=pair,
        )

    def stopped(self, *, lang: str, cmp_stop_key: str = "", session: str | None = None) -> CompareShown:
        """The visitor stopped a compare (the Stop of its live canvases): every decode of the session ends at
        its next step, as the Playground's Stop does (`PlayHandlers.stopped`: the same `stops`, key and wait),
        and the tab shows an empty pair under a banner that says so; the configs stay as they were asked,
        so no other pair stands beside them as if it were theirs (as after a failed compare: `cleared`).
        `cmp_stop_key`: the key its live canvases carried; one that stopped nothing (another's, or the compare
        had just finished) leaves the tab as it is."""
        if not self.stops.halt(session, cmp_stop_key, wait_seconds=STOP_WAIT_SECONDS):
            return keep(CompareShown)
        return self._stopped_view(lang)

    def _stopped_view(self, lang: str) -> CompareShown:
        """A stopped compare's view: an empty pair under the banner."""
        return dataclasses.replace(self.cleared().compare, cmp_summary=t("cmp_stopped", lang))

    @staticmethod
    def cleared() -> CompareCleared:
        """After a failed compare (its error names config A or B): both sides emptied, so the runs of
        another pair of configs never stand beside the error as if they were this one's."""
        empty = {f.name: None if f.name in ("cmp_traces", "cmp_canvas_a", "cmp_canvas_b") else ""
                 for f in dataclasses.fields(CompareShown)}
        return CompareCleared(compare=CompareShown(**empty))
