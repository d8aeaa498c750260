"""Command line: `python -m dllm_viz generate ...` decodes a prompt; `export-policy` writes an SGLang policy;
`serve` serves the playground (`dllm_viz.app.main`); `diff A.json B.json` says where two traces part;
`fork TRACE.json --step S ...` continues a trace from a step with a change; `export TRACE.json --to anim.gif`
writes its animation.

Flags mirror DecodeConfig field by field (generated from the knob specs, so they cannot drift: a rule
plug-in's knobs get their flags with no edit here); a flag given overrides the preset.
"""
from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

from dllm_viz.app.main import add_serve_command
from dllm_viz.core import rules
from dllm_viz.core.config import CANVAS_PRESETS, KNOBS, PRESETS, REVISION_PRESETS, SHIPPED_PRESETS, DecodeConfig
from dllm_viz.core.knobs import Knob

SHIPPED = (*SHIPPED_PRESETS, *REVISION_PRESETS, *CANVAS_PRESETS)
PRESET_HELP = ("starting point: the article's table (" + ", ".join(PRESETS) + ") or a shipped sampler's own rule ("
               + ", ".join(SHIPPED) + ")")


def _flag_type(knob: Knob) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        try:
            return knob.parse(text)
        except ValueError as err:
            raise argparse.ArgumentTypeError(str(err)) from None

    parse.__name__ = knob.kind  # argparse names the type in its error message
    return parse


def add_config_flags(parser: argparse.ArgumentParser) -> None:
    """One `--field` flag per DecodeConfig field, from its knob spec (`core.knobs`: type, meaning, choices,
    the plug-ins that read it); default: not given, the preset's value stands."""
    for knob in KNOBS:
        if knob.name == "gen_length":
            continue
        extra = " (three comma-separated values: early,middle,late)" if knob.kind == "stages" else ""
        if knob.choices:
            extra += " {" + ",".join(knob.choices) + "}"
        readers = ", ".join(p.name for p in rules.readers(knob.name))
        if readers:
            extra += f" [read by {readers}]"
        parser.add_argument(f"--{knob.name.replace('_', '-')}", dest=knob.name, type=_flag_type(knob), default=None,
                            help=f"{knob.help}{extra}".replace("%", "%%"))


def config_from_args(args: argparse.Namespace, preset: str | None = None) -> DecodeConfig:
    """The config of the flags given over the preset (`args.preset`, else `preset`, else "balanced")."""
    overrides = {f: getattr(args, f) for f in DecodeConfig.field_names()
                 if f != "gen_length" and getattr(args, f, None) is not None}
    return DecodeConfig.preset(args.preset or preset or "balanced", args.gen_length, **overrides)


def check_output(path: str | None, *, force: bool) -> None:
    """`--json PATH` writes a trace: refuse to overwrite a file that is not one (an input named by
    mistake) unless `force`. A directory is never overwritten. Raises ValueError."""
    from dllm_viz.core.trace import FORMAT
    from dllm_viz.core.trace_schema import MAX_TRACE_BYTES

    if path is None:
        return
    out = Path(path)
    if out.is_dir():
        raise ValueError(f"--json {path!r} is invalid: it is a directory; expected a file path for the trace JSON")
    if not out.exists() or force:
        return
    try:
        with open(out, encoding="utf-8") as fh:
            head = json.loads(fh.read(MAX_TRACE_BYTES + 1))
        is_trace = isinstance(head, dict) and head.get("format") == FORMAT
    except (OSError, UnicodeDecodeError, ValueError):
        is_trace = False
    if not is_trace:
        raise ValueError(f"--json {path!r} is invalid: the file exists and is not a dllm-viz trace; expected a new "
                         "path or a trace to replace (pass --force to overwrite it anyway)")


def _generate(args: argparse.Namespace) -> int:
    from dllm_viz import decode
    from dllm_viz.models import load_model

    config = config_from_args(args)  # validate before the (slower) model load
    check_output(args.json, force=args.force)
    model = load_model(args.model, device=args.device, dtype=args.dtype, trust_remote_code=args.trust_remote_code,
                       chat=args.chat, revision=args.revision)
    canvas = rules.CANVAS_RULES.get(rules.canvas_of(model))
    if args.preset is None and canvas is not None:  # a renoising model's own default: its checkpoint's settings
        config = config_from_args(args, canvas.default_preset)
    (trace,) = decode(model, [args.prompt], config, progress=not args.quiet and config.gen_length >= 64)
    print(trace.text if trace.text is not None else " ".join(map(str, trace.token_ids)))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            fh.write(trace.to_json())
    if not args.quiet:
        facts = ", ".join(f"{k}={v}" for k, v in trace.metrics.items())
        print(f"[{trace.model}] {facts}", file=sys.stderr)
    return 0


def _export_policy(args: argparse.Namespace) -> int:
    from dllm_viz.core.trace import Trace
    from dllm_viz.serve.policy import SGLANG_BLOCK_SIZES, Policy, differences, launch_command

    if args.trace:
        config = Trace.from_json(Path(args.trace).read_text(encoding="utf-8")).config
        source = f"the config of trace {args.trace}"
    else:
        config = config_from_args(args)
        source = f"preset {args.preset!r}, gen_length={args.gen_length} and the flags given"
    policy = Policy.from_decode_config(config, request_sampling=args.request_sampling,
                                       end_of_text_ids=args.end_of_text_ids, eos_token_id=args.eos_token_id,
                                       edit_token_ids=args.edit_token_ids)
    path = policy.save(args.output, source=source)
    extra = ["--trust-remote-code"] if args.trust_remote_code else []
    print(f"wrote {path}", file=sys.stderr)
    if policy.block_size not in SGLANG_BLOCK_SIZES.values():
        sizes = ", ".join(f"{arch} {size}" for arch, size in SGLANG_BLOCK_SIZES.items())
        print(f"note: the policy runs blocks of {policy.block_size}; SGLang's models use {sizes} "
              "(set --block-length to match the checkpoint)", file=sys.stderr)
    for note in differences(config):
        print(f"note: {note}", file=sys.stderr)
    print(shlex.join(launch_command(args.model_path, path, launcher=args.launcher, extra=extra)))
    return 0


def _id_list(text: str) -> list[int]:
    """`--end-of-text-ids 126081,126348` -> [126081, 126348]."""
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"{text!r} is invalid: expected token ids separated by commas") from err


def add_export_policy(subparsers: argparse._SubParsersAction) -> None:
    """Register `export-policy`: write policy.yaml and print the SGLang command line."""
    from dllm_viz.serve import ALGORITHM_NAME
    from dllm_viz.serve.policy import LAUNCHERS, REQUEST_SAMPLING

    p = subparsers.add_parser(
        "export-policy", help=f"write policy.yaml for SGLang's --dllm-algorithm {ALGORITHM_NAME} and print the command")
    p.add_argument("--model-path", default="<checkpoint>", help="checkpoint to serve (printed in the command)")
    p.add_argument("--output", default="policy.yaml", help="where to write the policy (default: policy.yaml)")
    p.add_argument("--launcher", default="launch_server", choices=LAUNCHERS,
                   help="print `python -m sglang.launch_server ...` or `sglang serve ...`")
    p.add_argument("--trust-remote-code", action="store_true", help="add --trust-remote-code to the command")
    p.add_argument("--request-sampling", default="override", choices=REQUEST_SAMPLING,
                   help="whether a request's own temperature/top_p/top_k override the policy's")
    p.add_argument("--trace", default=None, help="export the config of a saved trace JSON instead of the flags")
    p.add_argument("--end-of-text-ids", type=_id_list, default=None, metavar="ID[,ID...]",
                   help="the checkpoint's end-of-text token ids, EOS first (needed with --early-stop true; "
                        "what dllm_viz.core.end_of_text.end_of_text_ids(load_model(path)) gives)")
    p.add_argument("--eos-token-id", type=int, default=None,
                   help="one end-of-text token id (the older form of --end-of-text-ids)")
    p.add_argument("--edit-token-ids", type=_id_list, default=None, metavar="DELETE,SPLIT",
                   help="the checkpoint's delete_token_id,split_token_id (needed with --indel: an insert/delete rule)")
    p.add_argument("--preset", default="balanced", choices=[*PRESETS, *SHIPPED], help=PRESET_HELP)
    p.add_argument("--gen-length", dest="gen_length", type=int, default=64, help="DecodeConfig.gen_length")
    add_config_flags(p)
    p.set_defaults(func=_export_policy)


def _read_trace(path: str, what: str = "trace") -> Any:
    from dllm_viz.core.trace import Trace

    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise ValueError(f"{what}={path!r} is invalid: {err}") from None
    try:
        return Trace.from_json(text)
    except ValueError as err:
        raise ValueError(f"{what} {path}: {err}") from None


def _diff(args: argparse.Namespace) -> int:
    from dllm_viz.app.views.diff import summary
    from dllm_viz.core.diff import diff

    a, b = _read_trace(args.a, "A"), _read_trace(args.b, "B")
    d = diff(a, b)
    print(json.dumps(d.to_dict(), ensure_ascii=False) if args.json else summary(d, a, b, args.lang))
    return 0 if d.same else 1


def add_diff(subparsers: argparse._SubParsersAction) -> None:
    """Register `diff`: where two traces of one prompt part (exit status 0: the same decisions, 1: they differ)."""
    from dllm_viz.app.strings import LANGS

    p = subparsers.add_parser("diff", help="where two traces of the same prompt part, and every later difference",
                              description="Exit status: 0 when A and B made the same decisions at every step, "
                                          "1 when they differ, 2 on an error.")
    p.add_argument("a", help="trace A (JSON)")
    p.add_argument("b", help="trace B (JSON)")
    p.add_argument("--json", action="store_true", help="print the whole diff as JSON (every difference)")
    p.add_argument("--lang", default="en", choices=LANGS, help="the summary's language")
    p.set_defaults(func=_diff)


def _pair(text: str) -> tuple[int, int]:
    """`--force 3=17` -> (3, 17)."""
    pos, sep, tok = text.partition("=")
    try:
        return int(pos), int(tok)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is invalid: expected POSITION=TOKEN_ID") from None


def _knob(text: str) -> tuple[str, Any]:
    """`--set temperature=0.5` -> ("temperature", 0.5), parsed by the knob's spec."""
    name, sep, value = text.partition("=")
    knob = next((k for k in KNOBS if k.name == name), None)
    if not sep or knob is None:
        raise argparse.ArgumentTypeError(f"{text!r} is invalid: expected FIELD=VALUE with a DecodeConfig field")
    try:
        return name, knob.parse(value)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def shipped_model(name: str) -> str | None:
    """`load_model`'s path for a model shipped in the package, by the name its traces record ("world-mdlm"
    -> "world", "world-renoise" -> "world-renoise"; the embedded model: ""); None for any other."""
    from dllm_viz import assets
    from dllm_viz.models import SHIPPED

    for path, folder in (("", assets.path("embedded")), *SHIPPED.items()):
        config = Path(folder) / "config.json"
        if not config.is_file():
            continue
        values = json.loads(config.read_text(encoding="utf-8"))
        # the embedded format names its model; a Hugging Face checkpoint (model_type) is named by its folder
        if values.get("name", Path(folder).resolve().name if "model_type" in values else None) == name:
            return path
    return None


def _fork(args: argparse.Namespace) -> int:
    from dllm_viz.core.fork import fork
    from dllm_viz.models import load_model

    trace = _read_trace(args.trace)
    path = args.model if args.model is not None else shipped_model(trace.model)
    if path is None:
        raise ValueError(f"--model is missing: the trace's model {trace.model!r} is not shipped with dllm-viz; "
                         "expected --model with its checkpoint (a fork replays the trace on it)")
    model = load_model(path or None, device=args.device)
    out = fork(model, trace, args.step, force=dict(args.force), remask=args.remask, knobs=dict(args.set))
    print(out.text if out.text is not None else " ".join(map(str, out.token_ids)))
    if args.json:
        Path(args.json).write_text(out.to_json(), encoding="utf-8")
    if args.check:
        from dllm_viz.studies.world_score import fork_verdicts

        for side, v in zip(("trace", "fork"), fork_verdicts(trace, out)):
            print(f"{side}: valid={v.valid} sentences {v.valid_sentences}/{v.sentences} rules {sorted(v.rules())}",
                  file=sys.stderr)
    return 0


def add_fork(subparsers: argparse._SubParsersAction) -> None:
    """Register `fork`: continue a trace from a step with tokens forced, positions taken back or knobs switched."""
    p = subparsers.add_parser("fork", help="continue a trace from a step with a change (force, remask, set)")
    p.add_argument("trace", help="the trace (JSON)")
    p.add_argument("--step", type=int, required=True, help="continue after this many of its steps (0: the start)")
    p.add_argument("--force", type=_pair, action="append", default=[], metavar="POS=ID",
                   help="place token ID at generated position POS (repeatable)")
    p.add_argument("--remask", type=int, action="append", default=[], metavar="POS",
                   help="take generated position POS back to [MASK] (repeatable)")
    p.add_argument("--set", type=_knob, action="append", default=[], metavar="FIELD=VALUE",
                   help="switch a DecodeConfig field from the step on (repeatable), e.g. temperature=0")
    p.add_argument("--model", default=None, help="the trace's model (default: the shipped model of its name)")
    p.add_argument("--device", default=None, help="cpu | cuda | cuda:N")
    p.add_argument("--json", default=None, help="write the forked trace JSON to this file")
    p.add_argument("--check", action="store_true", help="the world checker's verdict on the trace and the fork")
    p.set_defaults(func=_fork)


def _export(args: argparse.Namespace) -> int:
    from dllm_viz.app.views.animation import export_animation, format_of

    format_of(args.to)  # a bad suffix is refused before the trace is read
    trace = _read_trace(args.trace)
    options = {k: getattr(args, k) for k in ("lang", "step_ms", "frames_per_step", "hold_ms", "width", "font_size")}
    path = export_animation(trace, args.to, **options)
    print(f"wrote {path}: {len(trace.steps) + 1} frames, {path.stat().st_size / 1e3:.0f} kB", file=sys.stderr)
    return 0


def add_export(subparsers: argparse._SubParsersAction) -> None:
    """Register `export`: a trace's canvas as an animation (GIF, WebP, SVG; MP4 with ffmpeg on the PATH)."""
    from dllm_viz.app.strings import LANGS
    from dllm_viz.app.views.animation import AnimationSpec

    d = AnimationSpec()
    p = subparsers.add_parser("export", help="write a trace's canvas as an animation: --to anim.gif|.webp|.svg|.mp4")
    p.add_argument("trace", help="the trace (JSON)")
    p.add_argument("--to", required=True, help="the file to write; its suffix names the format (gif, webp, svg, "
                                               "mp4: MP4 needs ffmpeg on the PATH)")
    p.add_argument("--lang", default=d.lang, choices=LANGS, help="the labels' language")
    p.add_argument("--step-ms", type=int, default=d.step_ms, help=f"ms each step shows (default {d.step_ms})")
    p.add_argument("--frames-per-step", type=int, default=d.frames_per_step,
                   help="frames each step is written as (default 1; a fixed-rate player may want more)")
    p.add_argument("--hold-ms", type=int, default=d.hold_ms, help=f"extra ms on the last frame (default {d.hold_ms})")
    p.add_argument("--width", type=int, default=d.width, help=f"pixels (default {d.width})")
    p.add_argument("--font-size", type=int, default=d.font_size, help=f"the tokens' text (default {d.font_size})")
    p.set_defaults(func=_export)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m dllm_viz", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    gen = sub.add_parser("generate", help="decode one prompt and print the text")
    gen.add_argument("--prompt", required=True, help="prompt text")
    gen.add_argument("--model", default=None,
                     help="local checkpoint directory or Hugging Face Hub id org/name (default: the embedded model)")
    gen.add_argument("--revision", default=None, help="with a Hub id: branch, tag or commit (default: main)")
    gen.add_argument("--device", default=None, help="cpu | cuda | cuda:N (default: CUDA when available)")
    gen.add_argument("--dtype", default=None, help="fp32 | bf16 | fp16 (default: bf16 on CUDA for checkpoints)")
    gen.add_argument("--trust-remote-code", action="store_true", help="run modeling code shipped in the checkpoint")
    gen.add_argument("--chat", action="store_true", help="wrap the prompt in the checkpoint's chat template")
    gen.add_argument("--preset", default=None, choices=[*PRESETS, *SHIPPED],
                     help=PRESET_HELP + "; default: balanced, or a renoising model's own (diffusion_gemma)")
    gen.add_argument("--gen-length", dest="gen_length", type=int, default=64, help="DecodeConfig.gen_length")
    gen.add_argument("--json", default=None,
                     help="write the trace JSON to this file (a file that is not a trace is kept unless --force)")
    gen.add_argument("--force", action="store_true", help="let --json overwrite a file that is not a trace")
    gen.add_argument("--quiet", action="store_true", help="no progress bar, no metrics line")
    add_config_flags(gen)
    gen.set_defaults(func=_generate)
    add_export_policy(sub)
    add_serve_command(sub)
    add_diff(sub)
    add_fork(sub)
    add_export(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
