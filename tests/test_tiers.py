"""tests/conftest.py's tiers: every name it marks exists, and what boots the server is in the slow tier."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import MARKS, marks_for

ROOT = Path(__file__).resolve().parents[1]


def _tests_in(path: Path) -> dict[str, ast.FunctionDef]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")}


@pytest.mark.parametrize("key", sorted(MARKS))
def test_every_marked_name_exists(key):
    path, _, name = key.partition("::")
    assert (ROOT / path).exists(), f"tests/conftest.py marks {path}, which does not exist"
    if name:
        assert name in _tests_in(ROOT / path), f"tests/conftest.py marks {key}, which does not exist"


def test_marks_follow_files_and_names():
    assert marks_for("tests/test_browser.py::test_page_loads[en]") == {"browser", "slow"}
    assert marks_for("tests/test_train_gpu.py::test_x") == {"long", "slow"}
    assert marks_for("tests/sglang/test_plugin.py::test_x") == {"sglang", "slow"}
    assert marks_for("tests/test_api.py::test_app_py_serves_the_embedded_model") == {"slow"}
    assert marks_for("tests/test_api.py::test_generate_returns_text_and_trace_json") == set()
    assert marks_for("tests/test_trace.py::test_metrics") == set()


def test_every_test_of_the_shared_server_is_slow():
    """The fast tier never boots app.py: a test that takes the `served_app` fixture is marked slow."""
    users = [f"tests/{path.name}::{name}" for path in sorted((ROOT / "tests").glob("test_*.py"))
             for name, fn in _tests_in(path).items() if "served_app" in {a.arg for a in fn.args.args}]
    assert users, "no test uses served_app"
    assert all("slow" in marks_for(user) for user in users), [u for u in users if "slow" not in marks_for(u)]


def test_the_default_tier_leaves_out_long_and_sglang_and_the_readme_says_how_to_run_them():
    """`python -m pytest` (the README's test command, .ci/run; there on two processes) runs the default tier:
    pyproject.toml's addopts deselect `long` and `sglang`; the README gives the command for the rest and each
    tier's time."""
    import re
    import shlex

    addopts = shlex.split(re.search(r'^addopts = "(.*)"$', (ROOT / "pyproject.toml").read_text(), re.M)[1])
    assert addopts[addopts.index("-m") + 1] == "not long and not sglang"
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert 'python -m pytest -m "long or sglang"' in readme and 'python -m pytest -m "not slow"' in readme
    rest = (ROOT / ".ci" / "run-rest").read_text(encoding="utf-8").strip().splitlines()
    assert rest[-1].endswith('python -m pytest -m "long or sglang"')


def test_ci_runs_every_test_once_the_default_tier_then_the_rest():
    """Nothing leaves CI silently: .ci/run runs the README's command (the default tier), then .ci/run-rest;
    whatever marks a test carries, exactly one of the two tiers' expressions selects it."""
    import itertools
    import re
    import shlex

    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()
    assert ci[-1] == "bash .ci/run-rest" and ci[-2].endswith("&& python -m pytest -n 2 --dist loadfile")
    addopts = shlex.split(re.search(r'^addopts = "(.*)"$', (ROOT / "pyproject.toml").read_text(), re.M)[1])
    default = addopts[addopts.index("-m") + 1]
    rest = shlex.split((ROOT / ".ci" / "run-rest").read_text(encoding="utf-8").strip().splitlines()[-1])[-1]
    names = ("slow", "long", "browser", "sglang")
    for marks in itertools.chain.from_iterable(itertools.combinations(names, n) for n in range(len(names) + 1)):
        chosen = [eval(expr, {}, {m: m in marks for m in names}) for expr in (default, rest)]  # noqa: S307
        assert sum(chosen) == 1, (marks, default, rest)
