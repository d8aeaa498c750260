"""The animation export (app/views/animation.py and its parts): the same trace gives the same bytes; the frames
read back (Pillow) are the steps, at the size asked, and their pixels show the tokens each step confirmed; the
labels follow the language; SVG, the CLI's `export`, the path check the page will call, and MP4's refusal."""
from __future__ import annotations

import io
import os
import shutil
import time
import xml.etree.ElementTree as ET

import pytest
from PIL import Image

from dllm_viz import DecodeConfig, Trace, decode, export_animation, load_model
from dllm_viz.app.handlers.exports import ExportPathError, export_path
from dllm_viz.app.views import anim_raster
from dllm_viz.app.views.anim_renoise import scene as renoise_scene
from dllm_viz.app.views.anim_scene import AnimationSpec, Box, Measure, Text, scene
from dllm_viz.app.views.animation import animation_bytes
from dllm_viz.app.views.palette import PALETTE, tint
from dllm_viz.cli import main
from tests.ui_model import make_text_model

MODEL = make_text_model(cached=False)


@pytest.fixture(scope="module")
def trace() -> Trace:
    return decode(MODEL, ["the cat "], DecodeConfig.preset("balanced", 24, seed=2))[0]


def frames_of(data: bytes) -> tuple[list[Image.Image], list[int]]:
    im = Image.open(io.BytesIO(data))
    out, durations = [], []
    for i in range(im.n_frames):
        im.seek(i)
        out.append(im.convert("RGB"))
        durations.append(im.info["duration"])
    return out, durations


def dominant(im: Image.Image, box: tuple[int, int, int, int]) -> tuple[int, ...]:
    """The commonest colour in `box` of `im`: a token's background behind its text."""
    return max(im.crop(box).getcolors(1 << 16), key=lambda c: c[0])[1]


def close(rgb: tuple[int, ...], colour: str, tol: int = 12) -> bool:
    want = [int(colour[i:i + 2], 16) for i in (1, 3, 5)]
    return all(abs(a - b) <= tol for a, b in zip(rgb, want))


@pytest.mark.parametrize("fmt", ["gif", "webp", "svg"])
def test_the_same_trace_gives_the_same_bytes(trace, fmt):
    a, b = animation_bytes(trace, fmt), animation_bytes(Trace.from_json(trace.to_json()), fmt)
    assert a == b and len(a) > 1000
    assert animation_bytes(trace, fmt, lang="zh") != a


@pytest.mark.parametrize("fmt", ["gif", "webp"])
def test_frames_read_back_are_the_steps_and_show_each_step_s_tokens(trace, fmt):
    spec = AnimationSpec(step_ms=300, hold_ms=1200, width=640)
    frames, durations = frames_of(animation_bytes(trace, fmt, spec))
    n = len(trace.steps)
    assert len(frames) == n + 1 and {f.size for f in frames} == {(640, frames[0].height)}
    assert durations == [300] * n + [1500]
    sc = scene(trace, spec, Measure(anim_raster.fonts(spec.font_size)))
    for f in (1, n // 2, n):
        rec = trace.steps[f - 1]
        outlined = [s for s in sc.frames[f] if isinstance(s, Box) and s.outline == PALETTE["accent"] and s.fill is None]
        assert len(outlined) == len(rec.selected)  # each token confirmed at the step is outlined
        for pos, box in zip(sorted(rec.selected), sorted(outlined, key=lambda b: (b.y0, b.x0))):
            inside = (box.x0 + 4, box.y0 + 4, box.x1 - 3, box.y1 - 3)  # the token's box, inside its outline
            assert close(dominant(frames[f], inside), tint(rec.confidence[pos])), (fmt, f, pos)
            assert close(dominant(frames[f - 1], inside), PALETTE["mask_bg"]), (fmt, f, pos)
            if fmt == "gif":  # (lossy WebP blurs a 2-pixel outline's colour into its neighbours)
                assert close(frames[f].getpixel((box.x0, box.y0)), PALETTE["accent"], tol=8)


def test_options_give_frames_per_step_and_the_hold(trace):
    spec = AnimationSpec(step_ms=400, frames_per_step=4, hold_ms=0)
    sc = scene(trace, spec, Measure(anim_raster.fonts(spec.font_size)))
    assert len(sc.frames) == 4 * (len(trace.steps) + 1) and set(sc.durations) == {100}
    _, durations = frames_of(animation_bytes(trace, "gif", spec))
    assert sum(durations) == 400 * (len(trace.steps) + 1)  # identical frames merged by the GIF writer, time kept


def test_the_labels_are_in_the_language_on_show(trace):
    spec_en, spec_zh = AnimationSpec(lang="en"), AnimationSpec(lang="zh")
    m = Measure(anim_raster.fonts(16))
    status = lambda sc: next(s for s in sc.frames[1] if isinstance(s, Text) and s.small).text  # noqa: E731
    assert status(scene(trace, spec_en, m)).startswith(f"step 1 of {len(trace.steps)}")
    assert status(scene(trace, spec_zh, m)).startswith(f"第 1 / {len(trace.steps)} 步")
    en, _ = frames_of(animation_bytes(trace, "gif", spec_en))
    zh, _ = frames_of(animation_bytes(trace, "gif", spec_zh))
    band = (0, 0, en[1].width, 30)  # the status line
    assert en[1].crop(band).tobytes() != zh[1].crop(band).tobytes()
    assert len(zh[1].crop(band).getcolors(1 << 16)) > 4  # glyphs drawn, not an empty band


def test_a_revised_trace_marks_what_was_taken_back():
    tr = decode(MODEL, ["the cat "], DecodeConfig.preset("remdm", 32, seed=2))[0]
    spec = AnimationSpec()
    sc = scene(tr, spec, Measure(anim_raster.fonts(16)))
    f = next(i for i, rec in enumerate(tr.steps) if rec.remasked) + 1
    framed = [s for s in sc.frames[f] if isinstance(s, Box) and s.outline == PALETTE["remask"]]
    assert len(framed) == len(tr.steps[f - 1].remasked) + 1  # + the key's sample
    frames, _ = frames_of(animation_bytes(tr, "gif", spec))
    box = framed[0]
    assert close(frames[f].getpixel((box.x0, box.y0 + 5)), PALETTE["remask"], tol=40)


def test_a_renoising_trace_animates_its_noise_acceptances_and_losses():
    """A canvas never masked (docs/renoise.md): frame f is what step f + 1 read, as `views.renoise.frames` says;
    the positions a step accepted anew are outlined, those renoised after an acceptance framed in red, the status
    line says what the step accepted, in the language asked; the frames read back are the steps."""
    from dllm_viz.app.views import renoise as renoise_view
    from tests.renoise_table import TableRenoiser

    (tr,) = decode(TableRenoiser(), [[3, 4, 5]], DecodeConfig(gen_length=18, seed=1, max_denoising_steps=6,
                                                               entropy_bound=0.8, confidence_threshold=2.0))
    states = renoise_view.frames(tr)
    n = len(tr.steps)
    assert tr.canvas == "renoise" and len(states) == n + 1
    assert any(fr["lost"] for fr in states)  # the table renoises some accepted tokens: their mark is exercised
    spec = AnimationSpec(step_ms=300, hold_ms=600)
    sc = renoise_scene(tr, spec, Measure(anim_raster.fonts(spec.font_size)))
    assert len(sc.frames) == n + 1 and sc.durations == (300,) * n + (900,)
    for f, fr in enumerate(states):
        new = [p for p, st in enumerate(fr["state"]) if st == renoise_view.ACCEPTED and fr["since"][p] == f - 1]
        text = [s for s in sc.frames[f] if isinstance(s, Box) and s.y1 < sc.height - 3 * spec.font_size]
        assert len([b for b in text if b.fill is None and b.outline == PALETTE["accent"]]) == len(new), f
        assert len([b for b in text if b.outline == PALETTE["remask"]]) == len(fr["lost"]), f
        status = next(s for s in sc.frames[f] if isinstance(s, Text) and s.small).text
        assert status.startswith(f"step {f} of {n}") and (f == 0 or f"{tr.steps[f - 1].k} accepted" in status)
    frames, durations = frames_of(animation_bytes(tr, "gif", spec))
    assert len(frames) == n + 1 and durations == [300] * n + [900]
    f = next(i for i, fr in enumerate(states) if fr["lost"])
    p = next(iter(states[f]["lost"]))
    box = next(b for b in sc.frames[f] if isinstance(b, Box) and b.outline == PALETTE["remask"])  # a lost token's
    assert close(frames[f].getpixel((box.x0, box.y0 + 5)), PALETTE["remask"], tol=40), p
    assert animation_bytes(tr, "gif", lang="zh") != animation_bytes(tr, "gif")  # the labels follow the language
    assert animation_bytes(tr, "svg") == animation_bytes(Trace.from_json(tr.to_json()), "svg")


def test_svg_is_one_document_whose_shapes_switch_with_the_frames(trace):
    data = animation_bytes(trace, "svg")
    root = ET.fromstring(data)
    ns = "{http://www.w3.org/2000/svg}"
    assert root.tag == f"{ns}svg" and root.get("width") == "960"
    animated = root.findall(f".//{ns}animate")
    total = str((len(trace.steps) + 1) * 450 + 2000) + "ms"
    assert animated and {a.get("dur") for a in animated} == {total}
    texts = "".join(t.text or "" for t in root.iter(f"{ns}text"))
    assert trace.prompt_text.strip() in texts and f"step {len(trace.steps)} of {len(trace.steps)}" in texts


def test_bad_options_and_formats_are_named(trace, tmp_path):
    for kwargs, match in ((dict(lang="fr"), "lang='fr'"), (dict(step_ms=0), r"step_ms=0 is invalid"),
                          (dict(step_ms=100, frames_per_step=10), "frames_per_step=10"),
                          (dict(width=10), "width=10")):
        with pytest.raises(ValueError, match=match):
            AnimationSpec(**kwargs)
    with pytest.raises(ValueError, match=r"expected a file name ending in \.gif, \.webp, \.svg, \.mp4"):
        export_animation(trace, tmp_path / "a.png")
    with pytest.raises(ValueError, match="fmt='png'"):
        animation_bytes(trace, "png")


def test_mp4_without_an_encoder_is_refused_naming_the_alternatives(trace, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no ffmpeg on this PATH
    with pytest.raises(ValueError, match=r"no MP4 encoder.*expected \.gif, \.webp or \.svg"):
        export_animation(trace, tmp_path / "a.mp4")
    assert not (tmp_path / "a.mp4").exists()


@pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="MP4 needs ffmpeg on the PATH (not a dependency)")
def test_mp4_with_ffmpeg_is_an_mp4_file(trace):
    data = animation_bytes(trace, "mp4")
    assert data[4:8] == b"ftyp" and data == animation_bytes(trace, "mp4")


def test_the_page_writes_only_inside_its_export_folder(tmp_path):
    root = tmp_path / "exports"
    root.mkdir()
    assert export_path("anim.gif", root) == (root / "anim.gif").resolve()
    assert export_path("sub/../anim.webp", root) == (root / "anim.webp").resolve()
    (tmp_path / "outside").mkdir()
    os.symlink(tmp_path / "outside", root / "link")
    for bad in ("../anim.gif", str(tmp_path / "anim.gif"), "/etc/passwd.gif", "link/anim.gif", ".", "",
                "anim.exe", "a\x00.gif", 5):
        with pytest.raises(ExportPathError, match="export path=.* is invalid"):
            export_path(bad, root)
    with pytest.raises(ValueError, match="export folder"):
        export_path("a.gif", tmp_path / "missing")


def test_cli_export_writes_the_animation(trace, tmp_path, capsys):
    path = tmp_path / "t.json"
    path.write_text(trace.to_json(), encoding="utf-8")
    assert main(["export", str(path), "--to", str(tmp_path / "a.gif"), "--lang", "zh", "--step-ms", "300"]) == 0
    assert (tmp_path / "a.gif").read_bytes() == animation_bytes(trace, "gif", lang="zh", step_ms=300)
    assert "wrote" in capsys.readouterr().err
    assert main(["export", str(path), "--to", str(tmp_path / "a.bmp")]) == 2
    assert "expected a file name ending in" in capsys.readouterr().err
    assert main(["export", str(path), "--to", str(tmp_path / "b.gif"), "--width", "5"]) == 2
    assert "width=5" in capsys.readouterr().err


def test_a_64_step_world_model_trace_is_under_2_mb_as_gif(tmp_path):
    world = load_model("world")
    config = DecodeConfig.preset("quality", 64, seed=0, schedule="fixed_steps", steps=64)
    tr = decode(world, ["Tom Lopez of"], config)[0]
    assert len(tr.steps) == 64
    start = time.perf_counter()
    path = export_animation(tr, tmp_path / "world.gif")
    seconds = time.perf_counter() - start
    size = path.stat().st_size
    print(f"64-step world-model trace -> GIF: {seconds:.2f} s, {size / 1e6:.2f} MB")  # bench/export_bench.py times it
    assert size < 2_000_000
    assert Image.open(path).n_frames == 65


def test_a_browser_plays_the_svg_frame_by_frame(trace, tmp_path):
    """Chromium (the real player of an SVG on a slide or a page) shows frame f's shapes at frame f's time."""
    from playwright import sync_api

    from tests.test_browser import ARGS, CHROMIUM

    path = tmp_path / "anim.svg"
    path.write_bytes(animation_bytes(trace, "svg", step_ms=100, hold_ms=500))
    n = len(trace.steps)
    visible = ("[...document.querySelectorAll('text')].filter((t) => getComputedStyle(t).visibility === 'visible')"
               ".map((t) => t.textContent)")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = browser.new_page()
            page.goto(path.as_uri())
            for f in (0, 2, n):
                page.evaluate(f"document.documentElement.pauseAnimations(); "
                              f"document.documentElement.setCurrentTime({(100 * f + 50) / 1000})")
                shown = page.evaluate(visible)
                status = [s for s in shown if s.startswith("step ")]
                assert status and status[0].startswith(f"step {f} of {n}"), (f, status)
                done = {piece for c in trace.canvas_at(f - 1) if c is not None for piece in [trace.token_text(c)]}
                assert all(any(tok.strip() in s for s in shown) for tok in done if tok.strip()), f
        finally:
            browser.close()
