"""The package's layers (docs/architecture.md): every import points down a floor, and no module imports itself back.

Read from the source with `ast`, so lazy imports inside functions count too: a late import that
breaks a cycle at run time is still a cycle in the design.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "dllm_viz"

# Floor of each sub-package; a module may import its own sub-package and any lower floor.
# The playground (app/) serves itself (`dllm-viz serve`): it runs the shared engine, so it sits above serve/.
FLOORS = {"assets": 0, "models": 1, "core": 2, "train": 3, "world": 3, "tasks": 3, "serve": 4, "studies": 4, "app": 5}
TOP = 6  # dllm_viz/__init__.py, __main__.py and cli.py: the entry points, above every floor and each other's peers


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """Every `dllm_viz...` module that `path` imports, at any depth of the file."""
    found: set[str] = set()
    package = _module_name(path) if path.name == "__init__.py" else _module_name(path).rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "dllm_viz")
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            if base.split(".")[0] != "dllm_viz":
                continue
            for alias in node.names:  # `from dllm_viz.core import sampling` imports a module
                sub = f"{base}.{alias.name}"
                found.add(sub if _is_module(sub) else base)
    return found


def _is_module(name: str) -> bool:
    rel = Path(*name.split(".")[1:])
    return (PACKAGE / rel).with_suffix(".py").is_file() or (PACKAGE / rel).is_dir()


def _floor(module: str) -> int:
    parts = module.split(".")
    return FLOORS.get(parts[1], TOP) if len(parts) > 1 else TOP


def _is_ancestor(package: str, module: str) -> bool:
    """`package` is a sub-package holding `module` (the root facade `dllm_viz` does not count)."""
    return package != "dllm_viz" and module.startswith(package + ".")


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}
# A submodule reading a constant from its own package's __init__ is not a cycle: Python imports
# the package before the submodule anyway. Every other edge counts.
GRAPH = {m: {i for i in _imports(p) if i != m and not _is_ancestor(i, m)} for m, p in MODULES.items()}


def sub_packages(root: Path) -> set[str]:
    """Every top-level folder of `root` that holds Python code at any depth, with or without an
    __init__.py (a namespace package imports just as well, so it must have a floor just the same)."""
    return {p.relative_to(root).parts[0] for p in root.rglob("*.py") if len(p.relative_to(root).parts) > 1}


def test_every_sub_package_has_a_floor():
    subs = sub_packages(PACKAGE)
    assert {"core", "app", "models"} <= subs
    assert subs <= set(FLOORS), f"give {sorted(subs - set(FLOORS))} a floor here and in docs/architecture.md"


def test_a_folder_without_init_is_still_found(tmp_path):
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "__init__.py").write_text("")
    (tmp_path / "newfloor" / "deeper").mkdir(parents=True)  # no __init__.py anywhere below it
    (tmp_path / "newfloor" / "deeper" / "thing.py").write_text("import dllm_viz.app.ui\n")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "weights.json").write_text("{}")  # a folder without code is not a package
    (tmp_path / "top.py").write_text("")
    assert sub_packages(tmp_path) == {"models", "newfloor"}
    assert sub_packages(tmp_path) - set(FLOORS) == {"newfloor"}  # what the test above would report


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_point_down(module):
    floor, own = _floor(module), module.split(".")[:2]
    for imported in sorted(GRAPH[module]):
        same_package = imported.split(".")[:2] == own or floor == TOP == _floor(imported)
        assert same_package or _floor(imported) < floor, \
            f"{module} (floor {floor}) imports {imported} (floor {_floor(imported)})"


def test_no_import_cycle():
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for nxt in sorted(GRAPH.get(module, ())):
            if nxt not in GRAPH:
                continue
            assert state.get(nxt) != 1, "import cycle: " + " -> ".join([*path[path.index(nxt):], nxt])
            if nxt not in state:
                visit(nxt, [*path, nxt])
        state[module] = 2

    for module in sorted(GRAPH):
        if module not in state:
            visit(module, [module])


def test_the_checker_sees_a_planted_cycle():
    # The cycle check itself can fail: two modules that import each other are reported.
    global GRAPH
    saved = GRAPH
    # config reads its knobs: the edge back closes a cycle
    assert "dllm_viz.core.knobs" in saved["dllm_viz.core.config"]
    GRAPH = {**saved, "dllm_viz.core.knobs": saved["dllm_viz.core.knobs"] | {"dllm_viz.core.config"}}
    try:
        with pytest.raises(AssertionError, match="import cycle"):
            test_no_import_cycle()
    finally:
        GRAPH = saved


# ----- the playground's files (dllm_viz/app/) -------------------------------------------------------
APP = PACKAGE / "app"
APP_MAX_LINES = 450  # one job per file: a file of the playground past this size is doing two (STYLE.md)
HTML_TAG = re.compile(r"<(?:[a-zA-Z][a-zA-Z0-9]*|/[a-zA-Z][a-zA-Z0-9]*)(?:\s[^<>]*)?/?>")


def test_no_file_of_the_app_is_over_450_lines():
    lines = {str(p.relative_to(APP)): len(p.read_text(encoding="utf-8").splitlines())
             for p in sorted(APP.rglob("*")) if p.is_file() and p.suffix in (".py", ".js")}
    assert lines and {name: n for name, n in lines.items() if n > APP_MAX_LINES} == {}


def test_html_is_written_only_in_render():
    # figures.py and its parts (figures_*.py) write Plotly hover templates (`<br>`, `<extra>`), which are
    # not the page's HTML.
    found = {}
    for path in sorted(APP.rglob("*.py")):
        if path.parent.name == "views" and (path.name == "render.py" or path.name.startswith("figures")):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and HTML_TAG.search(node.value):
                found.setdefault(str(path.relative_to(APP)), []).append(node.lineno)
    assert found == {}


def test_the_html_check_sees_a_tag():
    assert HTML_TAG.search('<span class="dv-badge">') and HTML_TAG.search("<small>") and HTML_TAG.search("</small>")
    assert not HTML_TAG.search("k ← ⌊k · decay⌋ < 1 > 0") and not HTML_TAG.search("a <= b")


# ----- inside the playground: its jobs point one way ---------------------------------------------------
def test_only_app_serve_imports_serving():
    users = sorted(m for m, imported in GRAPH.items() if m.startswith("dllm_viz.app.")
                   and any(i.startswith("dllm_viz.serve") for i in imported))
    assert users == ["dllm_viz.app.serve"]


@pytest.mark.parametrize("job, never", [("views", ("handlers", "layout")), ("handlers", ("layout",)),
                                        ("strings", ("handlers", "layout", "views"))])
def test_the_pages_jobs_import_downwards(job, never):
    # Views are pure functions of a trace; handlers return records and never lay out the page.
    found = {m: sorted(i for i in GRAPH[m] if i.split(".")[2:3] and i.split(".")[2] in never)
             for m in GRAPH if m.startswith(f"dllm_viz.app.{job}")}
    assert {m: bad for m, bad in found.items() if bad} == {}


# ----- the package's size floors: files, functions, and no tracker numbers in its text ----------------
MAX_LINES = 450  # a module past this is doing two jobs (docs/architecture.md, STYLE.md)
MAX_FUNCTION_LINES = 80  # from `def` to the last line, decorators not counted
TEXT_SUFFIXES = {".py", ".js", ".css", ".html", ".md", ".yaml", ".yml", ".json", ".jsonl", ".txt", ".toml"}
# The package says what a thing does, not which ticket asked for it: a number in the tracker means nothing to a reader
# of an installed wheel. Tests and docs may name issues.
ISSUE_NUMBER = re.compile(r"issue\s*#?\d+", re.IGNORECASE)


def _package_files(suffixes: set[str]) -> list[Path]:
    return [p for p in sorted(PACKAGE.rglob("*"))
            if p.is_file() and p.suffix in suffixes and "__pycache__" not in p.parts]


def long_functions(source: str, limit: int = MAX_FUNCTION_LINES) -> list[tuple[int, str, int]]:
    """(line, name, length) of every function or method of `source` longer than `limit` lines."""
    return [(node.lineno, node.name, node.end_lineno - node.lineno + 1) for node in ast.walk(ast.parse(source))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno + 1 > limit]


def test_no_module_of_the_package_is_over_450_lines():
    lines = {str(p.relative_to(PACKAGE)): len(p.read_text(encoding="utf-8").splitlines())
             for p in _package_files({".py"})}
    assert lines and {name: n for name, n in lines.items() if n > MAX_LINES} == {}


def test_no_function_of_the_package_is_over_80_lines():
    found = {f"{p.relative_to(PACKAGE)}:{line} {name}": n for p in _package_files({".py"})
             for line, name, n in long_functions(p.read_text(encoding="utf-8"))}
    assert found == {}


def test_the_function_check_counts_from_def_to_the_last_line():
    body = "".join(f"    x{i} = {i}\n" for i in range(79))
    assert long_functions("@decorator\ndef f():\n" + body) == []  # 80 lines, the decorator not counted
    assert long_functions("class C:\n    def g(self):\n" + "    " + body.replace("\n    ", "\n        ")
                          + "        return 0\n") == [(2, "g", 81)]


def test_no_issue_number_in_the_package():
    found = [f"{p.relative_to(PACKAGE)}:{i}: {line.strip()[:100]}" for p in _package_files(TEXT_SUFFIXES)
             for i, line in enumerate(p.read_text(encoding="utf-8", errors="replace").splitlines(), 1)
             if ISSUE_NUMBER.search(line)]
    assert found == [], "say what it means instead:\n" + "\n".join(found)


def test_the_issue_check_sees_a_number():
    assert all(ISSUE_NUMBER.search(s) for s in ("(issue 39)", "Issue #12:", "issue37", "ISSUE  4"))
    assert not any(ISSUE_NUMBER.search(s) for s in ("an issue with 3 rows", "issues", "tissue"))
