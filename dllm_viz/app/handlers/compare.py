"""The Compare tab's handlers: a lesson click, a compare of two configs, and their figures.

A lesson (`lessons.LESSONS`) is a pair of configs that differ in one rule; a click fills them in
and decodes them once, on the same prompt and seed, in one batch. The canvases and the summary
answer first; the figures follow from the stored pair (`CompareHandlers.figures`), with no second decode.
"""
from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable

from dllm_viz.app.views import figures as figs
from dllm_viz.app.views import render
from dllm_viz.app.handlers.adapters import integral, parse_config_json
from dllm_viz.app.strings import t
from dllm_viz.app.views.lessons import indel_study_md, measured_table, renoise_study_md, study_md, world_table
from dllm_viz.studies.lessons import LESSONS, NEIGHBOURS, load_measured, measured_model
from dllm_viz.app.handlers.outputs import CompareCleared, CompareFigures, CompareShown, LessonShown, keep
from dllm_viz.studies.world_lessons import load_world_measured_model, load_world_pairs
from dllm_viz.core.analysis import divergence
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


def side_config(side: str, text: str, *, gen_length: int, seed: int) -> DecodeConfig:
    """Config A or B of the Compare tab; its error says which side is wrong ("config B: ...")."""
    try:
        return parse_config_json(text, gen_length=gen_length, seed=seed)
    except ValueError as err:
        raise ValueError(f"config {side}: {err}") from err


def _same(x: Trace, y: Trace, lang: str) -> str:
    """"yes" when two runs drew the same tokens, in `lang`."""
    return t("yes" if x.token_ids == y.token_ids else "no", lang)


class CompareHandlers:
    """The Compare tab's events. `runner_for(model_pick)` is the runner of the picked model;
    `is_world(model_pick)` says whether the world checker can judge its text."""

    def __init__(self, runner_for: Callable[[str | None], Runner], *, is_world: Callable[[str | None], bool]) -> None:
        self.runner_for = runner_for
        self.is_world = is_world
        self.measured = load_measured()
        self.measured_model = measured_model()  # the models the lessons' numbers were measured on
        self.world_model = str(load_world_measured_model() or "world-mdlm")

    def lesson(self, key: str, *, prompt: str, seed: int, gen_length: int, lang: str,
               model_pick: str | None = None) -> LessonShown:
        """One lesson click: fill its configs and text, and decode its compare once."""
        lesson = LESSONS[key]
        a, b = json.dumps(lesson.a), json.dumps(lesson.b)
        shown = self.run(prompt=prompt, seed=seed, gen_length=gen_length, cmp_a=a, cmp_b=b,
                         neighbours=lesson.neighbours, lang=lang, model_pick=model_pick)
        return LessonShown(compare=shown, cmp_a=a, cmp_b=b, neighbours=lesson.neighbours, lesson_key=key,
                           lesson_text=self.lesson_text(key, lang, model_pick=model_pick))

    def lesson_text(self, key: str | None, lang: str, *, model_pick: str | None = None) -> str:
        """A lesson's title, what to look for, and what was measured, naming the model measured on:
        on the world model its correctness table (the numbers of that model), else the prose and
        table measured on the Austen model (`assets/lessons.json`), named as such; a revision lesson
        adds the revision study, counted on the world model and its editing oracle, under either."""
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

    def run(self, *, prompt: str, seed: int, gen_length: int, cmp_a: str, cmp_b: str, neighbours: int,
            lang: str, model_pick: str | None = None) -> CompareShown:
        """Decode A and B on the same prompt and seed (in one batch) and show where they diverge."""
        seed, gen_length = integral(seed), integral(gen_length)
        a, b = (side_config(side, text, gen_length=gen_length, seed=seed) for side, text in (("A", cmp_a), ("B", cmp_b)))
        if a.gen_length != b.gen_length:
            raise ValueError(f"config B: gen_length={b.gen_length} is invalid: expected A's gen_length={a.gen_length}")
        k = max(0, min(int(neighbours or 0), len(NEIGHBOURS)))
        group = [prompt or "", *NEIGHBOURS[:k]]
        # With neighbours, each side also decodes alone in the same call, to show whether batching changed it.
        solo = [prompt or ""] * 2 if k else []
        run = self.runner_for(model_pick)
        traces = run(group * 2 + solo, [a] * len(group) + [b] * len(group) + ([a, b] if k else []))
        ta, tb = traces[0], traces[len(group)]
        summary = render.divergence_text(ta, tb, lang)
        if k:
            summary += "\n\n" + t("batch_note", lang, n=k, a=_same(ta, traces[-2], lang), b=_same(tb, traces[-1], lang))
        return self.view((ta, tb), summary=summary, lang=lang)

    def view(self, pair: tuple[Trace, Trace] | None, *, summary: str, lang: str) -> CompareShown:
        """The text views of a stored pair (KEEP everywhere without one)."""
        if pair is None:
            return keep(CompareShown)
        ta, tb = pair
        diff = set(divergence(ta, tb).token_differs)
        return CompareShown(
            cmp_summary=summary, cmp_canvas_a=render.side_canvas_html(ta, "side_a", lang=lang, diff=diff),
            cmp_canvas_b=render.side_canvas_html(tb, "side_b", lang=lang, diff=diff),
            cmp_facts_a=render.facts_html(ta, lang, side="side_a"), cmp_facts_b=render.facts_html(tb, lang, side="side_b"),
            cmp_traces=(ta, tb),
        )

    @staticmethod
    def cleared() -> CompareCleared:
        """After a failed compare (its error names config A or B): both sides emptied, so the runs of
        another pair of configs never stand beside the error as if they were this one's."""
        empty = {f.name: None if f.name == "cmp_traces" else "" for f in dataclasses.fields(CompareShown)}
        return CompareCleared(compare=CompareShown(**empty),
                              figures=CompareFigures(**{f.name: None for f in dataclasses.fields(CompareFigures)}))

    def figures(self, *, cmp_traces: tuple[Trace, Trace] | None, lang: str) -> CompareFigures:
        """The stored comparison's figures (after `run` or `lesson`; no model call)."""
        if cmp_traces is None:
            return keep(CompareFigures)
        ta, tb = cmp_traces
        rows = max(len(ta.steps), len(tb.steps))  # both heatmaps on one height and one scale
        return CompareFigures(
            cmp_orders=figs.compare_orders(ta, tb, lang=lang),
            cmp_heat_a=figs.confidence_heatmap(ta, lang=lang, rows=rows, side="side_a"),
            cmp_heat_b=figs.confidence_heatmap(tb, lang=lang, rows=rows, side="side_b"),
            cmp_steps_a=figs.steps_plot(ta, lang=lang, side="side_a"),
            cmp_steps_b=figs.steps_plot(tb, lang=lang, side="side_b"),
        )
