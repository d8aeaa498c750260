"""Where the page may write a file for download (docs/fork_diff_export.md): only inside its export folder.

The page writes trace JSON and animations into one folder (`Playground(export_dir=...)`) and hands Gradio
the path. A name that comes from a request (an animation's file name, a format) goes through
`export_path` first: a name that would land outside the folder (an absolute path, "..", a symbolic link
pointing out) or that names no format the page writes is an `ExportPathError`, a ValueError the page
shows as an error (nothing is written, the session goes on).
"""
from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from dllm_viz.core.config import short


class ExportPathError(ValueError):
    """An export file name that would be written outside the allowed folder, or with a suffix not allowed."""


def export_path(name: str | Path, root: str | Path, *, suffixes: Iterable[str] = ("gif", "webp", "svg", "mp4", "json")
                ) -> Path:
    """`name` resolved inside `root` (the page's export folder, which must exist): the path to write.

    Raises `ExportPathError` naming `name` when it resolves outside `root` (symbolic links followed), is
    `root` itself, or ends in a suffix other than `suffixes`.
    """
    base = Path(root).resolve()
    if not base.is_dir():
        raise ExportPathError(f"export folder {str(root)!r} is invalid: expected an existing folder")
    if not isinstance(name, (str, Path)) or not str(name).strip() or "\x00" in str(name):
        raise ExportPathError(f"export path={short(name)} is invalid: expected a file name inside the export folder")
    target = (base / name).resolve()  # an absolute `name` replaces `base` here, and is refused below
    if target == base or not target.is_relative_to(base):
        raise ExportPathError(f"export path={short(str(name))} is invalid: expected a file inside the export "
                              f"folder {str(base)!r}")
    allowed = tuple(s.lower().lstrip(".") for s in suffixes)
    if target.suffix.lower().lstrip(".") not in allowed:
        raise ExportPathError(f"export path={short(str(name))} is invalid: expected a name ending in "
                              + ", ".join(f".{s}" for s in allowed))
    return target
