"""The animation's frames as pictures (Pillow), and the GIF, WebP and MP4 files made of them (docs/fork_diff_export.md).

Deterministic: the same scene gives the same bytes (no timestamp, no metadata, one palette for every GIF
frame: the median cut of a few frames side by side, no dithering; WebP and MP4 encoded single-threaded).
Fonts are the system's (`Fonts`): the same machine writes the same bytes; another machine's fonts may
draw other pixels. GIF and WebP store only what changed since the previous frame (Pillow's own frame
differencing), so a 64-step decode stays well under 2 MB as GIF.

MP4 needs an encoder, which neither Pillow nor dllm-viz's dependencies ship: with `ffmpeg` on the PATH
(a system encoder, offline) frames are piped to it; without, `encoder()` refuses by name.
"""
from __future__ import annotations

import io
import shutil
import subprocess
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Any

from dllm_viz.app.views.anim_scene import Box, Line, Poly, Scene, Text

# Candidate font files, first found wins: a Latin font with broad symbol coverage, and a CJK font (installed
# by scripts/test-deps.sh: fonts-wqy-microhei) for text with CJK characters. Without either, Pillow's own.
LATIN_FONTS = ("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", "/usr/share/fonts/dejavu/DejaVuSans.ttf",
               "/usr/share/fonts/TTF/DejaVuSans.ttf", "/System/Library/Fonts/Supplemental/Arial Unicode.ttf")
CJK_FONTS = ("/usr/share/fonts/truetype/wqy/wqy-microhei.ttc", "/usr/share/fonts/wqy-microhei/wqy-microhei.ttc",
             "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc", "/System/Library/Fonts/PingFang.ttc")
PALETTE_FRAMES = 8  # frames the GIF palette is computed from (spread over the animation)


def pil() -> Any:
    """Pillow's Image module, or a ValueError saying how to get it (it comes with the [app] extra)."""
    try:
        from PIL import Image
    except ImportError:  # pragma: no cover - Pillow comes with gradio
        raise ValueError("to=... is invalid here: Pillow is not installed; expected "
                         "pip install 'dllm-viz[app]'") from None
    return Image


def _first(paths: tuple[str, ...]) -> str | None:
    return next((p for p in paths if Path(p).is_file()), None)


def has_cjk(text: str) -> bool:
    return any(ord(ch) >= 0x2E80 for ch in text)


class Fonts:
    """The tokens' font and the labels' (smaller), each Latin and CJK; `font(text)` picks by the text."""

    def __init__(self, size: int) -> None:
        from PIL import ImageFont

        def load(path: str | None, px: int) -> Any:
            return ImageFont.truetype(path, px) if path else ImageFont.load_default(px)

        latin, cjk = _first(LATIN_FONTS), _first(CJK_FONTS)
        small = max(8, round(size * 0.8))
        self._fonts = {(False, False): load(latin, size), (False, True): load(cjk or latin, size),
                       (True, False): load(latin, small), (True, True): load(cjk or latin, small)}

    def font(self, text: str, small: bool = False) -> Any:
        return self._fonts[(small, has_cjk(text))]


@lru_cache(maxsize=8)
def fonts(size: int) -> Fonts:
    return Fonts(size)


def draw(scene: Scene, frame: int, fonts: Fonts) -> Any:
    """Frame `frame` of `scene` as an RGB image."""
    Image = pil()
    from PIL import ImageDraw

    im = Image.new("RGB", (scene.width, scene.height), scene.background)
    d = ImageDraw.Draw(im)
    for s in scene.frames[frame]:
        if isinstance(s, Box):
            if s.dashed and s.outline:
                d.rectangle((s.x0, s.y0, s.x1, s.y1), fill=s.fill)
                _dashed(d, s)
            else:
                d.rectangle((s.x0, s.y0, s.x1, s.y1), fill=s.fill, outline=s.outline, width=s.width)
        elif isinstance(s, Text):
            font = fonts.font(s.text, s.small)
            d.text((s.x, s.y), fit(font, s.text, s.clip), fill=s.fill, font=font)
        elif isinstance(s, Line):
            d.line((s.x0, s.y0, s.x1, s.y1), fill=s.fill, width=s.width)
        elif isinstance(s, Poly):
            d.polygon(s.points, fill=s.fill, outline=s.outline)
    return im


def fit(font: Any, text: str, clip: int) -> str:
    """`text`, cut and ended with "…" where it is wider than `clip` pixels (0: as it is)."""
    if not clip or font.getlength(text) <= clip:
        return text
    while text and font.getlength(text + "…") > clip:
        text = text[:-1]
    return text + "…"


def _dashed(d: Any, s: Box, on: int = 4, off: int = 3) -> None:
    for x in range(s.x0, s.x1, on + off):
        d.line((x, s.y0, min(x + on, s.x1), s.y0), fill=s.outline)
        d.line((x, s.y1, min(x + on, s.x1), s.y1), fill=s.outline)
    for y in range(s.y0, s.y1, on + off):
        d.line((s.x0, y, s.x0, min(y + on, s.y1)), fill=s.outline)
        d.line((s.x1, y, s.x1, min(y + on, s.y1)), fill=s.outline)


def frames(scene: Scene, font_size: int) -> list[Any]:
    """Every frame as an RGB image; a frame identical to the one before is the same image (drawn once)."""
    f = fonts(font_size)
    out: list[Any] = []
    for i, shapes in enumerate(scene.frames):
        out.append(out[-1] if i and shapes == scene.frames[i - 1] else draw(scene, i, f))
    return out


def gif(scene: Scene, images: list[Any]) -> bytes:
    """An animated GIF, looping, with one palette for all frames (no dithering: flat colours stay flat)."""
    Image = pil()
    picks = sorted({round(i * (len(images) - 1) / max(1, PALETTE_FRAMES - 1)) for i in range(PALETTE_FRAMES)})
    sheet = Image.new("RGB", (scene.width, scene.height * len(picks)))
    for row, i in enumerate(picks):
        sheet.paste(images[i], (0, row * scene.height))
    palette = sheet.quantize(colors=255, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    done: dict[int, Any] = {}
    frames = [done.setdefault(id(im), im.quantize(palette=palette, dither=Image.Dither.NONE)) for im in images]
    buf = io.BytesIO()
    frames[0].save(buf, format="GIF", save_all=True, append_images=frames[1:], duration=list(scene.durations),
                   loop=0, optimize=False, disposal=1)
    return buf.getvalue()


def webp(scene: Scene, images: list[Any]) -> bytes:
    """An animated WebP, looping, lossy at quality 80 (text stays sharp at this size)."""
    buf = io.BytesIO()
    images[0].save(buf, format="WEBP", save_all=True, append_images=images[1:], duration=list(scene.durations),
                   loop=0, quality=80, method=4, minimize_size=False, exif=b"", xmp=b"", icc_profile=None)
    return buf.getvalue()


def encoder() -> str:
    """The MP4 encoder's path (`ffmpeg` on the PATH), or a ValueError naming the formats that need none."""
    found = shutil.which("ffmpeg")
    if found is None:
        raise ValueError("to=.mp4 is invalid here: no MP4 encoder is available offline (ffmpeg is not on the PATH, "
                         "and Pillow writes no MP4); expected .gif, .webp or .svg, or install ffmpeg")
    return found


def mp4(scene: Scene, images: list[Any]) -> bytes:
    """An H.264 MP4 through ffmpeg: a fixed frame rate (1000 / frame_ms), the hold as repeated frames,
    the size rounded up to even numbers, bit-exact flags, one thread."""
    ffmpeg = encoder()
    Image = pil()
    unit = min(scene.durations)
    w, h = scene.width + scene.width % 2, scene.height + scene.height % 2
    raw = bytearray()
    for im, ms in zip(images, scene.durations):
        if (w, h) != im.size:
            padded = Image.new("RGB", (w, h), scene.background)
            padded.paste(im, (0, 0))
            im = padded
        raw += im.tobytes() * max(1, round(ms / unit))
    with tempfile.TemporaryDirectory(prefix="dllm-viz-mp4-") as tmp:
        out = Path(tmp) / "anim.mp4"  # a file, not a pipe: the MP4 muxer seeks back to write its index
        cmd = [ffmpeg, "-nostdin", "-v", "error", "-f", "rawvideo", "-pix_fmt", "rgb24", "-s", f"{w}x{h}",
               "-r", f"{1000 / unit:g}", "-i", "-", "-c:v", "libx264", "-pix_fmt", "yuv420p", "-threads", "1",
               "-fflags", "+bitexact", "-flags:v", "+bitexact", "-map_metadata", "-1", str(out)]
        done = subprocess.run(cmd, input=bytes(raw), capture_output=True, timeout=600)
        if done.returncode != 0:
            raise ValueError(f"to=.mp4 failed: ffmpeg said {done.stderr.decode(errors='replace')[-300:]!r}; "
                             "expected .gif, .webp or .svg")
        return out.read_bytes()
