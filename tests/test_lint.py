"""`ruff check .` passes on the whole repository, with the settings in pyproject.toml ([tool.ruff]).

Ruff is a test tool (requirements-dev.txt); where it is not installed the test says so and skips.
"""
from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(importlib.util.find_spec("ruff") is None,
                    reason="ruff is not installed (pip install -r requirements-dev.txt)")
def test_ruff_check_is_clean():
    done = subprocess.run([sys.executable, "-m", "ruff", "check", ".", "--no-cache", "--output-format", "concise"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"ruff check . failed ({done.returncode}):\n{done.stdout}{done.stderr}"
