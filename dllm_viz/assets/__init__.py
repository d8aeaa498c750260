"""The files dllm-viz reads at run time, found as package data of this folder.

What lies here: ``embedded/`` (the default model: weights, config, tokenizer, model card),
``world/`` (the checkable-world model and its measured lessons), ``world-renoise/`` (a renoising
world model in transformers' ``DiffusionGemmaForBlockDiffusion`` format, loaded by transformers), ``tasks/`` (the
task-families model and its measured accuracy-against-parallelism curves), ``examples/`` (the traces the
playground shows before any click), ``lessons.yaml`` (the Compare tab's prose, both languages) and
``lessons.json`` (its measured numbers). ``pyproject.toml`` ships them in the wheel
(``[tool.setuptools.package-data]``), so a checkout, an editable install and an installed wheel all
find them through `path`, never through a path relative to the repository.

Floor 0: every other floor may import this module; it imports nothing of the package.
"""
from __future__ import annotations

from importlib.resources import files
from pathlib import Path


def path(*parts: str) -> Path:
    """The file or folder ``parts`` below the shipped assets, e.g. ``path("world", "config.json")``.

    A real file-system path: the weights and tokenizers are read by libraries (safetensors,
    tokenizers) that need one. pip always unpacks a wheel, so only an import from a zip archive
    (which dllm-viz does not support) has none, and that raises here, by name, instead of later.
    """
    root = files(__name__)
    if not isinstance(root, Path):
        raise RuntimeError(f"dllm_viz.assets is not on the file system ({root!r}): install dllm-viz unzipped")
    return root.joinpath(*parts)
