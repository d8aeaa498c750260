"""tests/sglang/ needs the real SGLang, which lives in its own environment (scripts/sglang_env.sh).

In the main environment these modules are not collected: tests/test_sglang_env.py runs them in
the SGLang environment and fails loudly when that environment cannot be built or a test fails.
"""
from __future__ import annotations

import importlib.util

collect_ignore_glob = [] if importlib.util.find_spec("sglang") is not None else ["*.py"]
