"""The package as a user installs it: a wheel built from the checkout, in a fresh venv, used from elsewhere.

The wheel is built from a copy of the working tree (`pip wheel`, no build isolation: offline) and
installed into a fresh venv that sees this environment's packages (torch, gradio and the rest come
from here instead of a download: `outer_site_dirs`, listed in a .pth file, whether this interpreter
is the system's or itself a venv's), with its extras resolved against what is installed and no
index: a range in pyproject.toml that the pinned versions in requirements.txt do not satisfy fails
the install. Every command then runs from a directory outside the checkout, without PYTHONPATH,
and first proves that `dllm_viz` is the wheel's copy in the venv's site-packages (this machine
also has an editable install of the checkout). What it runs: the CLI, `load_model("world")`, the
example traces and the playground's import, the files found through package data.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dllm_viz.core.trace import Trace

ROOT = Path(__file__).resolve().parents[1]
# Not part of a source tree: version control, environments, build outputs, caches.
NOT_SOURCE = shutil.ignore_patterns(".git", ".venv*", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache",
                                    ".benchmarks", "out", ".whl", ".gl")


def _run(argv: list[str], cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env.update(OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1", GRADIO_ANALYTICS_ENABLED="False")
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{argv} failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
    return done


def outer_site_dirs() -> list[str]:
    """The site-packages folders this interpreter imports from. `venv --system-site-packages` would
    give the new venv the *base* interpreter's, which inside a venv (how most people install) lack
    the project's packages; these are the running environment's, whichever it is."""
    return [p for p in sys.path if Path(p).name in ("site-packages", "dist-packages") and Path(p).is_dir()]


def make_venv(path: Path) -> Path:
    """A venv at `path` without pip, its own site-packages first, then `outer_site_dirs()` (a .pth
    file lists them as plain paths: their own .pth files, such as an editable install's, are not
    run). Returns its python."""
    _run([sys.executable, "-m", "venv", "--without-pip", str(path)], cwd=path.parent)
    python = path / "bin" / "python"
    site = _run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], cwd=path.parent)
    (Path(site.stdout.strip()) / "outer-environment.pth").write_text("\n".join(outer_site_dirs()) + "\n")
    return python


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> tuple[Path, Path]:
    """(the venv's python, a working directory outside the checkout) with the wheel installed."""
    tmp = tmp_path_factory.mktemp("wheel")
    source = tmp / "source"
    shutil.copytree(ROOT, source, ignore=NOT_SOURCE)
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp / "dist"),
          str(source)], cwd=tmp)
    (wheel,) = (tmp / "dist").glob("dllm_viz-*.whl")
    # Without the venv's own pip and setuptools, which would hide newer ones that torch requires;
    # this environment's pip installs into the venv instead (--python).
    python = make_venv(tmp / "venv")
    pip = [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-index"]
    # The wheel itself into the venv (a dllm-viz of the same version is installed outside it), then its
    # dependencies and extras, resolved against the installed packages: nothing may need fetching.
    _run([*pip, "--no-deps", "--force-reinstall", str(wheel)], cwd=tmp)
    _run([*pip, f"{wheel}[app,hf,train]"], cwd=tmp)
    work = tmp / "elsewhere"
    work.mkdir()
    return python, work


def test_the_wheel_ships_the_assets_page_js_and_yaml(venv):
    python, work = venv
    code = ("import json, sysconfig, dllm_viz\n"
            "from pathlib import Path\n"
            "from dllm_viz import assets\n"
            "from importlib.resources import files\n"
            "site = Path(sysconfig.get_paths()['purelib']).resolve()\n"
            "print(json.dumps({'site': str(site), 'package': str(Path(dllm_viz.__file__).resolve()),\n"
            "                  'assets': str(assets.path().resolve()), 'page_js': {f.name: len(f.read_text()) "
            "for f in files('dllm_viz.app').joinpath('web').iterdir() if f.name.endswith('.js')},\n"
            "                  'files': sorted(str(p.relative_to(assets.path())) for p in assets.path().rglob('*')\n"
            "                                  if p.is_file() and '__pycache__' not in p.parts)}))\n")
    found = json.loads(_run([str(python), "-c", code], cwd=work).stdout)
    site = Path(found["site"])
    assert site.is_relative_to(python.parents[1]), found["site"]
    assert Path(found["package"]).is_relative_to(site), f"dllm_viz was imported from {found['package']}, not the venv"
    assert Path(found["assets"]).is_relative_to(site)
    page_js = {p.name for p in (ROOT / "dllm_viz" / "app" / "web").glob("*.js")}
    assert set(found["page_js"]) == page_js and "page.js" in page_js, found["page_js"]
    assert min(found["page_js"].values()) > 1000, found["page_js"]
    shipped = {str(p.relative_to(ROOT / "dllm_viz" / "assets")) for p in (ROOT / "dllm_viz" / "assets").rglob("*")
               if p.is_file() and "__pycache__" not in p.parts}
    assert set(found["files"]) == shipped  # every asset of the checkout, nothing else


def test_cli_generate_runs_from_the_wheel(venv):
    python, work = venv
    out = work / "trace.json"
    done = _run([str(python), "-m", "dllm_viz", "generate", "--prompt", "It is a truth", "--gen-length", "16",
                 "--seed", "3", "--json", str(out), "--quiet"], cwd=work)
    trace = Trace.from_json(out.read_text(encoding="utf-8"))
    assert trace.model == "austen-mdlm" and len(trace.token_ids) == 16
    assert done.stdout.strip() == trace.text.strip()


def test_serve_is_a_command_of_the_wheel(venv):
    """`dllm-viz serve` (the console script the wheel installs) launches the playground: its help here."""
    python, work = venv
    done = _run([str(python.parent / "dllm-viz"), "serve", "--help"], cwd=work)
    usage = done.stdout.splitlines()[0]
    assert usage.startswith("usage:") and " serve " in usage and "--model" in done.stdout and "--port" in done.stdout


def test_world_model_examples_and_the_app_import_from_the_wheel(venv):
    python, work = venv
    code = (
        "import json\n"
        "import dllm_viz\n"
        "from dllm_viz import DecodeConfig, assets, decode, load_model\n"
        "from dllm_viz.core.trace import Trace\n"
        "from dllm_viz.world import check\n"
        "world = load_model('world')\n"
        "trace = decode(world, ['Tom Lopez of'], DecodeConfig.preset('quality', 48, seed=0))[0]\n"
        "verdict = check(trace.prompt_text + trace.text)\n"
        "examples = [(p.stem, Trace.from_json(p.read_text(encoding='utf-8')))\n"
        "            for p in sorted(assets.path('examples').glob('*.json'))]\n"
        "from dllm_viz.studies.lessons import LESSONS\n"
        "from dllm_viz.studies.world_lessons import load_world_measured\n"
        "from dllm_viz.app.ui import build_demo\n"
        "demo = build_demo(lambda prompts, configs, **kw: decode(world, prompts, configs, **kw), examples=examples)\n"
        "print(json.dumps({'model': world.name, 'tokens': len(trace.token_ids), 'sentences': verdict.sentences,\n"
        "                  'examples': len(examples), 'lessons': len(LESSONS),\n"
        "                  'studies': len(load_world_measured()), 'demo': type(demo).__name__}))\n"
    )
    found = json.loads(_run([str(python), "-c", code], cwd=work).stdout.strip().splitlines()[-1])
    assert found["model"] == "world-mdlm" and found["tokens"] == 48 and found["sentences"] >= 1
    assert found["examples"] == len(list((ROOT / "dllm_viz" / "assets" / "examples").glob("*.json"))) > 0
    assert found["lessons"] > 0 and found["studies"] > 0 and found["demo"] == "Blocks"
