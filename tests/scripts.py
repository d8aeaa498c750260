"""A bench or script file of the checkout as a module, for the tests that run it in-process."""
from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def load_script(relative: str) -> ModuleType:
    """`relative` (e.g. "bench/gpu_bench.py") imported under a name of its own, executed once per call."""
    path = ROOT / relative
    spec = importlib.util.spec_from_file_location(f"{path.stem}_under_test", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
