"""The Playground's animation download and trace diff (app/handlers/takeout.py), without a server."""
from __future__ import annotations

import io
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from PIL import Image

from dllm_viz import DecodeConfig, decode
from dllm_viz.app.handlers import takeout
from dllm_viz.app.handlers.playground import Playground
from dllm_viz.app.strings import t
from dllm_viz.app.views.animation import AnimationSpec
from dllm_viz.app.views.diff import summary
from dllm_viz.core.diff import DifferentPrompts, diff
from tests.ui_model import CountingRunner, widgets


@pytest.fixture()
def pg(tmp_path) -> Playground:
    return Playground(CountingRunner(), export_dir=tmp_path / "exports", new_seed=lambda: 1234)


def shown(pg, prompt="the cat ", **changes):
    return pg.play.decode(prompt=prompt, lang="en", **widgets(**changes)).trace


def test_the_gif_download_has_a_frame_per_step_and_the_hold_and_the_same_trace_gives_the_same_file(pg, tmp_path):
    tr = shown(pg, seed=3)
    path = Path(pg.takeout.animation(trace=tr, anim_format="gif", lang="en").anim_file)
    assert path.parent == (tmp_path / "exports").resolve() and path.suffix == ".gif"
    data = path.read_bytes()
    assert data[:6] == b"GIF89a"
    im = Image.open(io.BytesIO(data))
    durations = []
    for i in range(im.n_frames):
        im.seek(i)
        durations.append(im.info["duration"])
    spec, n = AnimationSpec(), len(tr.trace.steps)
    assert im.n_frames == n + 1  # the canvas before any step, then one frame per step
    assert durations == [spec.step_ms] * n + [spec.step_ms + spec.hold_ms]  # the last frame held
    again = Path(pg.takeout.animation(trace=tr, anim_format="gif", lang="en").anim_file)
    assert again == path and again.read_bytes() == data  # same trace, same bytes, same name
    zh = Path(pg.takeout.animation(trace=tr, anim_format="gif", lang="zh").anim_file)
    assert zh != path and zh.read_bytes() != data  # the labels in the page's language


def test_svg_and_webp_downloads_parse(pg):
    tr = shown(pg)
    svg = Path(pg.takeout.animation(trace=tr, anim_format="svg", lang="en").anim_file)
    assert ET.fromstring(svg.read_bytes()).tag.endswith("svg")
    webp = Path(pg.takeout.animation(trace=tr, anim_format="webp", lang="en").anim_file)
    assert Image.open(webp).format == "WEBP"


def test_a_renoising_trace_on_show_is_animated_too(tmp_path):
    """The page of a renoising model (`python app.py --model world-renoise`): its download writes the canvas's
    frames (`views.anim_renoise`), one per step and the start, labelled in the page's language."""
    from dllm_viz import load_model
    from dllm_viz.app.handlers.traces import Shown

    model = load_model("world-renoise")
    pg = Playground(lambda prompts, configs, **kw: decode(model, prompts, configs, **kw), export_dir=tmp_path)
    (trace,) = decode(model, ["Tom Lopez of"], [DecodeConfig(gen_length=24, seed=2)])
    on_show = Shown("h", trace)
    path = Path(pg.takeout.animation(trace=on_show, anim_format="gif", lang="zh").anim_file)
    assert Image.open(path).n_frames == len(trace.steps) + 1 and trace.canvas == "renoise"


def test_mp4_is_offered_only_with_an_encoder(pg, monkeypatch):
    monkeypatch.setattr(takeout.shutil, "which", lambda name: None)
    assert takeout.animation_formats() == ["gif", "webp", "svg"]
    with pytest.raises(ValueError, match="anim_format='mp4' is invalid"):
        pg.takeout.animation(trace=shown(pg), anim_format="mp4", lang="en")
    monkeypatch.setattr(takeout.shutil, "which", lambda name: "/usr/bin/ffmpeg")
    assert takeout.animation_formats()[-1] == "mp4"


def test_animation_errors_are_named_and_nothing_is_drawn(pg, monkeypatch, tmp_path):
    with pytest.raises(ValueError, match="nothing is on show"):
        pg.takeout.animation(trace=None, anim_format="gif", lang="en")
    with pytest.raises(ValueError, match="anim_format='png' is invalid"):
        pg.takeout.animation(trace=shown(pg), anim_format="png", lang="en")
    tr = shown(pg)
    cells = len(tr.trace.steps) * tr.trace.config.gen_length
    monkeypatch.setattr(takeout, "MAX_ANIMATION_CELLS", cells - 1)
    drawn = []
    monkeypatch.setattr(takeout, "animation_bytes", lambda *a, **k: drawn.append(a) or b"")
    with pytest.raises(ValueError, match=f"steps x positions = .* = {cells} is invalid: expected at most {cells - 1}"):
        pg.takeout.animation(trace=tr, anim_format="gif", lang="en")
    assert drawn == [] and list((tmp_path / "exports").glob("anim-*")) == []


def test_the_diff_names_where_the_uploaded_trace_parts_from_the_trace_on_show(pg, tmp_path):
    a, b = shown(pg, seed=1, temperature=1.0), shown(pg, seed=2, temperature=1.0)
    d = diff(a.trace, b.trace)
    assert d.first is not None  # two seeds part somewhere
    path = tmp_path / "b.json"
    path.write_text(b.trace.to_json(), encoding="utf-8")
    for lang in ("en", "zh"):
        text = pg.takeout.diff(diff_upload=str(path), trace=a, lang=lang).diff_summary
        assert text.startswith(t("diff_ab", lang))
        assert summary(d, a.trace, b.trace, lang).splitlines()[0] in text.split("\n\n")
        assert t("diff_at", lang, p=d.first.position) in text and t(f"diff_kind_{d.first.kind}", lang) in text
    at = "" if d.first.position is None else f", position {d.first.position}"
    where = f"They part at step {d.first.step + 1}{at}"
    assert where in pg.takeout.diff(diff_upload=str(path), trace=a, lang="en").diff_summary
    path.write_text(a.trace.to_json(), encoding="utf-8")
    same = pg.takeout.diff(diff_upload=str(path), trace=a, lang="en").diff_summary
    assert t("diff_same", "en", n=len(a.trace.steps)) in same


def test_diff_errors_are_named(pg, tmp_path):
    a, other = shown(pg, prompt="the cat "), shown(pg, prompt="a dog ")
    path = tmp_path / "other.json"
    path.write_text(other.trace.to_json(), encoding="utf-8")
    with pytest.raises(DifferentPrompts, match="expected two traces of the same prompt"):
        pg.takeout.diff(diff_upload=str(path), trace=a, lang="en")
    with pytest.raises(ValueError, match="nothing is on show"):
        pg.takeout.diff(diff_upload=str(path), trace=None, lang="en")
    with pytest.raises(ValueError, match="nothing was uploaded"):
        pg.takeout.diff(diff_upload=None, trace=a, lang="en")
    path.write_text("{", encoding="utf-8")
    with pytest.raises(ValueError, match="trace JSON does not parse"):
        pg.takeout.diff(diff_upload=str(path), trace=a, lang="en")
    assert pg.takeout.cleared().diff_summary == ""  # what the page shows after a failed diff
    big = tmp_path / "big.json"
    big.write_bytes(b" " * (takeout.MAX_TRACE_BYTES + 1))
    with pytest.raises(ValueError, match="this viewer reads at most"):
        pg.takeout.diff(diff_upload=str(big), trace=a, lang="en")
