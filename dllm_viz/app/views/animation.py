"""A trace's canvas as an animation for slides: GIF, WebP, SVG, or MP4 where an encoder exists
(docs/fork_diff_export.md).

    from dllm_viz.app.views.animation import export_animation
    export_animation(trace, "decode.gif", lang="zh", step_ms=300, hold_ms=3000)

`dllm-viz export TRACE.json --to anim.gif` (the CLI) and the page's download (which first checks the path
with `app.handlers.exports.export_path`) call the same function. The frames are the page's canvas at every
step (`anim_scene`: tints, masks and their guesses, the step counter, the marks of revised and forced
tokens, the labels in `lang`; `anim_renoise`, a renoising trace's: noise, accepted proposals, final tokens),
drawn by `anim_raster` (Pillow: GIF, WebP; ffmpeg: MP4) or written as shapes by `anim_svg`. The same trace and
options give the same bytes on a machine (no timestamps).
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from dllm_viz.app.views import anim_raster, anim_renoise, anim_scene, anim_svg
from dllm_viz.app.views.anim_scene import AnimationSpec, Measure, Scene
from dllm_viz.core.trace import Trace

__all__ = ["FORMATS", "AnimationSpec", "animation_bytes", "export_animation", "format_of"]


def _raster(encode: Callable[[Scene, list[Any]], bytes]) -> Callable[[Scene, AnimationSpec, str], bytes]:
    def write(sc: Scene, spec: AnimationSpec, title: str) -> bytes:
        return encode(sc, anim_raster.frames(sc, spec.font_size))

    return write


def _svg(sc: Scene, spec: AnimationSpec, title: str) -> bytes:
    return anim_svg.svg(sc, anim_raster.fonts(spec.font_size), title=title)


# Format -> writer (the file suffix names it). MP4 needs ffmpeg on the PATH (`anim_raster.encoder`).
FORMATS: dict[str, Callable[[Scene, AnimationSpec, str], bytes]] = {
    "gif": _raster(anim_raster.gif), "webp": _raster(anim_raster.webp), "svg": _svg, "mp4": _raster(anim_raster.mp4),
}


# A trace's canvas kind -> its frames as shapes (a masked canvas, its positions moving or not; a renoising one).
SCENES: dict[str, Callable[[Trace, AnimationSpec, Measure], Scene]] = {
    "masked": anim_scene.scene, "renoise": anim_renoise.scene,
}


def format_of(path: str | Path) -> str:
    """The format a file name asks for (its suffix), or a ValueError naming the formats."""
    fmt = Path(path).suffix.lower().lstrip(".")
    if fmt not in FORMATS:
        raise ValueError(f"to={str(path)!r} is invalid: expected a file name ending in "
                         + ", ".join(f".{f}" for f in FORMATS))
    return fmt


def animation_bytes(trace: Trace, fmt: str = "gif", spec: AnimationSpec | None = None, **options: Any) -> bytes:
    """The animation of `trace` in `fmt` (gif, webp, svg, mp4) as bytes; `options` are `AnimationSpec`'s
    fields (lang, step_ms, frames_per_step, hold_ms, width, font_size) when `spec` is not given."""
    if not isinstance(trace, Trace):
        raise ValueError(f"trace={type(trace).__name__} is invalid: expected a Trace")
    if trace.canvas not in SCENES:
        raise ValueError(f"trace.canvas={trace.canvas!r} is invalid: expected one of {', '.join(SCENES)}")
    if fmt not in FORMATS:
        raise ValueError(f"fmt={fmt!r} is invalid: expected one of {', '.join(FORMATS)}")
    spec = spec if spec is not None else AnimationSpec(**options)
    if fmt == "mp4":
        anim_raster.encoder()  # refused before any frame is drawn when there is no encoder
    anim_raster.pil()
    sc = SCENES[trace.canvas](trace, spec, Measure(anim_raster.fonts(spec.font_size)))
    title = (trace.prompt_text or "") + (trace.text or "")
    return FORMATS[fmt](sc, spec, f"dllm-viz: {trace.model}: {title[:200]}")


def export_animation(trace: Trace, path: str | Path, *, spec: AnimationSpec | None = None, **options: Any) -> Path:
    """Write the animation of `trace` to `path` in the format its suffix names; returns the path."""
    path = Path(path)
    data = animation_bytes(trace, format_of(path), spec, **options)
    path.write_bytes(data)
    return path
