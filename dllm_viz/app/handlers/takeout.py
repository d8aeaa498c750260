"""The Playground's "take it with you" handlers: the trace on show as an animation file to download, and
its diff against an uploaded trace (docs/fork_diff_export.md).

Thin: the animation is `views.animation.animation_bytes` written under the page's export folder (the name
checked by `exports.export_path`), the diff `core.diff.diff` said by `views.diff.summary`. A trace file is
read by `read_trace_file`, the same check the replay upload uses. No Gradio here.
"""
from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

from dllm_viz.app.handlers.exports import export_path
from dllm_viz.app.handlers.outputs import Animated, Diffed
from dllm_viz.app.handlers.traces import Shown
from dllm_viz.app.strings import t
from dllm_viz.app.views import diff as diff_view
from dllm_viz.app.views.animation import animation_bytes
from dllm_viz.core.diff import diff
from dllm_viz.core.trace import Trace
from dllm_viz.core.trace_schema import MAX_TRACE_BYTES

# The most work one animation may ask of the page: steps x generated positions (a 128-step decode of 256
# positions). A 64-step, 64-position world-model trace (4,096) draws as GIF in about 1 s on one core.
MAX_ANIMATION_CELLS = 32_768
ANIMATIONS_KEPT = 16  # animation files kept in the export folder (Gradio copies each into its cache)


def animation_formats() -> list[str]:
    """The formats the page offers: GIF, WebP and SVG always; MP4 only with an encoder on the PATH."""
    return ["gif", "webp", "svg"] + (["mp4"] if shutil.which("ffmpeg") else [])


def read_trace_file(upload: str | None, lang: str) -> Trace:
    """An uploaded trace file, size-checked before it is read, parsed once (`Trace.from_json`)."""
    if not upload:
        raise ValueError("trace file: nothing was uploaded")
    try:
        size = Path(upload).stat().st_size
        if size > MAX_TRACE_BYTES:  # refused before it is read (app.py also caps uploads at this size)
            raise ValueError(f"trace file has {size} bytes: this viewer reads at most {MAX_TRACE_BYTES}")
        text = Path(upload).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise ValueError(t("err_trace", lang, e=err)) from err
    return Trace.from_json(text)


class TakeoutHandlers:
    """The animation download and the trace diff; files are written only under `export_dir`."""

    def __init__(self, *, export_dir: Path) -> None:
        self.export_dir = export_dir

    def animation(self, *, trace: Shown | None, anim_format: str, lang: str) -> Animated:
        """Write the trace on show as an animation in `anim_format`, labelled in `lang`; the path to download.

        Refused by name: nothing on show, a format not offered, or more than MAX_ANIMATION_CELLS steps x
        positions (checked before any frame is drawn). The file is named by its content hash."""
        if trace is None:
            raise ValueError("trace: nothing is on show to animate; expected a decoded, example or uploaded trace")
        if anim_format not in animation_formats():
            raise ValueError(f"anim_format={anim_format!r} is invalid: expected one of "
                             f"{', '.join(animation_formats())}")
        tr = trace.trace
        width = max(tr.config.gen_length, len(tr.token_ids))  # a renoising trace's whole canvases may be wider
        cells = len(tr.steps) * width
        if cells > MAX_ANIMATION_CELLS:
            raise ValueError(f"animation steps x positions = {len(tr.steps)} x {width} = {cells} "
                             f"is invalid: expected at most {MAX_ANIMATION_CELLS} (the CLI draws longer traces: "
                             "dllm-viz export TRACE.json --to anim.gif)")
        data = animation_bytes(tr, anim_format, lang=lang)
        path = export_path(f"anim-{hashlib.sha1(data).hexdigest()[:12]}.{anim_format}", self.export_dir)
        path.write_bytes(data)
        files = sorted(self.export_dir.glob("anim-*"), key=lambda p: p.stat().st_mtime)
        for old in files[:-ANIMATIONS_KEPT]:
            old.unlink(missing_ok=True)
        return Animated(str(path))

    def diff(self, *, diff_upload: str | None, trace: Shown | None, lang: str) -> Diffed:
        """The trace on show (A) against an uploaded trace file (B): where they first part and every
        difference counted, in `lang`. Two prompts: `core.diff.DifferentPrompts`, a named error."""
        if trace is None:
            raise ValueError("trace: nothing is on show to diff against; expected a decoded, example or uploaded "
                             "trace")
        other = read_trace_file(diff_upload, lang)
        said = diff_view.summary(diff(trace.trace, other), trace.trace, other, lang)
        return Diffed("\n\n".join([t("diff_ab", lang), *said.splitlines()]))  # a paragraph a sentence

    def cleared(self) -> Diffed:
        """After a failed diff: no summary (the one on show was of another file)."""
        return Diffed("")
