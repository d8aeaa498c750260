"""The Gradio page: `build_demo(run, ...) -> gr.Blocks`. Thin: it lays out widgets and wires events.

The model never appears here: `run(prompts, configs, *, on_step=None, record_candidates=5)` is
injected by the entry script (plain `decode` on a model, or the shared engine). Every event calls
a `playground.Playground` handler by name; everything shown is rendered from stored `Trace`s, so
scrubbing, inspecting and replaying an uploaded trace never call the model.

Gradio 6 takes theme and CSS in `launch()`: launch with `**launch_options()` (the canvas CSS lives there).
"""
from __future__ import annotations

import functools
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import gradio as gr

from dllm_viz.app import render
from dllm_viz.core.config import CONFIDENCE_FROM, CONFIDENCES, MAX_SEED, PRESETS, RNG_MODES, SAMPLE_SCOPES, SCHEDULES
from dllm_viz.core.config import DecodeConfig
from dllm_viz.app.i18n import LANG_CHOICES, t
from dllm_viz.app.lessons import DEFAULT_PROMPTS, LESSONS, NEIGHBOURS
from dllm_viz.app.playground import (
    COMPARE_OUT,
    FIRST_OUT,
    FRAME_OUT,
    KNOBS,
    REST_OUT,
    SCHEDULE_KNOBS,
    SWEEP_OUT,
    VIEW_OUT,
    Playground,
    user_errors,
    config_to_settings,
    random_seed,
)
from dllm_viz.core.decoder import Runner
from dllm_viz.core.trace import Trace

PLAY_INTERVAL = 0.35  # seconds per frame while playing
SWEEP_TEMPERATURES = (0.3, 0.6, 0.9, 1.2, 1.5, 2.0)
SWEEP_DIVISORS = (8, 6, 4, 3, 2)
SWEEP_DECAYS = (0.85, 0.9, 0.95, 1.0)


# ----- layout ------------------------------------------------------------------------------------
PAGE_CSS = render.CANVAS_CSS + """
.gradio-container { max-width: 1500px !important; }
#dv-header h1 { margin-bottom: 0.2em; }
#dv-presets button { min-width: 0; }
#dv-play { max-width: 130px; }
.dv-lesson-buttons button { min-width: 0; }
"""


def launch_options() -> dict[str, Any]:
    """Theme and CSS; Gradio 6 takes them in `launch()`, so app.py and the tests pass these."""
    theme = gr.themes.Soft(primary_hue="violet", secondary_hue="sky", neutral_hue="slate",
                           font=[gr.themes.Font(f) for f in ("Inter", "ui-sans-serif", "system-ui", "sans-serif")])  # no web fonts
    return {"theme": theme, "css": PAGE_CSS}


def _header(lang: str) -> str:
    return f"# {t('title', lang)}\n{t('subtitle', lang)}"


def _bold(key: str) -> Callable[[str], str]:
    return lambda lang: f"**{t(key, lang)}**"


CLICK_JS = """
element.addEventListener('click', (e) => {
  const el = e.target.closest('[data-pos]');
  if (el) trigger('click', {position: Number(el.dataset.pos)});
});
"""


def build_demo(
    run: Runner,
    *,
    examples: Sequence[tuple[str, Trace]] = (),
    model_name: str = "model",
    max_length: int | None = None,
    default_prompt: str = DEFAULT_PROMPTS[0],
    concurrency_limit: int | None = 1,
    new_seed: Callable[[], int] = random_seed,
    export_dir: str | Path | None = None,
) -> gr.Blocks:
    """The whole page. `run` decodes (see `core.decoder.Runner`); `examples` are (name, trace) shown first."""
    pg = Playground(run, examples=examples, export_dir=export_dir, new_seed=new_seed)
    lang0 = "en"
    first = examples[0][1] if examples else None
    s0 = config_to_settings(first.config if first else DecodeConfig.preset("balanced", 64))
    v0 = pg.view(first, lang=lang0, frame=None, position=0, temperature=s0["temperature"]) if first else {}
    longest = min(256, (max_length or 256) - 16)
    c: dict[str, Any] = {}
    i18n: list[tuple[Any, str | Callable[[str], str], str]] = []  # (component, text, attribute) per language

    def reg(name: str, comp: Any, key: str | Callable[[str], str] | None = None, attr: str = "label") -> Any:
        c[name] = comp
        if key is not None:
            i18n.append((comp, key, attr))
        return comp

    def initial(name: str, default: Any = None) -> Any:
        value = v0.get(name, default)
        return value if not isinstance(value, dict) else default

    with gr.Blocks(title="dllm-viz", delete_cache=(3600, 3600)) as demo:
        with gr.Row(elem_id="dv-header", equal_height=True):
            reg("header", gr.Markdown(_header(lang0)), _header, "value")
            with gr.Column(scale=0, min_width=200):
                reg("lang", gr.Radio(list(LANG_CHOICES), value=lang0, label=t("language", lang0), elem_id="dv-lang"),
                    "language")
                model_line = lambda lang: f"<small>{t('model', lang)}: `{model_name}`</small>"  # noqa: E731
                reg("model_line", gr.Markdown(model_line(lang0)), model_line, "value")
        c["trace"] = gr.State(first)
        c["playing"] = gr.State(False)
        c["timer"] = gr.Timer(PLAY_INTERVAL, active=False)
        with gr.Tabs():
            with reg("tab_play", gr.Tab(t("tab_play", lang0)), "tab_play"):
                with gr.Row():
                    with gr.Column(scale=4, min_width=320):
                        reg("prompt", gr.Textbox(first.prompt_text if first else default_prompt, lines=2,
                                                 label=t("prompt", lang0)), "prompt")
                        reg("presets_md", gr.Markdown(_bold("presets")(lang0)), _bold("presets"), "value")
                        with gr.Row(elem_id="dv-presets"):
                            for name in PRESETS:
                                reg(f"preset_{name}", gr.Button(t(f"preset_{name}", lang0), size="sm"),
                                    f"preset_{name}", "value")
                        reg("gen_length", gr.Slider(8, longest, s0["gen_length"], step=8, label=t("gen_length", lang0)),
                            "gen_length")
                        reg("temperature", gr.Slider(0, 2.5, s0["temperature"], step=0.05,
                                                     label=t("temperature", lang0), elem_id="dv-temperature"), "temperature")
                        with reg("schedule_box", gr.Accordion(t("schedule_box", lang0), open=True), "schedule_box"):
                            reg("schedule", gr.Dropdown(list(SCHEDULES), value=s0["schedule"], label=t("schedule", lang0)),
                                "schedule")
                            used = SCHEDULE_KNOBS[s0["schedule"]]
                            with gr.Row():
                                reg("top_k", gr.Slider(1, 128, s0["top_k"], step=1, label=t("top_k", lang0),
                                                       interactive="top_k" in used), "top_k")
                                reg("decay", gr.Slider(0.5, 1.0, s0["decay"], step=0.01, label=t("decay", lang0),
                                                       interactive="decay" in used), "decay")
                            with gr.Row():
                                reg("min_k", gr.Slider(1, 16, s0["min_k"], step=1, label=t("min_k", lang0)), "min_k")
                                reg("steps", gr.Slider(1, 256, s0["steps"], step=1, label=t("steps", lang0),
                                                       interactive="steps" in used), "steps")
                            with gr.Row():
                                reg("threshold", gr.Slider(0.05, 1.0, s0["threshold"], step=0.01,
                                                           label=t("threshold", lang0),
                                                           interactive="threshold" in used), "threshold")
                                reg("block_length", gr.Slider(0, 128, s0["block_length"], step=8,
                                                              label=t("block_length", lang0)), "block_length")
                        with reg("sampling_box", gr.Accordion(t("sampling_box", lang0), open=True), "sampling_box"):
                            reg("confidence", gr.Dropdown(list(CONFIDENCES), value=s0["confidence"],
                                                          label=t("confidence", lang0)), "confidence")
                            reg("stages_on", gr.Checkbox(s0["stages_on"], label=t("stages_on", lang0)), "stages_on")
                            with gr.Row():
                                for k in ("t_early", "t_middle", "t_late"):
                                    reg(k, gr.Slider(0, 2.5, s0[k], step=0.05, label=t(k, lang0), min_width=90), k)
                            with gr.Row(equal_height=True):
                                reg("seed", gr.Number(s0["seed"], precision=0, minimum=0, maximum=MAX_SEED,
                                                      label=t("seed", lang0), scale=2), "seed")
                                reg("new_seed", gr.Button(t("new_seed", lang0), size="sm", scale=1), "new_seed", "value")
                        with reg("teaching", gr.Accordion(t("teaching", lang0), open=False), "teaching"):
                            reg("confidence_from", gr.Radio(list(CONFIDENCE_FROM), value=s0["confidence_from"],
                                                            label=t("confidence_from", lang0)), "confidence_from")
                            reg("sample_scope", gr.Radio(list(SAMPLE_SCOPES), value=s0["sample_scope"],
                                                         label=t("sample_scope", lang0)), "sample_scope")
                            reg("rng", gr.Radio(list(RNG_MODES), value=s0["rng"], label=t("rng", lang0)), "rng")
                        reg("run", gr.Button(t("run", lang0), variant="primary"), "run", "value")
                        with reg("trace_io", gr.Accordion(t("trace_io", lang0), open=True), "trace_io"):
                            reg("example", gr.Dropdown([n for n, _ in examples], value=examples[0][0] if examples else None,
                                                       label=t("examples", lang0)), "examples")
                            with gr.Row():
                                reg("download", gr.DownloadButton(t("download", lang0), value=pg.export(trace=first),
                                                                  size="sm"), "download")
                                reg("upload", gr.UploadButton(t("upload", lang0), file_types=[".json"], type="filepath",
                                                              size="sm"), "upload")
                    with gr.Column(scale=8):
                        reg("canvas", gr.HTML(initial("canvas", ""), js_on_load=CLICK_JS, elem_id="dv-canvas"))
                        with gr.Row(equal_height=True):
                            reg("play", gr.Button(t("play", lang0), variant="primary", elem_id="dv-play", scale=0, min_width=110),
                                "play", "value")
                            n0 = render.frame_count(first) if first else 1
                            reg("frame", gr.Slider(0, max(1, n0), n0, step=1, label=t("frame", lang0),
                                                   elem_id="dv-frame"), "frame")
                        reg("facts", gr.HTML(initial("facts", ""), js_on_load=None))
                        reg("heatmap", gr.Plot(initial("heatmap"), show_label=False, elem_id="dv-heatmap"))
                        with gr.Row():
                            with gr.Column():
                                reg("order", gr.Plot(initial("order"), show_label=False, elem_id="dv-order"))
                                reg("inspector_md", gr.Markdown(_bold("inspector")(lang0)), _bold("inspector"), "value")
                                reg("position", gr.Slider(0, max(1, (first.config.gen_length if first else 64) - 1), 0,
                                                          step=1, label=t("position", lang0), elem_id="dv-position"),
                                    "position")
                                reg("insp_plot", gr.HTML(initial("insp_plot", ""), js_on_load=render.INSPECTOR_JS,
                                                         elem_id="dv-inspector"))
                                reg("insp_text", gr.Markdown(initial("insp_text", "")))
                            reg("steps_fig", gr.Plot(initial("steps_fig"), show_label=False, elem_id="dv-steps"))
            with reg("tab_compare", gr.Tab(t("tab_compare", lang0)), "tab_compare"):
                reg("lessons_md", gr.Markdown(_bold("lessons")(lang0)), _bold("lessons"), "value")
                c["lesson_key"] = gr.State("polluted")
                c["cmp_traces"] = gr.State(None)
                with gr.Row(elem_classes="dv-lesson-buttons"):
                    for key, lesson in LESSONS.items():
                        reg(f"lesson_{key}", gr.Button(lesson.title[0], size="sm"),
                            functools.partial(lambda ls, lang: ls.text("title", lang), lesson), "value")
                reg("lesson_text", gr.Markdown(pg.lesson_text("polluted", lang0)))
                reg("compare_note", gr.Markdown(f"<small>{t('compare_note', lang0)}</small>"),
                    lambda lang: f"<small>{t('compare_note', lang)}</small>", "value")
                with gr.Row():
                    reg("cmp_a", gr.Code(json.dumps(LESSONS["polluted"].a), language="json", label=t("config_a", lang0),
                                         lines=2), "config_a")
                    reg("cmp_b", gr.Code(json.dumps(LESSONS["polluted"].b), language="json", label=t("config_b", lang0),
                                         lines=2), "config_b")
                with gr.Row(equal_height=True):
                    reg("neighbours", gr.Slider(0, len(NEIGHBOURS), 0, step=1, label=t("neighbours", lang0), scale=3),
                        "neighbours")
                    reg("compare_run", gr.Button(t("compare_run", lang0), variant="primary", scale=1), "compare_run", "value")
                reg("cmp_summary", gr.Markdown(""))
                with gr.Row():
                    reg("cmp_canvas_a", gr.HTML("", js_on_load=None, label="A"))
                    reg("cmp_canvas_b", gr.HTML("", js_on_load=None, label="B"))
                reg("cmp_orders", gr.Plot(show_label=False))
                with gr.Row():
                    reg("cmp_heat_a", gr.Plot(show_label=False))
                    reg("cmp_heat_b", gr.Plot(show_label=False))
                with gr.Row():
                    reg("cmp_steps_a", gr.Plot(show_label=False))
                    reg("cmp_steps_b", gr.Plot(show_label=False))
                with gr.Row():
                    reg("cmp_facts_a", gr.HTML("", js_on_load=None))
                    reg("cmp_facts_b", gr.HTML("", js_on_load=None))
            with reg("tab_sweep", gr.Tab(t("tab_sweep", lang0)), "tab_sweep"):
                reg("sweep_intro", gr.Markdown(t("sweep_intro", lang0)), "sweep_intro", "value")
                c["sweep_state"] = gr.State(None)
                with gr.Row():
                    reg("sweep_temps", gr.CheckboxGroup(list(SWEEP_TEMPERATURES), value=[0.6, 0.9, 1.2, 1.5],
                                                        label=t("sweep_temps", lang0)), "sweep_temps")
                    reg("sweep_divisors", gr.CheckboxGroup([f"L/{d}" for d in SWEEP_DIVISORS],
                                                           value=["L/6", "L/4", "L/3"], label=t("sweep_topk", lang0)),
                        "sweep_topk")
                    reg("sweep_decays", gr.CheckboxGroup(list(SWEEP_DECAYS), value=[0.9], label=t("sweep_decays", lang0)),
                        "sweep_decays")
                with gr.Row():
                    reg("sweep_prompts", gr.Textbox("\n".join(DEFAULT_PROMPTS[:2]), lines=2,
                                                    label=t("sweep_prompts", lang0), scale=3), "sweep_prompts")
                    with gr.Column(scale=2):
                        reg("sweep_seeds", gr.Slider(1, 8, 2, step=1, label=t("sweep_seeds", lang0)), "sweep_seeds")
                        reg("sweep_gen_length", gr.Slider(8, longest, 32, step=8, label=t("gen_length", lang0)),
                            "gen_length")
                reg("sweep_run", gr.Button(t("sweep_run", lang0), variant="primary"), "sweep_run", "value")
                reg("sweep_summary", gr.Markdown(""))
                with gr.Row():
                    reg("sweep_nfe", gr.Plot(show_label=False))
                    reg("sweep_repeat_3", gr.Plot(show_label=False))
                with gr.Row():
                    reg("sweep_distinct_2", gr.Plot(show_label=False))
                    reg("sweep_mean_logprob", gr.Plot(show_label=False))
                reg("sweep_table", gr.Dataframe(label=t("sweep_table", lang0), interactive=False), "sweep_table")
            with reg("tab_about", gr.Tab(t("tab_about", lang0)), "tab_about"):
                reg("about", gr.Markdown(t("about_md", lang0)), "about_md", "value")

        _wire_events(pg, c, i18n, concurrency_limit)
        gr.api(user_errors(pg.generate), api_name="generate", concurrency_limit=concurrency_limit, concurrency_id="decode")
    return demo


def _wire_events(pg: Playground, c: dict[str, Any], i18n: list[tuple[Any, Any, str]],
                 concurrency_limit: int | None) -> None:
    """Connect widgets to `Playground` handlers by name; handlers never see components."""

    def wire(trigger: Callable[..., Any], fn: Callable[..., dict[str, Any]], ins: Sequence[str],
             outs: Sequence[str], **kw: Any) -> Any:
        in_names, out_names = tuple(ins), tuple(outs)

        @user_errors
        def handler(*values: Any) -> Any:
            result = fn(**dict(zip(in_names, values)))
            out = tuple(result[n] for n in out_names)
            return out[0] if len(out) == 1 else out

        return trigger(handler, inputs=[c[n] for n in in_names], outputs=[c[n] for n in out_names],
                       api_visibility="private", **kw)

    def _export(trace: Trace | None) -> str | None:
        return pg.export(trace=trace)

    decode_kw = dict(concurrency_limit=concurrency_limit, concurrency_id="decode", trigger_mode="always_last",
                     show_progress="minimal")
    decode_in = ("prompt", "lang", "position", *KNOBS)
    frame_in = ("trace", "lang", "frame", "position", "temperature")
    settings_out = (*KNOBS, "prompt")

    def decode_on(trigger: Callable[..., Any]) -> None:
        first = wire(trigger, pg.decode, decode_in, FIRST_OUT, **decode_kw)
        wire(first.then, pg.rest, frame_in, REST_OUT, show_progress="hidden").then(
            _export, inputs=[c["trace"]], outputs=[c["download"]], api_visibility="private")

    def then_decode(event: Any) -> None:
        decode_on(event.then)

    for name in ("run",):
        decode_on(c[name].click)
    decode_on(c["prompt"].submit)
    decode_on(c["seed"].submit)
    for name in ("gen_length", "temperature", "top_k", "decay", "min_k", "steps", "threshold", "block_length",
                 "t_early", "t_middle", "t_late"):
        decode_on(c[name].release)  # release re-runs the decode at once; no Run click needed
    for name in ("confidence", "stages_on", "confidence_from", "sample_scope", "rng"):
        decode_on(c[name].input)
    then_decode(wire(c["schedule"].input, pg.schedule_changed, ("schedule",), ("top_k", "decay", "steps", "threshold")))
    then_decode(c["new_seed"].click(pg.reseed, outputs=[c["seed"]], api_visibility="private"))
    for name in PRESETS:
        then_decode(wire(c[f"preset_{name}"].click, functools.partial(pg.preset, name), ("gen_length",),
                         ("temperature", "top_k", "decay", "schedule", "stages_on")))

    # Replay from the stored trace: scrubber, inspector, play/pause. No model call.
    view_kw = dict(trigger_mode="always_last", show_progress="hidden")
    for name in ("frame", "position"):
        wire(c[name].input, pg.frame_view, frame_in, FRAME_OUT, **view_kw)
    # Dragging the temperature re-tempers the inspector's stored candidates in the browser
    # (render.INSPECTOR_JS); the release that follows re-runs the decode.
    wire(c["timer"].tick, pg.tick, frame_in, (*FRAME_OUT, "frame", "timer", "playing", "play"), **view_kw)
    wire(c["play"].click, pg.toggle_play, ("trace", "frame", "playing", "lang"),
         ("timer", "playing", "frame", "play")).then(
        user_errors(lambda *v: tuple(pg.frame_view(**dict(zip(frame_in, v)))[n] for n in FRAME_OUT)),
        inputs=[c[n] for n in frame_in], outputs=[c[n] for n in FRAME_OUT], api_visibility="private",
        show_progress="hidden")

    @user_errors
    def on_click(trace: Trace | None, frame: int, lang: str, temperature: float, evt: gr.EventData) -> Any:
        clicked = (evt._data or {}).get("position") if isinstance(evt._data, dict) else None
        if trace is None or clicked is None:
            return gr.skip(), gr.skip(), gr.skip(), gr.skip()
        out = pg.click_token(trace=trace, clicked=int(clicked), frame=frame, lang=lang, temperature=temperature)
        return tuple(out[n] for n in ("position", *FRAME_OUT))

    c["canvas"].click(on_click, inputs=[c["trace"], c["frame"], c["lang"], c["temperature"]],
                      outputs=[c[n] for n in ("position", *FRAME_OUT)], api_visibility="private",
                      show_progress="minimal")

    # Traces in and out.
    load_out = (*VIEW_OUT, *settings_out)
    wire(c["example"].input, pg.example, ("example", "lang"), load_out).then(
        _export, inputs=[c["trace"]], outputs=[c["download"]], api_visibility="private")
    c["upload"].upload(user_errors(lambda path, lang: tuple(pg.upload(path=path, lang=lang)[n] for n in load_out)),
                       inputs=[c["upload"], c["lang"]], outputs=[c[n] for n in load_out],
                       api_visibility="private").then(
        _export, inputs=[c["trace"]], outputs=[c["download"]], api_visibility="private")

    # Compare.
    compare_in = ("prompt", "seed", "gen_length", "cmp_a", "cmp_b", "neighbours", "lang")
    for key in LESSONS:
        wire(c[f"lesson_{key}"].click, functools.partial(pg.lesson, key), ("lang",),
             ("cmp_a", "cmp_b", "neighbours", "lesson_key", "lesson_text")).then(
            user_errors(lambda *v: tuple(pg.compare(**dict(zip(compare_in, v)))[n] for n in COMPARE_OUT)),
            inputs=[c[n] for n in compare_in], outputs=[c[n] for n in COMPARE_OUT], api_visibility="private",
            concurrency_limit=concurrency_limit, concurrency_id="decode")
    wire(c["compare_run"].click, pg.compare, compare_in, COMPARE_OUT, concurrency_limit=concurrency_limit,
         concurrency_id="decode")

    # Sweep: one batched decode with a progress bar.
    @user_errors
    def on_sweep(temps: list[float], divisors: list[str], decays: list[float], n_seeds: int, prompts: str,
                 gen_length: int, lang: str, progress: gr.Progress = gr.Progress()) -> Any:
        progress(0.0, desc="decoding")
        out = pg.sweep(temps=temps, divisors=divisors, decays=decays, n_seeds=n_seeds, prompts=prompts,
                       gen_length=gen_length, lang=lang, progress=progress)
        return tuple(out[n] for n in SWEEP_OUT)

    sweep_in = ("sweep_temps", "sweep_divisors", "sweep_decays", "sweep_seeds", "sweep_prompts", "sweep_gen_length", "lang")
    c["sweep_run"].click(on_sweep, inputs=[c[n] for n in sweep_in], outputs=[c[n] for n in SWEEP_OUT],
                         api_visibility="private", concurrency_limit=concurrency_limit, concurrency_id="decode")

    # Plotly sizes a figure updated inside a hidden tab to its default width; a resize event when
    # a tab is shown lets the responsive figures fit their containers again. Browser-only.
    for tab in ("tab_play", "tab_compare", "tab_sweep"):
        c[tab].select(None, js="() => { setTimeout(() => window.dispatchEvent(new Event('resize')), 60); }")

    # Language: every label and text, and the views re-rendered.
    relabel_in = ("lang", "trace", "frame", "position", "temperature", "cmp_traces", "sweep_state", "lesson_key")
    rendered = (*VIEW_OUT, *COMPARE_OUT, *SWEEP_OUT, "lesson_text", "play", "playing", "timer")

    @user_errors
    def on_lang(*values: Any) -> Any:
        v = dict(zip(relabel_in, values))
        lang = v["lang"]
        labels = [gr.update(**{attr: key(lang) if callable(key) else t(key, lang)}) for _, key, attr in i18n]
        out = pg.view(v["trace"], lang=lang, frame=v["frame"], position=v["position"], temperature=v["temperature"])
        pair = v["cmp_traces"]
        out |= pg.compare_view(pair, summary=render.divergence_text(*pair, lang) if pair else "", lang=lang)
        out |= pg.sweep_view(v["sweep_state"], lang=lang)
        out |= {"lesson_text": pg.lesson_text(v["lesson_key"], lang), "play": t("play", lang), "playing": False,
                "timer": gr.Timer(active=False)}
        return (*labels, *(out[n] for n in rendered))

    c["lang"].change(on_lang, inputs=[c[n] for n in relabel_in], outputs=[comp for comp, _, _ in i18n] + [c[n] for n in rendered],
                     api_visibility="private", show_progress="hidden")
