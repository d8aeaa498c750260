"""Checkpoints named by Hugging Face Hub id ("org/name"), resolved through the Hugging Face cache.

`resolve_checkpoint` turns a name into a local snapshot directory the adapters can read, the way
`from_pretrained` does: the same cache (``HF_HUB_CACHE``, else ``HF_HOME``/hub, else
~/.cache/huggingface/hub), the same layout (``models--org--name/refs/<branch>`` holding a commit hash,
``snapshots/<hash>/<files>``), and ``HF_HUB_OFFLINE=1`` honoured: then only the cache is read.
Both variables are read when a checkpoint is resolved, not when the library was imported, so a
test or a launcher that sets them later is obeyed.

Only a name the user gives explicitly is ever looked up: `load_model()` and the embedded model names
never reach this module. A download fetches the files a checkpoint needs to load (configs, code,
tokenizer, safetensors weights; PyTorch ``.bin`` weights only when a repository has no safetensors),
never the other formats a repository may carry (GGUF, ONNX, Flax, TF, ``original/``).
"""
from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

# "org/name": one slash, each side letters, digits, '-', '_', '.' (the Hub's own rule), no "--" or "..".
REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]{0,95}/[A-Za-z0-9][\w.-]{0,95}$")

# Files a checkpoint needs to load: config, modeling code, tokenizer, chat template, weights.
NEEDED = ["*.json", "*.py", "*.txt", "*.model", "*.tiktoken", "*.jinja", "*.safetensors"]
# Only when the repository has no safetensors weights at all.
FALLBACK_WEIGHTS = ["*.bin"]
# Alternative formats and originals a repository may also hold; never needed here.
SKIPPED = ["original/*", "onnx/*", "*.gguf", "*.onnx", "*.msgpack", "*.h5", "*.ot", "*.tflite", "coreml/*"]

TRUE = ("1", "on", "yes", "true")


@dataclass(frozen=True, kw_only=True)
class Checkpoint:
    """A checkpoint on disk and the name a trace records for it."""

    path: Path  # directory holding config.json (a local folder or a snapshot in the Hub cache)
    name: str  # folder name, or "org/name@<commit>" for a Hub id: the exact revision decoded
    repo_id: str | None = None  # the Hub id, when it came from the Hub cache
    commit: str | None = None  # the 40-hex commit the snapshot belongs to


def is_repo_id(name: str) -> bool:
    """Whether `name` has the shape of a Hub model id ("org/name"), not of a file-system path."""
    return bool(REPO_ID.match(name)) and "--" not in name and ".." not in name


def hub_cache_dir(environ: Mapping[str, str] = os.environ) -> Path:
    """The Hugging Face cache, with the precedence huggingface_hub uses, read from `environ` now."""
    if environ.get("HF_HUB_CACHE"):
        return Path(environ["HF_HUB_CACHE"]).expanduser()
    if environ.get("HUGGINGFACE_HUB_CACHE"):  # the older name, still honoured by huggingface_hub
        return Path(environ["HUGGINGFACE_HUB_CACHE"]).expanduser()
    if environ.get("HF_HOME"):
        return Path(environ["HF_HOME"]).expanduser() / "hub"
    from huggingface_hub import constants

    return Path(constants.HF_HUB_CACHE)


def hub_offline(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether downloads are off: ``HF_HUB_OFFLINE`` (or transformers' ``TRANSFORMERS_OFFLINE``) set."""
    from huggingface_hub import constants

    flags = (environ.get("HF_HUB_OFFLINE", ""), environ.get("TRANSFORMERS_OFFLINE", ""))
    return any(f.strip().lower() in TRUE for f in flags) or bool(constants.HF_HUB_OFFLINE)


def download_hint(repo_id: str, revision: str | None) -> str:
    """The command that puts `repo_id` in the cache, for error messages."""
    pinned = f" --revision {revision}" if revision else ""
    return f"`hf download {repo_id}{pinned}` (older clients: `huggingface-cli download {repo_id}{pinned}`)"


def resolve_hub_id(
    repo_id: str, *, revision: str | None = None, environ: Mapping[str, str] = os.environ
) -> Checkpoint:
    """The cached snapshot of `repo_id` at `revision` (default: the main branch), fetched if allowed.

    Offline (``HF_HUB_OFFLINE=1``) only the cache is read. Every failure is a ValueError that says
    what is missing and how to get it; nothing from deep inside the hub library escapes.
    """
    if not is_repo_id(repo_id):
        raise ValueError(f"model={repo_id!r} is invalid: expected a Hub id of the form 'org/name'")
    if revision is not None and (not isinstance(revision, str) or not revision.strip()):
        raise ValueError(f"revision={revision!r} is invalid: expected a branch, tag or commit hash")
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import (
        GatedRepoError,
        HfHubHTTPError,
        HFValidationError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    cache, offline = hub_cache_dir(environ), hub_offline(environ)
    where = f"revision {revision!r}" if revision else "its main branch"
    try:
        folder = Path(snapshot_download(repo_id, revision=revision, cache_dir=cache, local_files_only=offline,
                                        allow_patterns=NEEDED, ignore_patterns=SKIPPED))
        if not offline and not any(folder.glob("*.safetensors")):
            folder = Path(snapshot_download(repo_id, revision=revision, cache_dir=cache,
                                            allow_patterns=[*NEEDED, *FALLBACK_WEIGHTS], ignore_patterns=SKIPPED))
    except LocalEntryNotFoundError as err:
        reason = "HF_HUB_OFFLINE=1 forbids downloading it" if offline else "the Hub could not be reached"
        raise ValueError(
            f"model={repo_id!r} ({where}) is not in the Hugging Face cache {str(cache)!r} and {reason}: "
            f"download it first with {download_hint(repo_id, revision)}, or pass a local directory"
        ) from err
    except GatedRepoError as err:  # before RepositoryNotFoundError: it is a subclass
        raise ValueError(
            f"model={repo_id!r} is gated on the Hub: accept its licence on its page, log in with `hf auth login`, "
            f"then run {download_hint(repo_id, revision)}"
        ) from err
    except RevisionNotFoundError as err:
        raise ValueError(f"revision={revision!r} is invalid for {repo_id!r}: no such branch, tag or commit") from err
    except RepositoryNotFoundError as err:
        raise ValueError(
            f"model={repo_id!r} is not a Hub repository (or it is private: log in with `hf auth login`)"
        ) from err
    except (HfHubHTTPError, HFValidationError, OSError) as err:
        raise ValueError(f"model={repo_id!r} could not be fetched from the Hub ({type(err).__name__}: {err})") from err
    if not (folder / "config.json").is_file():
        raise ValueError(
            f"model={repo_id!r} is only partly in the cache {str(folder)!r} (no config.json): "
            f"complete it with {download_hint(repo_id, revision)}"
        )
    commit = folder.name  # snapshots/<commit>: the exact revision, whatever branch or tag was asked
    return Checkpoint(path=folder, name=f"{repo_id}@{commit}", repo_id=repo_id, commit=commit)


def resolve_checkpoint(
    path: str | os.PathLike[str], *, revision: str | None = None, environ: Mapping[str, str] = os.environ
) -> Checkpoint:
    """A local directory as it is, else a Hub id through the cache (see module doc).

    A local directory wins over a Hub id of the same spelling, as in `from_pretrained`. Path objects,
    absolute paths and names starting with '.' or '~' are always local: they are never looked up.
    """
    local = Path(path).expanduser()
    if local.exists():
        if revision is not None:
            raise ValueError(
                f"revision={revision!r} is invalid for the local directory {str(path)!r}: "
                "expected revision only with a Hub id"
            )
        return Checkpoint(path=local, name=local.resolve().name)
    text = os.fspath(path)
    if isinstance(path, str) and is_repo_id(text):
        return resolve_hub_id(text, revision=revision, environ=environ)
    raise ValueError(
        f"path={text!r} does not exist: expected a local checkpoint directory, an embedded model name, "
        "or a Hugging Face Hub id 'org/name'"
    )
