"""Checkpoints by Hub id, offline: a Hugging Face cache built in a temporary folder with the hub
library's layout (refs, blobs, snapshots) holds a tiny checkpoint of each family; HF_HUB_OFFLINE=1.

A socket guard makes any connection attempt fail the test, so "offline" is checked, not assumed.
"""
from __future__ import annotations

import socket
from pathlib import Path

import pytest

from dllm_viz.models.renoiser import is_renoiser
import torch

import dllm_viz.models.hub as hub
from dllm_viz import DecodeConfig, Trace, decode
from dllm_viz.cli import main as cli_main
from dllm_viz.models import SHIPPED, load_model
from dllm_viz.models.hf import DreamDenoiser, LLaDADenoiser, MaskedLMDenoiser
from tests.checkpoints import ROWS, put_in_hub_cache, save_dream, save_llada, save_masked_lm

FAMILIES = {
    "test-org/tiny-bert": (lambda p: save_masked_lm(p, "bert"), MaskedLMDenoiser, False),
    "test-org/tiny-llada": (lambda p: save_llada(p, eos_token="<|eot_id|>"), LLaDADenoiser, True),
    "test-org/tiny-dream": (lambda p: save_dream(p, 1.0, eos_token="<|endoftext|>"), DreamDenoiser, True),
}


@pytest.fixture()
def no_network(monkeypatch: pytest.MonkeyPatch) -> list:
    """Every outgoing connection attempt is recorded and refused."""
    attempts: list = []

    def refuse(*args, **kwargs):
        attempts.append(args)
        raise OSError("network access in a test")

    monkeypatch.setattr(socket.socket, "connect", lambda self, *a: refuse(*a))
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    return attempts


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """One cache for the module: each family on main, the LLaDA stand-in also on a second branch."""
    root = tmp_path_factory.mktemp("hf-cache")
    commits = {repo: put_in_hub_cache(root, repo, build) for repo, (build, _, _) in FAMILIES.items()}
    commits["test-org/tiny-llada@v2"] = put_in_hub_cache(
        root, "test-org/tiny-llada", lambda p: save_llada(p, eos_token="<|eot_id|>", tail_scale=5.0), branch="v2")
    return root, commits


@pytest.fixture()
def offline_cache(cache, monkeypatch: pytest.MonkeyPatch, no_network):
    root, commits = cache
    monkeypatch.setenv("HF_HUB_CACHE", str(root))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return root, commits, no_network


@pytest.mark.parametrize("repo_id", list(FAMILIES))
def test_each_family_loads_by_hub_id_offline(offline_cache, repo_id: str) -> None:
    root, commits, attempts = offline_cache
    _, adapter, remote = FAMILIES[repo_id]
    model = load_model(repo_id, device="cpu", trust_remote_code=remote)
    assert isinstance(model, adapter)
    commit = commits[repo_id]
    assert model.name == f"{repo_id}@{commit}"  # the revision decoded, pinned to its commit
    # The same checkpoint as its snapshot folder read directly.
    snapshot = root / f"models--{repo_id.replace('/', '--')}" / "snapshots" / commit
    direct = load_model(snapshot, device="cpu", trust_remote_code=remote)
    ids = torch.tensor([model.tokenizer.encode(" ".join(ROWS[1]))])
    torch.testing.assert_close(model(ids), direct(ids))
    trace = decode(model, ["the cat sat"], DecodeConfig(gen_length=6, schedule="fixed_steps", steps=3, seed=0))[0]
    assert trace.model == model.name and Trace.from_json(trace.to_json()).model == model.name
    assert attempts == []


def test_hf_home_locates_the_cache(cache, monkeypatch: pytest.MonkeyPatch, no_network, tmp_path: Path) -> None:
    root, commits = cache
    home = tmp_path / "home"
    home.mkdir()
    (home / "hub").symlink_to(root, target_is_directory=True)
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.delenv("HUGGINGFACE_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HOME", str(home))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert hub.hub_cache_dir() == home / "hub"
    model = load_model("test-org/tiny-bert", device="cpu")
    assert model.name == f"test-org/tiny-bert@{commits['test-org/tiny-bert']}"
    assert no_network == []


def test_revision_is_pinned(offline_cache) -> None:
    _, commits, _ = offline_cache
    main = load_model("test-org/tiny-llada", device="cpu", trust_remote_code=True)
    v2 = load_model("test-org/tiny-llada", device="cpu", trust_remote_code=True, revision="v2")
    assert v2.name == f"test-org/tiny-llada@{commits['test-org/tiny-llada@v2']}" != main.name
    pinned = load_model("test-org/tiny-llada", device="cpu", trust_remote_code=True,
                        revision=commits["test-org/tiny-llada@v2"])
    assert pinned.name == v2.name
    ids = torch.tensor([pinned.tokenizer.encode("the cat sat")])
    torch.testing.assert_close(pinned(ids), v2(ids))
    assert not torch.allclose(main(ids), v2(ids))  # v2's tail bias: a different checkpoint
    with pytest.raises(ValueError, match=r"revision 'v9'.*not in the Hugging Face cache.*--revision v9"):
        load_model("test-org/tiny-llada", device="cpu", trust_remote_code=True, revision="v9")


def test_an_id_missing_from_the_cache_says_how_to_download_it(offline_cache, capsys) -> None:
    root, _, attempts = offline_cache
    with pytest.raises(ValueError) as caught:
        load_model("GSAI-ML/LLaDA-8B-Instruct", trust_remote_code=True)
    message = str(caught.value)
    assert "not in the Hugging Face cache" in message and str(root) in message
    assert "hf download GSAI-ML/LLaDA-8B-Instruct" in message
    assert "huggingface-cli download GSAI-ML/LLaDA-8B-Instruct" in message
    # The command line prints the message, not a traceback.
    assert cli_main(["generate", "--model", "GSAI-ML/LLaDA-8B-Instruct", "--prompt", "hi", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: model='GSAI-ML/LLaDA-8B-Instruct'") and "Traceback" not in err
    assert attempts == []


def test_a_local_directory_wins_and_paths_are_never_looked_up(
    offline_cache, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    save_masked_lm(tmp_path / "test-org" / "tiny-llada", "bert")  # same spelling as a cached Hub id
    model = load_model("test-org/tiny-llada", device="cpu")
    assert isinstance(model, MaskedLMDenoiser) and model.name == "tiny-llada"
    with pytest.raises(ValueError, match="revision='v2' is invalid for the local directory"):
        load_model("test-org/tiny-llada", revision="v2")
    for path in (tmp_path / "nowhere" / "model", "./org/name", "/abs/org/name", "not-an-id"):
        with pytest.raises(ValueError, match="does not exist"):
            load_model(path)
    with pytest.raises(ValueError, match="revision='main' is invalid without a path"):
        load_model(revision="main")


def test_default_and_embedded_names_never_reach_the_hub(monkeypatch: pytest.MonkeyPatch, no_network) -> None:
    def forbidden(*args, **kwargs):
        raise AssertionError("the Hub was consulted")

    monkeypatch.setattr(hub, "resolve_hub_id", forbidden)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)  # even with downloads allowed
    model = load_model(device="cpu")
    assert decode(model, ["It was"], DecodeConfig(gen_length=4, schedule="fixed_steps", steps=2))[0].token_ids
    for name, folder in SHIPPED.items():  # "world", the second shipped model
        if folder.exists():  # a masked model has its mask token; a renoising one (world-renoise) its canvas
            shipped = load_model(name, device="cpu")
            assert (shipped.canvas_length if is_renoiser(shipped) else shipped.mask_token_id) >= 0
        else:  # its weights are not in this checkout (yet): a local path, refused locally
            with pytest.raises(ValueError, match="does not exist"):
                load_model(name, device="cpu")
    assert no_network == []


def test_app_takes_a_hub_id_from_the_environment(offline_cache, monkeypatch: pytest.MonkeyPatch) -> None:
    _, commits, attempts = offline_cache
    from dllm_viz.app import serve as app

    model = app.model_from_env({"DLLM_VIZ_MODEL": "test-org/tiny-dream", "DLLM_VIZ_TRUST_REMOTE_CODE": "1"})
    assert isinstance(model, DreamDenoiser) and model.name == f"test-org/tiny-dream@{commits['test-org/tiny-dream']}"
    pinned = app.model_from_env({"DLLM_VIZ_MODEL": "test-org/tiny-llada", "DLLM_VIZ_REVISION": "v2",
                                 "DLLM_VIZ_TRUST_REMOTE_CODE": "yes"})
    assert pinned.name.endswith(commits["test-org/tiny-llada@v2"])
    assert attempts == []


def test_repo_id_shape() -> None:
    assert hub.is_repo_id("GSAI-ML/LLaDA-8B-Instruct") and hub.is_repo_id("Dream-org/Dream-v0-Instruct-7B")
    for bad in ("LLaDA", "a/b/c", "/abs/x", "./x/y", "a--b/c", "a/b..c", "~/x", "org/", ""):
        assert not hub.is_repo_id(bad), bad
