"""The playground's handlers: widget values in, rendered values out, keyed by name. No Gradio layout.

`Playground` holds one method per page action (decode, scrub, play, inspect, load a trace, compare,
sweep, the `/generate` API). Each takes plain values and returns a dict keyed by output name (the
`*_OUT` tuples), so tests call them without a server and `ui.build_demo` only maps names onto
components. The model never appears here: decodes go through the injected `run` (see
`core.decoder.Runner`), and everything else is rendered from stored `Trace`s by `render` and `figures`.
"""
from __future__ import annotations

import concurrent.futures
import functools
import hashlib
import itertools
import json
import math
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import gradio as gr
import torch

from dllm_viz.app import figures, render
from dllm_viz.core.config import DecodeConfig
from dllm_viz.app.i18n import t
from dllm_viz.app.lessons import LESSONS, NEIGHBOURS, load_measured, measured_table
from dllm_viz.core.decoder import Runner
from dllm_viz.app.sweep import METRICS, SweepGrid, SweepResult, run_sweep, total_steps
from dllm_viz.core.trace import Trace
from dllm_viz.core.trace_schema import MAX_TRACE_BYTES

# Widget names of the playground's decode settings, as keyword names of `settings_to_config`.
KNOBS = (
    "gen_length", "temperature", "top_k", "decay", "min_k", "steps", "threshold", "block_length",
    "schedule", "confidence", "stages_on", "t_early", "t_middle", "t_late", "seed",
    "confidence_from", "sample_scope", "rng",
)
# Which knobs a schedule reads; the others are greyed out and not passed to DecodeConfig.
SCHEDULE_KNOBS = {
    "topk_decay": {"top_k", "decay"}, "adaptive": {"top_k"}, "fixed_steps": {"steps"}, "threshold": {"threshold"},
}
VIEW_OUT = ("trace", "frame", "canvas", "heatmap", "order", "steps_fig", "facts", "position", "insp_plot",
            "insp_text")
# A decode answers in two parts: the canvas, heatmap and facts first, the other figures in a
# follow-up event, so the browser paints the text and the heatmap before it lays out the rest.
FIRST_OUT = ("trace", "frame", "canvas", "heatmap", "facts", "position")
REST_OUT = ("order", "steps_fig", "insp_plot", "insp_text")
FRAME_OUT = ("canvas", "insp_plot", "insp_text")
COMPARE_OUT = ("cmp_summary", "cmp_canvas_a", "cmp_canvas_b", "cmp_orders", "cmp_heat_a", "cmp_heat_b",
               "cmp_steps_a", "cmp_steps_b", "cmp_facts_a", "cmp_facts_b", "cmp_traces")
SWEEP_OUT = ("sweep_state", "sweep_nfe", "sweep_repeat_3", "sweep_distinct_2", "sweep_mean_logprob",
             "sweep_table", "sweep_summary")
EXPORTS_KEPT = 64  # trace files kept in the export directory
PROGRESS_EVERY = 0.25  # seconds between progress-bar updates during a sweep


# ----- adapters: widget values <-> DecodeConfig ------------------------------------------------
def _integral(value: Any) -> Any:
    """Gradio numbers arrive as floats; pass integral ones on as int, anything else unchanged for validation."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    return value


def settings_to_config(**s: Any) -> DecodeConfig:
    """The DecodeConfig for the playground's widget values (names in KNOBS). Raises ValueError."""
    missing = set(KNOBS) - set(s)
    if missing:
        raise ValueError(f"settings: missing {sorted(missing)}")
    schedule = s["schedule"]
    used = SCHEDULE_KNOBS.get(schedule, set())
    values: dict[str, Any] = {
        "gen_length": _integral(s["gen_length"]), "schedule": schedule,
        "confidence": s["confidence"], "temperature": s["temperature"],
        "min_k": _integral(s["min_k"]), "seed": _integral(s["seed"]),
        "block_length": _integral(s["block_length"]) or None,
        "confidence_from": s["confidence_from"], "sample_scope": s["sample_scope"], "rng": s["rng"],
    }
    for name in ("top_k", "steps"):
        if name in used:
            values[name] = _integral(s[name])
    for name in ("decay", "threshold"):
        if name in used:
            values[name] = s[name]
    if s["stages_on"]:
        values["temperature_stages"] = (s["t_early"], s["t_middle"], s["t_late"])
    return DecodeConfig.from_dict(values)


def config_to_settings(cfg: DecodeConfig) -> dict[str, Any]:
    """Widget values that reproduce `cfg` (the inverse of `settings_to_config` on what it reads)."""
    stages = cfg.temperature_stages
    return {
        "gen_length": cfg.gen_length, "temperature": cfg.temperature, "top_k": cfg.initial_k,
        "decay": cfg.decay, "min_k": cfg.min_k, "steps": cfg.total_steps, "threshold": cfg.threshold,
        "block_length": cfg.block_length or 0, "schedule": cfg.schedule, "confidence": cfg.confidence,
        "stages_on": stages is not None, "t_early": stages[0] if stages else 1.2,
        "t_middle": stages[1] if stages else 1.0, "t_late": stages[2] if stages else 0.7, "seed": cfg.seed,
        "confidence_from": cfg.confidence_from, "sample_scope": cfg.sample_scope, "rng": cfg.rng,
    }


def parse_config_json(text: str | None, *, gen_length: int | None = None, seed: int | None = None) -> DecodeConfig:
    """A DecodeConfig from a JSON object of field names; missing keys take the balanced preset.

    `gen_length` / `seed` are defaults used when the JSON does not set them (the API uses 64 / 0).
    """
    text = (text or "").strip() or "{}"
    try:
        values = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"config_json={text[:80]!r} is invalid: expected a JSON object ({err})") from err
    if not isinstance(values, dict):
        raise ValueError(f"config_json={text[:80]!r} is invalid: expected a JSON object of DecodeConfig fields")
    values = dict(values)
    length = values.pop("gen_length", 64 if gen_length is None else gen_length)
    if seed is not None:
        values.setdefault("seed", seed)
    return DecodeConfig.preset("balanced", length, **values)


def random_seed() -> int:
    """A fresh seed for the "new seed" button, from a non-deterministically seeded torch.Generator."""
    return torch.Generator().seed() % (2**31)


def user_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Turn ValueError (bad settings, bad files) into a visible gr.Error; the session stays usable."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except ValueError as err:
            raise gr.Error(str(err), duration=8) from err

    return wrapper


# ----- handlers ----------------------------------------------------------------------------------
class Playground:
    """Every event handler of the page; plain Python values in, plain values out."""

    def __init__(self, run: Runner, *, examples: Sequence[tuple[str, Trace]] = (), export_dir: str | Path | None = None,
                 new_seed: Callable[[], int] = random_seed) -> None:
        self.run = run
        self.examples = dict(examples)
        self.export_dir = Path(export_dir or tempfile.mkdtemp(prefix="dllm-viz-"))
        self.export_dir.mkdir(parents=True, exist_ok=True)
        self.new_seed = new_seed
        self.measured = load_measured()

    # --- playground --------------------------------------------------------------------------
    def decode(self, *, prompt: str, lang: str, position: int, **settings: Any) -> dict[str, Any]:
        """Decode the prompt with the widget settings; the first part of the view at the last frame."""
        cfg = settings_to_config(**settings)
        trace = self.run([prompt or ""], [cfg])[0]
        return self.view(trace, lang=lang, frame=None, position=position, temperature=cfg.temperature,
                         only=FIRST_OUT)

    def rest(self, *, trace: Trace | None, lang: str, frame: int, position: int, temperature: float) -> dict[str, Any]:
        """The rest of the view after `decode`: order map, schedule, confirmed confidence, inspector."""
        return self.view(trace, lang=lang, frame=frame, position=position, temperature=temperature, only=REST_OUT)

    def view(self, trace: Trace | None, *, lang: str, frame: int | None, position: int | None,
             temperature: float, only: Sequence[str] = VIEW_OUT) -> dict[str, Any]:
        """Everything derived from one trace (or the names in `only`): canvas at `frame` (None = end),
        figures, facts, inspector."""
        if trace is None:
            return {name: gr.skip() for name in only}
        n, G = render.frame_count(trace), trace.config.gen_length
        f = n if frame is None else max(0, min(int(frame), n))
        pos = max(0, min(int(position or 0), max(0, G - 1)))
        parts: dict[str, Callable[[], Any]] = {
            "trace": lambda: trace,
            "frame": lambda: gr.update(maximum=max(1, n), value=f),
            "heatmap": lambda: figures.confidence_heatmap(trace, lang=lang),
            "order": lambda: figures.order_map(trace, lang=lang),
            "steps_fig": lambda: figures.steps_plot(trace, lang=lang),
            "facts": lambda: render.facts_html(trace, lang),
            "position": lambda: gr.update(maximum=max(1, G - 1), value=pos),
        }
        out = {name: parts[name]() for name in only if name in parts}
        if set(FRAME_OUT) & set(only):
            frame_parts = self.frame_view(trace, lang=lang, frame=f, position=pos, temperature=temperature)
            out |= {name: frame_parts[name] for name in FRAME_OUT if name in only}
        return out

    def frame_view(self, trace: Trace | None, *, lang: str, frame: int, position: int,
                   temperature: float) -> dict[str, Any]:
        """Canvas and inspector at one frame: replayed from the stored trace, no model call."""
        if trace is None or trace.config.gen_length == 0:
            return {name: gr.skip() for name in FRAME_OUT}
        pos = max(0, min(int(position or 0), trace.config.gen_length - 1))
        insp = render.inspect(trace, pos, int(frame), float(temperature), lang=lang)
        if insp.candidates:
            note = t("insp_tempered_note", lang, n=len(insp.candidates), m=insp.top_mass)
        else:
            note = t("insp_no_candidates", lang)
        return {
            "canvas": render.canvas_html(trace, int(frame), lang=lang, selected=pos),
            "insp_plot": render.inspector_html(insp, lang),
            "insp_text": f"{insp.explanation}\n\n<small>{note}</small>",
        }

    def tick(self, *, trace: Trace | None, frame: int, lang: str, position: int, temperature: float) -> dict[str, Any]:
        """One frame forward while playing; stops the timer at the end."""
        n = render.frame_count(trace) if trace is not None else 0
        f = min(int(frame) + 1, n)
        playing = f < n
        out = self.frame_view(trace, lang=lang, frame=f, position=position, temperature=temperature)
        return out | {"frame": f, "timer": gr.Timer(active=playing), "playing": playing,
                      "play": t("pause" if playing else "play", lang)}

    def toggle_play(self, *, trace: Trace | None, frame: int, playing: bool, lang: str) -> dict[str, Any]:
        """Play from the current frame (from the start when at the end), or pause."""
        n = render.frame_count(trace) if trace is not None else 0
        start = not playing and n > 0
        f = 0 if start and int(frame) >= n else int(frame)
        return {"timer": gr.Timer(active=start), "playing": start, "frame": f,
                "play": t("pause" if start else "play", lang)}

    def click_token(self, *, trace: Trace | None, clicked: int, frame: int, lang: str, temperature: float) -> dict[str, Any]:
        return {"position": clicked} | self.frame_view(trace, lang=lang, frame=frame, position=clicked,
                                                       temperature=temperature)

    def preset(self, name: str, *, gen_length: int) -> dict[str, Any]:
        """Widget values of one row of the article's table for the current gen length."""
        cfg = DecodeConfig.preset(name, _integral(gen_length))
        s = config_to_settings(cfg)
        return {k: s[k] for k in ("temperature", "top_k", "decay", "schedule")} | {"stages_on": False}

    def schedule_changed(self, *, schedule: str) -> dict[str, Any]:
        used = SCHEDULE_KNOBS.get(schedule, set())
        return {k: gr.update(interactive=k in used) for k in ("top_k", "decay", "steps", "threshold")}

    def export(self, *, trace: Trace | None) -> str | None:
        """Write the trace JSON to a file named by its content hash; returns the path to download.

        Gradio copies the file into its own cache, so only the newest EXPORTS_KEPT files are kept here.
        """
        if trace is None:
            return None
        text = trace.to_json()
        path = self.export_dir / f"trace-{hashlib.sha1(text.encode()).hexdigest()[:12]}.json"
        path.write_text(text, encoding="utf-8")
        files = sorted(self.export_dir.glob("trace-*.json"), key=lambda p: p.stat().st_mtime)
        for old in files[:-EXPORTS_KEPT]:
            old.unlink(missing_ok=True)
        return str(path)

    def load_trace(self, trace: Trace, *, lang: str) -> dict[str, Any]:
        """Show a stored trace (uploaded or example) and set the widgets to its config."""
        view = self.view(trace, lang=lang, frame=None, position=0, temperature=trace.config.temperature)
        settings = config_to_settings(trace.config)
        prompt = trace.prompt_text if trace.prompt_text is not None else "".join(
            trace.token_text(i) for i in trace.prompt_ids)
        return view | settings | {"prompt": prompt}

    def upload(self, *, path: str | None, lang: str) -> dict[str, Any]:
        if not path:
            raise ValueError("trace file: nothing was uploaded")
        try:
            size = Path(path).stat().st_size
            if size > MAX_TRACE_BYTES:  # refused before it is read (app.py also caps uploads at this size)
                raise ValueError(f"trace file has {size} bytes: this viewer reads at most {MAX_TRACE_BYTES}")
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as err:
            raise ValueError(t("err_trace", lang, e=err)) from err
        return self.load_trace(Trace.from_json(text), lang=lang)

    def example(self, *, example: str, lang: str) -> dict[str, Any]:
        if example not in self.examples:
            raise ValueError(f"example={example!r} is invalid: expected one of {' | '.join(self.examples)}")
        return self.load_trace(self.examples[example], lang=lang)

    def reseed(self) -> int:
        return self.new_seed()

    # --- compare -------------------------------------------------------------------------------
    def lesson(self, key: str, *, lang: str) -> dict[str, Any]:
        """Fill the two config boxes and the teaching text of one lesson."""
        lesson = LESSONS[key]
        return {
            "cmp_a": json.dumps(lesson.a), "cmp_b": json.dumps(lesson.b), "neighbours": lesson.neighbours,
            "lesson_key": key, "lesson_text": self.lesson_text(key, lang),
        }

    def lesson_text(self, key: str | None, lang: str) -> str:
        if not key:
            return ""
        lesson = LESSONS[key]
        parts = [f"### {lesson.text('title', lang)}", f"**{t('look_for', lang)}.** {lesson.text('look_for', lang)}"]
        measured = lesson.text("measured", lang)
        numbers = self.measured.get(key)
        if measured or numbers:
            parts.append(f"**{t('measured', lang)}.** {measured}")
        if numbers:
            parts.append(measured_table(numbers))
        return "\n\n".join(parts)

    def compare(self, *, prompt: str, seed: int, gen_length: int, cmp_a: str, cmp_b: str, neighbours: int,
                lang: str) -> dict[str, Any]:
        """Decode A and B on the same prompt and seed (in one batch) and show where they diverge."""
        seed, gen_length = _integral(seed), _integral(gen_length)
        a = parse_config_json(cmp_a, gen_length=gen_length, seed=seed)
        b = parse_config_json(cmp_b, gen_length=gen_length, seed=seed)
        if a.gen_length != b.gen_length:
            raise ValueError(f"gen_length={b.gen_length} of config B is invalid: expected A's gen_length={a.gen_length}")
        k = max(0, min(int(neighbours or 0), len(NEIGHBOURS)))
        others = list(NEIGHBOURS[:k])
        group = [prompt or "", *others]
        traces = self.run(group * 2, [a] * len(group) + [b] * len(group))
        ta, tb = traces[0], traces[len(group)]
        summary = render.divergence_text(ta, tb, lang)
        if k:
            solo = self.run([prompt or ""] * 2, [a, b])
            same = lambda x, y: t("yes" if x.token_ids == y.token_ids else "no", lang)  # noqa: E731
            summary += "\n\n" + t("batch_note", lang, n=k, a=same(ta, solo[0]), b=same(tb, solo[1]))
        return self.compare_view((ta, tb), summary=summary, lang=lang)

    def compare_view(self, pair: tuple[Trace, Trace] | None, *, summary: str, lang: str) -> dict[str, Any]:
        if pair is None:
            return {name: gr.skip() for name in COMPARE_OUT}
        ta, tb = pair
        diff = set(render.divergence(ta, tb).token_differs)
        return {
            "cmp_summary": summary,
            "cmp_canvas_a": render.canvas_html(ta, lang=lang, diff=diff, legend=False),
            "cmp_canvas_b": render.canvas_html(tb, lang=lang, diff=diff, legend=False),
            "cmp_orders": figures.compare_orders(ta, tb, lang=lang),
            "cmp_heat_a": figures.confidence_heatmap(ta, lang=lang),
            "cmp_heat_b": figures.confidence_heatmap(tb, lang=lang),
            "cmp_steps_a": figures.steps_plot(ta, lang=lang),
            "cmp_steps_b": figures.steps_plot(tb, lang=lang),
            "cmp_facts_a": render.facts_html(ta, lang),
            "cmp_facts_b": render.facts_html(tb, lang),
            "cmp_traces": (ta, tb),
        }

    # --- sweep ---------------------------------------------------------------------------------
    def sweep(self, *, temps: list[float], divisors: list[str], decays: list[float], n_seeds: int, prompts: str,
              gen_length: int, lang: str, progress: Callable[..., Any] | None = None) -> dict[str, Any]:
        """Run the grid as one batched decode, reporting progress per batched step."""
        lines = tuple(p for p in (prompts or "").splitlines() if p.strip())
        for name, values in (("sweep_temps", temps), ("sweep_topk", divisors), ("sweep_decays", decays),
                             ("sweep_prompts", lines)):
            if not values:
                raise ValueError(t("err_empty_grid", lang, v=t(name, lang)))
        grid = SweepGrid(
            temperatures=tuple(sorted(float(x) for x in temps)),
            divisors=tuple(sorted((int(str(d).removeprefix("L/")) for d in divisors), reverse=True)),  # k grows →
            decays=tuple(sorted(float(x) for x in decays)), seeds=tuple(range(_integral(n_seeds))),
            prompts=lines, gen_length=_integral(gen_length),
        )
        _, configs, _ = grid.requests()
        total = max(1, total_steps(configs))
        done = itertools.count(1)  # request-steps finished; next() is atomic under the GIL
        finished = [0]

        def on_step(i: int, rec: Any) -> None:  # may run in the engine's worker thread
            finished[0] = next(done)

        if progress is None:
            result = run_sweep(self.run, grid, on_step=on_step)
            return self.sweep_view(result, lang=lang)
        # Gradio's progress bar can only be updated from the handler's own thread, so the decode
        # runs in a helper thread and this one reports until it finishes.
        with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="dllm-viz-sweep") as pool:
            future = pool.submit(run_sweep, self.run, grid, on_step=on_step)
            while True:
                progress(min(1.0, finished[0] / total), desc=f"{finished[0]}/{total} request-steps")
                try:
                    result = future.result(timeout=PROGRESS_EVERY)
                    break
                except concurrent.futures.TimeoutError:
                    continue
        return self.sweep_view(result, lang=lang)

    def sweep_view(self, result: SweepResult | None, *, lang: str) -> dict[str, Any]:
        if result is None:
            return {name: gr.skip() for name in SWEEP_OUT}
        g = result.grid
        out: dict[str, Any] = {"sweep_state": result}
        for metric, lower_better in METRICS.items():
            out[f"sweep_{metric}"] = figures.sweep_heatmap(
                result.table(metric), g.temperatures, g.divisors, title=t(f"m_{metric}", lang), lang=lang,
                reverse=lower_better,
            )
        columns = ["temperature", "top_k", "decay", "runs", *METRICS]
        out["sweep_table"] = gr.update(value=[[r[c] for c in columns] for r in result.rows], headers=columns)
        out["sweep_summary"] = t("sweep_done", lang, n=g.size, s=result.wall_time)
        return out

    # --- API -----------------------------------------------------------------------------------
    def generate(self, prompt: str, config_json: str) -> tuple[str, str]:
        """Decode `prompt` with a JSON object of DecodeConfig fields (missing keys: balanced preset)."""
        cfg = parse_config_json(config_json)
        trace = self.run([prompt or ""], [cfg])[0]
        return trace.text or "", trace.to_json()
