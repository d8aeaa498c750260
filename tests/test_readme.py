"""The code blocks of the README, CONTRIBUTING.md and docs/*.md run as written, from a directory outside the
checkout, after the documented install.

Every ```bash / ```python block is either run here or carries a marker on the line before its fence,
``<!-- readme-test: not run: REASON -->`` (a block that needs a GPU, SGLang or the Hugging Face Hub, say).
The README's quick-start block (install, then ``python app.py``) is started as written and serves the
playground on its documented address, http://127.0.0.1:7860/, which the API example (docs/playground.md)
then calls. The test-command block is what ``.ci/run`` runs first, so it is checked for equality instead of re-run.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.ui_model import wait_for_client

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = (README, ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md")))
RUNNABLE = ("bash", "sh", "python")
FENCE = re.compile(r"^```(\w*)\s*$")
MARKER = re.compile(r"<!--\s*readme-test:\s*not run:\s*(\S.*?)\s*-->")


@dataclass(frozen=True)
class Block:
    lang: str
    code: str
    line: int  # 1-based line of the opening fence
    not_run: str | None  # the marker's reason, when the block is documented as not run here
    doc: str = "README.md"  # the file, relative to the checkout

    @property
    def where(self) -> str:
        return f"{self.doc} line {self.line}"


def readme_blocks(text: str, doc: str = "README.md") -> list[Block]:
    lines, blocks, i = text.splitlines(), [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        start, body = i, []
        i += 1
        while i < len(lines) and not lines[i].startswith("```"):
            body.append(lines[i])
            i += 1
        before = lines[start - 1] if start else ""
        marker = MARKER.search(before)
        blocks.append(Block(m.group(1), "\n".join(body) + "\n", start + 1, marker.group(1) if marker else None, doc))
        i += 1
    return blocks


def doc_blocks(path: Path) -> list[Block]:
    blocks = readme_blocks(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    return [b for b in blocks if b.lang in RUNNABLE]


BLOCKS = [b for path in DOCS for b in doc_blocks(path)]


def _is_quick_start(b: Block) -> bool:
    return b.lang == "bash" and "python app.py" in b.code


def _is_test_command(b: Block) -> bool:
    return b.lang == "bash" and "python -m pytest" in b.code


def _is_client(b: Block) -> bool:
    return b.lang == "python" and "gradio_client" in b.code


STANDALONE = [b for b in BLOCKS
              if b.not_run is None and not (_is_quick_start(b) or _is_test_command(b) or _is_client(b))]


def _run(block: Block, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    argv = ([sys.executable, "-c", block.code] if block.lang == "python"
            else ["bash", "-euo", "pipefail", "-c", block.code])
    env = {**os.environ, "GRADIO_ANALYTICS_ENABLED": "False", "PYTHONPATH": ""}  # nothing but the install
    # One torch thread, as the whole suite runs (conftest.py): on a busy 2-core machine two threads per
    # process spin against each other (the cache example took 34 s of CPU with two, 2 s with one).
    env.setdefault("OMP_NUM_THREADS", "1")
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def test_the_readme_has_the_two_quick_start_commands_and_ci_runs_the_second():
    readme = doc_blocks(README)
    assert sum(map(_is_quick_start, readme)) == 1
    assert sum(map(_is_quick_start, BLOCKS)) == 1, "only the README's quick start serves the app"
    assert sum(map(_is_test_command, readme)) == 1
    (test_block,) = [b for b in readme if _is_test_command(b)]
    ci = [line for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
          if line.strip() and not line.startswith(("#", "set ", "cd "))]
    assert ci[0] == test_block.code.strip(), ".ci/run must first run exactly the README's test command"


def test_every_block_is_run_or_says_why_not():
    for b in BLOCKS:
        if b.not_run is not None:
            assert len(b.not_run) >= 10, f"{b.where}: say why the block is not run"
    assert [b for b in STANDALONE if b.doc == "README.md"], "the README's Python API example must be run"
    assert {b.doc for b in STANDALONE} > {"README.md"}, "the docs' examples must be run"


@pytest.mark.parametrize("block", STANDALONE, ids=[f"{Path(b.doc).stem}-line{b.line}-{b.lang}" for b in STANDALONE])
def test_block_runs_outside_the_checkout(block, tmp_path, imports_the_installed_package):
    # (the lock: under `pytest -n 2` without `--dist loadfile` the quick start's reinstall can run meanwhile)
    done = _run(block, tmp_path)
    assert done.returncode == 0, f"{block.where} failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"


def test_quick_start_serves_and_the_api_example_calls_it(tmp_path, installs_the_package):
    (start,) = [b for b in BLOCKS if _is_quick_start(b)]
    (client_block,) = [b for b in BLOCKS if _is_client(b)]
    url = re.search(r"Client\(\"(http://[^\"]+)\"\)", client_block.code).group(1)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRADIO_SERVER")}
    env["GRADIO_ANALYTICS_ENABLED"] = "False"
    proc = subprocess.Popen(["bash", "-c", start.code], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        wait_for_client(proc, url, timeout=300)
        done = _run(client_block, tmp_path)
        assert done.returncode == 0, f"{client_block.where} failed:\n{done.stderr[-4000:]}"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, 15)
        proc.wait(timeout=60)
